//! An interrupted call still gets the after-call check of protected paths (found by a security
//! review): a call that plants `.vscode/tasks.json` or `.git/commondir` and then looks stuck
//! (`sleep 60`) invites the user to interrupt it; the interrupt drops the call's future, and the
//! planted path must still be moved into `.agentd-quarantine/` — before `agent run` exits, and
//! while the daemon's session goes on — instead of joining the next session's baseline. The real
//! binaries, real workers, the scripted mock model over loopback HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::openai::call_reply as call;
use agentd_e2e::mock_llm::{MockLlm, Reply};
use agentd_e2e::{As, Dir, agent_against, later_git_status_runs_planted_code, repo};
use daemon::{Client, Daemon, Place, wait_for};
use protocol::Encoding;
use protocol::control::{Interrupt, Request, ResponseBody};
use protocol::event::Event;
use protocol::session::FinishReason;
use serde_json::json;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The policy lets the planting script run without asking (the review wrote it with
/// `write_file`, then ran `bash s.sh`).
const POLICY: &str = "[policy]\nbash = [{ pattern = \"bash s.sh\", action = \"allow\" }]\n";

/// What the model does: writes `script` as `s.sh`, then runs it.
fn plant_then_hang(script: &str) -> Vec<Reply> {
    vec![
        call(
            "call_write",
            "write_file",
            json!({"path": "s.sh", "content": script}),
        ),
        call("call_hang", "bash", json!({"command": "bash s.sh"})),
    ]
}

/// `.vscode/tasks.json`, then a call that looks stuck.
const VSCODE: &str =
    "mkdir -p .vscode && printf '{\"tasks\": []}' > .vscode/tasks.json && sleep 60\n";

/// `.git/commondir` naming a copy of the repository whose config runs `marker` at the user's
/// next `git status`; then a call that looks stuck.
fn commondir(marker: &Path) -> String {
    format!(
        "mkdir -p .git/c && cp -r .git/objects .git/refs .git/c/ && printf '[core]\\n\\tfsmonitor = \"touch {m} #\"\\n' > .git/c/config && echo c > .git/commondir && sleep 60\n",
        m = marker.display()
    )
}

/// What is in the workspace's quarantine (nothing when there is none).
/// Waits until `path` exists (the call has planted it), at most 30 s.
fn until_planted(path: &Path) {
    wait_for(&format!("{} planted", path.display()), || {
        std::fs::symlink_metadata(path).is_ok()
    });
}

/// `agent run` in `ws` whose model plants with `script`; SIGINT once `planted` exists. Returns
/// its stdout (stream-json) and stderr once it has exited.
fn interrupted_agent_run(ws: &Path, script: &str, planted: &Path) -> (String, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(plant_then_hang(script)));
    let home = Dir::new("intr-home", As::Root);
    let config = home.0.join("config.toml");
    std::fs::write(&config, POLICY).unwrap();
    let tmp = Dir::new("intr-tmp", As::Root);
    let child = agent_against(As::Root, &home.0, &mock.url())
        .env("TMPDIR", &tmp.0)
        .args(["run", "-p", "set things up", "--workspace"])
        .arg(ws)
        .arg("--config")
        .arg(&config)
        .args(["--output-format", "stream-json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    until_planted(planted);
    // The call now sleeps: it looks stuck, and the user stops the turn.
    std::thread::sleep(Duration::from_millis(200));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let interrupted_at = Instant::now();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        interrupted_at.elapsed() < Duration::from_secs(15),
        "the interrupt took effect: {stderr}"
    );
    assert!(
        stdout.contains(r#""reason":"interrupted""#),
        "{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

#[test]
fn an_interrupted_agent_run_still_quarantines_the_vscode_tasks_its_call_planted() {
    let ws = Dir::new("intr-vscode", As::Root);
    let (stdout, stderr) = interrupted_agent_run(&ws.0, VSCODE, &ws.0.join(".vscode/tasks.json"));
    assert!(
        std::fs::symlink_metadata(ws.0.join(".vscode")).is_err(),
        "the planted .vscode was left in place: {stdout}\n{stderr}"
    );
    let moved = agentd_e2e::quarantined(&ws.0);
    assert_eq!(moved.len(), 1, "{moved:?}\n{stdout}\n{stderr}");
    assert!(moved[0].ends_with(".vscode"), "{moved:?}");
    assert!(
        stderr.contains("created the protected path") && stderr.contains(".vscode"),
        "the note is logged: {stderr}"
    );
    assert!(
        stdout.contains("moved to"),
        "the user sees the note with the call's output: {stdout}"
    );
}

#[test]
fn an_interrupted_agent_run_still_quarantines_a_planted_git_commondir() {
    let ws = repo("intr-commondir", As::Root);
    let marks = Dir::new("intr-marker", As::Root);
    let marker = marks.0.join("fsmonitor-ran");
    let (stdout, stderr) =
        interrupted_agent_run(&ws.0, &commondir(&marker), &ws.0.join(".git/commondir"));
    assert!(
        std::fs::symlink_metadata(ws.0.join(".git/commondir")).is_err(),
        "the planted commondir was left in place: {stdout}\n{stderr}"
    );
    let moved = agentd_e2e::quarantined(&ws.0);
    assert!(
        moved.iter().any(|m| m.ends_with("commondir")),
        "{moved:?}\n{stderr}"
    );
    assert!(
        !later_git_status_runs_planted_code(&ws.0, As::Root, &marker),
        "the user's git status ran the planted fsmonitor"
    );
}

#[test]
fn a_daemon_clients_interrupt_still_quarantines_what_the_call_planted() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(plant_then_hang(VSCODE)));
    let place = Place::new(POLICY);
    let _d = Daemon::start(&place, &mock.url());
    let ws = Dir::new("intr-daemon-ws", As::Root);
    rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        assert_eq!(a.send(&id, "set things up").await, ResponseBody::Ok);
        let planted = ws.0.join(".vscode/tasks.json");
        let start = Instant::now();
        while std::fs::symlink_metadata(&planted).is_err() {
            assert!(start.elapsed() < Duration::from_secs(30), "never planted");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let interrupt = Request::Interrupt(Interrupt {
            session: id.clone(),
        });
        assert_eq!(a.ask(interrupt).await, ResponseBody::Ok);
        let rest = a.until_turn_finished().await;
        let finished = rest.iter().find_map(|e| match &e.event {
            Event::TurnFinished(f) => Some(f.reason),
            _ => None,
        });
        assert_eq!(finished, Some(FinishReason::Interrupted), "{rest:?}");
        // By the turn's end the call's processes are gone and the check has run.
        assert!(
            std::fs::symlink_metadata(ws.0.join(".vscode")).is_err(),
            "the planted .vscode was left in place: {rest:?}"
        );
        let moved = agentd_e2e::quarantined(&ws.0);
        assert_eq!(moved.len(), 1, "{moved:?}");
        let told = rest.iter().any(|e| match &e.event {
            Event::ToolOutputDelta(d) => d.text.contains("moved to"),
            _ => false,
        });
        assert!(told, "the clients see the note: {rest:?}");
    });
}
