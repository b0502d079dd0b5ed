//! The first steps: only the channel stays open, a session of our own, death with the parent.

use nix::sys::signal::Signal;
use std::os::fd::RawFd;

/// Why a process step failed.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub struct ProcessError {
    step: &'static str,
    #[source]
    source: nix::Error,
}

/// A pidfd for the process `pid`: readable once it has ended.
pub fn pidfd_open(pid: i32) -> nix::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; it writes no
    // memory of ours.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    if raw < 0 {
        return Err(nix::Error::last());
    }
    let raw = RawFd::try_from(raw).map_err(|_| nix::Error::EBADF)?;
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) })
}

/// Closes every file descriptor above 2 (the channel is fd 0; 1 and 2 are the supervisor's log or
/// /dev/null) but those in `keep`, so nothing inherited by accident reaches the tool. `keep`: what
/// a zygote prepared for the lockdown ([`super::warm`]), which closes it in turn.
pub fn close_fds_except(keep: &[RawFd]) -> Result<(), ProcessError> {
    closing_ranges(keep)
        .into_iter()
        .try_for_each(|(first, last)| close_range(first, last))
}

/// The ranges of descriptors above 2 that are not in `keep`, in order.
fn closing_ranges(keep: &[RawFd]) -> Vec<(u32, u32)> {
    let mut keep: Vec<u32> = keep
        .iter()
        .filter_map(|fd| u32::try_from(*fd).ok())
        .filter(|fd| *fd >= 3)
        .collect();
    keep.sort_unstable();
    keep.dedup();
    let mut ranges = Vec::with_capacity(keep.len() + 1);
    let mut from = 3u32;
    for fd in keep {
        if fd > from {
            ranges.push((from, fd - 1));
        }
        from = fd.saturating_add(1);
    }
    if from != u32::MAX || ranges.is_empty() {
        ranges.push((from, u32::MAX));
    }
    ranges
}

/// Closes every file descriptor above 2.
pub fn close_other_fds() -> Result<(), ProcessError> {
    close_fds_except(&[])
}

fn close_range(first: u32, last: u32) -> Result<(), ProcessError> {
    // SAFETY: close_range only closes descriptors; the callers hold no Rust object owning one in
    // this range (nothing has been opened yet but what `keep` names).
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
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

#[cfg(test)]
mod tests {
    use super::closing_ranges;

    #[test]
    fn everything_above_2_but_the_kept_descriptors_is_closed() {
        assert_eq!(closing_ranges(&[]), [(3, u32::MAX)]);
        assert_eq!(
            closing_ranges(&[9, 5, 6, 2, -1, 5]),
            [(3, 4), (7, 8), (10, u32::MAX)]
        );
        assert_eq!(closing_ranges(&[3, 4]), [(5, u32::MAX)]);
    }
}
