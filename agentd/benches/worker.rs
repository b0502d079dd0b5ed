//! Cost of a tool call through a worker against a plain `sh -c true` spawn from the same process,
//! measured in one run and printed as a table: wall time (what the model's caller waits) and CPU
//! time (what bounds how many sessions a machine can serve).
//!
//! Rows: a fresh worker (spawn, lockdown, run `true`, result), a worker from the pool, locked down
//! before the call as it is while the model thinks (request, run, result, worker reaped), and the
//! same pooled call on a multi-threaded runtime, as `agent run` and the daemon have. Then the
//! pooled call in a generated workspace of ~200,000 files in ~15,000 directories with a
//! repository at its root and 20 below it (`worker/tree.rs`), and in one of ~2,000 files with as
//! many repositories: the supervisor walks every writable root for repositories after each call
//! and every repository gets its git files protected, so what grows with the files and what grows
//! with the repositories show apart. Parts of that call are timed on their own in this process
//! (`worker/large.rs`): the walk cold and warm, the check after a call, the scans for protected
//! paths; and the lockdown steps include the mounts in the large workspace. The smoke run
//! (`cargo test --all-targets`) generates only the ~2,000-file one. Generating the large tree
//! takes seconds, or minutes right after a run removed one: ext4 passes over inodes freed in the
//! last minutes when it allocates new ones.
//!
//! CPU per call is user + sys of every process involved, from `getrusage`: `RUSAGE_SELF` (the
//! bench process, every thread: the supervisor side — spawn, cgroup, protocol, reaping) plus
//! `RUSAGE_CHILDREN` (every child waited for, with the descendants *it* waited for). That is
//! complete here because every process of a call is waited for: the bench (tokio) reaps the
//! worker; the worker `waitpid`s its `sh`, the PID namespace's init; the kernel reaps whatever is
//! left in the namespace into that init when it exits. Workers forked by the zygote are the
//! zygote's children, which the bench never waits for: their CPU comes from the zygote, which
//! reports each worker's `wait4` usage as it reaps it, and the zygote's own from its
//! `/proc/PID/schedstat` ([`agentd::worker::zygote::cpu_used`]). Not counted: kernel work deferred to
//! kworkers (cgroup and namespace teardown, RCU), which no process is charged for.
//!
//! For pooled rows the wall time is the call alone, but the CPU is the whole cycle — refill
//! (spawn + lockdown of the next worker) and call — since every pooled call uses up one worker.
//!
//! `cargo bench -p agentd --bench worker` (build the worker first: `cargo build --release --bins`;
//! or point `AGENTD_TOOL_WORKER` at one). Goals on the 2-core build machine: pooled wall median
//! ≤ 2.0× the baseline and ≤ 3 ms; pooled CPU ≤ 4 ms per call.

#[path = "worker/large.rs"]
mod large;
#[path = "worker/steps.rs"]
mod steps;
#[path = "worker/tree.rs"]
mod tree;

use agentd::worker::{WorkerError, WorkerPool};
use nix::sys::resource::{UsageWho, getrusage};
use protocol::worker::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Calls per row; `AGENTD_BENCH_CALLS` overrides (fewer, to profile the bench under perf).
fn calls() -> usize {
    std::env::var("AGENTD_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(if benching() { 300 } else { 3 })
}

/// Run by `cargo bench` (which passes `--bench`), not by `cargo test --all-targets`, which runs
/// it once as a smoke test: a few calls, the worker of the same build.
fn benching() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// CPU time used so far by this process and its waited-for descendants.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    /// This process, all threads: the supervisor side.
    own: Duration,
    /// Children waited for, and what they waited for.
    children: Duration,
}

fn cpu_now() -> Cpu {
    let used = |who| {
        getrusage(who).map_or(Duration::ZERO, |u| {
            let us = |t: nix::sys::time::TimeVal| {
                Duration::new(t.tv_sec().max(0) as u64, t.tv_usec().max(0) as u32 * 1000)
            };
            us(u.user_time()) + us(u.system_time())
        })
    };
    Cpu {
        own: used(UsageWho::RUSAGE_SELF),
        children: used(UsageWho::RUSAGE_CHILDREN) + agentd::worker::zygote::cpu_used(),
    }
}

/// One call's cost.
#[derive(Debug, Clone, Copy)]
struct Sample {
    wall: Duration,
    /// Supervisor-side CPU.
    own: Duration,
    /// CPU of the call's processes.
    children: Duration,
}

