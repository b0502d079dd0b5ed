//! One writable root as the supervisor sees it: every directory, regular file, symlink and
//! special file below it, by path relative to the root, with the metadata that tells whether it
//! changed — taken with one `getdents` per directory and one `fstatat` per entry.
//!
//! The tree is the model's, and the supervisor may be root: nothing here follows a symlink or
//! opens a file. The root is opened `O_NOFOLLOW`; every directory below it is opened from its
//! parent's descriptor by one name with `O_DIRECTORY | O_NOFOLLOW` (a directory swapped for a
//! symlink between the `fstatat` and the open fails with `ELOOP` and is not entered; one swapped
//! for another directory is listed as it is now, with the metadata of what was opened); every
//! entry is looked at with `fstatat(AT_SYMLINK_NOFOLLOW)` from its directory's descriptor. No
//! path through a symlink is ever resolved.
//!
//! A `.git` directory is listed but not entered further: its direct entries (`index`, `HEAD`,
//! `config`, `packed-refs`, …) are compared — `git update-index` rewrites `index`, so a change
//! hidden from git still shows there — but its subdirectories (`objects`, `refs`, `logs`) are
//! git's own store, whose churn says nothing a reviewer needs: what a commit or a checkout did
//! to the work tree shows in the work tree's files.
//!
//! Bounded: at most [`Bounds::entries`] entries and [`Bounds::depth`] levels; past either the
//! snapshot says what it left out ([`Snapshot::incomplete`]), and so does every comparison
//! with it.

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, open, openat};
use nix::sys::stat::{FileStat, Mode, fstat, fstatat};
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::Path;

/// How far a walk goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Entries recorded per root at most (a million: some 100 MB while a turn runs).
    pub entries: usize,
    /// Deepest directory entered, counted from the root (its children are depth 1).
    pub depth: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            entries: 1_000_000,
            depth: 128,
        }
    }
}

/// What the comparison needs of one entry: its identity, size, times and mode. The change time
/// is the one a call cannot put back (`utimensat` sets the others and moves it to now), so a
/// file written and then given its old modification time still differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size in bytes (a symlink's: the length of its target).
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status change time, nanoseconds since the epoch.
    pub ctime_ns: i64,
    /// Type and permission bits (`st_mode`).
    pub mode: u32,
}

impl Meta {
    /// The metadata of `st`.
    pub fn of(st: &FileStat) -> Meta {
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Meta {
            dev: st.st_dev,
            ino: st.st_ino,
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
            mode: st.st_mode,
        }
    }

    /// The file type bits.
    pub fn file_type(&self) -> u32 {
        self.mode & libc::S_IFMT
    }

    /// Whether it is a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type() == libc::S_IFDIR
    }
}

/// One entry: its path relative to the root (bytes, `/`-separated) and its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path below the root.
    pub path: Box<[u8]>,
    /// What `fstatat` said.
    pub meta: Meta,
}

/// A root's entries, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Every entry recorded, sorted by path bytes.
    pub entries: Vec<Entry>,
    /// What was left out, in words, if anything was.
    pub incomplete: Option<String>,
}

/// The snapshot of `root` within the default [`Bounds`].
pub fn take(root: &Path) -> Snapshot {
    take_within(root, Bounds::default())
}

/// The snapshot of `root` within `bounds`.
pub fn take_within(root: &Path, bounds: Bounds) -> Snapshot {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let root_fd = match open(root, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(e) => {
            return Snapshot {
                entries: vec![],
                incomplete: Some(format!("{} could not be read: {e}", root.display())),
            };
        }
    };
    let mut walk = Walk {
        bounds,
        entries: Vec::new(),
        full: false,
        deep: 0,
        unread: 0,
        first_unread: None,
    };
    walk.dir(root_fd, &mut Vec::new(), 0, false);
    walk.entries
        .sort_unstable_by(|a, b| a.path.as_ref().cmp(b.path.as_ref()));
    let incomplete = walk.incomplete();
    Snapshot {
        entries: walk.entries,
        incomplete,
    }
}

/// A walk in progress.
struct Walk {
    bounds: Bounds,
    entries: Vec<Entry>,
    /// The entry bound was reached.
    full: bool,
    /// Directories not entered because of the depth bound.
    deep: usize,
    /// Entries or directories that could not be read (permissions, I/O errors).
    unread: usize,
    /// The first of them, with the error.
    first_unread: Option<String>,
}

impl Walk {
    /// Records the entries of the directory open as `fd`, whose path is `rel`, and walks into
    /// its subdirectories (not into those of a `.git` directory: `in_git`).
    fn dir(&mut self, fd: OwnedFd, rel: &mut Vec<u8>, depth: usize, in_git: bool) {
        let mut dir = match nix::dir::Dir::from_fd(fd) {
            Ok(dir) => dir,
            Err(e) => return self.unreadable(rel, e),
        };
        let mut names: Vec<CString> = dir
            .iter()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_owned())
            .filter(|n| !matches!(n.as_bytes(), b"." | b".."))
            .collect();
        // Sorted, so a walk cut by the bound records the same prefix each time.
        names.sort_unstable();
        for name in names {
            if self.entries.len() >= self.bounds.entries {
                self.full = true;
                return;
            }
            let len = rel.len();
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(name.as_bytes());
            match fstatat(&dir, name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                // Gone since the listing: it is not there now.
                Err(Errno::ENOENT) => {}
                Err(e) => self.unreadable(rel, e),
                Ok(st) => {
                    let (index, meta) = (self.entries.len(), Meta::of(&st));
                    self.entries.push(Entry {
                        path: rel.clone().into_boxed_slice(),
                        meta,
                    });
                    if meta.is_dir() && !in_git {
                        self.enter(&dir, &name, rel, depth + 1, index);
                    }
                }
            }
            rel.truncate(len);
        }
    }

    /// Walks into the subdirectory `name` of `parent` (recorded at `index`), if it is still a
    /// directory and within the depth bound.
    fn enter(
        &mut self,
        parent: &nix::dir::Dir,
        name: &CString,
        rel: &mut Vec<u8>,
        depth: usize,
        index: usize,
    ) {
        if depth > self.bounds.depth {
            self.deep += 1;
            return;
        }
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = match openat(parent, name.as_c_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            // Replaced by a symlink or a file, or gone, since the `fstatat`: not entered.
            Err(Errno::ELOOP | Errno::ENOTDIR | Errno::ENOENT) => return,
            Err(e) => return self.unreadable(rel, e),
        };
        // Replaced by another directory since the `fstatat`: record what is listed.
        if let (Ok(st), Some(entry)) = (fstat(&fd), self.entries.get_mut(index)) {
            entry.meta = Meta::of(&st);
        }
        self.dir(fd, rel, depth, name.as_bytes() == b".git");
    }

    fn unreadable(&mut self, rel: &[u8], e: Errno) {
        self.unread += 1;
        if self.first_unread.is_none() {
            let path = if rel.is_empty() { b"." } else { rel };
            self.first_unread = Some(format!("{}: {e}", String::from_utf8_lossy(path)));
        }
    }

    /// What the walk left out, in words.
    fn incomplete(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.full {
            why.push(format!("stopped at {} entries", self.bounds.entries));
        }
        if self.deep > 0 {
            why.push(format!(
                "{} directories deeper than {} levels not entered",
                self.deep, self.bounds.depth
            ));
        }
        if let Some(first) = &self.first_unread {
            why.push(format!("{} unreadable (first: {first})", self.unread));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}
