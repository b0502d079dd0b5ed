//! Spawning a tool-worker and speaking the worker protocol with it.
//!
//! The supervisor is a multi-threaded tokio process, so it does no lockdown work between fork and
//! exec: it starts the `tool-worker` binary fresh, with one end of a socketpair as its stdin and an
//! empty environment, and the worker locks itself down. Everything that can go wrong — the binary
//! missing, a lockdown step failing, the worker dying, hanging or sending garbage — becomes a
//! [`WorkerError`], never a hung call.

use super::cgroup::{CallGroup, Layout};
use protocol::Encoding;
use protocol::frame::FrameDecoder;
use protocol::io::{FrameReader, IoError, write_message};
use protocol::worker::{
    FromWorker, RunTool, SandboxSpec, ToWorker, ToolRequest, ToolResult, WorkerFailure,
};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::net::UnixStream;

/// How long a worker may take to lock down.
const LOCKDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// Grace beyond the tool's own timeout before the worker itself is presumed hung.
const RESULT_GRACE: Duration = Duration::from_secs(5);

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
    /// The worker ended without a result.
    #[error("the tool-worker died without a result ({status})")]
    Died {
        /// How it ended.
        status: String,
    },
    /// The worker sent something that is not the protocol.
    #[error("the tool-worker broke the protocol: {0}")]
    Protocol(String),
    /// The worker stopped answering.
    #[error("the tool-worker did not answer within {0:?} and was killed")]
    Hung(Duration),
}

/// The first argument that makes the `agent` and `agentd` binaries act as a tool-worker.
pub const SELF_HOSTED_WORKER_ARG: &str = "__tool-worker";

/// The worker to spawn: `$AGENTD_TOOL_WORKER`, else a `tool-worker` binary beside the running
/// executable (or one directory up, for test binaries in `target/*/deps`), else — for the `agent`
/// and `agentd` binaries, which link the worker — the running executable itself, started with
/// [`SELF_HOSTED_WORKER_ARG`]. (`cargo run --bin agent` builds only `agent`.)
pub fn locate_worker() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AGENTD_TOOL_WORKER") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let beside = [dir.join("tool-worker"), dir.parent()?.join("tool-worker")]
        .into_iter()
        .find(|p| p.is_file());
    let hosts_worker = exe
        .file_name()
        .is_some_and(|n| n == "agent" || n == "agentd");
    beside.or_else(|| hosts_worker.then_some(exe))
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
    worker: &std::path::Path,
    spec: &SandboxSpec,
    tool: ToolRequest,
    on_output: impl FnMut(&str),
) -> Result<ToolResult, WorkerError> {
    start(worker, spec).await?.run(tool, None, on_output).await
}

/// A worker that has locked down as its spec asked and waits for its one request.
#[derive(Debug)]
pub struct ReadyWorker {
    child: tokio::process::Child,
    chan: FrameReader<UnixStream>,
    group: Option<CallGroup>,
    /// The spec's timeout; a call may shorten it.
    timeout_ms: u64,
    /// Killed and reaped already.
    ended: bool,
}

/// Starts a worker and waits until it has locked down as `spec` asks (or failed to).
pub async fn start(
    worker: &std::path::Path,
    spec: &SandboxSpec,
) -> Result<ReadyWorker, WorkerError> {
    let (ours, theirs) =
        std::os::unix::net::UnixStream::pair().map_err(|e| WorkerError::Spawn {
            path: worker.into(),
            source: e,
        })?;
    let group = CallGroup::create(
        Layout::detect(),
        spec.limits.max_processes,
        spec.limits.memory_bytes,
    )
    .map_err(WorkerError::Cgroup)?;
    let mut command = tokio::process::Command::new(worker);
    if std::env::current_exe().is_ok_and(|exe| exe == worker) {
        command.arg(SELF_HOSTED_WORKER_ARG);
    }
    let child = command
        .arg("--parent")
        .arg(std::process::id().to_string())
        .env_clear()
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| WorkerError::Spawn {
            path: worker.into(),
            source,
        })?;
    // The command holds our copy of the worker's socket end; dropping it now means a worker that
    // dies closes the last copy, and we see EOF at once instead of waiting for a timeout.
    drop(command);
    if let (Some(group), Some(pid)) = (&group, child.id()) {
        // Before the spec is sent the worker has forked nothing, so nothing escapes the group.
        group.add(pid).map_err(WorkerError::Cgroup)?;
    }
    ours.set_nonblocking(true)
        .map_err(|e| WorkerError::Protocol(e.to_string()))?;
    let stream = UnixStream::from_std(ours).map_err(|e| WorkerError::Protocol(e.to_string()))?;
    let mut chan = FrameReader::new(stream, FrameDecoder::default());
    let locked = lock_down(&mut chan, spec).await;
    let ready = ReadyWorker {
        child,
        chan,
        group,
        timeout_ms: spec.limits.timeout_ms,
        ended: false,
    };
    // The lockdown report is not kept here: every result carries it to the model's caller.
    match locked {
        Ok(()) => Ok(ready),
        Err(e) => Err(ready.finish(e).await),
    }
}

