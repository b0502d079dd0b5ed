//! The OpenAI-compatible provider against the scripted mock server, over real HTTP: streaming and
//! not, and every fault the design names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::providers::ProviderError;
use agentd::providers::model::{Message, ModelRequest, Role, ToolSpec};
use agentd::providers::openai::OpenAiClient;
use agentd::providers::retry::RetryPolicy;
use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use std::time::{Duration, Instant};

fn request() -> ModelRequest {
    ModelRequest {
        model: "mock-model".into(),
        messages: vec![
            Message::text(Role::System, "be brief"),
            Message::text(Role::User, "fix the test"),
        ],
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "run a command".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        }],
        max_tokens: None,
        reminder: None,
    }
}

fn client(mock: &MockLlm, stream: bool) -> OpenAiClient {
    let mut c = OpenAiClient::new(&mock.url(), Some("sk-test-key".into())).unwrap();
    c.stream = stream;
    c.transport.retry = RetryPolicy {
        max_tries: 3,
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_secs(5),
    };
    c.transport.idle_timeout = Duration::from_millis(500);
    c
}

#[tokio::test]
async fn a_stream_assembles_text_and_tool_calls_by_index() {
    let mock = MockLlm::start(vec![Reply::stream(vec![
        openai::text("Let me "),
        openai::text("look."),
        openai::tool(0, Some("call_a"), Some("bash"), ""),
        openai::tool(1, Some("call_b"), Some("read_file"), "{\"pa"),
        openai::tool(0, None, None, "{\"command\":"),
        openai::tool(1, None, None, "th\": \"x\"}"),
        openai::tool(0, None, None, " \"ls\"}"),
        openai::tool(2, Some("call_c"), Some("list_dir"), ""),
        // Some servers say "stop" although tools were called: what arrived decides.
        openai::finish("stop"),
        openai::usage(120, 30),
    ])])
    .await;
    let mut streamed = String::new();
    let r = client(&mock, true)
        .complete(&request(), &mut |t| streamed.push_str(t))
        .await
        .unwrap();
    assert_eq!(r.text, "Let me look.");
    assert_eq!(
        streamed, "Let me look.",
        "text reached the callback as it came"
    );
    let calls: Vec<(&str, &str, &str)> = r
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", "bash", "{\"command\": \"ls\"}"),
            ("call_b", "read_file", "{\"path\": \"x\"}"),
            ("call_c", "list_dir", "{}")
        ]
    );
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (120, 30));
    let sent = &mock.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-key"));
    assert!(
        !sent.raw_body.contains("sk-test-key"),
        "the key goes only in the auth header"
    );
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["model"], "mock-model");
    assert_eq!(sent.body["tools"][0]["function"]["name"], "bash");
    assert_eq!(sent.body["messages"][1]["content"], "fix the test");
}

#[tokio::test]
async fn a_whole_completion_without_streaming() {
    let mock = MockLlm::start(vec![Reply::ok(openai::completion(
        None,
        &[
            ("call_1", "bash", "{\"command\":\"ls\"}"),
            ("call_2", "bash", ""),
        ],
    ))])
    .await;
    let r = client(&mock, false)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(
        r.tool_calls[1].arguments, "{}",
        "empty arguments become {{}}"
    );
    assert_eq!(r.usage.input_tokens, 10);
    assert_eq!(mock.requests()[0].body["stream"], false);
}

