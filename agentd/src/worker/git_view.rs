//! What changes what git shows the user, told after each call.
//!
//! "Review the changes before you run them" is the user's defence, and git is how most review:
//! a call that can make `git status`, `git diff` or `git log` lie defeats it. The ways git hides
//! that live in places a call must be able to write — `.git/index`, `refs/`, `packed-refs`,
//! `shallow` — so they are not made read-only; instead the check after each call compares, for
//! every repository in the writable roots, with what was there before and tells the model and
//! the user what changed:
//!
//! - index entries whose **assume-unchanged** or **skip-worktree** bit was set: `git status` and
//!   `git diff` skip the file, whatever it now holds;
//! - **replace refs** (`refs/replace/*`, loose or packed): `git log` and `git show` show another
//!   commit than the one that is there;
//! - a **`shallow`** file: `git log` stops where it says;
//! - **branches, tags and remote-tracking refs moved** other than the branch checked out: the
//!   user's next checkout, merge or release takes the call's commit under a name they trust,
//!   while `git status` and `git log` of the current branch show nothing (a finding of the fifth
//!   attacker review; objects rewritten under their own hashes are [`super::git_objects`]').
//!
//! `info/exclude` and `info/grafts` are protected paths (read-only), and the end of a turn lists
//! the files it changed from the supervisor's own view, not from git.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use tool_worker::lockdown::mounts::{git_index, gitconfig};

/// Most bytes of a `packed-refs` read (a repository of ~200,000 refs).
const MAX_PACKED_REFS: u64 = 16 << 20;
/// Most names listed in a note.
const MAX_NAMED: usize = 10;

/// What git would show of each repository, as far as a call can make it lie.
#[derive(Debug, Default)]
pub struct Shown {
    repos: BTreeMap<PathBuf, Seen>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Seen {
    /// Index entries with the assume-unchanged or skip-worktree bit.
    hidden: BTreeSet<PathBuf>,
    /// Replace refs, loose and packed.
    replaced: BTreeSet<String>,
    /// Whether the repository is shallow.
    shallow: bool,
    /// Branches, tags and remote-tracking refs (loose and packed) and what each points to.
    refs: BTreeMap<String, String>,
    /// The ref `HEAD` names (`refs/heads/main`), if it names one.
    head: Option<String>,
}

impl Shown {
    /// What the repositories show now, each given as its top (a directory holding `.git`, or a
    /// bare git directory) and its git directory ([`git_dir`]).
    pub fn of(repos: &[(PathBuf, PathBuf)]) -> Shown {
        Shown {
            repos: repos
                .iter()
                .map(|(repo, git_dir)| (repo.clone(), seen(git_dir)))
                .collect(),
        }
    }

