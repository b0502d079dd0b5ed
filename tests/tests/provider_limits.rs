//! What the real APIs refuse by model name or message shape, against the strict mock: the
//! output-cap parameter of OpenAI's reasoning models, an assistant message with nothing in it,
//! and an Anthropic `max_tokens` over the model's limit (issue 20, findings 1, 2 and 5).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::context::compact::summary_request;
use agentd::providers::anthropic::AnthropicClient;
use agentd::providers::gemini::GeminiClient;
use agentd::providers::model::{Message, ModelRequest, Role};
use agentd::providers::openai::OpenAiClient;
use agentd_e2e::mock_llm::{MockLlm, Reply, anthropic, gemini, openai, refusal};
use serde_json::json;

fn openai_client(mock: &MockLlm) -> OpenAiClient {
    let mut c = OpenAiClient::new(&mock.url(), Some("sk-test".into())).unwrap();
    c.transport.retry.max_tries = 1;
    c
}

fn anthropic_client(mock: &MockLlm) -> AnthropicClient {
    let mut c = AnthropicClient::new(&mock.url(), Some("sk-ant-test".into())).unwrap();
    c.transport.retry.max_tries = 1;
    c.stream = false; // the script answers whole messages
    c
}

fn older() -> Vec<Message> {
    vec![
        Message::text(Role::User, "fix the parser"),
        Message::text(
            Role::Assistant,
            "The parser drops the last token; fixed in lexer.rs.",
        ),
    ]
}

fn ask(model: &str, messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        messages,
        tools: vec![],
        max_tokens: None,
        reminder: None,
    }
}

/// The mock is alive: the reasoning families refuse `max_tokens` with OpenAI's own answer, other
/// models take it, and `max_completion_tokens` is taken by all.
#[test]
fn the_mock_refuses_max_tokens_for_reasoning_models_only() {
    let path = "/v1/chat/completions";
    let messages = json!([{"role": "user", "content": "hi"}]);
    for model in [
        "gpt-5",
        "gpt-5-mini",
        "o1",
        "o3-mini",
        "o4-mini",
        "openai/gpt-5.1",
    ] {
        let answer = refusal(
            path,
            &json!({"model": model, "messages": messages, "max_tokens": 9}),
        )
        .unwrap_or_else(|| panic!("{model} took max_tokens"));
        assert!(
            answer.contains("Use 'max_completion_tokens' instead.")
                && answer.contains("unsupported_parameter"),
            "{answer}"
        );
        let cap = json!({"model": model, "messages": messages, "max_completion_tokens": 9});
        assert_eq!(refusal(path, &cap), None, "{model}");
    }
    for model in ["gpt-4.1", "gpt-4o", "llama3.1:8b"] {
        let body = json!({"model": model, "messages": messages, "max_tokens": 9});
        assert_eq!(refusal(path, &body), None, "{model}");
    }
}

/// Finding 1: compaction's summary call carries an output cap; to a GPT-5 or o-series model it
/// goes as `max_completion_tokens` (else every turn past the threshold is a 400), to other
/// models as `max_tokens`, which OpenAI-compatible servers (vLLM, Ollama, llama.cpp) read.
#[tokio::test]
async fn a_summary_request_to_a_reasoning_model_carries_max_completion_tokens() {
    let mock = MockLlm::start(vec![
        openai::answer_reply("Goal: fix the parser."),
        openai::answer_reply("Goal: fix the parser."),
        openai::answer_reply("Goal: fix the parser."),
    ])
    .await;
    let client = openai_client(&mock);
    for model in ["gpt-5-mini", "o3", "gpt-4.1"] {
        let r = client
            .complete(&summary_request(model, &older()), &mut |_| {})
            .await
            .unwrap_or_else(|e| panic!("{model}: {e}"));
        assert_eq!(r.text, "Goal: fix the parser.");
    }
    let sent = mock.requests();
    for (req, field) in sent.iter().zip([
        "max_completion_tokens",
        "max_completion_tokens",
        "max_tokens",
    ]) {
        let other = if field == "max_tokens" {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        assert!(
            req.body[field].as_u64().is_some_and(|n| n > 0),
            "{}",
            req.body
        );
        assert!(req.body.get(other).is_none(), "{}", req.body);
    }
}

/// The mock is alive: an assistant message with neither content nor calls is OpenAI's 400.
#[test]
fn the_mock_refuses_an_assistant_message_with_nothing_in_it() {
    let body = json!({"model": "gpt-4.1", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null},
        {"role": "user", "content": "well?"},
    ]});
    let answer = refusal("/v1/chat/completions", &body).unwrap();
    assert!(
        answer.contains("Invalid value for 'content': expected a string, got null.")
            && answer.contains("messages.[1].content"),
        "{answer}"
    );
}