#[tokio::test]
async fn tool_results_follow_their_calls_in_the_request() {
    let mock = MockLlm::start(vec![Reply::ok(openai::completion(Some("done"), &[]))]).await;
    let call = protocol::event::ToolCall {
        id: protocol::ids::ToolCallId::new("call_9").unwrap(),
        name: "bash".into(),
        arguments: "{}".into(),
    };
    let mut req = request();
    req.messages.push(Message {
        role: Role::Assistant,
        content: String::new(),
        tool_calls: vec![call.clone()],
        tool_result_for: None,
        opaque: vec![],
        is_error: false,
    });
    req.messages.push(Message::tool_result(&call, "ok"));
    client(&mock, false)
        .complete(&req, &mut |_| {})
        .await
        .unwrap();
    let body = &mock.requests()[0].body;
    assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "call_9");
    assert_eq!(body["messages"][2]["content"], serde_json::Value::Null);
    assert_eq!(body["messages"][3]["role"], "tool");
    assert_eq!(body["messages"][3]["tool_call_id"], "call_9");
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_succeeds() {
    let mock = MockLlm::start(vec![
        Reply::error(429, "slow down", &[("retry-after", "1")]),
        Reply::stream(vec![openai::text("hi"), openai::finish("stop")]),
    ])
    .await;
    let start = Instant::now();
    let r = client(&mock, true)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(r.text, "hi");
    assert!(
        start.elapsed() >= Duration::from_millis(950),
        "Retry-After was honoured: {:?}",
        start.elapsed()
    );
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn retry_after_ms_is_honoured_too() {
    let mock = MockLlm::start(vec![
        Reply::error(503, "busy", &[("retry-after-ms", "300")]),
        Reply::ok(openai::completion(Some("ok"), &[])),
    ])
    .await;
    let start = Instant::now();
    client(&mock, false)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap();
    assert!(start.elapsed() >= Duration::from_millis(290));
}

#[tokio::test]
async fn a_500_until_the_tries_run_out_is_a_clear_bounded_error() {
    let mock = MockLlm::start(vec![
        Reply::error(500, "boom", &[]),
        Reply::error(502, "bad gateway", &[]),
        Reply::error(500, "still boom", &[]),
    ])
    .await;
    let err = client(&mock, true)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert_eq!(err.tries, 3);
    assert_eq!(mock.requests().len(), 3, "bounded tries");
    assert_eq!(
        err.to_string(),
        "openai: HTTP 500: still boom (after 3 tries)"
    );
}

#[tokio::test]
async fn other_4xx_fail_at_once() {
    let mock = MockLlm::start(vec![Reply::error(401, "invalid api key", &[])]).await;
    let err = client(&mock, true)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert_eq!(err.tries, 1);
    assert!(matches!(
        err.error,
        ProviderError::Status { status: 401, .. }
    ));
    assert!(err.to_string().contains("invalid api key"));
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_an_error_not_a_hang() {
    let mock = MockLlm::start(vec![Reply::Sse {
        events: vec![openai::text("par").to_string()],
        pause: Duration::ZERO,
        cut: true,
    }])
    .await;
    let outcome = tokio::time::timeout(
        Duration::from_secs(5),
        client(&mock, true).complete(&request(), &mut |_| {}),
    )
    .await;
    let err = outcome.expect("no hang").unwrap_err();
    assert!(
        matches!(
            err.error,
            ProviderError::StreamCut { .. } | ProviderError::Malformed { .. }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_silent_stream_hits_the_idle_timeout() {
    let mock = MockLlm::start(vec![
        Reply::Sse {
            events: vec![openai::text("late").to_string()],
            pause: Duration::from_secs(3),
            cut: false
        };
        3
    ])
    .await;
    let start = Instant::now();
    let err = client(&mock, true)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.error,
            // Silent before its first event: for a model that does not think silently, that
            // wait is the idle timeout too, and the error says which wait it was.
            ProviderError::Timeout {
                what: "idle stream" | "the wait for the stream's first event",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn an_error_inside_a_200_stream_and_garbage_are_reported() {
    let mock = MockLlm::start(vec![Reply::stream(vec![
        openai::text("a"),
        serde_json::json!({"error": {"message": "model overloaded"}}),
    ])])
    .await;
    let err = client(&mock, true)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert_eq!(
        err.error,
        ProviderError::InStream {
            provider: "openai",
            message: "model overloaded".into()
        }
    );
    let mock = MockLlm::start(vec![Reply::Garbage("<html>proxy error</html>".into())]).await;
    let err = client(&mock, false)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(err.error, ProviderError::Malformed { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("proxy error"),
        "the body's start is quoted: {err}"
    );
    let mock = MockLlm::start(vec![Reply::Sse {
        events: vec!["{not json".into()],
        pause: Duration::ZERO,
        cut: false,
    }])
    .await;
    let err = client(&mock, true)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(err.error, ProviderError::Malformed { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_retried_then_named() {
    let mut c = OpenAiClient::new("http://127.0.0.1:9/v1", None).unwrap();
    c.transport.retry = RetryPolicy {
        max_tries: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    };
    let err = c.complete(&request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(err.tries, 2);
    assert!(
        err.to_string()
            .starts_with("openai: cannot reach http://127.0.0.1:9/v1/chat/completions"),
        "{err}"
    );
}
