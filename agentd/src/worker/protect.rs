//! Protected paths a call created: the half the mounts cannot do.
//!
//! A worker makes the protected paths that exist read-only (`tool_worker::lockdown::mounts`), but
//! a path that does not exist cannot be mounted over: a call could create `.git/commondir`
//! (redirecting git's config and hooks to a directory it wrote), `.git/config.worktree`,
//! `.vscode/tasks.json` or a submodule's hooks, for the user's next `git` command or editor to
//! run. So after each call the supervisor compares the protected paths, **by name** (a symlink
//! named `.vscode` is `.vscode`, wherever it points), with a [`Baseline`] — those that existed when
//! the session began — and moves any new one into `.agentd-quarantine/` of its writable root,
//! where nothing runs it and the user can look.
//!
//! The baseline is the session's, not the call's: two overlapping calls cannot hand a path to each
//! other between their own before and after. A repository made during the session (`git init`,
//! `git clone`, at the root or at any depth: [`super::repos`] finds them all) keeps, of its git
//! files, only what runs nothing ([`super::fresh_repo`]) — the rest is quarantined — and joins
//! the baseline.
//!
//! The supervisor may be root and the workspace is the model's: nothing here follows a symlink.
//! The root is opened `O_NOFOLLOW`, each directory on the way is opened relative to the one
//! before with `O_NOFOLLOW` (a symlink on the way is itself what gets moved), the quarantine is
//! made and opened the same way, and `renameat` moves the entry itself between the two
//! descriptors.

use crate::inert::inert_line;
use nix::fcntl::{OFlag, openat, renameat};
use nix::sys::stat::{Mode, mkdirat};
use protocol::worker::{SandboxSpec, ToolResult};
use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use tool_worker::lockdown::mounts::gitconfig;
use tool_worker::lockdown::mounts::view::protected_names;

/// The directory of a writable root that quarantined paths are moved to.
pub const QUARANTINE: &str = ".agentd-quarantine";

/// The protected paths a session began with (and the repositories made during it).
#[derive(Debug)]
pub struct Baseline {
    state: Mutex<Known>,
}

#[derive(Debug)]
struct Known {
    /// (writable root, path relative to it) that may exist.
    paths: BTreeSet<(PathBuf, PathBuf)>,
    /// Repositories (a writable root or a directory below one holding a `.git`, or a bare git
    /// directory) that existed when the session began, or were made during it and seen since.
    repositories: BTreeSet<PathBuf>,
    /// How open to other users the directories git and editors look in were.
    openness: super::loosened::Snapshot,
    /// The walk that finds every repository below the roots, kept to reuse what is unchanged.
    walk: super::repos::RepoWalk,
    /// What the last walk found: the repositories each call's spec carries.
    found: Vec<PathBuf>,
    /// What git showed of each repository after the last call ([`super::git_view`]).
    shown: super::git_view::Shown,
    /// What each git directory held after the last call ([`super::git_entries`]).
    entries: super::git_entries::GitEntries,
    /// What each object store held after the last call ([`super::git_objects`]).
    objects: super::git_objects::ObjectStores,
}

impl Baseline {
    /// The protected paths of `spec`'s writable roots as they are now, after making the
    /// placeholders a repository lacks ([`make_placeholders`]).
    pub fn now(spec: &SandboxSpec) -> Baseline {
        if !workspace_holds(spec) {
            tracing::warn!(
                "the workspace {} is no longer the directory the session was made for: no placeholders made",
                inert_line(&spec.workspace.display().to_string())
            );
        }
        make_placeholders(spec);
        let mut walk = super::repos::RepoWalk::default();
        let found = walk_roots(&mut walk, spec);
        let spec = with_repositories(spec, &found);
        let names = protected_names(&spec);
        let repositories = repositories_in(&spec);
        let listed: Vec<PathBuf> = repositories.iter().cloned().collect();
        Baseline {
            state: Mutex::new(Known {
                openness: super::loosened::Snapshot::of(writable_roots(&spec), &names),
                paths: names.into_iter().collect(),
                shown: super::git_view::Shown::of(&git_dirs(&listed, &spec)),
                entries: super::git_entries::GitEntries::of(&git_dirs(&listed, &spec)),
                objects: super::git_objects::ObjectStores::of(&git_dirs(&listed, &spec)),
                repositories,
                walk,
                found,
            }),
        }
    }

