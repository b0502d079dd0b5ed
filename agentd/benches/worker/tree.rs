//! A large workspace, generated once in the bench's temp dir: what the walk for repositories
//! (`agentd::worker::repos`) and the per-repository protection cost on a real project's scale.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How a generated workspace is shaped.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Subdirectories of each directory, level by level from the root: `[20, 20, 37]` is 20 top
    /// directories of 20 each of 37 each, 15,220 directories in all.
    pub fanout: &'static [usize],
    /// Empty files in every directory (the root's included).
    pub files_per_dir: usize,
    /// Repositories below the root (vendored checkouts), at depths 1 to 4 in turn.
    pub nested: usize,
}

/// Under `cargo bench`: some 200,000 files in 15,000 directories, as a large project has.
pub const LARGE: Shape = Shape {
    fanout: &[20, 20, 37],
    files_per_dir: 13,
    nested: 20,
};

/// Under `cargo test --all-targets` (the smoke run): the same shape, ~2,000 files.
pub const SMOKE: Shape = Shape {
    fanout: &[4, 4, 8],
    files_per_dir: 13,
    nested: 20,
};

/// What was generated.
#[derive(Debug)]
pub struct Tree {
    pub dirs: usize,
    pub files: usize,
    /// The nested repositories (not the root's), absolute.
    pub nested: Vec<PathBuf>,
}

impl Tree {
    /// Files, rounded to thousands, for row names: "198k".
    pub fn size(&self) -> String {
        format!("{}k", (self.files + 500) / 1000)
    }
}

/// Generates `shape` at `ws` (which must not exist): a repository at the root made by
/// `git init`, its directories and files, and `shape.nested` repositories (`git init` too) at
/// depths 1–4, each a new directory `vendor-NN` holding its own files.
pub fn build(ws: &Path, shape: Shape) -> std::io::Result<Tree> {
    std::fs::create_dir_all(ws)?;
    git_init(ws)?;
    let mut tree = Tree {
        dirs: 1,
        files: 0,
        nested: Vec::new(),
    };
    fill(ws, shape.files_per_dir, &mut tree)?;
    let mut level = vec![ws.to_path_buf()];
    for &fanout in shape.fanout {
        let mut next = Vec::with_capacity(level.len() * fanout);
        for parent in &level {
            for i in 0..fanout {
                let dir = parent.join(format!("d{i:02}"));
                std::fs::create_dir(&dir)?;
                tree.dirs += 1;
                fill(&dir, shape.files_per_dir, &mut tree)?;
                next.push(dir);
            }
        }
        level = next;
    }
    for i in 0..shape.nested {
        // Depth 1 to 4 in turn: the checkout goes into a directory one level up, picked along
        // the tree so that the checkouts are spread out.
        let depth = 1 + i % 4;
        let mut dir = ws.to_path_buf();
        for fanout in shape.fanout.iter().take(depth - 1) {
            dir.push(format!("d{:02}", (i * 7 + depth) % fanout));
        }
        dir.push(format!("vendor-{i:02}"));
        std::fs::create_dir(&dir)?;
        tree.dirs += 1;
        fill(&dir, shape.files_per_dir, &mut tree)?;
        git_init(&dir)?;
        tree.nested.push(dir);
    }
    Ok(tree)
}

/// `count` empty files in `dir`.
fn fill(dir: &Path, count: usize, tree: &mut Tree) -> std::io::Result<()> {
    for i in 0..count {
        std::fs::File::create(dir.join(format!("f{i:02}.rs")))?;
        tree.files += 1;
    }
    Ok(())
}

/// `git init` in `dir`, with git's built-in defaults only (no system or user config): the
/// `.git` a clone has, hooks' samples and all.
fn git_init(dir: &Path) -> std::io::Result<()> {
    let status = Command::new("git")
        .args(["-c", "init.defaultBranch=main", "init", "-q"])
        .arg(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "git init {} failed: {status}",
            dir.display()
        )))
    }
}
