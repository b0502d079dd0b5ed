//! Gemini `generateContent` / `streamGenerateContent`: `functionCall` parts (several per turn,
//! arriving whole), `functionResponse` parts whose `response` must be an object, and no call ids:
//! they are made up, unique in the process (so within a session, and across a session resumed by
//! another process), and results are matched back by name and order as Gemini does.
//!
//! Tool declarations carry `parametersJsonSchema` (full JSON Schema), not `parameters`, which
//! takes only an OpenAPI 3.0 subset and answers 400 to `additionalProperties`, `$schema`,
//! `const`, …. A `thoughtSignature` on a part is kept with the message ([`Opaque`]) and sent back
//! on the same part, as Gemini 3 requires for function calls.

use super::http::{Call, Client, PART_OVERHEAD, StreamReader, Wire, event_json};
use super::model::{Message, ModelRequest, ModelResponse, Opaque, Role, arguments_object};
use super::{CallFailed, ProviderError};
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;
use protocol::session::TokenUsage;
use serde_json::{Value, json};

const PROVIDER: &str = "gemini";

/// The Gemini generateContent wire format.
#[derive(Debug, Clone, Copy)]
pub struct Gemini;

impl Wire for Gemini {
    const PROVIDER: &'static str = PROVIDER;
}

/// Whether `model` can go in the URL's path as one segment: Gemini's model ids
/// (`gemini-2.5-flash`, `gemini-2.0-flash-001`) are letters, digits, `.`, `_` and `-`, and
/// nothing else may reach the path (a `/`, `..`, `?` or `#` would aim the request — with the
/// API key — at another endpoint of the host).
fn is_model_name(model: &str) -> bool {
    !model.is_empty()
        && model != "."
        && model != ".."
        && model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A client for one Gemini generateContent endpoint.
pub type GeminiClient = Client<Gemini>;

impl Client<Gemini> {
    /// One model call, retried as the policy says.
    pub async fn complete(
        &self,
        req: &ModelRequest,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, CallFailed> {
        if !is_model_name(&req.model) {
            return Err(CallFailed {
                error: ProviderError::BadModel {
                    provider: "gemini",
                    model: req.model.clone(),
                },
                tries: 0,
            });
        }
        let body = request_body_capped(req, self.max_output_tokens);
        let url = if self.stream {
            format!(
                "{}/models/{}:streamGenerateContent?alt=sse",
                self.base_url, req.model
            )
        } else {
            format!("{}/models/{}:generateContent", self.base_url, req.model)
        };
        let call = Call {
            url,
            headers: self
                .api_key
                .iter()
                .map(|k| ("x-goog-api-key", k.clone()))
                .collect(),
            body: &body,
            parse: parse_response,
            stream: self
                .stream
                .then_some(|| Box::new(ResponseStream::default()) as Box<dyn StreamReader>),
            model: &req.model,
        };
        self.transport.run(&call, on_text).await
    }
}

/// The request body: `contents` with `user` / `model` roles, `systemInstruction`, and
/// `functionDeclarations`. No configured output cap.
pub fn request_body(req: &ModelRequest) -> Value {
    request_body_capped(req, None)
}

/// [`request_body`] with `configured`, `[provider] max_output_tokens`: `maxOutputTokens` is sent
/// when the request or the config sets a cap (see [`super::limits::request_cap`]).
pub fn request_body_capped(req: &ModelRequest, configured: Option<u32>) -> Value {
    let mut contents: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let messages = req.messages_with_reminder();
    for m in messages.iter().filter(|m| m.role != Role::System) {
        let (role, parts) = parts_of(m);
        if parts.is_empty() {
            continue; // an empty answer: the API refuses a content without parts
        }
        match contents.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => contents.push((role, parts)),
        }
    }
    let contents: Vec<Value> = contents
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    let mut body = json!({ "contents": contents });
    let system: Vec<Value> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| json!({"text": m.content}))
        .collect();
    if !system.is_empty() {
        body["systemInstruction"] = json!({ "parts": system });
    }
    if !req.tools.is_empty() {
        // `parametersJsonSchema`, not `parameters`: see the module's comment.
        let decls: Vec<Value> = req.tools.iter().map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters})).collect();
        body["tools"] = json!([{ "functionDeclarations": decls }]);
    }
    if let Some(max) = super::limits::request_cap(req.max_tokens, configured, &req.model) {
        body["generationConfig"] = json!({ "maxOutputTokens": max });
    }
    body
}

