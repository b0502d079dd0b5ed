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
//! - the name is random (64 bits from `/dev/urandom`), and `mkdirat` relative to the parent's fd
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

use nix::fcntl::{OFlag, open, openat};
use nix::sys::stat::{FileStat, Mode, fchmod, fstat, mkdirat};
use nix::unistd::{Gid, Uid, fchown};
use protocol::worker::SandboxSpec;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub mod remove;

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
    #[error("cannot read /dev/urandom: {0}")]
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
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(TmpError::Random)?;
    Ok(format!("{prefix}{:016x}", u64::from_le_bytes(bytes)))
}

/// A private directory, removed (without following symlinks) when dropped.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
    /// The directory, opened without following symlinks; what the checks looked at.
    fd: OwnedFd,
    /// Device and inode, to tell at removal that the path still names it.
    id: (u64, u64),
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
        })
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
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const ME: Owner = Owner {
        uid: 1000,
        gid: 1000,
    };

    fn dir(uid: u32, mode: u32) -> Facts {
        Facts {
            is_dir: true,
            uid,
            mode,
        }
    }

    #[test]
    fn parents_must_be_dirs_of_a_trusted_owner_and_sticky_when_shared() {
        assert_eq!(check_parent(dir(0, 0o1777), 1000, ME), Ok(()), "/tmp");
        assert_eq!(check_parent(dir(1000, 0o700), 1000, ME), Ok(()));
        assert_eq!(check_parent(dir(0, 0o755), 1000, ME), Ok(()));
        let owner = Owner {
            uid: 1001,
            gid: 1001,
        };
        assert_eq!(
            check_parent(dir(1001, 0o700), 0, owner),
            Ok(()),
            "the session owner's"
        );
        assert!(
            check_parent(dir(1002, 0o700), 1000, ME)
                .unwrap_err()
                .contains("uid 1002")
        );
        assert!(
            check_parent(dir(0, 0o777), 1000, ME)
                .unwrap_err()
                .contains("not sticky")
        );
        assert!(
            check_parent(dir(0, 0o775), 1000, ME)
                .unwrap_err()
                .contains("not sticky")
        );
        let file = Facts {
            is_dir: false,
            ..dir(0, 0o1777)
        };
        assert!(check_parent(file, 1000, ME).is_err());
    }

    #[test]
    fn private_means_a_dir_of_the_owner_with_mode_700() {
        assert_eq!(check_private(dir(1000, 0o700), ME), Ok(()));
        assert!(
            check_private(dir(1000, 0o755), ME)
                .unwrap_err()
                .contains("755")
        );
        assert!(check_private(dir(1000, 0o1700), ME).is_err());
        assert!(
            check_private(dir(0, 0o700), ME)
                .unwrap_err()
                .contains("uid 0")
        );
        let link = Facts {
            is_dir: false,
            ..dir(1000, 0o700)
        };
        assert!(check_private(link, ME).is_err());
    }

    #[test]
    fn random_names_differ() {
        let a = random_name("call-").unwrap();
        let b = random_name("call-").unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with("call-") && a.len() == 5 + 16, "{a}");
    }

    /// A shared, sticky, world-writable directory like /tmp, and an "other user" to plant in it.
    struct Shared(PathBuf);

    impl Shared {
        fn new(label: &str) -> Self {
            let path = std::env::temp_dir()
                .join(format!("agentd-tmp-unit-{label}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir(&path).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o1777)).unwrap();
            Shared(path)
        }
    }

    impl Drop for Shared {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Another uid than ours: `nobody` when we are root, else root (who owns /tmp anyway).
    fn other_uid() -> u32 {
        if nix::unistd::geteuid().is_root() {
            65534
        } else {
            0
        }
    }

    fn chown_other(path: &Path) {
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::lchown(path, Some(other_uid()), Some(other_uid())).unwrap();
        }
    }

    #[test]
    fn names_someone_else_made_first_are_skipped_never_followed() {
        let shared = Shared::new("planted");
        let theirs = shared.0.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
        chown_other(&theirs);
        let victim = shared.0.join("victim");
        std::fs::create_dir(&victim).unwrap();
        // The shapes another user can leave at the names we will try.
        std::fs::create_dir(shared.0.join("n-dir")).unwrap();
        std::fs::set_permissions(
            shared.0.join("n-dir"),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        chown_other(&shared.0.join("n-dir"));
        std::os::unix::fs::symlink(&theirs, shared.0.join("n-link-theirs")).unwrap();
        chown_other(&shared.0.join("n-link-theirs"));
        std::os::unix::fs::symlink(&victim, shared.0.join("n-link-victim")).unwrap();
        chown_other(&shared.0.join("n-link-victim"));
        std::fs::write(shared.0.join("n-file"), "x").unwrap();
        chown_other(&shared.0.join("n-file"));
        std::os::unix::fs::symlink("/nonexistent/dangling", shared.0.join("n-dangling")).unwrap();
        let names = [
            "n-dir",
            "n-link-theirs",
            "n-link-victim",
            "n-file",
            "n-dangling",
            "n-ours",
        ];
        let made = PrivateDir::create_named(
            &shared.0,
            Owner::current(),
            names.iter().map(|n| Ok((*n).to_owned())),
        )
        .unwrap();
        assert_eq!(
            made.path(),
            shared.0.join("n-ours"),
            "every planted name was skipped"
        );
        let meta = std::fs::symlink_metadata(made.path()).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.uid(), Owner::current().uid);
        assert_eq!(meta.mode() & 0o7777, 0o700);
        std::fs::write(made.path().join("f"), "secret").unwrap();
        // Nothing went where the planted names point, and the planted entries are as they were.
        assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_dir(shared.0.join("n-dir")).unwrap().count(),
            0
        );
        assert_eq!(
            std::fs::read_to_string(shared.0.join("n-file")).unwrap(),
            "x"
        );
        let path = made.path().to_owned();
        drop(made);
        assert!(!path.exists(), "removed on drop");
    }

    #[test]
    fn all_names_taken_is_an_error_not_a_reuse() {
        let shared = Shared::new("taken");
        std::fs::create_dir(shared.0.join("a")).unwrap();
        let e = PrivateDir::create_named(&shared.0, Owner::current(), [Ok("a".to_owned())])
            .unwrap_err();
        assert!(matches!(e, TmpError::Exhausted { .. }), "{e}");
    }

    #[test]
    fn a_shared_parent_that_is_not_sticky_is_refused() {
        let shared = Shared::new("nonsticky");
        std::fs::set_permissions(&shared.0, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = PrivateDir::create(&shared.0, "x-", Owner::current()).unwrap_err();
        assert!(matches!(e, TmpError::UnsafeParent { .. }), "{e}");
        // Sanity: the same directory made sticky is fine.
        std::fs::set_permissions(&shared.0, std::fs::Permissions::from_mode(0o1777)).unwrap();
        PrivateDir::create(&shared.0, "x-", Owner::current()).unwrap();
    }

    #[test]
    fn a_private_dir_is_made_for_its_owner_when_we_are_root() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root to chown");
            return;
        }
        let shared = Shared::new("owner");
        let owner = Owner {
            uid: 65534,
            gid: 65534,
        };
        let made = PrivateDir::create(&shared.0, "call-", owner).unwrap();
        let meta = std::fs::symlink_metadata(made.path()).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid(), meta.mode() & 0o7777),
            (65534, 65534, 0o700)
        );
    }

    #[test]
    fn removal_unlinks_planted_symlinks_and_spares_their_targets() {
        let shared = Shared::new("remove");
        let victim = shared.0.join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("keep"), "precious").unwrap();
        let made = PrivateDir::create(&shared.0, "call-", Owner::current()).unwrap();
        std::os::unix::fs::symlink(&victim, made.path().join("x")).unwrap();
        std::fs::create_dir(made.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(&victim, made.path().join("sub/y")).unwrap();
        let path = made.path().to_owned();
        drop(made);
        assert!(!path.exists());
        assert_eq!(
            std::fs::read_to_string(victim.join("keep")).unwrap(),
            "precious"
        );
    }

    #[test]
    fn a_replaced_dir_is_left_alone_at_removal() {
        let shared = Shared::new("replaced");
        let made = PrivateDir::create(&shared.0, "call-", Owner::current()).unwrap();
        let path = made.path().to_owned();
        std::fs::rename(&path, shared.0.join("moved")).unwrap();
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("theirs"), "x").unwrap();
        assert!(!made.still_here());
        drop(made);
        assert!(
            path.join("theirs").exists(),
            "what took its place is not ours to remove"
        );
    }
}