/// Measures `f`: CPU over all of it, wall time over what it reports as the call (it returns
/// the instant the call started; everything before is set-up the call does not wait for).
fn measure(f: impl FnOnce() -> Instant) -> Sample {
    let before = cpu_now();
    let call_start = f();
    let wall = call_start.elapsed();
    let after = cpu_now();
    Sample {
        wall,
        own: after.own.saturating_sub(before.own),
        children: after.children.saturating_sub(before.children),
    }
}

/// A row of the table: a name and how to make one call.
struct Row<'a> {
    name: String,
    /// A whole tool call, held to the goals; else one part of a call, shown to say where the
    /// cost goes.
    is_call: bool,
    call: Box<dyn FnMut() -> Sample + 'a>,
    samples: Vec<Sample>,
}

impl<'a> Row<'a> {
    fn call(name: impl Into<String>, call: impl FnMut() -> Sample + 'a) -> Self {
        Row {
            name: name.into(),
            is_call: true,
            call: Box::new(call),
            samples: Vec::new(),
        }
    }

    fn part(name: impl Into<String>, call: impl FnMut() -> Sample + 'a) -> Self {
        Row {
            is_call: false,
            ..Row::call(name, call)
        }
    }
}

/// Summary of a row: wall median and p99, CPU median and mean, and the mean's split.
struct Summary {
    wall_med: Duration,
    wall_p99: Duration,
    cpu_med: Duration,
    cpu_mean: Duration,
    own_mean: Duration,
    children_mean: Duration,
}

fn summarize(samples: &[Sample]) -> Summary {
    let pick = |v: &mut Vec<Duration>, q: usize| {
        v.sort();
        v[(v.len() * q / 100).min(v.len() - 1)]
    };
    let mut wall: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
    let mut cpu: Vec<Duration> = samples.iter().map(|s| s.own + s.children).collect();
    let n = samples.len() as u32;
    let own: Duration = samples.iter().map(|s| s.own).sum();
    let children: Duration = samples.iter().map(|s| s.children).sum();
    Summary {
        wall_med: pick(&mut wall, 50),
        wall_p99: pick(&mut wall, 99),
        cpu_med: pick(&mut cpu, 50),
        cpu_mean: (own + children) / n,
        own_mean: own / n,
        children_mean: children / n,
    }
}

/// The worker binary, chosen explicitly: `$AGENTD_TOOL_WORKER`, else the release build of this
/// workspace. (Not `locate_worker`, whose search belongs to the supervisor binaries.)
fn worker_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AGENTD_TOOL_WORKER") {
        return Some(PathBuf::from(path));
    }
    // target/<profile>/deps/worker-… → target/<profile>/tool-worker, the same build's worker;
    // else the release one.
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("tool-worker")));
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/tool-worker");
    beside
        .filter(|p| p.is_file())
        .or_else(|| built.is_file().then_some(built))
}

fn bash_true() -> ToolRequest {
    ToolRequest::Bash(BashRequest {
        command: "true".into(),
    })
}

fn check(result: Result<ToolResult, WorkerError>) {
    match result {
        Ok(r) if r.exit_code == Some(0) => {}
        other => fail(&format!("a worker call failed: {other:?}")),
    }
}

/// The bench's temp dir (the workspaces, the generated tree among them), once made.
static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Says what went wrong, removes the bench's temp dir and exits: a failed run leaves no tree of
/// 200,000 files behind.
fn fail(what: &str) -> ! {
    eprintln!("{what}");
    if let Some(root) = ROOT.get() {
        let _ = std::fs::remove_dir_all(root);
    }
    std::process::exit(1)
}

/// One pooled call: refill the pool (outside the wall time, inside the CPU), then the call.
fn pooled_call(rt: &tokio::runtime::Runtime, pool: &WorkerPool) -> Sample {
    let before = cpu_now();
    rt.block_on(async {
        pool.warm_up();
        pool.settled().await;
    });
    if pool.ready() != 1 {
        fail("the pool did not get a ready worker");
    }
    let start = Instant::now();
    check(rt.block_on(pool.run(bash_true(), None, |_| {})));
    // Wall time is the call's; its CPU includes the worker's exit, which the pool leaves to a
    // task after the result: wait for that before reading the counters.
    let wall = start.elapsed();
    rt.block_on(pool.settled());
    let after = cpu_now();
    Sample {
        wall,
        own: after.own.saturating_sub(before.own),
        children: after.children.saturating_sub(before.children),
    }
}

