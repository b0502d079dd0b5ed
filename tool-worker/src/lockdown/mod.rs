//! The lockdown: one straight line of steps, in the order the design fixes, each failure named by
//! its step so the supervisor can say exactly what could not be done.
//!
//! Why this order: fds are closed and the session left before anything else; containment needs
//! privileges (CAP_SYS_ADMIN, or a fresh user namespace), so it comes before dropping them; the
//! mounts are made by the PID namespace's init (for its `/proc`), and the workspace is entered
//! only after them (a directory entered before stays on the old, writable mount); limits
//! before the uid change, since a lowered hard limit cannot be raised afterwards anyway;
//! capabilities are cleared after the uid change (which itself needs CAP_SETUID); `no_new_privs`
//! before Landlock and seccomp, which need it when unprivileged; seccomp last, because it forbids
//! syscalls (unshare, mount) that earlier steps use.

pub mod caps;
pub mod contain;
pub mod identity;
pub mod landlock;
pub mod limits;
pub mod mounts;
pub mod process;
pub mod seccomp;
pub mod warm;

use std::os::fd::RawFd;

use protocol::worker::{
    LandlockStatus, LockdownReport, SandboxProfile, SandboxSpec, WorkerFailure, WorkerStep,
};

fn fail(step: WorkerStep, e: impl std::fmt::Display) -> WorkerFailure {
    WorkerFailure {
        step,
        message: e.to_string(),
    }
}

/// Everything before the spec is read: it does not depend on the spec.
/// `keep`: descriptors prepared by the zygote ([`warm::Warm::keep`]), closed by the lockdown.
pub fn prepare(expected_parent: Option<i32>, keep: &[RawFd]) -> Result<(), WorkerFailure> {
    process::close_fds_except(keep).map_err(|e| fail(WorkerStep::CloseFds, e))?;
    process::new_session().map_err(|e| fail(WorkerStep::Setsid, e))?;
    process::die_with_parent(expected_parent)
        .map_err(|e| fail(WorkerStep::ParentDeathSignal, e))?;
    Ok(())
}

