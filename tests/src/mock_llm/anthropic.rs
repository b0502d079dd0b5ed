//! Anthropic Messages stream events and responses.

use serde_json::{Value, json};

/// `message_start` with the input token count.
pub fn start(input_tokens: u64) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": [], "usage": {"input_tokens": input_tokens, "output_tokens": 1}}})
}
/// A text block starting at `index`.
pub fn text_block(index: u64) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
}
/// A text fragment.
pub fn text(index: u64, t: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": t}})
}
/// A tool_use block starting at `index`.
pub fn tool_block(index: u64, id: &str, name: &str) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
}
/// A fragment of a tool's input JSON.
pub fn input(index: u64, partial: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": partial}})
}
/// A block's end.
pub fn stop_block(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}
/// The stop reason and output tokens.
pub fn delta(stop_reason: &str, output_tokens: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": output_tokens}})
}
/// The end.
pub fn stop() -> Value {
    json!({"type": "message_stop"})
}
/// A keep-alive.
pub fn ping() -> Value {
    json!({"type": "ping"})
}
/// An error inside a 200 stream, as Anthropic sends it mid-response: "during periods of high
/// usage, you may receive an `overloaded_error`, which would normally correspond to an HTTP
/// 529 in a non-streaming context" (<https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events>;
/// the types are those of <https://docs.anthropic.com/en/api/errors>).
pub fn error_event(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
/// A thinking block at `index`, streamed as Anthropic streams it: the block's start, its text
/// in two deltas, its signature, its end.
pub fn thinking(index: u64, thinking: &str, signature: &str) -> Vec<Value> {
    let (a, b) = thinking.split_at(thinking.len() / 2);
    vec![
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": a}}),
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": b}}),
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}),
        json!({"type": "content_block_stop", "index": index}),
    ]
}
/// A whole message.
pub fn message(text: &str, calls: &[(&str, &str, Value)]) -> Value {
    let mut content = vec![json!({"type": "text", "text": text})];
    content.extend(calls.iter().map(
        |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
    ));
    json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content, "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" }, "usage": {"input_tokens": 11, "output_tokens": 7}})
}
/// A streamed message of `text` ended by `stop_reason` (`max_tokens`, `refusal`,
/// `model_context_window_exceeded`, …: <https://docs.anthropic.com/en/api/handling-stop-reasons>).
pub fn stopped_reply(text_: &str, stop_reason: &str) -> super::Reply {
    super::Reply::events(vec![
        start(40),
        text_block(0),
        text(0, text_),
        stop_block(0),
        delta(stop_reason, 12),
        stop(),
    ])
}
/// `message_start` with the prompt cache's counts, which Anthropic reports beside
/// `input_tokens` (not in it): `cache_read_input_tokens` and `cache_creation_input_tokens`
/// (<https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#tracking-cache-performance>).
pub fn start_cached(input_tokens: u64, cache_read: u64, cache_write: u64) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": [], "usage": {
        "input_tokens": input_tokens, "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write, "output_tokens": 1}}})
}
