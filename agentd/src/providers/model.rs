//! The one internal message model every provider adapter translates to and from.
//!
//! Everything here is serialisable: a session's messages, provider-opaque fields included, are what
//! a stored session replays.

use protocol::event::ToolCall;
use protocol::ids::ToolCallId;
use protocol::session::TokenUsage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// Its text (for a tool message: the result).
    pub content: String,
    /// For an assistant message: the tool calls it made, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the call it answers (and that call's tool name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_result_for: Option<(ToolCallId, String)>,
    /// For an assistant message: what the provider returned with it that only that provider
    /// reads, to be sent back exactly when the conversation is replayed to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opaque: Vec<Opaque>,
    /// For a tool message: the call failed (an error, a denial, a timeout, a crash), which
    /// Anthropic is told with `is_error: true`
    /// (<https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#handling-results-from-client-tools>).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// A piece of a model's message that only its provider understands and that must go back to it
/// unchanged: the provider checks it (a missing or altered one is a 400), and the agent never
/// reads it. Other providers ignore it, so a conversation can still change provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Opaque {
    /// An Anthropic `thinking` block (with its `signature`) or `redacted_thinking` block, exactly
    /// as it arrived, and its position among the message's content blocks, so that it goes back
    /// in the same order relative to the text and `tool_use` blocks.
    AnthropicBlock {
        /// Its index in the message's `content`.
        index: usize,
        /// The block.
        block: Value,
    },
    /// A Gemini `thoughtSignature` that came on the `functionCall` part of this call.
    GeminiCallSignature {
        /// The call.
        call: ToolCallId,
        /// The signature, as it arrived.
        signature: String,
    },
    /// A Gemini `thoughtSignature` that came on a text part (sent back on the message's text).
    GeminiTextSignature {
        /// The signature, as it arrived.
        signature: String,
    },
    /// The `reasoning_content` an OpenAI-compatible reasoning server (DeepSeek, vLLM's
    /// reasoning parsers) sent with the message: DeepSeek's thinking mode refuses a tool step
    /// whose assistant message comes back without it
    /// (<https://api-docs.deepseek.com/guides/thinking_mode#tool-calls>), so it goes back on
    /// messages with tool calls, and only on them (the older `deepseek-reasoner` refused it
    /// elsewhere).
    ReasoningContent {
        /// The text, as it arrived.
        text: String,
    },
}

impl Message {
    /// A message with text only.
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: vec![],
            tool_result_for: None,
            opaque: vec![],
            is_error: false,
        }
    }

    /// The model's message: its text, calls and opaque fields, as the response brought them.
    pub fn assistant(response: &ModelResponse) -> Self {
        Self {
            role: Role::Assistant,
            content: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
            tool_result_for: None,
            opaque: response.opaque.clone(),
            is_error: false,
        }
    }

    /// The result of `call`.
    pub fn tool_result(call: &ToolCall, content: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_calls: vec![],
            tool_result_for: Some((call.id.clone(), call.name.clone())),
            opaque: vec![],
            is_error: false,
        }
    }

    /// The result of `call`, marked failed when `failed`.
    pub fn tool_outcome(call: &ToolCall, content: impl Into<String>, failed: bool) -> Self {
        Self {
            is_error: failed,
            ..Self::tool_result(call, content)
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its arguments, as a JSON Schema object.
    pub parameters: serde_json::Value,
}

/// One model call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The model's name.
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tools: Vec<ToolSpec>,
    /// A cap on output tokens, when set.
    pub max_tokens: Option<u32>,
    /// What changes from step to step (the todo list, the git state), for this request only:
    /// every adapter puts it after everything else, so that the rest of the request stays a
    /// byte-identical prefix of the next one, which the providers' prompt caches reuse.
    pub reminder: Option<String>,
}

impl ModelRequest {
    /// The messages with the reminder appended to the newest one when that is the user's or a
    /// tool's (the history itself never keeps it): the request's last bytes, so that the next
    /// request, which carries this message without it, still shares everything before it.
    pub fn messages_with_reminder(&self) -> std::borrow::Cow<'_, [Message]> {
        let Some(text) = self.reminder.as_deref() else {
            return std::borrow::Cow::Borrowed(&self.messages);
        };
        let mut messages = self.messages.clone();
        if let Some(last) = messages.last_mut()
            && matches!(last.role, Role::User | Role::Tool)
        {
            last.content = format!("{}{}", last.content, reminder_suffix(text));
        }
        std::borrow::Cow::Owned(messages)
    }
}

