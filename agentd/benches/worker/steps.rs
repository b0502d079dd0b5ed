//! The lockdown's steps, each timed in a forked child: where a worker's CPU goes.

use super::{Sample, calls, measure, summarize};
use protocol::worker::SandboxSpec;
use std::time::Instant;

/// Set in the copy of this program that times the lockdown's steps.
pub const STEPS_ENV: &str = "AGENTD_BENCH_LOCKDOWN_STEPS";
/// The large workspace ([`super::tree`]), when there is one: the mounts are timed there too.
pub const LARGE_WS_ENV: &str = "AGENTD_BENCH_LARGE_WS";

/// The spec of a call in the large workspace, with the repositories the walk finds there (as
/// the supervisor sends it), for the step that mounts there.
static LARGE: std::sync::OnceLock<SandboxSpec> = std::sync::OnceLock::new();

/// One lockdown step, run in a forked child: whether it succeeded.
type Step = (&'static str, fn(&SandboxSpec) -> bool);

/// Forks a child that exits at once and reaps it: what a PID namespace's first process costs.
fn fork_and_reap() -> bool {
    // SAFETY: called in a forked child of the single-threaded steps program; the grandchild only
    // calls _exit.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            // SAFETY: _exit ends the grandchild without running the parent's destructors.
            unsafe { libc::_exit(0) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => nix::sys::wait::waitpid(child, None)
            .is_ok_and(|s| matches!(s, nix::sys::wait::WaitStatus::Exited(_, 0))),
        Err(_) => false,
    }
}

/// Times each lockdown step of the worker (the `tool_worker` library's own functions) in a
/// forked child, against a child that does nothing: CPU of the fork, the step and the exit, as
/// user + sys of this process and its waited-for children. Runs single-threaded: no runtime.
pub fn lockdown_steps() {
    use tool_worker::lockdown::{caps, contain, landlock, limits, mounts, process, seccomp};
    let root = std::env::temp_dir().join(format!("agentd-bench-steps-{}", std::process::id()));
    let (ws, tmp) = (root.join("ws"), root.join("tmp"));
    if std::fs::create_dir_all(&ws)
        .and_then(|_| std::fs::create_dir_all(&tmp))
        .is_err()
    {
        std::process::exit(1);
    }
    let spec = agentd::worker::default_sandbox(ws, tmp.clone(), None);
    let is_root = nix::unistd::geteuid().is_root();
    let mut steps: Vec<Step> = vec![
        ("reference: fork, exit", |_| true),
        ("reference: fork, fork a child, reap it, exit", |_| {
            fork_and_reap()
        }),
        ("close fds + setsid", |_| {
            process::close_other_fds().is_ok() && process::new_session().is_ok()
        }),
        (
            "pid + ipc namespaces: unshare, fork its init, reap it",
            |_| contain::enter(nix::unistd::geteuid().is_root(), false).is_ok() && fork_and_reap(),
        ),
        ("pid + ipc + mount namespaces, the worker as init", |_| {
            contain::enter(nix::unistd::geteuid().is_root(), true).is_ok()
                && contain::become_init().is_ok()
        }),
        (
            "  ... and the mounts (the mount namespace's own cost)",
            |s| {
                contain::enter(nix::unistd::geteuid().is_root(), true).is_ok()
                    && contain::become_init().is_ok()
                    && mounts::set_up(s).is_ok()
            },
        ),
        ("rlimits", |s| limits::apply(&s.limits, true).is_ok()),
        // Unprivileged, the worker clears its capabilities inside its user namespace, where it
        // holds them; take the row above from this one for the clearing alone.
        (
            "clear capabilities (non-root: after the namespaces)",
            |_| {
                let root = nix::unistd::geteuid().is_root();
                (root || contain::enter(false, false).is_ok()) && caps::clear_all().is_ok()
            },
        ),
        (
            "Landlock: open its paths, build the ruleset, restrict_self",
            |s| landlock::enforce(s, false, None).is_ok(),
        ),
        (
            "(Landlock's fixed paths opened and stat'ed, no Landlock)",
            |s| open_landlock_paths(s),
        ),
        ("Landlock, fixed paths opened ahead (zygote)", |s| {
            landlock::enforce(s, false, take_warm().fixed).is_ok()
        }),
        (
            "seccomp: compile and install both filters (exec'd worker)",
            |_| seccomp::install(false).is_ok(),
        ),
        (
            "seccomp: the late part only (the zygote holds the rest)",
            |_| {
                let warm = take_warm();
                warm.tables
                    .is_some_and(|t| seccomp::apply(t.late(false)).is_ok())
            },
        ),
    ];
    if let Some(large) = std::env::var_os(LARGE_WS_ENV).map(std::path::PathBuf::from) {
        let mut spec = agentd::worker::default_sandbox(large.clone(), tmp, None);
        spec.repositories = agentd::worker::repos::RepoWalk::default()
            .refresh([large.as_path()])
            .repositories;
        let _ = LARGE.set(spec);
        // Beside the mounts step above: the cost of the large workspace's repositories.
        steps.insert(
            6,
            (
                "  ... the mounts in the large workspace (all its repos)",
                |_| {
                    LARGE.get().is_some_and(|large| {
                        contain::enter(nix::unistd::geteuid().is_root(), true).is_ok()
                            && contain::become_init().is_ok()
                            && mounts::set_up(large).is_ok()
                    })
                },
            ),
        );
    }
    if let Ok(mut warm) = WARM.lock() {
        *warm = Some(tool_worker::lockdown::warm::Preparer::prepare().into_warm());
    }
    let mut samples: Vec<Vec<Sample>> = steps.iter().map(|_| Vec::new()).collect();
    let mut failed: Vec<bool> = steps.iter().map(|_| false).collect();
    for _ in 0..calls() {
        for (i, (_, step)) in steps.iter().enumerate() {
            let mut ok = true;
            samples[i].push(measure(|| {
                let start = Instant::now();
                ok = run_in_child(*step, &spec);
                start
            }));
            failed[i] |= !ok;
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    let reference = summarize(&samples[0]).cpu_mean;
    println!(
        "{:<52} {:>8} {:>8} {:>10}   (as {})",
        "lockdown steps, each in a forked child, ms",
        "wall med",
        "cpu mean",
        "- ref",
        if is_root { "root" } else { "non-root" }
    );
    for (((name, _), samples), failed) in steps.iter().zip(&samples).zip(failed) {
        let s = summarize(samples);
        let extra = s.cpu_mean.as_secs_f64() - reference.as_secs_f64();
        println!(
            "{name:<52} {:>8.3} {:>8.3} {:>+10.3}{}",
            s.wall_med.as_secs_f64() * 1000.0,
            s.cpu_mean.as_secs_f64() * 1000.0,
            extra * 1000.0,
            if failed {
                "   (FAILED in some calls)"
            } else {
                ""
            }
        );
    }
}

/// Forks; the child no_new_privs's itself (as the worker does before Landlock and seccomp), runs
/// `step` and exits with its outcome; the parent reaps it.
fn run_in_child(step: fn(&SandboxSpec) -> bool, spec: &SandboxSpec) -> bool {
    // SAFETY: the steps program is single-threaded, so the child may run any code (allocate,
    // open files) before it exits.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            let ok = tool_worker::lockdown::process::no_new_privs().is_ok() && step(spec);
            // SAFETY: _exit ends the child without running destructors meant for the parent.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => nix::sys::wait::waitpid(child, None)
            .is_ok_and(|s| matches!(s, nix::sys::wait::WaitStatus::Exited(_, 0))),
        Err(_) => false,
    }
}

/// What Landlock's rule building does besides Landlock itself: the fixed paths (system trees,
/// devices, the `/etc` allowlist) each opened `O_PATH` and `fstat`ed, by the worker's own code.
fn open_landlock_paths(_: &SandboxSpec) -> bool {
    !tool_worker::lockdown::landlock::open_fixed().is_empty()
}

/// What a zygote prepares ahead for the workers it forks; made by the steps program before it
/// forks its children, taken (in its own copy) by a child that measures with it.
static WARM: std::sync::Mutex<Option<tool_worker::lockdown::warm::Warm>> =
    std::sync::Mutex::new(None);

fn take_warm() -> tool_worker::lockdown::warm::Warm {
    WARM.lock()
        .ok()
        .and_then(|mut w| w.take())
        .unwrap_or_default()
}
