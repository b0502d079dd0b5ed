//! The home's symlinks that lead into a writable root: `~/.bashrc -> ~/dotfiles/bashrc` with the
//! workspace `~/dotfiles` lets one call append to `bashrc` what the user's next shell runs on
//! the host, and `~/.config/nvim -> ~/dotfiles/nvim` what the next editor runs. The home is
//! hidden from calls, but what its links lead to is the workspace's.
//!
//! Not a list of startup files: every symlink the home and the config directories (`~/.config`,
//! `$XDG_CONFIG_HOME`) hold, and those up to [`DEPTH`] levels below them, is resolved (hop by
//! hop, without reading what it leads to), and one that leads strictly inside a writable root
//! gives that path, relative to the root, as a protected name — read-only in every call, moved
//! aside after a call that made it. What cannot be protected so is a [`Refusal`]: a link to a
//! root itself, a config directory's entry that is or holds a root, a link that leads through
//! another symlink inside a root (a call could point that one elsewhere), a name a pattern
//! cannot spell, a config directory too large to list whole.
//!
//! Pure of identity: the caller reads as the session's owner ([`super::links_protected`]).

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Levels below the home and each config directory looked at: `~/.local/bin/tool`,
/// `~/.config/nvim/lua/plugins.lua`.
pub const DEPTH: usize = 3;

/// Most directory entries looked at in one scan (files too: each costs its share of the
/// listing). 10,000 took 14–23 ms in a debug build, against a session start of a few ms, hence
/// this bound. The first levels of the home and of the config directories must fit whole (else
/// the scan refuses); past them, deeper levels are left unlooked at (the log says so,
/// `docs/security.md` "What is not protected").
pub const MAX_ENTRIES: usize = 4_096;

/// Most symlinks followed while resolving one link (the kernel's own limit is 40).
const MAX_HOPS: usize = 40;

/// What a scan found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Protected names to add, relative to a writable root, sorted and deduplicated.
    pub names: Vec<String>,
    /// The first link that could not be protected.
    pub refusal: Option<Refusal>,
    /// Deeper levels were cut short by [`MAX_ENTRIES`].
    pub truncated: bool,
}

/// A link into a writable root that cannot be protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The link (or the config directory's entry), as the home names it.
    pub link: PathBuf,
    /// Why it cannot be protected.
    pub why: Why,
}

/// Why a link cannot be protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// It leads to a writable root, or holds one: a root cannot be made read-only.
    IsRoot(PathBuf),
    /// It leads through this symlink inside a writable root, which a call could retarget.
    Through(PathBuf),
    /// Its target inside a root has a name a protected pattern cannot spell (not UTF-8, or a
    /// glob character `*`, `?`, `[`).
    Name(PathBuf),
    /// More symlinks on the way than the kernel follows.
    Loop,
    /// The directory has more entries than the scan looks at.
    TooMany,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::IsRoot(root) => write!(
                f,
                "leads to {}, which is or holds a writable root and cannot be made read-only",
                root.display()
            ),
            Why::Through(hop) => write!(
                f,
                "leads through the symlink {}, which a call could point elsewhere",
                hop.display()
            ),
            Why::Name(target) => write!(
                f,
                "leads to {}, whose name a protected path cannot spell (not UTF-8, or `*`, `?`, `[`)",
                target.display()
            ),
            Why::Loop => write!(f, "leads through more than {MAX_HOPS} symlinks"),
            Why::TooMany => write!(f, "has more than {MAX_ENTRIES} entries to look at"),
        }
    }
}

/// One directory to list: as the home names it, where it really is, its level (1: its
/// entries are the home's or a config directory's own), and whether it is a config directory.
struct Dir {
    named: PathBuf,
    real: PathBuf,
    level: usize,
    config: bool,
}

