//! Private temp dirs against the names, shapes and swaps another local user can plant.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report
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
    assert_eq!(
        check_parent(dir(0, 0o1777), 0, owner),
        Ok(()),
        "a shared sticky one, where the owner could make it too"
    );
    // A directory of root's the owner cannot write in (their session root, swapped for a
    // symlink to /etc): root would make them a directory there.
    assert!(
        check_parent(dir(0, 0o755), 0, owner)
            .unwrap_err()
            .contains("could not make")
    );
    assert!(check_parent(dir(0, 0o1770), 0, owner).is_err());
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
        let path =
            std::env::temp_dir().join(format!("agentd-tmp-unit-{label}-{}", std::process::id()));
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
    let e =
        PrivateDir::create_named(&shared.0, Owner::current(), [Ok("a".to_owned())]).unwrap_err();
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
