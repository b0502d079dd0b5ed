//! Every repository in a session's writable roots, at any depth: the walk that finds them.
//!
//! The protected names cover the repository at a root and one level down; git runs what a
//! repository anywhere below holds — `vendor/lib/.git/config`'s `core.fsmonitor` runs at the
//! user's next `git status` in `vendor/lib`, and at the root's once `vendor/lib` is in its index.
//! So rather than name depths, the supervisor walks each writable root and records every
//! directory that holds a `.git` (a directory, a file or a symlink) or is itself shaped like a git
//! directory (a bare repository: `HEAD`, `objects`, `refs`). The worker protects each one's git
//! files as it protects the root's (`SandboxSpec::repositories`), and the check after each call
//! quarantines what a repository that appeared during the call planted.
//!
//! Cost: a tree of 200,000 files has some 10,000–20,000 directories. The first walk lists each
//! once; the walk after a call reuses a directory's listing while its identity, modification and
//! change times are what they were (a new entry changes its directory's times, a call cannot put
//! the change time back), so a call that changed nothing costs one `fstatat` per directory.
//!
//! The tree is the model's and the supervisor may be root: nothing here follows a symlink. Each
//! directory is opened from the root's descriptor with `openat2(RESOLVE_NO_SYMLINKS |
//! RESOLVE_BENEATH)`, so a directory swapped for a symlink by a concurrent call is not entered,
//! and only names (`d_type` from `getdents`) are read; no file is opened.

use nix::fcntl::{OFlag, open};
use nix::sys::stat::{FileStat, Mode, fstatat};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Most directories a walk visits in one root; past it the walk stops and says where.
pub const MAX_DIRS: usize = 500_000;
/// Deepest directory a walk enters, counted from the root.
pub const MAX_DEPTH: usize = 128;

/// Directories not walked into: a git directory's insides are covered by the protected names
/// (`.git/modules/**`, `.git/worktrees/*`). The quarantine is walked like any directory: a call
/// can write there too, and a repository it makes there is judged like one made anywhere.
const NOT_ENTERED: &[&str] = &[".git"];

/// What one directory looked like when it was last listed.
#[derive(Debug, Clone)]
struct Listed {
    /// Device, inode, modification and change times (seconds and nanoseconds).
    stamp: Stamp,
    /// The subdirectories (not symlinks) to walk into.
    subdirs: Vec<OsString>,
    /// Whether it holds a `.git` entry or is shaped like a git directory.
    repository: bool,
    /// Whether it is a bare git directory (not walked into).
    bare: bool,
}

type Stamp = (u64, u64, i64, i64, i64, i64);

fn stamp(st: &FileStat) -> Stamp {
    (
        st.st_dev,
        st.st_ino,
        st.st_mtime,
        st.st_mtime_nsec,
        st.st_ctime,
        st.st_ctime_nsec,
    )
}

/// The directories of a root walked last time, by path relative to the root.
#[derive(Debug, Default)]
pub struct RepoWalk {
    roots: HashMap<PathBuf, HashMap<PathBuf, Listed>>,
}

/// What a walk found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Walked {
    /// Every directory below a root that is a repository's top (holds a `.git`) or a bare git
    /// directory, absolute, sorted. The roots themselves are not listed.
    pub repositories: Vec<PathBuf>,
    /// Directories visited.
    pub dirs: usize,
    /// Directories listed again (new or changed since the last walk).
    pub listed: usize,
    /// Where a bound stopped the walk, if one did.
    pub cut: Vec<PathBuf>,
}

impl RepoWalk {
    /// Walks `roots`, reusing what is unchanged since the last walk of each.
    pub fn refresh<'a>(&mut self, roots: impl IntoIterator<Item = &'a Path>) -> Walked {
        let mut walked = Walked::default();
        let mut kept = HashMap::new();
        for root in roots {
            let previous = self.roots.remove(root).unwrap_or_default();
            let now = walk_root(root, &previous, &mut walked);
            kept.insert(root.to_path_buf(), now);
        }
        self.roots = kept;
        walked.repositories.sort();
        walked.repositories.dedup();
        walked
    }
}

/// One root's walk: the directories it has now, listed again where they changed.
fn walk_root(
    root: &Path,
    previous: &HashMap<PathBuf, Listed>,
    walked: &mut Walked,
) -> HashMap<PathBuf, Listed> {
    let mut now = HashMap::new();
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let Ok(root_fd) = open(root, flags, Mode::empty()) else {
        return now;
    };
    // Depth first, a relative path at a time; no descriptor is held but the root's.
    let mut stack: Vec<(PathBuf, usize)> = vec![(PathBuf::new(), 0)];
    let mut visited = 0usize;
    while let Some((rel, depth)) = stack.pop() {
        if visited >= MAX_DIRS || depth > MAX_DEPTH {
            walked.cut.push(root.join(&rel));
            continue;
        }
        visited += 1;
        let Some(listed) = look(&root_fd, &rel, previous.get(&rel), walked) else {
            continue;
        };
        if listed.repository && !rel.as_os_str().is_empty() {
            walked.repositories.push(root.join(&rel));
        }
        if !listed.bare {
            for name in listed.subdirs.iter().rev() {
                stack.push((rel.join(name), depth + 1));
            }
        }
        now.insert(rel, listed);
    }
    walked.dirs += visited;
    now
}

