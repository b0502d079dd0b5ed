//! Daemon sessions built on the engine: the model from the daemon's settings (a client may name
//! another), the owner's home, workers that run as the owner when agentd is root, client
//! approvals, and the daemon's shutdown token.

use crate::agent::approval::Approver;
use crate::agent::turn::Limits;
use crate::engine::approvals::Broker;
use crate::engine::build::{self, Base, BuildError, Plan};
use crate::engine::journal::Journal;
use crate::engine::{SessionHandle, Stopping};
use crate::settings::Overrides;
use crate::store::log::{Header, Options, Record, SessionLog};
use crate::store::pending::PendingLog;
use crate::store::{Store, StoreError};
use protocol::verdict::ApprovalMode;
use protocol::worker::RunAs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Why a session could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Configuration: the model, the policy, the sandbox, the worker.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The session's log.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Who a session belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// Their uid.
    pub uid: u32,
    /// Their primary gid.
    pub gid: u32,
}

/// What daemon sessions are made from.
#[derive(Debug)]
pub struct Factory {
    /// The config file and its policy, loaded at start.
    pub base: Base,
    /// How long an ask waits with no client attached before it is denied.
    pub approval_wait: Duration,
    /// How a session's turn ends when the daemon stops.
    pub stopping: Stopping,
    /// Workers kept locked down per session, ahead of its next call.
    pub ready_workers: usize,
}

impl Factory {
    /// A new session of `owner` in `workspace` (canonical), kept in `store` from its first
    /// message on ([`PendingLog`]); returns its handle.
    pub fn create(
        &self,
        store: &Store,
        owner: Owner,
        workspace: &Path,
        model: Option<String>,
        options: Options,
    ) -> Result<(SessionHandle, Header), StartError> {
        let (plan, model) = self.plan(owner, workspace, model, &options)?;
        let prepared = build::prepare(&self.base, plan)?;
        let pending = PendingLog::new(store, workspace, &model, owner.uid, options)?;
        let header = pending.header().clone();
        let handle = self.start(prepared, Journal::pending(pending), None)?;
        Ok((handle, header))
    }

    /// Session `log` again (reopened, its `records` loaded), as it was created.
    pub fn resume(
        &self,
        header: &Header,
        log: SessionLog,
        records: &[Record],
        gid: u32,
    ) -> Result<SessionHandle, StartError> {
        let owner = Owner {
            uid: header.owner_uid,
            gid,
        };
        let (plan, _) = self.plan(
            owner,
            &header.workspace,
            Some(header.model.clone()),
            &header.options,
        )?;
        let prepared = build::prepare(&self.base, plan)?;
        let journal = Journal::new(log.id().clone(), Some(log));
        Ok(self.start(prepared, journal, Some(records))?)
    }

    fn start(
        &self,
        prepared: build::Prepared,
        journal: Journal,
        records: Option<&[Record]>,
    ) -> Result<SessionHandle, BuildError> {
        let journal = Arc::new(journal);
        let broker = Broker::new(self.approval_wait);
        let built = build::build(
            &self.base,
            prepared.with_approver(Approver::Clients(Arc::clone(&broker))),
            &journal,
            records,
        )?;
        Ok(crate::engine::start(
            built,
            journal,
            Some(broker),
            self.stopping.clone(),
        ))
    }

    /// The plan of a session of `owner`, and the model it talks to.
    fn plan(
        &self,
        owner: Owner,
        workspace: &Path,
        model: Option<String>,
        options: &Options,
    ) -> Result<(Plan, String), BuildError> {
        let settings = self.base.settings(&Overrides {
            provider: None,
            base_url: None,
            model,
        })?;
        let provider = self.base.provider(&settings)?;
        let user = nix::unistd::User::from_uid(owner.uid.into()).ok().flatten();
        let root = nix::unistd::geteuid().is_root();
        let run_as = (root && owner.uid != 0).then(|| run_as(owner, user.as_ref()));
        let limits = Limits {
            max_steps: options.max_steps.unwrap_or(Limits::default().max_steps),
            window: self.base.window(None),
            ..Limits::default()
        };
        let plan = Plan {
            workspace: workspace.to_path_buf(),
            provider,
            model: settings.model.clone(),
            mode: options.approval.unwrap_or(ApprovalMode::OnRisk),
            // Set when the session starts: the broker is the session's own.
            approver: Approver::Nobody,
            limits,
            ready_workers: self.ready_workers,
            home: user.map(|u| u.dir).or_else(home_of_daemon),
            run_as,
            tmp_parent: std::env::temp_dir(),
            read_only: options.read_only,
        };
        Ok((plan, settings.model))
    }
}

fn home_of_daemon() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

/// The owner's identity for their workers: uid, primary gid, and their groups.
fn run_as(owner: Owner, user: Option<&nix::unistd::User>) -> RunAs {
    let gid = user.map_or(owner.gid, |u| u.gid.as_raw());
    let groups = user
        .and_then(|u| {
            let name = std::ffi::CString::new(u.name.as_bytes()).ok()?;
            nix::unistd::getgrouplist(&name, u.gid).ok()
        })
        .map(|g| g.into_iter().map(|g| g.as_raw()).collect())
        .unwrap_or_else(|| vec![gid]);
    RunAs {
        uid: owner.uid,
        gid,
        groups,
    }
}
