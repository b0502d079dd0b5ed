//! Where git in a workspace takes its config and hooks from, beyond the fixed protected names:
//! a `.git` that is a file (`gitdir: …`), a root that is itself shaped like a git directory (git
//! falls back to it when `.git` is broken), `core.hooksPath`, and the files `[include]` and
//! `[includeIf]` name — followed the way git reads them (inline comments, a key on the header's
//! line, quotes and escapes, continued lines, includes within includes).
//!
//! The workspace is the model's: every file here is opened without following a symlink, without
//! blocking (a FIFO), only if it is a regular file, and read up to a bound.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Most bytes read of one config file.
const MAX_CONFIG_BYTES: u64 = 256 * 1024;
/// Deepest chain of includes followed (git's own limit is 10).
const MAX_INCLUDE_DEPTH: usize = 10;

/// The text of the regular file at `path`, if it is one: no symlink followed, no FIFO or device
/// waited on, at most [`MAX_CONFIG_BYTES`].
pub fn read_small(path: &Path) -> Option<String> {
    read_regular(path, MAX_CONFIG_BYTES).ok().map(|r| r.text)
}

/// The text of `file`, opened by the caller (non-blocking, not through a symlink), if it is a
/// regular file; at most [`MAX_CONFIG_BYTES`].
pub fn read_opened(file: std::fs::File) -> Option<String> {
    read_opened_capped(file, MAX_CONFIG_BYTES)
        .ok()
        .map(|r| r.text)
}

/// What [`read_regular`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded {
    /// The text, up to the bound (cut at a character boundary).
    pub text: String,
    /// Whether the file held more than the bound.
    pub truncated: bool,
}

/// Reads the regular file at `path` for a process that must not be steered by whoever wrote the
/// directory: no symlink followed in the last component, no FIFO or device waited on, at most
/// `max` bytes. Errors say why: `InvalidInput` for something other than a regular file,
/// `InvalidData` for text that is not UTF-8, else the open's own error (`NotFound`, `ELOOP` for
/// a symlink).
pub fn read_regular(path: &Path, max: u64) -> std::io::Result<Bounded> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    read_opened_capped(file, max)
}

fn read_opened_capped(file: std::fs::File, max: u64) -> std::io::Result<Bounded> {
    use std::io::{Error, ErrorKind};
    if !file.metadata()?.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    let truncated = bytes.len() as u64 > max;
    if truncated {
        bytes.truncate(usize::try_from(max).unwrap_or(usize::MAX));
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // A cut in the middle of a character is ours, not the file's.
        Err(e) if truncated && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).map_err(|e| Error::new(ErrorKind::InvalidData, e))?
        }
        Err(e) => return Err(Error::new(ErrorKind::InvalidData, e)),
    };
    Ok(Bounded { text, truncated })
}

/// One `key = value` of a git config: section and key lowercased (the subsection is dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `core`, `include`, `includeif`, …
    pub section: String,
    /// `hookspath`, `path`, …
    pub key: String,
    /// The value, unquoted and unescaped.
    pub value: String,
}

/// The entries of a git config file's text.
pub fn parse(text: &str) -> Vec<Entry> {
    // Continued lines first: a backslash at the end of a line joins the next.
    let joined = text.replace("\\\r\n", "").replace("\\\n", "");
    let mut section = String::new();
    let mut out = Vec::new();
    for line in joined.lines() {
        let mut rest = line.trim_start();
        if let Some(header) = rest.strip_prefix('[') {
            let Some(end) = header.find(']') else {
                continue;
            };
            section = header[..end]
                .split(|c: char| c.is_whitespace() || c == '"')
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            rest = header[end + 1..].trim_start();
        }
        if rest.is_empty() || rest.starts_with(['#', ';']) {
            continue;
        }
        let (key, value) = match rest.split_once('=') {
            Some((k, v)) => (k.trim(), value_of(v)),
            None => (rest.trim(), "true".to_owned()),
        };
        out.push(Entry {
            section: section.clone(),
            key: key.to_ascii_lowercase(),
            value,
        });
    }
    out
}

/// Whether a git config turns `extensions.worktreeConfig` on (git then reads
/// `config.worktree` too).
pub fn worktree_config_enabled(text: &str) -> bool {
    parse(text).iter().any(|e| {
        e.section == "extensions"
            && e.key == "worktreeconfig"
            && matches!(
                e.value.to_ascii_lowercase().as_str(),
                "true" | "yes" | "on" | "1"
            )
    })
}

/// A raw value: quotes removed, `\"`, `\\`, `\n`, `\t` unescaped, an unquoted `#` or `;` starts
/// a comment, surrounding unquoted blanks dropped.
fn value_of(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

/// The paths in `root` that decide where git takes config and hooks from (see the module doc).
/// Existing paths only, `..` resolved by name; some may lie outside `root` (the caller keeps
/// those inside a writable root).
pub fn redirects(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let mut found = Vec::new();
    let mut git_dirs = vec![dot_git.clone()];
    if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.file_type().is_file()) {
        found.push(dot_git.clone());
        if let Some(text) = read_small(&dot_git)
            && let Some(target) = text.lines().find_map(|l| l.strip_prefix("gitdir:"))
        {
            let target = root.join(target.trim());
            for name in ["hooks", "config", "config.worktree", "commondir"] {
                found.push(target.join(name));
            }
            git_dirs.push(target);
        }
    }
    // A root shaped like a git directory is where git looks when `.git` is broken (a call can
    // write garbage into `.git/HEAD`), or the repository itself when the workspace is bare.
    if shaped_like_git_dir(root) {
        for name in ["hooks", "config", "config.worktree", "commondir"] {
            found.push(root.join(name));
        }
        git_dirs.push(root.to_path_buf());
    }
    for dir in git_dirs {
        for config in ["config", "config.worktree"] {
            config_redirects(root, &dir.join(config), 0, &mut found);
        }
    }
    let mut found: Vec<PathBuf> = found.iter().map(|p| lexical_clean(p)).collect();
    found.retain(|p| std::fs::symlink_metadata(p).is_ok());
    found.sort();
    found.dedup();
    found
}