/// The reminder as it follows a message's text.
pub fn reminder_suffix(text: &str) -> String {
    format!("\n\n<reminder>\n{text}</reminder>")
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelResponse {
    /// Its text.
    pub text: String,
    /// The tool calls it made, in order. Non-empty means the loop goes on — decided from what
    /// arrived, never from the finish reason. A call's arguments are the raw text the model
    /// wrote, which may not be JSON: dispatch answers such a call with an error.
    pub tool_calls: Vec<ToolCall>,
    /// What only the provider reads, to keep with the message (see [`Opaque`]).
    pub opaque: Vec<Opaque>,
    /// Tokens used.
    pub usage: TokenUsage,
    /// The provider's own finish reason, as it named it (`stop`, `end_turn`, `SAFETY`, …; for
    /// a Gemini prompt blocked before any answer, `blockReason:` and its reason; for an OpenAI
    /// answer that came as a `refusal`, `refusal`). [`ModelResponse::stop`] reads it.
    pub finish_reason: Option<String>,
    /// What the provider said about the stop beyond its name (Gemini's `finishMessage`, which
    /// says what was wrong with a malformed call), to feed back to the model and to show.
    pub finish_message: Option<String>,
}

/// How a response ended, the same in every dialect: what the turn does next depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The model finished (OpenAI `stop`, Anthropic `end_turn` / `stop_sequence`, Gemini
    /// `STOP`), or said nothing about it.
    Done,
    /// It asked for tools (OpenAI `tool_calls`, Anthropic `tool_use`).
    ToolCalls,
    /// The output limit ended it (OpenAI `length`, Anthropic `max_tokens`, Gemini
    /// `MAX_TOKENS`): text or a call it was writing may be cut off.
    Length,
    /// The model declined (an OpenAI `refusal`, Anthropic `refusal`).
    Refusal,
    /// A content filter stopped it or blocked the prompt (OpenAI `content_filter`; Gemini
    /// `SAFETY`, `RECITATION`, `PROHIBITED_CONTENT`, `BLOCKLIST`, `SPII`, `IMAGE_SAFETY`, a
    /// `blockReason`).
    Filtered,
    /// The model wrote a call the provider could not parse, and none arrived (Gemini
    /// `MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL`).
    MalformedCall,
    /// The context window filled while it answered (Anthropic `model_context_window_exceeded`).
    ContextOverflow,
    /// A reason this adapter does not know (Gemini `OTHER`, `LANGUAGE`, Anthropic
    /// `pause_turn`, …): taken as the end of the answer, the reason kept for the logs.
    Other,
}

impl Stop {
    /// The stop a provider's finish reason names.
    /// References: <https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices>,
    /// <https://docs.anthropic.com/en/api/handling-stop-reasons>,
    /// <https://ai.google.dev/api/generate-content#FinishReason> and `BlockReason`.
    pub fn of(reason: &str) -> Self {
        if reason.starts_with("blockReason:") {
            return Stop::Filtered;
        }
        match reason {
            "stop" | "end_turn" | "stop_sequence" | "STOP" => Stop::Done,
            "tool_calls" | "function_call" | "tool_use" => Stop::ToolCalls,
            "length" | "max_tokens" | "MAX_TOKENS" => Stop::Length,
            "refusal" => Stop::Refusal,
            "content_filter" | "SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" | "BLOCKLIST"
            | "SPII" | "IMAGE_SAFETY" => Stop::Filtered,
            "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => Stop::MalformedCall,
            "model_context_window_exceeded" => Stop::ContextOverflow,
            _ => Stop::Other,
        }
    }
}

