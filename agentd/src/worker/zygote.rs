//! The supervisor's side of the zygote ([`tool_worker::zygote`]): one per worker binary,
//! started on first use and kept for the supervisor's life, which forks a fresh worker per call so
//! that no call pays an `exec` of the supervisor's large binary.
//!
//! The workers are the zygote's children, not the supervisor's: the supervisor kills one through
//! its pidfd (passed back with `SCM_RIGHTS`) and learns how it ended from the zygote, which reaps
//! it. A dedicated thread reads the zygote's messages, so no runtime's life bounds the zygote's
//! (tests start a runtime per test; the daemon one for its life). A zygote that dies is replaced
//! on the next call; the workers it had die with it (`PR_SET_PDEATHSIG`), and their calls end as
//! a worker's death ends them.

use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{Notify, oneshot};
use tool_worker::zygote::{FORK, HELLO, MAX_MESSAGE, Reply, ZYGOTE_ARG, receive, send};

/// How long a binary started as a zygote has to say [`HELLO`] before it is taken for one that
/// is not (and executed per call instead).
const HELLO_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Where a worker's end is told.
#[derive(Debug, Default)]
struct ExitCell {
    /// How it ended, worded as `ExitStatus` words it; `None` while it runs.
    status: Mutex<Option<String>>,
    ended: Notify,
}

