//! `agent run` end to end: the real binary, real workers, and the scripted mock model speaking each
//! provider's wire format over HTTP. The model's side is scripted; everything else is real.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Recorded, Reply, anthropic, gemini, openai};
use agentd_e2e::{As, Dir, binary, command_as, give, processes_in, test_user};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    OpenAi,
    Anthropic,
    Gemini,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Gemini => "gemini",
        }
    }

    /// A streamed reply in which the model calls these tools.
    fn calls(self, calls: &[(&str, Value)]) -> Reply {
        match self {
            Format::OpenAi => {
                let mut chunks: Vec<Value> = calls
                    .iter()
                    .enumerate()
                    .map(|(i, (name, args))| {
                        openai::tool(
                            i as u64,
                            Some(&format!("call_{}_{i}", name)),
                            Some(name),
                            &args.to_string(),
                        )
                    })
                    .collect();
                chunks.push(openai::finish("tool_calls"));
                chunks.push(openai::usage(100, 20));
                Reply::stream(chunks)
            }
            Format::Anthropic => {
                let mut events = vec![anthropic::start(100)];
                for (i, (name, args)) in calls.iter().enumerate() {
                    events.push(anthropic::tool_block(
                        i as u64,
                        &format!("toolu_{name}_{i}"),
                        name,
                    ));
                    events.push(anthropic::input(i as u64, &args.to_string()));
                    events.push(anthropic::stop_block(i as u64));
                }
                events.push(anthropic::delta("tool_use", 20));
                events.push(anthropic::stop());
                Reply::events(events)
            }
            Format::Gemini => Reply::events(vec![gemini::chunk(
                calls
                    .iter()
                    .map(|(n, a)| gemini::call(n, a.clone()))
                    .collect(),
                Some("STOP"),
            )]),
        }
    }

    /// A raw-arguments call (for broken JSON), OpenAI only.
    fn raw_call(name: &str, raw: &str) -> Reply {
        Reply::stream(vec![
            openai::tool(0, Some("call_raw"), Some(name), raw),
            openai::finish("tool_calls"),
        ])
    }

    /// A streamed final answer.
    fn answer(self, text: &str) -> Reply {
        match self {
            Format::OpenAi => Reply::stream(vec![
                openai::text(text),
                openai::finish("stop"),
                openai::usage(100, 10),
            ]),
            Format::Anthropic => Reply::events(vec![
                anthropic::start(100),
                anthropic::text_block(0),
                anthropic::text(0, text),
                anthropic::stop_block(0),
                anthropic::delta("end_turn", 10),
                anthropic::stop(),
            ]),
            Format::Gemini => {
                Reply::events(vec![gemini::chunk(vec![gemini::text(text)], Some("STOP"))])
            }
        }
    }
}

/// A tiny repository with a failing test.
fn fixture() -> Dir {
    let ws = Dir::new("repo", As::Root);
    std::fs::write(ws.0.join("add.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(ws.0.join("test_add.py"), "from add import add\n\nassert add(2, 3) == 5, f\"add(2, 3) returned {add(2, 3)}\"\nprint(\"ok: 1 test passed\")\n").unwrap();
    ws
}

struct Run {
    pid: u32,
    /// The `TMPDIR` agent run was given: its session and call temp dirs go there.
    tmp: Dir,
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", self.stdout, self.stderr))
    }
}

fn agent_run(mock: &MockLlm, format: Format, ws: &Dir, extra: &[&str]) -> Run {
    agent_run_with_config(mock, format, ws, extra, "")
}

fn agent_run_with_config(
    mock: &MockLlm,
    format: Format,
    ws: &Dir,
    extra: &[&str],
    more_config: &str,
) -> Run {
    agent_run_as(As::Root, mock, format, ws, extra, more_config)
}

