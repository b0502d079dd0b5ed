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
    read_opened_capped(open_unsteered(path)?, max)
}

/// `path` opened for reading without following a symlink in its last component, waiting on a
/// FIFO or taking a terminal: what every read of a file the model may have written starts with.
fn open_unsteered(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
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

/// Most config files one scan reads: git's own limit is a depth (10), not a count, so a file
/// that includes itself forty times would be read 40^10 times. Each file is read once (by
/// device and inode), and the scan stops following includes past this count; every file it
/// reached is still on the list. What it did not read cannot redirect git unless a file it did
/// read names it, and every such file is protected, so an include graph made larger than the
/// count by a call must start in a file that call created — a protected name the supervisor's
/// check moves aside after the call, or a file nothing git reads includes.
const MAX_CONFIG_FILES: usize = 64;
/// Most include and `core.hooksPath` entries one scan takes.
const MAX_ENTRIES: usize = 1024;

/// The configs git reads before a repository's own, for the user whose `HOME` and
/// `XDG_CONFIG_HOME` are given: the system's, then the user's (`$XDG_CONFIG_HOME/git/config`,
/// else `~/.config/git/config`, and `~/.gitconfig`). A relative `core.hooksPath` there is
/// relative to whichever repository git runs in — the workspace, when the user runs git there
/// after the session.
pub fn user_configs(home: Option<&Path>, xdg_config_home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("/etc/gitconfig")];
    match (xdg_config_home, home) {
        (Some(xdg), _) if xdg.is_absolute() => out.push(xdg.join("git/config")),
        (_, Some(home)) => out.push(home.join(".config/git/config")),
        _ => {}
    }
    if let Some(home) = home {
        out.push(home.join(".gitconfig"));
    }
    out
}

