//! Resolving a configured `write_paths` or `read_paths` entry the way the call cannot steer.
//!
//! A configured path may lie inside another writable root (`ws/cache` when the workspace is
//! `ws`), where a call can make it, or a directory on its way, a symlink: `ln -s /usr/local
//! build` for a write path `ws/build/bin` gave the next call the host's `/usr/local/bin`,
//! writable; and with a second call flipping `build` between a directory and that symlink, a
//! check followed by a separate `canonicalize` could see the directory and grab the symlink's
//! target. So the path is resolved here in one walk, a component at a time through descriptors
//! (`O_NOFOLLOW`), and a symlink met in a directory inside a writable root refuses the path. A
//! symlink elsewhere (the user's `~/.cache -> /data/cache`) is followed. The result is canonical;
//! the mount step then grabs it again without following any symlink
//! ([`super::kernel`]), so a swap after this walk fails the call instead of redirecting it.

use nix::fcntl::{OFlag, openat, readlinkat};
use nix::sys::stat::{Mode, SFlag, fstat};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// Most symlinks followed in one path (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Why a configured path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Steered {
    /// A symlink inside a writable root is on its way.
    #[error("{0} is a symlink inside a writable root, which a call could have made")]
    Symlink(PathBuf),
    /// More symlinks than the kernel follows.
    #[error("more than {MAX_LINKS} symlinks on the way")]
    Loop,
}

/// `path` resolved (canonical), or `None` if it does not exist; refused if a symlink in a
/// directory inside one of `writable` (canonical paths) is on its way.
pub fn resolve(path: &Path, writable: &[PathBuf]) -> Result<Option<PathBuf>, Steered> {
    let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let Ok(mut dir) = nix::fcntl::open("/", flags | OFlag::O_DIRECTORY, Mode::empty()) else {
        return Ok(None);
    };
    let mut resolved = PathBuf::from("/");
    // What is left to walk, first component first.
    let mut rest: Vec<std::ffi::OsString> = names(path);
    rest.reverse();
    let mut links = 0;
    while let Some(name) = rest.pop() {
        if name == ".." {
            resolved.pop();
            dir = match reopen(&resolved) {
                Some(fd) => fd,
                None => return Ok(None),
            };
            continue;
        }
        let Ok(next) = openat(&dir, name.as_os_str(), flags, Mode::empty()) else {
            return Ok(None);
        };
        let Ok(st) = fstat(&next) else {
            return Ok(None);
        };
        if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) != SFlag::S_IFLNK {
            resolved.push(&name);
            dir = next;
            continue;
        }
        if writable.iter().any(|w| resolved.starts_with(w)) {
            return Err(Steered::Symlink(resolved.join(&name)));
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(Steered::Loop);
        }
        let Ok(target) = readlinkat(&dir, name.as_os_str()) else {
            return Ok(None);
        };
        let target = PathBuf::from(target);
        if target.is_absolute() {
            resolved = PathBuf::from("/");
            dir = match reopen(&resolved) {
                Some(fd) => fd,
                None => return Ok(None),
            };
        }
        let mut more = names(&target);
        more.reverse();
        rest.extend(more);
    }
    Ok(Some(resolved))
}

/// The components of `path` to walk: plain names and `..` (`.` and the root dropped).
fn names(path: &Path) -> Vec<std::ffi::OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

/// The canonical `path` opened (`O_PATH`) from the root a component at a time, following no
/// symlink on the way — a symlink as the last component is opened itself, unless `dir` asks
/// for a directory; fails where any component is, or is no longer, what a canonical path holds.
pub fn open_no_symlinks(path: &Path, dir: bool) -> nix::Result<OwnedFd> {
    let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut at = nix::fcntl::open("/", flags | OFlag::O_DIRECTORY, Mode::empty())?;
    let names = names(path);
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        let as_dir = if !last || dir {
            OFlag::O_DIRECTORY
        } else {
            OFlag::empty()
        };
        at = openat(&at, name.as_os_str(), flags | as_dir, Mode::empty())?;
    }
    Ok(at)
}

/// The canonical directory `path`, opened again from the root without following symlinks.
fn reopen(path: &Path) -> Option<OwnedFd> {
    open_no_symlinks(path, true).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn scratch(label: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("agentd-resolve-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn a_symlink_inside_a_writable_root_refuses_and_one_outside_is_followed() {
        let base = scratch("steer");
        let (ws, outside, data) = (base.join("ws"), base.join("outside"), base.join("data"));
        for d in [ws.join("real/bin"), outside.join("bin"), data.join("cache")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(&outside, ws.join("build")).unwrap();
        std::os::unix::fs::symlink("real", ws.join("inner")).unwrap();
        std::os::unix::fs::symlink(data.join("cache"), base.join("cache-link")).unwrap();
        let writable = [ws.clone()];

        assert_eq!(
            resolve(&ws.join("build/bin"), &writable),
            Err(Steered::Symlink(ws.join("build")))
        );
        assert_eq!(
            resolve(&ws.join("inner/bin"), &writable),
            Err(Steered::Symlink(ws.join("inner"))),
            "even one that stays inside: it could be flipped"
        );
        assert_eq!(
            resolve(&base.join("cache-link"), &writable),
            Ok(Some(data.join("cache"))),
            "the user's own symlink outside the writable roots"
        );
        assert_eq!(
            resolve(&ws.join("real/bin/../bin"), &writable),
            Ok(Some(ws.join("real/bin")))
        );
        assert_eq!(resolve(&ws.join("missing"), &writable), Ok(None));
        // Reached through a symlink outside, a symlink inside still refuses.
        std::os::unix::fs::symlink(&ws, base.join("ws-link")).unwrap();
        assert_eq!(
            resolve(&base.join("ws-link/build/bin"), &writable),
            Err(Steered::Symlink(ws.join("build")))
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_symlink_loop_ends() {
        let base = scratch("loop");
        std::os::unix::fs::symlink("b", base.join("a")).unwrap();
        std::os::unix::fs::symlink("a", base.join("b")).unwrap();
        assert_eq!(resolve(&base.join("a"), &[]), Err(Steered::Loop));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