fn agent_run_as(
    who: As,
    mock: &MockLlm,
    format: Format,
    ws: &Dir,
    extra: &[&str],
    more_config: &str,
) -> Run {
    let home = Dir::new("home", who);
    let config = home.0.join("config.toml");
    std::fs::write(
        &config,
        format!("{more_config}\n[policy]\nbash = [{{ pattern = \"python3 test_add.py\", action = \"allow\" }}, {{ pattern = \"sleep *\", action = \"allow\" }}]\n"),
    )
    .unwrap();
    give(&config, who);
    let home_dir = home.0.display().to_string();
    let tmp = Dir::new("tmpdir", who);
    let tmp_dir = tmp.0.display().to_string();
    let out = command_as(
        "agent",
        who,
        &[
            ("HOME", home_dir.as_str()),
            ("TMPDIR", tmp_dir.as_str()),
            ("PROVIDER", format.name()),
            ("BASE_URL", mock.url().as_str()),
            ("API_KEY", "sk-e2e"),
            ("MODEL", "mock-model"),
        ],
    )
    .args(["run", "-p", "make the tests pass", "--workspace"])
    .arg(&ws.0)
    .arg("--config")
    .arg(&config)
    .args(extra)
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let pid = out.id();
    let out = out.wait_with_output().unwrap();
    Run {
        pid,
        tmp,
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every tool call in a request has its result right after it, and every result its call.
fn assert_paired(format: Format, req: &Recorded) {
    let b = &req.body;
    match format {
        Format::OpenAi => {
            let msgs = b["messages"].as_array().unwrap();
            for (i, m) in msgs.iter().enumerate() {
                if let Some(calls) = m["tool_calls"].as_array() {
                    let ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap()).collect();
                    let results: Vec<&str> = msgs[i + 1..]
                        .iter()
                        .take_while(|m| m["role"] == "tool")
                        .map(|m| m["tool_call_id"].as_str().unwrap())
                        .collect();
                    assert_eq!(ids, results, "calls and results pair up, in order");
                }
                if m["role"] == "tool" {
                    assert!(
                        i > 0
                            && (msgs[i - 1]["role"] == "tool"
                                || msgs[i - 1]["tool_calls"].is_array()),
                        "a result without its call"
                    );
                }
            }
        }
        Format::Anthropic => {
            let msgs = b["messages"].as_array().unwrap();
            for (i, m) in msgs.iter().enumerate() {
                let uses: Vec<&str> = m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|c| c["type"] == "tool_use")
                    .map(|c| c["id"].as_str().unwrap())
                    .collect();
                if !uses.is_empty() {
                    let results: Vec<&str> = msgs[i + 1]["content"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|c| c["type"] == "tool_result")
                        .map(|c| c["tool_use_id"].as_str().unwrap())
                        .collect();
                    assert_eq!(uses, results);
                }
            }
        }
        Format::Gemini => {
            let contents = b["contents"].as_array().unwrap();
            for (i, c) in contents.iter().enumerate() {
                let calls = c["parts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p.get("functionCall").is_some())
                    .count();
                if calls > 0 {
                    let responses = contents[i + 1]["parts"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|p| p.get("functionResponse").is_some())
                        .count();
                    assert_eq!(calls, responses);
                }
            }
        }
    }
}

/// The text of everything the model was sent in a request (to look for tool results in it).
fn sent_text(req: &Recorded) -> String {
    req.raw_body.clone()
}

fn six_turn_scenario(format: Format) {
    six_turn_scenario_as(As::Root, format);
}

fn six_turn_scenario_as(who: As, format: Format) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        format.calls(&[("read_file", json!({"path": "test_add.py"}))]),
        format.calls(&[("bash", json!({"command": "python3 test_add.py"}))]),
        format.calls(&[("read_file", json!({"path": "add.py"}))]),
        format.calls(&[(
            "str_replace",
            json!({"path": "add.py", "old": "return a - b", "new": "return a + b"}),
        )]),
        format.calls(&[("bash", json!({"command": "python3 test_add.py"}))]),
        format.answer("Fixed: add() subtracted; it adds now and the test passes."),
    ]));
    let ws = fixture();
    give(&ws.0, who);
    // add.py stays root's (writable by all): only a worker running as `who` makes the edited
    // file `who`'s.
    std::os::unix::fs::chown(ws.0.join("add.py"), Some(0), Some(0)).unwrap();
    std::fs::set_permissions(
        ws.0.join("add.py"),
        std::os::unix::fs::PermissionsExt::from_mode(0o666),
    )
    .unwrap();
    let run = agent_run_as(who, &mock, format, &ws, &["--output-format", "json"], "");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let v = run.json();
    assert_eq!(v["finish_reason"], "done");
    assert!(v["result"].as_str().unwrap().starts_with("Fixed"));
    let statuses: Vec<&str> = v["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["ok", "error", "ok", "ok", "ok"],
        "the first test run fails, the second passes"
    );
    // The repository afterwards, written by a worker running as `who` (the edit replaces the
    // file, so its owner is whoever the worker ran as).
    assert_eq!(
        std::fs::read_to_string(ws.0.join("add.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    let owner =
        std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(ws.0.join("add.py")).unwrap());
    let expected = match who {
        As::Root => nix::unistd::geteuid().as_raw(),
        As::User => test_user().unwrap().uid,
    };
    assert_eq!(owner, expected, "the edit was made as {who:?}");
    // What the model received.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6);
    assert!(
        sent_text(&reqs[1]).contains("from add import add"),
        "request 2 holds the file read in step 1"
    );
    assert!(
        sent_text(&reqs[2]).contains("AssertionError")
            && sent_text(&reqs[2]).contains("[exit code 1]"),
        "request 3 holds the failing run"
    );
    assert!(
        sent_text(&reqs[4]).contains("replaced 1 occurrence in add.py"),
        "request 5 holds the edit's diff"
    );
    assert!(
        sent_text(&reqs[5]).contains("ok: 1 test passed"),
        "request 6 holds the passing run"
    );
    for req in &reqs {
        assert_paired(format, req);
        assert!(
            !req.raw_body.contains("sk-e2e"),
            "the key is only in headers"
        );
    }
    assert_nothing_left(&run, &ws);
}

/// After `agent run` exits: no worker (the pool's waiting one included) is left in the
/// workspace, and its temp dirs and call cgroups are gone.
fn assert_nothing_left(run: &Run, ws: &Dir) {
    let ws_path = ws.0.canonicalize().unwrap();
    assert_eq!(
        processes_in(&ws_path),
        Vec::<String>::new(),
        "no worker outlives agent run"
    );
    let left: Vec<_> = std::fs::read_dir(&run.tmp.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.is_empty(),
        "temp dirs left in {}: {left:?}",
        run.tmp.0.display()
    );
    for hierarchy in ["pids/agentd", "memory/agentd", "agentd"] {
        let Ok(entries) = std::fs::read_dir(std::path::Path::new("/sys/fs/cgroup").join(hierarchy))
        else {
            continue;
        };
        let prefix = format!("call-{}-", run.pid);
        let left: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&prefix))
            .collect();
        assert!(left.is_empty(), "cgroups left in {hierarchy}: {left:?}");
    }
}

