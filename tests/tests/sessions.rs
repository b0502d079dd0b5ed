//! Sessions on disk through the real `agent` binary: a run is kept, `--resume` gives the model the
//! whole history back, `kill -9` mid-turn loses nothing that was written and the session goes on,
//! and `agent sessions` lists them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use agentd_e2e::{As, Dir, agent_against, command_as};
use serde_json::{Value, json};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

struct Setup {
    ws: Dir,
    state: Dir,
    home: Dir,
    config: std::path::PathBuf,
}

fn setup() -> Setup {
    let ws = Dir::new("sess-ws", As::Root);
    std::fs::write(ws.0.join("notes.txt"), "hello\n").unwrap();
    let home = Dir::new("sess-home", As::Root);
    let config = home.0.join("config.toml");
    std::fs::write(
        &config,
        "[policy]\nbash = [{ pattern = \"sleep *\", action = \"allow\" }, { pattern = \"seq *\", action = \"allow\" }]\n",
    )
    .unwrap();
    Setup {
        ws,
        state: Dir::new("sess-state", As::Root),
        home,
        config,
    }
}

fn agent(s: &Setup, mock: &MockLlm, args: &[&str]) -> std::process::Command {
    let url = mock.url();
    let mut c = agent_against(As::Root, &s.home.0, &url);
    c.arg("run")
        .args(args)
        .arg("--state-dir")
        .arg(&s.state.0)
        .arg("--config")
        .arg(&s.config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn finish(child: Child) -> (i32, Value, String) {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, stderr)
}

/// The session's log, once it records a started tool call (at most 20 s).
fn log_once_a_call_started(s: &Setup) -> std::path::PathBuf {
    let started = Instant::now();
    loop {
        let found = std::fs::read_dir(s.state.0.join("sessions"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
            .map(|e| e.path().join("log.jsonl"));
        if let Some(log) = found
            && std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("tool_call_started")
        {
            return log;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the call never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The conversation a request sent, without the system prompt.
fn conversation(request: &Value) -> Vec<Value> {
    request["messages"].as_array().unwrap()[1..].to_vec()
}

#[test]
fn a_resumed_session_gives_the_model_its_whole_history() {
    let s = setup();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let first = rt.block_on(MockLlm::start(vec![
        Reply::stream(vec![
            openai::tool(
                0,
                Some("call_a"),
                Some("read_file"),
                r#"{"path": "notes.txt"}"#,
            ),
            openai::finish("tool_calls"),
        ]),
        answer("notes.txt says hello"),
    ]));
    let ws = s.ws.0.display().to_string();
    let child = agent(
        &s,
        &first,
        &[
            "-p",
            "read the notes",
            "--workspace",
            &ws,
            "--output-format",
            "json",
        ],
    )
    .spawn()
    .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{out}\n{err}");
    let id = out["session_id"].as_str().unwrap().to_owned();

    let second = rt.block_on(MockLlm::start(vec![answer("still hello")]));
    let child = agent(
        &s,
        &second,
        &["--resume", &id, "-p", "and now?", "--output-format", "json"],
    )
    .spawn()
    .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out["session_id"], id.as_str(), "the same session goes on");

    let before = conversation(&first.requests()[1].body);
    let after = conversation(&second.requests()[0].body);
    assert_eq!(after.len(), before.len() + 2, "{after:#?}");
    assert_eq!(
        after[..before.len()],
        before[..],
        "the history comes back as it was sent"
    );
    assert_eq!(after[before.len()]["content"], "notes.txt says hello");
    assert_eq!(after[before.len() + 1]["content"], "and now?");

    let listed = command_as("agent", As::Root, &[])
        .args(["sessions", "--state-dir"])
        .arg(&s.state.0)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains(&id) && text.contains("done") && text.contains("read the notes"),
        "{text}"
    );
}

#[test]
fn kill_9_mid_turn_loses_nothing_written_and_the_session_goes_on() {
    let s = setup();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let first = rt.block_on(MockLlm::start(vec![bash("call_sleep", "sleep 30")]));
    let ws = s.ws.0.display().to_string();
    let mut child = agent(
        &s,
        &first,
        &[
            "-p",
            "wait a while",
            "--workspace",
            &ws,
            "--output-format",
            "stream-json",
        ],
    )
    .spawn()
    .unwrap();
    // Wait until the call is running, then kill the agent outright.
    let log = log_once_a_call_started(&s);
    child.kill().unwrap();
    let _ = child.wait();
    let id = log
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    // And a crash in the middle of a write, on top.
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, br#"{"seq":99,"unix_ms":1,"ev"#).unwrap();
    drop(f);

    let listed = command_as("agent", As::Root, &[])
        .args(["sessions", "--state-dir"])
        .arg(&s.state.0)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("cut off"),
        "{listed:?}"
    );

    let second = rt.block_on(MockLlm::start(vec![answer("resumed")]));
    let child = agent(
        &s,
        &second,
        &["--resume", &id, "-p", "go on", "--output-format", "json"],
    )
    .spawn()
    .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("log.jsonl") && err.contains("cut off"),
        "the torn line is reported: {err}"
    );
    let sent = conversation(&second.requests()[0].body);
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"], "{sent:#?}");
    assert_eq!(sent[0]["content"], "wait a while");
    assert_eq!(sent[1]["tool_calls"][0]["id"], "call_sleep");
    assert!(
        sent[2]["content"]
            .as_str()
            .unwrap()
            .contains("the session ended before this call finished")
    );
    assert_eq!(sent[3]["content"], "go on");
}

#[test]
fn todos_are_kept_validated_and_reminded_and_skills_are_read_on_demand() {
    let s = setup();
    let skill = s.ws.0.join(".agents/skills/release");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: release\ndescription: how this project cuts a release\n---\nBump the version, tag, push.\n",
    )
    .unwrap();
    let todos = |list: Value| {
        Reply::stream(vec![
            openai::tool(
                0,
                Some(&format!("call_t{}", list.to_string().len())),
                Some("write_todos"),
                &json!({ "todos": list }).to_string(),
            ),
            openai::finish("tool_calls"),
        ])
    };
    let item = |c: &str, status: &str| json!({"content": c, "active_form": format!("{c}ing"), "status": status});
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        todos(json!([
            item("Read", "done"),
            item("Fix", "in_progress"),
            item("Test", "pending")
        ])),
        todos(json!([
            item("Fix", "in_progress"),
            item("Test", "in_progress")
        ])),
        Reply::stream(vec![
            openai::tool(
                0,
                Some("call_skill"),
                Some("read_skill"),
                r#"{"name": "release"}"#,
            ),
            openai::finish("tool_calls"),
        ]),
        answer("done"),
    ]));
    let ws = s.ws.0.display().to_string();
    let child = agent(
        &s,
        &mock,
        &[
            "-p",
            "plan it",
            "--workspace",
            &ws,
            "--output-format",
            "json",
        ],
    )
    .spawn()
    .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{out}\n{err}");
    let requests = mock.requests();
    let system = requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("- release: how this project cuts a release"),
        "{system}"
    );
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"write_todos") && tools.contains(&"read_skill"),
        "{tools:?}"
    );
    let last = |i: usize| {
        requests[i].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(
        last(1).contains("<reminder>") && last(1).contains("[>] Fix\n[ ] Test"),
        "{}",
        last(1)
    );
    assert!(
        last(2).contains("exactly one item may be in progress"),
        "{}",
        last(2)
    );
    assert!(
        last(2).contains("[>] Fix\n[ ] Test"),
        "the refused list did not replace the kept one: {}",
        last(2)
    );
    assert!(
        last(3).starts_with("Bump the version, tag, push."),
        "{}",
        last(3)
    );
    let history = requests[3].body["messages"].as_array().unwrap();
    let reminders = history
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("<reminder>"))
        })
        .count();
    assert_eq!(
        reminders, 1,
        "only the newest message carries the reminder; the history keeps none"
    );
    assert_eq!(out["tool_calls"][1]["status"], "error");
}

