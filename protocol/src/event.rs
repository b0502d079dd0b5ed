//! Events agentd pushes to attached clients. Each carries its session's sequence number, so a client
//! that re-attaches can ask for everything after the last one it saw.

use crate::ids::{ApprovalId, Seq, SessionId, ToolCallId};
use crate::session::{FinishReason, TodoItem, TokenUsage};
use crate::verdict::{ApprovalDecision, ApprovalMode, Verdict};
use crate::wire_enum;
use serde::{Deserialize, Serialize};

/// One event of one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventEnvelope {
    /// The session it belongs to.
    pub session: SessionId,
    /// Its place in that session's event log, starting at 1.
    pub seq: Seq,
    /// What happened.
    pub event: Event,
}

wire_enum! {
    /// Something that happened in a session.
    pub enum Event {
        /// A user message was accepted.
        UserMessage(UserMessage),
        /// The agent started working on a user message.
        TurnStarted(TurnStarted),
        /// A fragment of the assistant's text, as it streams.
        AssistantTextDelta(AssistantTextDelta),
        /// The assistant's whole message for one model call.
        AssistantMessage(AssistantMessage),
        /// A tool call is about to be dispatched, with the policy's verdict.
        ToolCallStarted(ToolCallStarted),
        /// A tool call waits for a human: answer with an `approval_reply` request.
        ApprovalRequested(ApprovalRequested),
        /// An approval request was answered (by a client, or by the mode or a timeout).
        ApprovalResolved(ApprovalResolved),
        /// A fragment of a running tool's output.
        ToolOutputDelta(ToolOutputDelta),
        /// A tool call ended; `content` is what the model receives.
        ToolCallFinished(ToolCallFinished),
        /// The agent replaced its todo list.
        TodoListChanged(TodoListChanged),
        /// Old history was summarised to fit the model's context window.
        ContextCompacted(ContextCompacted),
        /// The turn ended.
        TurnFinished(TurnFinished),
        /// Something that happened in a subagent (the child loop of a `task` call), tagged with
        /// that call. Its transcript is not the session's history: clients may show it, and a
        /// resumed session's history leaves it out.
        Subagent(SubagentEvent),
        /// The session's approval mode was changed (`set_approval_mode`); its next calls follow it.
        ApprovalModeChanged(ApprovalModeChanged),
        /// The session's model was switched (`set_model`); its next requests name it.
        ModelChanged(ModelChanged),
    }
}

/// A tool call as the model asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; its result must carry the same id.
    pub id: ToolCallId,
    /// The tool's name, as the model wrote it (it may name no real tool).
    pub name: String,
    /// The arguments as the raw JSON text the model wrote (it may not be valid JSON).
    pub arguments: String,
}

/// Payload of [`Event::UserMessage`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessage {
    /// The message text.
    pub text: String,
}

/// Payload of [`Event::TurnStarted`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnStarted {
    /// The turn's number within the session, from 1.
    pub turn: u64,
}

/// Payload of [`Event::AssistantTextDelta`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantTextDelta {
    /// The new text.
    pub text: String,
}

/// Payload of [`Event::AssistantMessage`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// The message's text (may be empty when it only calls tools).
    pub text: String,
    /// The tool calls it asked for, in order.
    pub tool_calls: Vec<ToolCall>,
    /// What only the model's provider reads (a Gemini thought signature, an Anthropic thinking
    /// block), each as JSON text: kept so a stored session can be replayed to its provider
    /// exactly. Clients ignore it.
    #[serde(default)]
    pub opaque: Vec<String>,
}

/// Payload of [`Event::ToolCallStarted`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallStarted {
    /// The call.
    pub call: ToolCall,
    /// The policy's verdict.
    pub verdict: Verdict,
    /// Why: the rule that decided and what it matched.
    pub reason: String,
}

/// Payload of [`Event::ApprovalRequested`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequested {
    /// The id to answer with.
    pub approval: ApprovalId,
    /// The call waiting.
    pub call: ToolCall,
    /// Why it needs approval.
    pub reason: String,
}

/// Payload of [`Event::ApprovalResolved`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalResolved {
    /// The request answered.
    pub approval: ApprovalId,
    /// The answer.
    pub decision: ApprovalDecision,
    /// Who answered: `user`, `mode` or `timeout`.
    pub by: String,
}

