//! Directories a call opened to other users, closed again after it.
//!
//! A call owns its writable roots and may `chmod` them: `chmod 0777 . .git`, or an access ACL
//! that grants another user write. Nothing it plants survives the check after the call, but a
//! directory left writable to others lets *another local user* plant later — a `.git/commondir`
//! or a hook, between this call and the user's next `git status` — which is the same attack by
//! another hand. So after each call the directories where git and the editors look for what they
//! run (each writable root, its `.git`, every directory under `.git/modules` and
//! `.git/worktrees`, and a `.git` one level down) get back the closed
//! state they had when the session began: write bits for group and others the call added are
//! removed, and an ACL the call added is removed. Opened without following a symlink on the way;
//! what was open at the session's start is the user's choice and stays.

use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, fchmod, fstat};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use tool_worker::lockdown::mounts::view::descendants;

/// Most directories looked at in one writable root.
const MAX_WATCHED: usize = 512;

/// The directories looked at in a writable root, relative to it: the root, its `.git`, every
/// directory under `.git/modules` and `.git/worktrees` (submodules' and worktrees' git
/// directories, their hooks), and each `.git` directory one level down — found without
/// following a symlink, at most [`MAX_WATCHED`].
fn watched_dirs(root: &Path, protected: &[(PathBuf, PathBuf)]) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::new(), PathBuf::from(".git")];
    for (r, rel) in protected.iter().filter(|(r, _)| r == root) {
        if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            out.push(parent.to_path_buf());
        }
        if std::fs::symlink_metadata(r.join(rel)).is_ok_and(|m| m.is_dir()) {
            out.push(rel.clone());
        }
    }
    // The walk the scan for protected paths makes of them (no symlink followed, a git
    // directory's store skipped only where it is one): what it finds is what it protects.
    let mut below = Vec::new();
    for dir in [".git/modules", ".git/worktrees"] {
        if std::fs::symlink_metadata(root.join(dir)).is_ok_and(|m| m.is_dir()) {
            let mut cut = Vec::new();
            descendants(&root.join(dir), 0, &mut below, &mut cut);
            below.extend(cut);
        }
    }
    // The walk skips a git directory's `info` with its store; a directory to close all the same.
    let infos: Vec<PathBuf> = below
        .iter()
        .map(|d| d.join("info"))
        .filter(|i| std::fs::symlink_metadata(i).is_ok_and(|m| m.is_dir()))
        .collect();
    below.extend(infos);
    out.extend(
        below
            .iter()
            .filter_map(|p| p.strip_prefix(root).ok())
            .take(MAX_WATCHED)
            .map(Path::to_path_buf),
    );
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.filter_map(Result::ok).take(MAX_WATCHED) {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let rel = Path::new(&entry.file_name()).join(".git");
                if std::fs::symlink_metadata(root.join(&rel)).is_ok_and(|m| m.is_dir()) {
                    out.push(rel);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The ACL attributes of a directory.
const ACLS: [&CStr; 2] = [c"system.posix_acl_access", c"system.posix_acl_default"];

/// Write for group and others.
const OTHERS_WRITE: u32 = 0o022;

/// How open each watched directory was: its group/other write bits and its ACLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Openness {
    write_bits: u32,
    acls: [bool; 2],
}

/// The openness of the watched directories of some roots, at a point in time.
#[derive(Debug, Default)]
pub struct Snapshot {
    dirs: BTreeMap<PathBuf, Openness>,
}

impl Snapshot {
    /// The watched directories of `roots` as they are now; `protected` (root, path relative
    /// to it), the protected paths found there, adds each one's directory and each that is a
    /// directory: a git directory a `.git` file or a `commondir` names (`.bare`) and its hooks.
    pub fn of<'a>(
        roots: impl IntoIterator<Item = &'a PathBuf>,
        protected: &[(PathBuf, PathBuf)],
    ) -> Snapshot {
        let mut dirs = BTreeMap::new();
        for root in roots {
            for rel in watched_dirs(root, protected) {
                if let Some(fd) = open_dir(root, &rel) {
                    dirs.insert(watched(root, &rel), openness(&fd));
                }
            }
        }
        Snapshot { dirs }
    }

    /// Closes again what was opened since this snapshot in the watched directories of `roots`;
    /// returns what was done, in words. A directory that did not exist then was closed then.
    pub fn close_again<'a>(
        &self,
        roots: impl IntoIterator<Item = &'a PathBuf>,
        protected: &[(PathBuf, PathBuf)],
    ) -> Vec<String> {
        let closed = Openness {
            write_bits: 0,
            acls: [false; 2],
        };
        let mut notes = Vec::new();
        for root in roots {
            for rel in watched_dirs(root, protected) {
                let Some(fd) = open_dir(root, &rel) else {
                    continue;
                };
                let path = watched(root, &rel);
                let then = self.dirs.get(&path).copied().unwrap_or(closed);
                let now = openness(&fd);
                let mut done = Vec::new();
                let added = now.write_bits & !then.write_bits;
                if added != 0
                    && let Ok(st) = fstat(&fd)
                    && fchmod(
                        &fd,
                        Mode::from_bits_truncate((st.st_mode & 0o7777) & !added),
                    )
                    .is_ok()
                {
                    done.push(format!("write for {}", whom(added)));
                }
                for (i, name) in ACLS.iter().enumerate() {
                    if now.acls[i] && !then.acls[i] && remove_xattr(&fd, name) {
                        done.push(name.to_string_lossy().into_owned());
                    }
                }
                if !done.is_empty() {
                    notes.push(format!(
                        "this call opened {} to other users; agentd took back {} (another user could plant code there for git or an editor to run)",
                        crate::inert::inert_line(&path.display().to_string()),
                        done.join(" and ")
                    ));
                }
            }
        }
        notes
    }
}

