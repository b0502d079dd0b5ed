//! The zygote: a worker process that is started once (per supervisor and worker binary) and then
//! forks a fresh worker for every call, instead of the supervisor executing the binary anew.
//!
//! Why: on the machines this runs on, `exec` of the (large) supervisor binary and its dynamic
//! loading are the biggest single CPU cost of a call (~1.3 ms of ~7.5 ms, measured by
//! `cargo bench -p agentd --bench worker`); a fork of this small single-threaded process costs a
//! fraction of that. Every worker is still a fresh process that runs the same lockdown from its
//! first instruction: the zygote itself never reads a spec, runs a tool or opens a file, so a
//! forked worker inherits nothing an exec'd one would not have (an empty environment, no
//! descriptors beyond its own channel, stderr and `/dev/null`).
//!
//! The zygote speaks a tiny protocol on a `SOCK_SEQPACKET` socket on fd 0 (message boundaries
//! kept, descriptors passed with `SCM_RIGHTS`):
//! * zygote → supervisor, first: [`HELLO`] (a configured worker binary that is not a zygote
//!   never says it, and is executed per call instead);
//! * supervisor → zygote: [`FORK`] with two descriptors, the worker's channel and its stderr,
//!   and how to contain it: the worker is cloned straight into new PID and IPC (and mount, and
//!   unless root user) namespaces as their init, one process fewer per call than a worker that
//!   unshares and forks again (which it still does when the kernel refuses the clone);
//! * zygote → supervisor: [`FORKED`] + pid with the worker's pidfd (to kill it, which works for
//!   a process that is not one's child), or [`FAILED`] + errno; later [`EXITED`] + pid + how it
//!   ended, once the zygote has reaped it (a worker is the zygote's child, not the supervisor's).
//!
//! The zygote exits when the supervisor's end closes (the supervisor is gone); its workers then
//! die with it (`PR_SET_PDEATHSIG`, which each sets on the zygote, its parent).
//!
//! What every worker would otherwise redo, the zygote prepares once ([`crate::lockdown::warm`]):
//! the fixed Landlock paths opened, the seccomp tables compiled.

use crate::lockdown::warm::{Preparer, Warm};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use nix::unistd::{ForkResult, Pid, fork};
use std::io::IoSliceMut;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The argument that makes the worker binary serve as a zygote.
pub const ZYGOTE_ARG: &str = "--zygote";
/// The zygote's first message, so a supervisor can tell a zygote from a binary that is not one.
pub const HELLO: [u8; 2] = [b'Z', 1];
/// Request: fork a worker (descriptors: channel, stderr), then one byte: [`PLAIN`],
/// [`CONTAINED`] or [`CONTAINED_MOUNTS`] (a request of the one byte alone is [`PLAIN`]).
pub const FORK: u8 = b'F';
/// Fork: the worker makes its namespaces itself (the `full-access` profile, or any).
pub const PLAIN: u8 = 0;
/// Fork: the worker is born the init of new PID and IPC (and, unless root, user) namespaces.
pub const CONTAINED: u8 = 1;
/// As [`CONTAINED`], with a mount namespace too (every profile but `full-access`).
pub const CONTAINED_MOUNTS: u8 = 2;
/// Reply: forked (`pid: i32`; descriptor: pidfd).
pub const FORKED: u8 = b'P';
/// Reply: the fork failed (`errno: i32`).
pub const FAILED: u8 = b'E';
/// Event: a worker ended (`pid: i32`, `signaled: u8`, `code: i32`, `cpu_us: u64`: the user +
/// system time of the worker and of everything it waited for, from `wait4`).
pub const EXITED: u8 = b'X';
/// The longest message either way.
pub const MAX_MESSAGE: usize = 32;

/// How a worker ended, as the zygote saw it when it reaped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

impl std::fmt::Display for Ended {
    /// Worded as `std::process::ExitStatus` words it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Exited(code) => write!(f, "exit status: {code}"),
            Ended::Signaled(sig) => match nix::sys::signal::Signal::try_from(*sig) {
                Ok(name) => write!(f, "signal: {sig} ({})", name.as_str()),
                Err(_) => write!(f, "signal: {sig}"),
            },
        }
    }
}

/// A message from the zygote, decoded.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// A worker was forked.
    Forked {
        /// Its pid (in the supervisor's PID namespace).
        pid: i32,
    },
    /// The fork failed.
    Failed {
        /// The errno.
        errno: i32,
    },
    /// A worker ended.
    Exited {
        /// Its pid.
        pid: i32,
        /// How.
        how: Ended,
        /// CPU time it used, with what it waited for, µs.
        cpu_us: u64,
    },
}

