//! The call's view of the filesystem, built in its own mount namespace: the first of the two
//! filesystem layers (Landlock is the second, independent one).
//!
//! [`view`] reads what the call may see from the spec and the machine; [`plan`] turns it into
//! ordered steps (pure, unit-tested), to which [`hide_inside`] adds the covers of what must stay
//! hidden inside a kept root; [`apply`] runs them through a [`Mounter`] — the kernel
//! ([`kernel::Kernel`]) in the worker, a recorder in tests.

pub mod as_owner;
pub mod git_index;
pub mod gitconfig;
pub mod hide_inside;
pub mod kernel;
pub mod masked;
pub mod name_glob;
pub mod plan;
pub mod resolve;
pub mod view;
pub mod within;

pub use plan::{Root, Step, View, plan};

use std::path::PathBuf;

/// A mount step that failed; the call is refused with it.
#[derive(Debug, thiserror::Error)]
#[error("{what} {path}: {source}")]
pub struct MountError {
    /// The step, in words.
    pub what: &'static str,
    /// The path it was applied to.
    pub path: PathBuf,
    /// The kernel's answer.
    #[source]
    pub source: std::io::Error,
}

/// Something that carries out mount steps.
pub trait Mounter {
    /// Carries out one step.
    fn apply(&mut self, step: &Step) -> Result<(), MountError>;
}

/// Carries out `steps` in order; the first failure stops it.
pub fn apply(steps: &[Step], mounter: &mut impl Mounter) -> Result<(), MountError> {
    steps.iter().try_for_each(|step| mounter.apply(step))
}

/// Builds the view `spec` asks for in the current (fresh) mount namespace. Returns the protected
/// paths made read-only. Must run in the PID namespace's init (for `/proc`) and before the
/// working directory is entered.
pub fn set_up(spec: &protocol::worker::SandboxSpec) -> Result<Mounted, MountError> {
    refuse_pseudo_filesystems(spec)?;
    let view = View::read(spec)?;
    // Where the configured paths lead, for Landlock's rules: after the mounts a symlink under a
    // hidden directory (`/tmp/cache-link`) is gone, its target carried over.
    let writable = view.roots(spec);
    let resolved = |paths: &[PathBuf]| -> Vec<PathBuf> {
        paths
            .iter()
            .filter_map(|p| resolve::resolve(p, &writable).ok().flatten())
            .collect()
    };
    let (write_paths, read_paths) = (resolved(&spec.write_paths), resolved(&spec.read_paths));
    let mounts = view.protected.len() + view.pins.len();
    if mounts > view::MAX_PROTECTED {
        return Err(MountError {
            what: "too many protected paths and pins to mount",
            path: spec.workspace.clone(),
            source: std::io::Error::other(format!(
                "{mounts}, more than {}: remove the extra directories under .git/modules or .git/worktrees, or narrow sandbox.protected_paths",
                view::MAX_PROTECTED
            )),
        });
    }
    // The report names each protected path to the supervisor, and the protocol carries paths as
    // text: a name that is not UTF-8 could not be reported, so the call is refused naming it.
    if let Some(odd) = view
        .protected
        .iter()
        .chain(&view.pins)
        .find(|p| p.to_str().is_none())
    {
        return Err(MountError {
            what: "a protected path whose name is not UTF-8",
            path: spec.workspace.clone(),
            source: std::io::Error::other(format!(
                "{} cannot be reported to the supervisor: rename it",
                odd.to_string_lossy()
            )),
        });
    }
    let mut steps = plan(&view);
    hide_inside::insert(&mut steps, hide_inside::steps(&spec.hidden_inside, &view)?);
    apply(&steps, &mut kernel::Kernel::default())?;
    Ok(Mounted {
        protected: view.protected,
        write_paths,
        read_paths,
    })
}

/// What [`set_up`] made.
#[derive(Debug, Default)]
pub struct Mounted {
    /// The protected paths made read-only.
    pub protected: Vec<PathBuf>,
    /// The configured write paths as resolved when the view was read (symlinks outside the
    /// writable roots followed), for the rules that come after the mounts.
    pub write_paths: Vec<PathBuf>,
    /// The configured read paths, likewise.
    pub read_paths: Vec<PathBuf>,
}

/// A writable `/proc`, `/sys` or `/dev` is the host's kernel settings and devices, not files: a
/// root call could write `/proc/sys/kernel/core_pattern`. Refused as write paths, whatever the
/// configuration says.
fn refuse_pseudo_filesystems(spec: &protocol::worker::SandboxSpec) -> Result<(), MountError> {
    for path in &spec.write_paths {
        let real = path.canonicalize().unwrap_or_else(|_| path.clone());
        if ["/proc", "/sys", "/dev"]
            .iter()
            .any(|p| real.starts_with(p))
            || real == std::path::Path::new("/")
        {
            return Err(MountError {
                what: "refusing a write path on a kernel filesystem (or the root)",
                path: path.clone(),
                source: std::io::Error::from_raw_os_error(libc::EPERM),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Recorder {
        done: Vec<Step>,
        fail_at: Option<usize>,
    }

    impl Mounter for Recorder {
        fn apply(&mut self, step: &Step) -> Result<(), MountError> {
            if self.fail_at == Some(self.done.len()) {
                return Err(MountError {
                    what: "test",
                    path: "/x".into(),
                    source: std::io::Error::from_raw_os_error(libc::EPERM),
                });
            }
            self.done.push(step.clone());
            Ok(())
        }
    }

    #[test]
    fn the_first_failing_step_stops_the_rest() {
        let steps = plan(&View {
            hidden: vec!["/home".into()],
            ..View::default()
        });
        let mut all = Recorder::default();
        apply(&steps, &mut all).unwrap();
        assert_eq!(all.done, steps);
        let mut failing = Recorder {
            fail_at: Some(1),
            ..Recorder::default()
        };
        let err = apply(&steps, &mut failing).unwrap_err();
        assert_eq!(failing.done, steps[..1]);
        assert!(err.to_string().contains("/x"), "{err}");
    }
}
