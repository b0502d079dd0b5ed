//! The writer of one session's log: it assigns sequence numbers, writes one record per `write`,
//! and holds an exclusive lock on the log for as long as it lives.

use super::read::{self, Loaded};
use super::summary::Entry;
use super::{Store, StoreError, io_err};
use nix::fcntl::{Flock, FlockArg};
use protocol::event::Event;
use protocol::ids::{Seq, SessionId};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The log's file name inside a session's directory.
pub const LOG_FILE: &str = "log.jsonl";
/// The directory of a session's spilled tool outputs.
pub const SPILL_DIR: &str = "spill";

/// The first line of a log: what the session is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The format version ([`FORMAT_VERSION`]); its name marks the file as a session log.
    pub agentd_session: u32,
    /// The session's id (also its directory's name).
    pub id: SessionId,
    /// The directory the agent works in.
    pub workspace: PathBuf,
    /// The model, as configured when the session was created.
    pub model: String,
    /// The uid that owns the session.
    pub owner_uid: u32,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// What the session was created with, when it was created in the daemon (a resume there
    /// goes on with the same); absent in logs that `agent run` writes (its flags decide).
    #[serde(default, flatten)]
    pub options: Options,
}

/// A session's own settings, kept in its header.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// A short human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The approval mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<protocol::verdict::ApprovalMode>,
    /// Model calls per turn at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Every call sees the workspace read-only, and no tool that writes is offered.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// One event as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Its sequence number: 1, then +1 per record.
    pub seq: Seq,
    /// When it was written, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// What happened.
    pub event: Event,
}

/// The open log of one session, locked against every other writer.
#[derive(Debug)]
pub struct SessionLog {
    id: SessionId,
    path: PathBuf,
    file: Flock<File>,
    next: u64,
    unsynced: bool,
    /// The session's owner: its spill folder is theirs.
    owner: u32,
    /// The store, for the session's summary in its index.
    store: Store,
    /// The summary of everything written, folded as each record is; written to the index at
    /// each sync. `None` once a write failed (the log's length is then unknown here): a
    /// listing rebuilds the summary from the log.
    summary: Option<Entry>,
}

/// The spill directory of the session in `session_dir`, created (0700) if missing; in a root
/// daemon, `owner`'s ([`super::permissions`]), so that the owner's workers can read it.
pub(super) fn spill_in(session_dir: &Path, owner: u32) -> Result<PathBuf, StoreError> {
    let dir = session_dir.join(SPILL_DIR);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&dir)
        .map_err(io_err(&dir))?;
    super::permissions::share_spill(session_dir, &dir, owner).map_err(io_err(&dir))?;
    Ok(dir)
}

/// Now, milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Opens `path` for appending and takes its exclusive lock, or says who has it.
pub(crate) fn lock(path: &Path, id: &SessionId) -> Result<Flock<File>, StoreError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(io_err(path))?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
        if errno == nix::errno::Errno::EWOULDBLOCK {
            StoreError::InUse {
                id: id.as_str().to_owned(),
                path: path.to_path_buf(),
            }
        } else {
            StoreError::Io {
                path: path.to_path_buf(),
                source: errno.into(),
            }
        }
    })
}

impl SessionLog {
    /// A new session in `store`: a fresh random id ([`SessionId::from_random`]), its directory
    /// (0700) and log (0600) created exclusively (a name taken, however unlikely, is skipped), the header written and synced.
    pub fn create(
        store: &Store,
        workspace: &Path,
        model: &str,
        owner_uid: u32,
    ) -> Result<(Self, Header), StoreError> {
        Self::create_with(store, workspace, model, owner_uid, Options::default())
    }

    /// [`SessionLog::create`] with the session's own settings kept in its header.
    pub fn create_with(
        store: &Store,
        workspace: &Path,
        model: &str,
        owner_uid: u32,
        options: Options,
    ) -> Result<(Self, Header), StoreError> {
        // One way to draw the id and make the directory: a pending log's, written at once.
        let pending = super::pending::PendingLog::new(store, workspace, model, owner_uid, options)?;
        let header = pending.header().clone();
        Ok((pending.create()?, header))
    }

