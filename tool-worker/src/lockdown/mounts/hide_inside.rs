//! Hiding what lies inside a kept root: the spec's `hidden_inside`, the secrets of a broad
//! workspace that the user allowed (`allow_broad_workspace`) — a home's `.ssh`, the agent's
//! config, keys and state, the homes and system directories inside a workspace that is `/`.
//!
//! The view ([`super::view`]) hides directories *around* the kept roots; a secret *inside* one
//! is readable and writable like the rest of it (Landlock grants the root as a whole, and cannot
//! take a subtree back). So each existing secret gets a mount of its own over it, after every
//! other mount step (a protected path inside one is covered too):
//!
//! * a directory: an empty read-only tmpfs (its files are gone; nothing can be made in it);
//! * a file: `/dev/null` on a nodev, read-only mount (opening it fails either way);
//! * a directory that holds a kept root (the call's temp dir, the session's spill folder, or the
//!   workspace itself): it cannot be covered whole, so everything in it but the way to the kept
//!   root is covered instead, and it and each directory on that way are sealed read-only (no
//!   new name can be made beside the kept root), by construction rather than by a list.
//!
//! A secret that does not exist is not here: the supervisor also lists the home's secret names
//! in `protected_paths`, so one a call creates is moved aside after it. A secret that is a
//! symlink is hidden where it leads, when that is inside a kept root (elsewhere the view keeps it
//! read-only or hidden already).

use super::plan::{Step, View};
use super::{MountError, view::MAX_PROTECTED};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Most entries of one directory covered one by one around a kept root: each is a mount.
const MAX_AROUND: usize = 1024;

/// What to do to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    /// Sealed read-only: it holds a kept root.
    Seal,
    /// Covered: a directory (else a file).
    Conceal { is_dir: bool },
}

/// The mount steps that hide `paths` inside `view`'s kept roots: seals outermost first, then
/// the covers. Refused when a directory holding a kept root has too many entries to cover.
pub fn steps(paths: &[PathBuf], view: &View) -> Result<Vec<Step>, MountError> {
    let kept: Vec<&Path> = view
        .writable
        .iter()
        .chain(&view.readable)
        .map(|r| r.path.as_path())
        .collect();
    let mut acts: BTreeMap<PathBuf, Act> = BTreeMap::new();
    for path in paths {
        if let Some(real) = inside_kept(path, &kept) {
            hide(&real, &kept, &mut acts)?;
        }
    }
    // A cover inside another cover would find no mount point: the outer one hides it already.
    let covers: Vec<PathBuf> = acts
        .iter()
        .filter(|(_, a)| matches!(a, Act::Conceal { .. }))
        .map(|(p, _)| p.clone())
        .collect();
    acts.retain(|p, a| {
        matches!(a, Act::Seal) || !covers.iter().any(|c| p.starts_with(c) && p != c)
    });
    if acts.len() > MAX_PROTECTED {
        return Err(MountError {
            what: "too many paths to hide inside the workspace",
            path: paths.first().cloned().unwrap_or_default(),
            source: std::io::Error::other(format!(
                "{}, more than {MAX_PROTECTED}: choose a narrower workspace",
                acts.len()
            )),
        });
    }
    // Seals first (a BTreeMap walks parents before children), so the covers land on them.
    let seals = acts.iter().filter(|(_, a)| matches!(a, Act::Seal));
    let covers = acts.iter().filter(|(_, a)| !matches!(a, Act::Seal));
    Ok(seals
        .chain(covers)
        .map(|(path, act)| match *act {
            Act::Seal => Step::Seal { path: path.clone() },
            Act::Conceal { is_dir } => Step::Conceal {
                path: path.clone(),
                is_dir,
            },
        })
        .collect())
}

/// `path`'s real location when it exists and lies strictly inside a kept root; `None` when it
/// is missing or outside every kept root (where the view has it read-only or hidden already).
fn inside_kept(path: &Path, kept: &[&Path]) -> Option<PathBuf> {
    let real = path.canonicalize().ok()?;
    kept.iter()
        .any(|k| real.starts_with(k) && real.as_path() != *k)
        .then_some(real)
}

