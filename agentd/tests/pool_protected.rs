//! Protected paths and the pool: a worker waiting in the pool was locked down before the calls
//! ahead of it ran, so a protected path one of them created (`git init` making `.git/hooks` and
//! `.git/config`) must still be read-only for the next call — the pool discards a worker whose
//! view is out of date instead of serving the call with it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::worker::WorkerPool;
use protocol::worker::*;

mod common;
use common::{Dirs, worker};

fn bash(command: &str) -> ToolRequest {
    ToolRequest::Bash(BashRequest {
        command: command.into(),
    })
}

#[tokio::test]
async fn a_protected_path_created_by_one_call_is_read_only_for_the_next() {
    let f = Dirs::new("pool-protected");
    let pool = WorkerPool::new(worker(), f.spec(), 2);
    pool.warm_up();
    pool.settled().await;
    assert_eq!(
        pool.ready(),
        2,
        "both workers locked down before .git exists"
    );

    let first = pool
        .run(bash("git init -q && ls -d .git/hooks"), None, |_| {})
        .await
        .unwrap();
    assert_eq!(first.exit_code, Some(0), "{first:?}");
    assert!(first.lockdown.protected.is_empty(), "{first:?}");

    let second = pool
        .run(
            bash("echo 'touch /tmp/pwned' > .git/hooks/pre-commit; echo '[core] hooksPath = x' >> .git/config; echo done"),
            None,
            |_| {},
        )
        .await
        .unwrap();
    assert!(second.content.contains("done"), "{second:?}");
    assert!(
        !f.ws.join(".git/hooks/pre-commit").exists(),
        "a worker locked down before `git init` served the call: {second:?}"
    );
    assert!(
        !std::fs::read_to_string(f.ws.join(".git/config"))
            .unwrap()
            .contains("hooksPath"),
        "{second:?}"
    );
    let ws = f.ws.canonicalize().unwrap();
    assert!(
        second.lockdown.protected.contains(&ws.join(".git/hooks"))
            && second.lockdown.protected.contains(&ws.join(".git/config")),
        "{:?}",
        second.lockdown.protected
    );
}

/// A protected file replaced by a rename outside the worker's namespace (git writes its config
/// through `config.lock`) takes the read-only mount with it in a worker that waits: the pool
/// sees the file is another one than the worker mounted and serves the call with a fresh worker.
#[tokio::test]
async fn a_protected_file_replaced_by_a_rename_after_lockdown_is_protected_for_the_call() {
    let f = Dirs::new("pool-renamed");
    std::fs::create_dir_all(f.ws.join(".git/hooks")).unwrap();
    std::fs::write(f.ws.join(".git/config"), "[core]\n").unwrap();
    let pool = WorkerPool::new(worker(), f.spec(), 1);
    pool.warm_up();
    pool.settled().await;
    assert_eq!(pool.ready(), 1);
    // As git does: a new file renamed over the protected one, after the worker mounted it.
    std::fs::write(f.ws.join(".git/config.lock"), "[core]\n\tbare = false\n").unwrap();
    std::fs::rename(f.ws.join(".git/config.lock"), f.ws.join(".git/config")).unwrap();
    let call = pool
        .run(
            bash("echo '[core] hooksPath = x' >> .git/config; echo done"),
            None,
            |_| {},
        )
        .await
        .unwrap();
    assert!(call.content.contains("done"), "{call:?}");
    assert!(call.content.contains("Read-only file system"), "{call:?}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n",
        "{call:?}"
    );
}
