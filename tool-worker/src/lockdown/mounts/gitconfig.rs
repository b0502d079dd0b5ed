//! Where git in a workspace takes its config and hooks from, beyond the fixed protected names:
//! a `.git` that is a file (`gitdir: …`), a root that is itself shaped like a git directory (git
//! falls back to it when `.git` is broken), `core.hooksPath`, and the files `[include]` and
//! `[includeIf]` name — followed the way git reads them (inline comments, a key on the header's
//! line, quotes and escapes, continued lines, includes within includes).
//!
//! The workspace is the model's: every file here is opened without following a symlink, without
//! blocking (a FIFO), only if it is a regular file, and read up to a bound.

use super::within::Within;
use std::ffi::OsString;
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

/// The bytes of the regular file at `path`, as [`read_regular`] opens it; an error when it is
/// not a regular file (a FIFO, a device, a symlink), cannot be read, or holds more than `max`
/// bytes.
pub fn read_regular_bytes(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    let file = open_unsteered(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    read_opened_bytes(file, max)
}

/// The bytes of an opened file; an error if it is longer than `max`: what git would read past
/// the cut is unknown.
fn read_opened_bytes(file: std::fs::File, max: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("longer than {max} bytes"));
    }
    Ok(bytes)
}

/// A small file git reads for a path (`.git`, `commondir`, `.gitmodules`): `Ok(None)` when there
/// is none to read (missing, a FIFO, a device, a symlink — git would not get a path from those
/// either), its bytes otherwise, an error when it exists and cannot be read.
fn read_pointer(path: &Path) -> Result<Option<Vec<u8>>, String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => read_regular_bytes(path, MAX_CONFIG_BYTES).map(Some),
        _ => Ok(None),
    }
}

/// `bytes` as a path, whatever they are (git takes any bytes but NUL).
fn bytes_path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes.trim_ascii()))
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

/// What a scan found: the paths that decide where git takes config and hooks from, and the
/// configs that exist but could not be read (the worker refuses the call rather than guess).
#[derive(Debug, Default)]
pub struct Found {
    /// Existing paths, `..` resolved by name.
    pub paths: Vec<PathBuf>,
    /// A config that exists and could not be read, and why.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// The names git reads in a git directory for config and hooks, and `info` (its `exclude`
/// and `grafts` change what `git status` and `git log` show the user).
const GIT_DIR_NAMES: [&str; 5] = ["hooks", "config", "config.worktree", "commondir", "info"];

/// The paths in `root` that decide where git takes config and hooks from (see the module doc),
/// with the user's own configs (`globals`, from [`user_configs`]) read too, and `home` to
/// expand a `~/` in a path they name. Nothing outside `within` is listed or read: a git
/// directory, include or `.git` file that leads out of the writable roots is not followed
/// (what is there is read-only to the call already).
pub fn redirects(
    root: &Path,
    listing: &[OsString],
    globals: &[PathBuf],
    home: Option<&Path>,
    within: &Within,
) -> Found {
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    let mut git_dirs = vec![root.join(".git")];
    for dot_git in dot_gits(root, listing, within, &mut unreadable) {
        if let Some(target) = gitdir_file(&dot_git, &mut unreadable) {
            found.push(dot_git);
            if within.holds_dir(&target) {
                found.extend(GIT_DIR_NAMES.iter().map(|n| target.join(n)));
                git_dirs.push(target);
            }
        }
    }
    // A root shaped like a git directory is where git looks when `.git` is broken (a call can
    // write garbage into `.git/HEAD`), or the repository itself when the workspace is bare.
    if shaped_like_git_dir(root) {
        found.extend(GIT_DIR_NAMES.iter().map(|n| root.join(n)));
        git_dirs.push(root.to_path_buf());
    }
    // A linked worktree's or a submodule's git directory takes its config and hooks from the
    // directory its `commondir` names (a bare repository beside the worktrees, `.bare`).
    let mut commons = Vec::new();
    for dir in &git_dirs {
        if let Some(common) = commondir(dir, &mut unreadable).filter(|c| within.holds_dir(c)) {
            found.extend(GIT_DIR_NAMES.iter().map(|n| common.join(n)));
            commons.push(common);
        }
    }
    git_dirs.extend(commons);
    let mut scan = Scan {
        home: home.map(Path::to_path_buf),
        within: within.clone(),
        unreadable,
        ..Scan::default()
    };
    for global in globals {
        scan.config(root, global, 0, true, &mut found);
    }
    for dir in git_dirs.iter().filter(|d| within.enterable(d)) {
        for config in ["config", "config.worktree"] {
            scan.config(root, &dir.join(config), 0, false, &mut found);
        }
    }
    let mut found: Vec<PathBuf> = found.iter().map(|p| lexical_clean(p)).collect();
    found.retain(|p| within.has_entry(p) && std::fs::symlink_metadata(p).is_ok());
    found.sort();
    found.dedup();
    Found {
        paths: found,
        unreadable: scan.unreadable,
    }
}

/// The names in the directory `dir`, sorted (none if it cannot be listed): a root's entries,
/// listed once for every scan of it.
pub fn listing(dir: &Path) -> Vec<OsString> {
    let mut names: Vec<OsString> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The `.git` entries git reads as a repository's: the root's, every one a level down
/// (`sub/.git`, as the protected names `*/.git/config` and `*/.git/hooks` cover the directories
/// there), and each submodule's deeper down (`vendor/lib/.git`) that the index records as a
/// gitlink or the root's `.gitmodules` names.
fn dot_gits(
    root: &Path,
    listing: &[OsString],
    within: &Within,
    unreadable: &mut Vec<(PathBuf, String)>,
) -> Vec<PathBuf> {
    let mut out = vec![root.join(".git")];
    out.extend(
        listing
            .iter()
            .map(|name| root.join(name))
            .filter(|p| within.enterable(p))
            .map(|p| p.join(".git")),
    );
    let mut deeper = Vec::new();
    if within.enterable(&root.join(".git")) {
        let index = root.join(".git/index");
        match super::git_index::gitlinks(&index) {
            Ok(links) => deeper.extend(links),
            Err(why) => unreadable.push((index, why)),
        }
    }
    let gitmodules = root.join(".gitmodules");
    match read_pointer(&gitmodules) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned();
            for entry in parse(&text) {
                if entry.section == "submodule" && entry.key == "path" {
                    if entry.value.contains(char::REPLACEMENT_CHARACTER) {
                        unreadable.push((gitmodules.clone(), "a path in it is not UTF-8".into()));
                    }
                    deeper.push(PathBuf::from(entry.value));
                }
            }
        }
        Err(why) => unreadable.push((gitmodules, why)),
    }
    for rel in deeper {
        let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
        let dot_git = root.join(rel).join(".git");
        if plain && within.has_entry(&dot_git) {
            out.push(dot_git);
        }
    }
    out
}