/// The paths in `root` that decide where git takes config and hooks from (see the module doc),
/// with the user's own configs (`globals`, from [`user_configs`]) read too, and `home` to
/// expand a `~/` in a path they name. Existing paths only, `..` resolved by name; some may lie
/// outside `root` (the caller keeps those inside a writable root).
pub fn redirects(root: &Path, globals: &[PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut git_dirs = vec![root.join(".git")];
    // A `.git` that is a file names the git directory; git reads it at the root and in every
    // repository one level down (`sub/.git`, a submodule's worktree), as the protected names
    // `*/.git/config` and `*/.git/hooks` cover the directories there.
    let mut dot_gits = vec![root.join(".git")];
    if let Ok(entries) = std::fs::read_dir(root) {
        dot_gits.extend(
            entries
                .filter_map(Result::ok)
                .map(|e| e.path().join(".git")),
        );
    }
    for dot_git in dot_gits {
        if let Some(target) = gitdir_file(&dot_git) {
            found.push(dot_git);
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
    let mut scan = Scan {
        home: home.map(Path::to_path_buf),
        ..Scan::default()
    };
    for global in globals {
        scan.config(root, global, 0, &mut found);
    }
    for dir in git_dirs {
        for config in ["config", "config.worktree"] {
            scan.config(root, &dir.join(config), 0, &mut found);
        }
    }
    let mut found: Vec<PathBuf> = found.iter().map(|p| lexical_clean(p)).collect();
    found.retain(|p| std::fs::symlink_metadata(p).is_ok());
    found.sort();
    found.dedup();
    found
}

/// The git directory a `.git` file at `dot_git` names (`gitdir: PATH`, relative to the file's
/// directory), if it is a regular file that names one.
fn gitdir_file(dot_git: &Path) -> Option<PathBuf> {
    if !std::fs::symlink_metadata(dot_git).is_ok_and(|m| m.file_type().is_file()) {
        return None;
    }
    let text = read_small(dot_git)?;
    let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?;
    let base = dot_git.parent()?;
    Some(base.join(target.trim()))
}

/// What one scan of config files has read so far, to read each once and a bounded number.
#[derive(Default)]
struct Scan {
    /// Device and inode of each file read.
    seen: std::collections::HashSet<(u64, u64)>,
    /// Include and `core.hooksPath` entries taken.
    entries: usize,
    /// Where a `~/` in a path leads, when known.
    home: Option<PathBuf>,
}

impl Scan {
    /// `core.hooksPath` and the included files of the config at `file`, and of those,
    /// recursively: each file once, within [`MAX_INCLUDE_DEPTH`], [`MAX_CONFIG_FILES`] and
    /// [`MAX_ENTRIES`].
    fn config(&mut self, root: &Path, file: &Path, depth: usize, found: &mut Vec<PathBuf>) {
        use std::os::unix::fs::MetadataExt;
        if depth > MAX_INCLUDE_DEPTH || self.seen.len() >= MAX_CONFIG_FILES {
            return;
        }
        let Ok(opened) = open_unsteered(file) else {
            return;
        };
        let Ok(meta) = opened.metadata() else {
            return;
        };
        if !self.seen.insert((meta.dev(), meta.ino())) {
            return;
        }
        let Some(text) = read_opened(opened) else {
            return;
        };
        let dir = file.parent().unwrap_or(root);
        for mut entry in parse(&text) {
            if let (Some(rest), Some(home)) = (entry.value.strip_prefix("~/"), &self.home) {
                entry.value = home.join(rest).to_string_lossy().into_owned();
            }
            // Another user's home (`~user/`), or an empty value: nothing in the workspace.
            if entry.value.starts_with('~') || entry.value.is_empty() {
                continue;
            }
            let include =
                matches!(entry.section.as_str(), "include" | "includeif") && entry.key == "path";
            let hooks = entry.section == "core" && entry.key == "hookspath";
            if !(include || hooks) {
                continue;
            }
            if self.entries >= MAX_ENTRIES {
                return;
            }
            self.entries += 1;
            if hooks {
                // Relative to the worktree's root, where git runs hooks.
                found.push(root.join(&entry.value));
            } else {
                // Relative to the including file.
                let included = lexical_clean(&dir.join(&entry.value));
                found.push(included.clone());
                self.config(root, &included, depth + 1, found);
            }
        }
    }
}

/// `HEAD` (a file, or a symlink: git takes both), `objects` and `refs` directories (or symlinks
/// to them): what git accepts as a git directory.
fn shaped_like_git_dir(dir: &Path) -> bool {
    let head = std::fs::symlink_metadata(dir.join("HEAD"))
        .is_ok_and(|m| m.is_file() || m.file_type().is_symlink());
    let is_dir = |name: &str| std::fs::metadata(dir.join(name)).is_ok_and(|m| m.is_dir());
    head && is_dir("objects") && is_dir("refs")
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
        let found = redirects(&root, &[], None);
        for p in ["shared.cfg", "deeper.cfg", ".githooks"] {
            assert!(found.contains(&root.join(p)), "{p}: {found:?}");
        }
        std::fs::create_dir_all(root.join("objects")).unwrap();
        std::fs::create_dir_all(root.join("refs")).unwrap();
        std::fs::write(root.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join("config"), "[core]\n").unwrap();
        assert!(redirects(&root, &[], None).contains(&root.join("config")));
        std::fs::remove_dir_all(&root).unwrap();
    }

    fn scratch(label: &str) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("agentd-gitconfig-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join(".git")).unwrap();
        root
    }

    #[test]
    fn a_config_that_includes_itself_many_times_is_read_once() {
        let root = scratch("bomb");
        // Read as git reads it (each include, ten levels deep) this is 40^10 files.
        let bomb = "[include]\n\tpath = config.worktree\n[core]\n\thooksPath = .githooks\n";
        std::fs::write(root.join(".git/config.worktree"), bomb.repeat(40)).unwrap();
        std::fs::create_dir(root.join(".githooks")).unwrap();
        let found = redirects(&root, &[], None);
        assert!(found.contains(&root.join(".githooks")), "{found:?}");
        assert!(
            found.contains(&root.join(".git/config.worktree")),
            "{found:?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn past_its_count_a_scan_stops_following_includes() {
        let root = scratch("fan");
        let fan: String = (0..200)
            .map(|i| format!("[include]\n\tpath = f{i}.cfg\n"))
            .collect();
        std::fs::write(root.join(".git/config"), fan).unwrap();
        for i in 0..200 {
            let name = format!(".git/f{i}.cfg");
            std::fs::write(root.join(name), "[include]\n\tpath = config\n").unwrap();
        }
        let mut scan = Scan::default();
        let mut found = Vec::new();
        scan.config(&root, &root.join(".git/config"), 0, &mut found);
        assert_eq!(
            scan.seen.len(),
            MAX_CONFIG_FILES,
            "each file once, at most the count"
        );
        // Every include it took is on the list, read or not.
        assert!(found.contains(&root.join(".git/f199.cfg")), "{found:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_root_whose_head_is_a_symlink_is_a_git_directory_too() {
        let root = scratch("head-link");
        std::fs::create_dir_all(root.join("objects")).unwrap();
        std::fs::create_dir_all(root.join("refs/heads")).unwrap();
        std::os::unix::fs::symlink("refs/heads/main", root.join("HEAD")).unwrap();
        std::fs::write(root.join("config"), "[core]\n").unwrap();
        assert!(redirects(&root, &[], None).contains(&root.join("config")));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_dot_git_file_one_level_down_is_followed_to_its_git_directory() {
        let root = scratch("sub-gitdir");
        std::fs::create_dir_all(root.join("docs/notes/hooks")).unwrap();
        std::fs::write(root.join("docs/notes/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::write(root.join("lib/.git"), "gitdir: ../docs/notes\n").unwrap();
        let found = redirects(&root, &[], None);
        for p in ["lib/.git", "docs/notes/config", "docs/notes/hooks"] {
            assert!(found.contains(&root.join(p)), "{p}: {found:?}");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_relative_hooks_path_in_the_users_own_config_names_a_directory_of_the_workspace() {
        let root = scratch("global-ws");
        let home = scratch("global-home");
        std::fs::create_dir_all(home.join(".config/git")).unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            "[core]\n\thooksPath = .githooks\n[includeIf \"gitdir:~/work/\"]\n\tpath = ~/.gitconfig-work\n",
        )
        .unwrap();
        std::fs::write(
            home.join(".gitconfig-work"),
            "[core]\n\thooksPath = tools/hooks\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".githooks")).unwrap();
        std::fs::create_dir_all(root.join("tools/hooks")).unwrap();
        let globals = user_configs(Some(&home), None);
        assert_eq!(
            globals,
            vec![
                PathBuf::from("/etc/gitconfig"),
                home.join(".config/git/config"),
                home.join(".gitconfig")
            ]
        );
        let found = redirects(&root, &globals, Some(&home));
        for p in [".githooks", "tools/hooks"] {
            assert!(found.contains(&root.join(p)), "{p}: {found:?}");
        }
        assert!(
            redirects(&root, &[], Some(&home))
                .iter()
                .all(|p| !p.ends_with(".githooks")),
            "only the user's config names it"
        );
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&home).unwrap();
    }
}