/// The path of a watched directory (the root itself without a trailing slash).
fn watched(root: &Path, rel: &Path) -> PathBuf {
    if rel.as_os_str().is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

fn whom(bits: u32) -> &'static str {
    match (bits & 0o020 != 0, bits & 0o002 != 0) {
        (true, true) => "group and others",
        (true, false) => "the group",
        _ => "others",
    }
}

/// `root/rel` opened as a directory, no symlink followed on the way.
fn open_dir(root: &Path, rel: &Path) -> Option<OwnedFd> {
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY;
    let mut dir = nix::fcntl::open(root, flags, Mode::empty()).ok()?;
    for c in rel.components() {
        let Component::Normal(name) = c else {
            return None;
        };
        dir = openat(&dir, name, flags, Mode::empty()).ok()?;
    }
    Some(dir)
}

fn openness(fd: &OwnedFd) -> Openness {
    let write_bits = fstat(fd).map_or(0, |st| st.st_mode & OTHERS_WRITE);
    Openness {
        write_bits,
        acls: ACLS.map(|name| has_xattr(fd, name)),
    }
}

fn has_xattr(fd: &OwnedFd, name: &CStr) -> bool {
    // SAFETY: a size query (null buffer, size 0) on a descriptor we own, with a NUL-terminated
    // name; the kernel writes nothing.
    let size = unsafe { libc::fgetxattr(fd.as_raw_fd(), name.as_ptr(), std::ptr::null_mut(), 0) };
    size >= 0
}

