//! What goes back to the provider in the next request, over real HTTP against the strict mock:
//! Gemini call ids unique across responses, Gemini thought signatures and Anthropic thinking
//! blocks returned unchanged in their place, tool declarations Gemini accepts — and that the mock
//! refuses, as the real APIs do, the requests that get any of it wrong.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::agent::tools;
use agentd::providers::ProviderError;
use agentd::providers::anthropic::AnthropicClient;
use agentd::providers::gemini::GeminiClient;
use agentd::providers::model::{Message, ModelRequest, ModelResponse, Opaque, Role};
use agentd_e2e::mock_llm::{MockLlm, Reply, anthropic, gemini};
use serde_json::{Value, json};

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "mock-model".into(),
        messages,
        tools: tools::specs().to_vec(),
        max_tokens: None,
        reminder: None,
    }
}

fn opening() -> Vec<Message> {
    vec![
        Message::text(Role::System, "be brief"),
        Message::text(Role::User, "fix it"),
    ]
}

/// The conversation after `response`: its message, then a result for each call.
fn answered(mut messages: Vec<Message>, response: &ModelResponse) -> Vec<Message> {
    messages.push(Message::assistant(response));
    for call in &response.tool_calls {
        messages.push(Message::tool_result(
            call,
            format!("result of {}", call.id.as_str()),
        ));
    }
    messages
}

fn gemini_client(mock: &MockLlm, stream: bool) -> GeminiClient {
    let mut c = GeminiClient::new(&mock.url(), None).unwrap();
    c.stream = stream;
    c.transport.retry.max_tries = 1;
    c
}

fn anthropic_client(mock: &MockLlm, stream: bool) -> AnthropicClient {
    let mut c = AnthropicClient::new(&mock.url(), None).unwrap();
    c.stream = stream;
    c.transport.retry.max_tries = 1;
    c
}

fn status_of(e: &ProviderError) -> (u16, &str) {
    match e {
        ProviderError::Status {
            status, message, ..
        } => (*status, message.as_str()),
        other => panic!("not a status error: {other}"),
    }
}

#[tokio::test]
async fn gemini_call_ids_are_unique_across_responses_streamed_or_not() {
    for stream in [true, false] {
        let two_calls = gemini::chunk(
            vec![
                gemini::call("list_dir", json!({})),
                gemini::call("glob", json!({"pattern": "*.rs"})),
            ],
            Some("STOP"),
        );
        let reply = || match stream {
            true => Reply::events(vec![two_calls.clone()]),
            false => Reply::ok(two_calls.clone()),
        };
        let mock = MockLlm::start(vec![reply(), reply()]).await;
        let client = gemini_client(&mock, stream);
        let first = client
            .complete(&request(opening()), &mut |_| {})
            .await
            .unwrap();
        let history = answered(opening(), &first);
        let second = client
            .complete(&request(history), &mut |_| {})
            .await
            .unwrap();
        let mut ids: Vec<&str> = first
            .tool_calls
            .iter()
            .chain(&second.tool_calls)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(ids.len(), 4);
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 4, "two responses, four distinct ids: {ids:?}");
    }
}

#[tokio::test]
async fn gemini_thought_signatures_go_back_on_the_parts_they_came_on() {
    for stream in [true, false] {
        // Parallel calls: Gemini 3 signs only the first; a text part may carry one too.
        let parts = vec![
            gemini::signed(gemini::text("Looking."), "sig-text"),
            gemini::signed(gemini::call("list_dir", json!({})), "sig-call-1"),
            gemini::call("glob", json!({"pattern": "*.rs"})),
        ];
        let body = gemini::chunk(parts, Some("STOP"));
        let first = if stream {
            Reply::events(vec![body])
        } else {
            Reply::ok(body)
        };
        let next_step = gemini::chunk(
            vec![gemini::signed(
                gemini::call("read_file", json!({"path": "a.rs"})),
                "sig-call-2",
            )],
            Some("STOP"),
        );
        let done = gemini::chunk(vec![gemini::text("Done.")], Some("STOP"));
        let mock = MockLlm::start(vec![first, Reply::ok(next_step), Reply::ok(done)]).await;
        let mut client = gemini_client(&mock, stream);
        let r1 = client
            .complete(&request(opening()), &mut |_| {})
            .await
            .unwrap();
        assert_eq!(r1.opaque.len(), 2, "{:?}", r1.opaque);
        // Through the internal model and JSON, as a stored session would be.
        let history: Vec<Message> =
            serde_json::from_value(serde_json::to_value(answered(opening(), &r1)).unwrap())
                .unwrap();
        client.stream = false;
        let r2 = client
            .complete(&request(history.clone()), &mut |_| {})
            .await
            .unwrap();
        let history = answered(history, &r2);
        client
            .complete(&request(history), &mut |_| {})
            .await
            .expect("the strict mock accepts both steps with their signatures");
        let sent = &mock.requests()[2].body["contents"];
        assert_eq!(sent[1]["role"], "model");
        assert_eq!(sent[1]["parts"][0]["thoughtSignature"], "sig-text");
        assert_eq!(sent[1]["parts"][1]["thoughtSignature"], "sig-call-1");
        assert_eq!(sent[1]["parts"][1]["functionCall"]["name"], "list_dir");
        assert!(sent[1]["parts"][2].get("thoughtSignature").is_none());
        assert_eq!(sent[3]["parts"][0]["thoughtSignature"], "sig-call-2");
    }
}