fn word(bytes: &[u8], at: usize) -> Option<i32> {
    let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(i32::from_le_bytes(b))
}

impl Reply {
    /// Encodes a reply.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_MESSAGE);
        match self {
            Reply::Forked { pid } => {
                out.push(FORKED);
                out.extend(pid.to_le_bytes());
            }
            Reply::Failed { errno } => {
                out.push(FAILED);
                out.extend(errno.to_le_bytes());
            }
            Reply::Exited { pid, how, cpu_us } => {
                out.push(EXITED);
                out.extend(pid.to_le_bytes());
                let (signaled, code) = match how {
                    Ended::Exited(c) => (0u8, *c),
                    Ended::Signaled(s) => (1u8, *s),
                };
                out.push(signaled);
                out.extend(code.to_le_bytes());
                out.extend(cpu_us.to_le_bytes());
            }
        }
        out
    }

    /// Decodes a reply; `None` for anything that is not one.
    pub fn decode(bytes: &[u8]) -> Option<Reply> {
        match *bytes.first()? {
            FORKED if bytes.len() == 5 => Some(Reply::Forked {
                pid: word(bytes, 1)?,
            }),
            FAILED if bytes.len() == 5 => Some(Reply::Failed {
                errno: word(bytes, 1)?,
            }),
            EXITED if bytes.len() == 18 => {
                let pid = word(bytes, 1)?;
                let code = word(bytes, 6)?;
                let how = match bytes.get(5)? {
                    0 => Ended::Exited(code),
                    1 => Ended::Signaled(code),
                    _ => return None,
                };
                let cpu: [u8; 8] = bytes.get(10..18)?.try_into().ok()?;
                let cpu_us = u64::from_le_bytes(cpu);
                Some(Reply::Exited { pid, how, cpu_us })
            }
            _ => None,
        }
    }
}

/// Receives one message on `sock`, with the descriptors it carries (two at most). `Ok(None)` at
/// end of stream.
pub fn receive(
    sock: BorrowedFd<'_>,
    buf: &mut [u8; MAX_MESSAGE],
) -> nix::Result<Option<(usize, Vec<OwnedFd>)>> {
    let mut space = nix::cmsg_space!([RawFd; 2]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = loop {
        match recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Err(nix::Error::EINTR) => continue,
            other => break other?,
        }
    };
    let mut fds = Vec::new();
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(raw) = cmsg {
            // SAFETY: SCM_RIGHTS descriptors are new in this process and owned by nobody else.
            fds.extend(
                raw.into_iter()
                    .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
            );
        }
    }
    let len = msg.bytes;
    if len == 0 && fds.is_empty() {
        return Ok(None);
    }
    Ok(Some((len, fds)))
}