fn remove_xattr(fd: &OwnedFd, name: &CStr) -> bool {
    // SAFETY: a descriptor we own and a NUL-terminated name; nothing is written to our memory.
    unsafe { libc::fremovexattr(fd.as_raw_fd(), name.as_ptr()) == 0 }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(label: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("agentd-loosened-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".git/modules")).unwrap();
        for d in [&dir, &dir.join(".git"), &dir.join(".git/modules")] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// An access ACL granting uid 4242 rwx (user_obj rwx, user 4242 rwx, group_obj r-x, mask
    /// rwx, other r-x), in the kernel's xattr format.
    fn acl_blob() -> Vec<u8> {
        let mut blob = 2u32.to_le_bytes().to_vec();
        for (tag, perm, id) in [
            (0x01u16, 7u16, u32::MAX),
            (0x02, 7, 4242),
            (0x04, 5, u32::MAX),
            (0x10, 7, u32::MAX),
            (0x20, 5, u32::MAX),
        ] {
            blob.extend(tag.to_le_bytes());
            blob.extend(perm.to_le_bytes());
            blob.extend(id.to_le_bytes());
        }
        blob
    }

    #[test]
    fn what_a_call_opened_is_closed_and_what_the_user_opened_stays() {
        let root = scratch("modes");
        std::fs::set_permissions(
            root.join(".git/modules"),
            std::fs::Permissions::from_mode(0o775),
        )
        .unwrap();
        let roots = [root.clone()];
        let before = Snapshot::of(&roots, &[]);
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::set_permissions(root.join(".git"), std::fs::Permissions::from_mode(0o757))
            .unwrap();
        std::fs::set_permissions(
            root.join(".git/modules"),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        std::fs::create_dir(root.join(".git/worktrees")).unwrap();
        std::fs::set_permissions(
            root.join(".git/worktrees"),
            std::fs::Permissions::from_mode(0o1777),
        )
        .unwrap();
        // A submodule's git directory and a repository one level down.
        // And a submodule named like a git store (`refs`), which a walk skipping store names
        // everywhere would miss.
        for d in [".git/modules/lib/hooks", "sub/.git", ".git/modules/refs"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
            std::fs::set_permissions(root.join(d), std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        std::fs::set_permissions(root.join("sub"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let notes = before.close_again(&roots, &[]);
        for d in [".git/modules/lib/hooks", "sub/.git", ".git/modules/refs"] {
            assert_eq!(mode(&root.join(d)) & 0o022, 0, "{d}");
        }
        assert_eq!(mode(&root), 0o755);
        assert_eq!(mode(&root.join(".git")), 0o755);
        assert_eq!(
            mode(&root.join(".git/modules")),
            0o775,
            "the group's was there"
        );
        assert_eq!(mode(&root.join(".git/worktrees")), 0o1755, "new: closed");
        assert_eq!(notes.len(), 7, "{notes:?}");
        assert!(
            before.close_again(&roots, &[]).is_empty(),
            "nothing more to do"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_acl_a_call_added_is_removed() {
        let root = scratch("acl");
        let roots = [root.clone()];
        let before = Snapshot::of(&roots, &[]);
        let fd = open_dir(&root, Path::new(".git")).unwrap();
        let blob = acl_blob();
        // SAFETY: a descriptor we own, a NUL-terminated name and a buffer of the given length.
        let set = unsafe {
            libc::fsetxattr(
                fd.as_raw_fd(),
                ACLS[0].as_ptr(),
                blob.as_ptr().cast(),
                blob.len(),
                0,
            )
        };
        if set != 0 {
            // A file system without ACLs: nothing a call could add either.
            std::fs::remove_dir_all(&root).unwrap();
            return;
        }
        assert!(has_xattr(&fd, ACLS[0]));
        let notes = before.close_again(&roots, &[]);
        assert!(!has_xattr(&fd, ACLS[0]), "{notes:?}");
        assert!(
            notes.iter().any(|n| n.contains("posix_acl_access")),
            "{notes:?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_symlinked_git_is_not_followed() {
        let root = scratch("link");
        let outside = scratch("link-outside");
        std::fs::remove_dir_all(root.join(".git")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join(".git")).unwrap();
        let roots = [root.clone()];
        let before = Snapshot::of(&roots, &[]);
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o777)).unwrap();
        before.close_again(&roots, &[]);
        assert_eq!(mode(&outside), 0o777, "not ours to change");
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }
}
