//! What a command could have written: the case directory before and after, compared.

use std::collections::BTreeMap;
use std::fs;
use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

/// Path (relative to the case root) → what it is, for ws/, home/ and tmp/.
pub type Snapshot = BTreeMap<PathBuf, (u32, u64, u64)>;

/// The harness's own files in the case directory, left out of snapshots.
const OUTPUTS: &[&str] = &["log", "trace", "stdout", "stderr"];

/// Everything a command could write to: the case directory (workspace, home, temp and anything
/// else it creates there) but the harness's own files.
pub fn snapshot(case: &Path) -> Result<Snapshot, String> {
    let mut out = Snapshot::new();
    let Ok(entries) = fs::read_dir(case) else {
        return Ok(out);
    };
    for entry in entries.flatten() {
        if !OUTPUTS.iter().any(|o| entry.file_name() == *o) {
            walk(case, &entry.path(), &mut out)?;
        }
    }
    Ok(out)
}

fn walk(case: &Path, path: &Path, out: &mut Snapshot) -> Result<(), String> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    let rel = path.strip_prefix(case).unwrap_or(path).to_path_buf();
    let mut h = DefaultHasher::new();
    if meta.is_file() {
        h.write(&fs::read(path).unwrap_or_default());
    } else if meta.file_type().is_symlink() {
        h.write(
            fs::read_link(path)
                .unwrap_or_default()
                .as_os_str()
                .as_encoded_bytes(),
        );
    }
    use std::os::unix::fs::MetadataExt;
    out.insert(rel, (meta.mode(), meta.len(), h.finish()));
    if meta.is_dir() {
        let entries = fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for entry in entries.flatten() {
            walk(case, &entry.path(), out)?;
        }
    }
    Ok(())
}

pub fn diff_snapshots(before: &Snapshot, after: &Snapshot) -> Vec<PathBuf> {
    let mut changed: Vec<PathBuf> = Vec::new();
    for (path, what) in after {
        // A directory's size changes with its entries; those are reported themselves.
        let dir = what.0 & libc::S_IFMT == libc::S_IFDIR;
        match before.get(path) {
            None => changed.push(path.clone()),
            Some(old) if dir && old.0 == what.0 => {}
            Some(old) if old != what => changed.push(path.clone()),
            Some(_) => {}
        }
    }
    for path in before.keys() {
        if !after.contains_key(path) {
            changed.push(path.clone());
        }
    }
    changed
}
