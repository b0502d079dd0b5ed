//! `agentd serve` under N concurrent sessions (1, 10, 50, 100), each one turn of 20 tool calls
//! (`bash: true`, through the policy, a pooled worker and the sandbox) against an instant mock
//! model over HTTP, every session on its own client connection. One table: tool calls per second,
//! p50/p99 step latency, CPU time per call beside it, daemon RSS idle, with N idle sessions and
//! at peak under load; and the same 20 steps run in-process by `agent run` as the baseline row.
//!
//! * A step, as a client sees it: from the message sent (or the previous call's
//!   `tool_call_finished` event) to the next `tool_call_finished` — the model round trip, the
//!   policy check, the worker, the result on disk and the event to the client.
//! * CPU: user + sys of the daemon and of its zygote (whose children, the workers, it reaps, so
//!   their time is in its `cutime`/`cstime`), from `/proc/PID/stat`, over the row. The bench
//!   itself (clients and mock) is not counted. For `agent run`: `RUSAGE_CHILDREN` around it,
//!   the bench a subreaper so that its zygote (and so every worker) is reaped, and counted, too.
//! * RSS: `VmRSS` of the daemon alone, idle, then per idle session (the growth with N idle
//!   sessions, divided by N), and its `VmHWM` during the run (reset through `clear_refs` first).
//!   Workers are processes of their own, shown apart ("workers"): the sum of the PSS of the
//!   zygote and every worker with N idle sessions (each session keeps one ready), PSS because
//!   they share most of one binary's pages.
//!
//! `cargo build --release --bins && cargo bench -p agentd-e2e --bench daemon_load` (a
//! `AGENTD_BENCH_SESSIONS=1,10` list runs fewer rows). Goals on the 2-core build machine: ≥ 200
//! tool calls/s at 50 sessions, p99 step ≤ 50 ms, idle RSS ≤ 15 MiB, ≤ 1 MiB per idle session.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench: a panic is the report

#[path = "../tests/daemon/mod.rs"]
mod daemon;

use agentd_e2e::mock_llm::openai::{answer_reply, bash_reply};
use agentd_e2e::mock_llm::{MockLlm, Reply};
use agentd_e2e::{As, Dir, agent_against};
use daemon::{Client, Daemon, Place};
use protocol::Encoding;
use protocol::control::ResponseBody;
use protocol::event::Event;
use protocol::ids::SessionId;
use std::io::BufRead;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Tool calls per session.
const CALLS: usize = 20;

/// All sessions are the bench's own uid: it may hold one connection per session.
const CONFIG: &str = "[server]\nmax_sessions_per_uid = 1000\nmax_connections_per_uid = 1000\n\n[policy]\nbash = [{ pattern = \"true\", action = \"allow\" }]\n";

/// The instant model: a `bash: true` call while the conversation has fewer than [`CALLS`]
/// results, then the answer.
fn reply(body: &serde_json::Value) -> Reply {
    let results = body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
    if results < CALLS {
        bash_reply(&format!("call_{results}"), "true")
    } else {
        answer_reply("done")
    }
}

fn sessions_to_run() -> Vec<usize> {
    std::env::var("AGENTD_BENCH_SESSIONS")
        .ok()
        .map(|l| l.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 10, 50, 100])
}

/// A `/proc/PID/status` field, kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A process's proportional set size, kB: its private pages plus its share of those it shares
/// (the zygote and its workers share most of one binary's pages).
fn pss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// utime + stime (+ cutime + cstime when `children`), in clock ticks.
fn cpu_ticks(pid: u32, children: bool) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    // After the comm: state is field 3; utime 14, stime 15, cutime 16, cstime 17.
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let own = f.first().copied().unwrap_or(0) + f.get(1).copied().unwrap_or(0);
    if children {
        own + f.get(2).copied().unwrap_or(0) + f.get(3).copied().unwrap_or(0)
    } else {
        own
    }
}

/// Every process below `pid`.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.filter_map(Result::ok) {
            let list = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in list.split_whitespace().filter_map(|c| c.parse().ok()) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// CPU of the daemon and the zygote (with the workers it reaped), in ms.
