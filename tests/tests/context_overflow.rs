//! A context-length error in each provider's own shape compacts the history once and asks again
//! (issue 20, finding 11); a second one ends the turn with the `context_overflow` outcome.
//! The real binary against the mock given a small window, as a small local model has: the
//! configured window (128 000) is far larger, so only the provider's answer can tell.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Recorded, Reply, anthropic, gemini, openai};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::{Value, json};

const PROVIDERS: [(&str, &str); 3] = [
    ("openai", "gpt-4.1"),
    ("anthropic", "claude-sonnet-4-5"),
    ("gemini", "gemini-2.5-flash"),
];

/// A streamed reply that reads `path`, in `provider`'s format.
fn read(provider: &str, id: &str, path: &str) -> Reply {
    let args = json!({ "path": path });
    match provider {
        "openai" => openai::call_reply(id, "read_file", args),
        "anthropic" => Reply::events(vec![
            anthropic::start(40),
            anthropic::tool_block(0, id, "read_file"),
            anthropic::input(0, &args.to_string()),
            anthropic::stop_block(0),
            anthropic::delta("tool_use", 9),
            anthropic::stop(),
        ]),
        _ => Reply::events(vec![
            json!({"candidates": [{"content": {"role": "model", "parts": [gemini::call("read_file", args)]}, "finishReason": "STOP", "index": 0}]}),
        ]),
    }
}

/// A streamed answer of `text`, in `provider`'s format.
fn answer(provider: &str, text: &str) -> Reply {
    match provider {
        "openai" => openai::answer_reply(text),
        "anthropic" => anthropic::stopped_reply(text, "end_turn"),
        _ => Reply::events(vec![gemini::chunk(vec![gemini::text(text)], Some("STOP"))]),
    }
}

struct Ran {
    code: i32,
    json: Value,
    stderr: String,
    requests: Vec<Recorded>,
}

/// `agent run` reading small.txt and big.txt against a mock whose window is `window` tokens.
fn run(provider: &str, model: &str, small_lines: usize, window: u64) -> Ran {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        read(provider, "call_a", "small.txt"),
        read(provider, "call_b", "big.txt"),
        answer(
            provider,
            "Goal: read two files. small.txt read; big.txt being read.",
        ),
        answer(provider, "Both files are x's."),
    ]));
    mock.limit_context(window);
    let ws = Dir::new("repo", As::Root);
    let line = "x".repeat(29);
    let lines = |n: usize| -> String { (0..n).map(|_| format!("{line}\n")).collect() };
    std::fs::write(ws.0.join("small.txt"), lines(small_lines)).unwrap();
    std::fs::write(ws.0.join("big.txt"), lines(500)).unwrap();
    let home = Dir::new("home", As::Root);
    let out = agent_against(As::Root, &home.0, &mock.url())
        .env("PROVIDER", provider)
        .env("MODEL", model)
        .args(["run", "-p", "read small.txt then big.txt", "--workspace"])
        .arg(&ws.0)
        .args(["--output-format", "json", "--approval", "never"])
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim())
            .unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        requests: mock.requests(),
    }
}

/// The third request (both results) is over the window: the provider's refusal is met by one
/// compaction (a summary request), and the same step asked again fits and ends the turn.
#[test]
fn an_overflow_compacts_once_and_the_step_is_asked_again() {
    for (provider, model) in PROVIDERS {
        let ran = run(provider, model, 500, 10_000);
        let j = &ran.json;
        assert_eq!(
            j["finish_reason"], "done",
            "{provider}: {j}\n{}",
            ran.stderr
        );
        assert_eq!(j["result"], "Both files are x's.", "{provider}");
        let sizes: Vec<usize> = ran.requests.iter().map(|r| r.raw_body.len()).collect();
        assert_eq!(
            ran.requests.len(),
            5,
            "{provider}: two reads, the refused step, the summary, the step again: {sizes:?}"
        );
        let retried = &ran.requests[4].raw_body;
        assert!(
            retried.contains("Goal: read two files") && sizes[4] < sizes[2],
            "{provider}: the step was not asked again on a compacted history: {sizes:?}"
        );
    }
}

/// The history still does not fit once compacted: the turn ends with `context_overflow`, in
/// words, with its exit status.
#[test]
fn a_second_overflow_ends_the_turn_with_that_outcome() {
    for (provider, model) in PROVIDERS {
        let ran = run(provider, model, 10, 6_000);
        let j = &ran.json;
        assert_eq!(
            j["finish_reason"], "context_overflow",
            "{provider}: {j}\n{}",
            ran.stderr
        );
        assert_eq!(ran.code, 7, "{provider}");
        let message = j["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("context window") && message.contains("even after compacting"),
            "{provider}: {message}"
        );
        let sizes: Vec<usize> = ran.requests.iter().map(|r| r.raw_body.len()).collect();
        assert_eq!(
            ran.requests.len(),
            5,
            "{provider}: one compaction, no more: {sizes:?}"
        );
    }
}
