//! A repository's object store after a call: what git reads as history is what it says it is.
//!
//! Git names an object by the hash of its content and does not check the hash when it reads it
//! back. A call can therefore rewrite the file of an object the user already trusts (a blob of
//! a committed `Makefile`) with other content: `git status` and `git diff` stay empty, while
//! `git show`, `git archive`, a clone or a checkout of another branch deliver the call's content
//! under the user's commit (a finding of the fifth attacker review). The same holds for the
//! caches git trusts instead of parsing objects (a commit-graph names each commit's tree and
//! parents) and for `objects/info/alternates`, which adds another object store.
//!
//! So after each call, for each git directory, everything in `objects/` a call added or changed
//! is held to what git itself would have written:
//!
//! - a **loose object** (`objects/xx/…`) new or changed since the last look is inflated and
//!   hashed; one whose content does not hash to its name is moved aside;
//! - a **cache** git rebuilds at will (`info/commit-graph`, `info/commit-graphs/`,
//!   `pack/multi-pack-index`, a pack's `.bitmap`, `.rev`, `.mtimes`) new or changed is removed:
//!   git works without it, and its next `gc` writes it again from the objects;
//! - anything else new or changed there that is not a pack (`info/alternates`,
//!   `info/http-alternates`, a name git does not write) is moved aside;
//! - a **pack** new or changed is verified by git's own `index-pack --verify`, which hashes every
//!   object in it, run outside any repository with no config read; one that fails (or cannot be
//!   verified in time) is moved aside with its index.
//!
//! Unchanged files are recognised by their identity (inode, size, modification and change
//! time), so a call that touches no object costs a stat per file.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most files of one object store looked at; past it the rest is not checked (and logged).
const MAX_FILES: usize = 200_000;
/// Largest loose object hashed (inflated size); a larger new one is moved aside unverified.
const MAX_LOOSE: u64 = 256 << 20;
/// Longest a pack's verification may take.
const PACK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// A file's identity: inode, size, modification and change time.
type Identity = (u64, u64, i64, i64, i64);

/// What each object store held, by path.
#[derive(Debug, Default)]
pub struct ObjectStores {
    seen: BTreeMap<PathBuf, BTreeMap<PathBuf, Identity>>,
}

/// What a call changed there that must go: each path (relative to nothing: absolute), and why.
pub type Forged = Vec<(PathBuf, String)>;

impl ObjectStores {
    /// The object stores of `git_dirs` (repository top, git directory) as they are now.
    pub fn of(git_dirs: &[(PathBuf, PathBuf)]) -> ObjectStores {
        ObjectStores {
            seen: git_dirs
                .iter()
                .map(|(_, git)| {
                    let objects = git.join("objects");
                    let files = files(&objects);
                    (objects, files)
                })
                .collect(),
        }
    }

    /// What a call added or changed that is not what git would have written; then takes the
    /// stores as they are now (less what the caller moves away) as the new baseline. `owner`:
    /// whom a pack's verification runs as (the workspace's owner, for a root supervisor).
    pub fn forged(&mut self, git_dirs: &[(PathBuf, PathBuf)], owner: Option<(u32, u32)>) -> Forged {
        let mut out = Vec::new();
        let mut now = BTreeMap::new();
        for (_, git) in git_dirs {
            let objects = git.join("objects");
            let before = self.seen.remove(&objects);
            let mut files = files(&objects);
            let Some(before) = before else {
                // A repository seen for the first time: its objects are the baseline.
                now.insert(objects, files);
                continue;
            };
            let changed: Vec<PathBuf> = files
                .iter()
                .filter(|(p, id)| before.get(*p) != Some(*id))
                .map(|(p, _)| p.clone())
                .collect();
            let format = object_format(git);
            for rel in changed {
                let path = objects.join(&rel);
                match judge(&objects, &rel, format, owner) {
                    Verdict::Keep => {}
                    Verdict::Remove => {
                        files.remove(&rel);
                        if let Err(e) = remove_no_follow(&path) {
                            tracing::warn!(
                                "a git cache a call wrote, {}, could not be removed: {e}",
                                crate::inert::inert_line(&path.display().to_string())
                            );
                        }
                    }
                    Verdict::MoveAside(why) => {
                        files.remove(&rel);
                        if let Some(index) = pack_index(&rel) {
                            files.remove(&index);
                            out.push((objects.join(index), why.clone()));
                        }
                        out.push((path, why));
                    }
                }
            }
            now.insert(objects, files);
        }
        self.seen = now;
        out.sort();
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }
}

