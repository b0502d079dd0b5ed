//! Workers started and locked down ahead of their call, to take spawn and lockdown off the
//! latency of a tool call.
//!
//! A session's calls share one sandbox spec but for the per-call temp dir and timeout. So the pool
//! keeps up to `size` workers that have already been spawned, put in their cgroup, sent the spec
//! with a temp dir of their own and have answered `ready`: they are locked down (Landlock, seccomp,
//! PID namespace, no capabilities) and wait for their one request, which they have not seen. A
//! call takes one, sends the request (with the call's shorter timeout, if any) and the worker is
//! gone after its result, exactly as a fresh one. The pool is refilled in the background.
//!
//! What stays true: every worker serves exactly one call; its temp dir is its own (a
//! [`PrivateDir`]: random name, 0700, owned by the uid the worker runs as) and removed with it; a
//! waiting worker that is no longer fresh — it died, or the workspace it entered was renamed away
//! and another directory put at its path — is never used (the call starts a fresh one); when the background
//! start fails, the pool stops refilling and calls start their own worker, so the error is the
//! call's to report, not a loop of failing spawns. Waiting workers are the supervisor's processes,
//! not any call's: they are killed (and their cgroups and temp dirs removed) when the pool is
//! dropped.
//!
//! Mind `PR_SET_PDEATHSIG`: it fires when the *thread* that spawned the worker exits. Workers are
//! spawned from tokio tasks, so from runtime threads that live as long as the runtime.

use super::aggregate::SessionGroup;
use super::protect::Baseline;
use super::spawn::{ProtectedCheck, ReadyWorker, WorkerError, start_with};
use super::tmp::{Owner, PrivateDir};
use protocol::worker::{SandboxSpec, ToolRequest, ToolResult};
use std::collections::VecDeque;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// Workers ready for the calls of one sandbox.
#[derive(Debug)]
pub struct WorkerPool {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    worker: PathBuf,
    /// The spec every call gets; its `tmp_dir` is the root under which each worker gets its own.
    template: SandboxSpec,
    /// The protected paths the session began with, compared after every call.
    baseline: Arc<Baseline>,
    size: usize,
    /// The session's cgroup, which every call's is made in.
    group: Option<Arc<SessionGroup>>,
    state: Mutex<State>,
    /// Signalled whenever a background start ends.
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    ready: VecDeque<Warm>,
    starting: usize,
    /// A background start failed: stop refilling until a call's own start succeeds.
    broken: bool,
}

/// A ready worker, the temp dir it was locked down with, and what it was started against.
#[derive(Debug)]
struct Warm {
    worker: ReadyWorker,
    tmp: PrivateDir,
    basis: Basis,
}

/// What a worker was started against, looked at again when a call would take it: a warm worker
/// is fresh only while it still matches. (The protected paths it made read-only are in its own
/// report; [`Warm::staleness`] compares them with those of now.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Basis {
    /// Device and inode of the workspace, taken *before* the worker was started: the worker
    /// enters the workspace (and Landlock grants it) by path at lockdown, so it holds the
    /// directory the path named then. If the path names another directory at call time
    /// (`mv ws ws.old && mkdir ws`), the worker would run in the old one. (Taken before the
    /// start, a swap during the start can only make a worker look stale, never fresh.)
    workspace: Option<(u64, u64)>,
}

impl Basis {
    /// The basis as things are now.
    fn now(template: &SandboxSpec) -> Self {
        Basis {
            workspace: std::fs::metadata(&template.workspace)
                .ok()
                .map(|m| (m.dev(), m.ino())),
        }
    }
}

/// Why a waiting worker may not serve a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stale {
    /// It died while waiting.
    Died,
    /// The workspace path names another directory than the one the worker entered.
    WorkspaceReplaced,
    /// A protected path exists that the worker did not make read-only.
    Unprotected,
}

impl Warm {
    /// `None` if this worker may serve a call made now (`now` is [`Basis::now`], `protected` the
    /// protected paths that exist now), else why not. A protected path created after the worker
    /// locked down (`git init` in an earlier call) would be writable to it.
    fn staleness(&mut self, now: &Basis, protected_now: &[PathBuf]) -> Option<Stale> {
        if !self.worker.is_alive() {
            return Some(Stale::Died);
        }
        if self.basis.workspace.is_none() || self.basis.workspace != now.workspace {
            return Some(Stale::WorkspaceReplaced);
        }
        let report = self.worker.lockdown();
        if protected_now.iter().any(|p| !report.protected.contains(p)) {
            return Some(Stale::Unprotected);
        }
        // A protected file replaced by a rename since the worker mounted it (a `git init` of an
        // earlier call still writing its config while this worker locked down) left the
        // worker's namespace without that read-only mount: the path there is the new, writable
        // file.
        let replaced = report
            .protected
            .iter()
            .zip(&report.protected_ids)
            .any(|(p, id)| std::fs::metadata(p).map_or(true, |m| (m.dev(), m.ino()) != *id));
        if replaced {
            return Some(Stale::Unprotected);
        }
        None
    }
}

impl WorkerPool {
    /// A pool of up to `size` ready workers (0: every call starts its own) for calls in
    /// `template`'s sandbox. `template.tmp_dir` is the directory under which each call gets its
    /// own temp dir. Starts nothing until [`WorkerPool::warm_up`] or the first call.
    pub fn new(worker: PathBuf, template: SandboxSpec, size: usize) -> Self {
        Self::in_group(worker, template, size, None)
    }