/// The directory `git_dir/commondir` names (relative to `git_dir`), if it names one.
fn commondir(git_dir: &Path, unreadable: &mut Vec<(PathBuf, String)>) -> Option<PathBuf> {
    let file = git_dir.join("commondir");
    let bytes = match read_pointer(&file) {
        Ok(bytes) => bytes?,
        Err(why) => {
            unreadable.push((file, why));
            return None;
        }
    };
    let line = bytes.split(|b| *b == b'\n').next()?;
    let named = bytes_path(line);
    (!named.as_os_str().is_empty()).then(|| lexical_clean(&git_dir.join(named)))
}

/// The git directory a `.git` file at `dot_git` names (`gitdir: PATH`, relative to the file's
/// directory, any bytes), if it is a regular file that names one.
fn gitdir_file(dot_git: &Path, unreadable: &mut Vec<(PathBuf, String)>) -> Option<PathBuf> {
    let bytes = match read_pointer(dot_git) {
        Ok(bytes) => bytes?,
        Err(why) => {
            unreadable.push((dot_git.to_path_buf(), why));
            return None;
        }
    };
    let target = bytes
        .split(|b| *b == b'\n')
        .find_map(|l| l.strip_prefix(b"gitdir:"))?;
    let base = dot_git.parent()?;
    Some(lexical_clean(&base.join(bytes_path(target))))
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
    /// Where a config the call may have written may be read.
    within: Within,
    /// Configs that exist and could not be read, and why.
    unreadable: Vec<(PathBuf, String)>,
}

impl Scan {
    /// `core.hooksPath` and the included files of the config at `file`, and of those,
    /// recursively: each file once, within [`MAX_INCLUDE_DEPTH`], [`MAX_CONFIG_FILES`] and
    /// [`MAX_ENTRIES`]. `trusted`: the user's own configs and what they include, read wherever
    /// they are; any other is read only inside the writable roots.
    fn config(
        &mut self,
        root: &Path,
        file: &Path,
        depth: usize,
        trusted: bool,
        found: &mut Vec<PathBuf>,
    ) {
        use std::os::unix::fs::MetadataExt;
        if depth > MAX_INCLUDE_DEPTH || self.seen.len() >= MAX_CONFIG_FILES {
            return;
        }
        // A symlinked config is read where it leads, if that is inside.
        let real = match file.canonicalize() {
            Ok(real) => real,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => return self.refuse(file, &e.to_string()),
        };
        if !trusted && !self.within.holds(&real) {
            return;
        }
        // Only a regular file is opened: opening a device (a watchdog arms on open) is an act.
        if !std::fs::symlink_metadata(&real).is_ok_and(|m| m.is_file()) {
            return;
        }
        let opened = match open_unsteered(&real) {
            Ok(opened) => opened,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => return self.refuse(file, &e.to_string()),
        };
        let Ok(meta) = opened.metadata() else {
            return self.refuse(file, "cannot stat it");
        };
        // A FIFO or a device holds no config git could read back (whatever wrote the
        // workspace is gone): nothing is followed from it, and it is not waited on.
        if !meta.is_file() {
            return;
        }
        if !self.seen.insert((meta.dev(), meta.ino())) {
            return;
        }
        // Bytes that are not UTF-8 are replaced (a Latin-1 name in a config is common, and git
        // reads such a file); a path they touch refuses the call below.
        let text = match read_opened_bytes(opened, MAX_CONFIG_BYTES) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(why) => return self.refuse(file, &why),
        };
        let dir = real.parent().unwrap_or(root).to_path_buf();
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
            if entry.value.contains(char::REPLACEMENT_CHARACTER) {
                return self.refuse(file, "a path in it is not UTF-8");
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
                self.config(root, &included, depth + 1, trusted, found);
            }
        }
    }

    fn refuse(&mut self, file: &Path, why: &str) {
        self.unreadable.push((file.to_path_buf(), why.to_owned()));
    }
}