#[test]
fn sigint_interrupts_the_turn_kills_the_call_and_leaves_a_history_that_resumes() {
    let s = setup();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let first = rt.block_on(MockLlm::start(vec![bash(
        "call_long",
        "sleep 30; echo never",
    )]));
    let ws = s.ws.0.display().to_string();
    let child = agent(
        &s,
        &first,
        &["-p", "wait", "--workspace", &ws, "--output-format", "json"],
    )
    .spawn()
    .unwrap();
    let log = log_once_a_call_started(&s);
    std::thread::sleep(Duration::from_millis(300));
    let interrupted_at = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let (code, out, err) = finish(child);
    assert!(
        interrupted_at.elapsed() < Duration::from_secs(5),
        "the interrupt took effect at once"
    );
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(out["finish_reason"], "interrupted", "{out}");
    assert_eq!(out["tool_calls"][0]["status"], "error");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("interrupted: the user stopped the turn"),
        "{text}"
    );
    assert!(text.contains(r#""reason":"interrupted""#), "{text}");
    assert!(
        agentd_e2e::processes_with("sleep 30; echo never").is_empty(),
        "the call's processes were killed"
    );

    let id = log
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let second = rt.block_on(MockLlm::start(vec![answer("ok")]));
    let child = agent(
        &s,
        &second,
        &[
            "--resume",
            &id,
            "-p",
            "never mind",
            "--output-format",
            "json",
        ],
    )
    .spawn()
    .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{out}\n{err}");
    let sent = conversation(&second.requests()[0].body);
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"], "{sent:#?}");
    assert!(
        sent[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("[interrupted")
    );
}

#[test]
fn a_3_mb_output_is_spilled_and_paged_back_with_read_file() {
    let s = setup();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let first = rt.block_on(MockLlm::start(vec![
        bash("call_seq", "seq 1 400000"),
        answer("long"),
    ]));
    let ws = s.ws.0.display().to_string();
    let child = agent(
        &s,
        &first,
        &["-p", "count", "--workspace", &ws, "--output-format", "json"],
    )
    .spawn()
    .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{out}\n{err}");
    let id = out["session_id"].as_str().unwrap().to_owned();
    let sent = conversation(&first.requests()[1].body);
    let result = sent[2]["content"].as_str().unwrap();
    assert!(
        result.len() < 32_000,
        "the model got head and tail only: {} bytes",
        result.len()
    );
    assert!(result.starts_with("1\n2\n3\n") && result.trim_end().ends_with("400000"));
    let marker = result
        .lines()
        .find(|l| l.contains("bytes cut here"))
        .unwrap();
    let path = marker
        .split(" is in ")
        .nth(1)
        .and_then(|rest| rest.split(": page through").next())
        .unwrap()
        .to_owned();
    assert!(
        path.contains(&id) && path.ends_with("call_seq.txt"),
        "{marker}"
    );
    let whole: usize = (1..=400_000).map(|i: u32| i.to_string().len() + 1).sum();
    assert_eq!(
        std::fs::metadata(&path).unwrap().len() as usize,
        whole,
        "the whole output was kept"
    );

    // Paged back by a later call of the session (resumed here), through a real worker.
    let read = Reply::stream(vec![
        openai::tool(
            0,
            Some("call_page"),
            Some("read_file"),
            &json!({"path": path, "offset": 200000, "limit": 2}).to_string(),
        ),
        openai::finish("tool_calls"),
    ]);
    let second = rt.block_on(MockLlm::start(vec![read, answer("found it")]));
    let child = agent(
        &s,
        &second,
        &[
            "--resume",
            &id,
            "-p",
            "show the middle",
            "--output-format",
            "json",
        ],
    )
    .spawn()
    .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out["tool_calls"][0]["status"], "ok", "{out}");
    let sent = conversation(&second.requests()[1].body);
    let page = sent.last().unwrap()["content"].as_str().unwrap();
    assert!(
        page.starts_with("200000\t200000\n200001\t200001\n[… more lines follow"),
        "{page}"
    );
}
