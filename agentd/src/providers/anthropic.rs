//! Anthropic Messages: `tool_use` blocks in assistant messages, `tool_result` blocks in the next
//! user message, `input_json_delta` fragments joined when their block stops, `ping`, and `error`
//! events inside the stream.
//!
//! A call whose input is not JSON (what a model cut off by `max_tokens` in the middle of a call
//! sends) is handed on with its raw text, for dispatch to answer with an error; in the history it
//! goes back with `input: {}`, since the API wants an object there. `thinking` and
//! `redacted_thinking` blocks are kept with the message ([`Opaque::AnthropicBlock`]) and sent back
//! unchanged, in their place, as the API requires when thinking is on.
//!
//! `max_tokens` is required, and refused over the model's own limit: it comes from
//! [`super::limits`] (the request's own cap, `[provider] max_output_tokens`, the model's limit,
//! or a default every Claude model takes). An `error` event inside the stream whose type is the
//! server's load or failure (`overloaded_error`, the 529 of a stream; `api_error`, its 500) is
//! retried as that status is (<https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events>).
//! A failed tool result carries `is_error: true`; usage adds the prompt cache's reads and writes
//! to the input, and records them apart.

use super::http::{Call, Client, PART_OVERHEAD, StreamReader, Wire, arguments_text, event_json};
use super::limits;
use super::model::{Message, ModelRequest, ModelResponse, Opaque, Role, arguments_object};
use super::{CallFailed, ProviderError};
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;
use protocol::session::TokenUsage;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const PROVIDER: &str = "anthropic";
/// The API version this adapter speaks.
pub const API_VERSION: &str = "2023-06-01";
/// The error types of an in-stream `error` event that are the server's load or failure, not
/// the request's: the statuses they stand for (529, 500, 429, 504) are retried
/// (<https://docs.anthropic.com/en/api/errors>).
const TRANSIENT_ERRORS: &[&str] = &[
    "overloaded_error",
    "api_error",
    "rate_limit_error",
    "timeout_error",
];

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
        let body = request_body_capped(req, self.stream, self.max_output_tokens);
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
            model: &req.model,
        };
        self.transport.run(&call, on_text).await
    }
}

/// The Messages request body. System messages become the top-level `system`; consecutive
/// messages of one role are merged, since the API wants user and assistant to alternate; tool
/// results become `tool_result` blocks of a user message. No configured output cap.
pub fn request_body(req: &ModelRequest, stream: bool) -> Value {
    request_body_capped(req, stream, None)
}

/// A prompt-cache breakpoint: the prefix up to and including the block that carries it is
/// cached for five minutes, and a later request that begins with the same prefix reads it at a
/// tenth of the input price (writing it costs 1.25 times)
/// (<https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching>).
fn breakpoint() -> Value {
    json!({"type": "ephemeral"})
}

