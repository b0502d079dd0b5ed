//! Removing a private temp dir and everything in it with a bounded number of descriptors and a
//! bounded stack, however deep the tree is.
//!
//! `std::fs::remove_dir_all` recurses and keeps a directory descriptor open per level: a call
//! that nested directories deeper than the supervisor's `RLIMIT_NOFILE` made it fail with EMFILE,
//! leaving the whole tree (and whatever the call wrote at its bottom) in the host's /tmp, and
//! while it ran it used up descriptors the daemon's other sessions needed. This walk is iterative
//! and holds at most [`MAX_FDS`] descriptors of its own at any time, whatever the depth:
//!
//! - it goes down with `openat(name, O_DIRECTORY | O_NOFOLLOW)`: a symlink inside is never
//!   followed, only unlinked (a call may plant `tmp/x -> /home/victim`; CVE-2022-21658 was this
//!   race in std), and a directory on another device or mount is never entered;
//! - everything that is not a directory (file, symlink, fifo, socket, device node) is
//!   `unlinkat`'d by name in the directory the walk holds open;
//! - the path down is kept as a stack of (name, device, inode) on the heap, not as descriptors or
//!   recursion;
//! - it goes back up by opening `..`, which must be the directory recorded one level up, and
//!   removes the emptied child by name only if that name still names the child it emptied.
//!
//! Whatever does not match (something was moved or swapped meanwhile, a mount point) stops the
//! walk with an error: better leave a tree behind than remove something that is not ours.
//!
//! The call may run as our uid and make directories of its tree unreadable or unwritable
//! (`chmod 000`); inside the tree (never the parent the tree is in) such a directory is made 0700
//! again — on the descriptor we hold, or by name without following a symlink — and the step
//! retried once.

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, open, openat};
use nix::sys::stat::{FchmodatFlags, FileStat, Mode, fchmod, fchmodat, fstat, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use std::ffi::{CStr, CString, OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

/// The most descriptors the walk holds at once: the directory it is in, and either the stream
/// reading it or the child or parent it is moving to. ([`remove_tree`] holds one more: the
/// parent of the tree.)
pub const MAX_FDS: usize = 2;

/// How many times a directory may turn out non-empty after it was emptied (someone adding
/// entries meanwhile) before the walk gives up.
const RETRIES: usize = 64;

/// Why a tree was not (entirely) removed.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    /// The directory the tree is in could not be opened.
    #[error("cannot open {path}: {source}")]
    OpenParent {
        /// The parent.
        path: PathBuf,
        #[source]
        source: Errno,
    },
    /// A system call on an entry failed.
    #[error("cannot {op} {name:?} at depth {depth}: {source}")]
    Sys {
        /// What was being done.
        op: &'static str,
        /// The entry (the top of the tree is depth 0).
        name: OsString,
        /// How deep it is.
        depth: usize,
        #[source]
        source: Errno,
    },
    /// A directory is not the one the walk recorded: something was moved or replaced.
    #[error("{name:?} at depth {depth} is not what the removal expected ({why}); stopped")]
    Moved {
        /// The entry.
        name: OsString,
        /// How deep it is.
        depth: usize,
        /// What did not match.
        why: &'static str,
    },
    /// A directory is on another filesystem or mount: not entered.
    #[error("{name:?} at depth {depth} is on another filesystem or mount; not entered")]
    OtherMount {
        /// The entry.
        name: OsString,
        /// How deep it is.
        depth: usize,
    },
    /// A directory kept getting new entries after it was emptied.
    #[error("{name:?} at depth {depth} kept getting new entries; gave up")]
    Busy {
        /// The entry.
        name: OsString,
        /// How deep it is.
        depth: usize,
    },
}

/// Removes the directory at `path`, which must be the directory `id` (device, inode), and
/// everything in it, without following symlinks or entering other mounts. The parent's path is
/// resolved as given; from there on everything is relative to descriptors.
pub fn remove_tree(path: &Path, id: (u64, u64)) -> Result<(), RemoveError> {
    let (parent, name) = match (path.parent(), path.file_name()) {
        (Some(p), Some(n)) if p.as_os_str().is_empty() => (Path::new("."), n),
        (Some(p), Some(n)) => (p, n),
        _ => {
            return Err(RemoveError::Sys {
                op: "remove",
                name: path.as_os_str().to_owned(),
                depth: 0,
                source: Errno::EINVAL,
            });
        }
    };
    let dir = open(
        parent,
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|source| RemoveError::OpenParent {
        path: parent.into(),
        source,
    })?;
    remove_tree_at(dir.as_fd(), name, id)
}

/// [`remove_tree`] for the entry `name` of the directory `parent`.
pub fn remove_tree_at(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    id: (u64, u64),
) -> Result<(), RemoveError> {
    let name = CString::new(name.as_bytes()).map_err(|_| RemoveError::Sys {
        op: "remove",
        name: name.to_owned(),
        depth: 0,
        source: Errno::EINVAL,
    })?;
    Walk::start(parent, name, id)?.run()
}

/// Device and inode.
fn id_of(st: &FileStat) -> (u64, u64) {
    (st.st_dev, st.st_ino)
}

fn is_dir(st: &FileStat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFDIR
}

/// `name` opened as a directory, never through a symlink.
fn open_dir(at: BorrowedFd<'_>, name: &CStr) -> nix::Result<OwnedFd> {
    openat(
        at,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// The id of the mount `fd` is on, where the kernel can say (`statx`, Linux 5.8).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn mount_id(fd: BorrowedFd<'_>) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let mut buf = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: `fd` is an open descriptor, the path is an empty NUL-terminated string (with
    // AT_EMPTY_PATH: `fd` itself), and `buf` is a writable `struct statx` the kernel fills.
    let rc = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_MNT_ID,
            buf.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: statx succeeded and filled `buf` (and it was zeroed before: every field is set).
    let st = unsafe { buf.assume_init() };
    (st.stx_mask & libc::STATX_MNT_ID != 0).then_some(st.stx_mnt_id)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn mount_id(_fd: BorrowedFd<'_>) -> Option<u64> {
    None
}

/// A directory's entries (without `.` and `..`), read with `readdir` on a descriptor of their own.
struct Entries(NonNull<libc::DIR>);

impl Entries {
    /// The entries of `dir`, from the start (a new open file description, not a `dup`: its own
    /// offset).
    fn of(dir: BorrowedFd<'_>) -> nix::Result<Self> {
        let fd = openat(
            dir,
            c".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let raw = fd.into_raw_fd();
        // SAFETY: `raw` is an open directory descriptor that nothing else owns; on success the
        // stream owns it (closedir closes it).
        let stream = unsafe { libc::fdopendir(raw) };
        match NonNull::new(stream) {
            Some(stream) => Ok(Entries(stream)),
            None => {
                let e = Errno::last();
                // SAFETY: fdopendir failed, so `raw` is still ours alone: closed here.
                drop(unsafe { OwnedFd::from_raw_fd(raw) });
                Err(e)
            }
        }
    }

    /// The next entry's name and `d_type`, `None` at the end.
    fn next_entry(&mut self) -> nix::Result<Option<(CString, u8)>> {
        loop {
            Errno::clear();
            // SAFETY: the stream is open (closed only in drop) and used by this thread alone
            // (`&mut self`).
            let entry = unsafe { libc::readdir(self.0.as_ptr()) };
            let Some(entry) = NonNull::new(entry) else {
                return match Errno::last_raw() {
                    0 => Ok(None),
                    e => Err(Errno::from_raw(e)),
                };
            };
            // SAFETY: a non-null readdir result points to a dirent that stays valid until the
            // next readdir or closedir on this stream, and its d_name is NUL-terminated; both
            // are copied out before either.
            let (name, kind) = unsafe {
                let entry = entry.as_ref();
                (CStr::from_ptr(entry.d_name.as_ptr()), entry.d_type)
            };
            if name == c"." || name == c".." {
                continue;
            }
            return Ok(Some((name.to_owned(), kind)));
        }
    }
}

impl Drop for Entries {
    fn drop(&mut self) {
        // SAFETY: the stream is open, and this is the only place it is closed.
        unsafe { libc::closedir(self.0.as_ptr()) };
    }
}

/// One directory on the path down.
#[derive(Debug)]
struct Level {
    name: CString,
    /// Device and inode, as opened.
    id: (u64, u64),
    /// Its subdirectories still to remove; `None` until it is read (again).
    pending: Option<Vec<CString>>,
}

/// What an `rmdir` of an emptied directory did.
enum Rmdir {
    Removed,
    /// Something was added meanwhile.
    NotEmpty,
}

/// What an `unlinkat` of a non-directory found.
enum Unlink {
    Done,
    /// It is a directory after all.
    Dir,
}

/// The walk: the directory it is in and the path down to it.
#[derive(Debug)]
struct Walk<'p> {
    /// The directory the tree is in.
    parent: BorrowedFd<'p>,
    /// The tree's device and mount: never left.
    dev: u64,
    mount: Option<u64>,
    /// The top of the tree first, the directory `cur` is last.
    levels: Vec<Level>,
    /// The directory the walk is in: the last of `levels`.
    cur: OwnedFd,
    /// Directories found non-empty after they were emptied.
    retries: usize,
}

impl<'p> Walk<'p> {
    /// Opens `name` in `parent`, which must be the directory `id`.
    fn start(parent: BorrowedFd<'p>, name: CString, id: (u64, u64)) -> Result<Self, RemoveError> {
        let sys = |op, source| RemoveError::Sys {
            op,
            name: OsString::from_vec(name.as_bytes().to_vec()),
            depth: 0,
            source,
        };
        let moved = |why| RemoveError::Moved {
            name: OsString::from_vec(name.as_bytes().to_vec()),
            depth: 0,
            why,
        };
        let st = fstatat(parent, name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
            .map_err(|e| sys("stat", e))?;
        if id_of(&st) != id || !is_dir(&st) {
            return Err(moved("another entry has its name"));
        }
        let top = match open_dir(parent, &name) {
            // Made unreadable by the call: it is ours (checked just above), so 0700 again.
            Err(Errno::EACCES) => {
                fchmodat(
                    parent,
                    name.as_c_str(),
                    Mode::from_bits_truncate(0o700),
                    FchmodatFlags::NoFollowSymlink,
                )
                .map_err(|e| sys("chmod", e))?;
                open_dir(parent, &name)
            }
            other => other,
        }
        .map_err(|e| sys("open", e))?;
        let st = fstat(&top).map_err(|e| sys("stat", e))?;
        if id_of(&st) != id {
            return Err(moved("replaced while it was opened"));
        }
        Ok(Walk {
            parent,
            dev: st.st_dev,
            mount: mount_id(top.as_fd()),
            levels: vec![Level {
                name,
                id,
                pending: None,
            }],
            cur: top,
            retries: 0,
        })
    }

    /// Removes the tree, then its top.
    fn run(mut self) -> Result<(), RemoveError> {
        loop {
            let Some(level) = self.levels.last_mut() else {
                return Ok(());
            };
            match level.pending.as_mut().map(Vec::pop) {
                None => {
                    let subdirs = self.read()?;
                    if let Some(level) = self.levels.last_mut() {
                        level.pending = Some(subdirs);
                    }
                }
                Some(Some(name)) => self.descend(name)?,
                Some(None) if self.levels.len() > 1 => self.ascend()?,
                Some(None) => {
                    if self.finish()? {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// How deep `cur` is (the top is 0).
    fn depth(&self) -> usize {
        self.levels.len().saturating_sub(1)
    }

    fn sys(&self, op: &'static str, name: &CStr, depth: usize, source: Errno) -> RemoveError {
        RemoveError::Sys {
            op,
            name: OsString::from_vec(name.to_bytes().to_vec()),
            depth,
            source,
        }
    }

    /// The name of `cur`, for errors about it.
    fn cur_name(&self) -> CString {
        self.levels
            .last()
            .map_or_else(CString::default, |l| l.name.clone())
    }

    /// Makes `cur` 0700 (after EACCES inside it: the call made it unreadable or unwritable).
    fn unlock(&self) -> Result<(), RemoveError> {
        fchmod(&self.cur, Mode::from_bits_truncate(0o700))
            .map_err(|e| self.sys("chmod", &self.cur_name(), self.depth(), e))
    }

    /// Unlinks every entry of `cur` that is not a directory; returns the names of those that are.
    fn read(&self) -> Result<Vec<CString>, RemoveError> {
        let depth = self.depth();
        let mut entries = match Entries::of(self.cur.as_fd()) {
            Err(Errno::EACCES) => {
                self.unlock()?;
                Entries::of(self.cur.as_fd())
            }
            other => other,
        }
        .map_err(|e| self.sys("read", &self.cur_name(), depth, e))?;
        let mut subdirs = Vec::new();
        while let Some((name, kind)) = entries
            .next_entry()
            .map_err(|e| self.sys("read", &self.cur_name(), depth, e))?
        {
            let dir = match kind {
                libc::DT_DIR => true,
                libc::DT_UNKNOWN => {
                    match fstatat(&self.cur, name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                        Ok(st) => is_dir(&st),
                        Err(Errno::ENOENT) => continue,
                        Err(e) => return Err(self.sys("stat", &name, depth + 1, e)),
                    }
                }
                _ => false,
            };
            if dir || matches!(self.unlink(&name)?, Unlink::Dir) {
                subdirs.push(name);
            }
        }
        Ok(subdirs)
    }

    /// Unlinks the non-directory `name` in `cur`.
    fn unlink(&self, name: &CStr) -> Result<Unlink, RemoveError> {
        let once = || unlinkat(&self.cur, name, UnlinkatFlags::NoRemoveDir);
        let done = match once() {
            Err(Errno::EACCES) => {
                self.unlock()?;
                once()
            }
            other => other,
        };
        match done {
            Ok(()) | Err(Errno::ENOENT) => Ok(Unlink::Done),
            Err(Errno::EISDIR) => Ok(Unlink::Dir),
            Err(e) => Err(self.sys("unlink", name, self.depth() + 1, e)),
        }
    }

    /// Goes down into the subdirectory `name` of `cur`.
    fn descend(&mut self, name: CString) -> Result<(), RemoveError> {
        let depth = self.depth() + 1;
        let opened = match open_dir(self.cur.as_fd(), &name) {
            Err(Errno::EACCES) => {
                // Unsearchable `cur`, or an unreadable `name`: both ours, both made 0700 (the
                // latter by name without following a symlink: glibc refuses one).
                self.unlock()?;
                match open_dir(self.cur.as_fd(), &name) {
                    Err(Errno::EACCES) => {
                        fchmodat(
                            &self.cur,
                            name.as_c_str(),
                            Mode::from_bits_truncate(0o700),
                            FchmodatFlags::NoFollowSymlink,
                        )
                        .map_err(|e| self.sys("chmod", &name, depth, e))?;
                        open_dir(self.cur.as_fd(), &name)
                    }
                    other => other,
                }
            }
            other => other,
        };
        let fd = match opened {
            Ok(fd) => fd,
            // Gone meanwhile.
            Err(Errno::ENOENT) => return Ok(()),
            // Not a directory (any more): unlinked as what it is; read again if it is one again.
            Err(Errno::ENOTDIR | Errno::ELOOP) => {
                if let Unlink::Dir = self.unlink(&name)? {
                    self.again()?;
                }
                return Ok(());
            }
            Err(e) => return Err(self.sys("open", &name, depth, e)),
        };
        let st = fstat(&fd).map_err(|e| self.sys("stat", &name, depth, e))?;
        let mount = mount_id(fd.as_fd());
        if st.st_dev != self.dev || (mount.is_some() && self.mount.is_some() && mount != self.mount)
        {
            return Err(RemoveError::OtherMount {
                name: OsString::from_vec(name.into_bytes()),
                depth,
            });
        }
        self.levels.push(Level {
            name,
            id: id_of(&st),
            pending: None,
        });
        self.cur = fd;
        Ok(())
    }

    /// `cur` is empty: goes up to its parent and removes it there.
    fn ascend(&mut self) -> Result<(), RemoveError> {
        let depth = self.depth();
        let name = self.cur_name();
        let moved = |why| RemoveError::Moved {
            name: OsString::from_vec(name.as_bytes().to_vec()),
            depth,
            why,
        };
        let up =
            open_dir(self.cur.as_fd(), c"..").map_err(|e| self.sys("open ..", &name, depth, e))?;
        let st = fstat(&up).map_err(|e| self.sys("stat ..", &name, depth, e))?;
        let expected = self
            .levels
            .len()
            .checked_sub(2)
            .and_then(|i| self.levels.get(i));
        if expected.map(|l| l.id) != Some(id_of(&st)) {
            return Err(moved("its parent is not the directory it was found in"));
        }
        // Closed before it is removed: the last reference to it goes in the rmdir, not later.
        self.cur = up;
        let Some(child) = self.levels.pop() else {
            return Ok(());
        };
        match self.rmdir(self.cur.as_fd(), &child, depth, true)? {
            Rmdir::Removed => {}
            // Read the parent again: it finds the child again.
            Rmdir::NotEmpty => self.again()?,
        }
        Ok(())
    }

    /// The whole tree is empty: removes its top from the parent. `false` if something appeared
    /// in it meanwhile (it is to be read again).
    fn finish(&mut self) -> Result<bool, RemoveError> {
        // The parent is not ours to make writable.
        let (Some(top), parent) = (self.levels.first(), self.parent) else {
            return Ok(true);
        };
        match self.rmdir(parent, top, 0, false)? {
            Rmdir::Removed => Ok(true),
            Rmdir::NotEmpty => {
                self.again()?;
                Ok(false)
            }
        }
    }

    /// `cur`, emptied, removed by name from `parent` (its parent), if the name still names it.
    /// `unlock`: `parent` is in the tree and may be made writable.
    fn rmdir(
        &self,
        parent: BorrowedFd<'_>,
        level: &Level,
        depth: usize,
        unlock: bool,
    ) -> Result<Rmdir, RemoveError> {
        let name = level.name.as_c_str();
        let moved = || RemoveError::Moved {
            name: OsString::from_vec(name.to_bytes().to_vec()),
            depth,
            why: "its name no longer names it",
        };
        match fstatat(parent, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) if id_of(&st) == level.id => {}
            Ok(_) | Err(Errno::ENOENT) => return Err(moved()),
            Err(e) => return Err(self.sys("stat", name, depth, e)),
        }
        let once = || unlinkat(parent, name, UnlinkatFlags::RemoveDir);
        let done = match once() {
            Err(Errno::EACCES) if unlock => {
                fchmod(parent, Mode::from_bits_truncate(0o700))
                    .map_err(|e| self.sys("chmod the parent of", name, depth, e))?;
                once()
            }
            other => other,
        };
        match done {
            Ok(()) => Ok(Rmdir::Removed),
            Err(Errno::ENOTEMPTY | Errno::EEXIST) => Ok(Rmdir::NotEmpty),
            Err(e) => Err(self.sys("remove", name, depth, e)),
        }
    }

    /// `cur` is to be read again (something appeared in it); gives up after [`RETRIES`].
    fn again(&mut self) -> Result<(), RemoveError> {
        self.retries += 1;
        if self.retries > RETRIES {
            return Err(RemoveError::Busy {
                name: OsString::from_vec(self.cur_name().into_bytes()),
                depth: self.depth(),
            });
        }
        if let Some(level) = self.levels.last_mut() {
            level.pending = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// A scratch directory of the test's own, removed (best effort) on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(label: &str) -> Self {
            let path = std::env::temp_dir()
                .join(format!("agentd-remove-unit-{label}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir(&path).unwrap();
            Scratch(path)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            if let Ok(m) = std::fs::symlink_metadata(&self.0) {
                let _ = remove_tree(&self.0, (m.dev(), m.ino()));
            }
        }
    }

    fn id(path: &Path) -> (u64, u64) {
        let m = std::fs::symlink_metadata(path).unwrap();
        (m.dev(), m.ino())
    }

    fn open_fds() -> usize {
        // (read_dir's own descriptor is among those listed: the same in every count.)
        std::fs::read_dir("/proc/self/fd").unwrap().count()
    }

    /// The `RLIMIT_NOFILE` under which exactly `free` more descriptors can be opened (the limit
    /// bounds the numbers of new descriptors, not how many are open).
    fn limit_leaving(free: usize) -> u64 {
        // (What read_dir's own descriptor names: not one that stays open.)
        let listing = PathBuf::from(format!("/proc/{}/fd", std::process::id()));
        let open: Vec<u64> = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| std::fs::read_link(e.path()).ok() != Some(listing.clone()))
            .map(|e| e.file_name().to_str().unwrap().parse().unwrap())
            .collect();
        let mut left = free;
        (0..)
            .find(|n| {
                if open.contains(n) {
                    return false;
                }
                if left == 0 {
                    return true;
                }
                left -= 1;
                false
            })
            .unwrap()
    }

    /// `path` and `depth` directories `d` nested in it, made holding two descriptors at most; a
    /// file at every hundredth level and `payload` at the bottom.
    fn deep_tree(path: &Path, depth: usize) {
        std::fs::create_dir(path).unwrap();
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let mut fd = open(path, flags, Mode::empty()).unwrap();
        let mode = Mode::from_bits_truncate(0o755);
        for level in 0..depth {
            if level % 100 == 0 {
                let file = OFlag::O_CREAT | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
                drop(openat(&fd, c"f", file, Mode::from_bits_truncate(0o644)).unwrap());
            }
            nix::sys::stat::mkdirat(&fd, c"d", mode).unwrap();
            fd = openat(&fd, c"d", flags, Mode::empty()).unwrap();
        }
        let file = OFlag::O_CREAT | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
        let payload = openat(&fd, c"payload", file, Mode::from_bits_truncate(0o644)).unwrap();
        nix::unistd::write(&payload, &[7u8; 4096]).unwrap();
    }

    const CHILD: &str = "AGENTD_REMOVE_TREE_UNDER_LOW_NOFILE";
    const CHILD_TEST: &str = "worker::tmp::remove::tests::deep_tree_under_a_low_descriptor_limit";
    const DEPTH: usize = 3000;

    /// Run by [`a_tree_deeper_than_the_descriptor_limit_is_removed`] in a process of its own: the
    /// descriptor limit it sets is process-wide.
    #[test]
    #[ignore = "run in a process of its own by a_tree_deeper_than_the_descriptor_limit_is_removed"]
    fn deep_tree_under_a_low_descriptor_limit() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let scratch = Scratch::new("deep");
        let before = open_fds();
        // Room for the walk's own descriptors and the parent `remove_tree` opens, no more: the
        // tree is a thousand times deeper.
        let limit = limit_leaving(MAX_FDS + 1);
        let nofile = nix::sys::resource::Resource::RLIMIT_NOFILE;
        let (_, hard) = nix::sys::resource::getrlimit(nofile).unwrap();
        nix::sys::resource::setrlimit(nofile, limit, hard).unwrap();

        // The control: std's recursion holds a descriptor per level and runs out, leaving all.
        let tree = scratch.0.join("tree");
        deep_tree(&tree, DEPTH);
        let e = std::fs::remove_dir_all(&tree).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
        assert!(tree.join("d/d/d").is_dir());

        // The walk removes the same tree, on a small stack too: it does not recurse.
        let target = id(&tree);
        let walker = tree.clone();
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || remove_tree(&walker, target))
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        assert!(!tree.exists());
        assert_eq!(open_fds(), before, "no descriptor left open");
    }

    #[test]
    fn a_tree_deeper_than_the_descriptor_limit_is_removed() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([CHILD_TEST, "--exact", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "the child test ran: {text}");
    }

    #[test]
    fn symlinks_inside_are_unlinked_and_their_targets_survive() {
        let scratch = Scratch::new("links");
        let victim = scratch.0.join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("keep"), "precious").unwrap();
        let tree = scratch.0.join("tree");
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        std::os::unix::fs::symlink(&victim, tree.join("to-dir")).unwrap();
        std::os::unix::fs::symlink(victim.join("keep"), tree.join("a/to-file")).unwrap();
        std::os::unix::fs::symlink(&victim, tree.join("a/b/deeper")).unwrap();
        std::os::unix::fs::symlink("/nonexistent", tree.join("a/b/dangling")).unwrap();
        std::os::unix::fs::symlink("..", tree.join("a/b/up")).unwrap();
        std::fs::hard_link(victim.join("keep"), tree.join("a/hard")).unwrap();
        remove_tree(&tree, id(&tree)).unwrap();
        assert!(!tree.exists());
        assert_eq!(
            std::fs::read_to_string(victim.join("keep")).unwrap(),
            "precious"
        );
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 1);
    }

    #[test]
    fn files_fifos_sockets_and_odd_modes_inside_are_removed() {
        let scratch = Scratch::new("kinds");
        let tree = scratch.0.join("tree");
        std::fs::create_dir_all(tree.join("a/b/c")).unwrap();
        std::fs::write(tree.join("file"), "x").unwrap();
        std::fs::write(tree.join("a/b/c/file"), "x").unwrap();
        nix::unistd::mkfifo(&tree.join("a/fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        drop(std::os::unix::net::UnixListener::bind(tree.join("a/b/sock")).unwrap());
        if nix::unistd::geteuid().is_root() {
            nix::sys::stat::mknod(
                &tree.join("a/b/null"),
                nix::sys::stat::SFlag::S_IFCHR,
                Mode::from_bits_truncate(0o600),
                nix::sys::stat::makedev(1, 3),
            )
            .unwrap();
        }
        // A wide directory, and names that are not UTF-8 or look like options.
        for i in 0..500 {
            std::fs::create_dir(tree.join(format!("wide-{i}"))).unwrap();
            std::fs::write(tree.join(format!("wide-{i}/f")), "x").unwrap();
        }
        std::fs::write(tree.join(OsStr::from_bytes(b"\xff\xfe-name")), "x").unwrap();
        std::fs::create_dir(tree.join("-rf")).unwrap();
        // What the call can do to its own tree: unreadable, unsearchable, unwritable directories.
        let perm = |p: &str, mode| {
            std::fs::set_permissions(tree.join(p), std::fs::Permissions::from_mode(mode)).unwrap()
        };
        perm("a/b/c", 0o000);
        perm("a/b", 0o500);
        perm("a", 0o300);
        remove_tree(&tree, id(&tree)).unwrap();
        assert!(!tree.exists());
        assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0);
    }

    #[test]
    fn an_entry_that_is_not_the_expected_directory_is_left_alone() {
        let scratch = Scratch::new("replaced");
        let tree = scratch.0.join("tree");
        std::fs::create_dir(&tree).unwrap();
        let made = id(&tree);
        std::fs::rename(&tree, scratch.0.join("moved")).unwrap();
        std::fs::create_dir(&tree).unwrap();
        std::fs::write(tree.join("theirs"), "x").unwrap();
        let e = remove_tree(&tree, made).unwrap_err();
        assert!(matches!(e, RemoveError::Moved { depth: 0, .. }), "{e}");
        assert!(tree.join("theirs").exists());
        // A symlink at the name, to a directory that has the right identity, is not followed.
        std::fs::remove_dir_all(&tree).unwrap();
        std::os::unix::fs::symlink(scratch.0.join("moved"), &tree).unwrap();
        let e = remove_tree(&tree, made).unwrap_err();
        assert!(matches!(e, RemoveError::Moved { .. }), "{e}");
        assert!(scratch.0.join("moved").is_dir());
    }

    #[test]
    fn a_directory_moved_out_of_the_tree_meanwhile_stops_the_walk() {
        let scratch = Scratch::new("moved-out");
        let tree = scratch.0.join("tree");
        let elsewhere = scratch.0.join("elsewhere");
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("keep"), "x").unwrap();
        let parent = open(
            &scratch.0,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        let mut walk = Walk::start(parent.as_fd(), c"tree".to_owned(), id(&tree)).unwrap();
        let subdirs = walk.read().unwrap();
        assert_eq!(subdirs, [c"a".to_owned()]);
        walk.descend(c"a".to_owned()).unwrap();
        // Someone moves the directory the walk is in out of the tree.
        std::fs::rename(tree.join("a"), elsewhere.join("a")).unwrap();
        walk.levels.last_mut().unwrap().pending = Some(walk.read().unwrap());
        let e = walk.run().unwrap_err();
        assert!(
            matches!(e, RemoveError::Moved { depth: 1, .. }),
            "going up from `a` reaches `elsewhere`, not the tree: {e}"
        );
        assert!(elsewhere.join("keep").exists());
        assert!(
            elsewhere.join("a").is_dir(),
            "not removed from where it went"
        );
        assert!(tree.is_dir());
    }

    /// A mount made for the test, detached on drop.
    struct Mounted(PathBuf);

    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
        }
    }

    #[test]
    fn other_mounts_inside_are_not_entered() {
        use nix::mount::{MsFlags, mount};
        let scratch = Scratch::new("mounts");
        let outside = scratch.0.join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "x").unwrap();
        for kind in ["tmpfs", "bind"] {
            let tree = scratch.0.join(format!("tree-{kind}"));
            std::fs::create_dir_all(tree.join("m")).unwrap();
            let mounted = match kind {
                "tmpfs" => mount(
                    Some("tmpfs"),
                    &tree.join("m"),
                    Some("tmpfs"),
                    MsFlags::empty(),
                    None::<&str>,
                ),
                // The same filesystem: only the mount id tells it apart.
                _ => mount(
                    Some(&outside),
                    &tree.join("m"),
                    None::<&str>,
                    MsFlags::MS_BIND,
                    None::<&str>,
                ),
            };
            if let Err(e) = mounted {
                eprintln!("skipped {kind}: cannot mount here: {e}");
                continue;
            }
            let guard = Mounted(tree.join("m"));
            if kind == "tmpfs" {
                std::fs::write(tree.join("m/keep"), "x").unwrap();
            }
            let e = remove_tree(&tree, id(&tree)).unwrap_err();
            assert!(
                matches!(e, RemoveError::OtherMount { depth: 1, .. }),
                "{kind}: {e}"
            );
            assert!(tree.join("m/keep").exists(), "{kind}");
            drop(guard);
            remove_tree(&tree, id(&tree)).unwrap();
        }
        assert!(outside.join("keep").exists());
    }
}
