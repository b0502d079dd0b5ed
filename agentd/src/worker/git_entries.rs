//! What a call may add to a git directory: only what git itself writes there and runs nothing.
//!
//! The protected names cover the parts of a git directory git reads config and hooks from; the
//! rest must stay writable for git to work (the index, refs, objects, a rebase's state). Some of
//! that rest holds commands git runs later: an `exec` line a call appends to
//! `rebase-merge/git-rebase-todo` runs, unsandboxed, at the user's `git rebase --continue` (a
//! finding). A list of such files would never be complete, so after each call:
//!
//! - a **new entry** directly in a git directory (or a linked worktree's) whose name is not one
//!   git writes ([`INERT`]) is quarantined;
//! - the **state of an operation in progress** (`rebase-merge/`, `rebase-apply/`, `sequencer/`)
//!   that changed since the session began is kept only if all of it is known to be inert
//!   ([`super::git_in_progress`]); otherwise the directory is quarantined: the rebase or cherry-pick
//!   is then no longer in progress, and nothing runs.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The names git writes directly in a git directory, none of which it runs: refs and their
/// logs, the index, objects, the state of a merge, rebase, cherry-pick, revert, bisect or am in
/// progress, messages, locks. The protected names (`hooks`, `config`, `info`, `commondir`,
/// `config.worktree`, `modules`, `worktrees`) are the protected paths' business.
const INERT: &[&str] = &[
    "objects",
    "refs",
    "logs",
    "index",
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "MERGE_RR",
    "MERGE_AUTOSTASH",
    "AUTO_MERGE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "REBASE_HEAD",
    "BISECT_HEAD",
    "BISECT_START",
    "BISECT_TERMS",
    "BISECT_LOG",
    "BISECT_NAMES",
    "BISECT_EXPECTED_REV",
    "BISECT_ANCESTORS_OK",
    "BISECT_FIRST_PARENT",
    "COMMIT_EDITMSG",
    "SQUASH_MSG",
    "TAG_EDITMSG",
    "NOTES_EDITMSG",
    "EDIT_DESCRIPTION",
    "packed-refs",
    "shallow",
    "description",
    "branches",
    "rr-cache",
    "lfs",
    "gitk.cache",
    "gc.pid",
    "gc.log",
    "reftable",
    "sequencer",
    "rebase-merge",
    "rebase-apply",
    "gitdir",
    "locked",
    "fsmonitor--daemon",
    "hooks",
    "config",
    "config.worktree",
    "commondir",
    "info",
    "modules",
    "worktrees",
];

/// Most entries of a git directory looked at.
const MAX_ENTRIES: usize = 4096;

/// The entries of each git directory, and the identity of each operation's state, as they were.
#[derive(Debug, Default)]
pub struct GitEntries {
    dirs: BTreeMap<PathBuf, Seen>,
}

#[derive(Debug, Default, Clone)]
struct Seen {
    names: BTreeSet<OsString>,
    /// Each state directory present, with a digest of its entries' names and identities.
    states: BTreeMap<&'static str, u64>,
}

/// What a call added that must go: each path, and why.
pub type Planted = Vec<(PathBuf, String)>;

impl GitEntries {
    /// The git directories (and their linked worktrees') as they are now; `git_dirs` pairs
    /// each repository's top with its git directory.
    pub fn of(git_dirs: &[(PathBuf, PathBuf)]) -> GitEntries {
        GitEntries {
            dirs: all_dirs(git_dirs)
                .into_iter()
                .map(|d| {
                    let seen = seen(&d);
                    (d, seen)
                })
                .collect(),
        }
    }

    /// What a call added to them since, that runs or could run something; then takes the
    /// directories as they are now (less what the caller moves away) as the new baseline.
    pub fn planted(&mut self, git_dirs: &[(PathBuf, PathBuf)]) -> Planted {
        let mut out = Vec::new();
        let mut now = BTreeMap::new();
        for dir in all_dirs(git_dirs) {
            let before = self.dirs.get(&dir).cloned().unwrap_or_default();
            let mut seen = seen(&dir);
            for name in seen.names.difference(&before.names) {
                if !INERT.iter().any(|n| name == *n) {
                    out.push((
                        dir.join(name),
                        "git does not write an entry of that name in a git directory".to_owned(),
                    ));
                }
            }
            for (state, stamp) in seen.states.clone() {
                if before.states.get(state) == Some(&stamp) {
                    continue;
                }
                let path = dir.join(state);
                if let Some(why) = super::git_in_progress::not_inert(&path) {
                    out.push((
                        path,
                        format!(
                            "the state of the operation in progress there, which git acts on at the next `git rebase --continue` or `git cherry-pick --continue`: {why}"
                        ),
                    ));
                    seen.states.remove(state);
                }
            }
            now.insert(dir, seen);
        }
        self.dirs = now;
        out
    }
}