/// The hash git names objects by in the repository whose git directory is `git`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Sha1,
    Sha256,
}

fn object_format(git: &Path) -> Format {
    let config = super::fresh_repo::read_no_symlinks(&git.join("config"), 1 << 20)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let sha256 = tool_worker::lockdown::mounts::gitconfig::parse(&config)
        .iter()
        .any(|e| {
            e.section == "extensions"
                && e.key == "objectformat"
                && e.value.eq_ignore_ascii_case("sha256")
        });
    if sha256 { Format::Sha256 } else { Format::Sha1 }
}

/// What becomes of a file of the object store a call added or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// What git would have written.
    Keep,
    /// A cache git rebuilds: removed.
    Remove,
    /// Not what git would have written: moved aside, for this reason.
    MoveAside(String),
}

/// What becomes of `objects/rel`, new or changed.
fn judge(objects: &Path, rel: &Path, format: Format, owner: Option<(u32, u32)>) -> Verdict {
    let name = rel.to_string_lossy();
    let parts: Vec<&str> = name.split('/').collect();
    let aside = |why: &str| Verdict::MoveAside(why.to_owned());
    match parts.as_slice() {
        [dir, file] if is_hex(dir, 2) && is_hex(file, hex_len(format) - 2) => {
            match loose_matches(&objects.join(rel), &format!("{dir}{file}"), format) {
                Some(true) => Verdict::Keep,
                Some(false) => aside(
                    "a git object whose content is not what its name says: git would show it as part of history that was already there (git now reports the object missing; if the file it held is unchanged in your work tree, `git hash-object -w FILE` puts it back)",
                ),
                None => aside("a git object that could not be verified (unreadable or too large)"),
            }
        }
        ["pack", file] if file.starts_with("pack-") && file.ends_with(".pack") => {
            match verify_pack(&objects.join(rel), owner) {
                Ok(()) => Verdict::Keep,
                Err(e) => Verdict::MoveAside(format!(
                    "a pack of git objects that git's own verification refuses ({e})"
                )),
            }
        }
        // A pack's index is verified with its pack; `.keep` and `.promisor` hold no objects.
        ["pack", file]
            if file.starts_with("pack-")
                && (file.ends_with(".idx")
                    || file.ends_with(".keep")
                    || file.ends_with(".promisor")) =>
        {
            Verdict::Keep
        }
        // Caches git trusts in place of the objects (a commit-graph names commits' trees and
        // parents); git works without them and writes them again at its next gc.
        ["pack", file]
            if file.starts_with("multi-pack-index")
                || file.ends_with(".bitmap")
                || file.ends_with(".rev")
                || file.ends_with(".mtimes") =>
        {
            Verdict::Remove
        }
        ["info", "commit-graph"] | ["info", "commit-graphs", ..] => Verdict::Remove,
        // `git gc`'s list of packs for dumb HTTP: plain names, read by nothing local.
        ["info", "packs"] => Verdict::Keep,
        _ if name.ends_with(".lock") || name.contains("/tmp_") || name.starts_with("tmp_") => {
            Verdict::Keep
        }
        _ => aside(
            "an entry of the object store git does not write there (an alternate object store makes git read objects from elsewhere)",
        ),
    }
}