#[tokio::test]
async fn gemini_refuses_a_dropped_or_altered_signature_as_the_real_api_does() {
    let signed = gemini::chunk(
        vec![gemini::signed(gemini::call("list_dir", json!({})), "sig-1")],
        Some("STOP"),
    );
    let mock = MockLlm::start(vec![Reply::ok(signed)]).await;
    let client = gemini_client(&mock, false);
    let r = client
        .complete(&request(opening()), &mut |_| {})
        .await
        .unwrap();
    let mut dropped = r.clone();
    dropped.opaque.clear();
    let err = client
        .complete(&request(answered(opening(), &dropped)), &mut |_| {})
        .await
        .unwrap_err();
    let (status, message) = status_of(&err.error);
    assert_eq!(status, 400);
    assert!(
        message.starts_with("Function call is missing a thought_signature in functionCall parts")
            && message.contains("`default_api:list_dir`"),
        "{message}"
    );
    let mut altered = r.clone();
    altered.opaque = vec![Opaque::GeminiCallSignature {
        call: r.tool_calls[0].id.clone(),
        signature: "sig-2".into(),
    }];
    let err = client
        .complete(&request(answered(opening(), &altered)), &mut |_| {})
        .await
        .unwrap_err();
    assert_eq!(status_of(&err.error), (400, "Corrupted thought signature."));
}

#[tokio::test]
async fn gemini_refuses_schema_keys_outside_its_openapi_subset() {
    let mock = MockLlm::start(vec![]).await;
    let decl = |parameters: Value| {
        json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
               "tools": [{"functionDeclarations": [{"name": "bash", "description": "run", "parameters": parameters}]}]})
    };
    let (status, body) = mock
        .post(
            "/v1/models/m:generateContent",
            &decl(json!({"type": "object", "additionalProperties": false,
                         "properties": {"mode": {"const": "fast"}, "n": {"type": "integer"}}})),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("Unknown name \"additionalProperties\" at 'tools[0].function_declarations[0].parameters': Cannot find field.")
            && message.contains("Unknown name \"const\" at 'tools[0].function_declarations[0].parameters.properties[0].value'"),
        "{message}"
    );
    // What the adapter sends instead: the full schema, in `parametersJsonSchema`.
    let body = agentd::providers::gemini::request_body(&request(opening()));
    let (status, answer) = mock.post("/v1/models/m:generateContent", &body).await;
    assert_ne!(status, 400, "{answer}");
}

