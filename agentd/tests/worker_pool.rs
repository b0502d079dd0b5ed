//! The pool of workers locked down ahead of their call: each call still gets a fresh, locked-down
//! worker with a temp dir of its own; a worker that died while waiting is never used; a short
//! call timeout is honoured by a worker locked down with a longer one; and dropping the pool
//! leaves no process and no temp dir behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::worker::{WorkerError, WorkerPool};
use protocol::worker::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod common;
use common::{Dirs as Fixture, worker};

impl Fixture {
    fn pool(&self, size: usize) -> WorkerPool {
        self.pool_with(worker(), size)
    }

    fn pool_with(&self, worker: PathBuf, size: usize) -> WorkerPool {
        WorkerPool::new(worker, self.spec(), size)
    }

    /// The workers waiting in this fixture's pool: our descendants (forked by our worker zygote,
    /// our child, or executed by us) that work in the workspace — a worker is born the init of
    /// its namespaces and enters the workspace — and whose parent does not (a tool's process is
    /// the child of one that does). Never the zygote, which is not in the workspace: a test
    /// that kills a waiting worker must not kill every worker of the process.
    fn waiting_workers(&self) -> Vec<i32> {
        let me = std::process::id() as i32;
        let all: Vec<(i32, Option<i32>)> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .map(|pid| (pid, parent_of(pid)))
            .collect();
        let parent = |pid: i32| all.iter().find(|(p, _)| *p == pid).and_then(|(_, pp)| *pp);
        let descends_from_me = |pid: i32| {
            let mut at = parent(pid);
            for _ in 0..4 {
                match at {
                    Some(p) if p == me => return true,
                    Some(p) => at = parent(p),
                    None => return false,
                }
            }
            false
        };
        let in_ws = |pid: i32| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == self.ws)
        };
        all.iter()
            .map(|(pid, _)| *pid)
            .filter(|pid| descends_from_me(*pid) && in_ws(*pid))
            .filter(|pid| !parent(*pid).is_some_and(in_ws))
            .collect()
    }

    fn call_dirs(&self) -> Vec<String> {
        std::fs::read_dir(&self.tmp)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }
}

/// The parent of `pid`, from `/proc/PID/stat`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces): state, ppid, …
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn bash(command: &str) -> ToolRequest {
    ToolRequest::Bash(BashRequest {
        command: command.into(),
    })
}

async fn warm(pool: &WorkerPool) {
    pool.warm_up();
    pool.settled().await;
}

fn field<'a>(content: &'a str, key: &str) -> &'a str {
    content
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no `{key}` in {content:?}"))
}

#[tokio::test]
async fn each_pooled_call_gets_its_own_locked_down_worker_and_temp_dir() {
    let f = Fixture::new("pool-fresh");
    let pool = f.pool(1);
    warm(&pool).await;
    assert_eq!(pool.ready(), 1, "one worker waits, locked down");
    assert_eq!(f.waiting_workers().len(), 1);

    let probe = "echo tmp=$TMPDIR; ls -A \"$TMPDIR\"; touch \"$TMPDIR/mark\"; \
                 grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status";
    let first = pool.run(bash(probe), None, |_| {}).await.unwrap();
    assert_eq!(first.lockdown.landlock, LandlockStatus::FullyEnforced);
    assert!(first.lockdown.seccomp && first.lockdown.no_new_privs);
    assert_eq!(field(&first.content, "Seccomp:"), "2", "{}", first.content);
    assert_eq!(field(&first.content, "NoNewPrivs:"), "1");
    assert_eq!(field(&first.content, "CapEff:"), "0000000000000000");
    let first_tmp = field(&first.content, "tmp=").to_owned();
    assert!(
        first_tmp.starts_with(f.tmp.to_str().unwrap()),
        "{first_tmp}"
    );

    pool.settled().await;
    let second = pool.run(bash(probe), None, |_| {}).await.unwrap();
    let second_tmp = field(&second.content, "tmp=").to_owned();
    assert_ne!(first_tmp, second_tmp, "each call has its own temp dir");
    assert!(
        !second.content.contains("mark"),
        "nothing of the first call is left for the second: {}",
        second.content
    );
    assert!(
        !Path::new(&first_tmp).exists(),
        "a call's temp dir goes with it"
    );
}

#[tokio::test]
async fn a_call_may_shorten_the_timeout_the_worker_was_locked_down_with() {
    let f = Fixture::new("pool-timeout");
    let pool = f.pool(1);
    warm(&pool).await;
    let start = Instant::now();
    let r = pool.run(bash("sleep 8"), Some(500), |_| {}).await.unwrap();
    assert!(r.timed_out, "{r:?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn a_waiting_worker_that_died_is_not_used() {
    let f = Fixture::new("pool-died");
    let pool = f.pool(1);
    warm(&pool).await;
    let waiting = f.waiting_workers();
    assert_eq!(waiting.len(), 1);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(waiting[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let r = pool
        .run(bash("echo still works"), None, |_| {})
        .await
        .unwrap();
    assert_eq!(r.content, "still works\n");
}

#[tokio::test]
async fn a_pool_that_cannot_start_workers_fails_each_call_and_stops_refilling() {
    let f = Fixture::new("pool-broken");
    let pool = f.pool_with(f.root.join("no-such-worker"), 2);
    warm(&pool).await;
    assert_eq!(pool.ready(), 0);
    for _ in 0..2 {
        match pool.run(bash("true"), None, |_| {}).await {
            Err(WorkerError::Spawn { path, .. }) => assert!(path.ends_with("no-such-worker")),
            other => panic!("expected a spawn error, got {other:?}"),
        }
        pool.settled().await;
    }
    assert!(f.call_dirs().is_empty(), "{:?}", f.call_dirs());
}

#[tokio::test]
async fn dropping_the_pool_kills_waiting_workers_and_removes_their_temp_dirs() {
    let f = Fixture::new("pool-drop");
    let pool = f.pool(2);
    warm(&pool).await;
    assert_eq!(pool.ready(), 2);
    assert_eq!(f.waiting_workers().len(), 2);
    assert_eq!(f.call_dirs().len(), 2);
    drop(pool);
    std::thread::sleep(Duration::from_millis(100));
    assert!(f.waiting_workers().is_empty());
    assert!(f.call_dirs().is_empty(), "{:?}", f.call_dirs());
}

#[tokio::test]
async fn a_pooled_worker_refuses_what_a_fresh_one_refuses() {
    let f = Fixture::new("pool-confined");
    std::fs::write(f.root.join("outside.txt"), "OUTSIDE-SECRET\n").unwrap();
    let pool = f.pool(1);
    warm(&pool).await;
    assert_eq!(pool.ready(), 1);
    let attempt = "cat ../outside.txt; echo x > ../written.txt; echo x > /tmp/agentd-pool-shared; \
                   echo ok > inside.txt && cat inside.txt";
    let r = pool.run(bash(attempt), None, |_| {}).await.unwrap();
    assert!(!r.content.contains("OUTSIDE-SECRET"), "{}", r.content);
    assert!(!f.root.join("written.txt").exists());
    assert!(!Path::new("/tmp/agentd-pool-shared").exists());
    assert!(
        r.content.ends_with("ok\n"),
        "a plain command in the workspace still works: {}",
        r.content
    );
}
