//! A session not written yet: a session's log is written at its first user message, so a REPL
//! opened and left, or a daemon session created and never used, is nothing to list, to count
//! against the per-user limit, or to delete.
//!
//! Its id is drawn at once, as a kept session's is, so clients can name it from the start, and
//! its directory is made then (0700, exclusively) and held: its spill folder must exist when the
//! session's sandbox is set up, before any message. A directory without a log is no session —
//! listings and the index look at logs only — and it is removed when the session ends unwritten
//! (this value dropped). A process killed before then leaves it behind, empty but for an empty
//! `spill/`; nothing reads it.

use super::log::{Header, Options, SessionLog, now_ms, spill_in};
use super::{FORMAT_VERSION, Store, StoreError, io_err};
use protocol::ids::SessionId;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

/// A session's log not written yet.
#[derive(Debug)]
pub struct PendingLog {
    /// The store it will be written in.
    store: Store,
    /// Its header, written first.
    header: Header,
    /// Its directory, made and held until the log is written or the session ends.
    dir: PathBuf,
    /// The log was written: the directory is the session's now, and stays.
    written: bool,
}

impl PendingLog {
    /// A new session of `owner_uid` in `store`, not written yet: its id drawn, its directory
    /// made (a name taken, however unlikely, is skipped).
    pub fn new(
        store: &Store,
        workspace: &std::path::Path,
        model: &str,
        owner_uid: u32,
        options: Options,
    ) -> Result<Self, StoreError> {
        let (id, dir) = loop {
            // Unguessable: the id is all another user would need to name the session.
            let id = crate::random::bytes()
                .map(SessionId::from_random)
                .map_err(io_err(store.root()))?;
            let dir = store.dir_of(&id);
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break (id, dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err(&dir)(e)),
            }
        };
        let header = Header {
            agentd_session: FORMAT_VERSION,
            id,
            workspace: workspace.to_path_buf(),
            model: model.to_owned(),
            owner_uid,
            created_unix_ms: now_ms(),
            options,
        };
        Ok(Self {
            store: store.clone(),
            header,
            dir,
            written: false,
        })
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.header.id
    }

    /// The header it will be written with.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The session's spill folder, made now (its sandbox reads it from the start).
    pub fn spill_dir(&self) -> Result<PathBuf, StoreError> {
        spill_in(&self.dir, self.header.owner_uid)
    }

    /// Writes the session's log, with its header, in its directory.
    pub fn create(mut self) -> Result<SessionLog, StoreError> {
        let (log, _) = SessionLog::start(&self.store, &self.dir, self.header.clone())?;
        self.written = true;
        Ok(log)
    }
}

impl Drop for PendingLog {
    /// A session ending unwritten takes its directory with it.
    fn drop(&mut self) {
        if !self.written {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