fn parts_of(m: &Message) -> (&'static str, Vec<Value>) {
    match m.role {
        Role::Tool => {
            let name = m
                .tool_result_for
                .as_ref()
                .map(|(_, name)| name.as_str())
                .unwrap_or_default();
            // `response` must be an object: a JSON object result is passed as it is, text is wrapped.
            let response = serde_json::from_str::<Value>(&m.content)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({"content": m.content}));
            (
                "user",
                vec![json!({"functionResponse": {"name": name, "response": response}})],
            )
        }
        Role::Assistant => ("model", model_parts(m)),
        Role::User | Role::System => ("user", vec![json!({"text": m.content})]),
    }
}

/// The parts of the model's message: its text, then its calls, each with the `thoughtSignature`
/// it came with. Arguments that were not a JSON object go back as `{}` (the call was answered
/// with an error saying why).
fn model_parts(m: &Message) -> Vec<Value> {
    let mut parts = Vec::new();
    let text_signature = m.opaque.iter().find_map(|o| match o {
        Opaque::GeminiTextSignature { signature } => Some(signature),
        _ => None,
    });
    if !m.content.is_empty() || text_signature.is_some() {
        let mut part = json!({"text": m.content});
        if let Some(signature) = text_signature {
            part["thoughtSignature"] = json!(signature);
        }
        parts.push(part);
    }
    for c in &m.tool_calls {
        let mut part =
            json!({"functionCall": {"name": c.name, "args": arguments_object(&c.arguments)}});
        let signature = m.opaque.iter().find_map(|o| match o {
            Opaque::GeminiCallSignature { call, signature } if *call == c.id => Some(signature),
            _ => None,
        });
        if let Some(signature) = signature {
            part["thoughtSignature"] = json!(signature);
        }
        parts.push(part);
    }
    parts
}

/// A fresh id for a call Gemini sent without one: `call_<tag>_<n>`, the tag random per process,
/// `n` counting every id the process made. Unique within the process, so within every session it
/// runs, and (by the tag) against the ids of a stored session resumed by another process.
pub fn fresh_call_id() -> ToolCallId {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static TAG: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tag = TAG.get_or_init(|| {
        // std's hasher keys are random per process: no dependency needed for 48 random bits.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    ToolCallId::new(format!("call_{tag}_{n}")).unwrap_or_else(|_| ToolCallId::generated(n))
}

/// A call's arguments as text: `args` is an object from Gemini itself; some gateways send a JSON
/// string, which is taken as the raw text (it may not be JSON — dispatch answers that).
fn arguments_of(call: &Value) -> String {
    match call.get("args") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(raw)) => raw.clone(),
        Some(args) => args.to_string(),
    }
}

/// A `usageMetadata` (each chunk repeats the counts so far; a count it leaves out keeps its
/// value from `before`). `promptTokenCount` includes `cachedContentTokenCount`, and the thinking
/// (`thoughtsTokenCount`) is counted beside `candidatesTokenCount`, billed as output
/// (<https://ai.google.dev/api/generate-content#UsageMetadata>): it is added in.
fn usage_of(meta: &Value, before: TokenUsage) -> TokenUsage {
    let n = |k: &str| meta.get(k).and_then(Value::as_u64);
    let thoughts = n("thoughtsTokenCount").unwrap_or(before.reasoning_tokens);
    let candidates = n("candidatesTokenCount")
        .unwrap_or(before.output_tokens.saturating_sub(before.reasoning_tokens));
    TokenUsage {
        input_tokens: n("promptTokenCount").unwrap_or(before.input_tokens),
        output_tokens: candidates.saturating_add(thoughts),
        cache_read_tokens: n("cachedContentTokenCount").unwrap_or(before.cache_read_tokens),
        cache_write_tokens: 0,
        reasoning_tokens: thoughts,
    }
}

/// What one chunk added to a response.
#[derive(Debug, Clone, Copy, Default)]
struct Absorbed {
    /// It carried a finish reason.
    finished: bool,
    /// Bytes it added, as [`StreamReader::size`] counts them.
    size: usize,
}

