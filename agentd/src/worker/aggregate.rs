//! Bounds over many calls at once: a cgroup per session, inside a cgroup per user, inside the
//! `agentd` group every user's are in, above the calls' own groups
//! ([`super::cgroup::CallGroup`]). A call's group bounds one call; without these, eight parallel
//! calls of one turn could take eight times a call's memory, many sessions many times the
//! machine's processes, and two users each their user's bound — more than the machine together.
//!
//! ```text
//! <root>/agentd/user-<uid>/session-<pid>-<n>/call-<pid>-<n>     (cgroup v2)
//! <root>/{pids,memory,cpu}/agentd/user-<uid>/session-<pid>-<n>/… (hybrid v1)
//! ```
//!
//! Memory is charged to the group of the process that touches a page, tmpfs pages (the call's
//! private `/dev/shm`, a workspace on tmpfs) included, and a group's usage counts its
//! children's: a session's calls together cannot pass the session's `memory`, a user's sessions
//! together the user's, and all users together the `agentd` group's ([`Bounds::total`]). Each
//! level is written clamped to the one above it ([`Level::within`]), so no user's bound exceeds
//! the total whatever the config says. Processes likewise (`pids.max`), and CPU time where a bound is set
//! (`cpu.max`, v1 `cpu.cfs_quota_us`; v1 puts the call's processes in the session's own `cpu`
//! group, as v1 has no per-call CPU bound to nest).
//!
//! The user's group, and the `agentd` group, are shared by every supervisor of the machine that
//! runs sessions for that user (as root): the limits written last hold. It stays when empty (it holds no process and
//! costs nothing); a session's group is removed with the session.

use super::cgroup::{Layout, ROOT};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The bounds of one level (a session, or a user).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    /// Memory, bytes (tmpfs pages included).
    pub memory_bytes: u64,
    /// Processes and threads.
    pub max_processes: u64,
    /// CPU time as a number of CPUs (1.5: one and a half CPUs' time per second); `None`: none.
    pub cpus: Option<f64>,
}