/// Sends one message on `sock` with `fds`.
pub fn send(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> nix::Result<()> {
    let raw: Vec<RawFd> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
    let cmsg = [ControlMessage::ScmRights(&raw)];
    let cmsgs: &[ControlMessage<'_>] = if raw.is_empty() { &[] } else { &cmsg };
    let iov = [std::io::IoSlice::new(bytes)];
    loop {
        match sendmsg::<()>(sock.as_raw_fd(), &iov, cmsgs, MsgFlags::MSG_NOSIGNAL, None) {
            Err(nix::Error::EINTR) => continue,
            other => return other.map(drop),
        }
    }
}

/// The zygote itself, as its workers check on it.
struct Zygote {
    pid: i32,
    /// Readable once the zygote has exited: how a worker born in a new PID namespace, where
    /// `getppid()` is 0, checks on it.
    pidfd: OwnedFd,
}

impl Zygote {
    fn open() -> Option<Zygote> {
        let pid = nix::unistd::getpid().as_raw();
        let pidfd = crate::lockdown::process::pidfd_open(pid).ok()?;
        Some(Zygote { pid, pidfd })
    }
}

/// A forked worker the zygote waits for.
struct Child {
    pid: Pid,
    pidfd: OwnedFd,
}

/// The zygote's whole life; returns its exit code. `parent`: the supervisor's pid, checked.
pub fn serve(parent: Option<i32>) -> i32 {
    // Not `lockdown::prepare`: no death signal with the parent, which would come with the end
    // of the supervisor *thread* that started us; the supervisor's end closing ends us instead.
    let prepared = crate::lockdown::process::close_other_fds().is_ok()
        && crate::lockdown::process::new_session().is_ok()
        && nix::sys::prctl::set_dumpable(false).is_ok()
        && parent.is_none_or(|p| nix::unistd::getppid().as_raw() == p);
    if !prepared {
        return crate::EXIT_FAILED;
    }
    // SAFETY: fd 0 is the SOCK_SEQPACKET end the supervisor passed as our stdin; only we own it.
    let control = unsafe { OwnedFd::from_raw_fd(0) };
    if send(control.as_fd(), &HELLO, &[]).is_err() {
        return crate::EXIT_FAILED;
    }
    let Some(me) = Zygote::open() else {
        return crate::EXIT_FAILED;
    };
    let mut preparer = Preparer::prepare();
    // Compiled once here, inherited by every worker forked for a call.
    crate::lockdown::mounts::name_glob::prepare(
        protocol::worker::DEFAULT_PROTECTED_PATHS.iter().copied(),
    );
    preparer.install_early_seccomp();
    let mut children: Vec<Child> = Vec::new();
    loop {
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(children.len() + 1);
        fds.push(PollFd::new(control.as_fd(), PollFlags::POLLIN));
        fds.extend(
            children
                .iter()
                .map(|c| PollFd::new(c.pidfd.as_fd(), PollFlags::POLLIN)),
        );
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(nix::Error::EINTR) => {}
            Err(_) => return crate::EXIT_FAILED,
        }
        let control_ready = fds[0].any().unwrap_or(true);
        let any_ended = fds[1..].iter().any(|f| f.any().unwrap_or(true));
        drop(fds);
        if any_ended && reap(&control, &mut children).is_err() {
            return 0;
        }
        if control_ready && !serve_one(&control, &mut children, &mut preparer, &me) {
            return 0;
        }
    }
}

/// Reaps every child that has exited and tells the supervisor how each ended and what CPU it
/// used (its own and that of everything it waited for: the call's processes).
fn reap(control: &OwnedFd, children: &mut Vec<Child>) -> nix::Result<()> {
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value of the plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 writes the status and the rusage into the two locals passed by pointer.
        let pid = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, &mut usage) };
        if pid == 0 {
            return Ok(());
        }
        if pid < 0 {
            match nix::Error::last() {
                nix::Error::ECHILD => return Ok(()),
                nix::Error::EINTR => continue,
                e => return Err(e),
            }
        }
        let how = if libc::WIFSIGNALED(status) {
            Ended::Signaled(libc::WTERMSIG(status))
        } else if libc::WIFEXITED(status) {
            Ended::Exited(libc::WEXITSTATUS(status))
        } else {
            continue;
        };
        let us = |t: libc::timeval| {
            u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_usec).unwrap_or(0)
        };
        children.retain(|c| c.pid.as_raw() != pid);
        let reply = Reply::Exited {
            pid,
            how,
            cpu_us: us(usage.ru_utime) + us(usage.ru_stime),
        };
        send(control.as_fd(), &reply.encode(), &[])?;
    }
}

/// Serves one request. `false` when the supervisor is gone (or broke the protocol).
fn serve_one(
    control: &OwnedFd,
    children: &mut Vec<Child>,
    preparer: &mut Preparer,
    me: &Zygote,
) -> bool {
    let mut buf = [0u8; MAX_MESSAGE];
    let (len, fds) = match receive(control.as_fd(), &mut buf) {
        Ok(Some(got)) => got,
        Ok(None) | Err(_) => return false,
    };
    let [chan, stderr]: [OwnedFd; 2] = match fds.try_into() {
        Ok(pair) if buf[0] == FORK && len <= 2 => pair,
        _ => return false,
    };
    let how = if len == 2 { buf[1] } else { PLAIN };
    preparer.refresh();
    match start_child(how, me) {
        Err(e) => send(
            control.as_fd(),
            &Reply::Failed { errno: e as i32 }.encode(),
            &[],
        )
        .is_ok(),
        Ok(Started::Child(contained)) => {
            let mut warm = std::mem::take(preparer).into_warm();
            if contained.is_some() {
                // Kept past the worker's first close_range; dropped by its lockdown.
                warm.parent = me.pidfd.try_clone().ok();
            }
            warm.contained = contained;
            become_worker(chan, stderr, me.pid, warm)
        }
        Ok(Started::Parent(child)) => {
            drop((chan, stderr));
            forked(control, children, child)
        }
    }
}

