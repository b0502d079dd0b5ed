//! OpenAI-compatible chat completions (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp).
//!
//! Streaming follows what these servers really send: tool-call fragments keyed by `index`, the id
//! and name only in a call's first fragment, arguments split anywhere (empty means `{}`),
//! `finish_reason: "stop"` although tool calls arrived, comment and keep-alive lines, an error
//! object inside a 200 stream, `[DONE]`, and a final usage-only chunk.
//!
//! What is sent follows what the API takes: the output cap goes as `max_completion_tokens` to
//! the reasoning families (GPT-5, o1, o3, o4), which answer 400 to `max_tokens`, and as
//! `max_tokens` to every other model, the field OpenAI-compatible servers (vLLM, Ollama,
//! llama.cpp) read; an answer with neither text nor calls (a refusal, a `content_filter` stop,
//! a reasoning model that spent its budget thinking) is left out of the history sent, since an
//! assistant message's `content` is required unless it has `tool_calls`
//! (<https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages>).
//!
//! What comes back beside the text: a `refusal` (its words become the answer's text, its finish
//! reason `refusal`), the `reasoning_content` of DeepSeek's thinking mode and vLLM's reasoning
//! parsers (kept, and sent back on tool steps: [`super::model::Opaque::ReasoningContent`]),
//! `arguments` as a JSON object from some llama.cpp and Ollama builds (taken as its JSON text),
//! and usage with `prompt_tokens_details.cached_tokens` and
//! `completion_tokens_details.reasoning_tokens`.

use super::http::{
    Call, Client, PART_OVERHEAD, StreamReader, Wire, arguments_text as arguments, event_json,
};
use super::limits;
use super::model::{Message, ModelRequest, ModelResponse, Opaque, Role};
use super::{CallFailed, ProviderError};
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;
use protocol::session::TokenUsage;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const PROVIDER: &str = "openai";

/// The OpenAI-compatible chat completions wire format.
#[derive(Debug, Clone, Copy)]
pub struct OpenAi;

impl Wire for OpenAi {
    const PROVIDER: &'static str = PROVIDER;
}

/// A client for one OpenAI-compatible chat completions endpoint.
pub type OpenAiClient = Client<OpenAi>;

impl Client<OpenAi> {
    /// One model call, retried as the policy says. `on_text` receives text as it streams.
    pub async fn complete(
        &self,
        req: &ModelRequest,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, CallFailed> {
        let body = request_body_capped(req, self.stream, self.max_output_tokens);
        let call = Call {
            url: format!("{}/chat/completions", self.base_url),
            headers: self
                .api_key
                .iter()
                .map(|k| ("authorization", format!("Bearer {k}")))
                .collect(),
            body: &body,
            parse: parse_completion,
            stream: self
                .stream
                .then_some(|| Box::new(StreamAccumulator::default()) as Box<dyn StreamReader>),
            model: &req.model,
        };
        self.transport.run(&call, on_text).await
    }
}

fn malformed(message: String) -> ProviderError {
    ProviderError::Malformed {
        provider: PROVIDER,
        message,
    }
}

/// The chat-completions request body, with no configured output cap.
pub fn request_body(req: &ModelRequest, stream: bool) -> Value {
    request_body_capped(req, stream, None)
}

/// The chat-completions request body; `configured` is `[provider] max_output_tokens`.
pub fn request_body_capped(req: &ModelRequest, stream: bool, configured: Option<u32>) -> Value {
    let messages: Vec<Value> = req
        .messages_with_reminder()
        .iter()
        .filter(|m| !is_empty_answer(m))
        .map(message_json)
        .collect();
    let mut body = json!({ "model": req.model, "messages": messages, "stream": stream });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    if stream {
        body["stream_options"] = json!({ "include_usage": true });
    }
    if let Some(max) = limits::request_cap(req.max_tokens, configured, &req.model) {
        body[cap_field(&req.model)] = json!(max);
    }
    body
}

/// The field the output cap goes in for `model`.
fn cap_field(model: &str) -> &'static str {
    if limits::is_openai_reasoning(model) {
        "max_completion_tokens"
    } else {
        "max_tokens"
    }
}

