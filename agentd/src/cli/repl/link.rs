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

/// A listed session, as `agent -c` weighs it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Its id.
    pub id: &'a str,
    /// Where it works.
    pub workspace: &'a std::path::Path,
    /// Who made it.
    pub owner_uid: u32,
    /// When it was last written to; 0 when it never was (no message yet).
    pub last_activity_unix_ms: u64,
    /// Whether it has events (a session written before sessions waited for their first
    /// message may have none).
    pub has_events: bool,
}

/// The session `agent -c` continues: the one written to last, among those of `uid` in
/// `workspace` that have had a message — never an empty one a REPL opened and left, nor one of
/// another directory or user.
pub fn newest_here<'a>(
    sessions: impl IntoIterator<Item = Candidate<'a>>,
    workspace: &std::path::Path,
    uid: u32,
) -> Option<String> {
    sessions
        .into_iter()
        .filter(|s| s.workspace == workspace && s.owner_uid == uid)
        .filter(|s| s.has_events && s.last_activity_unix_ms > 0)
        .max_by_key(|s| s.last_activity_unix_ms)
        .map(|s| s.id.to_owned())
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
    /// After the session's events ended unasked (`next_event` gave `None`): whether the link
    /// got the session back (a daemon link connects again; an in-process session that stopped
    /// is gone). [`SessionLink::notice`] then says what happened.
    async fn recover(&mut self) -> Result<bool, LinkError>;
    /// Whether the open session is kept (it has had a message, and there is a store): leaving,
    /// the REPL says how to continue it.
    fn kept(&self) -> bool;
    /// What the user should be told about the link itself (it connected again), once.
    fn notice(&mut self) -> Option<String> {
        None
    }
    /// Leaves the open session for a new one in the same directory (`/new`); with
    /// `delete_old`, deletes the one left (`/delete`).
    async fn renew(&mut self, delete_old: bool) -> Result<(), LinkError>;
    /// Deletes stored session `id` (not the open one: see [`SessionLink::renew`]).
    async fn delete(&mut self, id: &str) -> Result<(), LinkError>;
    /// Stops the linked session (in-process) or leaves it (daemon).
    async fn close(&mut self);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn continue_takes_the_newest_written_session_of_this_directory_and_user() {
        let here = Path::new("/w/here");
        let there = Path::new("/w/there");
        let c = |id, workspace, owner_uid, last_activity_unix_ms, has_events| Candidate {
            id,
            workspace,
            owner_uid,
            last_activity_unix_ms,
            has_events,
        };
        let list = [
            c("old", here, 1000, 100, true),
            c("talked", here, 1000, 300, true),
            c("empty-legacy", here, 1000, 900, false),
            c("pending", here, 1000, 0, true),
            c("elsewhere", there, 1000, 950, true),
            c("someone-else", here, 1001, 990, true),
        ];
        assert_eq!(newest_here(list, here, 1000).as_deref(), Some("talked"));
        assert_eq!(newest_here(list, Path::new("/w/none"), 1000), None);
    }
}
