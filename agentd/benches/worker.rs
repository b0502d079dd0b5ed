//! Cost of a tool call through a worker (spawn, lockdown, run `true`, result) against a plain
//! `sh -c true` spawn from the same process, measured in one run and printed as a table.
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
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        std::process::exit(1)
    };

    let mut baseline = Vec::with_capacity(CALLS);
    let mut through_worker = Vec::with_capacity(CALLS);
    // Interleaved, so drift in machine load hits both series alike.
    for _ in 0..CALLS {
        let start = Instant::now();
        let ok = std::process::Command::new("sh")
            .args(["-c", "true"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        baseline.push(start.elapsed());
        assert!(ok, "sh -c true failed");

        let start = Instant::now();
        let tool = ToolRequest::Bash(BashRequest {
            command: "true".into(),
        });
        let result = rt.block_on(agentd::worker::run_tool(&worker, &spec, tool, |_| {}));
        through_worker.push(start.elapsed());
        match result {
            Ok(r) if r.exit_code == Some(0) => {}
            other => {
                eprintln!("a worker call failed: {other:?}");
                std::process::exit(1);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    let (b_med, b_p99) = stats(baseline);
    let (w_med, w_p99) = stats(through_worker);
    println!(
        "{:<44} {:>10} {:>10}",
        format!("{CALLS} calls each"),
        "median",
        "p99"
    );
    println!(
        "{:<44} {:>10.2?} {:>10.2?}",
        "baseline: spawn `sh -c true`", b_med, b_p99
    );
    println!(
        "{:<44} {:>10.2?} {:>10.2?}",
        "bash `true` through a tool-worker", w_med, w_p99
    );
    let ratio = w_med.as_secs_f64() / b_med.as_secs_f64();
    println!(
        "\nratio {ratio:.2} (goal ≤ 2.0: {}); median {w_med:.2?} (goal ≤ 3 ms: {})",
        if ratio <= 2.0 { "met" } else { "NOT met" },
        if w_med <= Duration::from_millis(3) {
            "met"
        } else {
            "NOT met"
        }
    );
}
