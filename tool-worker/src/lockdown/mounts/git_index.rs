//! The submodules a repository's index records (gitlinks), read from `.git/index` itself.
//!
//! A parent's `git status` runs `git status` in every populated submodule its index records —
//! with or without a `.gitmodules` entry, which the model can edit or delete. So the `.git`
//! files of submodules deeper than one level are found here, in the index, where a call cannot
//! hide them without breaking the repository (git refuses a corrupt index, and then runs
//! nothing). Versions 2, 3 and 4 of the format (`Documentation/gitformat-index.txt`), SHA-1 and
//! SHA-256 object names; only entries' modes and paths are read. A large index is read once per
//! change: the result is kept by the file's identity, size and modification time.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The largest index read (an index of ~600,000 files); a larger one is not looked into.
const MAX_INDEX_BYTES: u64 = 64 << 20;

/// A gitlink's mode.
const GITLINK: u32 = 0o160000;

/// Identity, size and modification time of the index last read, and its gitlinks.
type Kept = ((u64, u64, u64, i64, i64), Vec<PathBuf>);

static LAST: Mutex<Option<Kept>> = Mutex::new(None);

/// The paths (relative to the worktree) of the gitlinks in the index at `index`; empty when it
/// is missing, too large, or not an index git would read.
pub fn gitlinks(index: &Path) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::symlink_metadata(index) else {
        return Vec::new();
    };
    if !meta.is_file() || meta.len() > MAX_INDEX_BYTES {
        return Vec::new();
    }
    let key = (
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
    );
    if let Some((k, links)) = LAST.lock().unwrap_or_else(|e| e.into_inner()).as_ref()
        && *k == key
    {
        return links.clone();
    }
    let Ok(bytes) = super::gitconfig::read_regular_bytes(index, MAX_INDEX_BYTES) else {
        return Vec::new();
    };
    let links = [20, 32]
        .into_iter()
        .find_map(|hash| parse(&bytes, hash))
        .unwrap_or_default();
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, links.clone()));
    links
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    let b = bytes.get(at..at + 2)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// The gitlinks of an index whose object names are `hash` bytes long; `None` if the bytes do
/// not parse as such an index.
fn parse(bytes: &[u8], hash: usize) -> Option<Vec<PathBuf>> {
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
    let mut links = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = be32(bytes, at + 24)?;
        let flags = be16(bytes, at + 40 + hash)?;
        at += 40 + hash + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        let name = if version == 4 {
            let (strip, used) = varint(bytes.get(at..end)?)?;
            at += used;
            let len = bytes.get(at..end)?.iter().position(|b| *b == 0)?;
            let keep = previous.len().checked_sub(usize::try_from(strip).ok()?)?;
            let mut name = previous.get(..keep)?.to_vec();
            name.extend_from_slice(bytes.get(at..at + len)?);
            at += len + 1;
            name
        } else {
            let len = bytes.get(at..end)?.iter().position(|b| *b == 0)?;
            let name = bytes.get(at..at + len)?.to_vec();
            // Padded with NULs to a multiple of eight, counting from the entry's start.
            at = start + ((at - start + len + 8) & !7);
            name
        };
        if at > end || name.is_empty() {
            return None;
        }
        let named = usize::from(flags & 0x0fff);
        if named != 0x0fff && named != name.len() {
            return None;
        }
        if mode & 0o170000 == GITLINK {
            links.push(PathBuf::from(std::ffi::OsStr::from_bytes(&name)));
        }
        previous = name;
    }
    Some(links)
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
            let mut links = gitlinks(&ws.join(".git/index"));
            links.sort();
            assert_eq!(
                links,
                vec![PathBuf::from("top"), PathBuf::from("vendor/deep/lib")],
                "index version {version}"
            );
        }
        std::fs::write(ws.join(".git/index"), b"DIRC garbage").unwrap();
        assert!(gitlinks(&ws.join(".git/index")).is_empty());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn git_varints_decode_as_git_writes_them() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x80, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0x81, 0x7f]), Some((383, 2)));
        assert_eq!(varint(&[0x80]), None);
    }
}