fn daemon_cpu_ms(pid: u32) -> f64 {
    let zygotes: u64 = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .map(|c| cpu_ticks(c, true))
        .sum();
    ticks_ms(cpu_ticks(pid, true) + zygotes)
}

fn ticks_ms(ticks: u64) -> f64 {
    // SAFETY: sysconf reads a constant of the system; no memory is touched.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    ticks as f64 * 1000.0 / hz as f64
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// One row of the table.
struct Row {
    label: String,
    calls: usize,
    wall: Duration,
    steps: Vec<Duration>,
    cpu_ms: f64,
    /// The bench's own CPU (the mock model and the clients), ms.
    bench_ms: f64,
    idle_kb: Option<u64>,
    per_session_kb: Option<f64>,
    workers_kb: Option<u64>,
    peak_kb: u64,
    load: String,
}

fn print_header() {
    println!(
        "{:<22} {:>6} {:>9} {:>8} {:>8} {:>9} {:>9} {:>10} {:>11} {:>10} {:>10}  load (1, 5 min)",
        "",
        "calls",
        "calls/s",
        "p50 ms",
        "p99 ms",
        "CPU/call",
        "bench CPU",
        "RSS idle",
        "+/idle sess",
        "workers PSS",
        "RSS peak"
    );
}

fn print_row(mut row: Row) {
    row.steps.sort();
    let opt_mib = |v: Option<u64>| v.map_or("-".to_owned(), |kb| format!("{:.1} MiB", mib(kb)));
    println!(
        "{:<22} {:>6} {:>9.0} {:>8.1} {:>8.1} {:>7.2}ms {:>7.2}ms {:>10} {:>11} {:>10} {:>6.1} MiB  {}",
        row.label,
        row.calls,
        row.calls as f64 / row.wall.as_secs_f64(),
        percentile(&row.steps, 50).as_secs_f64() * 1000.0,
        percentile(&row.steps, 99).as_secs_f64() * 1000.0,
        row.cpu_ms / row.calls as f64,
        row.bench_ms / row.calls as f64,
        opt_mib(row.idle_kb),
        row.per_session_kb
            .map_or("-".to_owned(), |kb| format!("{kb:.0} KiB")),
        opt_mib(row.workers_kb),
        mib(row.peak_kb),
        row.load
    );
}

/// user + sys of this process (every thread: the mock model and the clients), ms.
fn own_cpu_ms() -> f64 {
    let u = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF).unwrap();
    usage_ms(&u)
}

fn usage_ms(u: &nix::sys::resource::Usage) -> f64 {
    let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 * 1000.0 + v.tv_usec() as f64 / 1000.0;
    t(u.user_time()) + t(u.system_time())
}

fn load() -> String {
    let l = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    l.split_whitespace().take(2).collect::<Vec<_>>().join(", ")
}