/// Each git directory and each of its linked worktrees' (`worktrees/*`).
fn all_dirs(git_dirs: &[(PathBuf, PathBuf)]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (_, dir) in git_dirs {
        out.push(dir.clone());
        if let Ok(entries) = std::fs::read_dir(dir.join("worktrees"))
            && std::fs::symlink_metadata(dir.join("worktrees")).is_ok_and(|m| m.is_dir())
        {
            out.extend(
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .take(MAX_ENTRIES)
                    .map(|e| e.path()),
            );
        }
    }
    out
}

fn seen(dir: &Path) -> Seen {
    let names = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .take(MAX_ENTRIES)
                .map(|e| e.file_name())
                // Lock files are git's own and short-lived; a stale one only stops git.
                .filter(|n| !n.to_string_lossy().ends_with(".lock"))
                // A split index's shared part.
                .filter(|n| !n.to_string_lossy().starts_with("sharedindex."))
                .collect()
        })
        .unwrap_or_default();
    let states = super::git_in_progress::STATE_DIRS
        .iter()
        .filter_map(|s| Some((*s, stamp(&dir.join(s))?)))
        .collect();
    Seen { names, states }
}

/// A digest of the directory at `path` and of each entry's name and identity (inode, size,
/// change time): another whenever anything in it was written, added, removed or renamed.
fn stamp(path: &Path) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let m = std::fs::symlink_metadata(path).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (m.ino(), m.size(), m.ctime(), m.ctime_nsec()).hash(&mut h);
    if let Ok(entries) = std::fs::read_dir(path) {
        let mut all: Vec<_> = entries
            .filter_map(Result::ok)
            .take(MAX_ENTRIES)
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                Some((e.file_name(), m.ino(), m.size(), m.ctime(), m.ctime_nsec()))
            })
            .collect();
        all.sort();
        all.hash(&mut h);
    }
    Some(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_names_git_does_not_write_and_exec_lines_are_planted_the_rest_is_not() {
        let base = std::env::temp_dir().join(format!("agentd-git-entries-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let git = base.join(".git");
        std::fs::create_dir_all(git.join("refs")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let dirs = vec![(base.clone(), git.clone())];
        let mut entries = GitEntries::of(&dirs);
        assert!(entries.planted(&dirs).is_empty());
        // What git writes during a merge or a plain rebase.
        std::fs::write(git.join("MERGE_HEAD"), "x").unwrap();
        std::fs::write(git.join("index.lock"), "x").unwrap();
        std::fs::create_dir_all(git.join("rebase-merge")).unwrap();
        std::fs::write(
            git.join("rebase-merge/git-rebase-todo"),
            "pick abc x\n# exec y\n",
        )
        .unwrap();
        assert!(entries.planted(&dirs).is_empty());
        // An exec line appended, and a name git never writes.
        std::fs::write(
            git.join("rebase-merge/git-rebase-todo"),
            "pick abc x\nexec sh -c id\n",
        )
        .unwrap();
        std::fs::write(git.join("my-tool-state"), "x").unwrap();
        let planted: Vec<PathBuf> = entries.planted(&dirs).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            planted,
            vec![git.join("my-tool-state"), git.join("rebase-merge")]
        );
        // The caller moves them away.
        std::fs::remove_file(git.join("my-tool-state")).unwrap();
        std::fs::remove_dir_all(git.join("rebase-merge")).unwrap();
        // A linked worktree's git directory is looked at too.
        std::fs::create_dir_all(git.join("worktrees/w/sequencer")).unwrap();
        let _ = entries.planted(&dirs);
        std::fs::write(git.join("worktrees/w/sequencer/todo"), "x true\n").unwrap();
        let planted: Vec<PathBuf> = entries.planted(&dirs).into_iter().map(|(p, _)| p).collect();
        assert_eq!(planted, vec![git.join("worktrees/w/sequencer")]);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
