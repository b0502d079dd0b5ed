//! The project's verdict table (`tests/data/cases.txt`) against the built-in policy. Every case is
//! checked; a failure lists every case that failed with its line, the verdict and the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use policy::{Context, Policy, Verdict};
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn every_table_case_gets_its_expected_verdict() {
    let policy = Policy::builtin().unwrap();
    let ctx = Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    };
    let mut failures = Vec::new();
    let mut per_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for (n, line) in include_str!("data/cases.txt").lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (expect, command) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let command = command.trim_start().replace('⏎', "\n");
        let got = policy.check_bash(&command, &ctx);
        let ok = match expect {
            "allow" => got.verdict == Verdict::Allow,
            "ask" => got.verdict == Verdict::Ask,
            "deny" => got.verdict == Verdict::Deny,
            "not-allow" => got.verdict != Verdict::Allow,
            other => panic!("cases.txt:{}: unknown expectation {other:?}", n + 1),
        };
        *per_kind.entry(expect).or_default() += 1;
        if !ok {
            failures.push(format!(
                "cases.txt:{}: {command:?}: expected {expect}, got {} — {}",
                n + 1,
                got.verdict,
                got.reason
            ));
        }
    }
    let total: usize = per_kind.values().sum();
    assert!(
        total >= 300,
        "the table has only {total} cases: {per_kind:?}"
    );
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
