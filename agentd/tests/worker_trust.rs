//! The supervisor trusts no worker: it runs no binary found beside itself, a configured worker
//! only if root alone can write or replace it and it lies outside the call's writable roots,
//! refuses (and kills) a worker whose `ready` falls short of the spec, and does not share its
//! stderr with the worker. Each refusal sits beside a sanity run in the same set-up that works.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::worker::{WorkerError, run_tool};
use protocol::worker::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
#[path = "common/fake.rs"]
mod fake;
use common::{Dirs, worker};

const NOBODY: u32 = 65534;

fn echo(text: &str) -> ToolRequest {
    ToolRequest::Bash(BashRequest {
        command: format!("echo {text}"),
    })
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A copy of the built worker at `path`, mode 0755, owned by `uid`.
fn copy_worker(path: &Path, uid: u32) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(worker(), path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
    path.to_path_buf()
}

fn refusal(outcome: Result<ToolResult, WorkerError>) -> String {
    match outcome {
        Err(e @ WorkerError::Untrusted { .. }) => e.to_string(),
        other => panic!("expected the worker to be refused, got {other:?}"),
    }
}

#[tokio::test]
async fn a_configured_worker_runs_only_if_root_alone_can_write_it_outside_the_writable_roots() {
    if !is_root() {
        eprintln!("skipped: making files owned by another user needs root");
        return;
    }
    let f = Dirs::new("trust-binary");
    let spec = f.spec();
    // Sanity: a root-owned copy in a root-owned 0755 directory outside the roots runs.
    let good = copy_worker(&f.root.join("bin/tool-worker"), 0);
    let r = run_tool(&good, &spec, echo("trusted"), |_| {})
        .await
        .unwrap();
    assert_eq!(r.content, "trusted\n");

    // In the workspace, or the temp root, or a write path: the model could replace it.
    let in_ws = copy_worker(&f.ws.join("tool-worker"), 0);
    let msg = refusal(run_tool(&in_ws, &spec, echo("x"), |_| {}).await);
    assert!(msg.contains("which the call may write"), "{msg}");
    assert!(msg.contains(&in_ws.display().to_string()), "{msg}");
    let in_tmp = copy_worker(&f.tmp.join("tool-worker"), 0);
    let msg = refusal(run_tool(&in_tmp, &spec, echo("x"), |_| {}).await);
    assert!(msg.contains("which the call may write"), "{msg}");
    let mut with_write_path = spec.clone();
    with_write_path.write_paths = vec![f.root.join("bin")];
    let msg = refusal(run_tool(&good, &with_write_path, echo("x"), |_| {}).await);
    assert!(msg.contains("which the call may write"), "{msg}");

    // A symlink to the good copy, planted where the model writes: it could point it elsewhere.
    let link = f.ws.join("link-to-worker");
    std::os::unix::fs::symlink(&good, &link).unwrap();
    let msg = refusal(run_tool(&link, &spec, echo("x"), |_| {}).await);
    assert!(msg.contains("link-to-worker"), "{msg}");
    // The same link outside the roots, in a root-owned directory, is followed.
    let outside_link = f.root.join("link");
    std::os::unix::fs::symlink(&good, &outside_link).unwrap();
    let r = run_tool(&outside_link, &spec, echo("linked"), |_| {}).await;
    assert_eq!(r.unwrap().content, "linked\n");

    // Owned by another user, who could rewrite it.
    let theirs = copy_worker(&f.root.join("theirs/tool-worker"), NOBODY);
    let msg = refusal(run_tool(&theirs, &spec, echo("x"), |_| {}).await);
    assert!(msg.contains("owned by uid 65534, not root"), "{msg}");
    // Root-owned, but in a directory another user owns (who could swap it).
    let their_dir = copy_worker(&f.root.join("their-dir/tool-worker"), 0);
    std::os::unix::fs::chown(their_dir.parent().unwrap(), Some(NOBODY), None).unwrap();
    let msg = refusal(run_tool(&their_dir, &spec, echo("x"), |_| {}).await);
    assert!(msg.contains("their-dir is owned by uid 65534"), "{msg}");
    // Root-owned, in a root-owned directory anyone may write (not sticky).
    let open_dir = copy_worker(&f.root.join("open/tool-worker"), 0);
    std::fs::set_permissions(
        open_dir.parent().unwrap(),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let msg = refusal(run_tool(&open_dir, &spec, echo("x"), |_| {}).await);
    assert!(
        msg.contains("writable by group 0 or others (mode 777)"),
        "{msg}"
    );
    // Group-writable file.
    let group_writable = copy_worker(&f.root.join("gw/tool-worker"), 0);
    std::fs::set_permissions(&group_writable, std::fs::Permissions::from_mode(0o775)).unwrap();
    let msg = refusal(run_tool(&group_writable, &spec, echo("x"), |_| {}).await);
    assert!(msg.contains("mode 775"), "{msg}");
}

/// `agentd` (a hard link to the built one) in a directory of its own, with the given files around it.
fn agentd_in(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let agentd = dir.join("bin/agentd");
    let _ = std::fs::remove_file(&agentd);
    std::fs::hard_link(env!("CARGO_BIN_EXE_agentd"), &agentd)
        .or_else(|_| std::fs::copy(env!("CARGO_BIN_EXE_agentd"), &agentd).map(|_| ()))
        .unwrap();
    agentd
}

fn sandbox_run(agentd: &Path, uid: u32, ws: &Path, worker: Option<&Path>) -> (i32, String) {
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg(agentd)
        .args(["sandbox", "--workspace"])
        .arg(ws)
        .args(["--", "echo sandboxed"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    if let Some(worker) = worker {
        cmd.env("AGENTD_TOOL_WORKER", worker);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn agentd_runs_itself_as_the_worker_never_a_tool_worker_beside_it_as_root_and_as_a_user() {
    if !is_root() {
        eprintln!("skipped: switching users needs root");
        return;
    }
    // Under /tmp, not the target directory: a clean clone may sit in a 0700 directory (`mktemp
    // -d`) that the other uid cannot enter.
    let dir = std::env::temp_dir().join(format!("agentd-trust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let agentd = agentd_in(&dir);
    // A planted worker beside the binary and one directory up, that would leave a mark.
    let mark = dir.join("planted-ran");
    for planted in [dir.join("bin/tool-worker"), dir.join("tool-worker")] {
        std::fs::write(
            &planted,
            format!("#!/bin/sh\ntouch '{}'\nexit 1\n", mark.display()),
        )
        .unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::os::unix::fs::chown(&ws, Some(NOBODY), Some(NOBODY)).unwrap();
    for uid in [0, NOBODY] {
        let (code, out) = sandbox_run(&agentd, uid, &ws, None);
        assert_eq!((code, out.as_str()), (0, "sandboxed\n"), "as uid {uid}");
        assert!(!mark.exists(), "as uid {uid}: the planted worker ran");
    }
    // As a user: a worker that user owns is refused, the root-owned one beside it runs.
    let theirs = copy_worker(&dir.join("user/tool-worker"), NOBODY);
    let (code, out) = sandbox_run(&agentd, NOBODY, &ws, Some(&theirs));
    assert_eq!(code, 125, "{out}");
    assert!(
        out.contains("refusing the tool-worker") && out.contains("owned by uid 65534"),
        "{out}"
    );
    let root_owned = copy_worker(&dir.join("root/tool-worker"), 0);
    let (code, out) = sandbox_run(&agentd, NOBODY, &ws, Some(&root_owned));
    assert_eq!((code, out.as_str()), (0, "sandboxed\n"));
    // As a user, a worker in the workspace (theirs to write) is refused even when root owns it.
    let in_ws = copy_worker(&ws.join("tool-worker"), 0);
    let (code, out) = sandbox_run(&agentd, NOBODY, &ws, Some(&in_ws));
    assert_eq!(code, 125, "{out}");
    assert!(out.contains("which the call may write"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_worker_whose_ready_falls_short_of_the_spec_is_refused_and_killed() {
    let f = Dirs::new("trust-ready");
    let mut lie = fake::honest_report();
    lie.landlock = LandlockStatus::NotEnforced;
    lie.seccomp = false;
    let frames = [fake::ready(lie), fake::result("ran anyway")].concat();
    let liar = fake::worker(&f.root, "liar", &frames, "exec sleep 62.1");
    match run_tool(&liar, &f.spec(), echo("x"), |_| {}).await {
        Err(WorkerError::Shortfall(shortfall)) => {
            let all = shortfall.missing.join("\n");
            assert_eq!(shortfall.missing.len(), 2, "{all}");
            assert!(all.contains("seccomp") && all.contains("Landlock fully enforced"));
        }
        other => panic!("expected a shortfall, got {other:?}"),
    }
    assert!(
        fake::none_runs("sleep 62.1"),
        "the refused worker was killed"
    );

    // Sanity: the same fake with an honest report is served, and the result carries the report
    // the supervisor verified, whatever the result frame claims.
    let mut claimed = fake::honest_report();
    claimed.containment = "claimed later".into();
    let result = FromWorker::Result(ToolResult {
        content: "served".into(),
        is_error: false,
        exit_code: Some(0),
        timed_out: false,
        truncated: false,
        bytes_seen: 6,
        duration_ms: 1,
        lockdown: claimed,
    });
    let frames = [fake::ready(fake::honest_report()), fake::frame(&result)].concat();
    let honest = fake::worker(&f.root, "honest", &frames, "exec sleep 62.2");
    let r = run_tool(&honest, &f.spec(), echo("x"), |_| {})
        .await
        .unwrap();
    assert_eq!(r.content, "served");
    assert_eq!(r.lockdown, fake::honest_report());
    assert!(
        fake::none_runs("sleep 62.2"),
        "the worker is gone after its result"
    );
}

#[tokio::test]
async fn the_workers_stderr_is_a_capped_pipe_of_its_own_told_when_it_dies() {
    let f = Dirs::new("trust-stderr");
    let dies = fake::worker(
        &f.root,
        "dies",
        &[],
        "readlink /proc/$$/fd/2 >&2\necho worker-said-this >&2\nhead -c 200000 /dev/zero | tr '\\0' x >&2\nexit 7",
    );
    let ours = std::fs::read_link("/proc/self/fd/2").unwrap();
    match run_tool(&dies, &f.spec(), echo("x"), |_| {}).await {
        Err(e @ WorkerError::Died { .. }) => {
            let WorkerError::Died { status, stderr } = &e else {
                unreachable!()
            };
            assert!(status.contains('7'), "{status}");
            // The error shows the end of it, bounded.
            assert!(stderr.ends_with("xxxx") && stderr.len() < 4096, "{stderr}");
            assert!(e.to_string().contains("its stderr: …x"), "{e}");
        }
        other => panic!("expected Died, got {other:?}"),
    }
    // The start of it, with the pipe the worker had as fd 2, reaches the log: run it again with
    // a short stderr to see it whole.
    let says = fake::worker(
        &f.root,
        "says",
        &[],
        "readlink /proc/$$/fd/2 >&2\necho worker-said-this >&2\nexit 7",
    );
    let Err(WorkerError::Died { stderr, .. }) = run_tool(&says, &f.spec(), echo("x"), |_| {}).await
    else {
        panic!("expected Died")
    };
    assert!(stderr.contains("worker-said-this"), "{stderr}");
    // Escaped: one line in the log, its newlines as `\n`.
    let theirs = stderr.split("\\n").next().unwrap_or_default();
    assert!(theirs.starts_with("pipe:["), "{stderr}");
    assert_ne!(
        Path::new(theirs),
        ours,
        "the worker's stderr is not the supervisor's"
    );
}
