//! The one internal message model every provider adapter translates to and from.

use protocol::event::ToolCall;
use protocol::session::TokenUsage;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// Its text (for a tool message: the result).
    pub content: String,
    /// For an assistant message: the tool calls it made, in order.
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the call it answers (and that call's tool name).
    pub tool_result_for: Option<(protocol::ids::ToolCallId, String)>,
}

impl Message {
    /// A message with text only.
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: vec![],
            tool_result_for: None,
        }
    }

    /// The result of `call`.
    pub fn tool_result(call: &ToolCall, content: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_calls: vec![],
            tool_result_for: Some((call.id.clone(), call.name.clone())),
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
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelResponse {
    /// Its text.
    pub text: String,
    /// The tool calls it made, in order. Non-empty means the loop goes on — decided from what
    /// arrived, never from the finish reason.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    pub usage: TokenUsage,
    /// The provider's own finish reason, for logs.
    pub finish_reason: Option<String>,
}