/// The same session as an unprivileged user: workers (the pool's included) contain themselves
/// with a user namespace, not as root.
#[test]
fn six_turn_scenario_as_an_unprivileged_user() {
    if test_user().is_none() {
        return; // not root: test_user() said the unprivileged variants are skipped
    }
    six_turn_scenario_as(As::User, Format::OpenAi);
}

#[test]
fn six_turn_scenario_openai() {
    six_turn_scenario(Format::OpenAi);
}

#[test]
fn six_turn_scenario_anthropic() {
    six_turn_scenario(Format::Anthropic);
}

#[test]
fn six_turn_scenario_gemini() {
    six_turn_scenario(Format::Gemini);
}

#[test]
fn bad_calls_are_explained_to_the_model_and_the_session_goes_on() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let f = Format::OpenAi;
    let mock = rt.block_on(MockLlm::start(vec![
        Format::raw_call("bash", "{\"command\": \"ls"),
        f.calls(&[("delete_everything", json!({}))]),
        f.calls(&[("read_file", json!({"path": 7}))]),
        f.calls(&[("bash", json!({"command": "rm -rf add.py"}))]),
        f.calls(&[("bash", json!({"command": "mkdir build"}))]),
        f.answer("I could not do everything."),
    ]));
    let ws = fixture();
    let run = agent_run(
        &mock,
        f,
        &ws,
        &["--output-format", "json", "--approval", "never"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(
        reqs.len(),
        6,
        "every bad call was answered and the model went on"
    );
    let told = |i: usize| sent_text(&reqs[i]);
    assert!(told(1).contains("not valid JSON"), "broken JSON");
    assert!(
        told(2).contains("no tool named `delete_everything`") && told(2).contains("read_file"),
        "a hallucinated tool"
    );
    assert!(
        told(3).contains("`path`") && told(3).contains("string"),
        "a schema mismatch"
    );
    assert!(
        told(4).contains("Blocked by policy") && told(4).contains("rm *"),
        "a denied command"
    );
    assert!(told(5).contains("approval mode `never`"), "never mode");
    assert!(
        ws.0.join("add.py").exists() && !ws.0.join("build").exists(),
        "nothing denied ran"
    );
}

#[test]
fn parallel_calls_run_concurrently_and_results_keep_call_order() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let f = Format::OpenAi;
    let mock = rt.block_on(MockLlm::start(vec![
        f.calls(&[
            ("bash", json!({"command": "sleep 2; echo first"})),
            ("bash", json!({"command": "sleep 2; echo second"})),
            ("bash", json!({"command": "sleep 2; echo third"})),
        ]),
        f.answer("done"),
    ]));
    let ws = fixture();
    let start = Instant::now();
    let run = agent_run(&mock, f, &ws, &["--output-format", "json"]);
    let took = start.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        took < Duration::from_millis(4500),
        "three 2-second calls took {took:?}"
    );
    let msgs = mock.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let results: Vec<&str> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().trim())
        .collect();
    assert_eq!(results, ["first", "second", "third"]);
}

