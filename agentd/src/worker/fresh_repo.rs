//! What a repository made during the session may keep: only what is known to run nothing.
//!
//! A call may make a repository (`git init`, `git clone`, `cargo new`), at the root or at any
//! depth, and its hooks and config are then the call's: `core.fsmonitor`, `core.pager`, an alias,
//! a `post-checkout` hook would run at the user's next `git status` there, outside the sandbox.
//! Rather than look for dangerous keys (a list that is never complete), each git file of such a
//! repository is kept only if it holds nothing but what is known to be inert — the keys `git
//! init` and `git clone` write, hooks that are only `*.sample`, an `info/exclude` of comments —
//! and is otherwise moved to the quarantine like any other protected path a call created.

use nix::fcntl::{OFlag, openat};
use nix::sys::stat::Mode;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tool_worker::lockdown::mounts::gitconfig;
use tool_worker::lockdown::mounts::resolve::open_no_symlinks;

/// The config keys (`section.key`, any subsection) that run nothing and redirect nothing git
/// reads for config or hooks — what `git init`, `git clone` and `git submodule` write, and the
/// user's name — each with the values it may hold. A key's name is not enough: `core.worktree`
/// pointed at the home directory makes the user's `git reset --hard` or `git clean` act there,
/// and a URL of an unknown scheme runs a transport helper. Anything else makes a fresh
/// repository's config quarantined.
const INERT_KEYS: &[(&str, Value)] = &[
    ("core.repositoryformatversion", Value::OneOf(&["0", "1"])),
    ("core.filemode", Value::Bool),
    ("core.bare", Value::Bare),
    ("core.logallrefupdates", Value::Bool),
    ("core.ignorecase", Value::Bool),
    ("core.precomposeunicode", Value::Bool),
    ("core.symlinks", Value::Bool),
    ("extensions.objectformat", Value::OneOf(&["sha1", "sha256"])),
    (
        "extensions.refstorage",
        Value::OneOf(&["files", "reftable"]),
    ),
    ("remote.url", Value::Url),
    ("remote.fetch", Value::Text),
    ("branch.remote", Value::Url),
    ("branch.merge", Value::Text),
    ("submodule.url", Value::Url),
    ("submodule.active", Value::Bool),
    ("user.name", Value::Text),
    ("user.email", Value::Text),
    ("init.defaultbranch", Value::Text),
];

/// What an inert key may hold.
#[derive(Debug, Clone, Copy)]
enum Value {
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A boolean as git spells one.
    Bool,
    /// `false` in a `.git` directory (a work tree's repository); a boolean in a bare one.
    Bare,
    /// A URL of a scheme git handles itself (no transport helper, no `ext::`), an scp-like
    /// `host:path`, or a path; never starting with `-` (an option to ssh).
    Url,
    /// Printable text.
    Text,
}

impl Value {
    fn admits(self, value: &str, in_dot_git: bool) -> bool {
        let printable = !value.chars().any(char::is_control);
        printable
            && match self {
                Value::OneOf(words) => words.contains(&value.to_ascii_lowercase().as_str()),
                Value::Bool => is_bool(value),
                Value::Bare => is_bool(value) && (!in_dot_git || !truthy(value)),
                Value::Url => url_is_inert(value),
                Value::Text => true,
            }
    }
}

fn is_bool(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0"
    )
}

fn truthy(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "" | "true" | "yes" | "on" | "1"
    )
}

/// Whether git fetches from `url` without running anything but itself and ssh: one of the
/// schemes git speaks natively, an scp-like address, or a path (`git help fetch`, "GIT URLS";
/// `<transport>::<address>` and any other `<scheme>://` run `git-remote-<transport>`).
fn url_is_inert(url: &str) -> bool {
    if url.starts_with('-') || url.contains("::") {
        return false;
    }
    match url.split_once("://") {
        Some((scheme, rest)) => {
            matches!(
                scheme.to_ascii_lowercase().as_str(),
                "https" | "http" | "ssh" | "git" | "file"
            ) && !rest.starts_with('-')
        }
        None => true,
    }
}

/// Most entries of a fresh hooks or info directory looked at; more is not inert.
const MAX_ENTRIES: usize = 256;