/// `core.hooksPath` and the included files of the config at `file`, and of those, recursively.
fn config_redirects(root: &Path, file: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    if depth > MAX_INCLUDE_DEPTH {
        return;
    }
    let Some(text) = read_small(file) else {
        return;
    };
    let dir = file.parent().unwrap_or(root);
    for entry in parse(&text) {
        // `~` is a home: hidden and read-only to the call anyway.
        if entry.value.starts_with('~') || entry.value.is_empty() {
            continue;
        }
        match (entry.section.as_str(), entry.key.as_str()) {
            // Relative to the worktree's root, where git runs hooks.
            ("core", "hookspath") => found.push(root.join(&entry.value)),
            // Relative to the including file.
            ("include" | "includeif", "path") => {
                let included = lexical_clean(&dir.join(&entry.value));
                found.push(included.clone());
                config_redirects(root, &included, depth + 1, found);
            }
            _ => {}
        }
    }
}

/// `HEAD` a file, `objects` and `refs` directories: what git accepts as a git directory.
fn shaped_like_git_dir(dir: &Path) -> bool {
    let is = |name: &str, dir_wanted: bool| {
        std::fs::symlink_metadata(dir.join(name))
            .is_ok_and(|m| if dir_wanted { m.is_dir() } else { m.is_file() })
    };
    is("HEAD", false) && is("objects", true) && is("refs", true)
}

/// `path` with `.` and `..` components resolved by name alone (no symlink is read).
pub fn lexical_clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str, section: &str, key: &str) -> Vec<String> {
        parse(text)
            .into_iter()
            .filter(|e| e.section == section && e.key == key)
            .map(|e| e.value)
            .collect()
    }

    #[test]
    fn the_forms_git_accepts_are_read_as_git_reads_them() {
        let text = "[core]\n\thooksPath = .githooks ; shared hooks\n[include]path = ../one.cfg\n[include]\n\tpath = ../two.cfg # mine\n[includeIf \"gitdir:~/w/\"]\n\tPATH = \"three \\\"q\\\".cfg\"\n[submodule \"lib\"]\n\tpath = lib\n[Core]\n\tHooksPath = \\\n  .husky\n";
        assert_eq!(
            values(text, "core", "hookspath"),
            vec![".githooks", ".husky"]
        );
        assert_eq!(
            values(text, "include", "path"),
            vec!["../one.cfg", "../two.cfg"]
        );
        assert_eq!(values(text, "includeif", "path"), vec!["three \"q\".cfg"]);
        assert_eq!(values(text, "submodule", "path"), vec!["lib"]);
    }

    #[test]
    fn worktree_config_is_on_only_when_the_extension_says_so() {
        assert!(worktree_config_enabled(
            "[extensions]\n\tworktreeConfig = true\n"
        ));
        assert!(worktree_config_enabled("[extensions]\n\tworktreeconfig\n"));
        assert!(!worktree_config_enabled(
            "[extensions]\n\tworktreeConfig = false\n"
        ));
        assert!(!worktree_config_enabled(
            "# worktreeConfig = true\n[core]\n"
        ));
    }

    #[test]
    fn a_fifo_a_symlink_and_a_device_are_not_read() {
        let dir = std::env::temp_dir().join(format!("agentd-gitconfig-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        nix::unistd::mkfifo(
            &dir.join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
        std::fs::write(dir.join("plain"), "[core]\n").unwrap();
        let start = std::time::Instant::now();
        assert_eq!(read_small(&dir.join("fifo")), None);
        assert_eq!(read_small(&dir.join("zero")), None);
        assert_eq!(read_small(Path::new("/dev/zero")), None);
        assert_eq!(read_small(&dir.join("plain")).as_deref(), Some("[core]\n"));
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hooks_paths_in_included_files_and_a_git_dir_shaped_root_are_found() {
        let root = std::env::temp_dir().join(format!("agentd-gitconfig-r-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[include]\n\tpath = ../shared.cfg\n",
        )
        .unwrap();
        std::fs::write(root.join("shared.cfg"), "[include]\n\tpath = deeper.cfg\n").unwrap();
        std::fs::write(root.join("deeper.cfg"), "[core]\n\thooksPath = .githooks\n").unwrap();
        std::fs::create_dir(root.join(".githooks")).unwrap();
        let found = redirects(&root);
        for p in ["shared.cfg", "deeper.cfg", ".githooks"] {
            assert!(found.contains(&root.join(p)), "{p}: {found:?}");
        }
        std::fs::create_dir_all(root.join("objects")).unwrap();
        std::fs::create_dir_all(root.join("refs")).unwrap();
        std::fs::write(root.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join("config"), "[core]\n").unwrap();
        assert!(redirects(&root).contains(&root.join("config")));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
