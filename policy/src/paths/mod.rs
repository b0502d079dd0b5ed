//! Paths as the policy sees them: resolved lexically against the workspace and home.
//!
//! Lexical means `..` is folded without asking the filesystem, so a symlink can make a path
//! point elsewhere than it reads. That is by design: the policy rates what the model *asked*, and
//! the tool-worker's Landlock rules decide what the kernel *lets happen*, symlinks included.

pub mod reach;

use std::path::{Component, Path, PathBuf};

/// Where relative paths and `~` resolve.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The session's workspace (absolute).
    pub workspace: &'a Path,
    /// The user's home, if known.
    pub home: Option<&'a Path>,
}

/// `path` made absolute (relative to the workspace, `~` to home) with `.` and `..` folded.
pub fn resolve(path: &str, ctx: &Context<'_>) -> PathBuf {
    let joined = match (path.strip_prefix('~'), ctx.home) {
        (Some(""), Some(home)) => home.to_path_buf(),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ if path.starts_with('/') => PathBuf::from(path),
        _ => ctx.workspace.join(path),
    };
    normalize(&joined)
}

/// Where a shell word naming a path leads, resolved from `cwd` as bash would expand it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// An absolute, lexically folded path.
    Path(PathBuf),
    /// `~user/…`: another user's home, which the policy cannot place.
    OtherHome,
    /// `~` with no home known.
    NoHome,
    /// `~+` or `~-`: bash's `$PWD` or `$OLDPWD`, variables read at run time (not a user's home).
    DirVariable,
}

/// `word` (after quote removal; `tilde` when it starts with an unquoted `~`) resolved from `cwd`.
pub fn resolve_word(word: &str, tilde: bool, cwd: &Path, ctx: &Context<'_>) -> Resolved {
    if tilde && let Some(rest) = word.strip_prefix('~') {
        let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
        match user {
            "" => {}
            "+" | "-" => return Resolved::DirVariable,
            _ => return Resolved::OtherHome,
        }
        return match ctx.home {
            Some(home) => Resolved::Path(normalize(&home.join(tail))),
            None => Resolved::NoHome,
        };
    }
    if word.starts_with('/') {
        return Resolved::Path(normalize(Path::new(word)));
    }
    Resolved::Path(normalize(&cwd.join(word)))
}

/// Folds `.` and `..` components without touching the filesystem; `..` stops at the root.
///
/// Past a procfs magic link (`/proc/PID/cwd`, `root`, `exe`, `fd/N`, `map_files/…`, also under
/// `task/TID/`) the kernel jumps to wherever the link points, so a `..` after it cannot be
/// folded: `/proc/self/cwd/../../home/u/.netrc` stays as written, under `/proc/*/cwd/**`, instead
/// of folding into the harmless-looking `/proc/home/u/.netrc`.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::with_capacity(path.as_os_str().len() + 1);
    out.push("/");
    let mut through_link = false;
    for component in path.components() {
        match component {
            Component::ParentDir if through_link => out.push(".."),
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => {
                out.push(part);
                through_link = through_link || is_magic_link(&out);
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Whether `path` (folded so far) names a procfs link the kernel follows to somewhere else.
fn is_magic_link(path: &Path) -> bool {
    // `path` is absolute and folded (one `/` between components), so its first component is
    // `proc` exactly when its text starts so: the rest is only read for those few paths.
    let text = path.as_os_str().as_encoded_bytes();
    if !(text == b"/proc" || text.starts_with(b"/proc/")) {
        return false;
    }
    let mut parts = path
        .components()
        .skip(1)
        .map(|c| c.as_os_str().to_string_lossy());
    if parts.next().as_deref() != Some("proc") {
        return false;
    }
    let rest: Vec<_> = parts.skip(1).collect();
    let at = match rest.first().map(|p| p.as_ref()) {
        Some("task") => 2,
        _ => 0,
    };
    match rest.get(at).map(|p| p.as_ref()) {
        Some("cwd" | "root" | "exe") => rest.len() == at + 1,
        Some("fd" | "map_files") => rest.len() == at + 2,
        _ => false,
    }
}

/// Devices a redirection may use without writing any file.
pub fn is_harmless_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/stdin" | "/dev/tty" | "/dev/zero"
    ) || path
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_against_workspace_and_home_and_fold_dots() {
        let ctx = Context {
            workspace: Path::new("/w/proj"),
            home: Some(Path::new("/home/u")),
        };
        assert_eq!(
            resolve("src/../lib.rs", &ctx),
            PathBuf::from("/w/proj/lib.rs")
        );
        assert_eq!(
            resolve("../../etc/passwd", &ctx),
            PathBuf::from("/etc/passwd")
        );
        assert_eq!(
            resolve("~/.ssh/id_rsa", &ctx),
            PathBuf::from("/home/u/.ssh/id_rsa")
        );
        assert_eq!(resolve("~", &ctx), PathBuf::from("/home/u"));
        assert_eq!(resolve("/../../x", &ctx), PathBuf::from("/x"));
        assert_eq!(resolve("./a/./b", &ctx), PathBuf::from("/w/proj/a/b"));
        // `~user` is not our home: it stays a relative name.
        assert_eq!(resolve("~bob/x", &ctx), PathBuf::from("/w/proj/~bob/x"));
    }
}
