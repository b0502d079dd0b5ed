//! Bounds over a session's calls together (the session's cgroup, in its user's), attacked with
//! parallel calls of one turn through the real `agent run`: each call alone stays inside its own
//! bounds, and together they would pass the session's. Root only: cgroups are made by root (an
//! unprivileged agent has no aggregate bound on this machine; docs/security.md says so).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use agentd_e2e::{As, Dir, command_as, compiled_probe, install_compiled};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The memory file that holds a group's peak, and the parent of the sessions' groups, on this
/// machine's layout; `None` (said) where the suite does not run as root with a memory cgroup.
fn sessions_root() -> Option<(PathBuf, &'static str)> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: cgroups need root");
        return None;
    }
    let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
        .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"));
    if v2 {
        return Some(("/sys/fs/cgroup/agentd/user-0".into(), "memory.peak"));
    }
    if Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists() {
        return Some((
            "/sys/fs/cgroup/memory/agentd/user-0".into(),
            "memory.max_usage_in_bytes",
        ));
    }
    eprintln!("skipped: no memory cgroup here");
    None
}

/// One model reply calling `bash` with each command, in parallel.
fn calls(commands: &[String]) -> Reply {
    let mut chunks: Vec<Value> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            openai::tool(
                i as u64,
                Some(&format!("call_{i}")),
                Some("bash"),
                &json!({ "command": c }).to_string(),
            )
        })
        .collect();
    chunks.push(openai::finish("tool_calls"));
    Reply::stream(chunks)
}

/// What one `agent run` showed.
struct Outcome {
    code: i32,
    stderr: String,
    /// The calls' results, in call order.
    results: Vec<String>,
    /// The highest peak of the session's memory group seen while it ran (0: never seen).
    peak: u64,
}

/// Runs one turn of `commands` in parallel in `ws` as root under `aggregate` (the config's
/// `[aggregate]` lines), watching the session's memory group from outside.
fn run_turn(ws: &Dir, aggregate: &str, commands: &[String]) -> Outcome {
    let (root, peak_file) = sessions_root().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        calls(commands),
        openai::answer_reply("done"),
    ]));
    let home = Dir::new("home", As::Root);
    let config = home.0.join("config.toml");
    std::fs::write(&config, format!("[aggregate]\n{aggregate}\n")).unwrap();
    let (home_dir, url) = (home.0.display().to_string(), mock.url());
    let mut child = command_as(
        "agent",
        As::Root,
        &[
            ("HOME", home_dir.as_str()),
            ("PROVIDER", "openai"),
            ("BASE_URL", url.as_str()),
            ("API_KEY", "sk-e2e"),
            ("MODEL", "mock-model"),
        ],
    )
    .args([
        "run",
        "-p",
        "go",
        "--dangerously-skip-permissions",
        "--workspace",
    ])
    .arg(&ws.0)
    .arg("--config")
    .arg(&config)
    .args(["--max-parallel", "8", "--output-format", "json"])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let prefix = format!("session-{}-", child.id());
    let start = Instant::now();
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the turn outlived 2 minutes"
        );
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix)
                && let Ok(text) = std::fs::read_to_string(entry.path().join(peak_file))
            {
                peak = peak.max(text.trim().parse().unwrap_or(0));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    eprintln!("the session's peak: {peak} bytes");
    let requests = mock.requests();
    let results = requests
        .get(1)
        .map(|r| {
            r.body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default();
    eprintln!("results: {results:?}");
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        results,
        peak,
    }
}

#[test]
fn eight_parallel_calls_cannot_take_more_memory_than_their_session() {
    if sessions_root().is_none() {
        return;
    }
    let ws = Dir::new("aggregate-mem", As::Root);
    install_compiled(&compiled_probe("hog"), &ws.0, "hog", As::Root);
    // Each call may have 4 GiB (its own group and RLIMIT_AS): 3 GiB each is within that, 24
    // GiB together is the machine; the session may have 2 GiB.
    let commands: Vec<String> = (0..8).map(|_| "./hog 3072".to_owned()).collect();
    let limit: u64 = 2 << 30;
    let out = run_turn(&ws, "session_memory = \"2G\"", &commands);
    assert_eq!(out.code, 0, "the agent goes on: {}", out.stderr);
    assert_eq!(out.results.len(), 8, "{:?}", out.results);
    assert!(
        out.results.iter().all(|r| !r.contains("touched 3072")),
        "a call took 3 GiB in a 2 GiB session: {:?}",
        out.results
    );
    assert!(
        out.peak > limit / 2 && out.peak <= limit,
        "the session's peak {} against its limit {limit}",
        out.peak
    );
}

#[test]
fn a_call_filling_its_dev_shm_is_charged_to_its_session() {
    if sessions_root().is_none() {
        return;
    }
    let ws = Dir::new("aggregate-shm", As::Root);
    // The call's private /dev/shm may hold 1 GiB; the session may have 256 MiB.
    let commands =
        ["head -c 600M /dev/zero > /dev/shm/fill; echo rc=$?; du -m /dev/shm/fill".to_owned()];
    let limit: u64 = 256 << 20;
    let out = run_turn(&ws, "session_memory = \"256M\"", &commands);
    assert_eq!(out.code, 0, "the agent goes on: {}", out.stderr);
    assert_eq!(out.results.len(), 1, "{:?}", out.results);
    assert!(
        !out.results[0].contains("rc=0"),
        "600 MiB of tmpfs in a 256 MiB session: {}",
        out.results[0]
    );
    assert!(out.peak <= limit, "peak {} > {limit}", out.peak);
}

#[test]
fn parallel_calls_cannot_start_more_processes_than_their_session() {
    if sessions_root().is_none() {
        return;
    }
    let ws = Dir::new("aggregate-pids", As::Root);
    // Each call may have 512 processes; four calls of 40 stay in that, the session may have 64.
    let fork = "python3 -c 'import os, time\nkids = []\nfor _ in range(40):\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        time.sleep(3)\n        os._exit(0)\n    kids.append(pid)\nprint(\"forked\", len(kids))\nfor k in kids:\n    os.waitpid(k, 0)'";
    let commands: Vec<String> = (0..4).map(|_| fork.to_owned()).collect();
    let out = run_turn(&ws, "session_max_processes = 64", &commands);
    assert_eq!(out.code, 0, "the agent goes on: {}", out.stderr);
    let forked: Vec<u64> = out
        .results
        .iter()
        .map(|r| {
            r.lines()
                .find_map(|l| l.strip_prefix("forked "))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0)
        })
        .collect();
    assert_eq!(forked.len(), 4, "{:?}", out.results);
    let total: u64 = forked.iter().sum();
    assert!(
        total < 64 && forked.iter().any(|&n| n < 40),
        "the calls forked {forked:?} in a session of 64: {:?}",
        out.results
    );
}