/// Records how to hide `real` (canonical, inside a kept root).
fn hide(real: &Path, kept: &[&Path], acts: &mut BTreeMap<PathBuf, Act>) -> Result<(), MountError> {
    let Ok(meta) = std::fs::symlink_metadata(real) else {
        return Ok(());
    };
    let holds_kept = kept.iter().any(|k| k.starts_with(real));
    if !holds_kept {
        acts.insert(
            real.to_path_buf(),
            Act::Conceal {
                is_dir: meta.is_dir(),
            },
        );
        return Ok(());
    }
    acts.insert(real.to_path_buf(), Act::Seal);
    let entries = std::fs::read_dir(real).map_err(|source| MountError {
        what: "listing a directory to hide around a kept root",
        path: real.to_path_buf(),
        source,
    })?;
    for (n, entry) in entries.enumerate() {
        if n >= MAX_AROUND {
            return Err(MountError {
                what: "too many entries to hide around a kept root",
                path: real.to_path_buf(),
                source: std::io::Error::other(format!(
                    "more than {MAX_AROUND}: choose a narrower workspace"
                )),
            });
        }
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        if kept.iter().any(|k| *k == path) {
            continue;
        }
        match std::fs::symlink_metadata(&path) {
            // A symlink cannot be covered (a mount follows it): what it leads to is, when that is
            // inside a kept root; the sealed directory keeps the link itself from changing.
            Ok(m) if m.file_type().is_symlink() => {
                if let Some(target) = inside_kept(&path, kept)
                    && !kept.iter().any(|k| k.starts_with(&target))
                {
                    hide(&target, kept, acts)?;
                }
            }
            Ok(_) => hide(&path, kept, acts)?,
            Err(_) => {}
        }
    }
    Ok(())
}

/// `steps` with `extra` put before the fresh `/proc` (after every other mount step, before the
/// mounts that are made as made).
pub fn insert(steps: &mut Vec<Step>, extra: Vec<Step>) {
    let at = steps
        .iter()
        .position(|s| matches!(s, Step::Proc))
        .unwrap_or(steps.len());
    steps.splice(at..at, extra);
}

#[cfg(test)]
mod tests {
    use super::super::plan::Root;
    use super::*;

    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agentd-hide-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    fn root(path: &Path) -> Root {
        Root {
            path: path.to_path_buf(),
            is_dir: true,
            host_read_only: false,
        }
    }

    #[test]
    fn a_secret_dir_and_file_inside_the_workspace_are_covered_and_missing_ones_skipped() {
        let home = scratch("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".bashrc"), "").unwrap();
        let view = View {
            writable: vec![root(&home)],
            ..View::default()
        };
        let paths = [".ssh", ".bashrc", ".gnupg"].map(|p| home.join(p));
        let steps = steps(&paths, &view).unwrap();
        assert_eq!(
            steps,
            vec![
                Step::Conceal {
                    path: home.join(".bashrc"),
                    is_dir: false
                },
                Step::Conceal {
                    path: home.join(".ssh"),
                    is_dir: true
                },
            ]
        );
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_path_outside_the_kept_roots_or_equal_to_one_is_left_to_the_view() {
        let home = scratch("outside");
        std::fs::create_dir_all(home.join("ws")).unwrap();
        let view = View {
            writable: vec![root(&home.join("ws"))],
            ..View::default()
        };
        assert!(
            steps(&[home.clone(), home.join("ws")], &view)
                .unwrap()
                .is_empty()
        );
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_secret_holding_a_kept_root_is_sealed_and_everything_else_in_it_covered() {
        let home = scratch("around");
        let spill = home.join(".local/state/agentd/sessions/s1/spill");
        std::fs::create_dir_all(&spill).unwrap();
        std::fs::create_dir_all(home.join(".local/bin")).unwrap();
        std::fs::create_dir_all(home.join(".local/state/agentd/sessions/s0")).unwrap();
        std::fs::write(home.join(".local/state/agentd/config.toml"), "").unwrap();
        std::os::unix::fs::symlink("bin", home.join(".local/b")).unwrap();
        let view = View {
            writable: vec![root(&home)],
            readable: vec![root(&spill)],
            ..View::default()
        };
        let got = steps(&[home.join(".local")], &view).unwrap();
        let l = home.join(".local");
        let want = vec![
            Step::Seal { path: l.clone() },
            Step::Seal {
                path: l.join("state"),
            },
            Step::Seal {
                path: l.join("state/agentd"),
            },
            Step::Seal {
                path: l.join("state/agentd/sessions"),
            },
            Step::Seal {
                path: l.join("state/agentd/sessions/s1"),
            },
            Step::Conceal {
                path: l.join("bin"),
                is_dir: true,
            },
            Step::Conceal {
                path: l.join("state/agentd/config.toml"),
                is_dir: false,
            },
            Step::Conceal {
                path: l.join("state/agentd/sessions/s0"),
                is_dir: true,
            },
        ];
        assert_eq!(got, want);
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn nested_secrets_give_one_cover_and_the_steps_go_before_proc() {
        let home = scratch("nested");
        std::fs::create_dir_all(home.join(".config/agentd")).unwrap();
        let view = View {
            writable: vec![root(&home)],
            ..View::default()
        };
        let extra = steps(&[home.join(".config/agentd"), home.join(".config")], &view).unwrap();
        assert_eq!(
            extra,
            vec![Step::Conceal {
                path: home.join(".config"),
                is_dir: true
            }]
        );
        let mut all = vec![Step::ReadOnly, Step::Proc];
        insert(&mut all, extra.clone());
        assert_eq!(all[1], extra[0]);
        assert_eq!(all[2], Step::Proc);
        std::fs::remove_dir_all(&home).unwrap();
    }
}
