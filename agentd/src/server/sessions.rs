//! The daemon's sessions: those loaded (each a task on the engine, by id) over those kept in the
//! store. A uid sees and drives only its own sessions; root, or a member of the configured admin
//! group, may list (and delete) everyone's. A session that exists but is not yours is "not
//! found", so its id tells you nothing.

use super::connection::Peer;
use super::factory::{Factory, Owner, StartError};
use crate::engine::{SessionHandle, Shutdown};
use crate::store::log::{Header, Options, SessionLog};
use crate::store::{Store, StoreError};
use protocol::control::{CreateSession, ErrorCode, ErrorFrame};
use protocol::ids::SessionId;
use protocol::session::{SessionInfo, SessionState};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// A request that failed: the code and message its client gets.
pub type Refusal = ErrorFrame;

fn refuse(code: ErrorCode, message: impl Into<String>) -> Refusal {
    ErrorFrame::new(code, message)
}

fn not_found(id: &SessionId) -> Refusal {
    refuse(ErrorCode::NotFound, format!("no session {id}"))
}

/// A session loaded in the daemon.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Its handle.
    pub handle: SessionHandle,
    /// Its header: owner, workspace, model.
    pub header: Header,
}

/// The daemon's sessions, and who may see and drive them.
#[derive(Debug)]
pub struct Sessions {
    /// Where sessions are kept.
    store: Store,
    /// The group whose members may list (and delete) everyone's sessions.
    admin_gid: Option<u32>,
    /// How a session is built.
    factory: Factory,
    /// Sessions one uid may keep in the store.
    max_per_uid: usize,
    /// Loaded sessions by id. Never held across an await.
    loaded: Mutex<HashMap<SessionId, Loaded>>,
    /// Held from counting a uid's sessions to making the new one, so two clients creating at
    /// once cannot both pass the limit.
    creating: Mutex<()>,
    /// Triggered when the daemon stops: no session is created or resumed after it.
    shutdown: Shutdown,
}

impl Sessions {
    /// The size of a session's log, bytes (0 if it cannot be read).
    pub fn log_bytes(&self, id: &SessionId) -> u64 {
        std::fs::metadata(self.store.dir_of(id).join(crate::store::log::LOG_FILE))
            .map_or(0, |m| m.len())
    }

    /// Reads the config file again and replaces the policy of every session, loaded or resumed
    /// later, if the file is valid; else the error, and the policy in force stays (SIGHUP).
    pub fn reload_policy(
        &self,
    ) -> Result<Option<std::path::PathBuf>, crate::engine::build::BuildError> {
        self.factory.base.reload_policy()
    }