/// The rest of the lockdown, as `spec` asks, using what `warm` holds prepared. On success,
/// reports what was achieved.
pub fn lock_down(spec: &SandboxSpec, warm: warm::Warm) -> Result<LockdownReport, WorkerFailure> {
    let mut warnings = Vec::new();
    let is_root = nix::unistd::geteuid().is_root();
    let drop_to = spec.run_as.as_ref().filter(|_| is_root);
    let will_be_root = is_root && drop_to.is_none_or(|r| r.uid == 0);

    let wants_mounts = spec.profile != SandboxProfile::FullAccess;
    let (namespaces, parent) = match warm.contained {
        // Born init of its namespaces (the zygote cloned it so): one process fewer per call.
        Some(cloned) if cloned.mount == wants_mounts => (
            contain::finish(cloned).map_err(|e| fail(WorkerStep::Containment, e))?,
            warm.parent,
        ),
        Some(_) => {
            return Err(fail(
                WorkerStep::Containment,
                "the zygote made this worker's namespaces for another sandbox profile",
            ));
        }
        None => {
            let entered = contain::enter(is_root, wants_mounts)
                .map_err(|e| fail(WorkerStep::Containment, e))?;
            let parent = contain::become_init().map_err(|e| fail(WorkerStep::Containment, e))?;
            (entered, Some(parent))
        }
    };
    let mounted = if namespaces.mount {
        mounts::set_up(spec).map_err(|e| fail(WorkerStep::Mounts, e))?
    } else {
        mounts::Mounted {
            write_paths: spec.write_paths.clone(),
            read_paths: spec.read_paths.clone(),
            ..mounts::Mounted::default()
        }
    };
    let protected = mounted.protected;
    // Landlock's rules name what the mounts carried over: the configured paths resolved.
    let landlock_spec = SandboxSpec {
        write_paths: mounted.write_paths,
        read_paths: mounted.read_paths,
        ..spec.clone()
    };
    std::env::set_current_dir(&spec.workspace).map_err(|e| {
        fail(
            WorkerStep::Mounts,
            format!(
                "cannot enter the workspace {}: {e}",
                spec.workspace.display()
            ),
        )
    })?;
    check_workspace_identity(spec).map_err(|e| fail(WorkerStep::Mounts, e))?;
    limits::apply(&spec.limits, will_be_root).map_err(|e| fail(WorkerStep::Rlimits, e))?;
    if let Some(who) = drop_to {
        caps::clear_bounding().map_err(|e| fail(WorkerStep::Capabilities, e))?;
        identity::drop_to(who).map_err(|e| fail(WorkerStep::DropUser, e))?;
        // The kernel clears `PR_SET_PDEATHSIG` when the euid or egid changes: set again, or a
        // call dropped to the session owner outlives a killed supervisor (its zygote, this
        // process's parent, exits with it) until the call's deadline; then make sure the parent
        // did not die in between.
        contain::rearm_parent_death(parent.as_ref()).map_err(|e| fail(WorkerStep::DropUser, e))?;
    }
    // Not the tool's to inherit (it is close-on-exec, and closed here besides).
    drop(parent);
    // Files the tools create get the usual modes, whatever the supervisor's umask; and no process
    // of the same uid may read this one's memory or descriptors (`/proc/1/fd/…`).
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    process::not_dumpable().map_err(|e| fail(WorkerStep::Capabilities, e))?;
    caps::clear_all().map_err(|e| fail(WorkerStep::Capabilities, e))?;
    process::no_new_privs().map_err(|e| fail(WorkerStep::NoNewPrivs, e))?;
    let (landlock, abi) = landlock::enforce(&landlock_spec, namespaces.mount, warm.fixed)
        .map_err(|e| fail(WorkerStep::Landlock, e))?;
    match &warm.tables {
        Some(tables) => seccomp::install_late(tables.late(spec.network)),
        None => seccomp::install(spec.network),
    }
    .map_err(|e| fail(WorkerStep::Seccomp, e))?;

    match landlock {
        LandlockStatus::PartiallyEnforced => {
            warnings.push(format!("Landlock is only partially enforced (kernel ABI {abi:?}): some rights are not restricted"))
        }
        LandlockStatus::NotEnforced => warnings.push("LANDLOCK IS NOT ENFORCED: the filesystem is not confined".into()),
        _ => {}
    }
    if will_be_root {
        warnings.push("the tool runs as uid 0 (capabilities cleared): processes are bounded only by a pids cgroup, if any".into());
    }
    let protected_ids = protected
        .iter()
        .map(|p| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(p).map_or((0, 0), |m| (m.dev(), m.ino()))
        })
        .collect();
    Ok(LockdownReport {
        protected_ids,
        landlock_abi: abi,
        landlock,
        seccomp: true,
        no_new_privs: true,
        capabilities_cleared: caps::all_clear(),
        containment: namespaces.how.to_owned(),
        mount_namespace: namespaces.mount,
        ipc_namespace: true,
        protected,
        uid: nix::unistd::getuid().as_raw(),
        gid: nix::unistd::getgid().as_raw(),
        warnings,
    })
}

/// The directory just entered (after the mounts, so what the call will work in) is the one the
/// session was made for: a path swapped since for a symlink to someone else's directory is
/// refused here, before any tool runs.
fn check_workspace_identity(spec: &protocol::worker::SandboxSpec) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let Some(expected) = spec.workspace_identity else {
        return Ok(());
    };
    let here = std::fs::metadata(".").map_err(|e| format!("cannot stat the workspace: {e}"))?;
    if (here.dev(), here.ino()) == expected {
        return Ok(());
    }
    Err(format!(
        "the workspace {} is no longer the directory this session was made for (it was moved or replaced, or a directory on its path now leads elsewhere): refusing to work in it",
        spec.workspace.display()
    ))
}