    /// `spec` with the repositories the last walk found, for a worker to protect them all.
    pub fn spec(&self, spec: &SandboxSpec) -> SandboxSpec {
        let known = self.state.lock().unwrap_or_else(|e| e.into_inner());
        with_repositories(spec, &known.found)
    }

    /// After a call: moves the protected paths it created aside; returns what was done, in words.
    pub fn check(&self, spec: &SandboxSpec) -> Vec<String> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let known = &mut *guard;
        if !workspace_holds(spec) {
            // A worker refuses such a workspace, so no call ran there; and nothing of someone
            // else's is moved.
            return Vec::new();
        }
        // Every repository there is now, at any depth: one the call made is judged below.
        known.found = walk_roots(&mut known.walk, spec);
        let spec = with_repositories(spec, &known.found);
        let repositories: Vec<PathBuf> = repositories_in(&spec).into_iter().collect();
        let names = protected_names(&spec);
        let mut notes = new_protected_paths(known, &spec, &names, &repositories);
        let dirs = git_dirs(&repositories, &spec);
        let mut planted = known.entries.planted(&dirs);
        planted.extend(known.objects.forged(&dirs, workspace_owner(&spec)));
        for (path, why) in planted {
            let Some((root, rel)) = writable_roots(&spec)
                .into_iter()
                .filter_map(|r| Some((r, path.strip_prefix(r).ok()?.to_path_buf())))
                .max_by_key(|(r, _)| r.components().count())
            else {
                continue;
            };
            let made = format!(
                "this call put {} in a git directory ({})",
                inert_line(&path.display().to_string()),
                inert_line(&why)
            );
            notes.push(move_aside(&spec, root, &rel, &made));
        }
        notes.extend(known.shown.compare(super::git_view::Shown::of(&dirs)));
        known.repositories.extend(repositories);
        for note in known.openness.close_again(writable_roots(&spec), &names) {
            tracing::warn!("{note}");
            notes.push(note);
        }
        notes
    }
}

/// The protected paths in `names` the session did not have: a repository made during the
/// session keeps what runs nothing ([`super::fresh_repo`]) and the baseline takes it; the rest
/// of it, and anything new in a repository that was there, is moved aside.
fn new_protected_paths(
    known: &mut Known,
    spec: &SandboxSpec,
    names: &[(PathBuf, PathBuf)],
    repositories: &[PathBuf],
) -> Vec<String> {
    let mut notes = Vec::new();
    for (root, rel) in names.iter().cloned() {
        if known.paths.contains(&(root.clone(), rel.clone())) {
            continue;
        }
        let path = root.join(&rel);
        let fresh = super::fresh_repo::owner_of(&path, repositories)
            .filter(|repo| !known.repositories.contains(*repo));
        if let Some(repo) = fresh
            && super::fresh_repo::is_inert(&root, repo, &path)
        {
            known.paths.insert((root, rel));
            continue;
        }
        let made = match fresh {
            Some(repo) => format!(
                "this call made the repository {} and put in it {}, which git would run or read later outside the sandbox",
                inert_line(&repo.display().to_string()),
                inert_line(&path.display().to_string())
            ),
            None => format!(
                "this call created the protected path {}, which git or an editor would run or trust later",
                inert_line(&path.display().to_string())
            ),
        };
        notes.push(move_aside(spec, &root, &rel, &made));
    }
    notes
}

/// Quarantines `root/rel`, which the call `made`; what was done, in words (and logged).
fn move_aside(spec: &SandboxSpec, root: &Path, rel: &Path, made: &str) -> String {
    let note = match quarantine(root, rel, expected(spec, root)) {
        Ok(to) => format!(
            "{made}; it was moved to {}",
            inert_line(&to.display().to_string())
        ),
        Err(e) => format!(
            "{made}, and it could not be moved aside ({e}): review it before you run git or open an editor here"
        ),
    };
    tracing::warn!("{note}");
    note
}

/// Each of `repositories` with its git directory, in `spec`'s writable roots.
fn git_dirs(repositories: &[PathBuf], spec: &SandboxSpec) -> Vec<(PathBuf, PathBuf)> {
    let roots = writable_roots(spec);
    repositories
        .iter()
        .filter_map(|r| Some((r.clone(), super::git_view::git_dir(r, &roots)?)))
        .collect()
}

/// Walks `spec`'s writable roots for every repository below them ([`super::repos`]).
fn walk_roots(walk: &mut super::repos::RepoWalk, spec: &SandboxSpec) -> Vec<PathBuf> {
    let walked = walk.refresh(writable_roots(spec).into_iter().map(PathBuf::as_path));
    for cut in &walked.cut {
        tracing::warn!(
            "the walk for repositories stopped at {} (more than {} directories, or deeper than {}): a repository below it is not protected",
            inert_line(&cut.display().to_string()),
            super::repos::MAX_DIRS,
            super::repos::MAX_DEPTH
        );
    }
    walked.repositories
}