    /// The sessions of `store`, made by `factory`; members of `admin_gid` (by their primary
    /// group, as `SO_PEERCRED` reports it) may list every user's.
    /// Every session gets its summary in the index first ([`Store::reconcile`]: those written
    /// before the index, or cut off by a crash before theirs), once, here at start: listings
    /// then read the index alone.
    pub fn new(store: Store, admin_gid: Option<u32>, factory: Factory, max_per_uid: usize) -> Self {
        for e in store.reconcile() {
            tracing::warn!("{e}");
        }
        let shutdown = factory.stopping.shutdown.clone();
        Self {
            store,
            admin_gid,
            factory,
            max_per_uid,
            loaded: Mutex::new(HashMap::new()),
            creating: Mutex::new(()),
            shutdown,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Loaded>> {
        // A panic while holding the lock leaves a consistent map behind: go on.
        self.loaded.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `peer` may see everyone's sessions.
    pub fn is_admin(&self, peer: Peer) -> bool {
        peer.uid == 0 || self.admin_gid.is_some_and(|g| g == peer.gid)
    }

    /// Sessions loaded now.
    pub fn loaded_count(&self) -> usize {
        self.lock().len()
    }

    fn closing(&self) -> Result<(), Refusal> {
        if self.shutdown.is_triggered() {
            return Err(refuse(
                ErrorCode::ShuttingDown,
                "agentd is shutting down: connect again once it is back",
            ));
        }
        Ok(())
    }

    /// Loaded session `id` of `peer`. A stopped one of theirs is a conflict that says to
    /// resume it; anyone else's, or none, is not found.
    pub fn get(&self, peer: Peer, id: &SessionId) -> Result<Loaded, Refusal> {
        if let Some(l) = self.lock().get(id).filter(|l| !l.handle.is_stopped()) {
            return if l.header.owner_uid == peer.uid {
                Ok(l.clone())
            } else {
                Err(not_found(id))
            };
        }
        // By the peer's own index: another user's log is not opened to tell.
        match self.store.is_owner(peer.uid, id) {
            true => Err(refuse(
                ErrorCode::Conflict,
                format!("session {id} is stopped: resume it first (resume_session)"),
            )),
            false => Err(not_found(id)),
        }
    }

    /// A new session for `peer`.
    pub fn create(&self, peer: Peer, c: CreateSession) -> Result<SessionInfo, Refusal> {
        self.closing()?;
        let workspace = workspace_of(peer, &c.workspace)?;
        let _one_at_a_time = self.creating.lock().unwrap_or_else(|e| e.into_inner());
        // The peer's own index, not every user's logs, and their sessions not written yet:
        // what `agent sessions` shows them, and what they can remove.
        let theirs = self.store.count_of(peer.uid) + self.pending_of(peer.uid);
        if theirs >= self.max_per_uid {
            return Err(refuse(
                ErrorCode::Forbidden,
                format!(
                    "you keep {theirs} sessions, the most one user may (max_sessions_per_uid = {}): remove some with `agent sessions rm ID…` or `agent sessions prune --older-than 7d` (`agent sessions` lists them)",
                    self.max_per_uid
                ),
            ));
        }
        let options = Options {
            title: c.title,
            approval: Some(c.approval),
            max_steps: c.max_steps,
            read_only: c.read_only,
        };
        let owner = Owner {
            uid: peer.uid,
            gid: peer.gid,
        };
        let (handle, header) = self
            .factory
            .create(&self.store, owner, &workspace, c.model, options)
            .map_err(start_refusal)?;
        self.insert(handle, header)
    }

    /// `uid`'s loaded sessions that have had no message, and so are on no disk yet.
    fn pending_of(&self, uid: u32) -> usize {
        self.lock()
            .values()
            .filter(|l| l.header.owner_uid == uid && l.handle.is_pending())
            .count()
    }

    /// Stops and forgets session `id` if it has had no message and no client watches it any
    /// more (the last attached one left): it was never written, so nothing of it is lost.
    pub async fn forget_if_unused(&self, id: &SessionId) {
        let loaded = self.lock().get(id).cloned();
        if let Some(l) = loaded
            && l.handle.is_pending()
            && l.handle.watchers() == 0
        {
            l.handle.stop().await;
            self.lock().remove(id);
        }
    }

    /// Loads stopped session `id` of `peer` from its log; a loaded one is left as it is.
    pub fn resume(&self, peer: Peer, id: &SessionId) -> Result<(), Refusal> {
        self.closing()?;
        if self.get(peer, id).is_ok() {
            return Ok(());
        }
        if !self.store.is_owner(peer.uid, id) {
            return Err(not_found(id));
        }
        let (log, loaded) = SessionLog::reopen(&self.store, id).map_err(|e| match e {
            StoreError::InUse { .. } => refuse(
                ErrorCode::Conflict,
                format!("session {id} is in use by another process"),
            ),
            e => refuse(ErrorCode::Internal, e.to_string()),
        })?;
        let path = self.store.dir_of(id).join(crate::store::log::LOG_FILE);
        for warning in loaded.warnings(&path) {
            tracing::warn!("{warning}");
        }
        let handle = self
            .factory
            .resume(&loaded.header, log, &loaded.records, peer.gid)
            .map_err(start_refusal)?;
        self.insert(handle, loaded.header).map(|_| ())
    }

    fn insert(&self, handle: SessionHandle, header: Header) -> Result<SessionInfo, Refusal> {
        let id = handle.id().clone();
        let loaded = Loaded { handle, header };
        let info = info_of(&loaded);
        self.lock().insert(id, loaded);
        Ok(info)
    }

    /// Session `id` of `peer` (or any, for an admin) stopped if loaded and idle, then deleted.
    pub async fn delete(&self, peer: Peer, id: &SessionId) -> Result<(), Refusal> {
        let loaded = self.lock().get(id).cloned();
        // Not written yet (no message): stopped and forgotten, nothing on disk to remove.
        if let Some(l) = &loaded
            && l.handle.is_pending()
            && (l.header.owner_uid == peer.uid || self.is_admin(peer))
        {
            l.handle.stop().await;
            self.lock().remove(id);
            return Ok(());
        }
        // Theirs by their own index; an admin's may be anyone's, by the log's header.
        let visible = self.store.is_owner(peer.uid, id)
            || (self.is_admin(peer) && self.store.header(id).is_ok());
        if !visible {
            return Err(not_found(id));
        }
        if let Some(l) = loaded {
            if matches!(
                l.handle.state(),
                SessionState::Running | SessionState::WaitingApproval
            ) {
                return Err(refuse(
                    ErrorCode::Conflict,
                    format!("session {id} is running a turn; interrupt it first"),
                ));
            }
            l.handle.stop().await;
            self.lock().remove(id);
        }
        match self.store.delete(id) {
            Ok(()) => Ok(()),
            Err(StoreError::InUse { .. }) => Err(refuse(
                ErrorCode::Conflict,
                format!("session {id} is running; stop it first"),
            )),
            Err(e) => Err(refuse(ErrorCode::Internal, e.to_string())),
        }
    }

    /// `peer`'s sessions (everyone's with `all_users`, for an admin), oldest first: from the
    /// index of the peer's uid alone (every uid's for `all_users`), read off the async runtime.
    pub async fn list(&self, peer: Peer, all_users: bool) -> Result<Vec<SessionInfo>, Refusal> {
        if all_users && !self.is_admin(peer) {
            return Err(refuse(
                ErrorCode::Forbidden,
                "only root or the admin group may list every user's sessions",
            ));
        }
        let store = self.store.clone();
        let (found, errors) = tokio::task::spawn_blocking(move || match all_users {
            true => store.list_all(),
            false => store.list_of(peer.uid),
        })
        .await
        .map_err(|e| refuse(ErrorCode::Internal, format!("listing failed: {e}")))?;
        for e in errors {
            tracing::warn!("{e}");
        }
        let loaded = self.lock();
        // Those not written yet (no message) are the peer's too: listed, so that what counts
        // against their limit is what they see.
        let pending = loaded
            .values()
            .filter(|l| l.handle.is_pending() && !l.handle.is_stopped())
            .filter(|l| l.header.owner_uid == peer.uid || all_users)
            .map(|l| SessionInfo {
                // Cut as a kept session's title is in its summary.
                title: l
                    .header
                    .options
                    .title
                    .as_deref()
                    .map(crate::store::summary::cut),
                ..info_of(l)
            });
        let mut sessions: Vec<SessionInfo> = found
            .iter()
            .filter(|s| all_users || s.owner_uid == peer.uid)
            .filter_map(|s| {
                let id = SessionId::new(s.id.clone()).ok()?;
                Some(match loaded.get(&id) {
                    Some(l) => SessionInfo {
                        title: s.title.clone(),
                        last_activity_unix_ms: s.last_activity_unix_ms,
                        ..info_of(l)
                    },
                    None => SessionInfo {
                        id,
                        owner_uid: s.owner_uid,
                        workspace: s.workspace.clone(),
                        model: s.model.clone(),
                        state: SessionState::Stopped,
                        created_unix_ms: s.created_unix_ms,
                        last_seq: protocol::ids::Seq(s.last_seq),
                        title: s.title.clone(),
                        approval: s.approval.unwrap_or_default(),
                        last_activity_unix_ms: s.last_activity_unix_ms,
                    },
                })
            })
            .chain(pending)
            .collect();
        sessions.sort_by_key(|s| s.created_unix_ms);
        Ok(sessions)
    }

    /// Stops every session: each running turn finishes its step within the grace period (then
    /// is interrupted), each log is synced and closed, each pool's workers are killed. Waits
    /// for them, at most the grace period and a little more.
    pub async fn stop_all(&self) {
        self.shutdown.trigger();
        let handles: Vec<SessionHandle> = self.lock().values().map(|l| l.handle.clone()).collect();
        let all = futures_util::future::join_all(handles.iter().map(SessionHandle::stopped));
        let bound = self.factory.stopping.grace + Duration::from_secs(5);
        if tokio::time::timeout(bound, all).await.is_err() {
            tracing::error!("some sessions did not stop within {bound:?}");
        }
        self.lock().clear();
    }
}

/// What a loaded session is now.
pub fn info_of(l: &Loaded) -> SessionInfo {
    SessionInfo {
        id: l.header.id.clone(),
        owner_uid: l.header.owner_uid,
        workspace: l.header.workspace.clone(),
        model: l.handle.model(),
        state: l.handle.state(),
        created_unix_ms: l.header.created_unix_ms,
        last_seq: l.handle.last_seq(),
        title: l.header.options.title.clone(),
        approval: l.handle.approval_mode(),
        // Not known here: the listing takes it from the index; 0 says "not written yet".
        last_activity_unix_ms: 0,
    }
}

/// The workspace a create asks for: an existing directory, canonical, that is the peer's own
/// (root may use any).
fn workspace_of(peer: Peer, asked: &std::path::Path) -> Result<std::path::PathBuf, Refusal> {
    use std::os::unix::fs::MetadataExt;
    if !asked.is_absolute() {
        return Err(refuse(
            ErrorCode::BadRequest,
            format!("workspace {} is not an absolute path", asked.display()),
        ));
    }
    let bad = |why: String| refuse(ErrorCode::BadRequest, why);
    // Resolved with the peer's own rights: as root, the answers (exists, not a directory, whose
    // it is, where a symlink leads) would tell a user about paths they cannot see.
    let who = protocol::worker::RunAs {
        uid: peer.uid,
        gid: peer.gid,
        groups: Vec::new(),
    };
    let (path, meta) = crate::agent::owner_files::as_owner(Some(&who), || {
        let path = asked.canonicalize()?;
        let meta = std::fs::metadata(&path)?;
        Ok::<_, std::io::Error>((path, meta))
    })
    .map_err(|e| bad(format!("workspace {}: {e}", asked.display())))?;
    if !meta.is_dir() {
        return Err(bad(format!(
            "workspace {} is not a directory",
            path.display()
        )));
    }
    if peer.uid != 0 && meta.uid() != peer.uid {
        return Err(refuse(
            ErrorCode::Forbidden,
            format!(
                "workspace {} is not yours (it belongs to uid {})",
                path.display(),
                meta.uid()
            ),
        ));
    }
    Ok(path)
}

fn start_refusal(e: StartError) -> Refusal {
    let code = match &e {
        StartError::Store(_) => ErrorCode::Internal,
        StartError::Build(_) => ErrorCode::BadRequest,
    };
    // The whole chain: "cannot create the session's temp dir: …".
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    refuse(code, message)
}
