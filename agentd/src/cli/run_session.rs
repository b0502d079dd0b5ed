//! The session `agent run` keeps on disk: created in the store, or reopened with `--resume`.
//! (Its events are appended, numbered and synced by the engine's journal.)

use crate::store::log::{Record, SessionLog};
use crate::store::pending::PendingLog;
use crate::store::{Store, StoreError};
use anyhow::{Context as _, Result};
use protocol::ids::SessionId;
use std::path::{Path, PathBuf};

/// A session reopened to go on with.
#[derive(Debug)]
pub struct Reopened {
    /// Its id.
    pub id: SessionId,
    /// Where it works.
    pub workspace: PathBuf,
    /// Its log, locked against other writers.
    pub log: SessionLog,
    /// Its events so far.
    pub records: Vec<Record>,
}

/// The store under `dir`, else the user's default; `None` (with a warning) when there is
/// neither a `--state-dir` nor a home to keep sessions in.
pub fn store(dir: Option<&Path>) -> Result<Option<Store>> {
    let Some(dir) = dir.map(Path::to_path_buf).or_else(Store::default_dir) else {
        eprintln!(
            "agent: no HOME or XDG_STATE_HOME: this session is not kept (pass --state-dir DIR)"
        );
        return Ok(None);
    };
    Ok(Some(Store::open(&dir)?))
}

/// Reopens session `id` of `store`.
pub fn reopen(store: Option<&Store>, id: &str) -> Result<Reopened> {
    let store = store.context("--resume needs a state directory (--state-dir DIR)")?;
    let id = SessionId::new(id).map_err(|e| anyhow::anyhow!("--resume {id:?}: {e}"))?;
    let (log, loaded) = SessionLog::reopen(store, &id)?;
    let path = store.dir_of(&id).join(crate::store::log::LOG_FILE);
    for warning in loaded.warnings(&path) {
        eprintln!("agent: {warning}");
    }
    Ok(Reopened {
        id,
        workspace: loaded.header.workspace,
        log,
        records: loaded.records,
    })
}

/// A new session in `store`, if there is one.
pub fn create(
    store: Option<&Store>,
    workspace: &Path,
    model: &str,
) -> Result<Option<SessionLog>, StoreError> {
    let Some(store) = store else {
        return Ok(None);
    };
    let uid = nix::unistd::geteuid().as_raw();
    let (log, _) = SessionLog::create(store, workspace, model, uid)?;
    Ok(Some(log))
}

/// A new session in `store`, if there is one, written at its first message ([`PendingLog`]):
/// a REPL opened and left keeps nothing.
pub fn pending(
    store: Option<&Store>,
    workspace: &Path,
    model: &str,
) -> Result<Option<PendingLog>, StoreError> {
    let Some(store) = store else {
        return Ok(None);
    };
    let uid = nix::unistd::geteuid().as_raw();
    PendingLog::new(store, workspace, model, uid, Default::default()).map(Some)
}