#[test]
fn limits_end_the_turn_with_their_reason() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let f = Format::OpenAi;
    let looping = || {
        (0..5)
            .map(|_| f.calls(&[("list_dir", json!({}))]))
            .collect::<Vec<_>>()
    };
    let mock = rt.block_on(MockLlm::start(looping()));
    let run = agent_run(
        &mock,
        f,
        &fixture(),
        &["--output-format", "json", "--max-steps", "2"],
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["finish_reason"], "max_steps");
    assert_eq!(mock.requests().len(), 2);

    let mock = rt.block_on(MockLlm::start(looping()));
    let run = agent_run(
        &mock,
        f,
        &fixture(),
        &["--output-format", "json", "--token-budget", "150"],
    );
    assert_eq!(
        run.json()["finish_reason"],
        "token_budget",
        "each call uses 120 tokens"
    );

    let mock = rt.block_on(MockLlm::start(vec![
        f.calls(&[("bash", json!({"command": "sleep 30"}))]),
        f.answer("late"),
    ]));
    let start = Instant::now();
    let run = agent_run(
        &mock,
        f,
        &fixture(),
        &["--output-format", "json", "--timeout", "1"],
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(run.json()["finish_reason"], "timeout");

    let mock = rt.block_on(MockLlm::start(vec![Reply::error(500, "down", &[]); 4]));
    let run = agent_run(&mock, f, &fixture(), &["--output-format", "json"]);
    let v = run.json();
    assert_eq!(v["finish_reason"], "error");
    assert!(v["message"].as_str().unwrap().contains("HTTP 500"), "{v}");
}