fn with_repositories(spec: &SandboxSpec, found: &[PathBuf]) -> SandboxSpec {
    let mut spec = spec.clone();
    spec.repositories = found.to_vec();
    spec
}

/// The repositories of `spec`: the writable roots that hold a `.git` or are shaped like a git
/// directory, and the ones below them its walk found.
fn repositories_in(spec: &SandboxSpec) -> BTreeSet<PathBuf> {
    writable_roots(spec)
        .into_iter()
        .filter(|r| {
            std::fs::symlink_metadata(r.join(".git")).is_ok()
                || std::fs::symlink_metadata(r.join("HEAD")).is_ok()
        })
        .cloned()
        .chain(spec.repositories.iter().cloned())
        .collect()
}

/// The roots a call of `spec` may change: the workspace and the write paths (none in the
/// read-only profile).
fn writable_roots(spec: &SandboxSpec) -> Vec<&PathBuf> {
    if spec.profile != protocol::worker::SandboxProfile::WorkspaceWrite {
        return Vec::new();
    }
    std::iter::once(&spec.workspace)
        .chain(&spec.write_paths)
        .collect()
}

/// A repository without `.git/hooks` (cloned with an empty template, or the directory removed)
/// gets an empty one, and one with `extensions.worktreeConfig` an empty `config.worktree`, both
/// owned like `.git`: a path that does not exist cannot be mounted over, and git would run or
/// read whatever a call put there. Made here, when the session begins, so that they are the
/// baseline's and no call's. Best effort; through descriptors, following no symlink (a `.git`
/// that is a symlink is left alone).
pub fn make_placeholders(spec: &SandboxSpec) {
    if spec.profile != protocol::worker::SandboxProfile::WorkspaceWrite {
        return;
    }
    for root in std::iter::once(&spec.workspace).chain(&spec.write_paths) {
        let Ok(root_fd) = nix::fcntl::open(root.as_path(), dir_flags(), Mode::empty()) else {
            continue;
        };
        if !is(&root_fd, expected(spec, root)) {
            continue;
        }
        let Ok(git) = openat(&root_fd, ".git", dir_flags(), Mode::empty()) else {
            continue;
        };
        let Ok(owner) = nix::sys::stat::fstat(&git) else {
            continue;
        };
        let (uid, gid) = (
            Some(nix::unistd::Uid::from_raw(owner.st_uid)),
            Some(nix::unistd::Gid::from_raw(owner.st_gid)),
        );
        if mkdirat(&git, "hooks", Mode::from_bits_truncate(0o755)).is_ok()
            && let Ok(hooks) = openat(&git, "hooks", dir_flags(), Mode::empty())
        {
            let _ = nix::unistd::fchown(&hooks, uid, gid);
        }
        // Not blocking on a FIFO, regular files only, a bounded read: the tree is the model's.
        let enabled = openat(
            &git,
            "config",
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok()
        .and_then(|fd| gitconfig::read_opened(std::fs::File::from(fd)))
        .is_some_and(|text| gitconfig::worktree_config_enabled(&text));
        if enabled
            && let Ok(file) = openat(
                &git,
                "config.worktree",
                OFlag::O_WRONLY
                    | OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(0o644),
            )
        {
            let _ = nix::unistd::fchown(&file, uid, gid);
        }
    }
}

/// Adds `notes` to `result`, for the model and for the user.
pub fn tell(result: &mut ToolResult, notes: Vec<String>) {
    for note in notes {
        result.content.push_str(&format!("\n[agentd: {note}]"));
        result.lockdown.warnings.push(note);
    }
}

/// Whether the workspace path still names the directory the session was made for
/// ([`SandboxSpec::workspace_identity`]); true when there is no identity to check.
pub fn workspace_holds(spec: &SandboxSpec) -> bool {
    use std::os::unix::fs::MetadataExt;
    spec.workspace_identity
        .is_none_or(|id| std::fs::metadata(&spec.workspace).is_ok_and(|m| (m.dev(), m.ino()) == id))
}

/// The workspace's owner (uid, gid): whom a root supervisor's checks run git as.
fn workspace_owner(spec: &SandboxSpec) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(&spec.workspace)
        .ok()
        .map(|m| (m.uid(), m.gid()))
}

