//! `examples/python_client.py`, the standard-library Python client, against the real daemon and
//! the mock LLM: it runs a prompt, prints every event as a JSON line, denies approval requests
//! when it has no terminal, and says by its exit status how the turn ended.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use daemon::{Daemon, Place, workspace};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn client() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python_client.py")
}

fn run_client(place: &Place, prompt: &str, ws: &Path) -> Output {
    Command::new("python3")
        .arg(client())
        .arg(&place.socket)
        .arg(prompt)
        .arg("--workspace")
        .arg(ws)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn it_runs_a_prompt_prints_every_event_and_denies_asks_without_a_terminal() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        Reply::stream(vec![
            openai::tool(
                0,
                Some("call_mk"),
                Some("bash"),
                r#"{"command": "mkdir made"}"#,
            ),
            openai::finish("tool_calls"),
        ]),
        Reply::stream(vec![openai::text("you said no"), openai::finish("stop")]),
    ]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    let out = run_client(&place, "make a dir", &ws.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let frames: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(frames.iter().all(|f| f["type"] == "event"), "{stdout}");
    let seqs: Vec<u64> = frames.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=frames.len() as u64).collect::<Vec<_>>(),
        "every event, in order"
    );
    let events: Vec<&Value> = frames.iter().map(|f| &f["event"]).collect();
    assert!(
        events.iter().any(|e| e["type"] == "approval_requested"),
        "{stdout}"
    );
    let resolved = events
        .iter()
        .find(|e| e["type"] == "approval_resolved")
        .unwrap();
    assert_eq!(resolved["decision"], "deny");
    assert_eq!(
        resolved["by"], "user",
        "the client answered: no terminal, so deny"
    );
    assert_eq!(events.last().unwrap()["reason"], "done");
    assert!(!ws.0.join("made").exists(), "the denied call did not run");
    assert!(mock.requests()[1].raw_body.contains("Denied by the user"));
}

#[test]
fn its_exit_status_says_how_the_turn_ended_or_that_agentd_refused() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    // No script: the model answers 500, once (max_tries = 1), and the turn ends with error.
    let mock = rt.block_on(MockLlm::start(vec![]));
    let place = Place::new("[provider]\nmax_tries = 1\n");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    let out = run_client(&place, "hello", &ws.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"]["reason"], json!("error"), "{stdout}");

    let out = run_client(&place, "hello", &ws.0.join("missing"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("create_session") && stderr.contains("bad_request"),
        "{stderr}"
    );
}

#[test]
fn ctrl_c_interrupts_the_turn() {
    use std::io::BufRead;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![Reply::stream(vec![
        openai::tool(
            0,
            Some("call_long"),
            Some("bash"),
            r#"{"command": "sleep 30; echo never-py"}"#,
        ),
        openai::finish("tool_calls"),
    ])]));
    let place = Place::new("[policy]\nbash = [{ pattern = \"sleep *\", action = \"allow\" }]\n");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    let mut child = Command::new("python3")
        .arg(client())
        .arg(&place.socket)
        .arg("wait")
        .arg("--workspace")
        .arg(&ws.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("tool_call_started") {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{rest:?}");
    let last: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(last["event"]["reason"], "interrupted", "{rest:?}");
}
