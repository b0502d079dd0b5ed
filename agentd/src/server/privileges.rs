//! What agentd keeps of root's capabilities: only what starting a worker as another user takes,
//! dropped at start-up from every set — bounding included, so neither agentd nor anything it
//! executes (the zygote, every worker, as root) can ever get the rest back.
//!
//! Capabilities are a property of each thread, so [`drop_unneeded`] runs before agentd starts
//! any (before the runtime): every thread made afterwards inherits the reduced sets.
//!
//! The kept set was measured, not guessed: the daemon and worker suites were run with each
//! candidate dropped in turn (`docs/daemon.md`, "Capabilities").

use caps::{CapSet, Capability, CapsHashSet};

/// What a root agentd keeps, each for a reason a test shows. Not kept, though the unit granted
/// it: `CAP_DAC_READ_SEARCH` (`CAP_DAC_OVERRIDE` covers the reading, without
/// `open_by_handle_at`).
pub const KEPT: [Capability; 8] = [
    // Workers enter new mount, PID and IPC namespaces as root (no user namespace) and mount their
    // view of the filesystem.
    Capability::CAP_SYS_ADMIN,
    // A worker becomes the session's owner (setresuid); agentd reads the owner's files with the
    // owner's rights (setfsuid).
    Capability::CAP_SETUID,
    // ... and the owner's primary group and groups (setgroups, setresgid).
    Capability::CAP_SETGID,
    // A worker empties its own bounding set before it leaves uid 0.
    Capability::CAP_SETPCAP,
    // Each call's temp dir, and a protected path's placeholder, are given to the owner.
    Capability::CAP_CHOWN,
    // Workspaces and temp dirs of other users are entered, mounted and cleaned up (files the
    // owner made read-only or in directories only the owner may write).
    Capability::CAP_DAC_OVERRIDE,
    // Cleaning up a temp dir where the owner made a sticky directory of its own files.
    Capability::CAP_FOWNER,
    // Killing what an interrupted or timed-out call of another user left running: the PID
    // namespace's init runs as the owner and loses its parent-death signal when it changes
    // uid, so killing the root worker above it is not enough; the call's cgroup is, but on
    // cgroup v1 (no `cgroup.kill`) that is a `kill` of each of the owner's processes.
    Capability::CAP_KILL,
];

/// Why the capabilities could not be reduced.
#[derive(Debug, thiserror::Error)]
#[error("dropping capabilities: {what}: {source}")]
pub struct PrivilegeError {
    what: String,
    #[source]
    source: caps::errors::CapsError,
}

fn err(what: impl Into<String>) -> impl FnOnce(caps::errors::CapsError) -> PrivilegeError {
    let what = what.into();
    move |source| PrivilegeError { what, source }
}

/// As root: drops every capability but [`KEPT`] from the bounding set, empties the ambient and
/// inheritable sets, and leaves the permitted and effective sets at [`KEPT`] (those of it this
/// process had). Returns the capabilities kept, or `None` when not root (a user's agentd has none
/// to drop). Call it before any thread is started.
pub fn drop_unneeded() -> Result<Option<CapsHashSet>, PrivilegeError> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let keep: CapsHashSet = KEPT.into_iter().collect();
    let permitted =
        caps::read(None, CapSet::Permitted).map_err(err("reading the permitted set"))?;
    // Needs CAP_SETPCAP in the effective set, so it comes first.
    for cap in caps::all().difference(&keep) {
        if caps::has_cap(None, CapSet::Bounding, *cap).map_err(err("reading the bounding set"))? {
            caps::drop(None, CapSet::Bounding, *cap)
                .map_err(err(format!("{cap} from the bounding set")))?;
        }
    }
    let kept: CapsHashSet = permitted.intersection(&keep).copied().collect();
    caps::clear(None, CapSet::Ambient).map_err(err("clearing the ambient set"))?;
    caps::clear(None, CapSet::Inheritable).map_err(err("clearing the inheritable set"))?;
    // Effective before permitted: the effective set must stay within the permitted one.
    caps::set(None, CapSet::Effective, &kept).map_err(err("setting the effective set"))?;
    caps::set(None, CapSet::Permitted, &kept).map_err(err("setting the permitted set"))?;
    Ok(Some(kept))
}

/// `caps` as the names `capabilities(7)` gives them, sorted: for the log and `agentd status`.
pub fn names(caps: &CapsHashSet) -> Vec<String> {
    let mut names: Vec<String> = caps.iter().map(ToString::to_string).collect();
    names.sort();
    names
}
