//! What the zygote prepares once for every worker it forks, so a call does not redo it: the
//! descriptors of the fixed Landlock paths (system directories, the `/etc` allowlist, the
//! devices) and both compiled seccomp tables. Measured, these were about a third of a pooled
//! call's lockdown CPU: ~75 path walks, opens and `fstat`s, and the table's compilation.
//!
//! Landlock ties a rule to an inode, not to a path or a mount, so a descriptor opened by the
//! zygote in the host's mount namespace grants the same file inside the call's namespace. What
//! can go stale is the *path*: `/etc/resolv.conf` or `/etc/ld.so.cache` replaced by a rename
//! leaves the zygote's descriptor on the old inode, and the call would be refused the new file.
//! So the zygote watches every directory holding a fixed path (or, for a symlink, its target)
//! with inotify and opens them all again before the next fork when anything there was created,
//! removed, renamed or replaced.
//! A stale descriptor can only take access away, never grant it (Landlock is an allowlist).
//!
//! `/proc` is not among them: each call mounts a procfs of its own, a different inode. The
//! descriptors are opened `O_PATH | O_CLOEXEC`, kept through the worker's first steps (see
//! [`Warm::keep`]) and closed by the Landlock step that uses them, before any tool runs: they
//! point into the host's mounts, where the call's read-only mounts do not apply.

use super::landlock::{self, Fixed, Grant};
use super::seccomp::{self, SeccompError};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use seccompiler::BpfProgram;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::{Path, PathBuf};

/// Prepared state a forked worker takes over; empty (everything done per call) in a worker
/// started by `exec`.
#[derive(Debug, Default)]
pub struct Warm {
    /// The fixed Landlock paths, opened.
    pub fixed: Option<Vec<Fixed>>,
    /// The seccomp table's late part, compiled, when the zygote installed the early part (on
    /// itself, so every worker it forks inherits it); `None`: the worker installs it all.
    pub tables: Option<Tables>,
    /// The namespaces the zygote made this worker the init of, when it did.
    pub contained: Option<super::contain::Cloned>,
    /// Then, the zygote's pidfd: the worker's parent, checked on again after a uid change.
    pub parent: Option<std::os::fd::OwnedFd>,
}

/// The seccomp table split between the zygote and its workers ([`seccomp::Part`]): the early
/// part, installed by the zygote, and the late part compiled for both network settings.
#[derive(Debug)]
pub struct Tables {
    /// [`seccomp::Part::Early`].
    pub early: BpfProgram,
    /// [`seccomp::Part::Late`], `network: false`.
    pub offline: BpfProgram,
    /// [`seccomp::Part::Late`], `network: true`.
    pub online: BpfProgram,
}

impl Tables {
    fn compile() -> Result<Tables, SeccompError> {
        Ok(Tables {
            // The early part does not depend on the network setting (a test holds it so).
            early: seccomp::part_filter(false, seccomp::Part::Early)?,
            offline: seccomp::part_filter(false, seccomp::Part::Late)?,
            online: seccomp::part_filter(true, seccomp::Part::Late)?,
        })
    }

    /// The late part for a spec's network setting.
    pub fn late(&self, network: bool) -> &BpfProgram {
        if network { &self.online } else { &self.offline }
    }
}

impl Warm {
    /// The descriptors a forked worker must keep open through its first steps.
    pub fn keep(&self) -> Vec<RawFd> {
        self.fixed
            .iter()
            .flatten()
            .map(|f| f.opened.fd.as_fd().as_raw_fd())
            .chain(self.parent.as_ref().map(|p| p.as_raw_fd()))
            .collect()
    }
}

/// Where the fixed paths come from: [`landlock::fixed_paths`], or a test's own.
type Source = fn() -> Vec<(PathBuf, Grant)>;

/// The zygote's side: the prepared state and the watch that says when it went stale. The
/// default prepares nothing.
#[derive(Debug, Default)]
pub struct Preparer {
    warm: Warm,
    watch: Option<Inotify>,
    source: Option<Source>,
}

impl Preparer {
    /// Prepares everything once. What cannot be prepared (no inotify, a table that does not
    /// compile) is left to each call, which then fails or succeeds exactly as without a zygote.
    pub fn prepare() -> Preparer {
        let mut preparer = Preparer::watching(landlock::fixed_paths);
        preparer.warm.tables = Tables::compile().ok();
        preparer
    }

    fn watching(source: Source) -> Preparer {
        let (watch, fixed) = watch_and_open(source);
        Preparer {
            warm: Warm {
                fixed,
                ..Warm::default()
            },
            watch,
            source: Some(source),
        }
    }

    /// Installs the early part of the seccomp table on the calling process (the zygote), for
    /// every worker it will fork. If that fails, the workers install the whole table themselves.
    pub fn install_early_seccomp(&mut self) {
        let installed = self
            .warm
            .tables
            .as_ref()
            .is_some_and(|t| seccomp::install_early(&t.early).is_ok());
        if !installed {
            self.warm.tables = None;
        }
    }

    /// Opens the fixed paths (and watches their directories) again if anything was created,
    /// removed or renamed there since last time.
    pub fn refresh(&mut self) {
        let (Some(watch), Some(source)) = (&self.watch, self.source) else {
            return;
        };
        let mut changed = false;
        // Non-blocking: `EAGAIN` once nothing is left to read.
        while let Ok(events) = watch.read_events() {
            if events.is_empty() {
                break;
            }
            changed = true;
        }
        if changed {
            (self.watch, self.warm.fixed) = watch_and_open(source);
        }
    }

    /// The descriptors a forked worker must keep open through its first steps.
    pub fn keep(&self) -> Vec<RawFd> {
        self.warm.keep()
    }

    /// In the forked child: takes the state over (the zygote's watch is closed with the rest).
    pub fn into_warm(self) -> Warm {
        self.warm
    }
}

/// Watches every directory on the way to a fixed path, then opens the fixed paths (in that
/// order, so a change between the two is seen at the next refresh). Nothing is cached without
/// inotify.
fn watch_and_open(source: Source) -> (Option<Inotify>, Option<Vec<Fixed>>) {
    let paths = source();
    let Some(watch) = watch_ancestors(&paths) else {
        return (None, None);
    };
    (Some(watch), Some(landlock::open_all(paths)))
}

fn watch_ancestors(paths: &[(PathBuf, Grant)]) -> Option<Inotify> {
    let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
    let flags = AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF;
    // Where a fixed path is a symlink, the descriptor is for its target, which may be replaced
    // where no watch on the link's side sees it (`/etc/resolv.conf` ->
    // `/run/systemd/resolve/stub-resolv.conf`, renamed over on every DNS change): the call would
    // be refused the current file. So the targets' directories are watched too.
    let targets: Vec<PathBuf> = paths
        .iter()
        .filter_map(|(path, _)| std::fs::canonicalize(path).ok())
        .filter(|target| !paths.iter().any(|(path, _)| path == target))
        .collect();
    // Every ancestor, not only the parent: `/etc/pki/tls/certs` appears when `/etc/pki/tls`
    // is made inside a `/etc/pki` that did not exist at the last refresh.
    let mut dirs: Vec<&Path> = paths
        .iter()
        .map(|(path, _)| path.as_path())
        .chain(targets.iter().map(PathBuf::as_path))
        .flat_map(|path| path.ancestors().skip(1))
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        // A directory that is not there holds no fixed path; its parent's watch sees it come.
        if dir.is_dir() && inotify.add_watch(dir, flags).is_err() {
            return None;
        }
    }
    Some(inotify)
}

#[cfg(test)]
mod tests;
