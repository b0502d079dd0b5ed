//! Two snapshots of one root compared: what was created, modified, deleted or had its mode
//! changed. Pure: no I/O, a merge of two sorted lists.

use super::snapshot::{Entry, Meta, Snapshot};
use protocol::event::{PathChange, PathKind};
use std::cmp::Ordering;

/// One changed path of a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Relative to the root, as bytes.
    pub path: Box<[u8]>,
    /// What happened to it.
    pub change: PathChange,
    /// What it is now (was, when deleted).
    pub kind: PathKind,
}

/// What changed from `before` to `after` (both sorted by path, as [`super::snapshot::take`]
/// makes them), in path order.
pub fn compare(before: &Snapshot, after: &Snapshot) -> Vec<Found> {
    let mut found = Vec::new();
    let (mut b, mut a) = (
        before.entries.iter().peekable(),
        after.entries.iter().peekable(),
    );
    loop {
        let order = match (b.peek(), a.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(x), Some(y)) => x.path.cmp(&y.path),
        };
        match order {
            Ordering::Less => {
                if let Some(gone) = b.next() {
                    found.push(found_at(gone, PathChange::Deleted));
                }
            }
            Ordering::Greater => {
                if let Some(new) = a.next() {
                    found.push(found_at(new, PathChange::Created));
                }
            }
            Ordering::Equal => {
                if let (Some(was), Some(now)) = (b.next(), a.next())
                    && let Some(change) = classify(&was.meta, &now.meta)
                {
                    found.push(found_at(now, change));
                }
            }
        }
    }
    found
}

fn found_at(entry: &Entry, change: PathChange) -> Found {
    Found {
        path: entry.path.clone(),
        change,
        kind: kind(&entry.meta),
    }
}

/// What kind of file `meta` describes.
pub fn kind(meta: &Meta) -> PathKind {
    match meta.file_type() {
        libc::S_IFREG => PathKind::File,
        libc::S_IFDIR => PathKind::Directory,
        libc::S_IFLNK => PathKind::Symlink,
        _ => PathKind::Other,
    }
}

/// How the entry at one path changed, if it did.
///
/// Another inode, device or type: modified (replaced). A directory otherwise changes only its
/// mode as far as the review goes: its times move whenever an entry is added or removed, and
/// those entries are compared themselves. For anything else, another size or modification time
/// is a modification; a change time that moved with only the permission bits different is a
/// mode change; a change time that moved with nothing else different (the contents rewritten
/// at the same size and the modification time put back, a new hard link, an extended
/// attribute) is reported as modified, since the metadata cannot tell which.
pub fn classify(was: &Meta, now: &Meta) -> Option<PathChange> {
    if was.dev != now.dev || was.ino != now.ino || was.file_type() != now.file_type() {
        return Some(PathChange::Modified);
    }
    let mode_changed = was.mode != now.mode;
    if now.is_dir() {
        return mode_changed.then_some(PathChange::ModeChanged);
    }
    if was.size != now.size || was.mtime_ns != now.mtime_ns {
        return Some(PathChange::Modified);
    }
    if was.ctime_ns == now.ctime_ns && !mode_changed {
        return None;
    }
    Some(if mode_changed {
        PathChange::ModeChanged
    } else {
        PathChange::Modified
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: u32 = libc::S_IFREG | 0o644;
    const DIR: u32 = libc::S_IFDIR | 0o755;

    fn meta(ino: u64, size: u64, mtime: i64, ctime: i64, mode: u32) -> Meta {
        Meta {
            dev: 1,
            ino,
            size,
            mtime_ns: mtime,
            ctime_ns: ctime,
            mode,
        }
    }

    fn snap(entries: &[(&str, Meta)]) -> Snapshot {
        let mut entries: Vec<Entry> = entries
            .iter()
            .map(|(p, m)| Entry {
                path: p.as_bytes().into(),
                meta: *m,
            })
            .collect();
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Snapshot {
            entries,
            incomplete: None,
        }
    }

    fn changes(found: &[Found]) -> Vec<(String, PathChange)> {
        found
            .iter()
            .map(|f| (String::from_utf8_lossy(&f.path).into_owned(), f.change))
            .collect()
    }

    // One line per case: (was, now, expected).
    #[test]
    fn classify_table() {
        let base = meta(7, 10, 100, 100, FILE);
        let cases: &[(&str, Meta, Option<PathChange>)] = &[
            ("unchanged", base, None),
            (
                "new contents",
                meta(7, 11, 200, 200, FILE),
                Some(PathChange::Modified),
            ),
            (
                "same size, new mtime",
                meta(7, 10, 200, 200, FILE),
                Some(PathChange::Modified),
            ),
            (
                "mtime put back",
                meta(7, 10, 100, 300, FILE),
                Some(PathChange::Modified),
            ),
            (
                "replaced by rename",
                meta(8, 10, 100, 100, FILE),
                Some(PathChange::Modified),
            ),
            (
                "chmod",
                meta(7, 10, 100, 300, libc::S_IFREG | 0o755),
                Some(PathChange::ModeChanged),
            ),
            (
                "now a symlink",
                meta(7, 10, 100, 100, libc::S_IFLNK | 0o777),
                Some(PathChange::Modified),
            ),
        ];
        for (what, now, expected) in cases {
            assert_eq!(classify(&base, now), *expected, "{what}");
        }
    }

    #[test]
    fn a_directory_changes_by_replacement_or_mode_not_by_its_entries() {
        let dir = meta(3, 4096, 100, 100, DIR);
        assert_eq!(classify(&dir, &meta(3, 4096, 200, 200, DIR)), None);
        assert_eq!(
            classify(&dir, &meta(3, 4096, 100, 200, libc::S_IFDIR | 0o777)),
            Some(PathChange::ModeChanged)
        );
        assert_eq!(
            classify(&dir, &meta(9, 4096, 100, 100, DIR)),
            Some(PathChange::Modified)
        );
    }

    #[test]
    fn created_modified_deleted_in_one_merge() {
        let before = snap(&[
            ("a", meta(1, 1, 1, 1, FILE)),
            ("b", meta(2, 1, 1, 1, FILE)),
            ("d", meta(4, 1, 1, 1, FILE)),
        ]);
        let after = snap(&[
            ("a", meta(1, 1, 1, 1, FILE)),
            ("b", meta(2, 2, 2, 2, FILE)),
            ("c", meta(3, 1, 1, 1, FILE)),
        ]);
        assert_eq!(
            changes(&compare(&before, &after)),
            [
                ("b".into(), PathChange::Modified),
                ("c".into(), PathChange::Created),
                ("d".into(), PathChange::Deleted),
            ]
        );
        assert!(compare(&before, &before).is_empty());
    }
}
