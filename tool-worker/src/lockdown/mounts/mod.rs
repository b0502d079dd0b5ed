//! The call's view of the filesystem, built in its own mount namespace: the first of the two
//! filesystem layers (Landlock is the second, independent one).
//!
//! [`view`] reads what the call may see from the spec and the machine; [`plan`] turns it into
//! ordered steps (pure, unit-tested); [`apply`] runs them through a [`Mounter`] — the kernel
//! ([`kernel::Kernel`]) in the worker, a recorder in tests.

pub mod kernel;
pub mod plan;
pub mod view;

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
pub fn set_up(spec: &protocol::worker::SandboxSpec) -> Result<Vec<PathBuf>, MountError> {
    make_hooks_dir(spec);
    let view = View::read(spec);
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
    apply(&plan(&view), &mut kernel::Kernel::default())?;
    Ok(view.protected)
}

/// A repository without `.git/hooks` (cloned with an empty template, or the directory removed)
/// gets an empty one, owned like `.git`, so that it can be protected: a path that does not exist
/// cannot be mounted over, and git runs whatever appears there. Best effort: where it cannot be
/// made, nothing is there for git to run either, until a call makes it (see docs/security.md).
fn make_hooks_dir(spec: &protocol::worker::SandboxSpec) {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    if spec.profile != protocol::worker::SandboxProfile::WorkspaceWrite {
        return;
    }
    for root in std::iter::once(&spec.workspace).chain(&spec.write_paths) {
        let git = root.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&git) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let hooks = git.join("hooks");
        if std::fs::symlink_metadata(&hooks).is_err()
            && std::fs::DirBuilder::new()
                .mode(0o755)
                .create(&hooks)
                .is_ok()
        {
            let _ = std::os::unix::fs::lchown(&hooks, Some(meta.uid()), Some(meta.gid()));
        }
        // With `extensions.worktreeConfig` git also reads `config.worktree`, hooks and all.
        let worktree_config = git.join("config.worktree");
        let enabled = std::fs::read_to_string(git.join("config"))
            .is_ok_and(|c| c.to_ascii_lowercase().contains("worktreeconfig"));
        if enabled
            && std::fs::symlink_metadata(&worktree_config).is_err()
            && std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(&worktree_config)
                .is_ok()
        {
            let _ = std::os::unix::fs::lchown(&worktree_config, Some(meta.uid()), Some(meta.gid()));
        }
    }
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
