//! Bounds over a session's calls together (the session's cgroup, in its user's), attacked with
//! parallel calls of one turn through the real `agent run`: each call alone stays inside its own
//! bounds, and together they would pass the session's; and over all users together (the
//! `agentd` group), attacked with two users' sessions of a root daemon. Root only: cgroups are
//! made by root (an unprivileged agent has no aggregate bound on this machine; docs/security.md
//! says so).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use agentd_e2e::{As, Dir, command_as, compiled_probe, install_compiled, test_user};
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

/// Held by each test for its whole run: the `agentd` group's bounds are written by every
/// session, so one test's small total would bound another's sessions.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
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
    let _serial = one_at_a_time();
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
    let _serial = one_at_a_time();
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
    let _serial = one_at_a_time();
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

/// The limit files of the `agentd` group, as they were, written back when dropped: the group is
/// the machine's, and this test's bound is small.
struct Restore(Vec<(PathBuf, String)>);

impl Restore {
    fn of(files: &[PathBuf]) -> Self {
        Restore(
            files
                .iter()
                .filter_map(|f| Some((f.clone(), std::fs::read_to_string(f).ok()?)))
                .collect(),
        )
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        for (file, text) in &self.0 {
            let _ = std::fs::write(file, text.trim());
        }
    }
}

#[test]
fn two_users_sessions_together_cannot_pass_the_total() {
    let _serial = one_at_a_time();
    use agentd_e2e::mock_llm::openai::{answer_reply, bash_reply};
    use protocol::event::Event;
    use std::os::unix::fs::PermissionsExt;
    let Some((user_root, _)) = sessions_root() else {
        return;
    };
    let Some(user) = test_user() else {
        eprintln!("skipped: needs root to create the test user");
        return;
    };
    let top = user_root.parent().unwrap().to_path_buf();
    let limit_file = if top.join("memory.max").exists() {
        "memory.max"
    } else {
        "memory.limit_in_bytes"
    };
    let mut files = vec![top.join(limit_file)];
    for uid in [0, user.uid] {
        files.push(top.join(format!("user-{uid}")).join(limit_file));
    }
    let _restore = Restore::of(&files);
    // Each session's call holds 600 MiB for 8 s: either alone fits its user (the total, 1 GiB,
    // is its bound too), both at once do not.
    let hold = "python3 -c \"import time; x = b'1' * (600 << 20); print('holding', flush=True); time.sleep(8); print('held', len(x) >> 20)\"";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start_routed(
        vec![],
        vec![
            (
                "alpha",
                vec![bash_reply("call_a", hold), answer_reply("done")],
            ),
            (
                "beta",
                vec![bash_reply("call_b", hold), answer_reply("done")],
            ),
        ],
    ));
    let place = daemon::Place::new("[aggregate]\ntotal_memory = \"1G\"\n");
    let _d = daemon::Daemon::start(&place, &mock.url());
    std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let root_ws = Dir::new("aggregate-total-root", As::Root);
    let user_ws = Dir::new("aggregate-total-user", As::User);

    let socket = place.socket.clone();
    let user_ws_path = user_ws.0.clone();
    let theirs = std::thread::spawn(move || {
        daemon::as_user(
            &socket,
            &[
                json!({"type": "create_session", "workspace": user_ws_path, "model": null,
                    "approval": "skip_permissions", "max_steps": null, "title": null}),
                json!({"type": "attach_session", "session": "$SESSION", "after_seq": null}),
                json!({"type": "send_message", "session": "$SESSION", "text": "beta"}),
            ],
        )
    });
    let mine = rt.block_on(async {
        let mut client = daemon::Client::connect(&place.socket, protocol::Encoding::Json).await;
        let id = client.create(&root_ws.0, "skip_permissions").await;
        client.attach(&id, None).await;
        let sent = client.send(&id, "alpha").await;
        assert!(daemon::code(&sent).is_none(), "{sent:?}");
        // The bound is written when a session is made, and holds while they run.
        let limit = std::fs::read_to_string(top.join(limit_file)).unwrap();
        assert_eq!(limit.trim(), (1u64 << 30).to_string(), "the total's bound");
        client
            .until_turn_finished()
            .await
            .into_iter()
            .find_map(|e| match e.event {
                Event::ToolCallFinished(f) => Some(f.content),
                _ => None,
            })
            .unwrap_or_default()
    });
    let frames = theirs.join().unwrap();
    let their_result = frames
        .iter()
        .find(|f| f["event"]["type"] == "tool_call_finished")
        .map(|f| {
            f["event"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_default();
    eprintln!("root's call: {mine:?}\nthe user's call: {their_result:?}");
    let held = [&mine, &their_result]
        .iter()
        .filter(|r| r.contains("held 600"))
        .count();
    assert_eq!(
        held, 1,
        "one call holds its 600 MiB, the other cannot in a total of 1 GiB: root {mine:?}, user {their_result:?}"
    );
}
