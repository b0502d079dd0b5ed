//! `agent demo` end to end: in an empty environment (no network, no key, no `HOME` or an empty
//! one), as root and as an unprivileged user, it fixes the test and shows every layer — a call
//! the policy blocks, two calls the policy allows and the sandbox stops with the kernel's own
//! refusal, the passing test — then a summary with the counts; piped, it prints no escape codes.
//! And the summary is not scripted: with no working worker it counts no refusal, and fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::{As, binary, binary_for, both, command_for};
use std::process::Output;

/// `agent demo` as `who` with nothing in its environment but `PATH` and `env`.
fn demo(who: As, env: &[(&str, &str)]) -> (Output, String) {
    let mut cmd = command_for(binary_for("agent", who), who);
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.arg("demo").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text)
}

both!(
    the_demo_runs_in_an_empty_environment_and_shows_every_layer,
    |who| {
        for env in [&[][..], &[("HOME", "")][..]] {
            let (out, text) = demo(who, env);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{env:?}: {text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            for shown in [
                // It runs the test and sees it fail.
                "AssertionError",
                // A malformed call, answered, and the model goes on.
                "not valid JSON",
                // The policy blocks `rm -rf`.
                "Blocked by policy: `rm -rf build`",
                "replaced 1 occurrence",
                // Allowed by the policy, refused by the kernel: Landlock, then a read-only mount.
                "[allow: every part is allowed]",
                ": Permission denied",
                "cannot write .vscode/tasks.json: Read-only file system",
                // The test passes, and the file says why.
                "ok: 1 test passed",
                "return a + b",
                // The summary, with its counts.
                "summary: 9 tool calls in ",
                "  7 ran, each in a fresh sandboxed worker\n",
                "  1 blocked by policy before running\n",
                "  2 of those stopped by the sandbox: the kernel refused (Permission denied; Read-only file system)\n",
                "  1 malformed, answered with an error the model recovered from\n",
            ] {
                assert!(
                    text.contains(shown),
                    "{env:?}: the demo does not show {shown:?}:\n{text}"
                );
            }
            assert!(
                !text.contains('\x1b'),
                "piped, the demo prints no escape codes:\n{text:?}"
            );
            assert!(!text.contains("FAILED"), "{text}");
        }
    }
);

#[test]
fn without_a_sandbox_that_refuses_the_demo_counts_no_refusal_and_fails() {
    // A worker that cannot start: every allowed call fails before it reaches a kernel, so no
    // output holds a refusal — and the demo must not claim one.
    let out = std::process::Command::new(binary("agent"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("AGENTD_TOOL_WORKER", "/nonexistent/tool-worker")
        .arg("demo")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("  0 of those stopped by the sandbox")
            && text.contains("FAILED: the sandbox stopped 0 of the 2 calls it must stop"),
        "{text}"
    );
}
