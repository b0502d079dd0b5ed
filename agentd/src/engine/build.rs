//! Assembling a session from configuration, once, the same way for every front end: the config
//! file and its policy ([`Base`], loaded once per process), then per session the model, the
//! sandbox with its temp root and spill folder, the worker pool, the dispatcher and the agent
//! ([`build`]). `agent run`, the daemon and the benchmark all come through here.

use crate::agent::approval::Approver;
use crate::agent::dispatch::{Dispatcher, Emit};
use crate::agent::policy_cell::PolicyCell;
use crate::agent::subagent::{Role, Subagents};
use crate::agent::turn::{Agent, Limits};
use crate::config::{AgentSection, ConfigError, ConfigFile};
use crate::engine::journal::Journal;
use crate::providers::{Provider, ProviderError};
use crate::settings::{self, Overrides, ProviderSettings, SettingsError};
use crate::store::StoreError;
use crate::store::log::Record;
use crate::worker::{self, tmp::Owner, tmp::PrivateDir};
use policy::{Policy, PolicyError};
use protocol::event::Event;
use protocol::verdict::{ApprovalMode, Verdict};
use protocol::worker::RunAs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Why a session could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The config file.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The policy in it.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// Which model: a value missing or invalid.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The provider could not be set up.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// No worker binary.
    #[error("cannot find the tool-worker binary beside agent; set AGENTD_TOOL_WORKER to its path")]
    NoWorker,
    /// The session's temp root.
    #[error("cannot create the session's temp dir")]
    TempDir(#[source] crate::worker::tmp::TmpError),
    /// The session's log or spill folder.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session's cgroup (and its user's) could not be made.
    #[error("cannot set up the session's cgroup: {0}")]
    Cgroup(#[source] std::io::Error),
    /// A workspace that holds what the sandbox hides, not allowed.
    #[error(transparent)]
    BroadWorkspace(#[from] crate::workspace_check::BroadWorkspace),
    /// The workspace, as the session's owner sees it.
    #[error("workspace {path}: {why}")]
    Workspace {
        /// The workspace asked for.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

/// What every session of this process is built from, loaded once.
#[derive(Debug)]
pub struct Base {
    /// The config file's sections (all empty without a file).
    pub config: ConfigFile,
    /// Its text (the policy and `[sandbox]` errors quote lines from it).
    pub config_text: String,
    /// Where it was read from.
    pub config_path: Option<PathBuf>,
    /// The policy: the file's `[policy]` over the built-ins; shared by every session built from
    /// this base, and replaced for all of them by [`Base::reload_policy`].
    pub policy: PolicyCell,
    /// The file's `[aggregate]` bounds over this machine's defaults: each session's cgroup, and
    /// its user's, get them.
    pub bounds: crate::worker::aggregate::Bounds,
    /// What no session's workspace may hold, and whether a broad one is allowed: the config's
    /// `[sandbox] allow_broad_workspace` and the config file itself; front ends add their flag
    /// and their own paths (state dir, socket).
    pub guard: crate::workspace_check::Guard,
}

impl Base {
    /// Reads the config file at `path` (none: the built-in policy and no sections); its
    /// aggregate bounds are the process's from now on (`agentd status` tells them).
    pub fn load(path: Option<&Path>) -> Result<Self, BuildError> {
        let base = Self::read(path)?;
        crate::worker::aggregate::configure(base.bounds);
        Ok(base)
    }

    /// [`Base::load`] without making its bounds the process's.
    fn read(path: Option<&Path>) -> Result<Self, BuildError> {
        let machine = crate::worker::aggregate::Machine::read();
        Ok(match path {
            Some(path) => {
                let (config, text) = crate::config::load(path)?;
                let name = path.display().to_string();
                let policy = Policy::from_config(&text, &name)?;
                let bounds = crate::config::AggregateSection::bounds(
                    config.aggregate.as_ref(),
                    &machine,
                    &text,
                    &name,
                )?;
                let guard = crate::workspace_check::Guard {
                    allow: config
                        .sandbox
                        .as_ref()
                        .is_some_and(|s| s.allow_broad_workspace),
                    own: vec![(path.to_path_buf(), "the agent's config file")],
                    ..Default::default()
                };
                Self {
                    guard,
                    config,
                    config_text: text,
                    config_path: Some(path.to_path_buf()),
                    policy: PolicyCell::new(policy),
                    bounds,
                }
            }
            None => Self {
                config: ConfigFile::default(),
                config_text: String::new(),
                config_path: None,
                policy: PolicyCell::new(Policy::builtin()?),
                bounds: crate::worker::aggregate::Bounds::defaults(&machine),
                guard: Default::default(),
            },
        })
    }

    /// Reads the config file again and, if the whole file is valid (every section, and the
    /// policy over the built-ins), replaces the policy of every session built from this base;
    /// else the error, and the policy in force stays. The other sections are read at start only:
    /// a session's sandbox and model are fixed when it is built. Returns the file read.
    pub fn reload_policy(&self) -> Result<Option<PathBuf>, BuildError> {
        let fresh = Base::read(self.config_path.as_deref())?;
        self.policy.replace(fresh.policy.current());
        Ok(self.config_path.clone())
    }

    /// Which model: `[provider]`, then `~/.agents/env` of `HOME`, then the environment, then
    /// `overrides`.
    pub fn settings(&self, overrides: &Overrides) -> Result<ProviderSettings, BuildError> {
        Ok(settings::resolve_layered(
            self.config.provider.as_ref(),
            settings::default_env_file().as_deref(),
            overrides,
        )?)
    }

    /// The provider for `settings`, with the transport's `[provider]` tuning.
    pub fn provider(&self, settings: &ProviderSettings) -> Result<Provider, BuildError> {
        let mut provider = Provider::from_settings(settings)?;
        provider.configure(self.config.provider.as_ref());
        Ok(provider)
    }

    /// The context window: `flag`, else `[provider] context_window`, else the model's own
    /// (from the limits table, set when the session knows its model).
    pub fn window(&self, flag: Option<u64>) -> crate::context::fit::Window {
        let configured = self
            .config
            .provider
            .as_ref()
            .and_then(|p| p.context_window)
            .map(|w| w.get());
        flag.or(configured).map_or_else(
            crate::context::fit::Window::per_model,
            crate::context::fit::Window::new,
        )
    }
}

/// One session's choices, on top of the [`Base`].
#[derive(Debug)]
pub struct Plan {
    /// The workspace, canonical.
    pub workspace: PathBuf,
    /// The model's provider, ready.
    pub provider: Provider,
    /// The model's name.
    pub model: String,
    /// The approval mode.
    pub mode: ApprovalMode,
    /// Who answers asks.
    pub approver: Approver,
    /// Limits of each turn.
    pub limits: Limits,
    /// Workers kept locked down ahead of the next call.
    pub ready_workers: usize,
    /// The session's user's home (`~` in rules, `AGENTS.md`, skills, the tools' `HOME`).
    pub home: Option<PathBuf>,
    /// Whom the workers run as when agentd is root (`None`: as agentd).
    pub run_as: Option<RunAs>,
    /// Where the session's temp root is made.
    pub tmp_parent: PathBuf,
    /// A read-only session: its workers cannot write the workspace, and it is not offered the
    /// tools that only write.
    pub read_only: bool,
}

/// A session's sandbox and temp root, checked and made: everything that can fail on
/// configuration, before the session's log is made.
#[derive(Debug)]
pub struct Prepared {
    /// The session's choices.
    plan: Plan,
    /// The worker binary, found and chosen by us.
    worker_bin: PathBuf,
    /// The sandbox every call of the session gets (the spill folder is added by `build`).
    sandbox: protocol::worker::SandboxSpec,
    /// The session's temp root.
    tmp: PrivateDir,
}

/// A session assembled, not yet started.
#[derive(Debug)]
pub struct Built {
    /// The agent, its dispatcher and pool inside.
    pub agent: Agent,
    /// The session's temp root (each call gets a private dir in it); removed when dropped,
    /// which must come after the agent (the pool's waiting workers live in it).
    pub tmp: PrivateDir,
}

impl Prepared {
    /// The same, with `approver` answering its asks (a daemon session's broker is made with it).
    /// Whatever the mode: a session that starts in `never` may be switched to one that asks.
    pub fn with_approver(mut self, approver: Approver) -> Self {
        self.plan.approver = approver;
        self
    }
}

/// The workspace's identity (device, inode), read with the owner's rights: for a session of
/// another user under a root agentd, a directory that user can reach and owns. Taken in one
/// `stat`, so what is checked is what is pinned; each worker then refuses another directory.
fn workspace_identity(path: &Path, run_as: Option<&RunAs>) -> Result<(u64, u64), BuildError> {
    use std::os::unix::fs::MetadataExt;
    let bad = |why: String| BuildError::Workspace {
        path: path.to_owned(),
        why,
    };
    let meta = crate::agent::owner_files::as_owner(run_as, || std::fs::metadata(path))
        .map_err(|e| bad(e.to_string()))?;
    if !meta.is_dir() {
        return Err(bad("not a directory".into()));
    }
    if let Some(who) = run_as.filter(|_| cross_user(run_as))
        && meta.uid() != who.uid
    {
        return Err(bad(format!(
            "not the session owner's (it belongs to uid {})",
            meta.uid()
        )));
    }
    Ok((meta.dev(), meta.ino()))
}

/// Whether the session's calls run as another user than agentd: a root agentd's session of
/// a user.
fn cross_user(run_as: Option<&RunAs>) -> bool {
    let me = nix::unistd::geteuid();
    run_as.is_some_and(|w| me.is_root() && w.uid != me.as_raw())
}

/// Finds the worker, makes the session's temp root and its sandbox from `plan` and `base`.
pub fn prepare(base: &Base, plan: Plan) -> Result<Prepared, BuildError> {
    // Before anything is made: a workspace that holds what the sandbox hides is refused here,
    // for every front end; one allowed gets its secrets hidden from every call.
    let hidden = crate::workspace_check::check(&plan.workspace, &base.guard, plan.home.as_deref())?;
    let worker_bin = worker::locate_worker().ok_or(BuildError::NoWorker)?;
    let owner = match &plan.run_as {
        Some(who) if nix::unistd::geteuid().is_root() => Owner {
            uid: who.uid,
            gid: who.gid,
        },
        _ => Owner::current(),
    };
    // In the owner's randomly named root: /tmp shows neither who runs sessions nor when.
    let tmp = crate::worker::tmp::roots::session_dir(&plan.tmp_parent, owner)
        .map_err(BuildError::TempDir)?;
    let mut sandbox = worker::default_sandbox(
        plan.workspace.clone(),
        tmp.path().to_owned(),
        plan.home.as_deref(),
    );
    sandbox.network = base.policy.current().network() == Verdict::Allow;
    sandbox.run_as = plan.run_as.clone();
    let identity = workspace_identity(&plan.workspace, plan.run_as.as_ref())?;
    // Pinned where a swap would cross users: a root agentd running another user's session.
    // The same user may replace their workspace (`mv ws ws.old && git clone … ws`), and the
    // pool then serves the next call from the new directory (issue 9); a call cannot do it
    // (the workspace is a mount point, its parent read-only).
    if cross_user(plan.run_as.as_ref()) {
        sandbox.workspace_identity = Some(identity);
    }
    if plan.read_only {
        sandbox.profile = protocol::worker::SandboxProfile::ReadOnly;
    }
    if let (Some(section), Some(path)) = (&base.config.sandbox, &base.config_path) {
        section.apply(&mut sandbox, &base.config_text, &path.display().to_string())?;
    }
    hidden.apply(&mut sandbox);
    // Now that the writable roots are known: what the home's links lead to inside them is
    // read-only to every call (`~/.bashrc -> ~/dotfiles/bashrc`).
    crate::workspace_check::links_protected(&mut sandbox, plan.home.as_deref(), &base.guard)?;
    Ok(Prepared {
        plan,
        worker_bin,
        sandbox,
        tmp,
    })
}

/// Assembles the prepared session whose events go to `journal`; `resumed` is the stored
/// history to go on from.
pub fn build(
    base: &Base,
    prepared: Prepared,
    journal: &Arc<Journal>,
    resumed: Option<&[Record]>,
) -> Result<Built, BuildError> {
    let Prepared {
        plan,
        worker_bin,
        mut sandbox,
        tmp,
    } = prepared;
    // Big outputs are kept whole and spilled to the session's folder, which every call may read.
    let spill = journal.spill_dir()?;
    if let Some(dir) = &spill {
        sandbox.read_paths.push(dir.clone());
        sandbox.limits.output_cap_bytes = crate::agent::spill::SPILL_CAP;
    }
    // The session's cgroup, in its owner's: every call's group is made in it.
    let owner = sandbox
        .run_as
        .as_ref()
        .map_or_else(|| nix::unistd::geteuid().as_raw(), |r| r.uid);
    let group = worker::aggregate::SessionGroup::create(
        worker::cgroup::Layout::detect(),
        owner,
        &base.bounds,
    )
    .map_err(BuildError::Cgroup)?;
    // Subagents: the same model, their own step limit; their time is what the turn has left.
    let subagents = Subagents::new(
        plan.provider.clone(),
        plan.model.clone(),
        Limits {
            max_steps: AgentSection::subagent_max_steps(base.config.agent.as_ref()),
            ..plan.limits.clone()
        },
        worker_bin.clone(),
    );
    let dispatcher = Arc::new(Dispatcher {
        policy: base.policy.clone(),
        mode: crate::agent::mode_cell::ModeCell::new(plan.mode),
        workers: worker::WorkerPool::in_group(worker_bin, sandbox, plan.ready_workers, group),
        home: plan.home,
        approver: Arc::new(plan.approver),
        approvals: Arc::default(),
        session: Default::default(),
        role: Role::Main(Some(Box::new(subagents))),
    });
    if let Some(dir) = spill {
        dispatcher.session.set_spill_dir(dir);
    }
    let emit: Emit = {
        let journal = Arc::clone(journal);
        Arc::new(move |event: Event| {
            journal.emit(event);
        })
    };
    // The owner's AGENTS.md and skills are read with the owner's rights.
    let run_as = dispatcher.workers.sandbox().run_as.clone();
    let mut agent = crate::agent::owner_files::as_owner(run_as.as_ref(), || {
        Agent::new(plan.provider, plan.model, dispatcher, plan.limits, emit)
    });
    if let Some(records) = resumed {
        resume(&mut agent, records);
    }
    Ok(Built { agent, tmp })
}

/// Puts a stored session's history, todo list, what was allowed always, its approval
/// numbering, and the approval mode and model it was switched to, back into `agent`.
fn resume(agent: &mut Agent, records: &[Record]) {
    let switched = crate::agent::resume::switched(records);
    if let Some(mode) = switched.mode {
        agent.dispatcher.mode.set(mode);
    }
    if let Some(model) = &switched.model {
        agent.set_model(model);
    }
    if let Some(system) = agent.system_message().cloned() {
        let (messages, turns) = crate::agent::resume::conversation(system, records);
        agent.resume_from(messages, turns);
    }
    let dispatcher = &agent.dispatcher;
    dispatcher
        .session
        .restore_todos(crate::agent::resume::todos(records));
    let ctx = policy::Context {
        workspace: &dispatcher.workers.sandbox().workspace,
        home: dispatcher.home.as_deref(),
    };
    let approved =
        crate::agent::resume::always_allowed(records, &dispatcher.policy.current(), &ctx);
    dispatcher.approver.restore(&approved);
    // New asks are numbered after the stored ones, so an old id never names a new ask.
    let last = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ApprovalRequested(a) => Some(a.approval.0),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    agent.dispatcher.approvals.store(last, Ordering::Relaxed);
}
