//! The mount plan: a pure function from what the call may see and change ([`View`]) to the
//! ordered mount steps that build it ([`Step`]). No syscalls here, so the order is unit-tested.
//!
//! Why this order:
//! 1. `/` becomes recursively private first, so nothing done here propagates to the host.
//! 2. Every writable root, and every readable path that lies under a directory about to be hidden,
//!    is grabbed (a detached copy of its tree, `open_tree`) while it is still visible.
//! 3. Homes and shared temp dirs are hidden behind empty tmpfs mounts.
//! 4. The grabbed trees are attached at their own paths again (inside a hiding tmpfs, on a mount
//!    point made for them): a writable root is then a mount of its own, which step 6 can make
//!    writable without touching its parent.
//! 5. The whole tree becomes read-only and nosuid, hiding mounts included: metadata changes
//!    (chmod, chown, utime, xattrs) anywhere else fail with EROFS, which Landlock cannot refuse.
//! 6. Writable roots become writable again (unless the host mounted them read-only).
//! 7. Pins: directories on the way to a protected path are bound onto themselves, so they cannot
//!    be renamed away and recreated without the protection (`mv .git x && git init`).
//! 8. Protected paths are bound onto themselves read-only, inside their writable parent.
//! 9. A fresh procfs, read-only, mounted by the PID namespace's init so it shows the call's
//!    processes only, its host-revealing files masked ([`super::masked`], which needs it mounted), and a private
//!    `/dev/shm`, all made after step 5 so they stay as made.
//!
//! The working directory is entered after all of this (a directory entered before stays on the
//! old, writable mount).

use std::path::{Path, PathBuf};

/// What the call may see and change, read from the spec and the machine ([`super::View::read`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    /// Existing directories to hide behind an empty read-only tmpfs.
    pub hidden: Vec<PathBuf>,
    /// Writable roots (workspace, temp dir, configured write paths), canonical and existing.
    pub writable: Vec<Root>,
    /// The mounts made writable again: the writable roots the host does not have read-only, and
    /// the read-write mounts under them.
    pub writable_mounts: Vec<PathBuf>,
    /// Readable extra paths (configured read paths; the workspace in the read-only profile).
    pub readable: Vec<Root>,
    /// Protected paths that exist, canonical, each inside a writable root.
    pub protected: Vec<PathBuf>,
    /// Directories between a writable root and a protected path, outermost first.
    pub pins: Vec<PathBuf>,
    /// Whether `/dev/shm` exists to be replaced by a private one.
    pub shm: bool,
    /// Size of the private `/dev/shm`, bytes.
    pub shm_bytes: u64,
}

/// A path the call keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The path.
    pub path: PathBuf,
    /// Whether it is a directory (else a file: its mount point in a hiding tmpfs is a file).
    pub is_dir: bool,
    /// Whether the host has it read-only already; it is never made writable then.
    pub host_read_only: bool,
}

