//! The sessions of a store, for `agent sessions`: each from its log's header, its first user
//! message (the title) and its newest turn event.

use super::log::{LOG_FILE, Record};
use super::read::{self, Loaded};
use super::{Store, StoreError};
use protocol::event::Event;
use protocol::session::FinishReason;
use std::path::PathBuf;

/// Longest title, in characters.
const TITLE_CHARS: usize = 60;

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
    /// The newest write to its log, milliseconds since the Unix epoch.
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
    }
}

impl Store {
    /// Every session, newest activity first, and the logs that could not be read (each error
    /// names its file) — one bad log does not hide the others.
    pub fn list(&self) -> (Vec<Summary>, Vec<StoreError>) {
        let mut found = Vec::new();
        let mut errors = Vec::new();
        let Ok(entries) = std::fs::read_dir(self.root()) else {
            return (found, errors);
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path().join(LOG_FILE);
            if !path.is_file() {
                continue;
            }
            match read::load(&path) {
                Ok(loaded) => found.push(summary(&path, &loaded)),
                Err(e) => errors.push(e),
            }
        }
        found.sort_by_key(|s| std::cmp::Reverse(s.last_activity_unix_ms));
        (found, errors)
    }
}

fn summary(path: &std::path::Path, loaded: &Loaded) -> Summary {
    let first_message = || {
        loaded.records.iter().find_map(|r| match &r.event {
            Event::UserMessage(m) => Some(cut(&m.text)),
            _ => None,
        })
    };
    let title = loaded
        .header
        .options
        .title
        .as_deref()
        .map(cut)
        .or_else(first_message);
    let last_turn = loaded
        .records
        .iter()
        .rev()
        .find_map(|r: &Record| match &r.event {
            Event::TurnFinished(f) => Some(Status::Finished(f.reason)),
            Event::TurnStarted(_) => Some(Status::Cut),
            _ => None,
        });
    let running = std::fs::File::open(path).is_ok_and(|f| {
        nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockSharedNonblock).is_err()
    });
    let status = match (running, last_turn) {
        (true, _) => Status::Running,
        (false, Some(s)) => s,
        (false, None) => Status::New,
    };
    let last_activity_unix_ms = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(loaded.header.created_unix_ms, |d| {
            u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
        });
    let switched = crate::agent::resume::switched(&loaded.records);
    Summary {
        approval: switched.mode.or(loaded.header.options.approval),
        model: switched
            .model
            .unwrap_or_else(|| loaded.header.model.clone()),
        id: loaded.header.id.as_str().to_owned(),
        title,
        workspace: loaded.header.workspace.clone(),
        owner_uid: loaded.header.owner_uid,
        created_unix_ms: loaded.header.created_unix_ms,
        last_activity_unix_ms,
        status,
        last_seq: loaded.records.last().map_or(0, |r| r.seq.0),
    }
}

fn cut(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= TITLE_CHARS {
        one_line
    } else {
        let mut t: String = one_line.chars().take(TITLE_CHARS - 1).collect();
        t.push('…');
        t
    }
}