/// [`request_body`] with `configured`, `[provider] max_output_tokens`.
///
/// Three prompt-cache breakpoints (the API takes at most four): the last tool, the system
/// prompt, and the last block of the newest message. The cache is read in the order tools,
/// system, messages, so each step reads everything the previous step wrote (the API looks back
/// up to 20 blocks from a breakpoint for an earlier one) and writes only what was added since.
/// The reminder goes after the newest message's breakpoint: it changes every step, and inside
/// the cached prefix it would make every entry miss on the next step.
pub fn request_body_capped(req: &ModelRequest, stream: bool, configured: Option<u32>) -> Value {
    let system: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in req.messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = blocks_of(m);
        if blocks.is_empty() {
            continue; // an empty answer: the API refuses a message with no content
        }
        match messages.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    // Thinking blocks cannot carry a breakpoint; the newest message is the user's in practice.
    if let Some(block) = messages
        .last_mut()
        .and_then(|(_, blocks)| blocks.last_mut())
        .filter(|b| !is_opaque(b.get("type").and_then(Value::as_str)))
    {
        block["cache_control"] = breakpoint();
    }
    if let (Some(text), Some(("user", blocks))) = (req.reminder.as_deref(), messages.last_mut()) {
        let text = super::model::reminder_suffix(text);
        blocks.push(json!({"type": "text", "text": text.trim_start()}));
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": req.model,
        "max_tokens": limits::anthropic_cap(req.max_tokens, configured, &req.model),
        "messages": messages,
        "stream": stream,
    });
    if !system.is_empty() {
        body["system"] =
            json!([{"type": "text", "text": system.join("\n\n"), "cache_control": breakpoint()}]);
    }
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req.tools.iter().map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters})).collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = breakpoint();
        }
        body["tools"] = json!(tools);
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
            let mut block = json!({"type": "tool_result", "tool_use_id": id, "content": m.content});
            if m.is_error {
                block["is_error"] = json!(true);
            }
            ("user", vec![block])
        }
        Role::Assistant => {
            let mut blocks = Vec::new();
            if !m.content.is_empty() {
                blocks.push(json!({"type": "text", "text": m.content}));
            }
            for c in &m.tool_calls {
                blocks.push(json!({"type": "tool_use", "id": c.id.as_str(), "name": c.name, "input": arguments_object(&c.arguments)}));
            }
            // Opaque blocks go back where they were, in the order they came (indices ascending).
            for o in &m.opaque {
                if let Opaque::AnthropicBlock { index, block } = o {
                    blocks.insert((*index).min(blocks.len()), block.clone());
                }
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

/// Whether a content block is one only Anthropic reads, kept and sent back unchanged.
fn is_opaque(kind: Option<&str>) -> bool {
    matches!(kind, Some("thinking" | "redacted_thinking"))
}

/// A `usage` object. Anthropic's `input_tokens` leave out what was read from or written to the
/// prompt cache (`cache_read_input_tokens`, `cache_creation_input_tokens`), each billed at its
/// own rate (<https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#tracking-cache-performance>):
/// they are added in, so the input counts the whole prompt as the other dialects do.
fn usage_of(v: Option<&Value>) -> TokenUsage {
    let n = |k: &str| {
        v.and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (read, write) = (
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
    );
    TokenUsage {
        input_tokens: n("input_tokens").saturating_add(read).saturating_add(write),
        output_tokens: n("output_tokens"),
        cache_read_tokens: read,
        cache_write_tokens: write,
        reasoning_tokens: 0,
    }
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
        usage: usage_of(v.get("usage")),
        ..ModelResponse::default()
    };
    for (i, block) in content.iter().enumerate() {
        let kind = block.get("type").and_then(Value::as_str);
        match kind {
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
            _ if is_opaque(kind) => r.opaque.push(Opaque::AnthropicBlock {
                index: i,
                block: block.clone(),
            }),
            _ => {}
        }
    }
    Ok(r)
}

/// One content block being streamed.
#[derive(Debug)]
enum Block {
    /// Text (it goes straight into the response's text).
    Text,
    /// A `tool_use` block: its id, name and input JSON so far.
    Tool {
        id: Option<String>,
        name: String,
        json: String,
    },
    /// A `thinking` or `redacted_thinking` block as it started, and the text of its
    /// `thinking_delta`s and `signature_delta`s so far: joined into the block when the message
    /// is complete, so that each delta costs its own length, not the length of all before it.
    Opaque {
        block: Value,
        thinking: Option<String>,
        signature: Option<String>,
    },
}

impl Block {
    /// The block as the non-streamed API would have returned it.
    fn into_opaque(block: Value, thinking: Option<String>, signature: Option<String>) -> Value {
        let mut block = block;
        for (field, deltas) in [("thinking", thinking), ("signature", signature)] {
            if let Some(deltas) = deltas {
                let so_far = block.get(field).and_then(Value::as_str).unwrap_or_default();
                block[field] = json!(format!("{so_far}{deltas}"));
            }
        }
        block
    }
}

/// Assembles a streamed message from its events.
#[derive(Debug, Default)]
pub struct MessageStream {
    text: String,
    blocks: BTreeMap<u64, Block>,
    usage: TokenUsage,
    stop_reason: Option<String>,
    /// Bytes kept so far (see [`StreamReader::size`]).
    size: usize,
}

impl MessageStream {
    /// A block starts; `raw` is the length of the event that brought it, an upper bound of what
    /// keeping the block costs.
    fn block_start(&mut self, index: u64, block: &Value, raw: usize) {
        let kind = block.get("type").and_then(Value::as_str);
        let entry = match kind {
            Some("tool_use") => Block::Tool {
                id: block.get("id").and_then(Value::as_str).map(str::to_owned),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                json: String::new(),
            },
            _ if is_opaque(kind) => Block::Opaque {
                block: block.clone(),
                thinking: None,
                signature: None,
            },
            _ => Block::Text,
        };
        self.size += PART_OVERHEAD + raw;
        self.blocks.insert(index, entry);
    }

    fn block_delta(&mut self, index: u64, delta: &Value, on_text: &mut (dyn FnMut(&str) + Send)) {
        let text = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or_default();
        let kept = match (
            delta.get("type").and_then(Value::as_str),
            self.blocks.get_mut(&index),
        ) {
            (Some("text_delta"), _) => {
                let t = text("text");
                self.text.push_str(t);
                on_text(t);
                t.len()
            }
            (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                let t = text("partial_json");
                json.push_str(t);
                t.len()
            }
            // Thinking text and its signature arrive as deltas of the block; the block goes
            // back whole, as the non-streamed API would have returned it.
            (Some("thinking_delta"), Some(Block::Opaque { thinking, .. })) => {
                let t = text("thinking");
                thinking.get_or_insert_default().push_str(t);
                t.len()
            }
            (Some("signature_delta"), Some(Block::Opaque { signature, .. })) => {
                let t = text("signature");
                signature.get_or_insert_default().push_str(t);
                t.len()
            }
            _ => 0,
        };
        self.size += kept;
    }
}

/// An in-stream `error` event: transient ones (see [`TRANSIENT_ERRORS`]) are retried.
fn stream_error(v: &Value) -> ProviderError {
    let message = v
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("unknown error")
        .to_owned();
    match v.pointer("/error/type").and_then(Value::as_str) {
        Some(kind) if TRANSIENT_ERRORS.contains(&kind) => ProviderError::InStreamTransient {
            provider: PROVIDER,
            kind: kind.to_owned(),
            message,
        },
        _ => ProviderError::InStream {
            provider: PROVIDER,
            message,
        },
    }
}

impl StreamReader for MessageStream {
    fn feed(
        &mut self,
        event: &super::sse::Event,
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
                let output = self.usage.output_tokens;
                self.usage = usage_of(v.pointer("/message/usage"));
                self.usage.output_tokens = output;
            }
            "content_block_start" => {
                let block = v.get("content_block").unwrap_or(&Value::Null);
                self.block_start(index, block, event.data.len());
            }
            "content_block_delta" => {
                self.block_delta(index, v.get("delta").unwrap_or(&Value::Null), on_text);
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(out) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = out;
                }
                // Newer servers repeat the input counts, cumulative, in the final delta.
                if v.pointer("/usage/input_tokens").is_some() {
                    let output = self.usage.output_tokens;
                    self.usage = usage_of(v.get("usage"));
                    self.usage.output_tokens = output;
                }
            }
            "message_stop" => return Ok(true),
            "error" => return Err(stream_error(&v)),
            // `content_block_stop`, `ping`, and event types added later. A tool's input is not
            // parsed here: input that is not JSON is the call's problem, answered by dispatch.
            _ => {}
        }
        Ok(false)
    }

    fn finish(self: Box<Self>, complete: bool) -> Result<ModelResponse, ProviderError> {
        if !complete {
            return Err(ProviderError::StreamCut { provider: PROVIDER });
        }
        let mut r = ModelResponse {
            text: self.text,
            usage: self.usage,
            finish_reason: self.stop_reason,
            ..ModelResponse::default()
        };
        for (index, block) in self.blocks {
            match block {
                Block::Text => {}
                Block::Tool { id, name, json } => r.tool_calls.push(ToolCall {
                    id: call_id(id.as_deref(), index),
                    name,
                    arguments: arguments_text(&json),
                }),
                Block::Opaque {
                    block,
                    thinking,
                    signature,
                } => r.opaque.push(Opaque::AnthropicBlock {
                    index: index as usize,
                    block: Block::into_opaque(block, thinking, signature),
                }),
            }
        }
        Ok(r)
    }

    fn size(&self) -> usize {
        self.size
    }
}
