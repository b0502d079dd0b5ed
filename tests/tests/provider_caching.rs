//! Prompt caching against the mock's Anthropic prompt cache (issue 20, finding 7): the mock
//! refuses a fifth breakpoint as the API does, and bills a request that begins with what an
//! earlier one cached as read from the cache; the adapter's breakpoints make each step read what
//! the previous one wrote, whatever the per-step reminder says.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::providers::anthropic::AnthropicClient;
use agentd::providers::model::{Message, ModelRequest, Role, ToolSpec};
use agentd_e2e::mock_llm::{MockLlm, Reply, anthropic};
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;
use serde_json::json;

fn answer() -> Reply {
    Reply::events(vec![
        anthropic::start(40),
        anthropic::text_block(0),
        anthropic::text(0, "ok"),
        anthropic::stop_block(0),
        anthropic::delta("end_turn", 3),
        anthropic::stop(),
    ])
}

#[tokio::test]
async fn the_mock_refuses_a_fifth_breakpoint() {
    let mock = MockLlm::start(vec![Reply::ok(anthropic::message("ok", &[]))]).await;
    let marked = |n: usize| {
        let content: Vec<_> = (0..n)
            .map(|i| json!({"type": "text", "text": format!("part {i}"), "cache_control": {"type": "ephemeral"}}))
            .collect();
        json!({"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": content}]})
    };
    let (status, body) = mock.post("/v1/messages", &marked(5)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["message"],
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    );
    let (status, body) = mock.post("/v1/messages", &marked(4)).await;
    assert_eq!(status, 200, "{body}");
}

/// A session of four steps with 10 kB results and a reminder that changes each step: from the
/// second step on, everything the previous request held is read from the cache, and only what
/// was added since is paid in full or written. Without breakpoints nothing is ever read.
#[tokio::test]
async fn each_step_reads_what_the_previous_one_cached() {
    let mock = MockLlm::start(vec![answer(), answer(), answer(), answer()]).await;
    mock.count_prompt_cache();
    let client = AnthropicClient::new(&mock.url(), Some("sk-ant-test".into())).unwrap();
    let mut messages = vec![
        Message::text(Role::System, "be brief"),
        Message::text(Role::User, "fix it"),
    ];
    let mut usages = Vec::new();
    for step in 0..4u64 {
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            messages: messages.clone(),
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "run".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: None,
            reminder: Some(format!("step {step}: todo list changed\n")),
        };
        let response = client.complete(&request, &mut |_| {}).await.unwrap();
        usages.push(response.usage);
        let call = ToolCall {
            id: ToolCallId::generated(step),
            name: "bash".into(),
            arguments: "{}".into(),
        };
        messages.push(Message {
            tool_calls: vec![call.clone()],
            ..Message::text(Role::Assistant, "")
        });
        messages.push(Message::tool_result(&call, "x".repeat(10_000)));
    }
    let sent = mock.requests();
    let last = sent[3].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let blocks = last["content"].as_array().unwrap();
    assert_eq!(
        blocks.last().unwrap()["type"],
        "text",
        "the reminder is last: {last}"
    );
    assert!(blocks.last().unwrap().get("cache_control").is_none());
    assert!(blocks[blocks.len() - 2].get("cache_control").is_some());
    // The first request is under the shortest prefix cached (1024 tokens); the second (with a
    // 10 kB result) is written; the third and fourth read all the one before them held.
    assert_eq!(usages[0].cache_write_tokens, 0, "{:?}", usages[0]);
    assert!(usages[1].cache_write_tokens > 2_000, "{:?}", usages[1]);
    for (i, pair) in usages[1..].windows(2).enumerate() {
        let (before, now) = (pair[0], pair[1]);
        assert_eq!(
            now.cache_read_tokens,
            before.cache_read_tokens + before.cache_write_tokens,
            "request {}: {now:?}",
            i + 3
        );
        let full = now.input_tokens - now.cache_read_tokens - now.cache_write_tokens;
        // The reminder and the body's framing: a twentieth of the step added (10 kB).
        assert!(full < 200, "only the reminder is paid in full: {now:?}");
    }
}
