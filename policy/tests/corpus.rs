//! The shared corpus of expected verdicts (`tests/data/policy-default.jsonl`, copied from the
//! planning repository) against the built-in policy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use policy::{Context, Policy, Verdict};
use std::path::Path;

#[test]
fn every_corpus_case_gets_its_expected_verdict() {
    let policy = Policy::builtin().unwrap();
    let ctx = Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    };
    let text = include_str!("data/policy-default.jsonl");
    let mut failures = Vec::new();
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let (expect, command) = (
            case["expect"].as_str().unwrap(),
            case["command"].as_str().unwrap(),
        );
        let got = policy.check_bash(command, &ctx);
        let ok = match expect {
            "allow" => got.verdict == Verdict::Allow,
            "ask" => got.verdict == Verdict::Ask,
            "deny" => got.verdict == Verdict::Deny,
            "not-allow" => got.verdict != Verdict::Allow,
            other => panic!("unknown expectation {other:?}"),
        };
        count += 1;
        if !ok {
            failures.push(format!(
                "{command:?}: expected {expect}, got {} ({})",
                got.verdict, got.reason
            ));
        }
    }
    assert!(count >= 50, "the corpus has {count} cases");
    assert!(
        failures.is_empty(),
        "{} of {count} corpus cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