#[test]
fn stream_json_prints_the_protocols_events_in_sequence() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let f = Format::OpenAi;
    let mock = rt.block_on(MockLlm::start(vec![
        f.calls(&[("list_dir", json!({}))]),
        f.answer("there are two files"),
    ]));
    let run = agent_run(&mock, f, &fixture(), &["--output-format", "stream-json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events: Vec<protocol::event::EventEnvelope> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.event.variant_name()).collect();
    assert_eq!(kinds.first(), Some(&"UserMessage"));
    assert_eq!(kinds.last(), Some(&"TurnFinished"));
    for k in [
        "TurnStarted",
        "AssistantMessage",
        "ToolCallStarted",
        "ToolCallFinished",
        "AssistantTextDelta",
    ] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    let seqs: Vec<u64> = events.iter().map(|e| e.seq.0).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
}

#[test]
fn the_projects_agents_md_reaches_the_model_labelled_and_a_symlinked_one_does_not() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let f = Format::OpenAi;
    for planted in [false, true] {
        let mock = rt.block_on(MockLlm::start(vec![f.answer("done")]));
        let ws = fixture();
        let secret = ws.0.join("secret.txt");
        std::fs::write(&secret, "SECRET-TOKEN-42\n").unwrap();
        if planted {
            std::os::unix::fs::symlink(&secret, ws.0.join("AGENTS.md")).unwrap();
        } else {
            std::fs::write(
                ws.0.join("AGENTS.md"),
                "Run python3 test_add.py before answering.\n",
            )
            .unwrap();
        }
        let run = agent_run(&mock, f, &ws, &["--output-format", "json"]);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        let system = mock.requests()[0].body["messages"][0].clone();
        assert_eq!(system["role"], "system");
        let text = system["content"].as_str().unwrap_or_default();
        assert!(
            text.contains(&ws.0.display().to_string()),
            "names the workspace: {text}"
        );
        if planted {
            assert!(
                !text.contains("SECRET-TOKEN-42") && !text.contains("# AGENTS.md"),
                "{text}"
            );
            assert!(
                run.stderr.contains("AGENTS.md") && run.stderr.contains("symbolic link"),
                "warned: {}",
                run.stderr
            );
        } else {
            assert!(
                text.contains("this project's instructions")
                    && text.contains("Run python3 test_add.py before answering."),
                "{text}"
            );
        }
    }
}

#[test]
fn a_history_past_the_window_is_compacted_and_the_task_still_completes() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let f = Format::OpenAi;
    // Without usage in the stream (the scripted counts would not be the real ones), so the
    // history is measured by the estimate.
    let read = || {
        Reply::stream(vec![
            openai::tool(
                0,
                Some("call_read"),
                Some("read_file"),
                r#"{"path": "big.txt", "limit": 2000}"#,
            ),
            openai::finish("tool_calls"),
        ])
    };
    let mock = rt.block_on(MockLlm::start(vec![
        read(),
        read(),
        read(),
        f.answer("Goal: make the tests pass. State: big.txt read three times, nothing changed."),
        f.answer("done"),
    ]));
    let ws = fixture();
    let line = "x".repeat(29);
    let big: String = (0..600).map(|_| format!("{line}\n")).collect();
    std::fs::write(ws.0.join("big.txt"), big).unwrap();
    let run = agent_run(
        &mock,
        f,
        &ws,
        &[
            "--context-window",
            "16000",
            "--output-format",
            "stream-json",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "three reads, the summary, the answer");
    let summary = &requests[3].body;
    assert!(
        summary["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("You summarise"),
        "the fourth call asks for the summary: {summary}"
    );
    assert!(
        summary
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
    );
    let last = &requests[4].body["messages"];
    assert!(
        last[1]["content"]
            .as_str()
            .unwrap()
            .contains("Goal: make the tests pass."),
        "the summary replaces the older history: {last}"
    );
    for (i, r) in requests.iter().enumerate() {
        assert!(
            r.raw_body.len() / 4 < 16_000,
            "request {i} is over the window: {} bytes",
            r.raw_body.len()
        );
    }
    assert!(
        requests[4].raw_body.len() < requests[2].raw_body.len() + 4_000,
        "compaction made the history smaller"
    );
    let compacted: Vec<Value> = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["type"] == "context_compacted")
        .collect();
    assert_eq!(compacted.len(), 1, "{}", run.stdout);
    assert!(
        compacted[0]["event"]["tokens_after"].as_u64()
            < compacted[0]["event"]["tokens_before"].as_u64()
    );
}