/// The directory at `rel` under `root_fd`: `known` again when its stamp is unchanged, else
/// listed afresh; `None` when it is gone or no longer a directory (a symlink now).
fn look(
    root_fd: &OwnedFd,
    rel: &Path,
    known: Option<&Listed>,
    walked: &mut Walked,
) -> Option<Listed> {
    let at = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    if let Some(known) = known {
        // No symlink in `rel`'s parents: each was listed as a directory in this walk, after
        // its own change time was checked. A race with a concurrent call can only make the
        // stamp differ, and then the directory is opened without following anything.
        let st = fstatat(root_fd, at, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
        if stamp(&st) == known.stamp {
            return Some(known.clone());
        }
    }
    walked.listed += 1;
    let fd = open_beneath(root_fd, at)?;
    let st = nix::sys::stat::fstat(&fd).ok()?;
    Some(list(fd, stamp(&st)))
}

/// `rel` opened as a directory beneath `root_fd`, no symlink followed anywhere on the way.
fn open_beneath(root_fd: &OwnedFd, rel: &Path) -> Option<OwnedFd> {
    let path = std::ffi::CString::new(rel.as_os_str().as_bytes()).ok()?;
    // SAFETY: `open_how` is a plain struct of integers, for which all zeroes is valid (and what
    // the kernel wants in any field not set below).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `path` is a NUL-terminated string and `how` a valid `open_how` of the size passed;
    // both outlive the call. The returned descriptor, when not negative, is new and ours alone.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root_fd.as_raw_fd(),
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: `fd` was just returned by openat2 and is owned by nothing else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The names in the opened directory that the walk needs.
fn list(fd: OwnedFd, stamp: Stamp) -> Listed {
    let mut subdirs = Vec::new();
    let (mut dot_git, mut head, mut objects, mut refs, mut commondir) =
        (false, false, false, false, false);
    if let Ok(mut dir) = nix::dir::Dir::from_fd(fd) {
        for entry in dir.iter().filter_map(Result::ok) {
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            match name.as_bytes() {
                b"." | b".." => continue,
                b".git" => dot_git = true,
                b"HEAD" => head = true,
                b"objects" => objects = true,
                b"refs" => refs = true,
                b"commondir" => commondir = true,
                _ => {}
            }
            let is_dir = matches!(entry.file_type(), Some(nix::dir::Type::Directory));
            if is_dir && !NOT_ENTERED.iter().any(|n| name == OsStr::new(n)) {
                subdirs.push(name.to_os_string());
            }
        }
    }
    subdirs.sort();
    // What git takes for a git directory (`is_git_directory`): a HEAD, and objects and refs or
    // a commondir. A directory shaped so is a repository git would use when run inside it.
    let bare = head && ((objects && refs) || commondir);
    Listed {
        stamp,
        subdirs,
        repository: dot_git || bare,
        bare,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scratch(PathBuf);

    impl Scratch {
        fn new(label: &str) -> Scratch {
            let dir =
                std::env::temp_dir().join(format!("agentd-repos-{label}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir.canonicalize().unwrap())
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn repositories_at_every_depth_and_of_every_shape_are_found() {
        let ws = Scratch::new("shapes");
        let root = &ws.0;
        for d in [
            ".git/hooks",
            "a/.git",
            "org/proj/.git",
            "deep/1/2/3/4/5/6/7/8/r/.git",
            "bare.git/objects",
            "bare.git/refs",
            "plain/src",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("sub/mod")).unwrap();
        std::fs::write(root.join("sub/mod/.git"), "gitdir: ../../.git/modules/m\n").unwrap();
        std::fs::create_dir_all(root.join("linked")).unwrap();
        std::os::unix::fs::symlink("/usr", root.join("linked/.git")).unwrap();
        let walked = RepoWalk::default().refresh([root.as_path()]);
        let want: Vec<PathBuf> = [
            "a",
            "bare.git",
            "deep/1/2/3/4/5/6/7/8/r",
            "linked",
            "org/proj",
            "sub/mod",
        ]
        .iter()
        .map(|p| root.join(p))
        .collect();
        assert_eq!(walked.repositories, want);
        assert!(walked.cut.is_empty());
    }

    #[test]
    fn a_symlinked_directory_is_not_walked_into() {
        let ws = Scratch::new("symlink");
        let outside = Scratch::new("symlink-outside");
        std::fs::create_dir_all(outside.0.join("repo/.git")).unwrap();
        std::os::unix::fs::symlink(&outside.0, ws.0.join("out")).unwrap();
        let walked = RepoWalk::default().refresh([ws.0.as_path()]);
        assert!(walked.repositories.is_empty(), "{walked:?}");
    }

    #[test]
    fn a_second_walk_lists_only_what_changed_and_sees_a_new_repository_deep_down() {
        let ws = Scratch::new("again");
        let root = &ws.0;
        for i in 0..50 {
            std::fs::create_dir_all(root.join(format!("d{i}/e/f"))).unwrap();
        }
        let mut walk = RepoWalk::default();
        let first = walk.refresh([root.as_path()]);
        assert_eq!(first.dirs, 151);
        assert_eq!(first.listed, 151);
        let again = walk.refresh([root.as_path()]);
        assert_eq!(again.listed, 0, "nothing changed: {again:?}");
        assert!(again.repositories.is_empty());
        std::fs::create_dir_all(root.join("d7/e/f/.git")).unwrap();
        let after = walk.refresh([root.as_path()]);
        assert_eq!(after.repositories, vec![root.join("d7/e/f")]);
        assert_eq!(after.listed, 1, "only d7/e/f changed: {after:?}");
        // A directory swapped for a symlink is dropped, and what it held with it.
        std::fs::remove_dir_all(root.join("d7")).unwrap();
        std::os::unix::fs::symlink(root.join("d8"), root.join("d7")).unwrap();
        assert!(walk.refresh([root.as_path()]).repositories.is_empty());
    }
}