/// Whether `path` (a protected name of a repository made during the session, whose top is
/// `repo`, in the writable root `root`) holds only what runs nothing and hides nothing.
pub fn is_inert(root: &Path, repo: &Path, path: &Path) -> bool {
    let Some(name) = path.file_name() else {
        return false;
    };
    match name.as_bytes() {
        b"config" | b"config.worktree" => {
            let in_dot_git = path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == ".git");
            read(path).is_some_and(|text| config_is_inert(&text, in_dot_git))
        }
        b"hooks" => entries_all(path, |name, regular| {
            regular && name.as_bytes().ends_with(b".sample")
        }),
        b"info" => entries_all(path, |name, regular| {
            regular
                && name == "exclude"
                && read(&path.join("exclude")).is_some_and(|text| only_comments(&text))
        }),
        // A `.git` file may name a git directory in the same root (a submodule's checkout):
        // that directory's own hooks and config are judged on their own.
        b".git" => read(path).is_some_and(|text| gitdir_stays_in(&text, repo, root)),
        _ => false,
    }
}

/// Whether every key of the config text is on [`INERT_KEYS`] with a value it admits;
/// `in_dot_git`: the config is a `.git` directory's (a work tree's repository, not a bare one).
pub fn config_is_inert(text: &str, in_dot_git: bool) -> bool {
    gitconfig::parse(text).iter().all(|entry| {
        let key = format!("{}.{}", entry.section, entry.key);
        INERT_KEYS
            .iter()
            .any(|(k, value)| *k == key && value.admits(&entry.value, in_dot_git))
    }) && !text.contains(char::REPLACEMENT_CHARACTER)
}

fn only_comments(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .all(|l| l.is_empty() || l.starts_with('#'))
}

fn gitdir_stays_in(text: &str, repo: &Path, root: &Path) -> bool {
    let Some(target) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else {
        return false;
    };
    let target = gitconfig::lexical_clean(&repo.join(target.trim()));
    target.starts_with(root) && target != root
}

/// The text of the regular file at `path`, reached without following any symlink, at most
/// 256 KiB; `None` otherwise.
fn read(path: &Path) -> Option<String> {
    let bytes = read_no_symlinks(path, 256 * 1024)?;
    String::from_utf8(bytes).ok()
}

/// The bytes of the regular file at `path`, reached without following any symlink on the way
/// and not waited on (a FIFO); `None` when it is anything else, or longer than `max`.
pub fn read_no_symlinks(path: &Path, max: u64) -> Option<Vec<u8>> {
    let parent = open_no_symlinks(path.parent()?, true).ok()?;
    let fd = openat(
        &parent,
        path.file_name()?,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let file = std::fs::File::from(fd);
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, max.saturating_add(1)),
        &mut bytes,
    )
    .ok()?;
    (bytes.len() as u64 <= max).then_some(bytes)
}

/// Whether the directory at `path` (no symlink followed) has at most [`MAX_ENTRIES`] entries and
/// each passes `ok(name, is a regular file)`.
fn entries_all(path: &Path, ok: impl Fn(&OsStr, bool) -> bool) -> bool {
    let Ok(fd) = open_no_symlinks(path, true).and_then(|p| {
        openat(
            &p,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
    }) else {
        return false;
    };
    let Ok(mut dir) = nix::dir::Dir::from_fd(fd) else {
        return false;
    };
    let mut seen = 0;
    for entry in dir.iter() {
        let Ok(entry) = entry else {
            return false;
        };
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        seen += 1;
        let regular = matches!(entry.file_type(), Some(nix::dir::Type::File));
        if seen > MAX_ENTRIES || !ok(name, regular) {
            return false;
        }
    }
    true
}

/// The repository `path` belongs to among `repositories` (tops of repositories: directories
/// holding a `.git`, or bare git directories): the deepest whose git directory holds it.
pub fn owner_of<'a>(path: &Path, repositories: &'a [PathBuf]) -> Option<&'a PathBuf> {
    repositories
        .iter()
        .filter(|r| path.starts_with(r.join(".git")) || (path.starts_with(r) && bare(r)))
        .max_by_key(|r| r.components().count())
}