/// An answer with neither text nor calls, which the API refuses as a message (`content: null`
/// without `tool_calls` is a 400).
fn is_empty_answer(m: &Message) -> bool {
    m.role == Role::Assistant && m.content.is_empty() && m.tool_calls.is_empty()
}

fn message_json(m: &Message) -> Value {
    match m.role {
        Role::System => json!({"role": "system", "content": m.content}),
        Role::User => json!({"role": "user", "content": m.content}),
        Role::Assistant => {
            let mut v = json!({"role": "assistant", "content": if m.content.is_empty() { Value::Null } else { json!(m.content) }});
            if !m.tool_calls.is_empty() {
                v["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id.as_str(), "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
                // Only on tool steps: see `Opaque::ReasoningContent`.
                if let Some(text) = m.opaque.iter().find_map(|o| match o {
                    Opaque::ReasoningContent { text } => Some(text),
                    _ => None,
                }) {
                    v["reasoning_content"] = json!(text);
                }
            }
            v
        }
        Role::Tool => {
            let id = m
                .tool_result_for
                .as_ref()
                .map(|(id, _)| id.as_str())
                .unwrap_or_default();
            json!({"role": "tool", "tool_call_id": id, "content": m.content})
        }
    }
}

/// A `usage` object: `prompt_tokens` include the cached ones and `completion_tokens` the
/// reasoning ones (<https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage>).
fn usage_of(v: &Value) -> TokenUsage {
    let n = |at: &str| v.pointer(at).and_then(Value::as_u64).unwrap_or(0);
    TokenUsage {
        input_tokens: n("/prompt_tokens"),
        output_tokens: n("/completion_tokens"),
        cache_read_tokens: n("/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
        reasoning_tokens: n("/completion_tokens_details/reasoning_tokens"),
    }
}

/// A tool call id: the provider's when usable, else one made up from the call's position.
fn call_id(id: Option<&str>, index: u64) -> ToolCallId {
    id.and_then(|id| ToolCallId::new(id).ok())
        .unwrap_or_else(|| ToolCallId::generated(index))
}

/// A whole (non-streamed) completion.
pub fn parse_completion(v: &Value) -> Result<ModelResponse, ProviderError> {
    if let Some(message) = v.pointer("/error/message").and_then(Value::as_str) {
        return Err(ProviderError::InStream {
            provider: PROVIDER,
            message: message.to_owned(),
        });
    }
    let choice = v
        .pointer("/choices/0")
        .ok_or_else(|| malformed("no choices in the response".into()))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed("the choice has no message".into()))?;
    let refusal = message
        .get("refusal")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty());
    let mut response = ModelResponse {
        text: message
            .get("content")
            .and_then(Value::as_str)
            .or(refusal)
            .unwrap_or_default()
            .to_owned(),
        usage: v.get("usage").map(usage_of).unwrap_or_default(),
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..ModelResponse::default()
    };
    if refusal.is_some() {
        response.finish_reason = Some(REFUSAL.into());
    }
    if let Some(text) = message
        .get("reasoning_content")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        response.opaque.push(Opaque::ReasoningContent {
            text: text.to_owned(),
        });
    }
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        response.tool_calls.push(ToolCall {
            id: call_id(call.get("id").and_then(Value::as_str), i as u64),
            name: call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            arguments: arguments(&arguments_of(call.pointer("/function/arguments"))),
        });
    }
    Ok(response)
}

/// A call's arguments as text: a string as it is (what OpenAI sends, maybe not JSON — dispatch
/// answers that), and a JSON object as its JSON text (what some llama.cpp and Ollama builds
/// send: taken as sent, never as `{}`).
fn arguments_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// A tool call being assembled from stream fragments.
#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Assembles a streamed completion, one event's data at a time.
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: TokenUsage,
    finish_reason: Option<String>,
    /// Whether a `refusal` arrived: its text goes in the answer's text, to be shown.
    refused: bool,
    /// The `reasoning_content` deltas so far (see [`Opaque::ReasoningContent`]).
    reasoning: String,
    /// Bytes kept so far (see [`StreamReader::size`]).
    size: usize,
}

/// The finish reason an answer that came as a `refusal` gets: OpenAI ends it with `stop`, and
/// says it was a refusal only by the field its text came in
/// (<https://platform.openai.com/docs/guides/structured-outputs#refusals>).
const REFUSAL: &str = "refusal";

