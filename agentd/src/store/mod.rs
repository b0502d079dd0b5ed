//! Sessions on disk: one append-only log per session, JSON lines, one record per event, under a
//! state directory (`$XDG_STATE_HOME/agentd` for a user; the daemon's `--state-dir`).
//!
//! ```text
//! <state>/sessions/<id>/log.jsonl    line 1: the header; then {"seq":N,"unix_ms":T,"event":{…}}
//! <state>/sessions/<id>/spill/       whole tool outputs too big for the context
//! <state>/index/<uid>/<id>.json       the session's summary, for listings
//! ```
//!
//! * [`log`]: the writer. It alone assigns sequence numbers; it holds an exclusive `flock` on
//!   the log (one writer per session, across processes), writes each record with one `write`
//!   (so a `kill -9` can tear at most the last line), and `fsync`s at step boundaries.
//! * [`read`]: loading a log — a torn last line (a crash mid-write) is ignored with a warning,
//!   and cut off before the writer appends again; any other bad line, or a log written by
//!   another format version, is an error naming the file and the line.
//! * [`pending`]: a session not written yet — a log is written at the first user message;
//! * [`permissions`]: what a root daemon's session owners may reach (their spill folders);
//! * [`summary`]: what a listing shows of a session, folded from its records (pure);
//! * [`index`]: those summaries on disk, a directory per owner, so that a listing reads one
//!   user's summaries and no log; checked against the logs, rebuilt from them when stale or torn;
//! * [`list`]: the sessions of a state directory (or of one uid), from the index.
//!
//! The format is documented in `docs/sessions.md`. Many readers may read a log while its writer
//! appends: a reader that meets a line without its newline treats it as not yet written.

pub mod index;
#[cfg(test)]
mod index_tests;
pub mod list;
pub mod log;
pub mod pending;
pub mod permissions;
pub mod read;
pub mod summary;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

/// The version of the log format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// What went wrong with the session store, naming the file (and line) at fault.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file or directory could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// No session by that id in this state directory.
    #[error("no session {id} in {dir}")]
    NotFound {
        /// The id asked for.
        id: String,
        /// The state directory searched.
        dir: PathBuf,
    },
    /// Another process is writing this session.
    #[error("session {id} is in use by another process ({path} is locked)")]
    InUse {
        /// The session.
        id: String,
        /// Its log.
        path: PathBuf,
    },
    /// A line that is not a record of this format (not the torn last line of a crash).
    #[error("{path}:{line}: {why}")]
    Corrupt {
        /// The log.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// A log written by another version of the format.
    #[error(
        "{path}:1: this session log has format version {found}; this agentd reads version {FORMAT_VERSION}"
    )]
    Version {
        /// The log.
        path: PathBuf,
        /// The version it says.
        found: u64,
    },
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A state directory's session store.
#[derive(Debug, Clone)]
pub struct Store {
    /// `<state>/sessions`: a directory per session.
    root: PathBuf,
    /// `<state>/index`: a directory per owner, a summary per session ([`index`]).
    index: PathBuf,
}

impl Store {
    /// The store under `state_dir`, creating it and `state_dir/sessions` if needed: 0700, or for
    /// a root daemon passable, not listable, by others (0711; see [`permissions`]).
    pub fn open(state_dir: &Path) -> Result<Self, StoreError> {
        use std::os::unix::fs::DirBuilderExt;
        let root = state_dir.join("sessions");
        // A root daemon's state directory, when it makes it, is passable by the sessions'
        // owners (their spill folders are inside); the umask may still narrow it.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(permissions::state_dir_mode())
            .create(state_dir)
            .map_err(io_err(state_dir))?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(io_err(&root))?;
        permissions::sessions_root(&root).map_err(io_err(&root))?;
        let index = state_dir.join(index::INDEX_DIR);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&index)
            .map_err(io_err(&index))?;
        Ok(Self { root, index })
    }

    /// The default state directory of this user: `$XDG_STATE_HOME/agentd`, else
    /// `~/.local/state/agentd`; `None` with neither variable set.
    pub fn default_dir() -> Option<PathBuf> {
        let from = |var: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        from("XDG_STATE_HOME")
            .filter(|p| p.is_absolute())
            .map(|p| p.join("agentd"))
            .or_else(|| from("HOME").map(|h| h.join(".local/state/agentd")))
    }

    /// Where sessions live.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of session `id`.
    pub fn dir_of(&self, id: &protocol::ids::SessionId) -> PathBuf {
        self.root.join(id.as_str())
    }

    /// The header of session `id`: who owns it, where it works (its first line only).
    pub fn header(&self, id: &protocol::ids::SessionId) -> Result<log::Header, StoreError> {
        use std::io::BufRead;
        let path = self.dir_of(id).join(log::LOG_FILE);
        let file = match read::open_log(&path) {
            Ok(f) => f,
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound {
                    id: id.as_str().to_owned(),
                    dir: self.root.clone(),
                });
            }
            Err(e) => return Err(e),
        };
        let mut first = Vec::new();
        std::io::BufReader::new(file)
            .read_until(b'\n', &mut first)
            .map_err(io_err(&path))?;
        let torn = first.last() != Some(&b'\n');
        if !torn {
            first.pop();
        }
        read::parse_header(&path, &first, torn)
    }

    /// Deletes session `id`: its log, its spill files and its summary. A session being written is
    /// refused.
    pub fn delete(&self, id: &protocol::ids::SessionId) -> Result<(), StoreError> {
        let dir = self.dir_of(id);
        let log_path = dir.join(log::LOG_FILE);
        if !log_path.exists() {
            return Err(StoreError::NotFound {
                id: id.as_str().to_owned(),
                dir: self.root.clone(),
            });
        }
        let owner = self.header(id).map(|h| h.owner_uid);
        // Holding the lock while removing: no writer can be in the middle of a step.
        let _lock = log::lock(&log_path, id)?;
        std::fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
        // After the log: a crash in between leaves a summary without a log, which the next
        // listing removes (the other order would bring a deleted session back).
        if let Ok(uid) = owner {
            self.remove_entry(uid, id);
        }
        Ok(())
    }
}