fn bare(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(".git")).is_err()
        && std::fs::symlink_metadata(dir.join("HEAD")).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_git_init_and_clone_write_is_inert_and_anything_that_runs_is_not() {
        let init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
        assert!(config_is_inert(init, true));
        let clone = format!(
            "{init}[remote \"origin\"]\n\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
        );
        assert!(config_is_inert(&clone, true));
        for planted in [
            "[core]\n\tfsmonitor = id >/tmp/x\n",
            "[core]\n\tpager = sh -c x\n",
            "[core]\n\thooksPath = .h\n",
            "[alias]\n\tst = !sh\n",
            "[include]\n\tpath = ../x\n",
            "[core] sshCommand = x\n",
            "[diff \"x\"]\n\ttextconv = sh\n",
            "[filter \"lfs\"]\n\tclean = sh\n",
            "[remote \"o\"]\n\tuploadpack = sh\n",
        ] {
            assert!(
                !config_is_inert(&format!("{init}{planted}"), true),
                "{planted}"
            );
        }
        // Keys git writes, with values that reach outside the repository or run a helper.
        for planted in [
            "[core]\n\tworktree = /home/u\n",
            "[remote \"o\"]\n\turl = ext::sh -c id\n",
            "[remote \"o\"]\n\turl = foo://x/y\n",
            "[submodule \"s\"]\n\turl = -oProxyCommand=id\n",
            "[remote \"o\"]\n\turl = ssh://-oProxyCommand=id/x\n",
            "[extensions]\n\tobjectformat = sha256x\n",
        ] {
            assert!(
                !config_is_inert(&format!("{init}{planted}"), true),
                "{planted}"
            );
        }
        let bare = init.replace("bare = false", "bare = true");
        assert!(
            !config_is_inert(&bare, true),
            "a work tree's .git that says bare"
        );
        assert!(config_is_inert(&bare, false), "a bare repository");
        for url in [
            "git@example.com:x/y.git",
            "../lib",
            "/srv/git/x",
            "file:///srv/x",
        ] {
            let text = format!("{init}[remote \"o\"]\n\turl = {url}\n");
            assert!(config_is_inert(&text, true), "{url}");
        }
    }

    #[test]
    fn hooks_are_inert_only_when_they_are_samples() {
        let dir = std::env::temp_dir().join(format!("agentd-fresh-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let hooks = dir.join("r/.git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        let (root, repo) = (dir.clone(), dir.join("r"));
        assert!(is_inert(&root, &repo, &hooks), "empty");
        std::fs::write(hooks.join("pre-commit.sample"), "#!/bin/sh\n").unwrap();
        assert!(is_inert(&root, &repo, &hooks));
        std::fs::write(hooks.join("post-checkout"), "#!/bin/sh\nid\n").unwrap();
        assert!(!is_inert(&root, &repo, &hooks));
        std::fs::remove_file(hooks.join("post-checkout")).unwrap();
        std::os::unix::fs::symlink("/bin/sh", hooks.join("x.sample")).unwrap();
        assert!(!is_inert(&root, &repo, &hooks), "a symlink is not a sample");
        let info = dir.join("r/.git/info");
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(info.join("exclude"), "# git ls-files --others\n\n").unwrap();
        assert!(is_inert(&root, &repo, &info));
        std::fs::write(info.join("exclude"), "# x\nconftest.py\n").unwrap();
        assert!(!is_inert(&root, &repo, &info), "it hides a file");
        std::fs::write(dir.join("r/.git/config"), "[core]\n\tfsmonitor = x\n").unwrap();
        assert!(!is_inert(&root, &repo, &dir.join("r/.git/config")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_belongs_to_the_deepest_repository_whose_git_directory_holds_it() {
        let repos = vec![PathBuf::from("/w"), PathBuf::from("/w/vendor/lib")];
        assert_eq!(
            owner_of(Path::new("/w/vendor/lib/.git/config"), &repos),
            Some(&repos[1])
        );
        assert_eq!(
            owner_of(Path::new("/w/.git/hooks"), &repos),
            Some(&repos[0])
        );
        assert_eq!(owner_of(Path::new("/w/.vscode"), &repos), None);
    }
}
