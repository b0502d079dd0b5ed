//! Usage counts every token the provider reports (issue 20, finding 8): Anthropic's cache reads
//! and writes (reported beside `input_tokens`), OpenAI's cached and reasoning tokens (inside its
//! totals), Gemini's thinking (beside its candidates) and cached content. `agent run --output-format
//! json` and the session log report them, and `--token-budget` counts them. The real binary,
//! against the mock sending each service's usage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Reply, anthropic, gemini, openai};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::{Value, json};
use std::path::Path;

struct Ran {
    code: i32,
    json: Value,
    stderr: String,
    /// Every line of the session's log.
    log: String,
}

fn run(provider: &str, model: &str, script: Vec<Reply>, extra: &[&str]) -> Ran {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(script));
    let ws = Dir::new("repo", As::Root);
    std::fs::write(ws.0.join("notes.txt"), "hello\n").unwrap();
    let home = Dir::new("home", As::Root);
    let state = home.0.join("state");
    let out = agent_against(As::Root, &home.0, &mock.url())
        .env("PROVIDER", provider)
        .env("MODEL", model)
        .args(["run", "-p", "read notes.txt", "--workspace"])
        .arg(&ws.0)
        .arg("--state-dir")
        .arg(&state)
        .args(["--output-format", "json", "--approval", "never"])
        .args(extra)
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim())
            .unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        log: logs_under(&state),
    }
}

/// The text of every file under `dir`.
fn logs_under(dir: &Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.push_str(&logs_under(&path));
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            all.push_str(&text);
        }
    }
    all
}

fn anthropic_script() -> Vec<Reply> {
    let args = json!({"path": "notes.txt"}).to_string();
    vec![
        Reply::events(vec![
            anthropic::start_cached(100, 900, 50),
            anthropic::tool_block(0, "toolu_1", "read_file"),
            anthropic::input(0, &args),
            anthropic::stop_block(0),
            anthropic::delta("tool_use", 20),
            anthropic::stop(),
        ]),
        Reply::events(vec![
            anthropic::start_cached(10, 1000, 0),
            anthropic::text_block(0),
            anthropic::text(0, "It says hello."),
            anthropic::stop_block(0),
            anthropic::delta("end_turn", 5),
            anthropic::stop(),
        ]),
    ]
}

fn gemini_script() -> Vec<Reply> {
    vec![
        Reply::events(vec![gemini::chunk_with_usage(
            vec![gemini::call("read_file", json!({"path": "notes.txt"}))],
            300,
            200,
            20,
            500,
        )]),
        Reply::events(vec![gemini::chunk_with_usage(
            vec![gemini::text("It says hello.")],
            340,
            200,
            5,
            100,
        )]),
    ]
}

fn openai_script() -> Vec<Reply> {
    vec![
        Reply::stream(vec![
            openai::tool(
                0,
                Some("call_1"),
                Some("read_file"),
                r#"{"path": "notes.txt"}"#,
            ),
            openai::finish("tool_calls"),
            openai::usage_details(1000, 300, 768, 256),
        ]),
        Reply::stream(vec![
            openai::text("It says hello."),
            openai::finish("stop"),
            openai::usage_details(1100, 40, 1024, 30),
        ]),
    ]
}

#[test]
fn each_provider_s_cache_and_reasoning_counts_are_reported_and_logged() {
    for (provider, model, script, want) in [
        (
            "anthropic",
            "claude-sonnet-4-5",
            anthropic_script(),
            // input: 100 + 900 + 50, then 10 + 1000; reads 1900, writes 50.
            json!({"input_tokens": 2060, "output_tokens": 25, "cache_read_tokens": 1900, "cache_write_tokens": 50, "reasoning_tokens": 0}),
        ),
        (
            "gemini",
            "gemini-2.5-flash",
            gemini_script(),
            // output: 20 + 500 thinking, then 5 + 100.
            json!({"input_tokens": 640, "output_tokens": 625, "cache_read_tokens": 400, "cache_write_tokens": 0, "reasoning_tokens": 600}),
        ),
        (
            "openai",
            "gpt-5-mini",
            openai_script(),
            json!({"input_tokens": 2100, "output_tokens": 340, "cache_read_tokens": 1792, "cache_write_tokens": 0, "reasoning_tokens": 286}),
        ),
    ] {
        let ran = run(provider, model, script, &[]);
        assert_eq!(ran.code, 0, "{provider}: {}\n{}", ran.json, ran.stderr);
        assert_eq!(ran.json["usage"], want, "{provider}: {}", ran.json);
        let logged = ran
            .log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|e| {
                let e = e.get("event").cloned().unwrap_or(e);
                (e["type"] == "turn_finished").then(|| e["usage"].clone())
            });
        assert_eq!(
            logged,
            Some(want),
            "{provider}: the session log: {}",
            ran.log
        );
    }
}

/// The budget counts what the provider reported beside its headline counts: Anthropic's cache
/// reads and writes, Gemini's thinking. Counting only `input_tokens` and the candidates, the
/// turn would have gone on.
#[test]
fn the_token_budget_counts_cached_input_and_thinking() {
    for (provider, model, script, budget) in [
        ("anthropic", "claude-sonnet-4-5", anthropic_script(), "1000"),
        ("gemini", "gemini-2.5-flash", gemini_script(), "700"),
    ] {
        let ran = run(provider, model, script, &["--token-budget", budget]);
        assert_eq!(
            ran.json["finish_reason"], "token_budget",
            "{provider}: {}\n{}",
            ran.json, ran.stderr
        );
    }
}
