//! Where `agent sessions` finds the sessions: a running daemon (which lists, and deletes, what
//! counts against the user's limit there — its sessions not written yet too), or the state
//! directory of in-process sessions, read and changed directly.

use super::super::client::{Client, ClientError};
use crate::store::Store;
use crate::store::list::Status;
use anyhow::{Context as _, Result};
use protocol::control::{DeleteSession, Request};
use protocol::ids::SessionId;
use std::path::PathBuf;

/// One session, as `agent sessions` shows and weighs it.
#[derive(Debug, Clone)]
pub struct Row {
    /// Its id.
    pub id: String,
    /// Where it stands, in words.
    pub state: String,
    /// When it was last written to (0: never, it has had no message).
    pub last_activity_unix_ms: u64,
    /// Where it works.
    pub workspace: PathBuf,
    /// Its title, or its first message.
    pub title: Option<String>,
    /// Whether it has had no message (`prune --empty` removes it).
    pub empty: bool,
}

/// The sessions of this user, somewhere.
#[derive(Debug)]
pub enum Source {
    /// A running daemon.
    Daemon {
        /// Its socket (for messages).
        socket: PathBuf,
        /// The connection.
        client: Client,
    },
    /// A state directory.
    Store(Store),
}

impl Source {
    /// Where the sessions are, in words.
    pub fn name(&self) -> String {
        match self {
            Source::Daemon { socket, .. } => format!("agentd at {}", socket.display()),
            Source::Store(store) => store.root().display().to_string(),
        }
    }

    /// This user's sessions, newest activity first, and what could not be read.
    pub async fn list(&mut self) -> Result<(Vec<Row>, Vec<String>)> {
        match self {
            Source::Daemon { client, socket } => {
                let list = client
                    .list(false)
                    .await
                    .with_context(|| format!("agentd at {}", socket.display()))?;
                let mut rows: Vec<Row> = list
                    .into_iter()
                    .map(|s| Row {
                        empty: s.last_activity_unix_ms == 0 || s.last_seq.0 == 0,
                        id: s.id.as_str().to_owned(),
                        state: format!("{:?}", s.state).to_lowercase(),
                        last_activity_unix_ms: s.last_activity_unix_ms,
                        workspace: s.workspace,
                        title: s.title,
                    })
                    .collect();
                rows.sort_by_key(|r| std::cmp::Reverse(r.last_activity_unix_ms));
                Ok((rows, Vec::new()))
            }
            Source::Store(store) => {
                let uid = nix::unistd::geteuid().as_raw();
                let (sessions, errors) = store.list();
                let rows = sessions
                    .into_iter()
                    .filter(|s| s.owner_uid == uid)
                    .map(|s| Row {
                        empty: s.status == Status::New || s.last_seq == 0,
                        state: s.status.to_string(),
                        id: s.id,
                        last_activity_unix_ms: s.last_activity_unix_ms,
                        workspace: s.workspace,
                        title: s.title,
                    })
                    .collect();
                Ok((rows, errors.iter().map(ToString::to_string).collect()))
            }
        }
    }

    /// Removes session `id`: its log, its spill, its summary (a daemon stops it first if it
    /// is loaded and idle). A session running a turn is refused.
    pub async fn remove(&mut self, id: &str) -> Result<(), String> {
        let id = SessionId::new(id).map_err(|e| format!("{id:?} is not a session id: {e}"))?;
        match self {
            Source::Daemon { client, .. } => client
                .ask(Request::DeleteSession(DeleteSession { session: id }))
                .await
                .map(drop)
                .map_err(|e| match e {
                    ClientError::Refused(m) | ClientError::Connection(m) => m,
                }),
            Source::Store(store) => {
                let uid = nix::unistd::geteuid().as_raw();
                match store.header(&id) {
                    Ok(h) if h.owner_uid == uid => {}
                    Ok(_) | Err(crate::store::StoreError::NotFound { .. }) => {
                        return Err(format!("no session {id} in {}", store.root().display()));
                    }
                    // A log that cannot be read is still removed, if the directory is theirs.
                    Err(e) => {
                        use std::os::unix::fs::MetadataExt;
                        let dir = std::fs::symlink_metadata(store.dir_of(&id));
                        if !dir.is_ok_and(|m| m.is_dir() && m.uid() == uid) {
                            return Err(e.to_string());
                        }
                    }
                }
                store.delete(&id).map_err(|e| match e {
                    crate::store::StoreError::InUse { .. } => {
                        format!("session {id} is open in another process: leave it there first")
                    }
                    e => e.to_string(),
                })
            }
        }
    }
}
