//! The first steps: only the channel stays open, a session of our own, death with the parent.

use nix::sys::signal::Signal;

/// Why a process step failed.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub struct ProcessError {
    step: &'static str,
    #[source]
    source: nix::Error,
}

/// Closes every file descriptor above 2 (the channel is fd 0; 1 and 2 are the supervisor's log or
/// /dev/null), so nothing inherited by accident reaches the tool.
pub fn close_other_fds() -> Result<(), ProcessError> {
    // SAFETY: close_range only closes descriptors; none above 2 is in use by this process's Rust
    // code at this point (nothing has been opened yet).
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if rc != 0 {
        return Err(ProcessError {
            step: "close_range",
            source: nix::Error::last(),
        });
    }
    Ok(())
}

/// A new session and process group, away from the supervisor's terminal and signals.
pub fn new_session() -> Result<(), ProcessError> {
    nix::unistd::setsid()
        .map(drop)
        .map_err(|source| ProcessError {
            step: "setsid",
            source,
        })
}

/// SIGKILL when the parent dies; then checks the parent did not die before that took effect.
pub fn die_with_parent(expected_parent: Option<i32>) -> Result<(), ProcessError> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|source| ProcessError {
        step: "PR_SET_PDEATHSIG",
        source,
    })?;
    if let Some(parent) = expected_parent
        && nix::unistd::getppid().as_raw() != parent
    {
        return Err(ProcessError {
            step: "getppid (the supervisor is gone)",
            source: nix::Error::ESRCH,
        });
    }
    Ok(())
}

/// `PR_SET_NO_NEW_PRIVS`: no exec can gain privileges (setuid bits, file capabilities).
pub fn no_new_privs() -> Result<(), ProcessError> {
    nix::sys::prctl::set_no_new_privs().map_err(|source| ProcessError {
        step: "PR_SET_NO_NEW_PRIVS",
        source,
    })
}

/// `PR_SET_DUMPABLE 0`: processes of the same uid cannot ptrace this one or open its
/// `/proc/<pid>/fd`, `mem` or `environ`. After the uid change, which resets the flag.
pub fn not_dumpable() -> Result<(), ProcessError> {
    nix::sys::prctl::set_dumpable(false).map_err(|source| ProcessError {
        step: "PR_SET_DUMPABLE",
        source,
    })
}
