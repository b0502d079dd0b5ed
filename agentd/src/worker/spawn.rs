//! Spawning a tool-worker and speaking the worker protocol with it — without trusting it.
//!
//! The supervisor is a multi-threaded tokio process, so it does no lockdown work between fork and
//! exec: it starts the worker fresh, with one end of a socketpair as its stdin, stdout on
//! `/dev/null`, stderr on a pipe of its own (never the supervisor's fd 2) and an empty
//! environment, and the worker locks itself down. What the supervisor does not take on trust:
//!
//! * **the binary**: `agent` and `agentd` run themselves as the worker, through `/proc/self/exe`
//!   (the executable they were started from, even if the file on disk was replaced since); an
//!   explicitly configured worker is run only if nobody but root can write or replace it and it
//!   lies outside the call's writable roots ([`super::verify::trusted_binary`]);
//! * **the lockdown**: the worker's `ready` report is checked against the spec
//!   ([`super::verify::verify`]); a worker that falls short is killed before it sees a request;
//! * **the caps** ([`super::caps`]): streamed output is forwarded up to
//!   [`STREAM_CAP`](super::caps::STREAM_CAP) bytes, a result's content is cut to the spec's output
//!   cap (head and tail, marked truncated), frames are bounded, and the worker's stderr is kept up
//!   to [`STDERR_CAP`](super::caps::STDERR_CAP) bytes (logged, and told in a [`WorkerError::Died`]);
//! * **the deadline**: a call whose result has not come by its timeout (plus [`RESULT_GRACE`] for
//!   the worker to report its own) ends there: the worker and its cgroup are killed, and the call
//!   returns a timed-out result (exit code 124) with the output streamed so far;
//! * **the call's end**: however a call that was sent its request ends — a result, an error, a
//!   timeout, or its future dropped (an interrupt) — the protected paths are checked
//!   ([`super::protect::Baseline::check`]) once the call's processes are gone: after the result
//!   (the worker, their PID namespace's init, reaps them first), else after the worker is killed
//!   and reaped. A dropped call does it in the drop, blocking for at most `REAP_DROPPED`: the
//!   process may be about to exit (`agent run` after Ctrl-C), and a task would die with it.
//!
//! Everything else that can go wrong — the binary missing, a lockdown step failing, the worker
//! dying or sending garbage — becomes a [`WorkerError`], never a hung call.

use super::caps::{Streamed, bounded, capped, excerpt, max_frame, read_stderr, trimmed};
use super::cgroup::{CallGroup, Layout};
use super::process::Process;
use super::verify::{Shortfall, Untrusted, trusted_binary, verify};
use protocol::Encoding;
use protocol::frame::FrameDecoder;
use protocol::io::{FrameReader, IoError, write_message};
use protocol::worker::{
    FromWorker, LockdownReport, RunTool, SandboxSpec, ToWorker, ToolRequest, ToolResult,
    WorkerFailure,
};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::net::UnixStream;
use tokio::task::JoinHandle;

/// How long a worker may take to lock down.
const LOCKDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// Workers whose exit was left to a task ([`ReadyWorker::run_detached`]) and has not ended yet.
static TEARDOWNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One worker exit left to a task, counted in [`TEARDOWNS`] until dropped: when the task ends,
/// or when it is dropped unfinished with its runtime (the worker is killed by its own drop then).
struct InFlight;