/// The identity `root` must have: the workspace's, for the workspace.
fn expected(spec: &SandboxSpec, root: &Path) -> Option<(u64, u64)> {
    spec.workspace_identity.filter(|_| root == spec.workspace)
}

/// Whether the opened directory `fd` is the one `expect` names (any, without one).
fn is(fd: &impl std::os::fd::AsFd, expect: Option<(u64, u64)>) -> bool {
    expect.is_none_or(|(dev, ino)| {
        nix::sys::stat::fstat(fd).is_ok_and(|st| (st.st_dev, st.st_ino) == (dev, ino))
    })
}

fn dir_flags() -> OFlag {
    OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY
}

/// Moves `root/rel` into `root/.agentd-quarantine/`, following no symlink: if a directory on the
/// way is a symlink (or not a directory), that entry is moved instead. Returns where it went.
fn quarantine(root: &Path, rel: &Path, expect: Option<(u64, u64)>) -> std::io::Result<PathBuf> {
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(std::io::Error::other("not a plain relative path")),
        })
        .collect::<Result<_, _>>()?;
    let Some((last, parents)) = names.split_last() else {
        return Err(std::io::Error::other("an empty path"));
    };
    let root_fd = nix::fcntl::open(root, dir_flags(), Mode::empty())?;
    if !is(&root_fd, expect) {
        return Err(std::io::Error::other(
            "the workspace is no longer the directory the session was made for",
        ));
    }
    let mut dir: OwnedFd = nix::fcntl::openat(&root_fd, ".", dir_flags(), Mode::empty())?;
    let mut moved: PathBuf = PathBuf::new();
    let mut entry: &std::ffi::OsStr = last;
    for name in parents {
        match openat(&dir, *name, dir_flags(), Mode::empty()) {
            Ok(next) => {
                dir = next;
                moved.push(name);
            }
            Err(nix::Error::ELOOP | nix::Error::ENOTDIR) => {
                entry = name;
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    moved.push(entry);
    // Whether it exists or not, the move below opens it without following a symlink.
    if mkdirat(&root_fd, QUARANTINE, Mode::from_bits_truncate(0o700)).is_ok() {
        // The workspace owner's, not a root supervisor's: theirs to look in and to remove.
        if let (Ok(made), Ok(owner)) = (
            openat(&root_fd, QUARANTINE, dir_flags(), Mode::empty()),
            nix::sys::stat::fstat(&root_fd),
        ) {
            let _ = nix::unistd::fchown(
                &made,
                Some(nix::unistd::Uid::from_raw(owner.st_uid)),
                Some(nix::unistd::Gid::from_raw(owner.st_gid)),
            );
        }
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Short enough for any file system: the stamp and the end of the path.
    let flat = moved.to_string_lossy().replace('/', "%");
    let tail: String = flat
        .chars()
        .rev()
        .take(100)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let name = format!("{stamp}-{tail}");
    let into_quarantine = openat(&root_fd, QUARANTINE, dir_flags(), Mode::empty())
        .and_then(|q| renameat(&dir, entry, &q, name.as_str()));
    match into_quarantine {
        Ok(()) => Ok(root.join(QUARANTINE).join(name)),
        // The call can make the quarantine unusable (a file of that name): never fail open. The
        // entry is renamed where it is, to a name neither git nor an editor reads.
        Err(_) => {
            let aside = format!(".agentd-quarantined-{stamp}");
            renameat(&dir, entry, &dir, aside.as_str())?;
            let parent = moved.parent().unwrap_or(Path::new(""));
            Ok(root.join(parent).join(aside))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(label: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("agentd-protect-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn a_symlink_on_the_way_is_moved_itself_and_its_target_is_untouched() {
        let root = scratch("symlink");
        let outside = scratch("symlink-outside");
        std::fs::write(outside.join("key"), "secret").unwrap();
        std::os::unix::fs::symlink(&outside, root.join(".vscode")).unwrap();
        let to = quarantine(&root, Path::new(".vscode/key"), None).unwrap();
        assert!(
            std::fs::symlink_metadata(&to)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(outside.join("key")).unwrap(),
            "secret"
        );
        assert!(!root.join(".vscode").exists());
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn the_quarantine_belongs_to_the_workspace_owner() {
        use std::os::unix::fs::MetadataExt;
        let root = scratch("qowner");
        std::fs::create_dir(root.join(".idea")).unwrap();
        let (uid, gid) = (4242, 4343);
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::chown(&root, Some(uid), Some(gid)).unwrap();
        }
        quarantine(&root, Path::new(".idea"), None).unwrap();
        let made = std::fs::metadata(root.join(QUARANTINE)).unwrap();
        let owner = std::fs::metadata(&root).unwrap();
        assert_eq!((made.uid(), made.gid()), (owner.uid(), owner.gid()));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_quarantine_that_is_a_symlink_is_not_followed_and_the_path_is_still_moved_aside() {
        let root = scratch("qlink");
        let outside = scratch("qlink-outside");
        std::os::unix::fs::symlink(&outside, root.join(QUARANTINE)).unwrap();
        std::fs::create_dir(root.join(".idea")).unwrap();
        let to = quarantine(&root, Path::new(".idea"), None).unwrap();
        assert!(!root.join(".idea").exists(), "moved aside where it was");
        assert!(to.starts_with(&root) && to.is_dir(), "{}", to.display());
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "nothing went through the link"
        );
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn only_paths_new_since_the_baseline_are_moved_and_a_new_repository_keeps_its_own() {
        let root = scratch("baseline");
        std::fs::create_dir(root.join(".idea")).unwrap();
        let spec = crate::worker::default_sandbox(root.clone(), root.join("t"), None);
        let baseline = Baseline::now(&spec);
        std::fs::create_dir(root.join(".vscode")).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        let notes = baseline.check(&spec);
        assert!(root.join(".idea").is_dir(), "it was there before");
        assert!(!root.join(".vscode").exists(), "{notes:?}");
        assert!(root.join(".git/hooks").is_dir() && root.join(".git/config").is_file());
        assert_eq!(notes.len(), 1, "the new repository runs nothing: {notes:?}");
        // From now on the new repository is the baseline's: a second look moves nothing of it.
        std::fs::write(root.join(".git/commondir"), "../x").unwrap();
        let notes = baseline.check(&spec);
        assert!(!root.join(".git/commondir").exists(), "{notes:?}");
        assert!(root.join(".git/config").is_file());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_repository_made_at_any_depth_keeps_only_what_runs_nothing() {
        let root = scratch("deep-repo");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("org/team/proj/.git/hooks")).unwrap();
        let spec = crate::worker::default_sandbox(root.clone(), root.join("t"), None);
        let baseline = Baseline::now(&spec);
        assert_eq!(
            baseline.spec(&spec).repositories,
            vec![root.join("org/team/proj")],
            "found at lockdown, at depth 3"
        );
        // The call makes a repository two levels down with a planted fsmonitor, and one with
        // only what `git init` writes.
        let planted = root.join("vendor/lib/.git");
        std::fs::create_dir_all(planted.join("hooks")).unwrap();
        std::fs::write(
            planted.join("config"),
            "[core]\n\tfsmonitor = id >/tmp/PWNED; false\n",
        )
        .unwrap();
        std::fs::write(planted.join("hooks/post-checkout"), "#!/bin/sh\nid\n").unwrap();
        let clean = root.join("vendor/clean/.git");
        std::fs::create_dir_all(clean.join("hooks")).unwrap();
        std::fs::write(clean.join("config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(clean.join("hooks/pre-push.sample"), "#!/bin/sh\n").unwrap();
        // And plants in the repository that was there.
        std::fs::write(
            root.join("org/team/proj/.git/config"),
            "[core]\n\tpager = x\n",
        )
        .unwrap();
        let notes = baseline.check(&spec);
        assert!(!planted.join("config").exists(), "{notes:?}");
        assert!(!planted.join("hooks").exists(), "{notes:?}");
        assert!(
            clean.join("config").is_file() && clean.join("hooks").is_dir(),
            "{notes:?}"
        );
        assert!(
            !root.join("org/team/proj/.git/config").exists(),
            "new in a repository that was there: {notes:?}"
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        let spec_now = baseline.spec(&spec);
        for repo in ["org/team/proj", "vendor/clean", "vendor/lib"] {
            assert!(
                spec_now.repositories.contains(&root.join(repo)),
                "{repo}: {spec_now:?}"
            );
        }
        // The clean one is the baseline's now: a config planted later goes.
        std::fs::write(clean.join("config"), "[alias]\n\tx = !sh\n").unwrap();
        std::fs::remove_file(clean.join("config")).unwrap();
        std::fs::write(clean.join("config.worktree"), "[core]\n\tbare = false\n").unwrap();
        let notes = baseline.check(&spec);
        assert!(!clean.join("config.worktree").exists(), "{notes:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