/// Appends one response chunk's text and calls.
fn absorb(
    v: &Value,
    r: &mut ModelResponse,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<Absorbed, ProviderError> {
    if let Some(message) = v.pointer("/error/message").and_then(Value::as_str) {
        return Err(ProviderError::InStream {
            provider: PROVIDER,
            message: message.to_owned(),
        });
    }
    if let Some(meta) = v.get("usageMetadata") {
        r.usage = usage_of(meta, r.usage);
    }
    let mut added = Absorbed::default();
    // A prompt blocked before any answer: no candidates, only the reason.
    if let Some(reason) = v
        .pointer("/promptFeedback/blockReason")
        .and_then(Value::as_str)
    {
        r.finish_reason = Some(format!("blockReason:{reason}"));
        added.finished = true;
    }
    let Some(candidate) = v.pointer("/candidates/0") else {
        return Ok(added);
    };
    for part in candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(call) = part.get("functionCall") {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .and_then(|id| ToolCallId::new(id).ok())
                .unwrap_or_else(fresh_call_id);
            if let Some(signature) = signature {
                added.size += PART_OVERHEAD + signature.len();
                r.opaque.push(Opaque::GeminiCallSignature {
                    call: id.clone(),
                    signature,
                });
            }
            let call = ToolCall {
                id,
                name: call
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                arguments: arguments_of(call),
            };
            added.size +=
                PART_OVERHEAD + call.id.as_str().len() + call.name.len() + call.arguments.len();
            r.tool_calls.push(call);
        } else if let Some(text) = part.get("text").and_then(Value::as_str) {
            // A thought summary (`thought: true`) is the model's reasoning, not its answer.
            if part.get("thought").and_then(Value::as_bool) != Some(true) {
                r.text.push_str(text);
                added.size += text.len();
                on_text(text);
            }
            if let Some(signature) = signature {
                added.size += PART_OVERHEAD + signature.len();
                // One text signature per message: the last, which Gemini puts on the last part.
                r.opaque
                    .retain(|o| !matches!(o, Opaque::GeminiTextSignature { .. }));
                r.opaque.push(Opaque::GeminiTextSignature { signature });
            }
        }
    }
    if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
        r.finish_reason = Some(reason.to_owned());
        added.finished = true;
    }
    if let Some(message) = candidate.get("finishMessage").and_then(Value::as_str) {
        r.finish_message = Some(super::http::head(message));
    }
    Ok(added)
}

/// A whole (non-streamed) response.
pub fn parse_response(v: &Value) -> Result<ModelResponse, ProviderError> {
    if v.get("candidates").is_none()
        && v.get("error").is_none()
        && v.get("promptFeedback").is_none()
    {
        return Err(ProviderError::Malformed {
            provider: PROVIDER,
            message: "the response has no candidates".into(),
        });
    }
    let mut r = ModelResponse::default();
    absorb(v, &mut r, &mut |_| {})?;
    Ok(r)
}

/// Assembles a streamed response: each event is a partial `GenerateContentResponse`.
#[derive(Debug, Default)]
pub struct ResponseStream {
    response: ModelResponse,
    finished: bool,
    /// Bytes kept so far (see [`StreamReader::size`]); a replaced text signature still counts,
    /// which only errs on the safe side.
    size: usize,
}

impl StreamReader for ResponseStream {
    fn feed(
        &mut self,
        event: &super::sse::Event,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, ProviderError> {
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        let v = event_json(PROVIDER, &event.data)?;
        // The stream simply ends after the chunk with the finish reason (which may also carry usage).
        let added = absorb(&v, &mut self.response, on_text)?;
        self.finished |= added.finished;
        self.size += added.size;
        Ok(false)
    }

    fn finish(self: Box<Self>, _complete: bool) -> Result<ModelResponse, ProviderError> {
        if self.finished {
            Ok(self.response)
        } else {
            Err(ProviderError::StreamCut { provider: PROVIDER })
        }
    }

    fn size(&self) -> usize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::model::Stop;

    #[test]
    fn a_blocked_prompt_and_a_malformed_call_are_stops_with_their_words() {
        let blocked = json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}});
        let r = parse_response(&blocked).unwrap();
        assert_eq!(r.stop(), Stop::Filtered);
        assert_eq!(
            r.finish_reason.as_deref(),
            Some("blockReason:PROHIBITED_CONTENT")
        );
        let malformed = json!({"candidates": [{"content": {"role": "model"}, "index": 0,
            "finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed function call: x"}],
            "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 2, "thoughtsTokenCount": 5, "cachedContentTokenCount": 4}});
        let r = parse_response(&malformed).unwrap();
        assert_eq!(r.stop(), Stop::MalformedCall);
        assert_eq!(
            r.finish_message.as_deref(),
            Some("Malformed function call: x")
        );
        assert_eq!(
            (
                r.usage.input_tokens,
                r.usage.output_tokens,
                r.usage.reasoning_tokens,
                r.usage.cache_read_tokens
            ),
            (7, 7, 5, 4)
        );
    }
}
