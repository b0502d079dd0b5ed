//! Cost of a tool call through a worker against a plain `sh -c true` spawn from the same process,
//! measured in one run and printed as a table: a fresh worker (spawn, lockdown, run `true`,
//! result) and a worker from the pool, locked down before the call as it is while the model
//! thinks (request, run, result, worker reaped).
//!
//! `cargo bench -p agentd --bench worker` (build the binaries first: `cargo build --release --bins`).
//! Goal on the 2-core build machine: ratio ≤ 2.0 and median ≤ 3 ms.

use protocol::worker::*;
use std::time::{Duration, Instant};

const CALLS: usize = 500;

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    (
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
    )
}

fn main() {
    let Some(worker) = agentd::worker::locate_worker().or_else(|| {
        std::env::current_dir()
            .ok()
            .map(|d| d.join("../target/release/tool-worker"))
            .filter(|p| p.is_file())
    }) else {
        eprintln!("the tool-worker binary is not built: run `cargo build --release --bins`");
        std::process::exit(1);
    };
    let root = std::env::temp_dir().join(format!("agentd-bench-{}", std::process::id()));
    let (ws, tmp) = (root.join("ws"), root.join("tmp"));
    if std::fs::create_dir_all(&ws)
        .and_then(|_| std::fs::create_dir_all(&tmp))
        .is_err()
    {
        std::process::exit(1);
    }
    let spec = agentd::worker::default_sandbox(ws, tmp.clone(), None);
    let pool = agentd::worker::WorkerPool::new(worker.clone(), spec.clone(), 1);
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        std::process::exit(1)
    };
    let bash_true = || {
        ToolRequest::Bash(BashRequest {
            command: "true".into(),
        })
    };
    let check = |result: Result<ToolResult, agentd::worker::WorkerError>| match result {
        Ok(r) if r.exit_code == Some(0) => {}
        other => {
            eprintln!("a worker call failed: {other:?}");
            std::process::exit(1);
        }
    };

    let mut baseline = Vec::with_capacity(CALLS);
    let mut cold = Vec::with_capacity(CALLS);
    let mut pooled = Vec::with_capacity(CALLS);
    // Interleaved, so drift in machine load hits every series alike.
    for _ in 0..CALLS {
        let start = Instant::now();
        let ok = std::process::Command::new("sh")
            .args(["-c", "true"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        baseline.push(start.elapsed());
        assert!(ok, "sh -c true failed");

        // Cold: spawn, lockdown, run, result, all in the call.
        let start = Instant::now();
        let result = rt.block_on(agentd::worker::run_tool(
            &worker,
            &spec,
            bash_true(),
            |_| {},
        ));
        cold.push(start.elapsed());
        check(result);

        // Pooled: the worker was started and locked down before the call (as while the model
        // thinks); the call is request → run → result → worker reaped and its cgroup removed.
        rt.block_on(async {
            pool.warm_up();
            pool.settled().await;
        });
        if pool.ready() != 1 {
            eprintln!("the pool did not get a ready worker");
            std::process::exit(1);
        }
        let start = Instant::now();
        let result = rt.block_on(pool.run(bash_true(), None, |_| {}));
        pooled.push(start.elapsed());
        check(result);
    }
    drop(pool);
    let _ = std::fs::remove_dir_all(&root);
    let (b_med, b_p99) = stats(baseline);
    let (c_med, c_p99) = stats(cold);
    let (p_med, p_p99) = stats(pooled);
    println!(
        "{:<52} {:>10} {:>10} {:>8}",
        format!("{CALLS} calls each"),
        "median",
        "p99",
        "ratio"
    );
    let row = |name: &str, med: Duration, p99: Duration| {
        println!(
            "{name:<52} {med:>10.2?} {p99:>10.2?} {:>8.2}",
            med.as_secs_f64() / b_med.as_secs_f64()
        );
    };
    row("baseline: spawn `sh -c true`", b_med, b_p99);
    row(
        "bash `true`, fresh worker (spawn+lockdown+run)",
        c_med,
        c_p99,
    );
    row("bash `true`, worker locked down ahead (pool)", p_med, p_p99);
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    for (name, med) in [("fresh worker", c_med), ("pool", p_med)] {
        let ratio = med.as_secs_f64() / b_med.as_secs_f64();
        println!(
            "{name}: ratio {ratio:.2} (goal ≤ 2.0: {}); median {med:.2?} (goal ≤ 3 ms: {})",
            verdict(ratio <= 2.0),
            verdict(med <= Duration::from_millis(3))
        );
    }
}