impl ModelResponse {
    /// Bytes of the response as the size bound counts them (`http::Transport::max_response_bytes`):
    /// its text, each call's id, name and arguments, what only the provider reads, and
    /// [`PART_OVERHEAD`](super::http::PART_OVERHEAD) per call and opaque part.
    pub fn size(&self) -> usize {
        use super::http::PART_OVERHEAD;
        let calls: usize = self
            .tool_calls
            .iter()
            .map(|c| PART_OVERHEAD + c.id.as_str().len() + c.name.len() + c.arguments.len())
            .sum();
        let opaque: usize = self
            .opaque
            .iter()
            .map(|o| {
                PART_OVERHEAD
                    + match o {
                        Opaque::AnthropicBlock { block, .. } => block.to_string().len(),
                        Opaque::GeminiCallSignature { signature, .. }
                        | Opaque::GeminiTextSignature { signature } => signature.len(),
                        Opaque::ReasoningContent { text } => text.len(),
                    }
            })
            .sum();
        self.text.len() + calls + opaque
    }

    /// How the response ended ([`Stop::of`] its finish reason; none is [`Stop::Done`]).
    pub fn stop(&self) -> Stop {
        self.finish_reason.as_deref().map_or(Stop::Done, Stop::of)
    }

    /// Whether the output token limit ended the response (OpenAI `length`, Anthropic
    /// `max_tokens`, Gemini `MAX_TOKENS`): a call it was writing may be cut off.
    pub fn hit_output_limit(&self) -> bool {
        self.stop() == Stop::Length
    }
}

/// Arguments as the JSON object a wire format that wants an object in its history gets
/// (Anthropic `tool_use.input`, Gemini `functionCall.args`): the object the model wrote, or `{}`
/// when what it wrote was not a JSON object. Such a call was answered with an error saying why,
/// so the model learns what went wrong from the result, not from its own broken text.
pub fn arguments_object(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_with_opaque_fields_round_trips_through_json() {
        let call = ToolCall {
            id: ToolCallId::new("call_1").unwrap(),
            name: "bash".into(),
            arguments: "{\"command\": \"ls".into(),
        };
        let m = Message {
            opaque: vec![
                Opaque::AnthropicBlock {
                    index: 0,
                    block: serde_json::json!({"type": "thinking", "thinking": "hm", "signature": "c2ln"}),
                },
                Opaque::GeminiCallSignature {
                    call: call.id.clone(),
                    signature: "Z2Vt".into(),
                },
            ],
            tool_calls: vec![call],
            ..Message::text(Role::Assistant, "Looking.")
        };
        let text = serde_json::to_string(&m).unwrap();
        assert!(
            text.contains("\"kind\":\"gemini_call_signature\""),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), m);
        let plain = serde_json::to_string(&Message::text(Role::User, "hi")).unwrap();
        assert_eq!(plain, r#"{"role":"user","content":"hi"}"#);
    }

    #[test]
    fn arguments_that_are_not_an_object_replay_as_an_empty_one() {
        assert_eq!(arguments_object(r#"{"a": 1}"#)["a"], 1);
        for bad in ["{\"command\": \"ls", "", "[1]", "\"x\""] {
            assert_eq!(arguments_object(bad), serde_json::json!({}), "{bad:?}");
        }
    }

    #[test]
    fn the_output_limit_is_recognised_in_each_dialect() {
        for (reason, hit) in [
            ("length", true),
            ("max_tokens", true),
            ("MAX_TOKENS", true),
            ("stop", false),
            ("tool_use", false),
            ("STOP", false),
        ] {
            let r = ModelResponse {
                finish_reason: Some(reason.into()),
                ..ModelResponse::default()
            };
            assert_eq!(r.hit_output_limit(), hit, "{reason}");
        }
    }

    #[test]
    fn every_dialect_s_stops_are_told_apart() {
        for (reason, stop) in [
            ("stop", Stop::Done),
            ("end_turn", Stop::Done),
            ("STOP", Stop::Done),
            ("tool_calls", Stop::ToolCalls),
            ("tool_use", Stop::ToolCalls),
            ("length", Stop::Length),
            ("refusal", Stop::Refusal),
            ("content_filter", Stop::Filtered),
            ("SAFETY", Stop::Filtered),
            ("RECITATION", Stop::Filtered),
            ("PROHIBITED_CONTENT", Stop::Filtered),
            ("blockReason:OTHER", Stop::Filtered),
            ("MALFORMED_FUNCTION_CALL", Stop::MalformedCall),
            ("model_context_window_exceeded", Stop::ContextOverflow),
            ("pause_turn", Stop::Other),
            ("OTHER", Stop::Other),
        ] {
            assert_eq!(Stop::of(reason), stop, "{reason}");
        }
    }
}