/// Finding 2: an empty answer (a `content_filter` stop, a reasoning model that spent its budget
/// thinking) is kept in the history but never sent back as an empty assistant message: the next
/// request of the session is still accepted.
#[tokio::test]
async fn an_empty_answer_does_not_break_the_next_request() {
    let mock = MockLlm::start(vec![
        Reply::stream(vec![openai::finish("content_filter"), openai::usage(10, 0)]),
        openai::answer_reply("Here it is."),
    ])
    .await;
    let client = openai_client(&mock);
    let mut messages = vec![
        Message::text(Role::System, "be brief"),
        Message::text(Role::User, "write the poem"),
    ];
    let empty = client
        .complete(&ask("gpt-4.1", messages.clone()), &mut |_| {})
        .await
        .unwrap();
    assert!(empty.text.is_empty() && empty.tool_calls.is_empty());
    messages.push(Message::assistant(&empty));
    messages.push(Message::text(Role::User, "try again, shorter"));
    let r = client
        .complete(&ask("gpt-4.1", messages), &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("the request after an empty answer was refused: {e}"));
    assert_eq!(r.text, "Here it is.");
    let sent = &mock.requests()[1].body["messages"];
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "user"], "{sent}");
}

/// Finding 5: Anthropic requires `max_tokens`, and refuses one over the model's own limit.
/// Each model gets its limit from the table (Claude 3 Haiku: 4096, which the old fixed 8192
/// passed; Claude Sonnet 4: 64000, which 8192 cut short); a name the table does not know gets
/// the conservative default, which every Claude model takes.
#[tokio::test]
async fn anthropic_max_tokens_follows_the_model() {
    let mut script = Vec::new();
    for _ in 0..3 {
        script.push(Reply::ok(anthropic::message("ok", &[])));
    }
    let mock = MockLlm::start(script).await;
    let client = anthropic_client(&mock);
    let models = [
        "claude-3-haiku-20240307",
        "claude-sonnet-4-20250514",
        "my-proxy-model",
    ];
    for model in models {
        client
            .complete(&ask(model, older()), &mut |_| {})
            .await
            .unwrap_or_else(|e| panic!("{model}: {e}"));
    }
    let sent: Vec<u64> = mock
        .requests()
        .iter()
        .map(|r| r.body["max_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(sent, [4096, 64000, 4096]);
    let too_many = json!({"model": "claude-3-haiku-20240307", "max_tokens": 8192, "messages": [{"role": "user", "content": "hi"}]});
    let answer = refusal("/v1/messages", &too_many).unwrap();
    assert!(
        answer.contains(
            "max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for claude-3-haiku-20240307"
        ),
        "{answer}"
    );
}

/// Finding 5: `[provider] max_output_tokens` reaches every provider, in each API's own field;
/// a request's own cap (the summary's) is held to it.
#[tokio::test]
async fn the_configured_output_cap_reaches_every_provider() {
    let mock = MockLlm::start(vec![
        openai::answer_reply("a"),
        openai::answer_reply("b"),
        Reply::ok(anthropic::message("c", &[])),
        Reply::events(vec![gemini::chunk(vec![gemini::text("d")], Some("STOP"))]),
        Reply::events(vec![gemini::chunk(vec![gemini::text("e")], Some("STOP"))]),
    ])
    .await;
    let mut o = openai_client(&mock);
    o.max_output_tokens = Some(3000);
    o.complete(&ask("gpt-5", older()), &mut |_| {})
        .await
        .unwrap();
    o.complete(&ask("gpt-4.1", older()), &mut |_| {})
        .await
        .unwrap();
    let mut a = anthropic_client(&mock);
    a.max_output_tokens = Some(3000);
    a.complete(&ask("claude-sonnet-4-5", older()), &mut |_| {})
        .await
        .unwrap();
    let mut g = GeminiClient::new(&mock.url(), Some("g".into())).unwrap();
    g.max_output_tokens = Some(3000);
    g.complete(&ask("gemini-2.5-pro", older()), &mut |_| {})
        .await
        .unwrap();
    // The summary asks for more than the configured cap: it gets the cap.
    g.complete(&summary_request("gemini-2.5-pro", &older()), &mut |_| {})
        .await
        .unwrap();
    let sent = mock.requests();
    assert_eq!(
        sent[0].body["max_completion_tokens"], 3000,
        "{}",
        sent[0].body
    );
    assert_eq!(sent[1].body["max_tokens"], 3000, "{}", sent[1].body);
    assert_eq!(sent[2].body["max_tokens"], 3000, "{}", sent[2].body);
    for g in &sent[3..5] {
        assert_eq!(
            g.body["generationConfig"]["maxOutputTokens"], 3000,
            "{}",
            g.body
        );
    }
    // Without a configured cap, OpenAI and Gemini requests carry none: the API's default is
    // the model's maximum, and OpenAI counts a cap against the context window.
    let mock = MockLlm::start(vec![openai::answer_reply("a")]).await;
    openai_client(&mock)
        .complete(&ask("gpt-4.1", older()), &mut |_| {})
        .await
        .unwrap();
    let body = &mock.requests()[0].body;
    assert!(
        body.get("max_tokens").is_none() && body.get("max_completion_tokens").is_none(),
        "{body}"
    );
}