async fn lock_down(
    chan: &mut FrameReader<UnixStream>,
    spec: &SandboxSpec,
) -> Result<(), WorkerError> {
    send(chan, &ToWorker::Spec(spec.clone())).await?;
    match recv(chan, LOCKDOWN_TIMEOUT).await? {
        FromWorker::Ready(_) => Ok(()),
        FromWorker::Failed(failure) => Err(WorkerError::Lockdown(failure)),
        other => Err(WorkerError::Protocol(format!(
            "expected `ready`, got `{}`",
            other.variant_name()
        ))),
    }
}

impl ReadyWorker {
    /// Whether the worker is still there to take a request (a waiting worker can be killed).
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Runs the worker's one call; `timeout_ms` may shorten the spec's timeout. `on_output`
    /// receives output as it streams. The worker is gone when this returns.
    pub async fn run(
        mut self,
        tool: ToolRequest,
        timeout_ms: Option<u64>,
        mut on_output: impl FnMut(&str),
    ) -> Result<ToolResult, WorkerError> {
        let timeout = timeout_ms.map_or(self.timeout_ms, |t| t.min(self.timeout_ms));
        let outcome = self.converse(tool, timeout, &mut on_output).await;
        match outcome {
            Ok(result) => {
                self.end().await;
                Ok(result)
            }
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
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(timeout_ms) + RESULT_GRACE;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match recv(&mut self.chan, left).await? {
                FromWorker::Output(chunk) => on_output(&chunk.text),
                FromWorker::Result(result) => return Ok(result),
                FromWorker::Failed(failure) => return Err(WorkerError::Lockdown(failure)),
                FromWorker::Ready(_) => {
                    return Err(WorkerError::Protocol("a second `ready`".into()));
                }
            }
        }
    }

    /// Ends the worker after `error`, saying how it ended where that helps.
    async fn finish(mut self, error: WorkerError) -> WorkerError {
        let error = match error {
            WorkerError::Died { .. } => {
                // Say how the worker ended, which is more useful than "connection closed".
                let status =
                    match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
                        Ok(Ok(status)) => status.to_string(),
                        _ => "still running; killed".to_owned(),
                    };
                WorkerError::Died { status }
            }
            other => other,
        };
        self.end().await;
        error
    }

    /// The worker exits after its result; make sure of it either way, then remove its cgroup.
    async fn end(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        drop(self.group.take());
        self.ended = true;
    }
}

impl Drop for ReadyWorker {
    /// A worker dropped before its call ended (a pool going away, a cancelled call): kill it and
    /// reap it briefly, so its cgroup can be removed; `end` has done this already otherwise.
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let _ = self.child.start_kill();
        for _ in 0..200 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

async fn recv(
    chan: &mut FrameReader<UnixStream>,
    within: Duration,
) -> Result<FromWorker, WorkerError> {
    match tokio::time::timeout(within, chan.read_message::<FromWorker>(Encoding::Bincode)).await {
        Err(_) => Err(WorkerError::Hung(within)),
        Ok(Ok(message)) => Ok(message),
        Ok(Err(IoError::Closed)) | Ok(Err(IoError::Io(_))) => Err(WorkerError::Died {
            status: String::new(),
        }),
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
    .map_err(|_| WorkerError::Died {
        status: String::new(),
    })
}
