//! Containment: no process a tool call starts outlives it, and nothing it makes is shared.
//!
//! The worker unshares PID, IPC and (unless the profile is `full-access`) mount namespaces —
//! through a new user namespace when it is not root — and then forks: the child is the new PID
//! namespace's init and goes on as the worker; the parent only waits for it and exits with its
//! status. Why fork: `unshare(CLONE_NEWPID)` moves only the caller's *children* into the new
//! namespace, and a procfs mounted by the caller would still show the host's processes; only the
//! namespace's first process can mount a `/proc` that shows the call's own.
//!
//! As init, the worker outlives everything the tool starts; when it exits (after its result, or
//! killed with the supervisor's `SIGKILL` on the parent, which reaches it as `PR_SET_PDEATHSIG`),
//! the kernel kills every process left in the namespace — `setsid`, double forks and `nohup … &`
//! included. The IPC namespace gives the call its own SysV shared memory, semaphores and message
//! queues and POSIX message queues, all gone with it.

use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::Signal;
use nix::unistd::{ForkResult, fork};
use std::os::fd::{AsFd, OwnedFd};

/// How containment was achieved, for the lockdown report.
pub const PID_NAMESPACE: &str = "pid namespace";
/// Same, via a user namespace.
pub const USER_PID_NAMESPACE: &str = "user + pid namespace";

/// Why containment failed.
#[derive(Debug, thiserror::Error)]
pub enum ContainError {
    /// `unshare` failed.
    #[error("unshare({flags}): {source}")]
    Unshare {
        /// The flags asked for.
        flags: &'static str,
        #[source]
        source: nix::Error,
    },
    /// Writing the user namespace's id maps failed.
    #[error("writing {file}: {source}")]
    IdMap {
        /// The file.
        file: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// Becoming the namespace's init failed.
    #[error("starting the PID namespace's init: {step}: {source}")]
    Init {
        /// The step.
        step: &'static str,
        #[source]
        source: nix::Error,
    },
}

/// The namespaces entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Namespaces {
    /// [`PID_NAMESPACE`] or [`USER_PID_NAMESPACE`].
    pub how: &'static str,
    /// Whether a mount namespace was entered.
    pub mount: bool,
}

/// Enters new PID and IPC namespaces, a mount namespace when `mounts`, and a user namespace
/// mapping only our own ids when not root. Call [`become_init`] next.
pub fn enter(is_root: bool, mounts: bool) -> Result<Namespaces, ContainError> {
    let mut flags = CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWIPC;
    let mut names = "CLONE_NEWPID | CLONE_NEWIPC";
    if mounts {
        flags |= CloneFlags::CLONE_NEWNS;
        names = "CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS";
    }
    if is_root {
        unshare(flags).map_err(|source| ContainError::Unshare {
            flags: names,
            source,
        })?;
        return Ok(Namespaces {
            how: PID_NAMESPACE,
            mount: mounts,
        });
    }
    let (uid, gid) = (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    );
    unshare(flags | CloneFlags::CLONE_NEWUSER).map_err(|source| ContainError::Unshare {
        flags: "CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWIPC [| CLONE_NEWNS]",
        source,
    })?;
    write_id_maps(uid, gid)?;
    Ok(Namespaces {
        how: USER_PID_NAMESPACE,
        mount: mounts,
    })
}

/// Namespaces a zygote created together with this process ([`clone_init`]): the process is
/// their init already; [`finish`] completes what [`enter`] would have done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cloned {
    /// Whether a mount namespace was made.
    pub mount: bool,
    /// The parent namespace's uid and gid, when a user namespace was made (not root): its id
    /// maps are still to be written.
    pub user: Option<(u32, u32)>,
}

/// What [`clone_init`] returned in each process.
#[derive(Debug)]
pub enum CloneResult {
    /// In the zygote: the child.
    Parent(nix::unistd::Pid),
    /// In the child: the namespaces it is init of.
    Child(Cloned),
}

