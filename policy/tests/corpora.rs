//! Issue 10's acceptance corpora against the built-in policy:
//! - `data/agent-harmless.txt`: commands coding agents run all day; at least 95 % must be `allow`;
//! - `data/adversarial.txt`: bypass attempts, one class per bullet of the issue; none may be
//!   `allow` (bash commands through `check_bash`, file-tool writes through `check_path`).
//!
//! Each test prints a table per family or class and every entry on the wrong side with the
//! policy's reason, so a failure is a work list. Run alone:
//! `cargo test -p agentd-policy --test corpora -- --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

#[path = "differential/corpus.rs"]
mod corpus;

use corpus::{ADVERSARIAL, Corpus, HARMLESS, Kind, ctx, shown};
use policy::{Access, Policy, Verdict};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

/// The classes of issue 10 the adversarial corpus must cover, each more than one way.
const REQUIRED_CLASSES: &[&str] = &[
    "grammar-divergent",
    "grammar-bash",
    "eval-corners",
    "continuation",
    "options",
    "wrappers",
    "env-prefix",
    "paths",
    "file-tools",
];

fn harmless() -> Corpus {
    corpus::parse(HARMLESS, "family").expect("agent-harmless.txt is well-formed")
}

fn adversarial() -> Corpus {
    corpus::parse(ADVERSARIAL, "class").expect("adversarial.txt is well-formed")
}

fn policy() -> Policy {
    Policy::builtin().expect("the built-in policy builds")
}

/// `(allowed, total)` per group, in file order, as a table.
fn table(corpus: &Corpus, counts: &BTreeMap<&str, (usize, usize)>, what: &str) -> String {
    let mut out = format!("{what:<28} {:>8} {:>6}\n", "allowed", "total");
    for g in &corpus.groups {
        if let Some((allowed, total)) = counts.get(g.name.as_str()) {
            let _ = writeln!(out, "{:<28} {allowed:>8} {total:>6}", g.name);
        }
    }
    out
}

#[test]
fn corpus_files_are_well_formed_and_cover_every_class() {
    let h = harmless();
    let a = adversarial();
    let mut problems = Vec::new();
    for (name, c) in [("agent-harmless.txt", &h), ("adversarial.txt", &a)] {
        let mut seen = HashSet::new();
        for e in &c.entries {
            if !seen.insert((e.kind, e.text.as_str())) {
                problems.push(format!(
                    "{name}:{}: duplicate entry {}",
                    e.line,
                    shown(&e.text)
                ));
            }
            if e.text.trim() != e.text && e.kind != Kind::Bash {
                problems.push(format!("{name}:{}: path with surrounding blanks", e.line));
            }
        }
        for g in &c.groups {
            if !g.about.contains("source:") {
                problems.push(format!("{name}: group {} does not say its source", g.name));
            }
            if c.entries.iter().filter(|e| e.group == g.name).count() < 2 {
                problems.push(format!("{name}: group {} has fewer than 2 entries", g.name));
            }
        }
    }
    for class in REQUIRED_CLASSES {
        if !a.groups.iter().any(|g| g.name == *class) {
            problems.push(format!("adversarial.txt: class {class} is missing"));
        }
    }
    for g in &a.groups {
        if !g.about.contains("attacks:") {
            problems.push(format!(
                "adversarial.txt: class {} does not say what it attacks",
                g.name
            ));
        }
    }
    let harmless_count = h.bash().count();
    let adversarial_count = a.bash().count();
    if harmless_count < 300 {
        problems.push(format!(
            "agent-harmless.txt has {harmless_count} commands, fewer than 300"
        ));
    }
    if adversarial_count < 150 {
        problems.push(format!(
            "adversarial.txt has {adversarial_count} commands, fewer than 150"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn at_least_95_percent_of_the_harmless_corpus_is_allowed() {
    let p = policy();
    let c = harmless();
    let ctx = ctx();
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut not_allowed = String::new();
    let mut allowed = 0;
    let total = c.bash().count();
    for e in c.bash() {
        let d = p.check_bash(&e.text, &ctx);
        let slot = counts.entry(e.group.as_str()).or_default();
        slot.1 += 1;
        if d.verdict == Verdict::Allow {
            slot.0 += 1;
            allowed += 1;
        } else {
            let _ = writeln!(
                not_allowed,
                "  [{}] line {}: {}\n      -> {}: {}",
                e.group,
                e.line,
                shown(&e.text),
                d.verdict,
                d.reason
            );
        }
    }
    let pct = 100.0 * allowed as f64 / total as f64;
    let report = format!(
        "harmless corpus: {allowed} of {total} allowed ({pct:.1} %; the goal is at least 95 %)\n{}\n{} not allowed:\n{not_allowed}",
        table(&c, &counts, "family"),
        total - allowed,
    );
    assert!(allowed * 100 >= total * 95, "{report}");
    eprintln!("{report}");
}

#[test]
fn no_adversarial_command_is_allowed() {
    let p = policy();
    let c = adversarial();
    let ctx = ctx();
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut allowed_list = String::new();
    let mut allowed = 0;
    let total = c.bash().count();
    for e in c.bash() {
        let d = p.check_bash(&e.text, &ctx);
        let slot = counts.entry(e.group.as_str()).or_default();
        slot.1 += 1;
        if d.verdict == Verdict::Allow {
            slot.0 += 1;
            allowed += 1;
            let _ = writeln!(
                allowed_list,
                "  [{}] line {}: {}\n      -> allow: {}",
                e.group,
                e.line,
                shown(&e.text),
                d.reason
            );
        }
    }
    let report = format!(
        "adversarial corpus (bash): {allowed} of {total} allowed (the goal is none)\n{}\nallowed:\n{allowed_list}",
        table(&c, &counts, "class"),
    );
    assert!(allowed == 0, "{report}");
    eprintln!("{report}");
}

#[test]
fn no_file_tool_write_to_a_git_config_or_hooks_location_is_allowed() {
    let p = policy();
    let c = adversarial();
    let ctx = ctx();
    let writes: Vec<_> = c.entries.iter().filter(|e| e.kind != Kind::Bash).collect();
    assert!(
        writes.len() >= 10,
        "only {} file-tool entries",
        writes.len()
    );
    let mut allowed = String::new();
    for e in &writes {
        // write_file and str_replace are both rated as a write of their path (Policy::check_tool).
        let d = p.check_path(Access::Write, &e.text, &ctx);
        if d.verdict == Verdict::Allow {
            let tool = if e.kind == Kind::WriteFile {
                "write_file"
            } else {
                "str_replace"
            };
            let _ = writeln!(
                allowed,
                "  line {}: {tool} {}\n      -> allow: {}",
                e.line, e.text, d.reason
            );
        }
    }
    let n = allowed.lines().count() / 2;
    let report = format!(
        "file tools: {n} of {} writes allowed (the goal is none)\n{allowed}",
        writes.len()
    );
    assert!(allowed.is_empty(), "{report}");
    eprintln!("{report}");
}
