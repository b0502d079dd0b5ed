//! OpenAI chat-completions stream chunks.

use serde_json::{Value, json};

/// A text fragment.
pub fn text(t: &str) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]})
}

/// A tool-call fragment; `id` and `name` only in a call's first fragment, as OpenAI sends them.
pub fn tool(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
    let mut f = json!({"index": index, "function": {"arguments": args}});
    if let Some(id) = id {
        f["id"] = json!(id);
        f["type"] = json!("function");
    }
    if let Some(name) = name {
        f["function"]["name"] = json!(name);
    }
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [f]}, "finish_reason": null}]})
}

/// A streamed reply that calls `tool` with `args`, as call `id`.
pub fn call_reply(id: &str, tool: &str, args: Value) -> super::Reply {
    super::Reply::stream(vec![
        self::tool(0, Some(id), Some(tool), &args.to_string()),
        finish("tool_calls"),
    ])
}

/// A streamed reply that runs `command` with the bash tool, as call `id`.
pub fn bash_reply(id: &str, command: &str) -> super::Reply {
    call_reply(id, "bash", json!({ "command": command }))
}

/// A streamed reply that answers `t` and stops.
pub fn answer_reply(t: &str) -> super::Reply {
    super::Reply::stream(vec![text(t), finish("stop")])
}

/// The chunk carrying the finish reason.
pub fn finish(reason: &str) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

/// The final usage-only chunk.
pub fn usage(input: u64, output: u64) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}})
}

/// A whole non-streamed completion.
pub fn completion(text: Option<&str>, calls: &[(&str, &str, &str)]) -> Value {
    let calls: Vec<Value> = calls.iter().map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})).collect();
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
}

/// A refusal, streamed as OpenAI streams it: the text in `delta.refusal` (not `content`), and
/// the choice ended with `stop` (<https://platform.openai.com/docs/guides/structured-outputs#refusals>,
/// "the API response will include a new field called `refusal`"; the chunk's `delta.refusal` in
/// <https://platform.openai.com/docs/api-reference/chat-streaming/streaming>).
pub fn refusal_reply(words: &str) -> super::Reply {
    super::Reply::stream(vec![
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "refusal": ""}, "finish_reason": null}]}),
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"refusal": words}, "finish_reason": null}]}),
        finish("stop"),
    ])
}

/// An answer the content filter stopped: some text, then `finish_reason: "content_filter"`
/// ("`content_filter` if content was omitted due to a flag from our content filters",
/// <https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices>).
pub fn filtered_reply(partial: &str) -> super::Reply {
    super::Reply::stream(vec![text(partial), finish("content_filter")])
}

/// The final usage-only chunk with the details OpenAI sends: of the prompt, the tokens read
/// from its automatic cache; of the completion, the reasoning tokens
/// (<https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage>:
/// `prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`, each
/// included in its total).
pub fn usage_details(input: u64, output: u64, cached: u64, reasoning: u64) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": {
        "prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}})
}

/// A `reasoning_content` fragment, as DeepSeek's thinking mode (and vLLM's reasoning parsers)
/// stream the model's reasoning beside `content`
/// (<https://api-docs.deepseek.com/guides/thinking_mode>).
pub fn reasoning(t: &str) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"reasoning_content": t}, "finish_reason": null}]})
}

/// A tool-call fragment whose `arguments` is a JSON object, not a string, as some llama.cpp and
/// Ollama builds send it (the OpenAI reference has a string:
/// <https://platform.openai.com/docs/api-reference/chat-streaming/streaming>).
pub fn tool_object_args(index: u64, id: &str, name: &str, args: Value) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": args}}]}, "finish_reason": null}]})
}