/// Scans `home` and `configs` (`~/.config`, `$XDG_CONFIG_HOME`) for links into `roots`
/// (canonical). A config directory that itself lies inside a root (`XDG_CONFIG_HOME` set into
/// the workspace) is treated as a link to where it is.
pub fn scan(home: &Path, configs: &[PathBuf], roots: &[PathBuf]) -> Found {
    let home_real = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
    let mut scan = Scan {
        roots,
        home: home_real.clone(),
        found: Found::default(),
        seen: 0,
    };
    // A home inside a root is a broad workspace: refused, or its secrets hidden ([`super::hide`]).
    if scan.inside(&home_real) {
        return scan.found;
    }
    let mut queue = VecDeque::from([Dir {
        named: home.to_path_buf(),
        real: home_real,
        level: 1,
        config: false,
    }]);
    for config in configs {
        let real = super::machine::canonical(config);
        scan.judge(config, &real, true);
        if !scan.inside(&real) && real.is_dir() {
            queue.push_back(Dir {
                named: config.clone(),
                real,
                level: 1,
                config: true,
            });
        }
    }
    // Past a refusal too: an allowed broad workspace still gets every link that can be
    // protected.
    while let Some(dir) = queue.pop_front() {
        if !scan.list(&dir, &mut queue) {
            break;
        }
    }
    scan.found.names.sort();
    scan.found.names.dedup();
    scan.found
}

struct Scan<'a> {
    roots: &'a [PathBuf],
    /// The home, canonical.
    home: PathBuf,
    found: Found,
    seen: usize,
}

impl Scan<'_> {
    /// Lists `dir`; `false` when the budget ran out (the scan stops).
    fn list(&mut self, dir: &Dir, queue: &mut VecDeque<Dir>) -> bool {
        // Unreadable to the owner: unreadable to the owner's programs too.
        let Ok(entries) = std::fs::read_dir(&dir.real) else {
            return true;
        };
        for entry in entries.filter_map(Result::ok) {
            self.seen += 1;
            if self.seen > MAX_ENTRIES {
                if dir.level == 1 {
                    self.refuse(dir.named.clone(), Why::TooMany);
                } else {
                    self.found.truncated = true;
                }
                return false;
            }
            // Files, most of a home, cost only their type (from the listing, no `stat`).
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if !kind.is_symlink() && !kind.is_dir() {
                continue;
            }
            let named = dir.named.join(entry.file_name());
            let real = dir.real.join(entry.file_name());
            // What a program reads its config from: an entry of a config directory, and a
            // dot-entry of the home (`~/.vim`, `~/.emacs.d`) by convention.
            let config = dir.level == 1
                && (dir.config || entry.file_name().as_encoded_bytes().starts_with(b"."));
            if kind.is_symlink() {
                match resolve(&dir.real, &real, self.roots) {
                    Ok(target) => self.judge(&named, &target, config),
                    Err(why) => self.refuse(named, why),
                }
            } else if kind.is_dir() {
                // A config directory's own subdirectory that is or holds a root: the workspace
                // is where a program reads its config (`~/.config` a link to `~/dotfiles/config`,
                // the workspace `~/dotfiles/config/nvim`). A directory of the home that is the
                // workspace is just where the user works.
                if dir.config && dir.level == 1 {
                    self.judge(&named, &real, true);
                }
                if dir.level < DEPTH && !self.inside(&real) {
                    queue.push_back(Dir {
                        named,
                        real,
                        level: dir.level + 1,
                        config: false,
                    });
                }
            }
        }
        true
    }

    /// What `named`, which leads to `target`, asks for: a protected name when `target` lies
    /// strictly inside a root; a refusal when it is a root, or — for a config entry, whose
    /// contents some program reads — holds one.
    fn judge(&mut self, named: &Path, target: &Path, config: bool) {
        // A link to `/` or above the home (wine's `z:`) holds everything; it is no config
        // location, and the workspace under it is reached by its own path.
        let narrow = !self.home.starts_with(target);
        if self.roots.iter().any(|r| r == target) || config && narrow && self.holds_root(target) {
            let root = self
                .roots
                .iter()
                .find(|r| r.starts_with(target))
                .cloned()
                .unwrap_or_else(|| target.to_path_buf());
            return self.refuse(named.to_path_buf(), Why::IsRoot(root));
        }
        let Some(root) = self
            .roots
            .iter()
            .filter(|r| target.starts_with(r))
            .max_by_key(|r| r.components().count())
        else {
            return;
        };
        let Ok(rel) = target.strip_prefix(root) else {
            return;
        };
        match spelled(rel) {
            Some(name) => self.found.names.push(name),
            None => self.refuse(named.to_path_buf(), Why::Name(target.to_path_buf())),
        }
    }

    fn refuse(&mut self, link: PathBuf, why: Why) {
        if self.found.refusal.is_none() {
            self.found.refusal = Some(Refusal { link, why });
        }
    }

    /// `path` lies inside a root, or is one.
    fn inside(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r))
    }

    /// `path` holds a root (strictly).
    fn holds_root(&self, path: &Path) -> bool {
        self.roots
            .iter()
            .any(|r| r.starts_with(path) && r.as_path() != path)
    }
}

