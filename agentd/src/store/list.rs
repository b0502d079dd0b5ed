//! The sessions of a store, for `agent sessions` and the daemon's `list_sessions`: each from
//! its summary in the index ([`super::index`]) — its header, its first user message (the title),
//! its newest turn — and whether a process holds its log now.

use super::log::LOG_FILE;
use super::summary::{Entry, LastTurn};
use super::{Store, StoreError};
use protocol::session::FinishReason;
use std::path::PathBuf;

/// One session, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Its id.
    pub id: String,
    /// The first user message, cut.
    pub title: Option<String>,
    /// The directory it works in.
    pub workspace: PathBuf,
    /// Who owns it.
    pub owner_uid: u32,
    /// The model it talks to: the one it was created with, or the one it was last switched to.
    pub model: String,
    /// Its approval mode: the one it was created with (daemon sessions keep it in the header),
    /// or the one it was last switched to; `None` when the log says neither.
    pub approval: Option<protocol::verdict::ApprovalMode>,
    /// When it was created, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// When its newest record was written, milliseconds since the Unix epoch.
    pub last_activity_unix_ms: u64,
    /// Where it stands.
    pub status: Status,
    /// Its newest sequence number.
    pub last_seq: u64,
}

/// Where a listed session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No turn yet.
    New,
    /// Its last turn ended, for this reason.
    Finished(FinishReason),
    /// A process is writing it now.
    Running,
    /// A turn started and its end was never written: the process died mid-turn.
    Cut,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::New => f.write_str("new"),
            Status::Finished(r) => write!(f, "{}", finish_word(*r)),
            Status::Running => f.write_str("running"),
            Status::Cut => f.write_str("cut off (resume it)"),
        }
    }
}

fn finish_word(r: FinishReason) -> &'static str {
    match r {
        FinishReason::Done => "done",
        FinishReason::MaxSteps => "max steps",
        FinishReason::Timeout => "timed out",
        FinishReason::TokenBudget => "token budget",
        FinishReason::Interrupted => "interrupted",
        FinishReason::Error => "error",
        FinishReason::OutputLimit => "output limit",
        FinishReason::Refused => "refused",
        FinishReason::Filtered => "content filtered",
        FinishReason::MalformedCall => "malformed calls",
        FinishReason::ContextOverflow => "context overflow",
    }
}

impl Store {
    /// Every session, newest activity first, and the logs that could not be read (each error
    /// names its file) — one bad log does not hide the others. Gives the logs without a summary
    /// one first ([`Store::reconcile`]): for `agent sessions`, whose store is one user's.
    pub fn list(&self) -> (Vec<Summary>, Vec<StoreError>) {
        let mut errors = self.reconcile();
        let (entries, more) = self.entries_all();
        errors.extend(more);
        (self.summaries(entries), errors)
    }

    /// The sessions of `uid`, newest activity first: its summaries alone are read (and, for a
    /// session written since its summary, the lines after it), never another uid's.
    pub fn list_of(&self, uid: u32) -> (Vec<Summary>, Vec<StoreError>) {
        let (entries, errors) = self.entries_of(uid);
        (self.summaries(entries), errors)
    }

    /// Every uid's sessions from the index, newest activity first (for an admin).
    pub fn list_all(&self) -> (Vec<Summary>, Vec<StoreError>) {
        let (entries, errors) = self.entries_all();
        (self.summaries(entries), errors)
    }

    fn summaries(&self, entries: Vec<Entry>) -> Vec<Summary> {
        let mut found: Vec<Summary> = entries.into_iter().map(|e| self.summary(e)).collect();
        found.sort_by_key(|s| std::cmp::Reverse(s.last_activity_unix_ms));
        found
    }

    fn summary(&self, entry: Entry) -> Summary {
        let path = self.dir_of(&entry.id).join(LOG_FILE);
        // Opened, not read: whether a writer holds its lock.
        let running = super::read::open_log(&path).is_ok_and(|f| {
            nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockSharedNonblock).is_err()
        });
        let status = match (running, entry.last_turn) {
            (true, _) => Status::Running,
            (false, Some(LastTurn::Finished(r))) => Status::Finished(r),
            (false, Some(LastTurn::Cut)) => Status::Cut,
            (false, None) => Status::New,
        };
        Summary {
            title: entry.shown_title(),
            id: entry.id.as_str().to_owned(),
            workspace: entry.workspace,
            owner_uid: entry.owner_uid,
            model: entry.model,
            approval: entry.approval,
            created_unix_ms: entry.created_unix_ms,
            last_activity_unix_ms: entry.last_activity_unix_ms,
            status,
            last_seq: entry.last_seq,
        }
    }
}