/// A worker forked by the zygote (as `contain` asks) whose channel is at EOF: it does its
/// spec-independent steps, finds no spec and exits; waited for until the zygote has reaped it.
fn zygote_fork_exit(rt: &tokio::runtime::Runtime, worker: &std::path::Path, contain: u8) {
    let zygote = agentd::worker::zygote::for_program(worker, None);
    assert!(
        zygote.is_some(),
        "{} does not serve as a zygote",
        worker.display()
    );
    let Some(zygote) = zygote else { return };
    let forked = rt.block_on(async {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
        drop(ours);
        let (_read, write) = nix::unistd::pipe()?;
        let child = zygote.fork(theirs.into(), write, contain).await?;
        child.wait().await;
        std::io::Result::Ok(())
    });
    assert!(forked.is_ok(), "fork from the zygote: {forked:?}");
}

fn main() {
    if std::env::var_os(steps::STEPS_ENV).is_some_and(|v| !v.is_empty()) {
        steps::lockdown_steps();
        return;
    }
    let Some(worker) = worker_binary() else {
        eprintln!(
            "the tool-worker binary is not built: run `cargo build --release --bins`, or set AGENTD_TOOL_WORKER"
        );
        std::process::exit(1);
    };
    let root = std::env::temp_dir().join(format!("agentd-bench-{}", std::process::id()));
    let root = ROOT.get_or_init(|| root);
    let (ws, tmp) = (root.join("ws"), root.join("tmp"));
    if std::fs::create_dir_all(&ws)
        .and_then(|_| std::fs::create_dir_all(&tmp))
        .is_err()
    {
        fail("cannot make the bench's temp dirs");
    }
    let spec = agentd::worker::default_sandbox(ws, tmp.clone(), None);
    let (Ok(rt), Ok(rt_multi)) = (
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build(),
    ) else {
        fail("cannot build the tokio runtimes")
    };
    let pool = WorkerPool::new(worker.clone(), spec.clone(), 1);
    // A pool refills from a task of the runtime its call runs on: pool_multi from rt_multi's threads.
    let pool_multi = WorkerPool::new(worker.clone(), spec.clone(), 1);
    // The large workspace (a small one in the smoke run), and under `cargo bench` a small one
    // with as many repositories: what grows with the files apart from what grows with the
    // repositories.
    let (shape, name) = if benching() {
        (tree::LARGE, "large")
    } else {
        (tree::SMOKE, "small")
    };
    let large = large::Large::set_up(root, name, &worker, shape);
    let small = benching().then(|| large::Large::set_up(root, "small", &worker, tree::SMOKE));

    let mut rows = vec![
        Row::call("baseline: spawn `sh -c true`", || {
            measure(|| {
                let start = Instant::now();
                let ok = std::process::Command::new("sh")
                    .args(["-c", "true"])
                    .status()
                    .is_ok_and(|s| s.success());
                assert!(ok, "sh -c true failed");
                start
            })
        }),
        Row::call("bash `true`, fresh worker (spawn+lockdown+run)", || {
            measure(|| {
                let start = Instant::now();
                check(rt.block_on(agentd::worker::run_tool(
                    &worker,
                    &spec,
                    bash_true(),
                    |_| {},
                )));
                start
            })
        }),
        Row::call("bash `true`, pooled worker", || pooled_call(&rt, &pool)),
        Row::call("bash `true`, pooled, multi-thread runtime", || {
            pooled_call(&rt_multi, &pool_multi)
        }),
        large.call_row(&rt),
        Row::part("part: exec tool-worker, exits (no spec)", || {
            measure(|| {
                let start = Instant::now();
                // With stdin at EOF the worker does its spec-independent steps (close fds,
                // setsid, death signal), finds no spec and exits: the cost of starting it.
                let _ = std::process::Command::new(&worker)
                    .env_clear()
                    .stdin(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
                start
            })
        }),
        Row::part("part: fork from the zygote, exits (no spec)", || {
            measure(|| {
                let start = Instant::now();
                zygote_fork_exit(&rt, &worker, tool_worker::zygote::PLAIN);
                start
            })
        }),
        Row::part(
            "part: cloned init of new namespaces (as calls are), exits",
            || {
                measure(|| {
                    let start = Instant::now();
                    zygote_fork_exit(&rt, &worker, tool_worker::zygote::CONTAINED_MOUNTS);
                    start
                })
            },
        ),
        Row::part("part: `sh -c read` in a call cgroup (vs baseline)", || {
            measure(|| {
                let start = Instant::now();
                cgroup_call(&spec);
                start
            })
        }),
        Row::part("part: compile both seccomp filters (in-process)", || {
            measure(|| {
                let start = Instant::now();
                let built = tool_worker::lockdown::seccomp::table_filter(false)
                    .map(|t| t.len() + tool_worker::lockdown::seccomp::prologue_filter().len());
                assert!(built.is_ok_and(|n| n > 0), "seccomp filters do not compile");
                start
            })
        }),
    ];
    if let Some(small) = &small {
        rows.insert(4, small.call_row(&rt));
    }
    rows.extend(large.part_rows());
    // `AGENTD_BENCH_ROWS=pooled` keeps the baseline and the rows whose name holds that text: a
    // profile of one row.
    if let Ok(keep) = std::env::var("AGENTD_BENCH_ROWS") {
        let mut first = true;
        rows.retain(|r| std::mem::take(&mut first) || r.name.contains(keep.as_str()));
    }
    // Interleaved, so drift in machine load hits every series alike.
    for _ in 0..calls() {
        for row in &mut rows {
            let sample = (row.call)();
            row.samples.push(sample);
        }
    }
    let results: Vec<(String, bool, Summary)> = rows
        .iter()
        .map(|r| (r.name.clone(), r.is_call, summarize(&r.samples)))
        .collect();
    drop(rows);
    drop(pool);
    drop(pool_multi);
    report(&results);
    large::report_walk(&results, large.dirs());
    // The lockdown's steps, timed in a fresh single-threaded copy of this program (this one has
    // runtime threads, so its forked children must not allocate); the mounts also in the large
    // workspace, whose repositories each get theirs.
    println!();
    let steps = std::env::current_exe().and_then(|exe| {
        std::process::Command::new(exe)
            .env(steps::STEPS_ENV, "1")
            .env(steps::LARGE_WS_ENV, &large.ws)
            .env("AGENTD_BENCH_CALLS", calls().to_string())
            .status()
    });
    drop(large);
    drop(small);
    let _ = std::fs::remove_dir_all(root);
    if !steps.is_ok_and(|s| s.success()) {
        eprintln!("the lockdown steps could not be timed");
    }
}

/// `sh -c 'read _'` moved into a call's cgroup (as a worker is) before it exits, then the cgroup
/// removed: against the baseline, the cost of the per-call cgroup. Without a cgroup layout (not
/// root) this is the baseline plus a pipe.
fn cgroup_call(spec: &SandboxSpec) {
    use agentd::worker::cgroup::{CallGroup, Layout};
    let group = CallGroup::create(
        Layout::detect(),
        None,
        spec.limits.max_processes,
        spec.limits.memory_bytes,
    );
    let child = std::process::Command::new("sh")
        .args(["-c", "read _"])
        .stdin(std::process::Stdio::piped())
        .spawn();
    let (Ok(group), Ok(mut child)) = (group, child) else {
        fail("cannot create a cgroup or spawn sh");
    };
    if let Some(group) = &group
        && group.add(child.id()).is_err()
    {
        fail("cannot move sh into the call's cgroup");
    }
    drop(child.stdin.take());
    let _ = child.wait();
    drop(group);
}

fn report(results: &[(String, bool, Summary)]) {
    let Some((_, _, base)) = results.first() else {
        return;
    };
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "{:<52} {:>8} {:>8} {:>6} | {:>8} {:>8} {:>6} {:>8} {:>8}",
        format!("{} calls each, ms", calls()),
        "wall med",
        "p99",
        "×base",
        "cpu med",
        "cpu mean",
        "×base",
        "sup",
        "procs"
    );
    for (name, _, s) in results {
        println!(
            "{name:<52} {:>8} {:>8} {:>6.2} | {:>8} {:>8} {:>6.2} {:>8} {:>8}",
            ms(s.wall_med),
            ms(s.wall_p99),
            ratio(s.wall_med, base.wall_med),
            ms(s.cpu_med),
            ms(s.cpu_mean),
            ratio(s.cpu_mean, base.cpu_mean),
            ms(s.own_mean),
            ms(s.children_mean),
        );
    }
    println!(
        "cpu = user + sys; sup = this process (the supervisor side), procs = waited-for children and their descendants (means). Pooled rows: cpu includes the refill."
    );
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    for (name, _, s) in results.iter().skip(1).filter(|(_, is_call, _)| *is_call) {
        let r = ratio(s.wall_med, base.wall_med);
        println!(
            "{name}: wall ratio {r:.2} (goal ≤ 2.0: {}); wall median {} ms (goal ≤ 3 ms: {}); cpu mean {} ms (goal ≤ 4 ms: {})",
            verdict(r <= 2.0),
            ms(s.wall_med),
            verdict(s.wall_med <= Duration::from_millis(3)),
            ms(s.cpu_mean),
            verdict(s.cpu_mean <= Duration::from_millis(4)),
        );
    }
}
