//! The Anthropic and Gemini adapters against the scripted mock server, over real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::providers::ProviderError;
use agentd::providers::anthropic::AnthropicClient;
use agentd::providers::gemini::GeminiClient;
use agentd::providers::model::{Message, ModelRequest, Role, ToolSpec};
use agentd::providers::retry::RetryPolicy;
use agentd_e2e::mock_llm::{MockLlm, Reply, anthropic, gemini};
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;
use serde_json::json;
use std::time::Duration;

fn conversation() -> ModelRequest {
    let call = ToolCall {
        id: ToolCallId::new("toolu_1").unwrap(),
        name: "read_file".into(),
        arguments: r#"{"path":"a.rs"}"#.into(),
    };
    ModelRequest {
        model: "mock-model".into(),
        messages: vec![
            Message::text(Role::System, "be brief"),
            Message::text(Role::User, "fix it"),
            Message {
                role: Role::Assistant,
                content: "Reading.".into(),
                tool_calls: vec![call.clone()],
                tool_result_for: None,
                opaque: vec![],
                is_error: false,
            },
            Message::tool_result(&call, "fn main() {}"),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "read".into(),
            parameters: json!({"type": "object"}),
        }],
        max_tokens: None,
        reminder: None,
    }
}

fn fast() -> RetryPolicy {
    RetryPolicy {
        max_tries: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
    }
}

fn anthropic_client(mock: &MockLlm, stream: bool) -> AnthropicClient {
    let mut c = AnthropicClient::new(&mock.url(), Some("sk-ant-test".into())).unwrap();
    c.stream = stream;
    c.transport.retry = fast();
    c
}

fn gemini_client(mock: &MockLlm, stream: bool) -> GeminiClient {
    let mut c = GeminiClient::new(&mock.url(), Some("g-test".into())).unwrap();
    c.stream = stream;
    c.transport.retry = fast();
    c
}