fn main() {
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mock = rt.block_on(MockLlm::responding(reply));
    println!(
        "{CALLS} tool calls per session, all sessions at once; machine: {} cores, shared",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    print_header();
    print_row(baseline(&mock.url()));
    for n in sessions_to_run() {
        print_row(rt.block_on(sessions(n, &mock.url())));
    }
}

/// `agent run`: the same 20 steps in-process, timed by its stream-json event lines.
fn baseline(url: &str) -> Row {
    let home = Dir::new("bench-home", As::Root);
    let ws = Dir::new("bench-ws", As::Root);
    let config = home.0.join("config.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let before =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    let load = load();
    let bench_before = own_cpu_ms();
    let start = Instant::now();
    let mut child = agent_against(As::Root, &home.0, url)
        .args(["run", "-p", "go", "--output-format", "stream-json"])
        .arg("--max-steps")
        .arg((CALLS + 5).to_string())
        .arg("--workspace")
        .arg(&ws.0)
        .arg("--config")
        .arg(&config)
        .arg("--state-dir")
        .arg(home.0.join("state"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut steps = Vec::new();
    let mut last = start;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.contains("\"tool_call_finished\"") {
            let now = Instant::now();
            steps.push(now - last);
            last = now;
        }
    }
    let status = child.wait().unwrap();
    let wall = start.elapsed();
    // Its zygote, orphaned when it exits, is ours (a subreaper): reaped here, its CPU and that of
    // the workers it reaped is counted too. Nothing else of ours runs yet.
    while nix::sys::wait::waitpid(None, None).is_ok() {}
    assert!(status.success(), "agent run failed");
    assert_eq!(steps.len(), CALLS, "agent run made every call");
    let after =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    Row {
        label: "agent run (baseline)".into(),
        calls: CALLS,
        wall,
        steps,
        cpu_ms: usage_ms(&after) - usage_ms(&before),
        bench_ms: own_cpu_ms() - bench_before,
        idle_kb: None,
        per_session_kb: None,
        workers_kb: None,
        peak_kb: u64::try_from(after.max_rss()).unwrap_or(0),
        load,
    }
}

/// N sessions in a fresh daemon.
async fn sessions(n: usize, url: &str) -> Row {
    let place = Place::new(CONFIG);
    let d = Daemon::start(&place, url);
    let pid = d.child.id();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle_kb = status_kb(pid, "VmRSS:");
    let ws = Dir::new("bench-ws", As::Root);
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        let mut c = Client::connect(&place.socket, Encoding::Bincode).await;
        let id = create(&mut c, &ws).await;
        c.attach(&id, None).await;
        clients.push((c, id));
    }
    // Every pool warmed, the daemon at rest with N idle sessions.
    tokio::time::sleep(Duration::from_millis(500 + 10 * n as u64)).await;
    let with_sessions_kb = status_kb(pid, "VmRSS:");
    let workers_kb = descendants(pid).into_iter().map(pss_kb).sum();
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
    let load = load();
    let cpu_before = daemon_cpu_ms(pid);
    let bench_before = own_cpu_ms();
    let start = Instant::now();
    let runs = clients
        .into_iter()
        .map(|(c, id)| tokio::spawn(one_turn(c, id)));
    let mut steps = Vec::new();
    for run in runs.collect::<Vec<_>>() {
        steps.extend(run.await.unwrap());
    }
    let wall = start.elapsed();
    let cpu_ms = daemon_cpu_ms(pid) - cpu_before;
    let bench_ms = own_cpu_ms() - bench_before;
    assert_eq!(steps.len(), n * CALLS, "every session made every call");
    Row {
        label: format!("agentd, {n} sessions"),
        calls: n * CALLS,
        wall,
        steps,
        cpu_ms,
        bench_ms,
        idle_kb: Some(idle_kb),
        per_session_kb: Some(with_sessions_kb.saturating_sub(idle_kb) as f64 / n as f64),
        workers_kb: Some(workers_kb),
        peak_kb: status_kb(pid, "VmHWM:"),
        load,
    }
}

async fn create(c: &mut Client, ws: &Dir) -> SessionId {
    let request = serde_json::from_value(serde_json::json!({"type": "create_session",
        "workspace": ws.0, "model": null, "approval": "on_risk", "max_steps": CALLS + 5,
        "title": null}))
    .unwrap();
    match c.ask(request).await {
        ResponseBody::SessionCreated(info) => info.id,
        other => panic!("create_session: {other:?}"),
    }
}

/// Sends the message and times each step to its `tool_call_finished`, until the turn ends.
async fn one_turn(mut c: Client, id: SessionId) -> Vec<Duration> {
    let mut last = Instant::now();
    let answer = c.send(&id, "go").await;
    assert!(
        matches!(answer, ResponseBody::Ok),
        "send_message: {answer:?}"
    );
    let mut steps = Vec::with_capacity(CALLS);
    loop {
        let e = c.event().await;
        match e.event {
            Event::ToolCallFinished(_) => {
                let now = Instant::now();
                steps.push(now - last);
                last = now;
            }
            Event::TurnFinished(_) => return steps,
            _ => {}
        }
    }
}
