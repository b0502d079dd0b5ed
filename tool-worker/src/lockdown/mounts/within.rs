//! Where a scan for protected paths may look: inside the writable roots, and nowhere else.
//!
//! The scans run in the supervisor (often root, in the host's mounts, after the call) and in
//! the worker before its mounts, on a tree the model wrote. A symlink on the way — a
//! `.git/modules` that points to `/root`, an include of `../L/etc/shadow` with `L -> /`, a
//! `gitdir:` naming another user's repository — would have them list, stat and read anything
//! their uid can, and name what they found in the notes the model reads. So a scan enters a
//! directory, or reads a file, only where it resolves (symlinks followed) inside a writable
//! root. A real directory found inside an entered one is inside too; only symlinks are resolved.

use std::path::{Path, PathBuf};

/// The writable roots a scan may look in, canonical.
#[derive(Debug, Clone, Default)]
pub struct Within {
    roots: Vec<PathBuf>,
}

impl Within {
    /// The roots that exist, canonical.
    pub fn new<'a>(roots: impl IntoIterator<Item = &'a Path>) -> Within {
        Within {
            roots: roots
                .into_iter()
                .filter_map(|r| r.canonicalize().ok())
                .collect(),
        }
    }

    /// The roots, canonical.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Whether `path`, resolved, lies inside (or is) one of the roots.
    pub fn holds(&self, path: &Path) -> bool {
        path.canonicalize()
            .is_ok_and(|real| self.roots.iter().any(|r| real.starts_with(r)))
    }

    /// Whether `path`, resolved, is a directory inside one of the roots: for a path named by
    /// a file's contents (`gitdir:`, `commondir`), which may lead anywhere.
    pub fn holds_dir(&self, path: &Path) -> bool {
        self.holds(path) && std::fs::metadata(path).is_ok_and(|m| m.is_dir())
    }

    /// Whether a scan may list or enter `path`, found in a directory it entered: a real
    /// directory (inside, as its parent is), or a symlink to a directory inside a root.
    pub fn enterable(&self, path: &Path) -> bool {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => true,
            Ok(m) if m.file_type().is_symlink() => {
                self.holds(path) && std::fs::metadata(path).is_ok_and(|m| m.is_dir())
            }
            _ => false,
        }
    }

    /// Whether the entry `path` names lies in a directory inside a root (the entry itself, the
    /// last component, is not followed).
    pub fn has_entry(&self, path: &Path) -> bool {
        path.parent().is_some_and(|dir| self.holds(dir))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn symlinks_out_of_the_roots_are_not_entered_and_their_entries_not_held() {
        let base = std::env::temp_dir().join(format!("agentd-within-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (ws, outside) = (base.join("ws"), base.join("outside"));
        std::fs::create_dir_all(ws.join("real/deeper")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
        std::os::unix::fs::symlink("real", ws.join("in")).unwrap();
        std::os::unix::fs::symlink("/", ws.join("L")).unwrap();
        let within = Within::new([ws.as_path()]);

        assert!(within.enterable(&ws.join("real")));
        assert!(
            within.enterable(&ws.join("in")),
            "a symlink to a directory inside"
        );
        assert!(!within.enterable(&ws.join("out")));
        assert!(!within.enterable(&ws.join("L")));
        assert!(!within.enterable(&ws.join("missing")));
        assert!(within.holds_dir(&ws.join("in/../real/deeper")));
        assert!(
            !within.holds_dir(&outside),
            "a real directory named by a file's contents"
        );
        assert!(within.has_entry(&ws.join("in/deeper")));
        assert!(
            within.has_entry(&ws.join(".vscode")),
            "an entry of the root itself"
        );
        assert!(!within.has_entry(&ws.join("out/secret")));
        assert!(!within.has_entry(&ws.join("L/etc/shadow")));
        assert!(!within.has_entry(&ws.join("real/../../outside/secret")));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