/// One mount step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `/` and everything under it recursively private: no event reaches the host.
    Private,
    /// Keep a detached copy of the tree at `path` as `slot`.
    Grab {
        /// Where the copy is kept.
        slot: usize,
        /// The tree.
        path: PathBuf,
    },
    /// An empty tmpfs over `path`.
    Hide {
        /// The directory hidden.
        path: PathBuf,
    },
    /// Make `path` (and its parents) inside a hiding tmpfs, to attach a copy on.
    MountPoint {
        /// The path.
        path: PathBuf,
        /// A directory, else an empty file.
        is_dir: bool,
    },
    /// Attach the copy kept as `slot` at `path`.
    Attach {
        /// The copy.
        slot: usize,
        /// Where.
        path: PathBuf,
    },
    /// The whole tree read-only and nosuid.
    ReadOnly,
    /// `path`'s mount writable again (not those under it: the host may have one read-only).
    Writable {
        /// The writable root.
        path: PathBuf,
    },
    /// Bind `path` onto itself, keeping its flags, so it cannot be renamed or removed.
    Pin {
        /// The directory.
        path: PathBuf,
    },
    /// Bind `path` onto itself read-only.
    Protect {
        /// The protected path.
        path: PathBuf,
    },
    /// Bind the directory `path` onto itself read-only, the mounts under it keeping their own
    /// flags: a directory that holds a kept root among hidden entries (`hide_inside`).
    Seal {
        /// The directory.
        path: PathBuf,
    },
    /// Cover `path` with an empty read-only mount: a tmpfs over a directory, `/dev/null`
    /// (nodev: neither readable nor writable) over a file (`hide_inside`).
    Conceal {
        /// The path.
        path: PathBuf,
        /// A directory, else a file.
        is_dir: bool,
    },
    /// A fresh procfs at `/proc`, read-only (Docker's read-only paths with the rest).
    Proc,
    /// A private tmpfs at `/dev/shm`.
    Shm {
        /// Its size limit.
        bytes: u64,
    },
    /// Cover a kernel file or directory, if this kernel has it ([`super::masked`]).
    Mask {
        /// The path.
        path: PathBuf,
    },
    /// Cover the files of `/proc` that only their owner may read.
    MaskOwnerOnly,
}

