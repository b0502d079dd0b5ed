//! A summary that came back empty or cut is refused (issue 20, finding 6): a Gemini 2.5 model
//! can spend its whole `maxOutputTokens` thinking and answer nothing (`finishReason:
//! MAX_TOKENS`); such a "summary" must not replace the history. `agent run`, the real binary,
//! against the mock speaking Gemini.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Reply, gemini};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::{Value, json};

/// A read of `big.txt`, without usage (the scripted counts would not be the real ones, so the
/// history is measured by the estimate and passes the small window).
fn read() -> Reply {
    let call = gemini::call("read_file", json!({"path": "big.txt", "limit": 2000}));
    Reply::events(vec![
        json!({"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP", "index": 0}]}),
    ])
}

#[test]
fn an_empty_summary_is_refused_and_the_history_kept() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        read(),
        read(),
        read(),
        Reply::events(vec![gemini::thought_out(8192)]),
        Reply::events(vec![gemini::chunk(
            vec![gemini::text("done")],
            Some("STOP"),
        )]),
    ]));
    let ws = Dir::new("repo", As::Root);
    let line = "x".repeat(29);
    let big: String = (0..600).map(|_| format!("{line}\n")).collect();
    std::fs::write(ws.0.join("big.txt"), big).unwrap();
    let home = Dir::new("home", As::Root);
    let out = agent_against(As::Root, &home.0, &mock.url())
        .env("PROVIDER", "gemini")
        .env("MODEL", "gemini-2.5-flash")
        .args(["run", "-p", "read big.txt", "--workspace"])
        .arg(&ws.0)
        .args([
            "--context-window",
            "16000",
            "--output-format",
            "stream-json",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    // The event types only: the reads' results are long.
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| e["event"]["type"].as_str())
        .collect();
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        4,
        "three reads and the summary, and no step on a history replaced by nothing\n{kinds:?}\n{stderr}"
    );
    assert!(
        !kinds.contains(&"context_compacted"),
        "an empty summary replaced the history: {kinds:?}"
    );
    let finished = events
        .iter()
        .find(|e| e["event"]["type"] == "turn_finished")
        .unwrap_or_else(|| panic!("no turn_finished: {kinds:?}\n{stderr}"));
    let message = finished["event"]["message"].as_str().unwrap_or_default();
    assert_eq!(finished["event"]["reason"], "error", "{finished}");
    assert!(
        message.contains("summary came back empty")
            && message.contains("MAX_TOKENS")
            && message.contains("history was kept"),
        "{message}"
    );
    assert_ne!(out.status.code(), Some(0));
}
