//! A cgroup per tool call, where the kernel offers one: bounds the number of processes (the only
//! bound on a root worker's fork bomb, since RLIMIT_NPROC never binds uid 0) and memory.
//!
//! Two layouts are supported, detected at start-up:
//! * cgroup v2 with controllers (current distributions): `/sys/fs/cgroup/agentd/call-N`, with
//!   `pids.max` and `memory.max`;
//! * hybrid v1 (older systems, and this project's build machines): the v1 `pids` and `memory`
//!   hierarchies, `/sys/fs/cgroup/{pids,memory}/agentd/call-N`.
//!
//! Killing a call's processes does not depend on this: the PID namespace does it.

use super::aggregate::SessionGroup;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the cgroup hierarchies are mounted.
pub const ROOT: &str = "/sys/fs/cgroup";

/// Which cgroup layout is usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Unified v2 hierarchy with the pids and memory controllers.
    V2,
    /// v1 `pids` and `memory` hierarchies.
    V1,
    /// None we can write (not root, or no controllers).
    Unavailable,
}

impl Layout {
    /// Detects the layout of this machine, for this process.
    pub fn detect() -> Self {
        if !nix::unistd::geteuid().is_root() {
            return Layout::Unavailable;
        }
        let controllers =
            std::fs::read_to_string(Path::new(ROOT).join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "pids") {
            return Layout::V2;
        }
        if Path::new(ROOT).join("pids/cgroup.procs").exists() {
            return Layout::V1;
        }
        Layout::Unavailable
    }

    /// In words, with the aggregate bounds in force ([`super::aggregate::in_force`]), for
    /// `agentd status` (a `Cow`, which its caller turns into the `String` it sends).
    pub fn describe(self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Owned(format!(
            "{}; aggregate bounds: {}",
            self.name(),
            super::aggregate::in_force(self)
        ))
    }

    /// The layout in words.
    pub fn name(self) -> &'static str {
        match self {
            Layout::V2 => "cgroup v2 (pids.max, memory.max)",
            Layout::V1 => "cgroup v1 (pids, memory)",
            Layout::Unavailable => "no cgroup (not root, or no pids controller)",
        }
    }
}

/// One call's cgroup(s); on drop, kept for a later call if it is empty, else removed.
#[derive(Debug)]
pub struct CallGroup {
    /// The directories created, one per hierarchy.
    dirs: Vec<PathBuf>,
    /// Groups of the session the worker joins without owning them (v1's `cpu`, which has no
    /// per-call group).
    joins: Vec<PathBuf>,
    /// What it was made with: a spare serves only a call that asks the same, in the same
    /// session.
    made: Made,
    /// The session's group, kept while the call's is in it (`None` for a spare: a spare of a
    /// session is removed with it, [`release_spares_under`]).
    session: Option<Arc<SessionGroup>>,
}

/// What a call's group was made with.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Made {
    layout: Layout,
    /// The session's first directory, if in one.
    session: Option<PathBuf>,
    max_processes: u64,
    memory_bytes: u64,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// Emptied groups of ended calls, kept for the next calls (up to [`SPARES`]): making and removing
/// a cgroup (two, in v1's hierarchies) was a quarter of the supervisor's CPU per call. A group is
/// kept only when no process is left in it; removed at exit ([`release_spares`]), and the
/// leftovers of a process that died without that are swept by the next one ([`sweep_leftovers`]).
static SPARE: std::sync::Mutex<Vec<CallGroup>> = std::sync::Mutex::new(Vec::new());
const SPARES: usize = 8;
/// Most memory still charged to an emptied group for it to be kept. What a call leaves charged
/// stays with the group: page cache is reclaimed under pressure, but the pages of files it wrote
/// on a tmpfs (a workspace under `/dev/shm`) cannot be, and would shrink the next call's limit —
/// possibly another user's. A group removed hands its charges to its parent instead.
const SPARE_MAX_CHARGED: u64 = 4 << 20;

/// Removes the kept groups; registered with `atexit` when the first is kept.
pub fn release_spares() {
    let spares = match SPARE.lock() {
        Ok(mut spare) => std::mem::take(&mut *spare),
        Err(_) => return,
    };
    for mut group in spares {
        // Without directories, its drop keeps nothing.
        group.remove();
    }
}

/// Removes the kept groups under any of `dirs` (a session's, ending).
pub fn release_spares_under(dirs: &[&Path]) {
    let under = |g: &CallGroup| g.dirs.iter().any(|d| dirs.iter().any(|s| d.starts_with(s)));
    let spares: Vec<CallGroup> = match SPARE.lock() {
        Ok(mut spare) => {
            let (gone, kept) = std::mem::take(&mut *spare).into_iter().partition(under);
            *spare = kept;
            gone
        }
        Err(_) => return,
    };
    for mut group in spares {
        group.remove();
    }
}

extern "C" fn release_at_exit() {
    release_spares();
}

