//! The control channel: what clients send agentd and what agentd sends back, after the handshake.

use crate::event::EventEnvelope;
use crate::ids::{ApprovalId, RequestId, Seq, SessionId};
use crate::session::SessionInfo;
use crate::verdict::{ApprovalDecision, ApprovalMode};
use crate::wire_enum;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One client → agentd frame: a request and the id its response will echo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientMessage {
    /// Chosen by the client; echoed in the response.
    pub id: RequestId,
    /// What is asked.
    pub request: Request,
}

wire_enum! {
    /// What a client can ask.
    pub enum Request {
        /// Start a new session.
        CreateSession(CreateSession),
        /// List sessions (your own; all of them for root or the admin group).
        ListSessions(ListSessions),
        /// Receive a session's events, replaying those after `after_seq`.
        AttachSession(AttachSession),
        /// Stop receiving a session's events.
        DetachSession(DetachSession),
        /// Load a stopped session from its log so it can take messages again.
        ResumeSession(ResumeSession),
        /// Delete a session and its log.
        DeleteSession(DeleteSession),
        /// Give a session a user message; a turn starts.
        SendMessage(SendMessage),
        /// Stop a session's running turn.
        Interrupt(Interrupt),
        /// Answer an approval request.
        ApprovalReply(ApprovalReply),
        /// The daemon's status.
        Status,
        /// Summarise a session's older history now (one model call); the newest part stays.
        Compact(Compact),
        /// Change the approval mode of a session from its next call on.
        SetApprovalMode(SetApprovalMode),
        /// Switch a session's model (same provider) from its next request on.
        SetModel(SetModel),
    }
}

/// Payload of [`Request::CreateSession`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateSession {
    /// The directory the agent works in.
    pub workspace: PathBuf,
    /// The model to use; the configured default when absent.
    pub model: Option<String>,
    /// How a human is kept in the loop.
    pub approval: ApprovalMode,
    /// Steps per turn; the configured default when absent.
    pub max_steps: Option<u32>,
    /// A short human title.
    pub title: Option<String>,
    /// A read-only session: every call sees the workspace read-only (the sandbox's `read-only`
    /// profile) and the model is not offered the tools that write. Added after version 1 was
    /// first published: JSON clients may leave it out (false); in bincode it is the last field.
    #[serde(default)]
    pub read_only: bool,
}

/// The longest model name a client may send (`create_session.model`, `set_model.model`), bytes:
/// real names (`anthropic/claude-sonnet-4.5`, a local GGUF file's name) are far shorter; the name
/// is kept in the session's log and sent back in every listing.
pub const MAX_MODEL_BYTES: usize = 256;

impl CreateSession {
    /// The longest `workspace`, bytes: `PATH_MAX` (4096), the most the kernel resolves.
    pub const MAX_WORKSPACE_BYTES: usize = 4096;
    /// The longest `title`, bytes: a line of a listing, kept in the log's header.
    pub const MAX_TITLE_BYTES: usize = 256;
}

/// Payload of [`Request::ListSessions`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListSessions {
    /// Every user's sessions (root or the admin group only).
    pub all_users: bool,
}

/// Payload of [`Request::AttachSession`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachSession {
    /// The session.
    pub session: SessionId,
    /// Replay the events after this one; all of them when absent.
    pub after_seq: Option<Seq>,
}

/// Payload of [`Request::DetachSession`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetachSession {
    /// The session.
    pub session: SessionId,
}

/// Payload of [`Request::ResumeSession`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeSession {
    /// The session.
    pub session: SessionId,
}

/// Payload of [`Request::DeleteSession`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteSession {
    /// The session.
    pub session: SessionId,
}

/// Payload of [`Request::SendMessage`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendMessage {
    /// The session.
    pub session: SessionId,
    /// The user's message.
    pub text: String,
}

impl SendMessage {
    /// The longest `text`, bytes (1 MiB). Every message is kept in the session's log (owned by
    /// the daemon's user, outside the client's disk quota) and replayed to each client that
    /// attaches: at the frame limit (16 MiB) a user could grow a log by a gigabyte a minute and
    /// have each replay hold it in memory. A prompt is far smaller; a document belongs in a file.
    pub const MAX_TEXT_BYTES: usize = 1 << 20;
}

