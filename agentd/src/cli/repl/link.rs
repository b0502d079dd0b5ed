//! The session link: what the REPL needs from a session, whether the session runs in this
//! process on the engine ([`super::local::LocalLink`]) or in a daemon behind its socket
//! ([`super::remote::RemoteLink`]). Both speak the control protocol's requests and events, so the
//! REPL's code is the same for both.

use protocol::event::EventEnvelope;
use protocol::ids::{ApprovalId, SessionId};
use protocol::verdict::{ApprovalDecision, ApprovalMode};
use std::path::PathBuf;

/// Why a link operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The session (or the daemon) refused the request; the message says why.
    #[error("{0}")]
    Refused(String),
    /// The daemon connection failed.
    #[error("the connection to agentd failed: {0}")]
    Connection(String),
    /// Building or reopening an in-process session failed.
    #[error("{0}")]
    Session(String),
}

/// A session as `/sessions` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its id.
    pub id: String,
    /// Where it works.
    pub workspace: PathBuf,
    /// Where it stands, in words.
    pub state: String,
    /// Its title (the first message, or the one given at creation).
    pub title: Option<String>,
}

/// Which session a link opens first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// A new one.
    New,
    /// The newest session of this workspace (`agent -c`); a new one when there is none.
    Last,
}

/// How the first session was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// `Start::Last` found no session here, and a new one was started.
    pub missed: bool,
    /// Events of its history queued before live ones.
    pub replaying: usize,
}

/// One live session, driven by its requests and watched through its events.
///
/// Only the REPL implements and uses it, on one thread: the futures need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait SessionLink {
    /// The session now linked.
    fn session(&self) -> &SessionId;
    /// The model it talks to now.
    fn model(&self) -> String;
    /// Its approval mode now.
    fn approval(&self) -> ApprovalMode;
    /// Where sessions come from, in words (for the banner): `in-process` or the socket.
    fn transport(&self) -> String;
    /// Gives the session a user message: a turn starts, its progress arrives as events.
    async fn send(&mut self, text: &str) -> Result<(), LinkError>;
    /// Interrupts the running turn.
    async fn interrupt(&mut self) -> Result<(), LinkError>;
    /// Answers ask `approval`.
    async fn approve(
        &mut self,
        approval: ApprovalId,
        decision: ApprovalDecision,
    ) -> Result<(), LinkError>;
    /// Summarises the older history now; returns once it is done (its `context_compacted`
    /// event is on its way), or why not (nothing to compact, a turn running, the call failed).
    async fn compact(&mut self) -> Result<(), LinkError>;
    /// Changes the approval mode from the next call on.
    async fn set_approval(&mut self, mode: ApprovalMode) -> Result<(), LinkError>;
    /// Switches the model (same provider) from the next request on.
    async fn set_model(&mut self, model: &str) -> Result<(), LinkError>;
    /// The session's next event (a resumed session's history first); `None` once it has
    /// stopped. Cancel-safe: an event is never lost by dropping the future.
    async fn next_event(&mut self) -> Option<EventEnvelope>;
    /// This user's sessions, newest first.
    async fn sessions(&mut self) -> Result<Vec<Listed>, LinkError>;
    /// Switches to stored session `id`; its history then comes as events: returns how many.
    async fn resume(&mut self, id: &str) -> Result<usize, LinkError>;
    /// Stops the linked session (in-process) or leaves it (daemon).
    async fn close(&mut self);
}