/// Tells the supervisor a worker was forked, with its pidfd, and keeps it to reap.
fn forked(control: &OwnedFd, children: &mut Vec<Child>, child: Pid) -> bool {
    // The child cannot have been reaped yet (only the zygote's loop reaps), so the pid is ours.
    let pidfd = match crate::lockdown::process::pidfd_open(child.as_raw()) {
        Ok(pidfd) => pidfd,
        Err(errno) => {
            let _ = nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
            return send(
                control.as_fd(),
                &Reply::Failed {
                    errno: errno as i32,
                }
                .encode(),
                &[],
            )
            .is_ok();
        }
    };
    let sent = send(
        control.as_fd(),
        &Reply::Forked {
            pid: child.as_raw(),
        }
        .encode(),
        &[pidfd.as_fd()],
    );
    children.push(Child { pid: child, pidfd });
    sent.is_ok()
}

/// What [`start_child`] returned in each process.
enum Started {
    Parent(Pid),
    /// In the child: the namespaces it was born init of, if any.
    Child(Option<crate::lockdown::contain::Cloned>),
}

/// Forks the worker: born init of its namespaces when `how` asks and the kernel allows, else a
/// plain fork whose worker makes them itself (and names the step that fails, if one does).
fn start_child(how: u8, zygote: &Zygote) -> nix::Result<Started> {
    use crate::lockdown::contain::{CloneResult, clone_init};
    if how == CONTAINED || how == CONTAINED_MOUNTS {
        match clone_init(how == CONTAINED_MOUNTS) {
            Ok(CloneResult::Parent(pid)) => return Ok(Started::Parent(pid)),
            Ok(CloneResult::Child(cloned)) => {
                // Our parent is outside our PID namespace (getppid() says 0): watch it through
                // its pidfd, after asking for the signal, so its death in between is seen.
                let gone = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .is_err()
                    || has_exited(zygote.pidfd.as_fd());
                if gone {
                    // SAFETY: _exit ends this child at once; nothing of the zygote's needs running.
                    unsafe { libc::_exit(crate::EXIT_FAILED) }
                }
                return Ok(Started::Child(Some(cloned)));
            }
            // Not allowed here (e.g. user namespaces off): the worker tries, and says why.
            Err(_) => {}
        }
    }
    // SAFETY: the zygote is single-threaded, so the child may run any code after fork.
    match unsafe { fork() }? {
        ForkResult::Parent { child } => Ok(Started::Parent(child)),
        ForkResult::Child => Ok(Started::Child(None)),
    }
}

/// Whether the process behind `pidfd` has exited (its pidfd is readable then).
fn has_exited(pidfd: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::new(pidfd, PollFlags::POLLIN)];
    !matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0))
}

/// In the forked child: the channel becomes fd 0, stderr fd 2, `/dev/null` fd 1 (what the
/// supervisor gives an exec'd worker), then the worker's life as if freshly started. Dumpable
/// again, as after an exec: the zygote's `PR_SET_DUMPABLE 0` would leave `/proc/self` owned by
/// root, and an unprivileged worker could not write its user namespace's id maps (it turns
/// itself non-dumpable again once it has).
fn become_worker(chan: OwnedFd, stderr: OwnedFd, zygote: i32, warm: Warm) -> ! {
    if nix::sys::prctl::set_dumpable(true).is_err() {
        // SAFETY: _exit ends this child at once; nothing of the zygote's needs running.
        unsafe { libc::_exit(crate::EXIT_FAILED) }
    }
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null");
    let placed = null.is_ok_and(|null| {
        nix::unistd::dup2_stdout(null.as_fd()).is_ok()
            && nix::unistd::dup2_stderr(stderr.as_fd()).is_ok()
            && nix::unistd::dup2_stdin(chan.as_fd()).is_ok()
    });
    if !placed {
        // SAFETY: _exit ends this child at once; nothing of the zygote's needs running.
        unsafe { libc::_exit(crate::EXIT_FAILED) }
    }
    // Born in a new PID namespace, a worker sees no parent (`start_child` checked on it).
    let args = match warm.contained {
        Some(_) => Vec::new(),
        None => vec!["--parent".to_owned(), zygote.to_string()],
    };
    let code = crate::run_warm(args.into_iter(), warm);
    // SAFETY: as above; the zygote's buffers and destructors are not this process's to run.
    unsafe { libc::_exit(code) }
}
