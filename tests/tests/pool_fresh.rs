//! A warm worker serves a call only while it is still fresh: after `mv ws ws.old && mkdir ws`
//! the worker that locked down in the old directory would run there, so it is discarded and a
//! fresh one serves the call in the new directory. In-process (the pool itself), and through
//! `agent run` as root and as the unprivileged test user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::worker::WorkerPool;
use agentd::worker::tmp::{Owner, PrivateDir};
use agentd_e2e::both;
use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use agentd_e2e::{As, Dir, agent_against, give, processes_in};
use protocol::worker::{BashRequest, ToolRequest};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// A pool of one for `ws`, call dirs under a private root.
fn pool(ws: &Path, root: &PrivateDir) -> WorkerPool {
    let mut spec = agentd::worker::default_sandbox(ws.to_owned(), root.path().to_owned(), None);
    spec.limits.timeout_ms = 10_000;
    // A test binary hosts no worker: the built one, explicitly.
    let worker = agentd_e2e::binary("tool-worker");
    WorkerPool::new(worker, spec, 1)
}

async fn bash(pool: &WorkerPool, command: &str) -> String {
    let request = ToolRequest::Bash(BashRequest {
        command: command.into(),
    });
    let result = pool.run(request, None, |_| {}).await.unwrap();
    assert!(!result.is_error, "{}", result.content);
    result.content
}

const PROBE: &str = "echo made > here.txt && id -u && stat -c 'tmp=%a:%u' \"$TMPDIR\"";

#[tokio::test]
async fn a_pool_serves_a_replaced_workspace_with_a_fresh_worker() {
    let base = Dir::new("pool-fresh", As::Root);
    let ws = base.0.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let root = PrivateDir::create(&base.0, "root-", Owner::current()).unwrap();
    let pool = pool(&ws, &root);
    // Sanity: a warm worker serves a call in the workspace, in a private temp dir.
    pool.warm_up();
    pool.settled().await;
    assert_eq!(pool.ready(), 1);
    let out = bash(&pool, PROBE).await;
    let uid = Owner::current().uid;
    assert!(out.contains(&format!("tmp=700:{uid}")), "{out}");
    std::fs::remove_file(ws.join("here.txt")).unwrap();
    // A worker is warm again; now the workspace is renamed and another directory put in its place.
    pool.settled().await;
    assert_eq!(pool.ready(), 1);
    let old = base.0.join("ws.old");
    std::fs::rename(&ws, &old).unwrap();
    std::fs::create_dir(&ws).unwrap();
    let out = bash(&pool, PROBE).await;
    assert!(out.contains(&format!("tmp=700:{uid}")), "{out}");
    assert!(
        ws.join("here.txt").exists(),
        "the call ran in the new directory"
    );
    assert!(
        !old.join("here.txt").exists(),
        "the call ran in the replaced one"
    );
}

/// Tool-workers whose working directory is `dir`.
fn workers_in(dir: &Path) -> usize {
    processes_in(dir)
        .iter()
        .filter(|p| p.contains("tool-worker"))
        .count()
}

// `agent run`: while the first call runs, the pool warms the next worker in the workspace; the
// workspace is then replaced; the second call must run in the new directory.
both!(
    agent_run_serves_a_replaced_workspace_with_a_fresh_worker,
    |who| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let call = |id: &str, command: &str| {
            let args = json!({ "command": command }).to_string();
            Reply::stream(vec![
                openai::tool(0, Some(id), Some("bash"), &args),
                openai::finish("tool_calls"),
            ])
        };
        let mock = rt.block_on(MockLlm::start(vec![
            call("call_1", "touch started && sleep 3"),
            call("call_2", PROBE),
            Reply::stream(vec![openai::text("done"), openai::finish("stop")]),
        ]));
        let base = Dir::new("pool-fresh-run", who);
        let ws = base.0.join("ws");
        std::fs::create_dir(&ws).unwrap();
        give(&ws, who);
        let config = base.0.join("config.toml");
        std::fs::write(&config, "").unwrap();
        let child = agent_against(who, &base.0, &mock.url())
            .args([
                "run",
                "-p",
                "go",
                "--dangerously-skip-permissions",
                "--workspace",
            ])
            .arg(&ws)
            .arg("--config")
            .arg(&config)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The first call is running (it made `started`) and the next worker waits, locked down, in
        // the same directory: two tool-workers there.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !(ws.join("started").exists() && workers_in(&ws) >= 2) {
            assert!(
                Instant::now() < deadline,
                "no warm worker in {}",
                ws.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let old = base.0.join("ws.old");
        std::fs::rename(&ws, &old).unwrap();
        std::fs::create_dir(&ws).unwrap();
        give(&ws, who);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        // Sanity: the first call ran in the original directory, now ws.old.
        assert!(old.join("started").exists());
        assert!(
            ws.join("here.txt").exists(),
            "the second call ran in the new directory: {stderr}"
        );
        assert!(
            !old.join("here.txt").exists(),
            "the second call ran in the replaced one"
        );
    }
);
