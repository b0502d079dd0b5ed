//! The index: a small summary file per session ([`Entry`]) in a directory per owner, so that a
//! listing reads one user's summaries and nothing else — never a log, never another user's.
//!
//! ```text
//! <state>/index/                   0700, the store's (root's in a system daemon)
//! <state>/index/<uid>/<id>.json    that uid's sessions, one summary each
//! ```
//!
//! The log stays the truth; the index is a cache of it that is checked, not trusted:
//!
//! * written by the log's writer at each step's end (after the log's `fdatasync`), by creating a
//!   new file and renaming it over the old one, so a reader sees a whole summary or the one
//!   before; a crash leaves at worst a stray temp file (removed by [`Store::reconcile`]);
//! * not synced itself: a summary lost or torn by a power cut does not parse and is rebuilt from
//!   the log, and one older than its log (the writer died between its sync and the summary) covers
//!   fewer bytes than the log has, so the reader folds only the lines after (`covered_bytes`);
//! * a summary whose log is gone (a crash between deleting a session and its summary) is removed;
//!   a log without a summary (sessions written before the index existed, a crash between creating
//!   a session and its summary) gets one at the next [`Store::reconcile`], which the daemon runs
//!   at start and `agent sessions` before it lists.

use super::log::LOG_FILE;
use super::read::{self, Loaded};
use super::summary::{Entry, SUMMARY_VERSION};
use super::{Store, StoreError, io_err};
use protocol::ids::SessionId;
use std::collections::HashSet;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The index's directory under the state directory.
pub const INDEX_DIR: &str = "index";

/// The largest summary file read; a larger one is rebuilt (a summary is well under 16 KiB: its
/// strings are bounded by `protocol::bounds`, and titles are cut).
const MAX_ENTRY_BYTES: u64 = 64 << 10;

/// A summary file's name: `<id>.json`.
fn file_name(id: &SessionId) -> String {
    format!("{id}.json")
}

/// The session a summary file's name is of, if it is one.
fn id_of(name: &str) -> Option<SessionId> {
    SessionId::new(name.strip_suffix(".json")?).ok()
}

/// The summary of a whole loaded log.
pub fn entry_of(loaded: &Loaded) -> Entry {
    let mut entry = Entry::new(&loaded.header, 0);
    for record in &loaded.records {
        // The loader checked the numbering already: each record is the next.
        let _ = entry.fold(record, 0);
    }
    entry.covered_bytes = loaded.covered_bytes;
    entry
}

impl Store {
    /// The index's directory of `uid`.
    pub fn index_of(&self, uid: u32) -> PathBuf {
        self.index.join(uid.to_string())
    }

    /// Where the summary of session `id` of `uid` is.
    pub fn entry_path(&self, uid: u32, id: &SessionId) -> PathBuf {
        self.index_of(uid).join(file_name(id))
    }

    /// Whether `uid` has session `id`, by its index alone: no log is opened.
    pub fn is_owner(&self, uid: u32, id: &SessionId) -> bool {
        self.entry_path(uid, id).is_file()
    }