/// `rel` as a protected pattern that names only it: every component a plain UTF-8 name
/// without a glob character.
fn spelled(rel: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for component in rel.components() {
        let Component::Normal(name) = component else {
            return None;
        };
        let name = name.to_str()?;
        if name.contains(['*', '?', '[']) {
            return None;
        }
        parts.push(name);
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Where the symlink `link` (in the directory `dir`, canonical) leads, resolved one component at
/// a time: a symlink met inside a root is an error (a call could retarget it), one outside is
/// followed; from the first missing component on, the rest is joined lexically (`..` applied),
/// which is where a call would create it.
pub fn resolve(dir: &Path, link: &Path, roots: &[PathBuf]) -> Result<PathBuf, Why> {
    let mut pending: VecDeque<PathBuf> = VecDeque::new();
    // Unreadable to the owner (a directory listable but not searchable): to the owner's
    // programs too, which then read nothing through it.
    let Ok(first) = std::fs::read_link(link) else {
        return Ok(link.to_path_buf());
    };
    let mut current = dir.to_path_buf();
    push_front(&mut pending, &first);
    let mut hops = 1;
    let mut missing = false;
    while let Some(part) = pending.pop_front() {
        match part.as_os_str() {
            s if s == OsStr::new("/") => current = PathBuf::from("/"),
            s if s == OsStr::new(".") => {}
            s if s == OsStr::new("..") => {
                current.pop();
            }
            name => {
                let next = current.join(name);
                if missing {
                    current = next;
                    continue;
                }
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        if roots.iter().any(|r| next.starts_with(r)) {
                            return Err(Why::Through(next));
                        }
                        hops += 1;
                        if hops > MAX_HOPS {
                            return Err(Why::Loop);
                        }
                        match std::fs::read_link(&next) {
                            Ok(target) => push_front(&mut pending, &target),
                            // Gone or unreadable since: nothing is read through it.
                            Err(_) => {
                                missing = true;
                                current = next;
                            }
                        }
                    }
                    Ok(_) => current = next,
                    Err(_) => {
                        missing = true;
                        current = next;
                    }
                }
            }
        }
    }
    Ok(current)
}

/// Puts `target`'s components before what is pending, an absolute one starting from `/`.
fn push_front(pending: &mut VecDeque<PathBuf>, target: &Path) {
    let parts: Vec<PathBuf> = target
        .components()
        .map(|c| match c {
            Component::RootDir | Component::Prefix(_) => PathBuf::from("/"),
            Component::CurDir => PathBuf::from("."),
            Component::ParentDir => PathBuf::from(".."),
            Component::Normal(n) => PathBuf::from(n),
        })
        .collect();
    for part in parts.into_iter().rev() {
        pending.push_front(part);
    }
}

#[cfg(test)]
mod tests;