/// The steps that build `view`, in order.
pub fn plan(view: &View) -> Vec<Step> {
    let mut steps = vec![Step::Private];
    let under_hidden = |p: &Path| view.hidden.iter().any(|h| p.starts_with(h) && p != h);
    // Parents before children, so a nested root is attached on top of its parent's copy.
    let mut kept: Vec<(&Root, bool)> = view
        .writable
        .iter()
        .map(|r| (r, true))
        .chain(
            view.readable
                .iter()
                .filter(|r| under_hidden(&r.path))
                .map(|r| (r, false)),
        )
        .collect();
    kept.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    kept.dedup_by(|a, b| a.0.path == b.0.path);
    for (slot, (root, _)) in kept.iter().enumerate() {
        steps.push(Step::Grab {
            slot,
            path: root.path.clone(),
        });
    }
    for path in &view.hidden {
        steps.push(Step::Hide { path: path.clone() });
    }
    for (slot, (root, _)) in kept.iter().enumerate() {
        if under_hidden(&root.path) {
            steps.push(Step::MountPoint {
                path: root.path.clone(),
                is_dir: root.is_dir,
            });
        }
        steps.push(Step::Attach {
            slot,
            path: root.path.clone(),
        });
    }
    steps.push(Step::ReadOnly);
    for path in &view.writable_mounts {
        steps.push(Step::Writable { path: path.clone() });
    }
    for path in &view.pins {
        steps.push(Step::Pin { path: path.clone() });
    }
    for path in &view.protected {
        steps.push(Step::Protect { path: path.clone() });
    }
    steps.push(Step::Proc);
    steps.extend(super::masked::steps());
    if view.shm {
        steps.push(Step::Shm {
            bytes: view.shm_bytes,
        });
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(path: &str) -> Root {
        Root {
            path: path.into(),
            is_dir: true,
            host_read_only: false,
        }
    }

    fn position(steps: &[Step], want: &Step) -> usize {
        steps
            .iter()
            .position(|s| s == want)
            .unwrap_or_else(|| panic!("{want:?} is not in {steps:#?}"))
    }

    fn view() -> View {
        View {
            hidden: vec!["/home".into(), "/tmp".into()],
            writable: vec![root("/home/ana/project"), root("/tmp/agentd-x/call-1")],
            writable_mounts: vec!["/home/ana/project".into(), "/tmp/agentd-x/call-1".into()],
            readable: vec![root("/home/ana/.cargo"), root("/opt/sdk")],
            protected: vec![
                "/home/ana/project/.git/config".into(),
                "/home/ana/project/.git/hooks".into(),
            ],
            pins: vec!["/home/ana/project/.git".into()],
            shm: true,
            shm_bytes: 1 << 20,
        }
    }

    #[test]
    fn everything_happens_in_the_order_that_makes_it_hold() {
        let steps = plan(&view());
        assert_eq!(steps[0], Step::Private, "nothing may propagate to the host");
        let ws = PathBuf::from("/home/ana/project");
        let grab = position(
            &steps,
            &Step::Grab {
                slot: 1,
                path: ws.clone(),
            },
        );
        let hide = position(
            &steps,
            &Step::Hide {
                path: "/home".into(),
            },
        );
        let point = position(
            &steps,
            &Step::MountPoint {
                path: ws.clone(),
                is_dir: true,
            },
        );
        let attach = position(
            &steps,
            &Step::Attach {
                slot: 1,
                path: ws.clone(),
            },
        );
        let ro = position(&steps, &Step::ReadOnly);
        let writable = position(&steps, &Step::Writable { path: ws.clone() });
        let pin = position(
            &steps,
            &Step::Pin {
                path: ws.join(".git"),
            },
        );
        let protect = position(
            &steps,
            &Step::Protect {
                path: ws.join(".git/hooks"),
            },
        );
        let proc = position(&steps, &Step::Proc);
        let shm = position(&steps, &Step::Shm { bytes: 1 << 20 });
        assert!(grab < hide, "grabbed while still visible");
        assert!(
            hide < point && point < attach,
            "attached inside the hiding tmpfs"
        );
        assert!(attach < ro, "the hiding tmpfs ends read-only too");
        assert!(
            ro < writable,
            "writable roots are cleared after the tree is read-only"
        );
        assert!(
            writable < pin && pin < protect,
            "protection is not undone by a later step"
        );
        assert!(
            ro < proc && ro < shm,
            "/proc and /dev/shm are made after, as made"
        );
    }

    #[test]
    fn only_readable_paths_under_a_hidden_dir_are_carried_over() {
        let steps = plan(&view());
        assert!(steps.contains(&Step::Grab {
            slot: 0,
            path: "/home/ana/.cargo".into()
        }));
        assert!(
            !steps
                .iter()
                .any(|s| matches!(s, Step::Grab { path, .. } if path == Path::new("/opt/sdk"))),
            "a read path outside the hidden dirs stays where it is, read-only: {steps:#?}"
        );
        assert!(
            !steps.iter().any(
                |s| matches!(s, Step::Writable { path } if path == Path::new("/home/ana/.cargo"))
            ),
            "a read path is never made writable"
        );
    }

    #[test]
    fn a_root_outside_the_hidden_dirs_is_bound_on_itself_without_a_mount_point() {
        let v = View {
            hidden: vec!["/home".into()],
            writable: vec![root("/work/project")],
            writable_mounts: vec!["/work/project".into()],
            ..View::default()
        };
        let steps = plan(&v);
        assert_eq!(
            steps,
            vec![
                Step::Private,
                Step::Grab {
                    slot: 0,
                    path: "/work/project".into()
                },
                Step::Hide {
                    path: "/home".into()
                },
                Step::Attach {
                    slot: 0,
                    path: "/work/project".into()
                },
                Step::ReadOnly,
                Step::Writable {
                    path: "/work/project".into()
                },
                Step::Proc,
            ]
            .into_iter()
            .chain(super::super::masked::steps())
            .collect::<Vec<_>>()
        );
    }

    #[test]
    fn nested_roots_are_attached_parent_first() {
        let v = View {
            hidden: vec!["/tmp".into()],
            writable: vec![root("/tmp/ws/build"), root("/tmp/ws")],
            ..View::default()
        };
        let steps = plan(&v);
        let outer = position(
            &steps,
            &Step::Attach {
                slot: 0,
                path: "/tmp/ws".into(),
            },
        );
        let inner = position(
            &steps,
            &Step::Attach {
                slot: 1,
                path: "/tmp/ws/build".into(),
            },
        );
        assert!(outer < inner, "{steps:#?}");
    }
}
