//! The submodules a repository's index records (gitlinks), read from `.git/index` itself, and
//! the entries it hides from the user's review.
//!
//! A parent's `git status` runs `git status` in every populated submodule its index records —
//! with or without a `.gitmodules` entry, which the model can edit or delete. So the `.git`
//! files of submodules deeper than one level are found here, in the index, where a call cannot
//! hide them without breaking the repository (git refuses a corrupt index, and then runs
//! nothing). Versions 2, 3 and 4 of the format (`Documentation/gitformat-index.txt`), SHA-1 and
//! SHA-256 object names; only entries' modes, flags and paths are read. An entry whose
//! assume-unchanged (`CE_VALID`) or skip-worktree bit is set is one `git status` and `git diff`
//! do not look at: a call that sets it hides its change to that file from the user. A large
//! index is read once per change: the result is kept by the file's path, identity, size and
//! modification and change times.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The largest index read (an index of ~600,000 files); a larger one is not looked into.
const MAX_INDEX_BYTES: u64 = 64 << 20;

/// A gitlink's mode.
const GITLINK: u32 = 0o160000;

/// Most gitlinks taken from one index; one with more is not read (and refused by the caller).
pub const MAX_GITLINKS: usize = 1024;

/// Most hidden entries named from one index; past it they are counted, not named.
pub const MAX_HIDDEN: usize = 1024;

/// The longest path an entry may have (git's own limit on Linux is `PATH_MAX`).
const MAX_NAME: usize = 4096;

/// An entry's assume-unchanged bit (`CE_VALID`), in its flags.
const ASSUME_UNCHANGED: u16 = 0x8000;
/// An entry's skip-worktree bit, in its extended flags (versions 3 and 4).
const SKIP_WORKTREE: u16 = 0x4000;

/// What an index says that matters here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The gitlinks (submodules), relative to the worktree.
    pub links: Vec<PathBuf>,
    /// Entries with the assume-unchanged or skip-worktree bit, up to [`MAX_HIDDEN`].
    pub hidden: Vec<PathBuf>,
    /// How many entries have one of those bits (named or not).
    pub hidden_count: usize,
}

/// Path, identity, size, modification and change times of an index read, and what it said.
/// The change time is the kernel's: a call that rewrites the index in place and puts its
/// modification time back cannot put that back too.
type Kept = (
    (PathBuf, u64, u64, u64, i64, i64, i64, i64),
    Result<Facts, String>,
);

/// The indexes read last (a workspace with nested repositories has one each).
static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());
/// Most indexes kept.
const MAX_KEPT: usize = 32;

/// The paths (relative to the worktree) of the gitlinks in the index at `index` — and in the
/// shared index a split index names (`git update-index --split-index` moves the entries there);
/// empty when it is missing, too large, or not an index git would read.
pub fn gitlinks(index: &Path) -> Result<Vec<PathBuf>, String> {
    facts(index).map(|f| f.links)
}

/// What the index at `index` says (see [`Facts`]); the default when it is missing, too large,
/// or not an index git would read; an error when its gitlinks cannot all be told.
pub fn facts(index: &Path) -> Result<Facts, String> {
    let Ok(meta) = std::fs::symlink_metadata(index) else {
        return Ok(Facts::default());
    };
    if !meta.is_file() || meta.len() > MAX_INDEX_BYTES {
        return Ok(Facts::default());
    }
    let key = (
        index.to_path_buf(),
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    );
    if let Some((_, facts)) = KEPT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
    {
        return facts.clone();
    }
    let facts = read(index);
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    kept.retain(|(k, _)| k.0 != key.0);
    if kept.len() >= MAX_KEPT {
        drop(kept.remove(0));
    }
    kept.push((key, facts.clone()));
    facts
}