/// Payload of [`Event::ToolOutputDelta`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutputDelta {
    /// The call producing it.
    pub call_id: ToolCallId,
    /// Output text (invalid UTF-8 replaced), stdout and stderr merged in arrival order.
    pub text: String,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// It ran and succeeded.
    Ok,
    /// It ran and failed, or its arguments were refused; the content says why.
    Error,
    /// The policy or a human refused it; it did not run.
    Denied,
    /// It ran past its time limit and was killed.
    TimedOut,
    /// The worker died without a result.
    Crashed,
}

/// Payload of [`Event::ToolCallFinished`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallFinished {
    /// The call.
    pub call_id: ToolCallId,
    /// How it ended.
    pub status: ToolStatus,
    /// What the model receives as the result.
    pub content: String,
    /// The command's exit code, for bash.
    pub exit_code: Option<i32>,
    /// Whether output was cut to fit the cap.
    pub truncated: bool,
    /// Wall-clock time in milliseconds.
    pub duration_ms: u64,
}

/// Payload of [`Event::TodoListChanged`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoListChanged {
    /// The whole new list.
    pub items: Vec<TodoItem>,
}

/// Payload of [`Event::ContextCompacted`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextCompacted {
    /// Estimated tokens of history before.
    pub tokens_before: u64,
    /// Estimated tokens of history after.
    pub tokens_after: u64,
    /// Messages folded into the summary.
    pub messages_summarised: u64,
    /// The summary that replaced them (a resumed session replays it).
    #[serde(default)]
    pub summary: String,
}

/// Payload of [`Event::TurnFinished`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnFinished {
    /// Why it ended.
    pub reason: FinishReason,
    /// Tokens used during the turn.
    pub usage: TokenUsage,
    /// The error or limit, in words, when the reason is not `done`.
    pub message: Option<String>,
    /// What the turn changed in the session's writable roots, as the supervisor saw them (not
    /// as git reports them: a call can hide a change from git, not from this). `None` when the
    /// turn ran no tool that can write, and for a subagent's turn (its parent's covers it).
    /// Absent in logs written before it existed.
    #[serde(default)]
    pub changes: Option<WorkspaceChanges>,
}

/// Most paths a [`WorkspaceChanges`] lists; `total` counts them all.
pub const MAX_CHANGES_LISTED: usize = 1000;

/// The paths one turn created, modified, deleted or changed the mode of, from the supervisor's
/// own walk of the writable roots before the turn's first writing step and at its end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceChanges {
    /// How many paths changed (more than `paths` holds when past [`MAX_CHANGES_LISTED`]).
    pub total: u64,
    /// The changed paths, at most [`MAX_CHANGES_LISTED`]: first those that existed before the
    /// turn (modified, mode changed, deleted), then those it created, each group by path.
    pub paths: Vec<ChangedPath>,
    /// Set when not every file could be checked (a bound was reached, a root could not be
    /// read): what was left out, in words.
    #[serde(default)]
    pub incomplete: Option<String>,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedPath {
    /// Relative to the workspace; absolute for another writable root. A name that is not UTF-8
    /// shows its bad bytes as U+FFFD.
    pub path: String,
    /// What happened to it.
    pub change: PathChange,
    /// What it is now (what it was, when deleted).
    pub kind: PathKind,
}

/// What happened to a path during a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathChange {
    /// Its contents, identity, type or status changed (for a directory: it was replaced).
    Modified,
    /// Only its permission bits changed, as far as its metadata tells.
    ModeChanged,
    /// It was there before the turn and is gone.
    Deleted,
    /// It was not there before the turn.
    Created,
}

/// What kind of file a changed path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket or device node.
    Other,
}

/// Payload of [`Event::Subagent`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentEvent {
    /// The parent's `task` call that started the subagent.
    pub call_id: ToolCallId,
    /// The subagent's own event: `user_message` (its prompt) and `turn_started` when it starts,
    /// its model's messages and tool calls, `turn_finished` when it ends. Never an approval:
    /// those are the session's own events, answered as any other.
    pub event: Box<Event>,
}

/// Payload of [`Event::ApprovalModeChanged`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalModeChanged {
    /// The mode in force from now on.
    pub mode: ApprovalMode,
}

/// Payload of [`Event::ModelChanged`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChanged {
    /// The model the session talks to from now on.
    pub model: String,
}