    /// Sessions `uid` keeps, by its index alone.
    pub fn count_of(&self, uid: u32) -> usize {
        std::fs::read_dir(self.index_of(uid)).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_str().and_then(id_of).is_some())
                .count()
        })
    }

    /// Writes `entry` in its owner's index: a new file renamed over the old one.
    pub fn write_entry(&self, entry: &Entry) -> Result<(), StoreError> {
        let dir = self.index_of(entry.owner_uid);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io_err(&dir))?;
        let random = crate::random::hex::<8>().map_err(io_err(&dir))?;
        let temp = dir.join(format!(".{}.{random}.tmp", entry.id));
        let text = serde_json::to_vec(entry).map_err(|e| io_err(&temp)(e.into()))?;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp)
            .and_then(|mut f| f.write_all(&text));
        let renamed = written.and_then(|()| std::fs::rename(&temp, dir.join(file_name(&entry.id))));
        if let Err(e) = renamed {
            let _ = std::fs::remove_file(&temp);
            return Err(io_err(&temp)(e));
        }
        Ok(())
    }

    /// Removes the summary of session `id` of `uid`, if there is one.
    pub fn remove_entry(&self, uid: u32, id: &SessionId) {
        let _ = std::fs::remove_file(self.entry_path(uid, id));
    }

    /// The summaries of `uid`'s sessions, each checked against its log's length (never its
    /// contents, unless the summary is stale or broken), and the logs that could not be read.
    pub fn entries_of(&self, uid: u32) -> (Vec<Entry>, Vec<StoreError>) {
        let (mut found, mut errors) = (Vec::new(), Vec::new());
        let Ok(dir) = std::fs::read_dir(self.index_of(uid)) else {
            return (found, errors);
        };
        for file in dir.filter_map(Result::ok) {
            let Some(id) = file.file_name().to_str().and_then(id_of) else {
                continue;
            };
            match self.checked_entry(uid, &id) {
                Ok(Some(entry)) => found.push(entry),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        (found, errors)
    }

    /// The summaries of every uid's sessions (for an admin, and for `agent sessions`).
    pub fn entries_all(&self) -> (Vec<Entry>, Vec<StoreError>) {
        let (mut found, mut errors) = (Vec::new(), Vec::new());
        let Ok(dir) = std::fs::read_dir(&self.index) else {
            return (found, errors);
        };
        for uid in dir.filter_map(Result::ok) {
            let Some(uid) = uid.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let (f, e) = self.entries_of(uid);
            found.extend(f);
            errors.extend(e);
        }
        (found, errors)
    }

    /// Session `id`'s summary in `uid`'s index, brought up to its log: `None` when the log is
    /// gone (the summary is removed) or belongs to someone else (the summary moves there).
    fn checked_entry(&self, uid: u32, id: &SessionId) -> Result<Option<Entry>, StoreError> {
        let path = self.entry_path(uid, id);
        let log = self.dir_of(id).join(LOG_FILE);
        let log_len = match std::fs::symlink_metadata(&log) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.remove_entry(uid, id);
                return Ok(None);
            }
            Err(e) => return Err(io_err(&log)(e)),
        };
        let stored = read_entry(&path).filter(|e| {
            e.summary == SUMMARY_VERSION
                && e.id == *id
                && e.owner_uid == uid
                && e.covered_bytes <= log_len
        });
        let entry = match stored {
            Some(e) if e.covered_bytes == log_len => return Ok(Some(e)),
            Some(mut e) => match fold_tail(&log, &mut e) {
                Ok(()) => e,
                Err(_) => entry_of(&read::load(&log)?),
            },
            None => entry_of(&read::load(&log)?),
        };
        if entry.owner_uid != uid {
            self.remove_entry(uid, id);
            let _ = self.write_entry(&entry);
            return Ok(None);
        }
        if let Err(e) = self.write_entry(&entry) {
            tracing::warn!("the session index could not be updated: {e}");
        }
        Ok(Some(entry))
    }

    /// Gives every session a summary that has none (from its whole log), and removes the temp
    /// files a crash left in the index. Reads only the logs without a summary; the errors name
    /// the logs that could not be read.
    pub fn reconcile(&self) -> Vec<StoreError> {
        let mut indexed = HashSet::new();
        if let Ok(uids) = std::fs::read_dir(&self.index) {
            for uid in uids.filter_map(Result::ok) {
                let Ok(files) = std::fs::read_dir(uid.path()) else {
                    continue;
                };
                for file in files.filter_map(Result::ok) {
                    let name = file.file_name();
                    let Some(name) = name.to_str() else { continue };
                    if name.starts_with('.') && name.ends_with(".tmp") {
                        let _ = std::fs::remove_file(file.path());
                    } else if let Some(id) = id_of(name) {
                        indexed.insert(id);
                    }
                }
            }
        }
        let mut errors = Vec::new();
        let Ok(sessions) = std::fs::read_dir(self.root()) else {
            return errors;
        };
        for dir in sessions.filter_map(Result::ok) {
            let Some(id) = dir
                .file_name()
                .to_str()
                .and_then(|n| SessionId::new(n).ok())
            else {
                continue;
            };
            let log = self.dir_of(&id).join(LOG_FILE);
            if indexed.contains(&id) || !log.is_file() {
                continue;
            }
            let written = read::load(&log).and_then(|loaded| self.write_entry(&entry_of(&loaded)));
            if let Err(e) = written {
                errors.push(e);
            }
        }
        errors
    }
}

/// The summary at `path`, if it is a whole one.
fn read_entry(path: &Path) -> Option<Entry> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_ENTRY_BYTES {
        return None;
    }
    let mut text = Vec::new();
    file.take(MAX_ENTRY_BYTES).read_to_end(&mut text).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Folds into `entry` the whole lines of the log at `path` after those it covers. A line that is
/// not the next record means the summary is not of this log: the caller rebuilds.
fn fold_tail(path: &Path, entry: &mut Entry) -> Result<(), String> {
    let mut file = read::open_log(path).map_err(|e| e.to_string())?;
    file.seek(std::io::SeekFrom::Start(entry.covered_bytes))
        .map_err(|e| e.to_string())?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).map_err(|e| e.to_string())?;
    let mut rest = tail.as_slice();
    // A last piece without its newline is being written, or torn: not covered yet.
    while let Some(end) = rest.iter().position(|b| *b == b'\n') {
        let record = serde_json::from_slice(&rest[..end]).map_err(|e| e.to_string())?;
        entry.fold(&record, end as u64 + 1)?;
        rest = &rest[end + 1..];
    }
    Ok(())
}