    /// Writes the log of `header` in its new directory `dir`, and syncs it and the directory.
    pub(super) fn start(
        store: &Store,
        dir: &Path,
        header: Header,
    ) -> Result<(Self, Header), StoreError> {
        let path = dir.join(LOG_FILE);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err(&path))?;
        let file = lock(&path, &header.id)?;
        let mut log = Self {
            id: header.id.clone(),
            path,
            file,
            next: 1,
            unsynced: false,
            owner: header.owner_uid,
            store: store.clone(),
            summary: None,
        };
        let header_bytes = log.write_line(&header)?;
        log.summary = Some(Entry::new(&header, header_bytes));
        log.sync()?;
        // The new directory entry itself survives a power cut only once its parent is synced.
        File::open(store.root())
            .and_then(|d| d.sync_all())
            .map_err(io_err(store.root()))?;
        Ok((log, header))
    }

    /// Reopens session `id` to go on with it: locks its log, loads it, and cuts off a torn last
    /// line (reported in the loaded warnings) so the next record starts on a line of its own.
    pub fn reopen(store: &Store, id: &SessionId) -> Result<(Self, Loaded), StoreError> {
        let path = store.dir_of(id).join(LOG_FILE);
        if !path.exists() {
            return Err(StoreError::NotFound {
                id: id.as_str().to_owned(),
                dir: store.root().to_path_buf(),
            });
        }
        let file = lock(&path, id)?;
        let loaded = read::load(&path)?;
        if let Some(torn) = &loaded.torn {
            file.set_len(torn.valid_bytes).map_err(io_err(&path))?;
            file.sync_all().map_err(io_err(&path))?;
        }
        let next = loaded.records.last().map_or(1, |r| r.seq.0 + 1);
        let log = Self {
            id: id.clone(),
            path,
            file,
            next,
            unsynced: false,
            owner: loaded.header.owner_uid,
            store: store.clone(),
            summary: Some(super::index::entry_of(&loaded)),
        };
        log.write_summary();
        Ok((log, loaded))
    }

    /// Appends `event` with the next sequence number, in one write; returns that number. Not yet
    /// synced: call [`SessionLog::sync`] at the step's end.
    pub fn append(&mut self, event: &Event) -> Result<Seq, StoreError> {
        let seq = Seq(self.next);
        let record = Record {
            seq,
            unix_ms: now_ms(),
            event: event.clone(),
        };
        let bytes = self.write_line(&record)?;
        if let Some(summary) = &mut self.summary
            && summary.fold(&record, bytes).is_err()
        {
            self.summary = None;
        }
        self.next += 1;
        Ok(seq)
    }

    /// Makes everything appended so far durable (`fdatasync`), if anything was, then brings the
    /// session's summary in the index up to it.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        if self.unsynced {
            self.file.sync_data().map_err(io_err(&self.path))?;
            self.unsynced = false;
            self.write_summary();
        }
        Ok(())
    }

    /// Writes the summary to the index; a failure is only logged: a listing rebuilds it.
    fn write_summary(&self) {
        if let Some(summary) = &self.summary
            && let Err(e) = self.store.write_entry(summary)
        {
            tracing::warn!("the session index could not be updated: {e}");
        }
    }

    /// The session.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sequence number of the newest record (0 before the first).
    pub fn last_seq(&self) -> Seq {
        Seq(self.next - 1)
    }

    /// The session's spill directory, created (0700) on first use; in a root daemon, the
    /// owner's ([`super::permissions`]), so that the owner's workers can read it.
    pub fn spill_dir(&self) -> Result<PathBuf, StoreError> {
        match self.path.parent() {
            Some(session_dir) => spill_in(session_dir, self.owner),
            None => Err(io_err(&self.path)(std::io::ErrorKind::NotFound.into())),
        }
    }

    /// Writes `value` as one line; its length in bytes, newline included.
    fn write_line(&mut self, value: &impl Serialize) -> Result<u64, StoreError> {
        let mut line =
            serde_json::to_vec(value).map_err(|e| io_err(&self.path)(std::io::Error::other(e)))?;
        line.push(b'\n');
        // One write for the whole line (O_APPEND): a crash tears at most this line.
        if let Err(e) = (&*self.file).write_all(&line) {
            self.summary = None;
            return Err(io_err(&self.path)(e));
        }
        self.unsynced = true;
        Ok(line.len() as u64)
    }
}
