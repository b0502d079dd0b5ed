//! Conventions users bring from other tools (issue 20, finding 13): `[provider] headers` sent
//! with every call and refused when they are not valid headers or are agentd's own; Anthropic's
//! `is_error` on a failed tool result; a context window per model (the limits table's, and a
//! conservative one for a name it does not know) instead of 128 000 for every model. The real
//! binary against the mock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Recorded, Reply, anthropic, openai};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::{Value, json};

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    requests: Vec<Recorded>,
}

/// `agent run -p PROMPT` with `config` as its config file.
fn run(provider: &str, model: &str, config: &str, script: Vec<Reply>, prompt: &str) -> Ran {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(script));
    let ws = Dir::new("repo", As::Root);
    let line = "x".repeat(29);
    let big: String = (0..1000).map(|_| format!("{line}\n")).collect();
    std::fs::write(ws.0.join("big.txt"), big).unwrap();
    let home = Dir::new("home", As::Root);
    let config_path = home.0.join("config.toml");
    std::fs::write(&config_path, config).unwrap();
    let out = agent_against(As::Root, &home.0, &mock.url())
        .env("PROVIDER", provider)
        .env("MODEL", model)
        .args(["run", "-p", prompt, "--workspace"])
        .arg(&ws.0)
        .arg("--config")
        .arg(&config_path)
        .args(["--output-format", "stream-json", "--approval", "never"])
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        requests: mock.requests(),
    }
}

#[test]
fn configured_headers_go_with_every_call() {
    let config = "[provider]\nheaders = { \"HTTP-Referer\" = \"https://example.org/agentd\", \"X-Title\" = \"agentd e2e\" }\n";
    let ran = run(
        "openai",
        "gpt-4.1",
        config,
        vec![openai::answer_reply("hi")],
        "say hi",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let req = &ran.requests[0];
    assert_eq!(
        req.header("http-referer"),
        Some("https://example.org/agentd")
    );
    assert_eq!(req.header("x-title"), Some("agentd e2e"));
    assert_eq!(
        req.header("authorization"),
        Some("Bearer sk-e2e"),
        "the key is still the adapter's"
    );
}

/// A bad header or an absurd window is an error naming the file, the line and the key, before
/// any model call; a credential in a header is not echoed in it.
#[test]
fn bad_provider_config_is_refused_naming_file_line_and_key() {
    for (config, key, line) in [
        (
            "[provider]\nheaders = { \"bad name\" = \"x\" }\n",
            "provider.headers",
            2,
        ),
        (
            "[provider]\nmodel = \"m\"\nheaders = { Authorization = \"Bearer sk-secret-1\" }\n",
            "provider.headers",
            3,
        ),
        (
            "[provider]\nheaders = { \"X-Title\" = \"a\\r\\nx-evil: 1\" }\n",
            "provider.headers",
            2,
        ),
        (
            "[provider]\ncontext_window = 0\n",
            "provider.context_window",
            2,
        ),
        (
            "[provider]\ncontext_window = 99999999999\n",
            "provider.context_window",
            2,
        ),
        (
            "[provider]\nfirst_byte_timeout_secs = 0\n",
            "provider.first_byte_timeout_secs",
            2,
        ),
        (
            "[provider]\nfirst_byte_timeout_secs = 1e9\n",
            "provider.first_byte_timeout_secs",
            2,
        ),
    ] {
        let ran = run("openai", "gpt-4.1", config, vec![], "say hi");
        assert_eq!(ran.code, 2, "{config}: {}", ran.stderr);
        assert!(
            ran.stderr.contains(&format!("config.toml:{line}:")) && ran.stderr.contains(key),
            "{config}: {}",
            ran.stderr
        );
        assert!(!ran.stderr.contains("sk-secret-1"), "{}", ran.stderr);
        assert!(ran.requests.is_empty());
    }
}

/// A failed call's result goes to Anthropic with `is_error: true`, a good one without it.
#[test]
fn a_failed_tool_result_is_marked_is_error_for_anthropic() {
    let call = |id: &str, path: &str| {
        Reply::events(vec![
            anthropic::start(40),
            anthropic::tool_block(0, id, "read_file"),
            anthropic::input(0, &json!({ "path": path }).to_string()),
            anthropic::stop_block(0),
            anthropic::delta("tool_use", 9),
            anthropic::stop(),
        ])
    };
    let ran = run(
        "anthropic",
        "claude-sonnet-4-5",
        "",
        vec![
            call("toolu_1", "missing.txt"),
            call("toolu_2", "big.txt"),
            anthropic::stopped_reply("done", "end_turn"),
        ],
        "read them",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let results: Vec<Value> = ran.requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["is_error"], true, "{}", results[0]);
    assert!(results[1].get("is_error").is_none(), "{}", results[1]);
}

/// The window follows the model: a name the table does not know gets 32 768 tokens, so four
/// reads of ~30 KB (about 30 000 tokens by the estimate) are compacted; a GPT-4.1 session (a
/// window of about 1M) reads the same without compacting. With one window of 128 000 for every
/// model, neither compacted.
#[test]
fn the_context_window_follows_the_model() {
    let read =
        |id: &str| openai::call_reply(id, "read_file", json!({"path": "big.txt", "limit": 800}));
    let script = || {
        vec![
            read("call_1"),
            read("call_2"),
            read("call_3"),
            read("call_4"),
            openai::answer_reply("Goal: read big.txt four times."),
            openai::answer_reply("Read."),
        ]
    };
    let compacted = |ran: &Ran| ran.stdout.contains("\"type\":\"context_compacted\"");
    let unknown = run(
        "openai",
        "my-local-model",
        "",
        script(),
        "read big.txt four times",
    );
    assert_eq!(unknown.code, 0, "{}", unknown.stderr);
    assert!(
        compacted(&unknown),
        "no compaction at 32 768 tokens: {} requests",
        unknown.requests.len()
    );
    assert_eq!(unknown.requests.len(), 6);
    let large = run("openai", "gpt-4.1", "", script(), "read big.txt four times");
    assert!(!compacted(&large), "gpt-4.1 compacted");
    assert_eq!(large.requests.len(), 5);
}