/// Removes the file at `path`, following no symlink on the way (the tree is the model's; the
/// supervisor may be root).
fn remove_no_follow(path: &Path) -> std::io::Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent"))?;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("no name"))?;
    let dir = tool_worker::lockdown::mounts::resolve::open_no_symlinks(parent, true)
        .map_err(std::io::Error::other)?;
    nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)?;
    Ok(())
}

fn hex_len(format: Format) -> usize {
    match format {
        Format::Sha1 => 40,
        Format::Sha256 => 64,
    }
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The index that goes with a pack at `rel`.
fn pack_index(rel: &Path) -> Option<PathBuf> {
    let name = rel.to_str()?;
    name.strip_suffix(".pack")
        .map(|stem| PathBuf::from(format!("{stem}.idx")))
}

/// Whether the loose object at `path` inflates to content whose hash is `hex`; `None` when it
/// cannot be read, is not a regular file, or is larger than [`MAX_LOOSE`].
fn loose_matches(path: &Path, hex: &str, format: Format) -> Option<bool> {
    use sha1::Digest;
    let file = std::fs::File::from(open_regular(path)?);
    let mut inflated = flate2::read::ZlibDecoder::new(file).take(MAX_LOOSE + 1);
    let mut buf = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    let mut sha1 = sha1::Sha1::new();
    let mut sha256 = sha2::Sha256::new();
    loop {
        let n = inflated.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_LOOSE {
            return None;
        }
        match format {
            Format::Sha1 => sha1.update(&buf[..n]),
            Format::Sha256 => sha256.update(&buf[..n]),
        }
    }
    let digest: Vec<u8> = match format {
        Format::Sha1 => sha1.finalize().to_vec(),
        Format::Sha256 => sha256.finalize().to_vec(),
    };
    let got: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Some(got == hex)
}

/// Opens `path` for reading without following a symlink anywhere on the way and without
/// waiting on a FIFO: a regular file only.
fn open_regular(path: &Path) -> Option<std::os::fd::OwnedFd> {
    use nix::fcntl::{OFlag, openat};
    let parent =
        tool_worker::lockdown::mounts::resolve::open_no_symlinks(path.parent()?, true).ok()?;
    let fd = openat(
        &parent,
        path.file_name()?,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .ok()?;
    nix::sys::stat::fstat(&fd)
        .ok()
        .filter(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG)
        .map(|_| fd)
}

/// Runs git's `index-pack --verify` on the pack at `path` (with its index beside it): git
/// hashes every object in the pack and compares with the index. Run from `/`, outside any
/// repository, with no system or global config and no home, as `owner` when given.
fn verify_pack(path: &Path, owner: Option<(u32, u32)>) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("git");
    cmd.arg("index-pack")
        .arg("--verify")
        .arg("--strict")
        .arg(path)
        .current_dir("/")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", "/")
        .env("HOME", "/nonexistent")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if let Some((uid, gid)) = owner.filter(|_| nix::unistd::geteuid().is_root()) {
        // std drops the supplementary groups when it sets the uid as root.
        cmd.uid(uid).gid(gid);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("git could not be run: {e}"))?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(_)) => {
                let mut err = String::new();
                if let Some(mut stderr) = child.stderr.take() {
                    let _ = (&mut stderr).take(4096).read_to_string(&mut err);
                }
                let first = err.lines().next().unwrap_or("it failed").to_owned();
                return Err(crate::inert::inert_line(&first).to_string());
            }
            Ok(None) if started.elapsed() < PACK_TIMEOUT => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("it could not be verified in time".to_owned());
            }
        }
    }
}