/// Payload of [`Request::Interrupt`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupt {
    /// The session.
    pub session: SessionId,
}

/// Payload of [`Request::ApprovalReply`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalReply {
    /// The session.
    pub session: SessionId,
    /// The request answered.
    pub approval: ApprovalId,
    /// The answer.
    pub decision: ApprovalDecision,
}

/// Payload of [`Request::Compact`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compact {
    /// The session.
    pub session: SessionId,
}

/// Payload of [`Request::SetApprovalMode`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetApprovalMode {
    /// The session.
    pub session: SessionId,
    /// The new mode: `on_risk`, `always` or `never` (`skip_permissions` is chosen only when a
    /// session is created).
    pub mode: ApprovalMode,
}

/// Payload of [`Request::SetModel`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetModel {
    /// The session.
    pub session: SessionId,
    /// The model's name, as its provider knows it.
    pub model: String,
}

wire_enum! {
    /// One agentd → client frame.
    pub enum ServerMessage {
        /// The answer to a request.
        Response(Response),
        /// An event of an attached session.
        Event(EventEnvelope),
        /// A frame-level error not tied to a request (an undecodable or oversized frame); the
        /// connection closes after it.
        Error(ErrorFrame),
    }
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The request's id.
    pub id: RequestId,
    /// The answer.
    pub body: ResponseBody,
}

wire_enum! {
    /// What a request got.
    pub enum ResponseBody {
        /// Done; nothing to report.
        Ok,
        /// The session was created.
        SessionCreated(SessionInfo),
        /// The sessions asked for.
        Sessions(SessionList),
        /// Attached; the replayed events follow as event frames.
        Attached(Attached),
        /// The daemon's status.
        Status(StatusInfo),
        /// The request failed; the connection stays open.
        Error(ErrorFrame),
    }
}

/// Payload of [`ResponseBody::Sessions`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    /// The sessions, oldest first.
    pub sessions: Vec<SessionInfo>,
}

/// Payload of [`ResponseBody::Attached`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attached {
    /// The session.
    pub session: SessionInfo,
    /// How many past events will be replayed before live ones.
    pub replaying: u64,
}

/// Payload of [`ResponseBody::Status`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusInfo {
    /// agentd's version.
    pub version: String,
    /// The control protocol version.
    pub protocol: u32,
    /// Milliseconds since the daemon started.
    pub uptime_ms: u64,
    /// Sessions loaded.
    pub sessions: u32,
    /// The Landlock ABI of the kernel, if it has Landlock.
    pub landlock_abi: Option<u32>,
    /// How tool processes are contained (`cgroup v2 (unified)`, `pid namespace`, …).
    pub containment: String,
    /// Worker processes now: running a call, or locked down and ready for one. Added after
    /// version 1 was first published, as `seccomp` (JSON: may be absent; bincode: always there).
    #[serde(default)]
    pub workers: u32,
    /// This kernel's seccomp: whether filters can be installed (the actions it offers), and
    /// whether agentd itself runs under one (as it does under the systemd unit).
    #[serde(default)]
    pub seccomp: String,
}

/// An error, with a code for programs and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorFrame {
    /// What kind of error.
    pub code: ErrorCode,
    /// What was wrong, in words.
    pub message: String,
}

impl ErrorFrame {
    /// An error frame with the given code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Error kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A frame whose payload did not decode as a message.
    BadFrame,
    /// A frame over the size limit.
    FrameTooLarge,
    /// The first frame was not a valid hello.
    BadHandshake,
    /// The hello asked for a protocol version this server does not speak.
    UnsupportedVersion,
    /// The hello asked for an encoding this server does not speak.
    UnsupportedEncoding,
    /// A well-formed request that cannot be carried out as asked.
    BadRequest,
    /// No such session (or not yours).
    NotFound,
    /// Not allowed for this peer.
    Forbidden,
    /// The session is busy (for example, a turn is already running).
    Conflict,
    /// Something failed inside agentd.
    Internal,
    /// agentd is shutting down: the request was not carried out; connect again later. Also the
    /// code of the error frame a client gets just before the daemon closes its connection.
    ShuttingDown,
    /// The connection made no request and had no session attached for the daemon's idle
    /// timeout: the error frame it gets before it is closed; connect again.
    Idle,
}
