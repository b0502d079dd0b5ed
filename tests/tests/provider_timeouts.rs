//! A reasoning model that thinks before it streams anything is not cut off by the idle timeout
//! (issue 20, finding 9): until a stream's first event, a model that thinks silently gets
//! minutes ([`THINKING_FIRST_EVENT`]), or what `[provider] first_byte_timeout_secs` says; once
//! it streams, the idle timeout holds as before.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::providers::ProviderError;
use agentd::providers::http::THINKING_FIRST_EVENT;
use agentd::providers::model::{Message, ModelRequest, Role};
use agentd::providers::openai::OpenAiClient;
use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use std::time::Duration;

fn thinking(silence: Duration) -> Reply {
    Reply::Thinking {
        silence,
        events: vec![
            openai::text("Done thinking.").to_string(),
            openai::finish("stop").to_string(),
            "[DONE]".into(),
        ],
    }
}

fn client(mock: &MockLlm) -> OpenAiClient {
    let mut c = OpenAiClient::new(&mock.url(), Some("sk-test".into())).unwrap();
    c.transport.retry.max_tries = 1;
    c.transport.idle_timeout = Duration::from_millis(700);
    c
}

fn ask(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        messages: vec![Message::text(Role::User, "think hard")],
        tools: vec![],
        max_tokens: None,
        reminder: None,
    }
}

/// Silence past the idle timeout before the first event: a reasoning model's thinking is
/// waited for; any other model's silence is still an error, and says which wait it was.
#[tokio::test]
async fn a_reasoning_model_may_think_past_the_idle_timeout_before_it_streams() {
    let mock = MockLlm::start(vec![
        thinking(Duration::from_millis(1500)),
        thinking(Duration::from_millis(1500)),
    ])
    .await;
    let c = client(&mock);
    let r = c.complete(&ask("o3"), &mut |_| {}).await.unwrap();
    assert_eq!(r.text, "Done thinking.");
    let err = c.complete(&ask("gpt-4.1"), &mut |_| {}).await.unwrap_err();
    assert!(
        matches!(err.error, ProviderError::Timeout { after, .. } if after == Duration::from_millis(700)),
        "{err}"
    );
    assert!(err.to_string().contains("first event"), "{err}");
    assert!(THINKING_FIRST_EVENT >= Duration::from_secs(300));
}

/// `[provider] first_byte_timeout_secs` holds for every model, a reasoning one too.
#[tokio::test]
async fn the_configured_first_event_wait_holds_for_every_model() {
    let mock = MockLlm::start(vec![thinking(Duration::from_millis(1500))]).await;
    let mut c = client(&mock);
    c.transport.first_event_timeout = Some(Duration::from_millis(500));
    let err = c.complete(&ask("o3"), &mut |_| {}).await.unwrap_err();
    assert!(
        matches!(err.error, ProviderError::Timeout { after, .. } if after == Duration::from_millis(500)),
        "{err}"
    );
}