impl Level {
    /// This level with each bound at most `outer`'s (an unbounded CPU takes `outer`'s): a
    /// group's limit above its parent's would bound nothing, and v1's `cpu` refuses it.
    pub fn within(self, outer: &Level) -> Level {
        Level {
            memory_bytes: self.memory_bytes.min(outer.memory_bytes),
            max_processes: self.max_processes.min(outer.max_processes),
            cpus: match (self.cpus, outer.cpus) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// The aggregate bounds: per session, per user, and all users together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// All calls of one session together.
    pub session: Level,
    /// All sessions of one user together.
    pub user: Level,
    /// All sessions of all users together: the `agentd` group the users' groups are in. Without
    /// it the users' bounds add up: two users at three quarters of the RAM each took the
    /// machine past its memory.
    pub total: Level,
}

/// What this machine has, for the defaults.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    /// Total RAM, bytes.
    pub memory_bytes: u64,
    /// The most processes and threads the kernel allows (`pid_max`, `threads-max`).
    pub max_processes: u64,
    /// Online CPUs.
    pub cpus: usize,
}

impl Machine {
    /// Read from `/proc`.
    pub fn read() -> Self {
        let read_u64 = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
        };
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(8 << 30, |kb| kb * 1024);
        let pid_max = read_u64("/proc/sys/kernel/pid_max").unwrap_or(32768);
        let threads_max = read_u64("/proc/sys/kernel/threads-max").unwrap_or(pid_max);
        Machine {
            memory_bytes,
            max_processes: pid_max.min(threads_max),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

impl Bounds {
    /// The defaults for `machine`: all users together three quarters of the RAM and half the
    /// processes the kernel allows (the rest is the machine's: agentd, its users' own
    /// programs, the system); one user half the RAM (two thirds of agentd's share, so one
    /// user cannot take it all) and a quarter of the processes; one session half the RAM and
    /// an eighth of the processes. CPU unbounded (sibling groups share it by weight, and the
    /// `agentd` group has the default weight: under contention it gets what any other top
    /// group gets).
    pub fn defaults(machine: &Machine) -> Self {
        Bounds {
            session: Level {
                memory_bytes: machine.memory_bytes / 2,
                max_processes: (machine.max_processes / 8).max(64),
                cpus: None,
            },
            user: Level {
                memory_bytes: machine.memory_bytes / 2,
                max_processes: (machine.max_processes / 4).max(128),
                cpus: None,
            },
            total: Level {
                memory_bytes: machine.memory_bytes / 4 * 3,
                max_processes: (machine.max_processes / 2).max(256),
                cpus: None,
            },
        }
    }

    /// Each level within the one above it ([`Level::within`]).
    pub fn nested(self) -> Self {
        let user = self.user.within(&self.total);
        Bounds {
            session: self.session.within(&user),
            user,
            total: self.total,
        }
    }
}

/// The bounds configured for this process ([`configure`]); the machine's defaults until then.
static CONFIGURED: RwLock<Option<Bounds>> = RwLock::new(None);

/// Sets the bounds every session made from now on gets (the config's `[aggregate]`).
pub fn configure(bounds: Bounds) {
    if let Ok(mut b) = CONFIGURED.write() {
        *b = Some(bounds);
    }
}

/// The bounds in force for new sessions, nested.
pub fn bounds() -> Bounds {
    CONFIGURED
        .read()
        .ok()
        .and_then(|b| *b)
        .unwrap_or_else(|| Bounds::defaults(&Machine::read()))
        .nested()
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

fn level_words(level: &Level, cpu: bool) -> String {
    let cpus = match (level.cpus, cpu) {
        (Some(c), true) => format!("{c} CPUs"),
        (Some(_), false) => "CPU not bounded (no cpu controller)".into(),
        (None, _) => "CPU not bounded".into(),
    };
    format!(
        "memory {}, {} processes, {cpus}",
        gib(level.memory_bytes),
        level.max_processes
    )
}

/// In words, for `agentd status`: which aggregate bounds hold with `layout`.
pub fn in_force(layout: Layout) -> String {
    let b = bounds();
    match layout {
        Layout::Unavailable => {
            "none across calls (no cgroup: each call has its own RLIMIT_AS and RLIMIT_NPROC; RLIMIT_NPROC counts all of the user's processes)".into()
        }
        Layout::V1 | Layout::V2 => {
            let cpu = has_cpu(layout);
            format!(
                "per session: {}; per user: {}; all users: {}",
                level_words(&b.session, cpu),
                level_words(&b.user, cpu),
                level_words(&b.total, cpu)
            )
        }
    }
}

/// Whether the layout has a cpu controller to bound CPU time with.
fn has_cpu(layout: Layout) -> bool {
    match layout {
        Layout::V2 => std::fs::read_to_string(Path::new(ROOT).join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu")),
        Layout::V1 => Path::new(ROOT).join("cpu/cgroup.procs").exists(),
        Layout::Unavailable => false,
    }
}

/// The v1 hierarchies a session has a group in.
const V1_HIERARCHIES: [&str; 3] = ["pids", "memory", "cpu"];

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A session's group (one per hierarchy in v1), removed when the last call holding it ends.
#[derive(Debug)]
pub struct SessionGroup {
    /// `(hierarchy, directory)`: `""` for the v2 hierarchy, else the v1 controller's name.
    dirs: Vec<(&'static str, PathBuf)>,
}

fn write(dir: &Path, file: &str, value: &str) -> std::io::Result<()> {
    std::fs::write(dir.join(file), value).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("writing {value} to {}: {e}", dir.join(file).display()),
        )
    })
}

/// Writes `level`'s bounds into the group `dir` of hierarchy `hierarchy`.
fn set_level(hierarchy: &str, dir: &Path, level: &Level) -> std::io::Result<()> {
    const PERIOD_US: f64 = 100_000.0;
    let quota = level.cpus.map(|c| ((c * PERIOD_US) as u64).max(1000));
    match hierarchy {
        "" => {
            write(dir, "pids.max", &level.max_processes.to_string())?;
            // Only where the memory controller is enabled (Layout::V2 asks only for pids).
            if dir.join("memory.max").exists() {
                write(dir, "memory.max", &level.memory_bytes.to_string())?;
            }
            if dir.join("cpu.max").exists() {
                let value = quota.map_or("max 100000".to_owned(), |q| format!("{q} 100000"));
                write(dir, "cpu.max", &value)?;
            }
            Ok(())
        }
        "pids" => write(dir, "pids.max", &level.max_processes.to_string()),
        "memory" => write(
            dir,
            "memory.limit_in_bytes",
            &level.memory_bytes.to_string(),
        ),
        "cpu" => {
            write(dir, "cpu.cfs_period_us", "100000")?;
            write(
                dir,
                "cpu.cfs_quota_us",
                &quota.map_or("-1".to_owned(), |q| q.to_string()),
            )
        }
        _ => Ok(()),
    }
}

/// Whether `hierarchy` (a v1 controller's name) has a mounted hierarchy for the bounds, and is
/// wanted: v1's `cpu` only where a level bounds CPU time.
fn v1_wanted(hierarchy: &str, bounds: &Bounds) -> bool {
    Path::new(ROOT)
        .join(hierarchy)
        .join("cgroup.procs")
        .exists()
        && (hierarchy != "cpu"
            || bounds.session.cpus.is_some()
            || bounds.user.cpus.is_some()
            || bounds.total.cpus.is_some())
}

/// The controllers enabled from the root down (v2).
fn v2_controllers(layout: Layout) -> &'static str {
    if has_cpu(layout) {
        "+pids +memory +cpu"
    } else {
        "+pids +memory"
    }
}

/// Makes the `agentd` group every user's group is in (and calls made outside a session), and
/// writes `total` to it: the bound over all of them together. Returns its directory per
/// hierarchy (`""`: v2).
pub(super) fn bound_top(
    layout: Layout,
    bounds: &Bounds,
) -> std::io::Result<Vec<(&'static str, PathBuf)>> {
    let mut tops = Vec::new();
    match layout {
        Layout::Unavailable => {}
        Layout::V2 => {
            let root = Path::new(ROOT);
            let top = root.join("agentd");
            // Controllers are enabled from the root down to the sessions' children.
            let _ = std::fs::write(root.join("cgroup.subtree_control"), v2_controllers(layout));
            std::fs::create_dir_all(&top)?;
            set_level("", &top, &bounds.total)?;
            let _ = std::fs::write(top.join("cgroup.subtree_control"), v2_controllers(layout));
            tops.push(("", top));
        }
        Layout::V1 => {
            for hierarchy in V1_HIERARCHIES {
                if !v1_wanted(hierarchy, bounds) {
                    continue;
                }
                let top = Path::new(ROOT).join(hierarchy).join("agentd");
                std::fs::create_dir_all(&top)?;
                set_level(hierarchy, &top, &bounds.total)?;
                tops.push((hierarchy, top));
            }
        }
    }
    Ok(tops)
}

impl SessionGroup {
    /// Makes the group of a session of user `uid` with `bounds` (nested: no level above the
    /// one over it), inside the user's group (made or updated with `bounds.user`), inside the
    /// `agentd` group (updated with `bounds.total`); `None` where `layout` has no cgroup to use.
    pub fn create(layout: Layout, uid: u32, bounds: &Bounds) -> std::io::Result<Option<Arc<Self>>> {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(sweep_leftovers);
        if layout == Layout::Unavailable {
            return Ok(None);
        }
        let bounds = bounds.nested();
        let name = format!(
            "session-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let user = format!("user-{uid}");
        let mut group = SessionGroup { dirs: Vec::new() };
        for (hierarchy, top) in bound_top(layout, &bounds)? {
            let user_dir = top.join(&user);
            std::fs::create_dir_all(&user_dir)?;
            set_level(hierarchy, &user_dir, &bounds.user)?;
            if layout == Layout::V2 {
                let _ = std::fs::write(
                    user_dir.join("cgroup.subtree_control"),
                    v2_controllers(layout),
                );
            }
            let dir = user_dir.join(&name);
            std::fs::create_dir(&dir)?;
            group.dirs.push((hierarchy, dir.clone()));
            set_level(hierarchy, &dir, &bounds.session)?;
            if layout == Layout::V2 {
                let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+pids +memory");
            }
        }
        Ok(Some(Arc::new(group)))
    }

    /// The session's directory in `hierarchy` (`""`: v2), if it has one.
    pub fn dir(&self, hierarchy: &str) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(h, _)| *h == hierarchy)
            .map(|(_, d)| d.as_path())
    }

