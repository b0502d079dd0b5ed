//! "Allow always" covers exactly what was approved: every part of a later call that asks must have
//! been approved, by command (normalised), path or construct; denied parts are never covered.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use policy::{Access, ApprovalKey, Approvals, Context, Decision, Policy, Shell, Verdict};
use std::path::Path;

fn ctx() -> Context<'static> {
    Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    }
}

fn rate(p: &Policy, command: &str) -> Decision {
    p.check_bash(command, &ctx())
}

#[test]
fn an_approved_command_does_not_carry_others_through() {
    let p = Policy::builtin().unwrap();
    let mut approved = Approvals::new();
    approved.remember(&rate(&p, "mkdir x"));
    for covered in [
        "mkdir x",
        "ls && mkdir x",
        "m''kdir x",
        "mkdir x; git status",
    ] {
        assert!(approved.covers(&rate(&p, covered)), "{covered}");
    }
    for not in [
        "mkdir y && python3 evil.py",
        "mkdir x && python3 evil.py",
        "mkdir x | sh",
        "mkdir y",
        "mkdir x y",
        "mkdir x > out",
        "mkdir x; cat ~/.ssh/id_rsa",
        "mkdir $(python3 evil.py)",
    ] {
        assert!(!approved.covers(&rate(&p, not)), "{not}");
    }
}

#[test]
fn denied_parts_are_never_covered() {
    let p = Policy::builtin().unwrap();
    let mut approved = Approvals::new();
    let d = rate(&p, "mkdir x && rm -rf /");
    assert_eq!(d.verdict, Verdict::Deny);
    approved.remember(&d);
    assert!(!approved.covers(&rate(&p, "mkdir x && rm -rf /")));
    assert!(
        approved.covers(&rate(&p, "mkdir x")),
        "the part that asked was remembered"
    );
}

#[test]
fn parts_name_their_rule_and_key() {
    let p = Policy::builtin().unwrap();
    let d = rate(&p, "sort -o out in; cat ~/.aws/credentials; echo $((x))");
    let keys: Vec<&ApprovalKey> = d.parts.iter().map(|p| &p.key).collect();
    assert!(
        keys.iter().any(|k| matches!(k, ApprovalKey::Command { line, rule } if line == "sort -o out in" && rule.contains("sort"))),
        "{keys:?}"
    );
    assert!(
        keys.iter().any(|k| matches!(k, ApprovalKey::Path { access: Access::Read, path } if path == "/home/dev/.aws/credentials")),
        "{keys:?}"
    );
    assert!(
        keys.iter()
            .any(|k| matches!(k, ApprovalKey::Construct { .. })),
        "{keys:?}"
    );
    assert!(
        d.parts
            .iter()
            .all(|p| !p.rule.is_empty() && !p.why.is_empty())
    );
    assert_eq!(
        d.reason, d.parts[0].why,
        "the first strictest part is the reason"
    );
}

#[test]
fn a_path_approved_for_one_command_is_approved_as_that_path() {
    let p = Policy::builtin().unwrap();
    let mut approved = Approvals::new();
    approved.remember(&rate(&p, "cat ~/.ssh/config"));
    assert!(approved.covers(&rate(&p, "head /home/dev/.ssh/config")));
    assert!(!approved.covers(&rate(&p, "cat ~/.ssh/id_rsa")));
}

#[test]
fn file_tools_are_remembered_by_path() {
    let p = Policy::builtin().unwrap();
    let mut approved = Approvals::new();
    approved.remember(&p.check_path(Access::Write, "../notes.txt", &ctx()));
    assert!(approved.covers(&p.check_path(Access::Write, "/work/notes.txt", &ctx())));
    assert!(!approved.covers(&p.check_path(Access::Write, "../other.txt", &ctx())));
    assert!(
        !approved.covers(&p.check_path(Access::Read, "../notes.txt", &ctx())),
        "allowed calls have nothing to cover"
    );
}

#[test]
fn the_set_is_a_serialisable_value() {
    let p = Policy::builtin().unwrap();
    let mut approved = Approvals::new();
    approved.remember(&rate(&p, "touch a; echo $((x)); cat ~/.netrc"));
    assert_eq!(approved.len(), 3);
    let text = serde_json::to_string(&approved).unwrap();
    assert!(text.contains("\"kind\":\"command\""), "{text}");
    let back: Approvals = serde_json::from_str(&text).unwrap();
    assert_eq!(back, approved);
}

#[test]
fn under_a_posix_shell_bash_only_constructs_ask() {
    let bash = Policy::builtin().unwrap();
    let posix = Policy::builtin().unwrap().for_shell(Shell::Posix);
    for command in [
        "echo $'a\\tb'",
        "[[ -f x ]] && ls",
        "diff <(ls a) <(ls b)",
        "cat <<< x",
        "echo {a,b}",
        "ls &> /dev/null",
        "ls |& cat",
        "echo ${x/a/b}",
    ] {
        assert_eq!(
            bash.check_bash(command, &ctx()).verdict,
            Verdict::Allow,
            "{command}"
        );
        assert_ne!(
            posix.check_bash(command, &ctx()).verdict,
            Verdict::Allow,
            "{command}"
        );
    }
    assert_eq!(
        posix.check_bash("ls -la | sort", &ctx()).verdict,
        Verdict::Allow
    );
}
