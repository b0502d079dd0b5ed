//! Each user's root for their sessions' temp dirs: one private directory per user in the shared
//! temp dir (/tmp), whose name is 128 random bits in hex.
//!
//! Sessions' temp dirs were `/tmp/agentd-run-<random>`, one per session, each its user's: anyone
//! listing /tmp saw who used agentd and, by the directories' times, when each session started.
//! Now /tmp holds one directory per user with sessions open, named by nothing but chance, mode
//! 0700 and the user's (so only they, and root, can list it); each session's temp dir is
//! `run-<random>` inside it, each call's `call-<random>` inside that.
//!
//! The root is made like every private dir ([`PrivateDir::create`]): the parent checked, the name
//! made exclusively with `mkdirat` (a name someone planted is skipped, never used), the result
//! checked on its descriptor. It is kept in memory, shared by the user's sessions in this
//! process, and removed when the last of them ends; the next session gets a new name. Nothing is
//! kept on disk to find it again, so there is nothing another user could pre-create or predict:
//! a random name, unlike a keyed hash of the uid, needs no secret to guard.
//!
//! What stays visible: the root's owner and times (`ls -l /tmp`), that is, that this user has a
//! private directory there since some time — not that it is agentd's, nor how many sessions it
//! holds. Under the system unit (`PrivateTmp=`) the whole of it is in the service's own /tmp.

use super::{Owner, PrivateDir, TmpError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// Random bytes in a root's name.
const NAME_BYTES: usize = 16;

/// Roots by parent and user. Weak: a root lives as long as a session holds it, not as long as
/// this map.
type Roots = HashMap<(PathBuf, u32), Weak<PrivateDir>>;

/// The roots alive in this process.
static ROOTS: Mutex<Option<Roots>> = Mutex::new(None);

/// A new private temp dir for a session of `owner`: `run-<random>` in `owner`'s root under
/// `parent`, made first if they have none alive.
pub fn session_dir(parent: &Path, owner: Owner) -> Result<PrivateDir, TmpError> {
    PrivateDir::create_within(user_root(parent, owner)?, "run-", owner)
}

/// `owner`'s root under `parent`: the one alive (and still where it was made), else a new one.
fn user_root(parent: &Path, owner: Owner) -> Result<Arc<PrivateDir>, TmpError> {
    let mut roots = ROOTS.lock().unwrap_or_else(|e| e.into_inner());
    let roots = roots.get_or_insert_with(HashMap::new);
    let key = (parent.to_path_buf(), owner.uid);
    if let Some(root) = roots.get(&key).and_then(Weak::upgrade)
        && root.still_here()
    {
        return Ok(root);
    }
    let names =
        (0..super::ATTEMPTS).map(|_| crate::random::hex::<NAME_BYTES>().map_err(TmpError::Random));
    let root = Arc::new(PrivateDir::create_named(parent, owner, names)?);
    roots.retain(|_, r| r.strong_count() > 0);
    roots.insert(key, Arc::downgrade(&root));
    Ok(root)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn shared(label: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("agentd-roots-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o1777)).unwrap();
        path
    }

    #[test]
    fn sessions_of_a_user_share_one_random_private_root_removed_with_the_last() {
        let parent = shared("share");
        let me = Owner::current();
        let a = session_dir(&parent, me).unwrap();
        let b = session_dir(&parent, me).unwrap();
        let root = a.path().parent().unwrap().to_owned();
        assert_eq!(b.path().parent(), Some(root.as_path()), "one root per user");
        assert_eq!(root.parent(), Some(parent.as_path()));
        let name = root.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), 2 * NAME_BYTES, "{name}");
        assert!(name.bytes().all(|c| c.is_ascii_hexdigit()), "{name}");
        let meta = std::fs::symlink_metadata(&root).unwrap();
        assert_eq!((meta.uid(), meta.mode() & 0o7777), (me.uid, 0o700));
        assert!(
            a.path()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("run-")
        );
        drop(a);
        assert!(root.is_dir(), "kept while a session holds it");
        drop(b);
        assert!(!root.exists(), "removed with the last session");
        let c = session_dir(&parent, me).unwrap();
        assert_ne!(
            c.path().parent(),
            Some(root.as_path()),
            "a new name next time"
        );
        drop(c);
        assert_eq!(
            std::fs::read_dir(&parent).unwrap().count(),
            0,
            "nothing left"
        );
        std::fs::remove_dir(&parent).unwrap();
    }

    #[test]
    fn a_root_moved_away_is_not_used_again() {
        let parent = shared("moved");
        let me = Owner::current();
        let a = session_dir(&parent, me).unwrap();
        let root = a.path().parent().unwrap().to_owned();
        std::fs::rename(&root, parent.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink("/", &root).unwrap();
        let b = session_dir(&parent, me).unwrap();
        assert!(!b.path().starts_with(&root), "{}", b.path().display());
        drop((a, b));
        let _ = std::fs::remove_dir_all(&parent);
    }
}