/// Forks a child that is born the init of new PID and IPC namespaces (a mount namespace too
/// when `mounts`, and a user namespace mapping only our ids when not root): [`enter`] and
/// [`become_init`] in one step and one process, instead of a worker that unshares and forks
/// again. The caller must be single-threaded (as for `fork`).
pub fn clone_init(mounts: bool) -> nix::Result<CloneResult> {
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    if mounts {
        flags |= libc::CLONE_NEWNS;
    }
    let user = (uid != 0).then_some((uid, gid));
    if user.is_some() {
        flags |= libc::CLONE_NEWUSER;
    }
    // SAFETY: clone without CLONE_VM and with a null stack is fork with namespace flags: the
    // child gets a copy-on-write copy of this (single-threaded) process and returns 0; no
    // pointer is passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::c_ulong::from((flags | libc::SIGCHLD).cast_unsigned()),
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    match rc {
        -1 => Err(nix::Error::last()),
        0 => Ok(CloneResult::Child(Cloned {
            mount: mounts,
            user,
        })),
        pid => Ok(CloneResult::Parent(nix::unistd::Pid::from_raw(
            i32::try_from(pid).map_err(|_| nix::Error::EOVERFLOW)?,
        ))),
    }
}

/// In a child of [`clone_init`]: writes the user namespace's id maps, if it has one.
pub fn finish(cloned: Cloned) -> Result<Namespaces, ContainError> {
    let how = match cloned.user {
        Some((uid, gid)) => {
            write_id_maps(uid, gid)?;
            USER_PID_NAMESPACE
        }
        None => PID_NAMESPACE,
    };
    Ok(Namespaces {
        how,
        mount: cloned.mount,
    })
}

/// Maps only `uid` and `gid` of the parent namespace into the user namespace just made, each to
/// itself; no supplementary groups can be set in it.
fn write_id_maps(uid: u32, gid: u32) -> Result<(), ContainError> {
    let write = |file: &'static str, text: String| {
        std::fs::write(file, text).map_err(|source| ContainError::IdMap { file, source })
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
}

/// Asks again for `SIGKILL` at the parent's death, which the kernel clears at any change of uid
/// or gid (so an init that drops to the session's owner would outlive a killed supervisor), then
/// checks through `parent` (its pidfd, readable once it has exited) that it did not die before.
pub fn rearm_parent_death(parent: Option<&OwnedFd>) -> Result<(), ContainError> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(init_err("PR_SET_PDEATHSIG"))?;
    if let Some(parent) = parent {
        let mut fds = [nix::poll::PollFd::new(
            parent.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let exited =
            nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO).map_err(init_err("poll"))?;
        if exited != 0 {
            return Err(init_err("the worker's parent is gone")(nix::Error::ESRCH));
        }
    }
    Ok(())
}

fn init_err(step: &'static str) -> impl FnOnce(nix::Error) -> ContainError {
    move |source| ContainError::Init { step, source }
}

/// Forks after [`enter`]: returns in the child, the new PID namespace's init, which dies with its
/// parent, with a pidfd of that parent (see [`rearm_parent_death`]). The parent never returns: it
/// closes every descriptor (the channel is the child's alone), waits for the child and exits with
/// its status.
pub fn become_init() -> Result<OwnedFd, ContainError> {
    // A descriptor of ourselves, inherited by the child: it becomes readable when we exit, the
    // one way the child can check on a parent outside its PID namespace (where getppid() is 0).
    let parent = super::process::pidfd_open(nix::unistd::getpid().as_raw())
        .map_err(init_err("pidfd_open"))?;
    // SAFETY: the worker is single-threaded, so the child may run any code after fork.
    match unsafe { fork() }.map_err(init_err("fork"))? {
        ForkResult::Parent { child } => wait_and_exit(child),
        ForkResult::Child => {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
                .map_err(init_err("PR_SET_PDEATHSIG"))?;
            let mut fds = [nix::poll::PollFd::new(
                parent.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            let exited = nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO)
                .map_err(init_err("poll"))?;
            if exited != 0 {
                return Err(init_err("the worker's parent is gone")(nix::Error::ESRCH));
            }
            Ok(parent)
        }
    }
}

/// The parent's whole remaining life.
fn wait_and_exit(child: nix::unistd::Pid) -> ! {
    // SAFETY: close_range only closes descriptors; this process uses none of them from here on.
    unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
    let code = loop {
        match nix::sys::wait::waitpid(child, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, code)) => break code,
            Ok(nix::sys::wait::WaitStatus::Signaled(_, sig, _)) => break 128 + sig as i32,
            Ok(_) | Err(nix::Error::EINTR) => continue,
            Err(_) => break crate::EXIT_FAILED,
        }
    };
    // SAFETY: _exit ends the process at once; nothing of ours needs running destructors.
    unsafe { libc::_exit(code) }
}