impl StreamReader for StreamAccumulator {
    fn feed(
        &mut self,
        event: &super::sse::Event,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, ProviderError> {
        self.feed_data(&event.data, on_text)
    }

    fn finish(self: Box<Self>, complete: bool) -> Result<ModelResponse, ProviderError> {
        // Some servers end without `[DONE]` after a finish reason; without one, it was cut.
        if complete || self.finish_reason.is_some() {
            Ok(self.into_response())
        } else {
            Err(ProviderError::StreamCut { provider: PROVIDER })
        }
    }

    fn size(&self) -> usize {
        self.size
    }
}

impl StreamAccumulator {
    /// Takes one event's data; returns true at `[DONE]`.
    pub fn feed_data(
        &mut self,
        data: &str,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let v: Value = event_json(PROVIDER, data)?;
        if let Some(error) = v.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            return Err(ProviderError::InStream {
                provider: PROVIDER,
                message,
            });
        }
        if let Some(usage) = v.get("usage").filter(|u| !u.is_null()) {
            self.usage = usage_of(usage);
        }
        for choice in v
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
            }
            let Some(delta) = choice.get("delta") else {
                continue;
            };
            let refusal = delta
                .get("refusal")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty());
            self.refused |= refusal.is_some();
            if let Some(text) = delta.get("reasoning_content").and_then(Value::as_str) {
                self.reasoning.push_str(text);
                self.size += text.len();
            }
            if let Some(text) = delta
                .get("content")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .or(refusal)
            {
                self.text.push_str(text);
                self.size += text.len();
                on_text(text);
            }
            for (pos, fragment) in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let index = fragment
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(pos as u64);
                let call = self.calls.entry(index).or_insert_with(|| {
                    self.size += PART_OVERHEAD;
                    PartialCall::default()
                });
                if let Some(id) = fragment
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    && call.id.is_none()
                {
                    call.id = Some(id.to_owned());
                    self.size += id.len();
                }
                if let Some(name) = fragment.pointer("/function/name").and_then(Value::as_str)
                    && call.name.is_empty()
                {
                    call.name = name.to_owned();
                    self.size += name.len();
                }
                let args = arguments_of(fragment.pointer("/function/arguments"));
                call.arguments.push_str(&args);
                self.size += args.len();
            }
        }
        Ok(false)
    }

    /// The completed response; tool calls in index order.
    pub fn into_response(self) -> ModelResponse {
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(index, c)| ToolCall {
                id: call_id(c.id.as_deref(), index),
                name: c.name,
                arguments: arguments(&c.arguments),
            })
            .collect();
        ModelResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            finish_reason: if self.refused {
                Some(REFUSAL.into())
            } else {
                self.finish_reason
            },
            opaque: if self.reasoning.is_empty() {
                vec![]
            } else {
                vec![Opaque::ReasoningContent {
                    text: self.reasoning,
                }]
            },
            ..ModelResponse::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_completion_brings_its_refusal_reasoning_and_object_arguments() {
        let refused = json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}}]});
        let r = parse_completion(&refused).unwrap();
        assert_eq!(r.text, "I can't help with that.");
        assert_eq!(r.stop(), super::super::model::Stop::Refusal);

        let reasoned = json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "reasoning_content": "think",
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "read_file", "arguments": {"path": "a.txt"}}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 8},
                "completion_tokens_details": {"reasoning_tokens": 3}}});
        let r = parse_completion(&reasoned).unwrap();
        assert_eq!(r.tool_calls[0].arguments, r#"{"path":"a.txt"}"#);
        assert_eq!(
            r.opaque,
            vec![Opaque::ReasoningContent {
                text: "think".into()
            }]
        );
        assert_eq!(
            (r.usage.cache_read_tokens, r.usage.reasoning_tokens),
            (8, 3)
        );
        // Sent back on the tool step, and only there.
        let step = message_json(&Message::assistant(&r));
        assert_eq!(step["reasoning_content"], "think");
        let answer = Message {
            tool_calls: vec![],
            ..Message::assistant(&r)
        };
        assert!(message_json(&answer).get("reasoning_content").is_none());
    }
}
