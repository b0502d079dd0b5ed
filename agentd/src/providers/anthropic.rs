//! Anthropic Messages: `tool_use` blocks in assistant messages, `tool_result` blocks in the next
//! user message, `input_json_delta` fragments joined and parsed when their block stops, `ping`,
//! and `error` events inside the stream.

use super::http::{Call, Client, StreamReader, Wire, event_json};
use super::model::{Message, ModelRequest, ModelResponse, Role};
use super::{CallFailed, ProviderError};
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;
use protocol::session::TokenUsage;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const PROVIDER: &str = "anthropic";
/// The API version this adapter speaks.
pub const API_VERSION: &str = "2023-06-01";
/// Anthropic requires a cap on output tokens; this one when the request has none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The Anthropic Messages wire format.
#[derive(Debug, Clone, Copy)]
pub struct Anthropic;

impl Wire for Anthropic {
    const PROVIDER: &'static str = PROVIDER;
}

/// A client for one Anthropic Messages endpoint.
pub type AnthropicClient = Client<Anthropic>;

impl Client<Anthropic> {
    /// One model call, retried as the policy says.
    pub async fn complete(
        &self,
        req: &ModelRequest,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, CallFailed> {
        let body = request_body(req, self.stream);
        let root = self.base_url.strip_suffix("/v1").unwrap_or(&self.base_url);
        let mut headers = vec![("anthropic-version", API_VERSION.to_owned())];
        headers.extend(self.api_key.iter().map(|k| ("x-api-key", k.clone())));
        let call = Call {
            url: format!("{root}/v1/messages"),
            headers,
            body: &body,
            parse: parse_message,
            stream: self
                .stream
                .then_some(|| Box::new(MessageStream::default()) as Box<dyn StreamReader>),
        };
        self.transport.run(&call, on_text).await
    }
}

/// Tool-call arguments as the JSON object Anthropic wants (`{}` if they were not an object).
fn input_object(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// The Messages request body. System messages become the top-level `system`; consecutive
/// messages of one role are merged, since the API wants user and assistant to alternate; tool
/// results become `tool_result` blocks of a user message.
pub fn request_body(req: &ModelRequest, stream: bool) -> Value {
    let system: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in req.messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = blocks_of(m);
        match messages.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": stream,
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !req.tools.is_empty() {
        body["tools"] = req.tools.iter().map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters})).collect();
    }
    body
}

fn blocks_of(m: &Message) -> (&'static str, Vec<Value>) {
    match m.role {
        Role::Tool => {
            let id = m
                .tool_result_for
                .as_ref()
                .map(|(id, _)| id.as_str())
                .unwrap_or_default();
            (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": id, "content": m.content})],
            )
        }
        Role::Assistant => {
            let mut blocks = Vec::new();
            if !m.content.is_empty() {
                blocks.push(json!({"type": "text", "text": m.content}));
            }
            for c in &m.tool_calls {
                blocks.push(json!({"type": "tool_use", "id": c.id.as_str(), "name": c.name, "input": input_object(&c.arguments)}));
            }
            ("assistant", blocks)
        }
        Role::User | Role::System => ("user", vec![json!({"type": "text", "text": m.content})]),
    }
}

fn call_id(id: Option<&str>, index: u64) -> ToolCallId {
    id.and_then(|id| ToolCallId::new(id).ok())
        .unwrap_or_else(|| ToolCallId::generated(index))
}

/// A whole (non-streamed) message.
pub fn parse_message(v: &Value) -> Result<ModelResponse, ProviderError> {
    if let Some(message) = v.pointer("/error/message").and_then(Value::as_str) {
        return Err(ProviderError::InStream {
            provider: PROVIDER,
            message: message.to_owned(),
        });
    }
    let content =
        v.get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| ProviderError::Malformed {
                provider: PROVIDER,
                message: "the response has no content".into(),
            })?;
    let mut r = ModelResponse {
        finish_reason: v
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage: TokenUsage {
            input_tokens: v
                .pointer("/usage/input_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            output_tokens: v
                .pointer("/usage/output_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        },
        ..ModelResponse::default()
    };
    for (i, block) in content.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => r.text.push_str(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => r.tool_calls.push(ToolCall {
                id: call_id(block.get("id").and_then(Value::as_str), i as u64),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                arguments: block
                    .get("input")
                    .map_or_else(|| "{}".to_owned(), Value::to_string),
            }),
            _ => {}
        }
    }
    Ok(r)
}

/// One content block being streamed.
#[derive(Debug, Default)]
struct Block {
    tool: Option<(Option<String>, String)>,
    json: String,
    done: bool,
}

/// Assembles a streamed message from its events.
#[derive(Debug, Default)]
pub struct MessageStream {
    text: String,
    blocks: BTreeMap<u64, Block>,
    usage: TokenUsage,
    stop_reason: Option<String>,
}

impl StreamReader for MessageStream {
    fn feed(
        &mut self,
        event: &eventsource_stream::Event,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, ProviderError> {
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        let v = event_json(PROVIDER, &event.data)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                self.usage.input_tokens = v
                    .pointer("/message/usage/input_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
            }
            "content_block_start" => {
                let block = v.get("content_block").cloned().unwrap_or_default();
                let entry = self.blocks.entry(index).or_default();
                if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                    let id = block.get("id").and_then(Value::as_str).map(str::to_owned);
                    let name = block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    entry.tool = Some((id, name));
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").cloned().unwrap_or_default();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(t) = delta.get("text").and_then(Value::as_str) {
                            self.text.push_str(t);
                            on_text(t);
                        }
                    }
                    Some("input_json_delta") => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        self.blocks.entry(index).or_default().json.push_str(part);
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let block = self.blocks.entry(index).or_default();
                block.done = true;
                if block.tool.is_some() && !block.json.trim().is_empty() {
                    // Parsed when the block stops: a call's arguments are complete only then.
                    serde_json::from_str::<Value>(&block.json).map_err(|e| {
                        ProviderError::Malformed {
                            provider: PROVIDER,
                            message: format!("tool input of block {index} is not JSON: {e}"),
                        }
                    })?;
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(out) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = out;
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let message = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_owned();
                return Err(ProviderError::InStream {
                    provider: PROVIDER,
                    message,
                });
            }
            _ => {} // ping, and event types added later
        }
        Ok(false)
    }

    fn finish(self: Box<Self>, complete: bool) -> Result<ModelResponse, ProviderError> {
        if !complete {
            return Err(ProviderError::StreamCut { provider: PROVIDER });
        }
        let tool_calls = self
            .blocks
            .into_iter()
            .filter_map(|(index, b)| {
                let (id, name) = b.tool?;
                let arguments = if b.json.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    b.json
                };
                Some(ToolCall {
                    id: call_id(id.as_deref(), index),
                    name,
                    arguments,
                })
            })
            .collect();
        Ok(ModelResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            finish_reason: self.stop_reason,
        })
    }
}