impl ExitCell {
    fn set(&self, status: String) {
        *lock(&self.status) = Some(status);
        self.ended.notify_waiters();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A worker forked by a zygote.
#[derive(Debug)]
pub struct WorkerProcess {
    pid: u32,
    pidfd: OwnedFd,
    exit: Arc<ExitCell>,
}

impl WorkerProcess {
    /// Its pid.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Another descriptor of its pidfd.
    pub fn pidfd(&self) -> Option<OwnedFd> {
        self.pidfd.try_clone().ok()
    }

    /// Sends it `SIGKILL` (through its pidfd: never another process that reused the pid).
    pub fn start_kill(&self) {
        // SAFETY: pidfd_send_signal takes a descriptor we own, a signal number, a null info
        // pointer (allowed: the kernel fills in the info) and flags; it touches no memory of ours.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
    }

    /// How it ended, if it has (and its zygote has reaped it).
    pub fn try_wait(&self) -> Option<String> {
        lock(&self.exit.status).clone()
    }

    /// Waits until it has ended; how.
    pub async fn wait(&self) -> String {
        loop {
            let ended = self.exit.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if let Some(status) = self.try_wait() {
                return status;
            }
            ended.await;
        }
    }
}

/// What the reader thread and the callers share.
#[derive(Debug, Default)]
struct Shared {
    alive: bool,
    /// Fork requests sent, answered in order.
    pending: VecDeque<oneshot::Sender<io::Result<WorkerProcess>>>,
    /// Workers forked and not yet reaped.
    running: HashMap<i32, Arc<ExitCell>>,
}

/// CPU time of every worker reaped by a zygote of this process (with what they waited for), µs.
static WORKER_CPU_US: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// CPU time used so far by this process's zygotes and their workers: what `getrusage`'s
/// `RUSAGE_CHILDREN` does not see, since the zygotes are never waited for while they serve.
/// For benchmarks, which count every process of a call.
pub fn cpu_used() -> std::time::Duration {
    let workers = WORKER_CPU_US.load(std::sync::atomic::Ordering::Relaxed);
    let zygotes: u64 = lock(&ZYGOTES)
        .iter()
        .filter_map(|(_, z)| z.as_ref())
        // The first field of schedstat: nanoseconds on a CPU (the zygote has one thread).
        .filter_map(|z| std::fs::read_to_string(format!("/proc/{}/schedstat", z.pid)).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    std::time::Duration::from_micros(workers) + std::time::Duration::from_nanos(zygotes)
}

/// A running zygote.
#[derive(Debug)]
pub struct Zygote {
    pid: u32,
    sock: OwnedFd,
    shared: Arc<Mutex<Shared>>,
}

impl Zygote {
    /// Starts `program` as a zygote (with `self_hosted_arg` first when it is a binary that hosts
    /// the worker behind that argument).
    fn start(program: &Path, self_hosted_arg: Option<&str>) -> io::Result<Zygote> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        let mut command =
            super::process::command(program, self_hosted_arg, Some(ZYGOTE_ARG), theirs);
        let mut child = command.stderr(Stdio::null()).spawn()?;
        // Our copy of their end is gone with `command`: the zygote's exit is then our EOF.
        drop(command);
        if let Err(e) = hello(&ours) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        let shared = Arc::new(Mutex::new(Shared {
            alive: true,
            ..Shared::default()
        }));
        let pid = child.id();
        let reader = ours.try_clone()?;
        let for_reader = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("agentd-zygote".into())
            .spawn(move || read_replies(reader, for_reader, child))?;
        Ok(Zygote {
            pid,
            sock: ours,
            shared,
        })
    }

    fn is_alive(&self) -> bool {
        lock(&self.shared).alive
    }

    /// Forks a worker whose channel is `chan` and stderr `stderr`; `contain` says which
    /// namespaces it is born init of ([`tool_worker::zygote::PLAIN`], `CONTAINED`, …).
    pub async fn fork(
        &self,
        chan: OwnedFd,
        stderr: OwnedFd,
        contain: u8,
    ) -> io::Result<WorkerProcess> {
        let (tx, rx) = oneshot::channel();
        {
            // Sent under the lock, so requests and the queue of their answers stay in order.
            let mut shared = lock(&self.shared);
            if !shared.alive {
                return Err(gone());
            }
            send(
                self.sock.as_fd(),
                &[FORK, contain],
                &[chan.as_fd(), stderr.as_fd()],
            )?;
            shared.pending.push_back(tx);
        }
        drop((chan, stderr));
        rx.await.unwrap_or_else(|_| Err(gone()))
    }
}

/// Waits for the zygote's [`HELLO`].
fn hello(sock: &OwnedFd) -> io::Result<()> {
    let mut fds = [nix::poll::PollFd::new(
        sock.as_fd(),
        nix::poll::PollFlags::POLLIN,
    )];
    let wait = nix::poll::PollTimeout::try_from(HELLO_WAIT).unwrap_or(nix::poll::PollTimeout::MAX);
    if nix::poll::poll(&mut fds, wait)? == 0 {
        return Err(not_a_zygote("it said nothing"));
    }
    let mut buf = [0u8; MAX_MESSAGE];
    match receive(sock.as_fd(), &mut buf)? {
        Some((len, fds)) if fds.is_empty() && buf.get(..len) == Some(&HELLO[..]) => Ok(()),
        _ => Err(not_a_zygote("it did not say hello")),
    }
}

fn not_a_zygote(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("not a worker zygote: {why}"),
    )
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the worker zygote has exited")
}

/// The reader thread: answers fork requests, tells each worker's end, and when the zygote is
/// gone fails whatever waits on it and reaps it.
fn read_replies(sock: OwnedFd, shared: Arc<Mutex<Shared>>, mut zygote: std::process::Child) {
    let mut buf = [0u8; MAX_MESSAGE];
    while let Ok(Some((len, mut fds))) = receive(sock.as_fd(), &mut buf) {
        let reply = buf.get(..len).and_then(Reply::decode);
        let mut s = lock(&shared);
        match reply {
            Some(Reply::Forked { pid }) if fds.len() == 1 => {
                let exit = Arc::new(ExitCell::default());
                s.running.insert(pid, Arc::clone(&exit));
                let worker = WorkerProcess {
                    pid: u32::try_from(pid).unwrap_or_default(),
                    pidfd: fds.remove(0),
                    exit,
                };
                if let Some(tx) = s.pending.pop_front()
                    && let Err(Ok(unwanted)) = tx.send(Ok(worker))
                {
                    // The caller gave up (its call was cancelled): the worker has no use.
                    unwanted.start_kill();
                }
            }
            Some(Reply::Failed { errno }) => {
                if let Some(tx) = s.pending.pop_front() {
                    let _ = tx.send(Err(io::Error::from_raw_os_error(errno)));
                }
            }
            Some(Reply::Exited { pid, how, cpu_us }) => {
                WORKER_CPU_US.fetch_add(cpu_us, std::sync::atomic::Ordering::Relaxed);
                if let Some(exit) = s.running.remove(&pid) {
                    exit.set(how.to_string());
                }
            }
            _ => {
                tracing::error!("the worker zygote broke its protocol; ending it");
                break;
            }
        }
    }
    let mut s = lock(&shared);
    s.alive = false;
    for tx in s.pending.drain(..) {
        let _ = tx.send(Err(gone()));
    }
    for (_, exit) in s.running.drain() {
        exit.set("killed with its zygote".into());
    }
    drop(s);
    let _ = zygote.kill();
    match zygote.wait() {
        Ok(status) => tracing::warn!(%status, "the worker zygote ended"),
        Err(e) => tracing::warn!(error = %e, "the worker zygote ended"),
    }
}

/// The zygotes of this process, one per binary; `None` for a binary that is not one.
static ZYGOTES: Mutex<Vec<(PathBuf, Option<Arc<Zygote>>)>> = Mutex::new(Vec::new());

/// The zygote for `program`, started if there is none or it has died; `None` when `program` does
/// not serve as one (a configured worker of another make): it is then executed per call.
pub fn for_program(program: &Path, self_hosted_arg: Option<&str>) -> Option<Arc<Zygote>> {
    let mut all = lock(&ZYGOTES);
    all.retain(|(_, z)| z.as_ref().is_none_or(|z| z.is_alive()));
    if let Some((_, z)) = all.iter().find(|(p, _)| p == program) {
        return z.clone();
    }
    // A script is never a zygote: no need to wait for the hello it will not say.
    let started = if self_hosted_arg.is_none() && is_script(program) {
        Err(not_a_zygote("it is a script"))
    } else {
        Zygote::start(program, self_hosted_arg)
    };
    let z = match started {
        Ok(z) => Some(Arc::new(z)),
        Err(e) => {
            tracing::info!(program = %program.display(), error = %e, "the worker binary does not serve as a zygote; it is executed for each call");
            None
        }
    };
    all.push((program.to_path_buf(), z.clone()));
    z
}

/// Whether `program` starts with `#!`.
fn is_script(program: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 2];
    std::fs::File::open(program)
        .is_ok_and(|mut f| f.read_exact(&mut head).is_ok() && head == *b"#!")
}
