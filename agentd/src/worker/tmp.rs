//! Private temp dirs that no other local user can steer.
//!
//! Temp dirs live under shared, world-writable places (`/tmp`), where another user can pre-create
//! any name: a directory of theirs, a symlink to their own directory or to a victim's, a file. A
//! path that is only joined and `create_dir_all`'d accepts all of them, and the call then writes
//! wherever the other user chose. So a private dir here is made the only way that cannot be
//! steered:
//!
//! - the parent is opened once and checked ([`check_parent`]): a directory owned by root, by us
//!   or by the dir's owner-to-be, and sticky if others may write in it (so nobody else can rename
//!   or delete what we make there);
//! - a root agentd makes a directory for another user only where that user could make it
//!   themselves: in a directory of theirs, or in a shared sticky one like /tmp — never in a
//!   root-owned one a path of theirs might lead to (their own session root swapped for a
//!   symlink to /etc);
//! - the name is random (64 bits from `getrandom`), and `mkdirat` relative to the parent's fd
//!   fails if the name exists — whatever is there, it is skipped and another name tried;
//! - the new directory is opened with `O_DIRECTORY | O_NOFOLLOW` and checked *on that fd*
//!   ([`check_private`]), after `fchmod` to 0700 and `fchown` to the worker's uid: it is then a
//!   directory that only its owner can enter;
//! - removal (on drop) first checks that the path still names the directory we made (device and
//!   inode), then walks it with [`remove::remove_tree`]: symlinks inside are unlinked, never
//!   followed (a call may plant `tmp/x -> /home/victim`; only the link goes), other mounts are
//!   not entered, and however deep the call nested its directories the walk holds a few
//!   descriptors and no recursion (`std::fs::remove_dir_all` held one descriptor per level and
//!   failed with EMFILE on a tree deeper than `RLIMIT_NOFILE`, leaving it all in /tmp).
//!
//! Files the tools create inside are private whatever their own mode: nobody else can enter the
//! directory to reach them.
//!
//! A session's temp dir is not made in /tmp itself but in its user's root there ([`roots`]): one
//! 0700 directory per user whose name is random, so /tmp shows neither who uses agentd nor when
//! each session started.

use nix::fcntl::{OFlag, open, openat};
use nix::sys::stat::{FileStat, Mode, fchmod, fstat, mkdirat};
use nix::unistd::{Gid, Uid, fchown};
use protocol::worker::SandboxSpec;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub mod remove;
pub mod roots;

/// Names tried before giving up (each collision is someone else's entry, or astronomically rare
/// bad luck).
const ATTEMPTS: usize = 64;

