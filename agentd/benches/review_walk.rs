//! Cost of a turn's review on a tree of 200,000 files (2,000 directories of 100, some nested):
//! one snapshot (`getdents` + `fstatat` per entry, no symlink followed), the comparison of two,
//! and as a baseline measured in the same run, the naive walk (`std::fs::read_dir` +
//! `symlink_metadata` by path) that the review must not be slower than by much. A turn that
//! writes takes two snapshots and one comparison. Prints the median of 5 runs of each, with the
//! page cache warm (the tree was just written), in one table.
//!
//! `cargo bench -p agentd --bench review_walk [-- FILES]` (default 200000; 2,000 in the smoke
//! run of `cargo test --all-targets`). The tree is made in
//! a fresh directory under `$TMPDIR` and removed afterwards.

use agentd::review::{diff, snapshot};
use std::path::Path;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The median time of `runs` calls of `f` (at least one), and what the last returned.
fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let start = Instant::now();
    let mut last = f();
    let mut times = vec![start.elapsed()];
    for _ in 1..runs {
        let start = Instant::now();
        last = f();
        times.push(start.elapsed());
    }
    (median(times), last)
}

/// `files` files, 100 per directory, the directories two levels deep (`dNN/eNNN`).
fn make_tree(root: &Path, files: usize) -> std::io::Result<()> {
    for i in 0..files.div_ceil(100) {
        let dir = root.join(format!("d{:02}/e{i:04}", i % 50));
        std::fs::create_dir_all(&dir)?;
        for j in 0..100.min(files - i * 100) {
            std::fs::write(dir.join(format!("f{j:03}.rs")), b"fn main() {}\n")?;
        }
    }
    Ok(())
}

/// The baseline: a walk by paths, as a first attempt would write it.
fn naive(dir: &Path, count: &mut usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            *count += 1;
            if meta.is_dir() {
                naive(&path, count);
            }
        }
    }
}

fn main() -> std::io::Result<()> {
    // `cargo test --all-targets` runs a bench once as a smoke test, without `--bench`: a small
    // tree then, so the suite does not pay for 200,000 files.
    let benching = std::env::args().any(|a| a == "--bench");
    let files: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(if benching { 200_000 } else { 2_000 });
    let root = std::env::temp_dir().join(format!("agentd-review-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root)?;
    let made = Instant::now();
    make_tree(&root, files)?;
    println!(
        "tree: {files} files under {} (made in {:.1?})",
        root.display(),
        made.elapsed()
    );
    let (walk, before) = time(5, || snapshot::take(&root));
    let after = snapshot::take(&root);
    let (compare, found) = time(5, || diff::compare(&before, &after));
    let (baseline, counted) = time(5, || {
        let mut n = 0;
        naive(&root, &mut n);
        n
    });
    assert!(found.is_empty(), "nothing changed, nothing found");
    assert_eq!(before.entries.len(), counted, "both walks see every entry");
    println!("{:<40} {:>10} {:>12}", "", "entries", "median");
    println!(
        "{:<40} {:>10} {:>12.1?}",
        "snapshot (getdents + fstatat)",
        before.entries.len(),
        walk
    );
    println!(
        "{:<40} {:>10} {:>12.1?}",
        "compare two snapshots",
        before.entries.len(),
        compare
    );
    println!(
        "{:<40} {:>10} {:>12.1?}",
        "baseline: read_dir + symlink_metadata", counted, baseline
    );
    println!(
        "{:<40} {:>10} {:>12.1?}",
        "one writing turn (2 snapshots + compare)",
        "",
        walk * 2 + compare
    );
    std::fs::remove_dir_all(&root)
}