#[tokio::test]
async fn anthropic_stream_joins_input_json_and_results_go_back_as_tool_result_blocks() {
    let mock = MockLlm::start(vec![Reply::events(vec![
        anthropic::start(50),
        anthropic::text_block(0),
        anthropic::text(0, "Running "),
        anthropic::ping(),
        anthropic::text(0, "it."),
        anthropic::stop_block(0),
        anthropic::tool_block(1, "toolu_2", "bash"),
        anthropic::input(1, "{\"comm"),
        anthropic::input(1, "and\": \"cargo test\"}"),
        anthropic::stop_block(1),
        anthropic::tool_block(2, "toolu_3", "list_dir"),
        anthropic::stop_block(2),
        anthropic::delta("tool_use", 17),
        anthropic::stop(),
    ])])
    .await;
    let mut streamed = String::new();
    let r = anthropic_client(&mock, true)
        .complete(&conversation(), &mut |t| streamed.push_str(t))
        .await
        .unwrap();
    assert_eq!(
        (r.text.as_str(), streamed.as_str()),
        ("Running it.", "Running it.")
    );
    let calls: Vec<(&str, &str, &str)> = r
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("toolu_2", "bash", "{\"command\": \"cargo test\"}"),
            ("toolu_3", "list_dir", "{}")
        ]
    );
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (50, 17));
    let sent = &mock.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert!(sent.header("authorization").is_none() && !sent.raw_body.contains("sk-ant-test"));
    let b = &sent.body;
    assert_eq!(b["system"][0]["text"], "be brief");
    // A model name the limits table does not know: the cap every Claude model takes.
    assert_eq!(b["max_tokens"], 4096);
    assert_eq!(b["messages"][1]["content"][1]["type"], "tool_use");
    assert_eq!(b["messages"][1]["content"][1]["input"]["path"], "a.rs");
    assert_eq!(b["messages"][2]["role"], "user");
    assert_eq!(b["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(b["messages"][2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
}

#[tokio::test]
async fn anthropic_whole_message_and_faults() {
    let mock = MockLlm::start(vec![Reply::ok(anthropic::message(
        "Done.",
        &[("toolu_9", "bash", json!({"command": "ls"}))],
    ))])
    .await;
    let r = anthropic_client(&mock, false)
        .complete(&conversation(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(r.text, "Done.");
    assert_eq!(r.tool_calls[0].arguments, "{\"command\":\"ls\"}");
    // An error in the stream that is the request's, not the server's load: not retried
    // (`provider_retries.rs` has the overloaded one, which is).
    let mock = MockLlm::start(vec![Reply::events(vec![
        anthropic::start(1),
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "Bad"}}),
    ])])
    .await;
    let err = anthropic_client(&mock, true)
        .complete(&conversation(), &mut |_| {})
        .await
        .unwrap_err();
    assert_eq!(
        err.error,
        ProviderError::InStream {
            provider: "anthropic",
            message: "Bad".into()
        }
    );
    let mock = MockLlm::start(vec![
        Reply::error(529, "overloaded", &[]),
        Reply::ok(anthropic::message("ok", &[])),
    ])
    .await;
    let r = anthropic_client(&mock, false)
        .complete(&conversation(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(r.text, "ok", "529 is retried");
    let mock = MockLlm::start(vec![Reply::events(vec![
        anthropic::start(1),
        anthropic::text_block(0),
        anthropic::text(0, "cut"),
    ])])
    .await;
    let err = anthropic_client(&mock, true)
        .complete(&conversation(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(err.error, ProviderError::StreamCut { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn gemini_stream_with_several_calls_and_function_responses_as_objects() {
    let mock = MockLlm::start(vec![Reply::events(vec![
        gemini::chunk(vec![gemini::text("Two ")], None),
        gemini::chunk(
            vec![
                gemini::text("calls."),
                gemini::call("bash", json!({"command": "ls"})),
                gemini::call("read_file", json!({"path": "b.rs"})),
            ],
            None,
        ),
        gemini::chunk(vec![], Some("STOP")),
    ])])
    .await;
    let r = gemini_client(&mock, true)
        .complete(&conversation(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(r.text, "Two calls.");
    let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["bash", "read_file"]);
    let (a, b) = (r.tool_calls[0].id.as_str(), r.tool_calls[1].id.as_str());
    assert!(
        a.starts_with("call_") && b.starts_with("call_") && a != b,
        "ids are made up, distinct: {a} {b}"
    );
    assert_eq!(r.tool_calls[1].arguments, "{\"path\":\"b.rs\"}");
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (21, 9));
    let sent = &mock.requests()[0];
    assert_eq!(
        sent.path,
        "/v1/models/mock-model:streamGenerateContent?alt=sse"
    );
    assert_eq!(sent.header("x-goog-api-key"), Some("g-test"));
    let b = &sent.body;
    assert_eq!(b["systemInstruction"]["parts"][0]["text"], "be brief");
    assert_eq!(b["contents"][1]["role"], "model");
    assert_eq!(
        b["contents"][1]["parts"][1]["functionCall"]["args"]["path"],
        "a.rs"
    );
    assert_eq!(
        b["contents"][2]["parts"][0]["functionResponse"]["name"],
        "read_file"
    );
    assert_eq!(
        b["contents"][2]["parts"][0]["functionResponse"]["response"]["content"], "fn main() {}",
        "text results are wrapped in an object"
    );
    let decl = &b["tools"][0]["functionDeclarations"][0];
    assert_eq!(decl["name"], "read_file");
    assert_eq!(
        (
            decl["parametersJsonSchema"]["type"].as_str(),
            decl.get("parameters")
        ),
        (Some("object"), None),
        "the full JSON Schema goes in parametersJsonSchema, never in parameters"
    );
}

#[tokio::test]
async fn gemini_whole_response_and_a_stream_without_a_finish_reason() {
    let mock = MockLlm::start(vec![Reply::ok(gemini::chunk(
        vec![gemini::text("hello")],
        Some("STOP"),
    ))])
    .await;
    let r = gemini_client(&mock, false)
        .complete(&conversation(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(r.text, "hello");
    assert_eq!(
        mock.requests()[0].path,
        "/v1/models/mock-model:generateContent"
    );
    let mock = MockLlm::start(vec![Reply::events(vec![gemini::chunk(
        vec![gemini::text("half")],
        None,
    )])])
    .await;
    let err = gemini_client(&mock, true)
        .complete(&conversation(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(err.error, ProviderError::StreamCut { provider: "gemini" }),
        "{err}"
    );
}

#[tokio::test]
async fn a_gemini_model_name_cannot_aim_the_request_at_another_endpoint() {
    let mock = MockLlm::start(vec![Reply::ok(gemini::chunk(
        vec![gemini::text("hello")],
        Some("STOP"),
    ))])
    .await;
    for bad in [
        "../../../evil/path?injected=1#",
        "gemini/../../x",
        "a?b",
        "a#b",
        "..",
        "",
        "name with space",
    ] {
        let mut req = conversation();
        req.model = bad.into();
        let err = gemini_client(&mock, false)
            .complete(&req, &mut |_| {})
            .await
            .unwrap_err();
        assert!(
            matches!(err.error, ProviderError::BadModel { .. }),
            "{bad:?}: {err}"
        );
    }
    assert!(mock.requests().is_empty(), "nothing was sent");
    // A real model id still goes through.
    let mut req = conversation();
    req.model = "gemini-2.5-flash_001".into();
    let r = gemini_client(&mock, false)
        .complete(&req, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(r.text, "hello");
    assert_eq!(
        mock.requests()[0].path,
        "/v1/models/gemini-2.5-flash_001:generateContent"
    );
}