impl InFlight {
    fn new() -> Self {
        TEARDOWNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        TEARDOWNS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Waits until every worker exit left to a task has ended (benchmarks count their CPU; tests
/// look for leftovers).
pub async fn teardowns_settled() {
    while TEARDOWNS.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// How long a worker that sent its result may take to exit before it is killed.
const EXIT_AFTER_RESULT: Duration = Duration::from_secs(1);
/// How long a dropped call's killed worker may take to be reaped before its protected paths are
/// checked anyway (the drop blocks its thread meanwhile; a killed worker is reaped in
/// milliseconds).
const REAP_DROPPED: Duration = Duration::from_secs(3);
/// How long a killed worker (a timed-out or failed call) is waited for before its check is left
/// to [`super::late_check`].
const REAP_ENDED: Duration = Duration::from_secs(5);
/// How long a dropped worker that ran no request is waited for, so that its cgroup can go.
const REAP_IDLE: Duration = Duration::from_millis(200);
/// Grace beyond a call's timeout for the worker to report its own timeout, before the supervisor
/// ends the call itself.
pub const RESULT_GRACE: Duration = Duration::from_secs(2);
/// The worker `agent` and `agentd` host: the supervisor's own executable.
pub const SELF_EXE: &str = "/proc/self/exe";

/// Why a tool call produced no result.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The worker binary could not be started.
    #[error("cannot start the tool-worker {path}: {source}")]
    Spawn {
        /// The binary.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The configured worker binary is not one the supervisor may trust; nothing was run.
    #[error("refusing the tool-worker {path}: {source}")]
    Untrusted {
        /// The binary as configured.
        path: PathBuf,
        #[source]
        source: Untrusted,
    },
    /// The call's private temp dir could not be made.
    #[error("cannot create the call's temp dir {path}: {source}")]
    TempDir {
        /// The directory.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The call's cgroup could not be set up.
    #[error("cannot set up the call's cgroup: {0}")]
    Cgroup(#[source] std::io::Error),
    /// A lockdown step failed; the tool did not run.
    #[error("the sandbox could not be set up (step {:?}): {}", .0.step, .0.message)]
    Lockdown(WorkerFailure),
    /// The worker reported a lockdown short of its spec; it was killed before its request.
    #[error(
        "the tool-worker's lockdown falls short of the sandbox asked for, so it was killed: {0}"
    )]
    Shortfall(Shortfall),
    /// The worker ended without a result.
    #[error("the tool-worker died without a result ({status}){}", stderr_words(.stderr))]
    Died {
        /// How it ended.
        status: String,
        /// The end of what it wrote to stderr, escaped.
        stderr: String,
    },
    /// The worker sent something that is not the protocol.
    #[error("the tool-worker broke the protocol: {0}")]
    Protocol(String),
    /// The worker did not lock down in time.
    #[error("the tool-worker did not answer within {0:?} and was killed")]
    Hung(Duration),
}

fn stderr_words(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr: {stderr}")
    }
}

impl WorkerError {
    fn died() -> Self {
        WorkerError::Died {
            status: String::new(),
            stderr: String::new(),
        }
    }
}

/// The first argument that makes the `agent` and `agentd` binaries act as a tool-worker.
pub const SELF_HOSTED_WORKER_ARG: &str = "__tool-worker";

/// The worker to spawn: `$AGENTD_TOOL_WORKER` when set (checked at [`start`] like any configured
/// path), else — for the `agent` and `agentd` binaries, which link the worker — the running
/// executable itself, [`SELF_EXE`], started with [`SELF_HOSTED_WORKER_ARG`]. Nothing is picked up
/// from beside the binary: a workspace holding the binary could plant one there.
pub fn locate_worker() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AGENTD_TOOL_WORKER") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let hosts_worker = exe
        .file_name()
        .is_some_and(|n| n == "agent" || n == "agentd");
    hosts_worker.then(|| PathBuf::from(SELF_EXE))
}

/// In `main` of a binary that can host the worker: if started as one, run it and exit. Must come
/// first, before any thread is started.
pub fn run_as_worker_if_asked() {
    let mut args = std::env::args();
    if args.nth(1).as_deref() == Some(SELF_HOSTED_WORKER_ARG) {
        std::process::exit(tool_worker::run(args));
    }
}

/// Runs one tool call in a fresh worker. `on_output` receives output as it streams.
pub async fn run_tool(
    worker: &Path,
    spec: &SandboxSpec,
    tool: ToolRequest,
    on_output: impl FnMut(&str),
) -> Result<ToolResult, WorkerError> {
    start(worker, spec).await?.run(tool, None, on_output).await
}

/// A worker that has locked down as its spec asked and waits for its one request.
#[derive(Debug)]
pub struct ReadyWorker {
    child: Process,
    chan: FrameReader<UnixStream>,
    group: Option<CallGroup>,
    /// The worker's stderr, read up to [`STDERR_CAP`](super::caps::STDERR_CAP).
    stderr: Option<JoinHandle<Vec<u8>>>,
    /// The spec's timeout; a call may shorten it.
    timeout_ms: u64,
    /// The spec's output cap.
    output_cap: usize,
    /// The lockdown the worker reported and the supervisor verified; every result carries it.
    report: LockdownReport,
    /// The spec it was locked down with (for the protected-path check after the call).
    spec: SandboxSpec,
    /// The protected paths its session began with.
    baseline: std::sync::Arc<super::protect::Baseline>,
    /// Killed and reaped already.
    ended: bool,
    /// Its request was sent and the protected paths have not been checked since: however the
    /// call ends — a result, an error, a timeout, its future dropped by an interrupt — they are,
    /// once the call's processes are gone.
    unchecked: bool,
}

/// Starts a worker and waits until it has locked down as `spec` asks (or failed to, or reported
/// less than that: then it is killed).
pub async fn start(worker: &Path, spec: &SandboxSpec) -> Result<ReadyWorker, WorkerError> {
    let baseline = std::sync::Arc::new(super::protect::Baseline::now(spec));
    start_with(worker, spec, baseline, None, ProtectedCheck::AtLockdown).await
}

/// When a worker's report of the protected paths it made read-only is compared with those that
/// exist: a scan of the writable roots each time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtectedCheck {
    /// As it locks down: it serves a call at once.
    AtLockdown,
    /// When a call takes it from the pool, which compares then (`Warm::staleness`): later, so
    /// stricter, than at lockdown, and the check every pooled worker passes before its request
    /// is sent. A scan at lockdown as well would be a third per call and prove less.
    AtTake,
}

/// [`start`] for a worker of a session whose protected paths are compared with `baseline`
/// after its call (the session's, shared by all its workers), its cgroup inside the session's
/// `group` if there is one.
pub async fn start_with(
    worker: &Path,
    spec: &SandboxSpec,
    baseline: std::sync::Arc<super::protect::Baseline>,
    group: Option<std::sync::Arc<super::aggregate::SessionGroup>>,
    check: ProtectedCheck,
) -> Result<ReadyWorker, WorkerError> {
    // The repositories below the roots, as the session's last walk found them: the worker
    // protects each one's git files as it does the root's.
    let spec = &baseline.spec(spec);
    let self_hosted = worker == Path::new(SELF_EXE);
    let program = if self_hosted {
        worker.to_path_buf()
    } else {
        trusted_binary(worker, spec).map_err(|e| match e {
            Untrusted::Unreadable { source, .. } => WorkerError::Spawn {
                path: worker.into(),
                source,
            },
            e => WorkerError::Untrusted {
                path: worker.into(),
                source: e,
            },
        })?
    };
    let spawn_err = |source: std::io::Error| WorkerError::Spawn {
        path: worker.into(),
        source,
    };
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(spawn_err)?;
    let group = CallGroup::create(
        Layout::detect(),
        group.as_ref(),
        spec.limits.max_processes,
        spec.limits.memory_bytes,
    )
    .map_err(WorkerError::Cgroup)?;
    // A configured path that is this very binary (an installed `agentd`) hosts the worker too.
    let hosted = self_hosted || std::env::current_exe().is_ok_and(|exe| exe == program);
    // A zygote makes the worker the init of its namespaces as it forks it (one process fewer).
    let contain = match spec.profile {
        protocol::worker::SandboxProfile::FullAccess => tool_worker::zygote::CONTAINED,
        _ => tool_worker::zygote::CONTAINED_MOUNTS,
    };
    let (mut child, stderr) = Process::start(
        &program,
        hosted.then_some(SELF_HOSTED_WORKER_ARG),
        OwnedFd::from(theirs),
        contain,
    )
    .await
    .map_err(spawn_err)?;
    let stderr = stderr.map(read_stderr);
    if let Some(group) = &group {
        // Before the spec is sent the worker has forked nothing, so nothing escapes the group.
        if let Err(e) = child.id().map_or(Ok(()), |pid| group.add(pid)) {
            child.start_kill();
            return Err(WorkerError::Cgroup(e));
        }
    }
    ours.set_nonblocking(true)
        .map_err(|e| WorkerError::Protocol(e.to_string()))?;
    let stream = UnixStream::from_std(ours).map_err(|e| WorkerError::Protocol(e.to_string()))?;
    let mut chan = FrameReader::new(stream, FrameDecoder::new(max_frame(spec)));
    let locked = lock_down(&mut chan, spec, check).await;
    let (report, locked) = match locked {
        Ok(report) => (report, Ok(())),
        Err((report, e)) => (report, Err(e)),
    };
    let ready = ReadyWorker {
        child,
        chan,
        group,
        stderr,
        timeout_ms: spec.limits.timeout_ms,
        output_cap: usize::try_from(spec.limits.output_cap_bytes).unwrap_or(usize::MAX),
        report,
        spec: spec.clone(),
        baseline,
        ended: false,
        unchecked: false,
    };
    match locked {
        Ok(()) => Ok(ready),
        Err(e) => Err(ready.finish(e).await),
    }
}

/// Sends the spec and waits for a `ready` that meets it (the protected paths as `check` says).
/// On failure, the error and a report to keep meanwhile (the worker's, or an empty one).
async fn lock_down(
    chan: &mut FrameReader<UnixStream>,
    spec: &SandboxSpec,
    check: ProtectedCheck,
) -> Result<LockdownReport, (LockdownReport, WorkerError)> {
    let none = || LockdownReport {
        landlock_abi: None,
        landlock: protocol::worker::LandlockStatus::NotEnforced,
        seccomp: false,
        no_new_privs: false,
        capabilities_cleared: false,
        containment: String::new(),
        mount_namespace: false,
        ipc_namespace: false,
        protected: vec![],
        protected_ids: vec![],
        uid: 0,
        gid: 0,
        warnings: vec![],
    };
    let expected = match check {
        ProtectedCheck::AtLockdown => tool_worker::lockdown::mounts::view::protected_now(spec),
        ProtectedCheck::AtTake => Vec::new(),
    };
    let answer = async {
        send(chan, &ToWorker::Spec(spec.clone())).await?;
        recv(chan, LOCKDOWN_TIMEOUT).await
    };
    match answer.await {
        Ok(FromWorker::Ready(report)) => match verify(spec, &report)
            .and_then(|()| super::verify::verify_protected(&expected, &report))
        {
            Ok(()) => Ok(trimmed(report)),
            Err(shortfall) => Err((report, WorkerError::Shortfall(shortfall))),
        },
        Ok(FromWorker::Failed(failure)) => Err((none(), WorkerError::Lockdown(bounded(failure)))),
        Ok(other) => Err((
            none(),
            WorkerError::Protocol(format!("expected `ready`, got `{}`", other.variant_name())),
        )),
        Err(e) => Err((none(), e)),
    }
}

impl ReadyWorker {
    /// Whether the worker is still there to take a request (a waiting worker can be killed).
    pub fn is_alive(&mut self) -> bool {
        self.child.try_wait().is_none()
    }

