//! OpenAI-compatible reasoning and local servers (issue 20, finding 3): DeepSeek's thinking mode
//! refuses a tool step whose `reasoning_content` did not come back; some llama.cpp and Ollama
//! builds send a call's `arguments` as a JSON object, which must be taken as sent, not as `{}`.
//! The real binary against the strict mock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Recorded, Reply, openai};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::{Value, json};

fn run(model: &str, script: Vec<Reply>) -> (Value, String, Vec<Recorded>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(script));
    let ws = Dir::new("repo", As::Root);
    std::fs::write(ws.0.join("notes.txt"), "hello\n").unwrap();
    let home = Dir::new("home", As::Root);
    let out = agent_against(As::Root, &home.0, &mock.url())
        .env("MODEL", model)
        .args(["run", "-p", "read notes.txt", "--workspace"])
        .arg(&ws.0)
        .args(["--output-format", "json", "--approval", "never"])
        .output()
        .unwrap();
    (
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        mock.requests(),
    )
}

#[test]
fn deepseek_reasoning_content_goes_back_on_the_tool_step() {
    let thought = "The user wants the notes; read_file will do.";
    let (json, stderr, requests) = run(
        "deepseek-reasoner",
        vec![
            Reply::stream(vec![
                openai::reasoning(&thought[..10]),
                openai::reasoning(&thought[10..]),
                openai::tool(
                    0,
                    Some("call_1"),
                    Some("read_file"),
                    r#"{"path": "notes.txt"}"#,
                ),
                openai::finish("tool_calls"),
            ]),
            Reply::stream(vec![
                openai::reasoning("It is read."),
                openai::text("It says hello."),
                openai::finish("stop"),
            ]),
        ],
    );
    assert_eq!(json["finish_reason"], "done", "{json}\n{stderr}");
    assert_eq!(json["result"], "It says hello.");
    let step = &requests[1].body["messages"];
    let assistant = step
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["reasoning_content"], thought, "{assistant}");
    assert!(
        !json["result"]
            .as_str()
            .unwrap()
            .contains("read_file will do"),
        "reasoning is not answer text"
    );
}

#[test]
fn arguments_sent_as_a_json_object_are_taken_as_sent() {
    let (json, stderr, _) = run(
        "llama3.1:8b",
        vec![
            Reply::stream(vec![
                openai::tool_object_args(0, "call_1", "read_file", json!({"path": "notes.txt"})),
                openai::finish("tool_calls"),
            ]),
            openai::answer_reply("It says hello."),
        ],
    );
    assert_eq!(json["finish_reason"], "done", "{json}\n{stderr}");
    let call = &json["tool_calls"][0];
    assert_eq!(call["status"], "ok", "{call}");
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"path": "notes.txt"}));
}
