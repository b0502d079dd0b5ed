//! The project's verdict tables (`tests/data/*.txt`: the first round's `cases.txt`, issue 10's
//! examples, and one table per class of bypass and of harmless command) against the built-in
//! policy. Every case is checked; a failure lists every case that failed with its file and line,
//! the verdict and the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use policy::{Context, Policy, Verdict};
use std::collections::BTreeMap;
use std::path::Path;

/// A table's command: `⏎` is a newline, a control picture (`␍`, `␋`, `␀`, `␡`, …) its byte.
fn decode(command: &str) -> String {
    command
        .chars()
        .map(|c| match c {
            '⏎' => '\n',
            '\u{2400}'..='\u{241f}' => char::from_u32(c as u32 - 0x2400).unwrap_or(c),
            '\u{2421}' => '\u{7f}',
            c => c,
        })
        .collect()
}

/// Checks every case of one table; returns the number of cases. A case may end with
/// `  ⇒ TEXT`: the reason must hold TEXT.
fn check_table(name: &str, text: &str, min_cases: usize) -> usize {
    let policy = Policy::builtin().unwrap();
    let ctx = Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    };
    let mut failures = Vec::new();
    let mut per_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (expect, command) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let (command, reason) = match command.split_once("  ⇒ ") {
            Some((command, reason)) => (command, Some(reason)),
            None => (command, None),
        };
        let command = decode(command.trim());
        let got = policy.check_bash(&command, &ctx);
        let reason_ok = reason.is_none_or(|r| got.reason.contains(r));
        let ok = reason_ok
            && match expect {
                "allow" => got.verdict == Verdict::Allow,
                "ask" => got.verdict == Verdict::Ask,
                "deny" => got.verdict == Verdict::Deny,
                "not-allow" => got.verdict != Verdict::Allow,
                other => panic!("{name}:{}: unknown expectation {other:?}", n + 1),
            };
        *per_kind.entry(expect).or_default() += 1;
        if !ok {
            failures.push(format!(
                "{name}:{}: {command:?}: expected {expect}, got {} — {}",
                n + 1,
                got.verdict,
                got.reason
            ));
        }
    }
    let total: usize = per_kind.values().sum();
    assert!(
        total >= min_cases,
        "{name} has only {total} cases: {per_kind:?}"
    );
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    total
}

#[test]
fn the_first_rounds_table() {
    check_table("cases.txt", include_str!("data/cases.txt"), 300);
}

#[test]
fn every_example_of_issue_10() {
    check_table("issue10.txt", include_str!("data/issue10.txt"), 70);
}

#[test]
fn bypasses_by_class() {
    check_table("bypasses.txt", include_str!("data/bypasses.txt"), 150);
}

#[test]
fn harmless_commands_by_family() {
    check_table("harmless.txt", include_str!("data/harmless.txt"), 150);
}

#[test]
fn the_grammar_gate() {
    check_table("grammar.txt", include_str!("data/grammar.txt"), 40);
}

#[test]
fn options_by_role() {
    check_table("options.txt", include_str!("data/options.txt"), 100);
}

#[test]
fn fewer_needless_asks() {
    check_table("needless.txt", include_str!("data/needless.txt"), 100);
}