    /// Every directory of the session (the spares of its calls are found under them).
    pub fn dirs(&self) -> impl Iterator<Item = &Path> {
        self.dirs.iter().map(|(_, d)| d.as_path())
    }
}

impl Drop for SessionGroup {
    fn drop(&mut self) {
        // Every call holding the group has ended; their kept groups go now.
        super::cgroup::release_spares_under(self.dirs().collect::<Vec<_>>().as_slice());
        for (_, dir) in &self.dirs {
            let _ = std::fs::write(dir.join("cgroup.kill"), "1");
            if let Err(e) = remove_tree(dir) {
                tracing::warn!("cannot remove the session's cgroup {}: {e}", dir.display());
            }
        }
    }
}

/// Removes the empty group `dir` and the empty groups under it, deepest first.
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = remove_tree(&entry.path());
            }
        }
    }
    super::cgroup::remove_group_dir(dir)
}

/// Removes the session groups of supervisors that are gone (killed before they could), with
/// their calls' groups.
fn sweep_leftovers() {
    let tops = std::iter::once(PathBuf::from(ROOT).join("agentd")).chain(
        V1_HIERARCHIES
            .iter()
            .map(|h| Path::new(ROOT).join(h).join("agentd")),
    );
    for top in tops {
        let Ok(users) = std::fs::read_dir(&top) else {
            continue;
        };
        for user in users.flatten() {
            if !user.file_name().to_string_lossy().starts_with("user-") {
                continue;
            }
            let Ok(sessions) = std::fs::read_dir(user.path()) else {
                continue;
            };
            for session in sessions.flatten() {
                if super::cgroup::maker_gone(&session.file_name().to_string_lossy(), "session-") {
                    // Fails harmlessly for a group something is still in.
                    let _ = remove_tree(&session.path());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_fit_the_machine_and_nest() {
        let m = Machine {
            memory_bytes: 24 << 30,
            max_processes: 32768,
            cpus: 2,
        };
        let b = Bounds::defaults(&m);
        assert_eq!(b.session.memory_bytes, 12 << 30);
        assert_eq!(b.user.memory_bytes, 12 << 30);
        assert_eq!(b.total.memory_bytes, 18 << 30);
        assert_eq!(
            (
                b.session.max_processes,
                b.user.max_processes,
                b.total.max_processes
            ),
            (4096, 8192, 16384)
        );
        assert_eq!(b.nested(), b, "the defaults nest as they are");
    }

    #[test]
    fn a_level_is_clamped_to_the_one_above_it() {
        let level = |memory_bytes, max_processes, cpus| Level {
            memory_bytes,
            max_processes,
            cpus,
        };
        let b = Bounds {
            session: level(8 << 30, 100, None),
            user: level(4 << 30, 5000, Some(3.0)),
            total: level(2 << 30, 1000, Some(2.0)),
        }
        .nested();
        assert_eq!(b.user, level(2 << 30, 1000, Some(2.0)));
        assert_eq!(b.session, level(2 << 30, 100, Some(2.0)));
    }

    #[test]
    fn a_session_group_nests_in_its_user_group_with_the_bounds_and_goes_with_it() {
        let layout = Layout::detect();
        if layout == Layout::Unavailable {
            eprintln!("skipped: no cgroup layout here (not root?)");
            return;
        }
        let bounds = Bounds {
            session: Level {
                memory_bytes: 300 << 20,
                max_processes: 77,
                cpus: Some(0.5),
            },
            user: Level {
                // Above the total: written as the total's.
                memory_bytes: u64::MAX / 4,
                max_processes: 177,
                cpus: Some(1.0),
            },
            // The machine's own, so that other tests' sessions meanwhile keep their bounds.
            total: Bounds::defaults(&Machine::read()).total,
        };
        // A uid no test runs as, so the user group's bounds are this test's.
        let uid = 4_000_000_000 - std::process::id() % 1000;
        let group = SessionGroup::create(layout, uid, &bounds).unwrap().unwrap();
        let pids_dir = group
            .dir(if layout == Layout::V2 { "" } else { "pids" })
            .unwrap();
        let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
        assert_eq!(read(pids_dir, "pids.max").trim(), "77");
        let user_dir = pids_dir.parent().unwrap().to_path_buf();
        assert!(
            user_dir.ends_with(format!("agentd/user-{uid}")),
            "{user_dir:?}"
        );
        assert_eq!(read(&user_dir, "pids.max").trim(), "177");
        let (mem_dir, mem_file) = match layout {
            Layout::V2 => (pids_dir.to_path_buf(), "memory.max"),
            _ => (
                group.dir("memory").unwrap().to_path_buf(),
                "memory.limit_in_bytes",
            ),
        };
        assert_eq!(read(&mem_dir, mem_file).trim(), (300u64 << 20).to_string());
        let user_mem = mem_dir.parent().unwrap();
        let top_mem = user_mem.parent().unwrap();
        assert!(top_mem.ends_with("agentd"), "{top_mem:?}");
        assert_eq!(
            read(user_mem, mem_file),
            read(top_mem, mem_file),
            "the user's memory is clamped to the total"
        );
        assert_eq!(
            read(user_dir.parent().unwrap(), "pids.max").trim(),
            bounds.total.max_processes.to_string()
        );
        let Ok(Some(call)) =
            super::super::cgroup::CallGroup::create(layout, Some(&group), 5, 1 << 30)
        else {
            panic!("cannot create a call group in the session's");
        };
        let dirs = group.dirs().map(Path::to_path_buf).collect::<Vec<_>>();
        let users: Vec<PathBuf> = dirs
            .iter()
            .filter_map(|d| d.parent().map(Path::to_path_buf))
            .collect();
        drop(call);
        drop(group);
        for user in &users {
            let _ = remove_tree(user);
        }
        assert!(
            dirs.iter().all(|d| !d.exists()),
            "removed with its calls' groups: {dirs:?}"
        );
    }
}