    /// The lockdown the worker reported and the supervisor verified against the spec.
    pub fn lockdown(&self) -> &LockdownReport {
        &self.report
    }

    /// Runs the worker's one call; `timeout_ms` may shorten the spec's timeout. `on_output`
    /// receives output as it streams. The worker and everything it started are gone when this
    /// returns.
    pub async fn run(
        self,
        tool: ToolRequest,
        timeout_ms: Option<u64>,
        on_output: impl FnMut(&str),
    ) -> Result<ToolResult, WorkerError> {
        self.run_then(tool, timeout_ms, on_output, false).await
    }

    /// [`ReadyWorker::run`], but after a result that is not a timeout the worker's exit (the
    /// teardown of its namespaces, which takes a while) is left to a task of the runtime: the
    /// call's processes are gone already — the worker, their init, reaped them before its
    /// result — and only the worker itself is left to end. For the pool, whose caller is a
    /// model waiting for the result.
    pub async fn run_detached(
        self,
        tool: ToolRequest,
        timeout_ms: Option<u64>,
        on_output: impl FnMut(&str),
    ) -> Result<ToolResult, WorkerError> {
        self.run_then(tool, timeout_ms, on_output, true).await
    }

    async fn run_then(
        mut self,
        tool: ToolRequest,
        timeout_ms: Option<u64>,
        mut on_output: impl FnMut(&str),
        detach: bool,
    ) -> Result<ToolResult, WorkerError> {
        let timeout = timeout_ms.map_or(self.timeout_ms, |t| t.min(self.timeout_ms));
        // A call that runs only our own reading code (no command of the model's, no write)
        // changes nothing in the workspace: it needs no check, and saves the walk.
        self.unchecked = !matches!(
            tool,
            ToolRequest::ReadFile(_)
                | ToolRequest::ListDir(_)
                | ToolRequest::Glob(_)
                | ToolRequest::Grep(_)
        );
        let outcome = {
            let mut call = Answering {
                worker: &mut self,
                on_output: &mut on_output,
                answered: false,
            };
            let outcome = call
                .worker
                .converse(tool, timeout, &mut *call.on_output)
                .await;
            call.answered = true;
            outcome
        };
        match outcome {
            Ok(mut result) => {
                // The worker is trusted with nothing: its cgroup must hold it alone, else what
                // the call started has not ended, and the check waits until it has.
                let lingering = self
                    .group
                    .as_ref()
                    .is_some_and(|g| g.holds_other_than(self.child.id()));
                if lingering {
                    tracing::warn!(
                        "a tool-worker sent its result while processes of its call remained; the call is ended and checked after them"
                    );
                }
                let check_after_kill = result.timed_out || lingering;
                if !check_after_kill {
                    // The worker sends its result once everything the call started is gone (it
                    // is the PID namespace's init and reaps them first), so the workspace is the
                    // call's last word: check it now.
                    self.unchecked = false;
                    // The check walks the workspace: on a blocking thread, not the runtime's,
                    // which other sessions' calls need meanwhile.
                    let (baseline, spec) =
                        (std::sync::Arc::clone(&self.baseline), self.spec.clone());
                    let notes = match tokio::task::spawn_blocking(move || baseline.check(&spec))
                        .await
                    {
                        Ok(notes) => notes,
                        Err(e) => vec![format!(
                            "the check of the protected paths after this call failed ({e}): review .git and the editors' settings before you run git or open an editor here"
                        )],
                    };
                    super::protect::tell(&mut result, notes);
                }
                // The worker then exits by itself, tearing its mount namespace down, which takes
                // a while; the call's caller need not wait for that. Without a runtime to leave
                // it to, wait here.
                // A timed-out call (the worker's own or the supervisor's verdict) is ended here
                // and now: its worker may be the one that would not stop, and what it started
                // may still be writing, so its check comes after the kill (in `end`).
                let teardown = async move {
                    let _ = tokio::time::timeout(EXIT_AFTER_RESULT, self.child.wait()).await;
                    self.end().await.1
                };
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) if detach && !check_after_kill => {
                        let counted = InFlight::new();
                        runtime.spawn(async move {
                            teardown.await;
                            drop(counted);
                        });
                    }
                    _ => super::protect::tell(&mut result, teardown.await),
                }
                Ok(result)
            }
            // `end` checks, once the worker is gone; the notes are logged by the check, and the
            // error is what the caller gets.
            Err(e) => Err(self.finish(e).await),
        }
    }

    async fn converse(
        &mut self,
        tool: ToolRequest,
        timeout_ms: u64,
        on_output: &mut impl FnMut(&str),
    ) -> Result<ToolResult, WorkerError> {
        let run = RunTool {
            tool,
            timeout_ms: Some(timeout_ms),
        };
        send(&mut self.chan, &ToWorker::Run(run)).await?;
        let started = tokio::time::Instant::now();
        let deadline = started + Duration::from_millis(timeout_ms) + RESULT_GRACE;
        let mut stream = Streamed::new(self.output_cap);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            // Checked before reading, not only by the read's timeout: a worker that floods output
            // always has a frame ready, and would never let the read time out.
            let message = if left.is_zero() {
                Err(WorkerError::Hung(left))
            } else {
                recv(&mut self.chan, left).await
            };
            match message {
                Ok(FromWorker::Output(chunk)) => stream.push(&chunk.text, on_output),
                Ok(FromWorker::Result(result)) => {
                    return Ok(capped(result, self.output_cap, &self.report));
                }
                Ok(FromWorker::Failed(failure)) => {
                    return Err(WorkerError::Lockdown(bounded(failure)));
                }
                Ok(FromWorker::Ready(_)) => {
                    return Err(WorkerError::Protocol("a second `ready`".into()));
                }
                Err(WorkerError::Hung(_)) => {
                    tracing::warn!(
                        timeout_ms,
                        "the tool-worker sent no result by the call's deadline; killed"
                    );
                    let elapsed = started.elapsed();
                    return Ok(stream.timed_out(timeout_ms, elapsed, self.report.clone()));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Ends the worker after `error`, saying how it ended where that helps.
    async fn finish(mut self, error: WorkerError) -> WorkerError {
        let status = match &error {
            // Say how the worker ended, which is more useful than "connection closed".
            WorkerError::Died { .. } => Some(
                match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
                    Ok(status) => status,
                    Err(_) => "still running; killed".to_owned(),
                },
            ),
            _ => None,
        };
        let (stderr, _notes) = self.end().await;
        match status {
            Some(status) => WorkerError::Died {
                status,
                stderr: excerpt(&stderr),
            },
            None => error,
        }
    }

    /// The worker exits after its result; make sure of it either way, kill whatever is left in
    /// its cgroup, remove the cgroup, check the protected paths if its call has not been
    /// checked yet, and log what the worker wrote to stderr. Returns that (escaped) and the
    /// check's notes.
    async fn end(mut self) -> (String, Vec<String>) {
        self.child.start_kill();
        if let Some(group) = &self.group {
            group.kill();
        }
        let reaped = tokio::time::timeout(REAP_ENDED, self.child.wait())
            .await
            .is_ok();
        let notes = if reaped {
            self.check_if_unchecked()
        } else {
            self.check_later()
        };
        self.ended = true;
        let stderr = match self.stderr.take() {
            Some(mut reader) => {
                match tokio::time::timeout(Duration::from_millis(500), &mut reader).await {
                    Ok(Ok(bytes)) => bytes,
                    _ => {
                        // Something the worker started still holds its stderr: stop reading.
                        reader.abort();
                        Vec::new()
                    }
                }
            }
            None => Vec::new(),
        };
        let text = String::from_utf8_lossy(&stderr).escape_debug().to_string();
        if !text.is_empty() {
            tracing::warn!(stderr = %text, "the tool-worker wrote to stderr");
        }
        (text, notes)
    }

    /// Once the worker is reaped: its cgroup removed, and the protected-path check, if the call
    /// has a request and has not had it; its notes (logged by the check).
    fn check_if_unchecked(&mut self) -> Vec<String> {
        // Killed again and removed (or kept, empty): what the worker started is gone too.
        drop(self.group.take());
        if !std::mem::take(&mut self.unchecked) {
            return Vec::new();
        }
        self.baseline.check(&self.spec)
    }

    /// Ends a worker whose call was dropped before it ended (a pool going away, a cancelled or
    /// interrupted call), without awaiting: kills it and whatever it started, reaps it within a
    /// bound, then runs the check its call has not had, if it had a request. Returns the check's
    /// notes. Blocks the thread meanwhile: the caller may be about to exit (`agent run` after
    /// Ctrl-C), and a task left to the runtime would die with it.
    fn abandon(&mut self) -> Vec<String> {
        if !self.ended {
            self.child.start_kill();
            if let Some(group) = &self.group {
                group.kill();
            }
            if let Some(reader) = self.stderr.take() {
                reader.abort();
            }
            let within = if self.unchecked {
                REAP_DROPPED
            } else {
                REAP_IDLE
            };
            let reaped = self.child.reaped_within(within);
            self.ended = true;
            if !reaped {
                return self.check_later();
            }
        }
        self.check_if_unchecked()
    }

    /// A worker killed and not yet reaped: its call's check, if it needs one, is left to
    /// [`super::late_check`], which runs it once the worker has ended. The note for the call.
    fn check_later(&mut self) -> Vec<String> {
        if !std::mem::take(&mut self.unchecked) {
            return Vec::new();
        }
        match self.child.pidfd() {
            Some(pidfd) => vec![super::late_check::after_exit(
                pidfd,
                std::sync::Arc::clone(&self.baseline),
                self.spec.clone(),
                self.group.take(),
            )],
            None => {
                tracing::warn!(
                    "a call's tool-worker was not reaped after its kill and cannot be waited for; its protected paths are checked now"
                );
                drop(self.group.take());
                self.baseline.check(&self.spec)
            }
        }
    }
}

/// A call whose request is with its worker: dropped there (an interrupt drops the call's
/// future), it kills the worker, waits for it, checks the protected paths
/// ([`ReadyWorker::abandon`]) and streams what the check did as the call's last output, which
/// the user sees before the call is answered as interrupted.
struct Answering<'a, F: FnMut(&str)> {
    worker: &'a mut ReadyWorker,
    on_output: &'a mut F,
    /// The worker answered (or failed to): the call goes on in `run_then`.
    answered: bool,
}