/// What git accepts as a git directory (`is_git_directory` in its setup.c): a `HEAD` (a file or
/// a symlink), and `objects` and `refs` that exist — git only checks it can search them, so
/// files with an execute bit pass — or a `commondir` that names where they are.
fn shaped_like_git_dir(dir: &Path) -> bool {
    let exists = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
    let head = std::fs::symlink_metadata(dir.join("HEAD"))
        .is_ok_and(|m| m.is_file() || m.file_type().is_symlink());
    head && ((exists("objects") && exists("refs")) || exists("commondir"))
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
        let found = redirects(
            &root,
            &listing(&root),
            &[],
            None,
            &Within::new([root.as_path()]),
        )
        .paths;
        for p in ["shared.cfg", "deeper.cfg", ".githooks"] {
            assert!(found.contains(&root.join(p)), "{p}: {found:?}");
        }
        std::fs::create_dir_all(root.join("objects")).unwrap();
        std::fs::create_dir_all(root.join("refs")).unwrap();
        std::fs::write(root.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join("config"), "[core]\n").unwrap();
        assert!(
            redirects(
                &root,
                &listing(&root),
                &[],
                None,
                &Within::new([root.as_path()])
            )
            .paths
            .contains(&root.join("config"))
        );
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
        let found = redirects(
            &root,
            &listing(&root),
            &[],
            None,
            &Within::new([root.as_path()]),
        )
        .paths;
        assert!(found.contains(&root.join(".githooks")), "{found:?}");
        assert!(
            found.contains(&root.join(".git/config.worktree")),
            "{found:?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_config_that_cannot_be_read_whole_is_reported_not_skipped() {
        let root = scratch("oversized");
        let mut text = "[core]\n\thooksPath = .githooks\n".to_owned();
        text.push_str(&"# padding\n".repeat(30_000));
        std::fs::write(root.join(".git/config"), text).unwrap();
        std::fs::create_dir_all(root.join(".githooks")).unwrap();
        let found = redirects(
            &root,
            &listing(&root),
            &[],
            None,
            &Within::new([root.as_path()]),
        );
        assert_eq!(found.unreadable.len(), 1, "{found:?}");
        assert_eq!(found.unreadable[0].0, root.join(".git/config"));
        // A name that is not UTF-8 elsewhere in the file does not hide the hooks path.
        std::fs::write(
            root.join(".git/config"),
            b"[user]\n\tname = Jos\xe9\n[core]\n\thooksPath = .githooks\n",
        )
        .unwrap();
        let found = redirects(
            &root,
            &listing(&root),
            &[],
            None,
            &Within::new([root.as_path()]),
        );
        assert!(found.unreadable.is_empty(), "{found:?}");
        assert!(found.paths.contains(&root.join(".githooks")), "{found:?}");
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
        let mut scan = Scan {
            within: Within::new([root.as_path()]),
            ..Scan::default()
        };
        let mut found = Vec::new();
        scan.config(&root, &root.join(".git/config"), 0, false, &mut found);
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
        assert!(
            redirects(
                &root,
                &listing(&root),
                &[],
                None,
                &Within::new([root.as_path()])
            )
            .paths
            .contains(&root.join("config"))
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_dot_git_file_one_level_down_is_followed_to_its_git_directory() {
        let root = scratch("sub-gitdir");
        std::fs::create_dir_all(root.join("docs/notes/hooks")).unwrap();
        std::fs::write(root.join("docs/notes/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::write(root.join("lib/.git"), "gitdir: ../docs/notes\n").unwrap();
        let found = redirects(
            &root,
            &listing(&root),
            &[],
            None,
            &Within::new([root.as_path()]),
        )
        .paths;
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
        let within = Within::new([root.as_path()]);
        let found = redirects(&root, &listing(&root), &globals, Some(&home), &within).paths;
        for p in [".githooks", "tools/hooks"] {
            assert!(found.contains(&root.join(p)), "{p}: {found:?}");
        }
        assert!(
            redirects(&root, &listing(&root), &[], Some(&home), &within)
                .paths
                .iter()
                .all(|p| !p.ends_with(".githooks")),
            "only the user's config names it"
        );
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&home).unwrap();
    }
}