fn read(index: &Path) -> Result<Facts, String> {
    let bytes = super::gitconfig::read_regular_bytes(index, MAX_INDEX_BYTES)?;
    // Not an index git would read (git then refuses the repository and runs nothing): none.
    let Some((parsed, hash)) = [20, 32]
        .into_iter()
        .find_map(|hash| Some((parse(&bytes, hash)?, hash)))
    else {
        return Ok(Facts::default());
    };
    let mut facts = parsed.facts;
    let mut doubt = parsed.doubt;
    if let Some(name) = parsed.shared {
        let shared = index.with_file_name(format!("sharedindex.{name}"));
        let bytes = super::gitconfig::read_regular_bytes(&shared, MAX_INDEX_BYTES)
            .map_err(|e| format!("its shared index {}: {e}", shared.display()))?;
        match parse(&bytes, hash) {
            Some(more) => {
                facts.links.extend(more.facts.links);
                facts.hidden_count += more.facts.hidden_count;
                let room = MAX_HIDDEN.saturating_sub(facts.hidden.len());
                facts
                    .hidden
                    .extend(more.facts.hidden.into_iter().take(room));
                doubt = doubt.or(more.doubt);
            }
            None => {
                doubt = Some(format!(
                    "its shared index {} does not parse",
                    shared.display()
                ))
            }
        }
    }
    if let Some(why) = doubt {
        return Err(why);
    }
    Ok(facts)
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    let b = bytes.get(at..at + 2)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// What one index file holds that matters here.
struct Parsed {
    /// Its gitlinks and hidden entries.
    facts: Facts,
    /// The shared index its `link` extension names (hex), if it is a split index.
    shared: Option<String>,
    /// Why its gitlinks cannot all be told (a split index's gitlink that replaces a shared
    /// entry by position, too many gitlinks).
    doubt: Option<String>,
}

/// The gitlinks of an index whose object names are `hash` bytes long, and the shared index it
/// names; `None` if the bytes do not parse as such an index, or it has more than
/// [`MAX_GITLINKS`]. Linear in the file: a version-4 name is rebuilt in one buffer.
fn parse(bytes: &[u8], hash: usize) -> Option<Parsed> {
    if bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(bytes, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(bytes, 8)?;
    // Entries end before the trailing checksum.
    let end = bytes.len().checked_sub(hash)?;
    let mut at = 12;
    let mut previous: Vec<u8> = Vec::new();
    let mut facts = Facts::default();
    let mut doubt = None;
    for _ in 0..count {
        let start = at;
        let mode = be32(bytes, at + 24)?;
        let flags = be16(bytes, at + 40 + hash)?;
        at += 40 + hash + 2;
        let mut extended = 0;
        if version >= 3 && flags & 0x4000 != 0 {
            extended = be16(bytes, at)?;
            at += 2;
        }
        if version == 4 {
            let (strip, used) = varint(bytes.get(at..end)?)?;
            at += used;
            let len = bytes.get(at..end)?.iter().position(|b| *b == 0)?;
            let keep = previous.len().checked_sub(usize::try_from(strip).ok()?)?;
            previous.truncate(keep);
            previous.extend_from_slice(bytes.get(at..at + len)?);
            at += len + 1;
        } else {
            let len = bytes.get(at..end)?.iter().position(|b| *b == 0)?;
            previous.clear();
            previous.extend_from_slice(bytes.get(at..at + len)?);
            // Padded with NULs to a multiple of eight, counting from the entry's start.
            at = start + ((at - start + len + 8) & !7);
        }
        let name = &previous;
        // An empty name is a split index's entry replacing one of its shared index.
        if at > end || name.len() > MAX_NAME {
            return None;
        }
        let named = usize::from(flags & 0x0fff);
        if named != 0x0fff && named != name.len() {
            return None;
        }
        if mode & 0o170000 == GITLINK {
            if name.is_empty() {
                doubt = Some("a split index replaces an entry with a gitlink".to_owned());
            } else if facts.links.len() >= MAX_GITLINKS {
                doubt = Some(format!("it records more than {MAX_GITLINKS} gitlinks"));
            } else {
                facts
                    .links
                    .push(PathBuf::from(std::ffi::OsStr::from_bytes(name)));
            }
        }
        if flags & ASSUME_UNCHANGED != 0 || extended & SKIP_WORKTREE != 0 {
            facts.hidden_count += 1;
            if facts.hidden.len() < MAX_HIDDEN {
                facts
                    .hidden
                    .push(PathBuf::from(std::ffi::OsStr::from_bytes(name)));
            }
        }
    }
    // Extensions, each a signature, a size and its data, up to the checksum: `link` names the
    // shared index of a split index by its object name.
    let mut shared = None;
    while at + 8 <= end {
        let size = usize::try_from(be32(bytes, at + 4)?).ok()?;
        if bytes.get(at..at + 4)? == b"link" {
            let name = bytes.get(at + 8..at + 8 + hash)?;
            shared = Some(name.iter().map(|b| format!("{b:02x}")).collect());
        }
        at = at.checked_add(8)?.checked_add(size)?;
    }
    Some(Parsed {
        facts,
        shared,
        doubt,
    })
}

/// Git's offset varint: 7 bits a byte, high bit set on all but the last, plus one per byte
/// carried. Returns the value and the bytes it took.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut iter = bytes.iter();
    let mut c = *iter.next()?;
    let mut value = u64::from(c & 127);
    let mut used = 1;
    while c & 128 != 0 {
        c = *iter.next()?;
        used += 1;
        value = value.checked_add(1)?.checked_shl(7)? | u64::from(c & 127);
    }
    Some((value, used))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e"])
            .args(["-c", "protocol.file.allow=always"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {ok:?}");
    }

    #[test]
    fn gitlinks_are_found_in_every_index_version() {
        let base = std::env::temp_dir().join(format!("agentd-index-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (src, ws) = (base.join("src"), base.join("ws"));
        for d in [&src, &ws] {
            std::fs::create_dir_all(d).unwrap();
            git(d, &["init", "-q"]);
        }
        std::fs::write(src.join("f"), "f").unwrap();
        git(&src, &["add", "f"]);
        git(&src, &["commit", "-qm", "s"]);
        for i in 0..30 {
            std::fs::create_dir_all(ws.join(format!("d{i}"))).unwrap();
            std::fs::write(ws.join(format!("d{i}/file-{i}")), "x").unwrap();
        }
        git(&ws, &["add", "."]);
        let src_path = src.display().to_string();
        git(
            &ws,
            &["submodule", "add", "-q", &src_path, "vendor/deep/lib"],
        );
        git(&ws, &["submodule", "add", "-q", &src_path, "top"]);
        for version in ["2", "3", "4"] {
            git(&ws, &["update-index", "--index-version", version]);
            let mut links = gitlinks(&ws.join(".git/index")).unwrap();
            links.sort();
            assert_eq!(
                links,
                vec![PathBuf::from("top"), PathBuf::from("vendor/deep/lib")],
                "index version {version}"
            );
        }
        // A split index keeps its entries in the shared index it names.
        git(&ws, &["update-index", "--index-version", "2"]);
        git(&ws, &["update-index", "--split-index"]);
        std::fs::write(ws.join("late"), "x").unwrap();
        git(&ws, &["add", "late"]);
        let mut links = gitlinks(&ws.join(".git/index")).unwrap();
        links.sort();
        assert_eq!(
            links,
            vec![PathBuf::from("top"), PathBuf::from("vendor/deep/lib")],
            "split index"
        );
        std::fs::write(ws.join(".git/index"), b"DIRC garbage").unwrap();
        assert!(gitlinks(&ws.join(".git/index")).unwrap().is_empty());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn entries_hidden_from_status_are_told_in_every_index_version() {
        let ws = std::env::temp_dir().join(format!("agentd-index-hidden-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&ws);
        std::fs::create_dir_all(&ws).unwrap();
        git(&ws, &["init", "-q"]);
        for f in ["Makefile", "conftest.py", "plain"] {
            std::fs::write(ws.join(f), "x").unwrap();
        }
        git(&ws, &["add", "."]);
        assert_eq!(facts(&ws.join(".git/index")).unwrap().hidden_count, 0);
        git(&ws, &["update-index", "--skip-worktree", "Makefile"]);
        git(&ws, &["update-index", "--assume-unchanged", "conftest.py"]);
        for version in ["3", "4"] {
            git(&ws, &["update-index", "--index-version", version]);
            let facts = facts(&ws.join(".git/index")).unwrap();
            assert_eq!(
                facts.hidden,
                vec![PathBuf::from("Makefile"), PathBuf::from("conftest.py")],
                "index version {version}"
            );
            assert_eq!(facts.hidden_count, 2);
        }
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn names_that_only_grow_end_the_parse_instead_of_the_memory() {
        // Version 4, every entry keeping the whole previous name and adding a byte: quadratic
        // if each name were copied, and no index git would write past PATH_MAX.
        let mut bytes = b"DIRC".to_vec();
        bytes.extend(4u32.to_be_bytes());
        let count = 200_000u32;
        bytes.extend(count.to_be_bytes());
        for _ in 0..count {
            let mut entry = vec![0u8; 40 + 20];
            entry[24..28].copy_from_slice(&GITLINK.to_be_bytes());
            bytes.extend(entry);
            bytes.extend(0x0fffu16.to_be_bytes());
            bytes.extend([0u8, b'a', 0]);
        }
        bytes.extend([0u8; 20]);
        assert!(parse(&bytes, 20).is_none());
    }

    #[test]
    fn git_varints_decode_as_git_writes_them() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x80, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0x81, 0x7f]), Some((383, 2)));
        assert_eq!(varint(&[0x80]), None);
    }
}