/// Every file below `objects` (not following symlinks; a symlink counts as a file), by path
/// relative to it, with its identity.
fn files(objects: &Path) -> BTreeMap<PathBuf, Identity> {
    let mut out = BTreeMap::new();
    if tool_worker::lockdown::mounts::resolve::open_no_symlinks(objects, true).is_err() {
        // Not a directory reached without a symlink: a store elsewhere is not walked.
        return out;
    }
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(objects.join(&rel)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            if out.len() >= MAX_FILES {
                tracing::warn!(
                    "the object store {} holds more than {MAX_FILES} files: the rest is not checked",
                    crate::inert::inert_line(&objects.display().to_string())
                );
                return out;
            }
            let rel = rel.join(entry.file_name());
            let Ok(m) = entry.metadata() else { continue };
            if m.is_dir() {
                stack.push(rel);
            } else {
                out.insert(
                    rel,
                    (m.ino(), m.size(), m.mtime(), m.ctime(), m.ctime_nsec()),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn scratch(label: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("agentd-objects-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        git(&dir, &["init", "-q"]);
        std::fs::write(dir.join("Makefile"), "all:\n\techo build\n").unwrap();
        git(&dir, &["add", "Makefile"]);
        git(&dir, &["commit", "-qm", "x"]);
        dir
    }

    fn path_of(dir: &Path, hex: &str) -> PathBuf {
        dir.join(".git/objects").join(&hex[..2]).join(&hex[2..])
    }

    #[test]
    fn new_objects_git_writes_pass_and_a_rewritten_one_does_not() {
        let dir = scratch("loose");
        let dirs = vec![(dir.clone(), dir.join(".git"))];
        let mut stores = ObjectStores::of(&dirs);
        // What git itself writes: a commit with new objects.
        std::fs::write(dir.join("b.txt"), "b\n").unwrap();
        git(&dir, &["add", "b.txt"]);
        git(&dir, &["commit", "-qm", "b"]);
        assert_eq!(stores.forged(&dirs, None), Vec::new());
        // The Makefile's blob rewritten with another object's content.
        let blob = git(&dir, &["rev-parse", "HEAD~1:Makefile"]);
        let other = git(&dir, &["rev-parse", "HEAD:b.txt"]);
        let target = path_of(&dir, &blob);
        std::fs::remove_file(&target).unwrap();
        std::fs::copy(path_of(&dir, &other), &target).unwrap();
        let forged = stores.forged(&dirs, None);
        assert_eq!(forged.len(), 1, "{forged:?}");
        assert_eq!(forged[0].0, target);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn caches_alternates_and_a_forged_pack_are_not_what_git_writes() {
        let dir = scratch("pack");
        let dirs = vec![(dir.clone(), dir.join(".git"))];
        git(&dir, &["repack", "-qad"]);
        let mut stores = ObjectStores::of(&dirs);
        git(&dir, &["commit-graph", "write", "--reachable"]);
        std::fs::write(dir.join(".git/objects/info/alternates"), "/tmp\n").unwrap();
        let forged: Vec<String> = stores
            .forged(&dirs, None)
            .into_iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(forged, vec!["alternates".to_owned()]);
        assert!(
            !dir.join(".git/objects/info/commit-graph").exists(),
            "a cache the call wrote is removed"
        );
        // A repack by git passes; a pack whose bytes were changed in place does not.
        std::fs::write(dir.join("c.txt"), "c\n").unwrap();
        git(&dir, &["add", "c.txt"]);
        git(&dir, &["commit", "-qm", "c"]);
        git(&dir, &["repack", "-qad"]);
        let packs_only: Vec<PathBuf> = stores
            .forged(&dirs, None)
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| p.to_string_lossy().contains("/pack/pack-"))
            .collect();
        assert_eq!(packs_only, Vec::<PathBuf>::new());
        let pack = std::fs::read_dir(dir.join(".git/objects/pack"))
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "pack"))
            .unwrap();
        let mut bytes = std::fs::read(&pack).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x55;
        std::fs::remove_file(&pack).unwrap();
        std::fs::write(&pack, bytes).unwrap();
        let forged: Vec<PathBuf> = stores
            .forged(&dirs, None)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert!(forged.contains(&pack), "{forged:?}");
        assert!(forged.contains(&pack.with_extension("idx")), "{forged:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
