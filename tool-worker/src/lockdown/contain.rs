//! Containment: no process a tool call starts outlives it.
//!
//! The worker enters a new PID namespace (through a new user namespace when it is not root). Its
//! first child, the tool's `sh`, is that namespace's init: when it exits or is killed, the kernel
//! kills every process left in the namespace — `setsid`, double forks and `nohup … &` included.
//! The child also gets `PR_SET_PDEATHSIG`, so the namespace dies with the worker, and the worker
//! dies with the supervisor.

use nix::sched::{CloneFlags, unshare};

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
}

/// Enters a new PID namespace (and a user namespace mapping our own ids when not root).
pub fn enter(is_root: bool) -> Result<&'static str, ContainError> {
    if is_root {
        unshare(CloneFlags::CLONE_NEWPID).map_err(|source| ContainError::Unshare {
            flags: "CLONE_NEWPID",
            source,
        })?;
        return Ok(PID_NAMESPACE);
    }
    let (uid, gid) = (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    );
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID).map_err(|source| {
        ContainError::Unshare {
            flags: "CLONE_NEWUSER | CLONE_NEWPID",
            source,
        }
    })?;
    let write = |file: &'static str, text: String| {
        std::fs::write(file, text).map_err(|source| ContainError::IdMap { file, source })
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))?;
    Ok(USER_PID_NAMESPACE)
}
