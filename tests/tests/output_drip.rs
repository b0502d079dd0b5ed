//! Output dripped one byte per write, through the real `agent run`: the call's streamed output
//! reaches the session log in a bounded number of `tool_output_delta` events (the worker sends a
//! chunk when it has 16 KiB or when its first byte has waited 50 ms, and the supervisor bounds the
//! events a worker can make), every byte delivered once, in order, and no character cut in two
//! although every one of them was written a byte at a time. Before, each pipe read was one event:
//! 100,000 one-byte writes made on the order of 100,000 events and a log of megabytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

/// What tests/probe/drip.c cycles through, a byte per write.
const PATTERN: &str = "drip-0123456789 é ✓ abcdefghijklmnopqrstuvwxyz\n";

/// Compiles tests/probe/drip.c into `dir/drip`.
fn install_drip(dir: &Path) {
    agentd_e2e::compile_probe("drip", &dir.join("drip"));
}

/// The events of the one session under `state`, as JSON.
fn session_events(state: &Path) -> (Vec<Value>, u64) {
    let session = std::fs::read_dir(state.join("sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let log = session.join("log.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let events = text
        .lines()
        .skip(1) // the header
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
        .collect();
    (events, std::fs::metadata(&log).unwrap().len())
}

#[test]
fn dripped_output_makes_few_events_and_loses_no_byte() {
    const BYTES: usize = 100_000; // 2,000 times the pattern: it ends on a whole character
    assert_eq!(BYTES % PATTERN.len(), 0);
    let ws = Dir::new("drip-ws", As::Root);
    install_drip(&ws.0);
    let (home, state) = (
        Dir::new("drip-home", As::Root),
        Dir::new("drip-state", As::Root),
    );
    let config = home.0.join("config.toml");
    std::fs::write(&config, "").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        // 100,000 one-byte writes, 10 µs apart: two seconds or so.
        bash("call_drip", &format!("./drip {BYTES} 10")),
        answer("dripped"),
    ]));
    let started = Instant::now();
    let out = agent_against(As::Root, &home.0, &mock.url())
        .args(["run", "-p", "drip", "--workspace"])
        .arg(&ws.0)
        .arg("--state-dir")
        .arg(&state.0)
        .arg("--config")
        .arg(&config)
        // The policy asks before running a program by path; the sandbox still applies.
        .args(["--output-format", "json", "--dangerously-skip-permissions"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(run["tool_calls"][0]["status"], "ok", "{run}");

    let (events, log_bytes) = session_events(&state.0);
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool_output_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let streamed: String = deltas.concat();
    eprintln!(
        "{BYTES} one-byte writes: {} tool_output_delta events, a log of {log_bytes} bytes, {took:?}",
        deltas.len()
    );
    let expected: String = PATTERN.repeat(BYTES / PATTERN.len());
    if streamed != expected {
        let at = streamed
            .char_indices()
            .zip(expected.chars())
            .find(|((_, a), b)| a != b)
            .map_or(streamed.len().min(expected.len()), |((i, _), _)| i);
        panic!(
            "the streamed output differs from what was written at byte {at} ({} bytes streamed, \
             {} written, in {} events): {:?}",
            streamed.len(),
            expected.len(),
            deltas.len(),
            &streamed[at.saturating_sub(40)..(at + 40).min(streamed.len())]
        );
    }
    assert!(
        deltas.len() <= 300,
        "{} events for {BYTES} dripped bytes",
        deltas.len()
    );
    assert!(
        log_bytes < 1 << 20,
        "the session log grew to {log_bytes} bytes"
    );
}
