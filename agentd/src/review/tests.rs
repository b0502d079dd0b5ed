//! The review on real trees: each change a call can make shows, a symlink is never followed, a
//! swapped directory is seen for what it is, bounds are said.
#![allow(clippy::unwrap_used)]

use super::snapshot::{Bounds, Snapshot, take, take_within};
use super::*;
use protocol::event::{PathChange, PathKind};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("agentd-review-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir.canonicalize().unwrap())
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// File times are taken from a coarse clock (a few milliseconds): changes made right after a
/// snapshot could carry the very same times. Real turns are far slower than that.
fn tick() {
    std::thread::sleep(Duration::from_millis(30));
}

/// What changed between the two snapshots of `root`, as (path, change, kind).
fn changed(
    root: &Path,
    before: &Snapshot,
    after: &Snapshot,
) -> Vec<(String, PathChange, PathKind)> {
    let roots = [root.to_path_buf()];
    let summary = summarise(
        &roots,
        true,
        std::slice::from_ref(before),
        std::slice::from_ref(after),
    );
    assert_eq!(summary.total as usize, summary.paths.len());
    summary
        .paths
        .into_iter()
        .map(|p| (p.path, p.change, p.kind))
        .collect()
}

fn file(p: &str, change: PathChange) -> (String, PathChange, PathKind) {
    (p.to_owned(), change, PathKind::File)
}

#[test]
fn created_modified_deleted_and_mode_changed_files_all_show() {
    let ws = Scratch::new("kinds");
    for name in [
        "keep",
        "edit",
        "same-size",
        "gone",
        "exec",
        "src/deep/mod.py",
    ] {
        ws.write(name, "0123456789\n");
    }
    let before = take(&ws.0);
    assert_eq!(before.incomplete, None);
    tick();
    ws.write("edit", "a longer text than before\n");
    // Same size, and the modification time put back: only the change time tells.
    let mtime = std::fs::metadata(ws.0.join("same-size"))
        .unwrap()
        .modified()
        .unwrap();
    ws.write("same-size", "9876543210\n");
    let f = std::fs::File::options()
        .write(true)
        .open(ws.0.join("same-size"))
        .unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    std::fs::remove_file(ws.0.join("gone")).unwrap();
    std::fs::set_permissions(ws.0.join("exec"), std::fs::Permissions::from_mode(0o755)).unwrap();
    ws.write("src/deep/new.py", "x\n");
    ws.write("newdir/file", "x\n");
    let after = take(&ws.0);
    assert_eq!(
        changed(&ws.0, &before, &after),
        [
            file("edit", PathChange::Modified),
            file("same-size", PathChange::Modified),
            file("exec", PathChange::ModeChanged),
            file("gone", PathChange::Deleted),
            ("newdir".into(), PathChange::Created, PathKind::Directory),
            file("newdir/file", PathChange::Created),
            file("src/deep/new.py", PathChange::Created),
        ]
    );
    // Nothing done, nothing reported.
    assert!(changed(&ws.0, &after, &take(&ws.0)).is_empty());
}

#[test]
fn a_symlink_is_recorded_not_followed() {
    let ws = Scratch::new("link");
    let outside = Scratch::new("link-outside");
    outside.write("secret/a", "1\n");
    symlink(&outside.0, ws.0.join("out")).unwrap();
    let before = take(&ws.0);
    let paths: Vec<&[u8]> = before.entries.iter().map(|e| e.path.as_ref()).collect();
    assert_eq!(paths, [b"out".as_slice()], "only the link itself");
    tick();
    // Changes behind the link are not the workspace's.
    outside.write("secret/b", "2\n");
    outside.write("secret/a", "changed\n");
    assert!(changed(&ws.0, &before, &take(&ws.0)).is_empty());
    // The link itself retargeted is.
    std::fs::remove_file(ws.0.join("out")).unwrap();
    symlink("/etc", ws.0.join("out")).unwrap();
    assert_eq!(
        changed(&ws.0, &before, &take(&ws.0)),
        [("out".into(), PathChange::Modified, PathKind::Symlink)]
    );
}

#[test]
fn a_swapped_directory_shows_as_replaced_and_its_contents_with_it() {
    let ws = Scratch::new("swap");
    ws.write("d/f", "same\n");
    let before = take(&ws.0);
    tick();
    // Moved aside and remade with the same names and contents: the inodes tell.
    std::fs::rename(ws.0.join("d"), ws.0.join("d.old")).unwrap();
    ws.write("d/f", "same\n");
    assert_eq!(
        changed(&ws.0, &before, &take(&ws.0)),
        [
            ("d".into(), PathChange::Modified, PathKind::Directory),
            file("d/f", PathChange::Modified),
            ("d.old".into(), PathChange::Created, PathKind::Directory),
            file("d.old/f", PathChange::Created),
        ]
    );
    // Swapped for a symlink to a directory outside: the link shows, what it points to does not.
    let outside = Scratch::new("swap-outside");
    outside.write("f", "theirs\n");
    outside.write("g", "theirs\n");
    std::fs::remove_dir_all(ws.0.join("d")).unwrap();
    std::fs::remove_dir_all(ws.0.join("d.old")).unwrap();
    symlink(&outside.0, ws.0.join("d")).unwrap();
    assert_eq!(
        changed(&ws.0, &before, &take(&ws.0)),
        [
            ("d".into(), PathChange::Modified, PathKind::Symlink),
            file("d/f", PathChange::Deleted),
        ]
    );
}

#[test]
fn a_git_directorys_own_files_show_its_object_store_does_not() {
    let ws = Scratch::new("git");
    ws.write(".git/index", "DIRC one\n");
    ws.write(".git/HEAD", "ref: refs/heads/main\n");
    ws.write(".git/objects/ab/cdef", "blob\n");
    ws.write("vendor/lib/.git/index", "DIRC\n");
    let before = take(&ws.0);
    tick();
    // `git update-index` writes a new index and renames it into place.
    ws.write(".git/index.lock", "DIRC two, with a hidden file\n");
    std::fs::rename(ws.0.join(".git/index.lock"), ws.0.join(".git/index")).unwrap();
    ws.write(".git/objects/12/3456", "blob\n");
    ws.write(".git/objects/ab/cdef0", "blob\n");
    ws.write("vendor/lib/.git/index", "DIRC changed\n");
    assert_eq!(
        changed(&ws.0, &before, &take(&ws.0)),
        [
            file(".git/index", PathChange::Modified),
            file("vendor/lib/.git/index", PathChange::Modified),
        ]
    );
}

#[test]
fn past_a_bound_the_snapshot_says_what_it_left_out() {
    let ws = Scratch::new("bounds");
    for i in 0..10 {
        ws.write(&format!("f{i}"), "x");
    }
    ws.write("a/b/c/d/e", "x");
    let few = take_within(
        &ws.0,
        Bounds {
            entries: 5,
            depth: 128,
        },
    );
    assert_eq!(few.entries.len(), 5);
    assert!(
        few.incomplete
            .as_deref()
            .unwrap()
            .contains("stopped at 5 entries"),
        "{few:?}"
    );
    let shallow = take_within(
        &ws.0,
        Bounds {
            entries: 1000,
            depth: 2,
        },
    );
    assert!(shallow.entries.iter().any(|e| e.path.as_ref() == b"a/b/c"));
    assert!(
        !shallow
            .entries
            .iter()
            .any(|e| e.path.as_ref() == b"a/b/c/d")
    );
    assert!(
        shallow
            .incomplete
            .as_deref()
            .unwrap()
            .contains("deeper than 2 levels")
    );
    let all = take(&ws.0);
    let summary = summarise(std::slice::from_ref(&ws.0), true, &[few], &[all]);
    assert!(
        summary
            .incomplete
            .unwrap()
            .starts_with("before the turn: stopped at 5")
    );
    // A root that cannot be opened says so rather than report nothing changed.
    let missing = take(&ws.0.join("no-such-dir"));
    assert!(missing.incomplete.unwrap().contains("could not be read"));
}

#[test]
fn changes_to_what_existed_come_first_and_the_list_is_capped_not_the_count() {
    let ws = Scratch::new("order");
    ws.write("zz-existing.py", "x");
    let before = take(&ws.0);
    tick();
    for i in 0..MAX_CHANGES_LISTED + 5 {
        ws.write(&format!("a-new/{i:05}"), "x");
    }
    ws.write("zz-existing.py", "import os\n");
    let summary = summarise(std::slice::from_ref(&ws.0), true, &[before], &[take(&ws.0)]);
    // The new files, their directory, and the modified one.
    assert_eq!(summary.total as usize, MAX_CHANGES_LISTED + 5 + 2);
    assert_eq!(summary.paths.len(), MAX_CHANGES_LISTED);
    assert_eq!(summary.paths[0].path, "zz-existing.py");
    assert_eq!(summary.paths[0].change, PathChange::Modified);
}

#[test]
fn another_root_is_shown_by_its_absolute_path() {
    let ws = Scratch::new("roots-ws");
    let extra = Scratch::new("roots-extra");
    let roots = [ws.0.clone(), extra.0.clone()];
    let before: Vec<Snapshot> = roots.iter().map(|r| take(r)).collect();
    tick();
    ws.write("in-ws", "x");
    extra.write("in-extra", "x");
    let after: Vec<Snapshot> = roots.iter().map(|r| take(r)).collect();
    let paths: Vec<String> = summarise(&roots, true, &before, &after)
        .paths
        .into_iter()
        .map(|p| p.path)
        .collect();
    assert_eq!(
        paths,
        [
            extra.0.join("in-extra").display().to_string(),
            "in-ws".into()
        ]
    );
}

#[test]
fn only_tools_known_to_read_skip_the_walk() {
    for reads in [
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "write_todos",
        "read_skill",
    ] {
        assert!(!may_write(reads), "{reads}");
    }
    for writes in [
        "bash",
        "write_file",
        "str_replace",
        "task",
        "mcp__x__y",
        "made_up",
        "",
    ] {
        assert!(may_write(writes), "{writes}");
    }
}
