//! `agentd policy check`, run as a real process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use std::io::Write;
use std::process::{Command, Stdio};

fn agentd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentd"));
    // No user or system config may leak into the test.
    cmd.env("XDG_CONFIG_HOME", "/nonexistent")
        .env("HOME", "/home/dev");
    cmd
}

fn run_jsonl(input: &str, extra: &[&str]) -> (Vec<serde_json::Value>, i32) {
    let mut child = agentd()
        .args(["policy", "check", "--jsonl", "--workspace", "/work/project"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, out.status.code().unwrap_or(-1))
}

#[test]
fn the_shared_corpus_passes_through_jsonl_in_order() {
    let corpus = include_str!("../../policy/tests/data/policy-default.jsonl");
    let cases: Vec<serde_json::Value> = corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (replies, code) = run_jsonl(corpus, &[]);
    assert_eq!(code, 0);
    assert_eq!(replies.len(), cases.len(), "one reply per case");
    let mut failures = Vec::new();
    for (case, reply) in cases.iter().zip(&replies) {
        assert_eq!(case["command"], reply["command"], "replies come in order");
        let verdict = reply["verdict"].as_str().unwrap();
        assert!(!reply["reason"].as_str().unwrap().is_empty());
        let ok = match case["expect"].as_str().unwrap() {
            "not-allow" => verdict != "allow",
            expect => verdict == expect,
        };
        if !ok {
            failures.push(format!(
                "{}: expected {}, got {verdict}",
                case["command"], case["expect"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_lines_get_an_error_line_and_the_rest_go_on() {
    let (replies, code) = run_jsonl(
        "{\"command\": \"ls\"}\nnot json\n{\"cmd\": 1}\n\n{\"command\": \"rm x\"}\n",
        &[],
    );
    assert_eq!(code, 1, "a bad line makes the exit code 1");
    assert_eq!(replies.len(), 4);
    assert_eq!(replies[0]["verdict"], "allow");
    assert_eq!(replies[1]["line"], 2);
    assert!(
        replies[1]["error"]
            .as_str()
            .unwrap()
            .starts_with("not JSON")
    );
    assert_eq!(replies[2]["line"], 3);
    assert_eq!(replies[3]["verdict"], "deny");
}

#[test]
fn text_and_json_output_name_the_rule() {
    let out = agentd()
        .args(["policy", "check", "--", "rm", "-rf", "/"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("deny: `rm -rf /` matches bash rule"),
        "{text}"
    );
    let out = agentd()
        .args(["policy", "check", "--json", "--", "git status && mkdir x"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "ask");
    assert_eq!(v["policy"], "built-in");
    assert!(v["reason"].as_str().unwrap().contains("mkdir x"));
}

#[test]
fn a_config_file_applies_and_a_broken_one_is_refused_with_file_and_line() {
    let dir = std::env::temp_dir().join(format!("agentd-policy-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        "[policy]\nbash = [{ pattern = \"mkdir *\", action = \"allow\" }]\n",
    )
    .unwrap();
    let out = agentd()
        .args(["policy", "check", "--config"])
        .arg(&good)
        .args(["--", "mkdir", "x"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("allow:"),
        "{out:?}"
    );
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[policy]\nbash = [\n  { pattern = \"rm [\", action = \"deny\" },\n]\n",
    )
    .unwrap();
    let out = agentd()
        .args(["policy", "check", "--config"])
        .arg(&bad)
        .args(["--", "ls"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:3: bash rule ", bad.display())) && err.contains("(\"rm [\")"),
        "{err}"
    );
    let out = agentd()
        .args([
            "policy",
            "check",
            "--config",
            "/nonexistent/x.toml",
            "--",
            "ls",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("cannot read config file /nonexistent/x.toml")
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn no_command_is_a_usage_error() {
    let out = agentd().args(["policy", "check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no command to check"));
}