/// Why a private temp dir could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TmpError {
    /// The parent could not be opened.
    #[error("cannot open {path}: {source}")]
    OpenParent {
        /// The parent.
        path: PathBuf,
        #[source]
        source: nix::Error,
    },
    /// The parent is a place where someone else could swap what we make.
    #[error("{path} is not a safe place for a private temp dir: {why}")]
    UnsafeParent {
        /// The parent.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// `mkdirat`, `openat`, `fchmod` or `fchown` failed.
    #[error("cannot create a private temp dir {path}: {source}")]
    Create {
        /// The directory.
        path: PathBuf,
        #[source]
        source: nix::Error,
    },
    /// What was opened is not the private directory just made.
    #[error("{path} is not private after creating it: {why}")]
    NotPrivate {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Every name tried was taken.
    #[error("no free temp dir name under {path} after {ATTEMPTS} tries")]
    Exhausted {
        /// The parent.
        path: PathBuf,
    },
    /// No randomness for the name.
    #[error("no randomness from the kernel (getrandom): {0}")]
    Random(#[source] std::io::Error),
}

impl From<TmpError> for std::io::Error {
    fn from(e: TmpError) -> Self {
        std::io::Error::other(e)
    }
}

/// Who must own a private dir: the identity the worker runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

impl Owner {
    /// This process's effective identity.
    pub fn current() -> Self {
        Owner {
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
        }
    }

    /// Who the workers of `spec` run as: its `run_as` when we are root (the worker drops to it
    /// then), else ourselves.
    pub fn of(spec: &SandboxSpec) -> Self {
        match &spec.run_as {
            Some(who) if nix::unistd::geteuid().is_root() => Owner {
                uid: who.uid,
                gid: who.gid,
            },
            _ => Owner::current(),
        }
    }
}

/// The parts of a `stat` the checks look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// A directory (not a symlink, file, …).
    pub is_dir: bool,
    /// Owner.
    pub uid: u32,
    /// Permission bits with set-uid, set-gid and sticky (`st_mode & 0o7777`).
    pub mode: u32,
}

impl From<&FileStat> for Facts {
    fn from(st: &FileStat) -> Self {
        Facts {
            is_dir: st.st_mode & libc::S_IFMT == libc::S_IFDIR,
            uid: st.st_uid,
            mode: st.st_mode & 0o7777,
        }
    }
}

/// Whether private dirs may be made in a parent with these `facts`, by uid `me` for `owner`:
/// a directory owned by root, `me` or `owner`, and sticky if group or others may write in it.
/// For another owner than `me` (a root agentd's session of a user), only where that owner could
/// make it themselves: a directory of theirs, or a shared sticky one that anyone may write in.
/// Their own session root is theirs to rename and replace with a symlink to a directory of
/// root's: a directory made there for them, and given to them, would be a foothold in it.
pub fn check_parent(facts: Facts, me: u32, owner: Owner) -> Result<(), String> {
    if !facts.is_dir {
        return Err("not a directory".into());
    }
    if facts.uid != 0 && facts.uid != me && facts.uid != owner.uid {
        return Err(format!("owned by uid {}", facts.uid));
    }
    if facts.mode & 0o022 != 0 && facts.mode & 0o1000 == 0 {
        return Err(format!(
            "others may write in it and it is not sticky (mode {:o})",
            facts.mode
        ));
    }
    let shared = facts.mode & 0o1002 == 0o1002;
    if owner.uid != me && facts.uid != owner.uid && !shared {
        return Err(format!(
            "it is uid {}'s, not uid {}'s, and not shared and sticky (mode {:o}): uid {} could not make a directory here",
            facts.uid, owner.uid, facts.mode, owner.uid
        ));
    }
    Ok(())
}

/// Whether a directory we made and opened is private to `owner`: a directory, owned by it,
/// mode exactly 0700.
pub fn check_private(facts: Facts, owner: Owner) -> Result<(), String> {
    if !facts.is_dir {
        return Err("not a directory".into());
    }
    if facts.uid != owner.uid {
        return Err(format!("owned by uid {}, not {}", facts.uid, owner.uid));
    }
    if facts.mode != 0o700 {
        return Err(format!("mode {:o}, not 700", facts.mode));
    }
    Ok(())
}

/// `prefix` and 64 random bits in hex.
fn random_name(prefix: &str) -> Result<String, TmpError> {
    let hex = crate::random::hex::<8>().map_err(TmpError::Random)?;
    Ok(format!("{prefix}{hex}"))
}

/// A private directory, removed (without following symlinks) when dropped.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
    /// The directory, opened without following symlinks; what the checks looked at.
    fd: OwnedFd,
    /// Device and inode, to tell at removal that the path still names it.
    id: (u64, u64),
    /// The private directory this one is in, kept as long as this one: a session's temp dir
    /// holds its user's root ([`roots`]). Dropped after this one is removed (fields drop after
    /// `Drop::drop`), so the root is removed last.
    within: Option<std::sync::Arc<PrivateDir>>,
}

impl PrivateDir {
    /// A new private directory `parent/prefix<random>` for `owner` (mode 0700, owned by it).
    pub fn create(parent: &Path, prefix: &str, owner: Owner) -> Result<Self, TmpError> {
        Self::create_named(parent, owner, (0..ATTEMPTS).map(|_| random_name(prefix)))
    }