/// Removes the cgroup directory `dir`, waiting a little (about 0.2 s in all) while the kernel
/// still counts a process that was just killed in it (EBUSY).
pub(super) fn remove_group_dir(dir: &Path) -> std::io::Result<()> {
    let mut removed = std::fs::remove_dir(dir);
    for wait_ms in [1, 2, 5, 10, 20, 50, 100] {
        match &removed {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(std::time::Duration::from_millis(wait_ms));
                removed = std::fs::remove_dir(dir);
            }
            _ => break,
        }
    }
    removed
}

/// Whether `name` is `PREFIX-PID-…` and the process PID that made it is gone: a group a
/// supervisor killed before it could remove it.
pub(super) fn maker_gone(name: &str, prefix: &str) -> bool {
    let pid = name
        .strip_prefix(prefix)
        .and_then(|rest| rest.split('-').next())
        .and_then(|p| p.parse::<i32>().ok());
    pid.is_some_and(|p| {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None) == Err(nix::Error::ESRCH)
    })
}

/// Removes the empty `call-PID-N` groups of processes that are gone (a supervisor killed before
/// it could remove its spares).
fn sweep_leftovers(parents: &[PathBuf]) {
    for parent in parents {
        let Ok(entries) = std::fs::read_dir(parent) else {
            continue;
        };
        for entry in entries.flatten() {
            if maker_gone(&entry.file_name().to_string_lossy(), "call-") {
                // Fails harmlessly for a group someone is still in.
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}

impl CallGroup {
    /// Creates the call's group with the given limits, inside `session`'s group if given, or
    /// `None` where no layout is usable.
    pub fn create(
        layout: Layout,
        session: Option<&Arc<SessionGroup>>,
        max_processes: u64,
        memory_bytes: u64,
    ) -> std::io::Result<Option<Self>> {
        let made = Made {
            layout,
            session: session.and_then(|s| s.dirs().next().map(Path::to_path_buf)),
            max_processes,
            memory_bytes,
        };
        if let Ok(mut spare) = SPARE.lock()
            && let Some(at) = spare.iter().position(|g| g.made == made)
        {
            let mut group = spare.swap_remove(at);
            group.session = session.cloned();
            return Ok(Some(group));
        }
        if session.is_none() {
            // Outside a session the call's group is in `agentd`'s: bounded with all users'.
            super::aggregate::bound_top(layout, &super::aggregate::bounds())?;
        }
        // The parent in a hierarchy: the session's group there, else `agentd`'s.
        let parent = |hierarchy: &str| {
            session
                .and_then(|s| s.dir(hierarchy).map(Path::to_path_buf))
                .unwrap_or_else(|| Path::new(ROOT).join(hierarchy).join("agentd"))
        };
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| {
            sweep_leftovers(&[
                Path::new(ROOT).join("agentd"),
                Path::new(ROOT).join("pids/agentd"),
                Path::new(ROOT).join("memory/agentd"),
            ])
        });
        let name = format!(
            "call-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut group = CallGroup {
            dirs: Vec::new(),
            joins: Vec::new(),
            made,
            session: session.cloned(),
        };
        match layout {
            Layout::Unavailable => return Ok(None),
            Layout::V2 => {
                let parent = parent("");
                std::fs::create_dir_all(&parent)?;
                // Controllers must be enabled from the root down to our parent.
                let _ = std::fs::write(
                    Path::new(ROOT).join("cgroup.subtree_control"),
                    "+pids +memory",
                );
                let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+pids +memory");
                let dir = parent.join(&name);
                std::fs::create_dir(&dir)?;
                group.dirs.push(dir.clone());
                std::fs::write(dir.join("pids.max"), max_processes.to_string())?;
                let _ = std::fs::write(dir.join("memory.max"), memory_bytes.to_string());
            }
            Layout::V1 => {
                let pids = parent("pids").join(&name);
                std::fs::create_dir_all(&pids)?;
                group.dirs.push(pids.clone());
                std::fs::write(pids.join("pids.max"), max_processes.to_string())?;
                let memory = parent("memory").join(&name);
                if std::fs::create_dir_all(&memory).is_ok() {
                    group.dirs.push(memory.clone());
                    let _ = std::fs::write(
                        memory.join("memory.limit_in_bytes"),
                        memory_bytes.to_string(),
                    );
                }
                if let Some(cpu) = session.and_then(|s| s.dir("cpu")) {
                    group.joins.push(cpu.to_path_buf());
                }
            }
        }
        Ok(Some(group))
    }

    /// Moves `pid` (the worker, before it forks anything) into the group.
    pub fn add(&self, pid: u32) -> std::io::Result<()> {
        for dir in self.dirs.iter().chain(&self.joins) {
            std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        }
        Ok(())
    }
}

impl CallGroup {
    /// Kills every process in the group: `cgroup.kill` where the hierarchy has it (v2), else each
    /// listed process, a few rounds over, for forks in flight (`pids.max` bounds them).
    pub fn kill(&self) {
        for dir in &self.dirs {
            if std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
                continue;
            }
            for _ in 0..10 {
                let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                let pids: Vec<i32> = procs
                    .lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect();
                if pids.is_empty() {
                    break;
                }
                for pid in pids {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
    }
}

impl CallGroup {
    /// Whether a process other than `worker` is in the group: something the call started that
    /// has not ended (the worker reaps them before its result; a killed process stuck in the
    /// kernel is still listed).
    pub fn holds_other_than(&self, worker: Option<u32>) -> bool {
        self.dirs.iter().any(|dir| {
            std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|procs| {
                procs
                    .lines()
                    .filter_map(|l| l.trim().parse::<u32>().ok())
                    .any(|pid| Some(pid) != worker)
            })
        })
    }

    /// Whether no process is in the group (in any of its hierarchies).
    fn is_empty(&self) -> bool {
        self.dirs.iter().all(|dir| {
            std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|p| p.trim().is_empty())
        })
    }

    /// The memory still charged to the group, in bytes (0 where it has no memory controller).
    fn charged(&self) -> u64 {
        self.dirs
            .iter()
            .filter_map(|dir| {
                ["memory.current", "memory.usage_in_bytes"]
                    .iter()
                    .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
                    .and_then(|t| t.trim().parse().ok())
            })
            .max()
            .unwrap_or(0)
    }

    /// Kept for a later call when empty, charged with little memory, and there is room; `false`
    /// if not kept.
    fn keep(&mut self) -> bool {
        if self.dirs.is_empty() || !self.is_empty() || self.charged() > SPARE_MAX_CHARGED {
            return false;
        }
        let Ok(mut spare) = SPARE.lock() else {
            return false;
        };
        if spare.len() >= SPARES {
            return false;
        }
        static REGISTERED: std::sync::Once = std::sync::Once::new();
        // SAFETY: atexit takes a plain function pointer, called once at normal exit.
        REGISTERED.call_once(|| unsafe {
            libc::atexit(release_at_exit);
        });
        spare.push(CallGroup {
            dirs: std::mem::take(&mut self.dirs),
            joins: std::mem::take(&mut self.joins),
            made: self.made.clone(),
            session: None,
        });
        true
    }

    fn remove(&mut self) {
        for dir in &self.dirs {
            // Empty once the worker and its namespace are gone, which takes a moment after a
            // kill; a leftover after that is logged and harmless.
            if let Err(e) = remove_group_dir(dir) {
                tracing::warn!("cannot remove the call's cgroup {}: {e}", dir.display());
            }
        }
        self.dirs.clear();
    }
}

impl Drop for CallGroup {
    fn drop(&mut self) {
        // The worker is its PID namespace's init (or, where the kernel refused that clone, the
        // init's parent): the namespace's other processes, killed by the kernel when the init
        // dies, may still be exiting when the worker is reaped.
        self.kill();
        if !self.keep() {
            self.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's layout and a new group with these limits; `None` (said) where there is no
    /// cgroup layout to use.
    fn group(procs: u64, memory: u64) -> Option<(Layout, CallGroup)> {
        let layout = Layout::detect();
        if layout == Layout::Unavailable {
            eprintln!("skipped: no cgroup layout here (not root?)");
            return None;
        }
        let Ok(Some(group)) = CallGroup::create(layout, None, procs, memory) else {
            panic!("cannot create a call cgroup as root");
        };
        Some((layout, group))
    }

    #[test]
    fn an_emptied_group_serves_the_next_call_with_the_same_limits_and_is_removed_at_release() {
        // Limits no other test asks for, so no other test takes this spare.
        let (procs, memory) = (4242, 424_242_424);
        let Some((layout, first)) = group(procs, memory) else {
            return;
        };
        let dirs = first.dirs.clone();
        drop(first);
        assert!(dirs.iter().all(|d| d.exists()), "kept, not removed");
        let Ok(Some(second)) = CallGroup::create(layout, None, procs, memory) else {
            panic!("cannot create a call cgroup as root");
        };
        assert_eq!(second.dirs, dirs, "the spare serves the next call");
        let Ok(Some(other)) = CallGroup::create(layout, None, procs + 1, memory) else {
            panic!("cannot create a call cgroup as root");
        };
        assert_ne!(other.dirs, dirs, "other limits get a group of their own");
        drop((second, other));
        release_spares();
        assert!(dirs.iter().all(|d| !d.exists()), "released: {dirs:?}");
    }

    #[test]
    fn a_group_left_charged_with_memory_is_removed_not_kept() {
        use std::io::Write as _;
        let Some((_, group)) = group(4343, 434_343_434) else {
            return;
        };
        if !group
            .dirs
            .iter()
            .any(|d| d.join("memory.current").exists() || d.join("memory.usage_in_bytes").exists())
        {
            eprintln!("skipped: no memory controller here");
            return;
        }
        // A file on tmpfs written from inside the group: its pages stay charged after the
        // writer is gone, and cannot be reclaimed.
        let file = format!("/dev/shm/agentd-cgroup-charge-{}", std::process::id());
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("read _; head -c 16000000 /dev/zero > {file}"))
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        group.add(child.id()).unwrap();
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        assert!(child.wait().unwrap().success());
        assert!(group.charged() > SPARE_MAX_CHARGED, "{}", group.charged());
        let dirs = group.dirs.clone();
        drop(group);
        let _ = std::fs::remove_file(&file);
        assert!(
            dirs.iter().all(|d| !d.exists()),
            "removed, not kept: {dirs:?}"
        );
    }
}
