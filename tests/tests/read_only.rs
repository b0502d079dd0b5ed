//! A read-only session (`agent run --read-only`): the model is offered no tool that only writes,
//! a write it asks for anyway is refused, and its commands run in the read-only sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::openai::{answer_reply as answer, call_reply as call};
use agentd_e2e::mock_llm::{MockLlm, Reply};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::{Value, json};
use std::process::Stdio;

/// Runs `agent run` in `ws` with `extra` flags; returns the requests' bodies and the JSON result.
fn run(ws: &Dir, replies: Vec<Reply>, extra: &[&str]) -> (Vec<Value>, Value) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(replies));
    let home = Dir::new("ro-home", As::Root);
    let url = mock.url();
    let out = agent_against(As::Root, &home.0, &url)
        .args(["run", "-p", "look around", "--output-format", "json"])
        .args(extra)
        .arg("--workspace")
        .arg(&ws.0)
        .arg("--state-dir")
        .arg(home.0.join("state"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let bodies = mock.requests().iter().map(|r| r.body.clone()).collect();
    (bodies, json)
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_read_only_session_is_offered_no_write_tools_and_cannot_write() {
    let ws = Dir::new("ro-ws", As::Root);
    std::fs::write(ws.0.join("notes.txt"), "hello\n").unwrap();
    // The policy allows the write, so what stops it is the read-only sandbox.
    let conf = Dir::new("ro-conf", As::Root);
    let config = conf.0.join("config.toml");
    std::fs::write(
        &config,
        "[policy]\nbash = [{ pattern = \"*touch made-by-bash\", action = \"allow\" }]\n",
    )
    .unwrap();
    let config = config.display().to_string();
    let (bodies, out) = run(
        &ws,
        vec![
            call(
                "c1",
                "write_file",
                json!({"path": "planted.txt", "content": "x"}),
            ),
            call(
                "c2",
                "bash",
                json!({"command": "cat notes.txt; touch made-by-bash"}),
            ),
            answer("looked"),
        ],
        &["--read-only", "--config", &config],
    );
    let tools = tool_names(&bodies[0]);
    assert!(
        tools.iter().any(|t| t == "bash") && tools.iter().any(|t| t == "read_file"),
        "{tools:?}"
    );
    assert!(
        !tools
            .iter()
            .any(|t| t == "write_file" || t == "str_replace"),
        "{tools:?}"
    );
    let calls = out["tool_calls"].as_array().unwrap();
    assert_eq!(calls[0]["status"], "denied", "{out}");
    assert!(!ws.0.join("planted.txt").exists());
    let bash_result = bodies[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(bash_result.contains("hello"), "it reads: {bash_result}");
    assert!(
        bash_result.contains("Read-only file system"),
        "{bash_result}"
    );
    assert!(!ws.0.join("made-by-bash").exists());
}

#[test]
fn a_session_that_may_write_is_offered_the_write_tools() {
    let ws = Dir::new("rw-ws", As::Root);
    let (bodies, _) = run(&ws, vec![answer("nothing to do")], &[]);
    let tools = tool_names(&bodies[0]);
    assert!(
        tools.iter().any(|t| t == "write_file") && tools.iter().any(|t| t == "str_replace"),
        "{tools:?}"
    );
}
