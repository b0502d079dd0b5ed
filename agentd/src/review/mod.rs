//! What the user reviews after a turn: the files it changed, from the supervisor's own view of
//! the writable roots — never from git.
//!
//! Git's view is the call's to change: `git update-index --assume-unchanged conftest.py` (or
//! `--skip-worktree`) rewrites `.git/index`, which is in the workspace, and from then on the
//! host's `git status` says "working tree clean" and `git diff HEAD` shows nothing while the
//! planted `conftest.py` runs at the user's next `pytest`. So the supervisor walks the roots
//! itself ([`snapshot`]: one `getdents` per directory and one `fstatat` per entry, no symlink
//! followed) before the first step of a turn that runs a tool able to write, walks them again
//! when the turn ends, and compares the two ([`diff`]): what was created, modified (another
//! size, inode, modification or change time — a call cannot set the change time back),
//! deleted, or had its mode changed. The list goes into the turn's `turn_finished` event
//! ([`protocol::event::WorkspaceChanges`]), so the session log keeps it and every front end
//! shows it ([`show`]).
//!
//! What it is not: a diff of contents (it names files, the user reads them), nor a record of
//! who changed them — anything that writes the roots during the turn (the user in an editor, a
//! build another terminal runs) shows too. A turn that runs only reading tools walks nothing.

pub mod diff;
pub mod show;
pub mod snapshot;

use protocol::event::{ChangedPath, MAX_CHANGES_LISTED, WorkspaceChanges};
use protocol::worker::{SandboxProfile, SandboxSpec};
use snapshot::Snapshot;
use std::path::PathBuf;

/// The tools known not to write the workspace. Any other name — `bash`, `write_file`,
/// `str_replace`, `task` (a subagent's calls), a tool added later, a name the model made up — is
/// taken as one that may: allowed by knowing, not by a list of writers.
const READ_ONLY_TOOLS: [&str; 6] = [
    "read_file",
    "list_dir",
    "glob",
    "grep",
    "write_todos",
    "read_skill",
];

/// Whether a call of the tool `name` may change the writable roots.
pub fn may_write(name: &str) -> bool {
    !READ_ONLY_TOOLS.contains(&name)
}

/// The roots a session's calls may write and the review walks: the workspace (unless the
/// profile is read-only) and the extra write paths. The per-call temp dirs are not: each is
/// removed when its call ends. Under `full-access` a call may write elsewhere too; only these
/// are reviewed.
pub fn roots_of(spec: &SandboxSpec) -> Vec<PathBuf> {
    let workspace = (spec.profile != SandboxProfile::ReadOnly).then(|| spec.workspace.clone());
    workspace
        .into_iter()
        .chain(spec.write_paths.iter().cloned())
        .collect()
}

/// One turn's review: the roots, and their snapshots from before the turn's first writing step.
#[derive(Debug)]
pub struct Watch {
    /// The roots; the first is the workspace, whose paths are shown relative to it.
    roots: Vec<PathBuf>,
    /// Whether the first root is the workspace (paths relative) or another root (absolute).
    workspace_first: bool,
    /// The snapshots taken before this turn's first writing step, one per root.
    before: Option<Vec<Snapshot>>,
}

impl Watch {
    /// A watch over the roots of `spec`.
    pub fn new(spec: &SandboxSpec) -> Self {
        Watch {
            roots: roots_of(spec),
            workspace_first: spec.profile != SandboxProfile::ReadOnly,
            before: None,
        }
    }

    /// Before a step that calls `tools` (by name): takes the turn's first snapshot when one of
    /// them may write and none was taken yet.
    pub async fn before_step<'a>(&mut self, mut tools: impl Iterator<Item = &'a str>) {
        if self.before.is_some() || self.roots.is_empty() || !tools.any(may_write) {
            return;
        }
        self.before = Some(walk(self.roots.clone()).await);
    }

    /// At the turn's end: what changed since the first snapshot, or `None` when the turn took
    /// none (it ran no writing tool). The next turn starts afresh.
    pub async fn end_of_turn(&mut self) -> Option<WorkspaceChanges> {
        let before = self.before.take()?;
        let after = walk(self.roots.clone()).await;
        Some(summarise(
            &self.roots,
            self.workspace_first,
            &before,
            &after,
        ))
    }
}

/// Snapshots of `roots`, taken on a blocking thread (a large tree takes a while).
async fn walk(roots: Vec<PathBuf>) -> Vec<Snapshot> {
    let taken = tokio::task::spawn_blocking(move || {
        roots.iter().map(|r| snapshot::take(r)).collect::<Vec<_>>()
    })
    .await;
    taken.unwrap_or_else(|e| {
        tracing::error!("the review walk failed: {e}");
        vec![Snapshot {
            entries: vec![],
            incomplete: Some(format!("the walk failed: {e}")),
        }]
    })
}

/// The changes of every root, in the order a reviewer wants them: what existed before and
/// changed (modified, mode changed, deleted) first, then what was created, each by path; at
/// most [`MAX_CHANGES_LISTED`] listed, all counted. `workspace_first`: the first root's paths
/// are shown relative to it; others' are absolute.
pub fn summarise(
    roots: &[PathBuf],
    workspace_first: bool,
    before: &[Snapshot],
    after: &[Snapshot],
) -> WorkspaceChanges {
    let mut paths: Vec<ChangedPath> = Vec::new();
    let mut incomplete: Vec<String> = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let (Some(b), Some(a)) = (before.get(i), after.get(i)) else {
            incomplete.push(format!("{} was not walked", root.display()));
            continue;
        };
        for (when, snap) in [("before", b), ("after", a)] {
            if let Some(why) = &snap.incomplete {
                incomplete.push(format!("{when} the turn: {why}"));
            }
        }
        for found in diff::compare(b, a) {
            let rel = String::from_utf8_lossy(&found.path);
            let path = if i == 0 && workspace_first {
                rel.into_owned()
            } else {
                root.join(rel.as_ref()).display().to_string()
            };
            paths.push(ChangedPath {
                path,
                change: found.change,
                kind: found.kind,
            });
        }
    }
    paths.sort_by(|x, y| (x.change, &x.path).cmp(&(y.change, &y.path)));
    let total = paths.len() as u64;
    paths.truncate(MAX_CHANGES_LISTED);
    incomplete.dedup();
    WorkspaceChanges {
        total,
        paths,
        incomplete: (!incomplete.is_empty()).then(|| incomplete.join("; ")),
    }
}

#[cfg(test)]
mod tests;