impl<F: FnMut(&str)> Drop for Answering<'_, F> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        for note in self.worker.abandon() {
            (self.on_output)(&format!("\n[agentd: {note}]"));
        }
    }
}

impl Drop for ReadyWorker {
    /// A worker dropped before its call ended: [`ReadyWorker::abandon`] (the notes are logged by
    /// the check); `end` has done it already otherwise.
    fn drop(&mut self) {
        let _ = self.abandon();
    }
}

async fn recv(
    chan: &mut FrameReader<UnixStream>,
    within: Duration,
) -> Result<FromWorker, WorkerError> {
    match tokio::time::timeout(within, chan.read_message::<FromWorker>(Encoding::Bincode)).await {
        Err(_) => Err(WorkerError::Hung(within)),
        Ok(Ok(message)) => Ok(message),
        Ok(Err(IoError::Closed)) | Ok(Err(IoError::Io(_))) => Err(WorkerError::died()),
        Ok(Err(e)) => Err(WorkerError::Protocol(e.to_string())),
    }
}

async fn send(chan: &mut FrameReader<UnixStream>, message: &ToWorker) -> Result<(), WorkerError> {
    write_message(
        chan.get_mut(),
        FrameDecoder::default(),
        Encoding::Bincode,
        message,
    )
    .await
    .map_err(|_| WorkerError::died())
}
