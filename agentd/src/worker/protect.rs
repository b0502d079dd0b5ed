//! Protected paths a call created: the half the mounts cannot do.
//!
//! A worker makes the protected paths that exist read-only (`tool_worker::lockdown::mounts`), but
//! a path that does not exist cannot be mounted over: a call could create `.git/commondir`
//! (redirecting git's config and hooks to a directory it wrote), `.git/config.worktree`,
//! `.vscode/tasks.json` or a submodule's hooks, for the user's next `git` command or editor to
//! run. So the supervisor looks once more after each call, and moves what a call created out of
//! the way, into `.agentd-quarantine/` of the writable root, where nothing runs it and the user
//! can look. One exception: a repository the call made itself (`git init` where there was no
//! `.git`) keeps its new `.git/hooks` and `.git/config` — quarantining them would break the
//! repository, and they are protected from the next call on; the result says so.

use protocol::worker::{SandboxSpec, ToolResult};
use std::path::{Path, PathBuf};
use tool_worker::lockdown::mounts::view::protected_now;

/// What existed before a call, to compare with after it.
#[derive(Debug)]
pub struct Guard {
    /// The protected paths that existed.
    before: Vec<PathBuf>,
    /// The `.git` directories that existed, of each writable root.
    repositories: Vec<PathBuf>,
}

/// The directory a writable root's quarantined paths are moved to.
pub const QUARANTINE: &str = ".agentd-quarantine";

impl Guard {
    /// Takes stock before the call.
    pub fn before(spec: &SandboxSpec) -> Guard {
        let repositories = roots(spec)
            .map(|r| r.join(".git"))
            .filter(|g| g.is_dir())
            .filter_map(|g| g.canonicalize().ok())
            .collect();
        Guard {
            before: protected_now(spec),
            repositories,
        }
    }

    /// After the call: moves what it created aside; returns what it did, in words.
    pub fn after(self, spec: &SandboxSpec) -> Vec<String> {
        let mut notes = Vec::new();
        let created: Vec<PathBuf> = protected_now(spec)
            .into_iter()
            .filter(|p| !self.before.contains(p))
            .collect();
        for path in created {
            let in_new_repository = path.ancestors().any(|a| {
                a.file_name() == Some(".git".as_ref()) && !self.repositories.iter().any(|r| r == a)
            });
            let note = if in_new_repository {
                format!(
                    "this call created {} in a repository it made; it is protected from the next call on. Review it before you run git here.",
                    path.display()
                )
            } else {
                match quarantine(spec, &path) {
                    Ok(to) => format!(
                        "this call created the protected path {}, which git or an editor would run or trust later; it was moved to {}",
                        path.display(),
                        to.display()
                    ),
                    Err(e) => format!(
                        "this call created the protected path {} and it could not be moved aside ({e}): review it before you run git or open an editor here",
                        path.display()
                    ),
                }
            };
            tracing::warn!("{note}");
            notes.push(note);
        }
        notes
    }
}

/// Adds `notes` to `result`, for the model and for the user.
pub fn tell(result: &mut ToolResult, notes: Vec<String>) {
    for note in notes {
        result.content.push_str(&format!("\n[agentd: {note}]"));
        result.lockdown.warnings.push(note);
    }
}

/// The writable roots whose protected paths are watched (the workspace and `write_paths`).
fn roots(spec: &SandboxSpec) -> impl Iterator<Item = &PathBuf> {
    std::iter::once(&spec.workspace).chain(&spec.write_paths)
}

/// Moves `path` into the quarantine of the writable root that holds it. `rename` does not follow
/// a final symlink, and the quarantine is made without following one either.
fn quarantine(spec: &SandboxSpec, path: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let root = roots(spec)
        .filter_map(|r| r.canonicalize().ok())
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.components().count())
        .ok_or_else(|| std::io::Error::other("not inside a writable root"))?;
    let dir = root.join(QUARANTINE);
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            if !std::fs::symlink_metadata(&dir)?.is_dir() {
                return Err(std::io::Error::other(format!(
                    "{} is not a directory",
                    dir.display()
                )));
            }
        }
        Err(e) => return Err(e),
    }
    let relative = path.strip_prefix(&root).unwrap_or(path);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{stamp}-{}", relative.to_string_lossy().replace('/', "%"));
    let to = dir.join(name);
    std::fs::rename(path, &to)?;
    Ok(to)
}