    /// Compares `self` with what `now` shows, says what a call changed, and keeps `now`.
    pub fn compare(&mut self, now: Shown) -> Vec<String> {
        let mut notes = Vec::new();
        for (repo, seen) in &now.repos {
            let before = self.repos.get(repo).cloned().unwrap_or_default();
            let shown_as = repo.display().to_string();
            let where_ = crate::inert::inert_line(&shown_as);
            let hidden: Vec<&PathBuf> = seen.hidden.difference(&before.hidden).collect();
            if !hidden.is_empty() {
                notes.push(format!(
                    "this call set git's assume-unchanged or skip-worktree bit on {} in {where_}: `git status` and `git diff` there no longer show changes to them (`git update-index --no-assume-unchanged --no-skip-worktree FILE` undoes it)",
                    named(hidden.iter().map(|p| p.display().to_string()))
                ));
            }
            let replaced: Vec<&String> = seen.replaced.difference(&before.replaced).collect();
            if !replaced.is_empty() {
                notes.push(format!(
                    "this call added git replace refs {} in {where_}: `git log` and `git show` there show other commits than the ones there (`git replace -d` removes them)",
                    named(replaced.iter().map(|r| (*r).clone()))
                ));
            }
            let moved: Vec<&String> = before
                .refs
                .iter()
                .filter(|(name, target)| {
                    seen.refs.get(*name) != Some(*target)
                        && before.head.as_ref() != Some(*name)
                        && seen.head.as_ref() != Some(*name)
                })
                .map(|(name, _)| name)
                .collect();
            if !moved.is_empty() {
                notes.push(format!(
                    "this call moved or deleted {} in {where_}, which is not the branch checked out: what a later checkout, merge or release of it takes is the call's (`git reflog show NAME` tells where it pointed)",
                    named(moved.iter().map(|r| (*r).clone()))
                ));
            }
            if seen.shallow && !before.shallow {
                notes.push(format!(
                    "this call made the repository {where_} shallow: `git log` there stops early (its `.git/shallow` file)"
                ));
            }
        }
        self.repos = now.repos;
        notes
    }
}

fn named(names: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = names.collect();
    let mut out: Vec<String> = names
        .iter()
        .take(MAX_NAMED)
        .map(|n| crate::inert::inert_line(n).into_owned())
        .collect();
    if names.len() > MAX_NAMED {
        out.push(format!("and {} more", names.len() - MAX_NAMED));
    }
    out.join(", ")
}

/// The git directory of the repository whose top is `repo`: its `.git` directory, the
/// directory a `.git` file names inside `roots`, or `repo` itself when it is bare.
pub fn git_dir(repo: &Path, roots: &[&PathBuf]) -> Option<PathBuf> {
    let dot_git = repo.join(".git");
    match std::fs::symlink_metadata(&dot_git) {
        Ok(m) if m.is_dir() => Some(dot_git),
        Ok(m) if m.is_file() => {
            let text = super::fresh_repo::read_no_symlinks(&dot_git, 4096)?;
            let text = String::from_utf8_lossy(&text).into_owned();
            let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?;
            let dir = gitconfig::lexical_clean(&repo.join(target.trim()));
            roots.iter().any(|r| dir.starts_with(r)).then_some(dir)
        }
        Ok(_) => None,
        Err(_) => std::fs::symlink_metadata(repo.join("HEAD"))
            .is_ok()
            .then(|| repo.to_path_buf()),
    }
}

fn seen(git_dir: &Path) -> Seen {
    let facts = git_index::facts(&git_dir.join("index")).unwrap_or_default();
    let mut replaced = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir(git_dir.join("refs/replace"))
        && std::fs::symlink_metadata(git_dir.join("refs/replace")).is_ok_and(|m| m.is_dir())
    {
        replaced.extend(
            entries
                .filter_map(Result::ok)
                .take(MAX_NAMED * 100)
                .map(|e| format!("refs/replace/{}", e.file_name().to_string_lossy())),
        );
    }
    if let Some(packed) =
        super::fresh_repo::read_no_symlinks(&git_dir.join("packed-refs"), MAX_PACKED_REFS)
    {
        replaced.extend(
            String::from_utf8_lossy(&packed)
                .lines()
                .filter_map(|l| l.split_once(' ').map(|(_, name)| name))
                .filter(|name| name.starts_with("refs/replace/"))
                .take(MAX_NAMED * 100)
                .map(str::to_owned),
        );
    }
    let (refs, head) = refs(git_dir);
    Seen {
        refs,
        head,
        hidden: facts.hidden.into_iter().collect(),
        replaced,
        shallow: std::fs::symlink_metadata(git_dir.join("shallow"))
            .is_ok_and(|m| m.is_file() && m.size() > 0),
    }
}

/// Most refs of a repository looked at.
const MAX_REFS: usize = 100_000;

/// The branches, tags and remote-tracking refs of `git_dir` (packed, then loose ones over
/// them) with their targets, and the ref `HEAD` names. No symlink followed.
fn refs(git_dir: &Path) -> (BTreeMap<String, String>, Option<String>) {
    let mut out = BTreeMap::new();
    let tracked = |name: &str| {
        ["refs/heads/", "refs/tags/", "refs/remotes/"]
            .iter()
            .any(|p| name.starts_with(p))
    };
    if let Some(packed) =
        super::fresh_repo::read_no_symlinks(&git_dir.join("packed-refs"), MAX_PACKED_REFS)
    {
        for line in String::from_utf8_lossy(&packed).lines().take(MAX_REFS) {
            if let Some((target, name)) = line.split_once(' ')
                && !line.starts_with(['#', '^'])
                && tracked(name)
            {
                out.insert(name.to_owned(), target.to_owned());
            }
        }
    }
    let mut stack = vec![PathBuf::from("refs")];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(git_dir.join(&rel)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            if out.len() >= MAX_REFS {
                break;
            }
            let rel = rel.join(entry.file_name());
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(rel);
            } else if let Some(name) = rel.to_str().filter(|n| tracked(n))
                && let Some(text) = super::fresh_repo::read_no_symlinks(&git_dir.join(&rel), 4096)
            {
                out.insert(
                    name.to_owned(),
                    String::from_utf8_lossy(&text).trim().to_owned(),
                );
            }
        }
    }
    let head = super::fresh_repo::read_no_symlinks(&git_dir.join("HEAD"), 4096).and_then(|t| {
        String::from_utf8_lossy(&t)
            .trim()
            .strip_prefix("ref: ")
            .map(str::to_owned)
    });
    (out, head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    #[test]
    fn hidden_entries_replace_refs_and_shallow_are_told_once() {
        let ws = std::env::temp_dir().join(format!("agentd-review-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&ws);
        std::fs::create_dir_all(&ws).unwrap();
        git(&ws, &["init", "-q"]);
        std::fs::write(ws.join("Makefile"), "x").unwrap();
        git(&ws, &["add", "."]);
        git(&ws, &["commit", "-qm", "one"]);
        std::fs::write(ws.join("Makefile"), "y").unwrap();
        git(&ws, &["commit", "-qam", "two"]);
        let repos = vec![(ws.clone(), ws.join(".git"))];
        let mut shown = Shown::of(&repos);
        assert!(shown.compare(Shown::of(&repos)).is_empty());
        git(&ws, &["update-index", "--skip-worktree", "Makefile"]);
        let (one, two) = (
            git(&ws, &["rev-parse", "HEAD~1"]),
            git(&ws, &["rev-parse", "HEAD"]),
        );
        git(&ws, &["replace", &two, &one]);
        std::fs::write(ws.join(".git/shallow"), format!("{one}\n")).unwrap();
        let notes = shown.compare(Shown::of(&repos));
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("Makefile") && notes[0].contains("skip-worktree"));
        assert!(
            notes[1].contains(&format!("refs/replace/{two}")),
            "{notes:?}"
        );
        assert!(notes[2].contains("shallow"));
        // Told once; packed replace refs are seen too.
        assert!(shown.compare(Shown::of(&repos)).is_empty());
        git(&ws, &["replace", "-d", &two]);
        git(&ws, &["replace", &one, &two]);
        git(&ws, &["pack-refs", "--all"]);
        let notes = shown.compare(Shown::of(&repos));
        assert!(
            notes
                .iter()
                .any(|n| n.contains(&format!("refs/replace/{one}"))),
            "{notes:?}"
        );
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn a_branch_or_tag_moved_away_from_the_checked_out_one_is_told() {
        let ws = std::env::temp_dir().join(format!("agentd-review-refs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&ws);
        std::fs::create_dir_all(&ws).unwrap();
        git(&ws, &["init", "-q", "-b", "main"]);
        git(&ws, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(&ws, &["branch", "release"]);
        git(&ws, &["tag", "v1"]);
        git(&ws, &["pack-refs", "--all"]);
        let repos = vec![(ws.clone(), ws.join(".git"))];
        let mut shown = Shown::of(&repos);
        // Commits on the checked-out branch are what `git log` shows: nothing to tell.
        git(&ws, &["commit", "-q", "--allow-empty", "-m", "two"]);
        assert!(shown.compare(Shown::of(&repos)).is_empty());
        // The release branch and a tag moved to the call's commit, loose over packed.
        git(&ws, &["branch", "-f", "release", "HEAD"]);
        git(&ws, &["tag", "-f", "v1", "HEAD"]);
        let notes = shown.compare(Shown::of(&repos));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("refs/heads/release") && notes[0].contains("refs/tags/v1"),
            "{notes:?}"
        );
        std::fs::remove_dir_all(&ws).unwrap();
    }
}
