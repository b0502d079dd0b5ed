//! A worker process, however it was started: forked by the binary's zygote (`agent`, `agentd`
//! and `tool-worker` serve as one; see [`super::zygote`]), or executed afresh — for a configured
//! binary that does not answer as a zygote. Either way the worker gets the same start: one end of
//! a socketpair as stdin, `/dev/null` as stdout, a pipe of its own as stderr (never the
//! supervisor's fd 2), an empty environment and `--parent` naming the process it must die with.

use super::zygote::{self, WorkerProcess};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::AsyncRead;

/// How every worker binary is started, as a worker or as a zygote (`mode_arg`): `hosted_arg`
/// first when the binary hosts the worker behind it, the process it must die with, an empty
/// environment, `chan` as stdin and `/dev/null` as stdout; stderr is the caller's to set.
pub(super) fn command(
    program: &Path,
    hosted_arg: Option<&str>,
    mode_arg: Option<&str>,
    chan: OwnedFd,
) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    command
        .args(hosted_arg)
        .args(mode_arg)
        .arg("--parent")
        .arg(std::process::id().to_string())
        .env_clear()
        .stdin(Stdio::from(chan))
        .stdout(Stdio::null());
    command
}

/// A running worker.
#[derive(Debug)]
pub enum Process {
    /// Forked by a zygote: its child, not ours.
    Forked(WorkerProcess),
    /// Executed by us.
    Spawned(tokio::process::Child),
}

/// Its stderr, to read.
pub type Stderr = Box<dyn AsyncRead + Unpin + Send>;

/// Workers started and not yet dropped (running a call, or locked down and waiting for one).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// How many worker processes this process holds now: running a call or ready for one
/// (`agentd status`).
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

impl Drop for Process {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Process {
    /// Starts `program` as a worker on `chan`, with `hosted_arg` first when the binary hosts the
    /// worker behind it. `contain`: how a zygote forks it (`tool_worker::zygote::CONTAINED…`).
    pub async fn start(
        program: &Path,
        hosted_arg: Option<&str>,
        chan: OwnedFd,
        contain: u8,
    ) -> std::io::Result<(Process, Option<Stderr>)> {
        if let Some(zygote) = zygote::for_program(program, hosted_arg) {
            let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            let child = zygote.fork(chan, write, contain).await?;
            let stderr = tokio::net::unix::pipe::Receiver::from_owned_fd(read)
                .ok()
                .map(|r| Box::new(r) as Stderr);
            LIVE.fetch_add(1, Ordering::Relaxed);
            return Ok((Process::Forked(child), stderr));
        }
        let mut command = tokio::process::Command::from(command(program, hosted_arg, None, chan));
        let mut child = command.stderr(Stdio::piped()).kill_on_drop(true).spawn()?;
        // The command holds a copy of the worker's socket end; dropping it now means a worker
        // that dies closes the last copy, and we see EOF at once instead of waiting for a timeout.
        drop(command);
        let stderr = child.stderr.take().map(|s| Box::new(s) as Stderr);
        LIVE.fetch_add(1, Ordering::Relaxed);
        Ok((Process::Spawned(child), stderr))
    }

    /// Its pid.
    pub fn id(&self) -> Option<u32> {
        match self {
            Process::Forked(p) => Some(p.id()),
            Process::Spawned(c) => c.id(),
        }
    }

    /// A pidfd for it, readable once it has ended.
    pub fn pidfd(&self) -> Option<std::os::fd::OwnedFd> {
        match self {
            Process::Forked(p) => p.pidfd(),
            Process::Spawned(c) => {
                let pid = i32::try_from(c.id()?).ok()?;
                tool_worker::lockdown::process::pidfd_open(pid).ok()
            }
        }
    }

    /// Sends it `SIGKILL`.
    pub fn start_kill(&mut self) {
        match self {
            Process::Forked(p) => p.start_kill(),
            Process::Spawned(c) => {
                let _ = c.start_kill();
            }
        }
    }

    /// How it ended, if it has.
    pub fn try_wait(&mut self) -> Option<String> {
        match self {
            Process::Forked(p) => p.try_wait(),
            Process::Spawned(c) => match c.try_wait() {
                Ok(Some(status)) => Some(status.to_string()),
                Ok(None) => None,
                Err(e) => Some(e.to_string()),
            },
        }
    }

    /// Waits, blocking the thread, until it has ended and been reaped, at most `within`; whether
    /// it has. For a drop, which cannot await: a forked worker's end is told by the zygote's
    /// reader thread, and a spawned one is reaped by `waitpid`, so neither needs the runtime.
    pub fn reaped_within(&mut self, within: std::time::Duration) -> bool {
        let start = std::time::Instant::now();
        loop {
            if self.try_wait().is_some() {
                return true;
            }
            if start.elapsed() >= within {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Waits until it has ended; how.
    pub async fn wait(&mut self) -> String {
        match self {
            Process::Forked(p) => p.wait().await,
            Process::Spawned(c) => match c.wait().await {
                Ok(status) => status.to_string(),
                Err(e) => e.to_string(),
            },
        }
    }
}