    /// [`WorkerPool::new`] whose calls' cgroups are made in the session's `group`.
    pub fn in_group(
        worker: PathBuf,
        template: SandboxSpec,
        size: usize,
        group: Option<Arc<SessionGroup>>,
    ) -> Self {
        WorkerPool {
            inner: Arc::new(Inner {
                worker,
                baseline: Arc::new(Baseline::now(&template)),
                template,
                size,
                group,
                state: Mutex::new(State::default()),
                changed: Notify::new(),
            }),
        }
    }

    /// The sandbox every call gets (its `tmp_dir` is the root of the per-call temp dirs).
    pub fn sandbox(&self) -> &SandboxSpec {
        &self.inner.template
    }

    /// The session's cgroup its calls are made in.
    pub fn group(&self) -> Option<Arc<SessionGroup>> {
        self.inner.group.clone()
    }

    /// Starts workers in the background until `size` are ready or starting. Needs a tokio runtime;
    /// outside one it does nothing.
    pub fn warm_up(&self) {
        Inner::refill(&self.inner);
    }

    /// How many workers are ready now.
    pub fn ready(&self) -> usize {
        self.inner.lock().ready.len()
    }

    /// Waits until no background start, and no worker's exit left to a task, is in flight (for
    /// benchmarks and tests).
    pub async fn settled(&self) {
        super::spawn::teardowns_settled().await;
        loop {
            let changed = self.inner.changed.notified();
            if self.inner.lock().starting == 0 {
                return;
            }
            changed.await;
        }
    }

    /// Runs one call in a ready worker, or in one started for it when none is ready; then refills
    /// the pool in the background. `timeout_ms` may shorten the sandbox's timeout.
    pub async fn run(
        &self,
        tool: ToolRequest,
        timeout_ms: Option<u64>,
        on_output: impl FnMut(&str),
    ) -> Result<ToolResult, WorkerError> {
        let warm = self.inner.take();
        Inner::refill(&self.inner);
        let Warm { worker, tmp, .. } = match warm {
            Some(warm) => warm,
            None => {
                let warm = self.inner.start_one(ProtectedCheck::AtLockdown).await?;
                self.inner.lock().broken = false;
                warm
            }
        };
        let result = worker.run_detached(tool, timeout_ms, on_output).await;
        // Removing what the call left can take the kernel seconds (a file of many extents):
        // not on a runtime thread, which other sessions' calls and Ctrl-C need. A runtime being
        // shut down waits for its blocking tasks, so nothing is left behind at exit.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || drop(tmp))),
            Err(_) => drop(tmp),
        }
        result
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a consistent queue behind; keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The oldest ready worker that is still fresh; stale ones are discarded (killed, their
    /// temp dirs removed).
    fn take(&self) -> Option<Warm> {
        let now = Basis::now(&self.template);
        let protected_now =
            tool_worker::lockdown::mounts::view::protected_now(&self.baseline.spec(&self.template));
        let mut state = self.lock();
        while let Some(mut warm) = state.ready.pop_front() {
            match warm.staleness(&now, &protected_now) {
                None => return Some(warm),
                Some(Stale::Died) => {
                    tracing::warn!("a waiting tool-worker died before its call; discarded");
                }
                Some(Stale::WorkspaceReplaced) => tracing::warn!(
                    "the workspace {} is another directory than when a waiting tool-worker entered it; the worker is discarded",
                    self.template.workspace.display()
                ),
                Some(Stale::Unprotected) => tracing::info!(
                    "a protected path was created after a waiting tool-worker locked down; a fresh worker serves the call"
                ),
            }
        }
        None
    }

    fn refill(this: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut state = this.lock();
        if state.broken {
            return;
        }
        let want = this.size.saturating_sub(state.ready.len() + state.starting);
        state.starting += want;
        drop(state);
        for _ in 0..want {
            let inner = Arc::clone(this);
            runtime.spawn(async move {
                let started = inner.start_one(ProtectedCheck::AtTake).await;
                let mut state = inner.lock();
                state.starting = state.starting.saturating_sub(1);
                match started {
                    Ok(warm) => state.ready.push_back(warm),
                    Err(e) => {
                        tracing::warn!("cannot start a tool-worker ahead of its call: {e}");
                        state.broken = true;
                    }
                }
                drop(state);
                inner.changed.notify_waiters();
            });
        }
    }

    /// Starts one worker in a temp dir of its own and waits for it to be ready; its protected
    /// paths are compared with those that exist as `check` says.
    async fn start_one(&self, check: ProtectedCheck) -> Result<Warm, WorkerError> {
        let root = &self.template.tmp_dir;
        let tmp = PrivateDir::create(root, "call-", Owner::of(&self.template)).map_err(|e| {
            WorkerError::TempDir {
                path: root.clone(),
                source: e.into(),
            }
        })?;
        let basis = Basis::now(&self.template);
        let spec = call_spec(&self.template, tmp.path());
        let worker = start_with(
            &self.worker,
            &spec,
            Arc::clone(&self.baseline),
            self.group.clone(),
            check,
        )
        .await?;
        Ok(Warm { worker, tmp, basis })
    }
}

/// `template` with `tmp` as the call's temp dir (and `TMPDIR`).
fn call_spec(template: &SandboxSpec, tmp: &Path) -> SandboxSpec {
    let mut spec = template.clone();
    spec.tmp_dir = tmp.to_path_buf();
    for var in &mut spec.env {
        if var.name == "TMPDIR" {
            var.value = tmp.display().to_string();
        }
    }
    spec
}