#[tokio::test]
async fn anthropic_thinking_blocks_go_back_unchanged_before_the_calls() {
    for stream in [true, false] {
        let thought =
            json!({"type": "thinking", "thinking": "Look first.", "signature": "EqQBsig=="});
        let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy"});
        let first = if stream {
            let mut events = vec![anthropic::start(10)];
            events.extend(anthropic::thinking(0, "Look first.", "EqQBsig=="));
            events.push(
                json!({"type": "content_block_start", "index": 1, "content_block": redacted}),
            );
            events.push(anthropic::stop_block(1));
            events.push(anthropic::tool_block(2, "toolu_1", "list_dir"));
            events.push(anthropic::input(2, "{}"));
            events.push(anthropic::stop_block(2));
            events.extend([anthropic::delta("tool_use", 5), anthropic::stop()]);
            Reply::events(events)
        } else {
            Reply::ok(
                json!({"id": "msg_1", "type": "message", "role": "assistant",
                "content": [thought, redacted, {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}),
            )
        };
        let done = if stream {
            Reply::events(vec![
                anthropic::start(10),
                anthropic::delta("end_turn", 1),
                anthropic::stop(),
            ])
        } else {
            Reply::ok(anthropic::message("Done.", &[]))
        };
        let mock = MockLlm::start(vec![first, done]).await;
        let client = anthropic_client(&mock, stream);
        let r = client
            .complete(&request(opening()), &mut |_| {})
            .await
            .unwrap();
        assert_eq!(r.text, "", "thinking is not the answer");
        client
            .complete(&request(answered(opening(), &r)), &mut |_| {})
            .await
            .expect("the strict mock accepts the thinking blocks back");
        let content = &mock.requests()[1].body["messages"][1]["content"];
        assert_eq!(content[0], thought, "stream: {stream}");
        assert_eq!(content[1], redacted);
        assert_eq!(content[2]["type"], "tool_use");
    }
}

#[tokio::test]
async fn anthropic_refuses_dropped_or_altered_thinking_as_the_real_api_does() {
    let mut events = vec![anthropic::start(10)];
    events.extend(anthropic::thinking(0, "Hmm.", "sig-a"));
    events.extend([
        anthropic::tool_block(1, "toolu_1", "list_dir"),
        anthropic::stop_block(1),
        anthropic::delta("tool_use", 5),
        anthropic::stop(),
    ]);
    let mock = MockLlm::start(vec![Reply::events(events)]).await;
    let client = anthropic_client(&mock, true);
    let r = client
        .complete(&request(opening()), &mut |_| {})
        .await
        .unwrap();
    let mut dropped = r.clone();
    dropped.opaque.clear();
    let err = client
        .complete(&request(answered(opening(), &dropped)), &mut |_| {})
        .await
        .unwrap_err();
    let (status, message) = status_of(&err.error);
    assert_eq!(status, 400);
    assert!(
        message.starts_with("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."),
        "{message}"
    );
    let mut altered = r.clone();
    altered.opaque = vec![Opaque::AnthropicBlock {
        index: 0,
        block: json!({"type": "thinking", "thinking": "Hmm.", "signature": "sig-b"}),
    }];
    let err = client
        .complete(&request(answered(opening(), &altered)), &mut |_| {})
        .await
        .unwrap_err();
    assert_eq!(
        status_of(&err.error),
        (
            400,
            "messages.1.content.0: Invalid `signature` in `thinking` block"
        )
    );
}

#[tokio::test]
async fn the_mock_refuses_broken_openai_pairing_with_the_real_error() {
    let mock = MockLlm::start(vec![]).await;
    let user = json!({"role": "user", "content": "hi"});
    // OpenAI: a result with no call before it; a call with no result after it.
    let (status, body) = mock
        .post(
            "/v1/chat/completions",
            &json!({"model": "m", "messages": [user,
            {"role": "tool", "tool_call_id": "call_1", "content": "x"}]}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (400, Some("invalid_request_error"))
    );
    assert_eq!(body["error"]["param"], "messages.[1].role");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("must be a response to a preceeding message with 'tool_calls'")
    );
    let (status, body) = mock
        .post("/v1/chat/completions", &json!({"model": "m", "messages": [user,
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "user", "content": "and?"}]}))
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("did not have response messages: call_1"),
        "{body}"
    );
    assert_eq!(mock.requests().len(), 2, "each was recorded");
}

#[tokio::test]
async fn the_mock_refuses_broken_anthropic_adjacency_with_the_real_error() {
    let mock = MockLlm::start(vec![]).await;
    let user = json!({"role": "user", "content": "hi"});
    // Anthropic: a tool_use not answered in the next message; a result without its call; input
    // that is not an object.
    let tool_use = |input: Value| json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": input}]});
    let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]});
    for (messages, expected) in [
        (
            json!([user, tool_use(json!({})), user]),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1.",
        ),
        (
            json!([user, result]),
            "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1.",
        ),
        (
            json!([user, tool_use(json!("{\"command\": \"ls")), result]),
            "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
        ),
    ] {
        let (status, body) = mock
            .post(
                "/v1/messages",
                &json!({"model": "m", "max_tokens": 10, "messages": messages}),
            )
            .await;
        assert_eq!((status, body["type"].as_str()), (400, Some("error")));
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(expected),
            "{body}"
        );
    }
}

#[tokio::test]
async fn the_mock_refuses_broken_gemini_turn_order_with_the_real_error() {
    let mock = MockLlm::start(vec![]).await;
    // Gemini: responses that do not match the calls before them; a call not after a user turn.
    let call = json!({"role": "model", "parts": [{"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "b", "args": {}}}]});
    let one_response =
        json!({"role": "user", "parts": [{"functionResponse": {"name": "a", "response": {}}}]});
    let text = json!({"role": "user", "parts": [{"text": "hi"}]});
    let model_text = json!({"role": "model", "parts": [{"text": "ok"}]});
    for (contents, expected) in [
        (
            json!([text, call, one_response]),
            "the number of function response parts is equal to the number of function call parts",
        ),
        (
            json!([text, model_text, call]),
            "function call turn comes immediately after a user turn or after a function response turn",
        ),
        (
            json!([text, one_response]),
            "function response turn comes immediately after a function call turn",
        ),
    ] {
        let (status, body) = mock
            .post(
                "/v1/models/m:generateContent",
                &json!({"contents": contents}),
            )
            .await;
        assert_eq!((status, body["error"]["code"].as_u64()), (400, Some(400)));
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(expected),
            "{body}"
        );
    }
}
