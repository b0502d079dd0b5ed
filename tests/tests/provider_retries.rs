//! Retries as the providers ask for them (issue 20, finding 4): Anthropic's in-stream
//! `overloaded_error` retried like the 529 it stands for, Gemini's wait carried in the 429's body
//! honoured — and given up on, saying so, when it is longer than a retry may wait — and the
//! `x-should-retry` header obeyed either way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::providers::anthropic::AnthropicClient;
use agentd::providers::gemini::GeminiClient;
use agentd::providers::model::{Message, ModelRequest, Role};
use agentd::providers::openai::OpenAiClient;
use agentd::providers::retry::RetryPolicy;
use agentd_e2e::mock_llm::{MockLlm, Reply, anthropic, gemini, openai};
use std::time::{Duration, Instant};

fn request() -> ModelRequest {
    ModelRequest {
        model: "mock-model".into(),
        messages: vec![Message::text(Role::User, "fix it")],
        tools: vec![],
        max_tokens: None,
        reminder: None,
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_tries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    }
}

fn answer(text: &str) -> Reply {
    Reply::events(vec![
        anthropic::start(10),
        anthropic::text_block(0),
        anthropic::text(0, text),
        anthropic::stop_block(0),
        anthropic::delta("end_turn", 3),
        anthropic::stop(),
    ])
}

/// An Anthropic stream that starts, then reports `kind` in an `error` event.
fn failing_stream(kind: &str, message: &str) -> Reply {
    Reply::events(vec![
        anthropic::start(10),
        anthropic::text_block(0),
        anthropic::text(0, "Let me"),
        anthropic::error_event(kind, message),
    ])
}

#[tokio::test]
async fn an_overloaded_error_inside_an_anthropic_stream_is_retried_like_a_529() {
    let mock = MockLlm::start(vec![
        failing_stream("overloaded_error", "Overloaded"),
        failing_stream("api_error", "Internal server error"),
        answer("Done."),
    ])
    .await;
    let mut c = AnthropicClient::new(&mock.url(), None).unwrap();
    c.transport.retry = policy();
    let r = c
        .complete(&request(), &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("an overloaded stream was not retried: {e}"));
    assert_eq!(r.text, "Done.");
    assert_eq!(mock.requests().len(), 3);
    // A request error reported in the stream is not the server's load: not retried.
    let mock = MockLlm::start(vec![
        failing_stream("invalid_request_error", "prompt is too long"),
        answer("never sent"),
    ])
    .await;
    let mut c = AnthropicClient::new(&mock.url(), None).unwrap();
    c.transport.retry = policy();
    let err = c.complete(&request(), &mut |_| {}).await.unwrap_err();
    assert!(err.to_string().contains("prompt is too long"), "{err}");
    assert_eq!((err.tries, mock.requests().len()), (1, 1));
}

fn gemini_client(mock: &MockLlm) -> GeminiClient {
    let mut c = GeminiClient::new(&mock.url(), Some("g".into())).unwrap();
    c.transport.retry = policy();
    c
}

fn gemini_answer() -> Reply {
    Reply::events(vec![gemini::chunk(vec![gemini::text("ok")], Some("STOP"))])
}

#[tokio::test]
async fn gemini_429_waits_as_long_as_its_body_says() {
    let mock = MockLlm::start(vec![gemini::rate_limited("1.2s"), gemini_answer()]).await;
    let started = Instant::now();
    let r = gemini_client(&mock)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(r.text, "ok");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1150),
        "the retry came after {waited:?}, not after the 1.2 s the body asked for"
    );
}

#[tokio::test]
async fn a_wait_longer_than_the_maximum_gives_up_and_says_so() {
    let mock = MockLlm::start(vec![gemini::rate_limited("3600s"), gemini_answer()]).await;
    let started = Instant::now();
    let err = gemini_client(&mock)
        .complete(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "it waited");
    assert_eq!((err.tries, mock.requests().len()), (1, 1));
    let text = err.to_string();
    assert!(
        text.contains("HTTP 429")
            && text.contains("asked to wait 3600s")
            && text.contains("5s")
            && text.contains("max_retry_wait_secs"),
        "{text}"
    );
}

#[tokio::test]
async fn x_should_retry_is_obeyed_both_ways() {
    // `false` on a status that is usually retried: one try.
    let mock = MockLlm::start(vec![
        Reply::error(503, "unavailable", &[("x-should-retry", "false")]),
        openai::answer_reply("never sent"),
    ])
    .await;
    let mut c = OpenAiClient::new(&mock.url(), None).unwrap();
    c.transport.retry = policy();
    let err = c.complete(&request(), &mut |_| {}).await.unwrap_err();
    assert_eq!((err.tries, mock.requests().len()), (1, 1), "{err}");
    // `true` on a status that is usually final: retried.
    let mock = MockLlm::start(vec![
        Reply::error(400, "try me again", &[("x-should-retry", "true")]),
        openai::answer_reply("second time lucky"),
    ])
    .await;
    let mut c = OpenAiClient::new(&mock.url(), None).unwrap();
    c.transport.retry = policy();
    let r = c.complete(&request(), &mut |_| {}).await.unwrap();
    assert_eq!(r.text, "second time lucky");
}
