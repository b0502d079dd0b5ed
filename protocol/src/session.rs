//! Session-level values that appear in responses and events.

use crate::ids::{Seq, SessionId};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Waiting for a user message.
    Idle,
    /// A turn is in progress.
    Running,
    /// A turn is waiting for a human's approval.
    WaitingApproval,
    /// Not loaded in the daemon; its log is on disk and it can be resumed.
    Stopped,
}

/// A session as listed to its owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session's id.
    pub id: SessionId,
    /// The uid that owns it (and that its workers run as, when the daemon is root).
    pub owner_uid: u32,
    /// The directory the agent works in.
    pub workspace: PathBuf,
    /// The model it talks to.
    pub model: String,
    /// Where it stands.
    pub state: SessionState,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// The sequence number of its newest event (0 when it has none).
    pub last_seq: Seq,
    /// A short human title, if one was given.
    pub title: Option<String>,
    /// Its approval mode now. Added after version 1 was first published: JSON clients may find
    /// it absent (`on_risk`); in bincode it is the last field.
    #[serde(default)]
    pub approval: crate::verdict::ApprovalMode,
    /// When it was last written to (its newest event), milliseconds since the Unix epoch; 0 for
    /// a session that has had no message yet and so is kept nowhere (`agent -c` continues the
    /// newest session with a message). Added after `approval`, the same way: absent is 0.
    #[serde(default)]
    pub last_activity_unix_ms: u64,
}

/// Tokens used, as the provider reported them, the same in every dialect: `input_tokens` is the
/// whole prompt, cached or not, and `output_tokens` the whole output, reasoning included; the
/// other fields say how much of each was what (each provider bills them differently). Anthropic
/// reports cache reads and writes beside its `input_tokens`, and Gemini its thinking beside its
/// candidates: they are added in, so that a budget counts every token paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens, summed over the turn's model calls (cached ones included).
    pub input_tokens: u64,
    /// Completion tokens, summed over the turn's model calls (reasoning included).
    pub output_tokens: u64,
    /// Of the input, tokens read from the provider's prompt cache (Anthropic
    /// `cache_read_input_tokens`, OpenAI `prompt_tokens_details.cached_tokens`, Gemini
    /// `cachedContentTokenCount`). Absent in logs written before it existed.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of the input, tokens written to the prompt cache (Anthropic
    /// `cache_creation_input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Of the output, the model's reasoning (OpenAI
    /// `completion_tokens_details.reasoning_tokens`, Gemini `thoughtsTokenCount`).
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl TokenUsage {
    /// Input plus output: every token of the turn, cached and reasoning ones included.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Adds another call's usage to this one.
    pub fn add(&mut self, other: TokenUsage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model answered without asking for more tools.
    Done,
    /// The step limit was reached.
    MaxSteps,
    /// The wall-clock limit was reached.
    Timeout,
    /// The token budget was spent.
    TokenBudget,
    /// A client interrupted it.
    Interrupted,
    /// The model provider failed after its retries, or the supervisor hit an error.
    Error,
    /// The model's output limit ended its answer (OpenAI `length`, Anthropic `max_tokens`,
    /// Gemini `MAX_TOKENS`) with no call to go on with, or cut its calls more often than a
    /// turn repairs them.
    OutputLimit,
    /// The model declined to answer (an OpenAI `refusal`, Anthropic `stop_reason: refusal`).
    Refused,
    /// The provider's content filter stopped the answer or blocked the prompt (OpenAI
    /// `content_filter`; Gemini `SAFETY`, `RECITATION`, `PROHIBITED_CONTENT`, `BLOCKLIST`,
    /// `SPII`, a `promptFeedback.blockReason`).
    Filtered,
    /// The model kept writing tool calls the provider could not parse (Gemini
    /// `MALFORMED_FUNCTION_CALL`), more often than a turn repairs them.
    MalformedCall,
    /// The conversation no longer fits the model's context window, even after compacting
    /// (a provider's context-length error, Anthropic `model_context_window_exceeded`).
    ContextOverflow,
}

impl FinishReason {
    /// Its name on the wire (`done`, `max_steps`, `output_limit`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Done => "done",
            FinishReason::MaxSteps => "max_steps",
            FinishReason::Timeout => "timeout",
            FinishReason::TokenBudget => "token_budget",
            FinishReason::Interrupted => "interrupted",
            FinishReason::Error => "error",
            FinishReason::OutputLimit => "output_limit",
            FinishReason::Refused => "refused",
            FinishReason::Filtered => "filtered",
            FinishReason::MalformedCall => "malformed_call",
            FinishReason::ContextOverflow => "context_overflow",
        }
    }
}

/// One entry of the agent's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// What is to be done, in the imperative ("Run the tests").
    pub content: String,
    /// The same while it is being done ("Running the tests"), for a progress line.
    #[serde(default)]
    pub active_form: String,
    /// How far along it is.
    pub status: TodoStatus,
}

/// A todo item's state; at most one item is in progress at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    #[serde(alias = "completed")]
    Done,
}