    /// [`PrivateDir::create`] trying the names `names` gives, in order.
    fn create_named(
        parent: &Path,
        owner: Owner,
        names: impl IntoIterator<Item = Result<String, TmpError>>,
    ) -> Result<Self, TmpError> {
        let dir = open(
            parent,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|source| TmpError::OpenParent {
            path: parent.into(),
            source,
        })?;
        let st = fstat(&dir).map_err(|source| TmpError::OpenParent {
            path: parent.into(),
            source,
        })?;
        let me = nix::unistd::geteuid().as_raw();
        check_parent(Facts::from(&st), me, owner).map_err(|why| TmpError::UnsafeParent {
            path: parent.into(),
            why,
        })?;
        for name in names {
            let name = name?;
            let path = parent.join(&name);
            match mkdirat(&dir, name.as_str(), Mode::from_bits_truncate(0o700)) {
                Ok(()) => {}
                // Someone else's entry, or a name we used before: never touch it, try another.
                Err(nix::Error::EEXIST) => continue,
                Err(source) => return Err(TmpError::Create { path, source }),
            }
            return Self::secure(&dir, &name, path, owner);
        }
        Err(TmpError::Exhausted {
            path: parent.into(),
        })
    }

    /// Opens the directory just made as `name` in `parent`, makes it `owner`'s and 0700, and
    /// checks that on the fd.
    fn secure(
        parent: &impl AsFd,
        name: &str,
        path: PathBuf,
        owner: Owner,
    ) -> Result<Self, TmpError> {
        let create = |source| TmpError::Create {
            path: path.clone(),
            source,
        };
        let fd = openat(
            parent,
            name,
            OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(create)?;
        let made = fstat(&fd).map_err(create)?;
        let me = nix::unistd::geteuid().as_raw();
        if made.st_uid != me {
            // Not the directory our mkdirat made: it was swapped in between.
            return Err(TmpError::NotPrivate {
                path,
                why: format!("owned by uid {}, not by us", made.st_uid),
            });
        }
        fchmod(&fd, Mode::from_bits_truncate(0o700)).map_err(create)?;
        if owner.uid != me {
            fchown(
                &fd,
                Some(Uid::from_raw(owner.uid)),
                Some(Gid::from_raw(owner.gid)),
            )
            .map_err(create)?;
        }
        let st = fstat(&fd).map_err(create)?;
        check_private(Facts::from(&st), owner).map_err(|why| TmpError::NotPrivate {
            path: path.clone(),
            why,
        })?;
        Ok(PrivateDir {
            path,
            fd,
            id: (st.st_dev, st.st_ino),
            within: None,
        })
    }

    /// A new private directory `within/prefix<random>` for `owner`, which keeps `within` for
    /// as long as it lives.
    pub fn create_within(
        within: std::sync::Arc<PrivateDir>,
        prefix: &str,
        owner: Owner,
    ) -> Result<Self, TmpError> {
        let mut made = Self::create(&within.path, prefix, owner)?;
        made.within = Some(within);
        Ok(made)
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `path` still names this directory (not something put in its place).
    pub fn still_here(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.id)
    }
}

impl AsFd for PrivateDir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        // Already gone (its parent, the session's temp root, was removed first): nothing to do.
        if std::fs::symlink_metadata(&self.path).is_err() {
            return;
        }
        if !self.still_here() {
            tracing::warn!(
                "temp dir {} was replaced; the replacement is left alone",
                self.path.display()
            );
            return;
        }
        // Symlink-safe (a symlink inside is unlinked, never followed), mount-safe, and bounded in
        // descriptors and stack whatever the depth; it re-checks the identity itself.
        if let Err(e) = remove::remove_tree(&self.path, self.id) {
            tracing::warn!("cannot remove temp dir {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests;
