//! Rows for a large workspace ([`super::tree`]): the pooled call there, held to the same goals,
//! and the pieces that grow with the tree — the walk for repositories, cold and warm; the check
//! after a call; the scans for protected paths the pool's take and the check make — to say where
//! the time goes.

use super::tree::{self, Tree};
use super::{Row, Sample, Summary, fail, measure, pooled_call};
use agentd::worker::WorkerPool;
use agentd::worker::protect::Baseline;
use agentd::worker::repos::RepoWalk;
use protocol::worker::SandboxSpec;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tool_worker::lockdown::mounts::view::{protected_names, protected_now};

/// Row names the walk's summary looks for.
const COLD: &str = "part: repo walk of it, cold (a session's first)";
const WARM: &str = "part: repo walk of it, warm (nothing changed)";

/// The generated workspace and what measures calls in it.
pub struct Large {
    pub ws: PathBuf,
    tree: Tree,
    spec: SandboxSpec,
    pool: WorkerPool,
    /// A session's baseline there, for the check after a call on its own.
    baseline: Baseline,
}

impl Large {
    /// Generates a tree of `shape` under `root`, in `name`-ws, and a pool of one worker for it.
    pub fn set_up(root: &Path, name: &str, worker: &Path, shape: tree::Shape) -> Large {
        let (ws, tmp) = (
            root.join(format!("{name}-ws")),
            root.join(format!("{name}-tmp")),
        );
        let started = Instant::now();
        let tree = tree::build(&ws, shape)
            .and_then(|t| std::fs::create_dir_all(&tmp).map(|()| t))
            .unwrap_or_else(|e| fail(&format!("cannot generate the {name} workspace: {e}")));
        println!(
            "{name} workspace: {} files in {} directories, a repository at its root (git init) and {} below it at depths 1-4; generated in {:.1} s",
            tree.files,
            tree.dirs,
            tree.nested.len(),
            started.elapsed().as_secs_f64()
        );
        // The walk must see what was made, else the rows measure something else.
        let found = RepoWalk::default().refresh([ws.as_path()]);
        let mut want = tree.nested.clone();
        want.sort();
        if found.repositories != want || !found.cut.is_empty() {
            fail(&format!(
                "the walk of the {name} workspace found {:?}, cut at {:?}; made {want:?}",
                found.repositories, found.cut
            ));
        }
        let spec = agentd::worker::default_sandbox(ws.clone(), tmp, None);
        Large {
            pool: WorkerPool::new(worker.to_path_buf(), spec.clone(), 1),
            baseline: Baseline::now(&spec),
            ws,
            tree,
            spec,
        }
    }

    /// The pooled call in this workspace, measured as the other pooled rows are.
    pub fn call_row<'a>(&'a self, rt: &'a tokio::runtime::Runtime) -> Row<'a> {
        Row::call(
            format!(
                "bash `true`, pooled, {}-file ws, {} repos",
                self.tree.size(),
                self.tree.nested.len() + 1
            ),
            move || pooled_call(rt, &self.pool),
        )
    }

    /// The pieces of a call there that grow with the tree, each on its own, in this process.
    pub fn part_rows(&self) -> Vec<Row<'_>> {
        let ws = self.ws.as_path();
        let repos = self.tree.nested.len();
        let mut warm = RepoWalk::default();
        warm.refresh([ws]);
        // What the pool's take and the check scan: the spec with the walk's repositories.
        let spec = self.baseline.spec(&self.spec);
        let scanned = spec.clone();
        vec![
            Row::part(COLD, move || {
                timed(|| {
                    let walked = RepoWalk::default().refresh([ws]);
                    assert_eq!(walked.repositories.len(), repos, "{walked:?}");
                })
            }),
            Row::part(WARM, move || {
                timed(|| {
                    let walked = warm.refresh([ws]);
                    assert_eq!(walked.listed, 0, "the tree changed: {walked:?}");
                })
            }),
            Row::part("part: check after a call (warm walk + scan)", move || {
                timed(|| {
                    let notes = self.baseline.check(&spec);
                    assert!(notes.is_empty(), "the check moved something: {notes:?}");
                })
            }),
            Row::part(
                format!("part: protected_names, {} repositories", repos + 1),
                {
                    let spec = scanned.clone();
                    move || timed(|| assert!(!protected_names(&spec).is_empty()))
                },
            ),
            Row::part(
                format!("part: protected_now (pool's take), {} repos", repos + 1),
                move || timed(|| assert!(!protected_now(&scanned).is_empty())),
            ),
        ]
    }

    /// Directories the walk visits.
    pub fn dirs(&self) -> usize {
        self.tree.dirs
    }
}

/// `f`'s wall and CPU time.
fn timed(f: impl FnOnce()) -> Sample {
    measure(|| {
        let start = Instant::now();
        f();
        start
    })
}

/// One line on the walk: what a cold walk and a warm re-walk of the large workspace cost, in all
/// and per directory.
pub fn report_walk(results: &[(String, bool, Summary)], dirs: usize) {
    let find = |name: &str| results.iter().find(|(n, _, _)| n == name).map(|r| &r.2);
    let (Some(cold), Some(warm)) = (find(COLD), find(WARM)) else {
        return;
    };
    let per_dir = |d: Duration| d.as_secs_f64() * 1e6 / dirs.max(1) as f64;
    println!(
        "walk of the generated workspace, {dirs} directories: cold {:.2} ms wall median, {:.2} ms cpu mean ({:.2} µs cpu per directory); warm {:.2} ms wall, {:.2} ms cpu ({:.2} µs per directory)",
        cold.wall_med.as_secs_f64() * 1e3,
        cold.cpu_mean.as_secs_f64() * 1e3,
        per_dir(cold.cpu_mean),
        warm.wall_med.as_secs_f64() * 1e3,
        warm.cpu_mean.as_secs_f64() * 1e3,
        per_dir(warm.cpu_mean),
    );
}