#[test]
fn a_missing_model_setting_says_which_and_where() {
    let home = Dir::new("home-empty", As::Root);
    let out = std::process::Command::new(binary("agent"))
        .env_clear()
        .env("HOME", &home.0)
        .env("BASE_URL", "http://127.0.0.1:9/v1")
        .args(["run", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no MODEL is set") && err.contains(".agents/env"),
        "{err}"
    );
}

#[test]
fn at_a_terminal_the_user_approves_or_denies_risky_calls() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let f = Format::OpenAi;
    let mock = rt.block_on(MockLlm::start(vec![
        f.calls(&[("bash", json!({"command": "mkdir approved"}))]),
        f.calls(&[("bash", json!({"command": "touch refused.txt"}))]),
        f.answer("done"),
    ]));
    let ws = fixture();
    let home = Dir::new("home-tty", As::Root);
    let command = format!(
        "{} run -p 'make dirs' --workspace {} --output-format json",
        binary("agent").display(),
        ws.0.display()
    );
    let mut child = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("SHELL", "/bin/sh")
        .env("TERM", "dumb")
        .env("HOME", &home.0)
        .env("BASE_URL", mock.url())
        .env("MODEL", "mock-model")
        .env("AGENTD_TOOL_WORKER", binary("tool-worker"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    // The answers, as typed: allow the first, deny the second.
    child.stdin.take().unwrap().write_all(b"y\nn\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("needs approval") && text.contains("mkdir approved"),
        "the user was asked: {text}"
    );
    assert!(
        ws.0.join("approved").is_dir(),
        "the approved call ran: {text}"
    );
    assert!(
        !ws.0.join("refused.txt").exists(),
        "the denied call did not: {text}"
    );
    let told = mock.requests()[2].raw_body.clone();
    assert!(
        told.contains("Denied by the user"),
        "the model was told: {told}"
    );
}

#[test]
fn retries_and_the_parallel_cap_are_configurable() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let f = Format::OpenAi;
    let mock = rt.block_on(MockLlm::start(vec![Reply::error(503, "busy", &[]); 5]));
    let run = agent_run_with_config(
        &mock,
        f,
        &fixture(),
        &["--output-format", "json"],
        "[provider]\nmax_tries = 2\n",
    );
    assert!(
        run.json()["message"]
            .as_str()
            .unwrap()
            .ends_with("(after 2 tries)"),
        "{}",
        run.stdout
    );
    assert_eq!(mock.requests().len(), 2);

    let calls = [
        ("bash", json!({"command": "sleep 1"})),
        ("bash", json!({"command": "sleep 1"})),
        ("bash", json!({"command": "sleep 1"})),
    ];
    let mock = rt.block_on(MockLlm::start(vec![f.calls(&calls), f.answer("done")]));
    let start = Instant::now();
    let run = agent_run(
        &mock,
        f,
        &fixture(),
        &["--output-format", "json", "--max-parallel", "1"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        start.elapsed() >= Duration::from_millis(2900),
        "one at a time: {:?}",
        start.elapsed()
    );
}
