//! Subagents (`task`), end to end through `agent run` against the mock LLM: a subagent is offered
//! no tool that writes and no `task`, refuses them when called anyway, and its commands run in
//! the read-only sandbox (so a write the policy allows still fails); only its report reaches the
//! parent's history — live and after `--resume`; two `task` calls of one message run at once;
//! an interrupt kills a subagent's calls and leaves a history that resumes; its step limit
//! gives back its partial findings; and its approvals reach the user — at the terminal, and in
//! the daemon through the session's client ([`through_daemon`]).
//!
//! The mock tells the conversations apart by their first user message: the parent's is the
//! user's prompt, a subagent's is its task's prompt, which carries a key (`SUBTASK-…`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod support;
mod through_daemon;

use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply, finish, text, tool};
use agentd_e2e::mock_llm::{MockLlm, Recorded, Reply};
use agentd_e2e::{As, Dir, binary, both, give, processes_with};
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Run, agent, calls, config, requests_of, result_in, task, tool_names};

both!(
    a_subagent_cannot_write_and_only_its_report_reaches_the_parent,
    |who: As| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let ws = Dir::new("sub-ws", who);
        std::fs::write(ws.0.join("notes.txt"), "the notes say QUOKKA\n").unwrap();
        give(&ws.0, who);
        let home = Dir::new("sub-home", who);
        let conf = Dir::new("sub-conf", As::Root);
        // The policy allows the write, so what stops it is the read-only sandbox.
        let config = config(&conf, &["*touch made-by-child"], "");
        let child_calls = calls(&[
            (
                "c1",
                "write_file",
                json!({"path": "planted.txt", "content": "x"}),
            ),
            (
                "c2",
                "bash",
                json!({"command": "cat notes.txt; touch made-by-child"}),
            ),
            ("c3", "task", task("deeper", "SUBTASK-B: go deeper")),
            ("c4", "write_todos", json!({"todos": []})),
            ("c5", "delete_everything", json!({})),
        ]);
        let mock = rt.block_on(MockLlm::start_routed(
            vec![
                calls(&[(
                    "t1",
                    "task",
                    task("survey the notes", "SUBTASK-A: read notes.txt"),
                )]),
                answer("parent done"),
            ],
            vec![
                (
                    "SUBTASK-A",
                    vec![child_calls, answer("CHILD-REPORT: the animal is a quokka")],
                ),
                ("SUBTASK-B", vec![answer("a grandchild must never run")]),
            ],
        ));
        let run = Run::of(
            agent(
                who,
                &mock,
                &ws.0,
                &home.0,
                &["-p", "look around", "--config", &config],
            )
            .spawn()
            .unwrap(),
        );
        assert_eq!(run.code, 0, "{}\n{:#?}", run.stderr, run.events);
        let keys = ["SUBTASK-A", "SUBTASK-B"];
        let parent = requests_of(&mock, None, &keys);
        let child = requests_of(&mock, Some("SUBTASK-A"), &keys);
        assert_eq!((parent.len(), child.len()), (2, 2));
        assert!(
            requests_of(&mock, Some("SUBTASK-B"), &keys).is_empty(),
            "depth 1"
        );

        // The tools and prompt follow the session.
        let offered = tool_names(&parent[0]);
        assert!(
            ["task", "write_file", "write_todos"]
                .iter()
                .all(|t| offered.contains(&t.to_string())),
            "{offered:?}"
        );
        let offered = tool_names(&child[0]);
        for t in ["write_file", "str_replace", "write_todos", "task"] {
            assert!(
                !offered.contains(&t.to_string()),
                "a subagent is offered {t}: {offered:?}"
            );
        }
        assert!(
            ["bash", "read_file", "grep"]
                .iter()
                .all(|t| offered.contains(&t.to_string())),
            "{offered:?}"
        );
        let system = |r: &Recorded| {
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert!(
            system(&child[0]).starts_with("You are a subagent"),
            "{}",
            system(&child[0])
        );
        assert!(system(&parent[0]).contains("task starts a subagent"));
        assert_eq!(
            child[0].body["messages"].as_array().unwrap().len(),
            2,
            "a fresh context: its prompt and the task: {}",
            child[0].raw_body
        );

        // Refused by the dispatcher: the writers, the todo list and a grandchild.
        let c1 = result_in(&child[1], "c1");
        assert!(
            c1.contains("not offered") && c1.contains("read-only"),
            "{c1}"
        );
        let c3 = result_in(&child[1], "c3");
        assert!(c3.contains("cannot start subagents"), "{c3}");
        assert!(result_in(&child[1], "c4").contains("not offered"));
        let c5 = result_in(&child[1], "c5");
        assert!(
            c5.contains("no tool named `delete_everything`")
                && c5.contains("bash, read_file, list_dir")
                && !c5.contains("write_file"),
            "the tools named are the subagent's: {c5}"
        );
        // Stopped by the sandbox: the policy allowed the touch.
        let c2 = result_in(&child[1], "c2");
        assert!(c2.contains("QUOKKA"), "it reads: {c2}");
        assert!(c2.contains("Read-only file system"), "{c2}");
        assert!(!ws.0.join("planted.txt").exists() && !ws.0.join("made-by-child").exists());

        // The parent's next request holds the report, and nothing else of the child.
        let report = result_in(&parent[1], "t1");
        assert_eq!(
            report,
            "[subagent report: survey the notes]\nCHILD-REPORT: the animal is a quokka"
        );
        let roles: Vec<&str> = parent[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool"]);
        for leaked in [
            "QUOKKA",
            "made-by-child",
            "planted.txt",
            "cannot touch",
            "\"c2\"",
            "You are a subagent",
        ] {
            assert!(
                !parent[1].raw_body.contains(leaked),
                "{leaked} reached the parent: {}",
                parent[1].raw_body
            );
        }

        // The events show the subagent's work, tagged with its call.
        let sub: Vec<&Value> = run.of_subagent("t1").collect();
        let types: Vec<&str> = sub.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types.first(), Some(&"user_message"), "{types:?}");
        assert_eq!(sub.last().unwrap()["type"], "turn_finished");
        assert_eq!(sub.last().unwrap()["reason"], "done");
        assert!(sub.iter().any(|e| e["type"] == "tool_call_started"
            && e["call"]["id"] == "c1"
            && e["verdict"] == "deny"));
        assert_eq!(
            run.top().filter(|e| e["type"] == "turn_finished").count(),
            1,
            "only the parent's turn is the session's"
        );
        assert!(
            !run.top()
                .any(|e| e["type"] == "tool_call_started" && e["call"]["id"] == "c2"),
            "a child's call is tagged"
        );
    }
);

#[test]
fn a_resumed_session_replays_the_report_not_the_subagents_transcript() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ws = Dir::new("sub-resume-ws", As::Root);
    std::fs::write(ws.0.join("notes.txt"), "WALLABY\n").unwrap();
    let home = Dir::new("sub-resume-home", As::Root);
    let first = rt.block_on(MockLlm::start_routed(
        vec![
            calls(&[("t1", "task", task("read", "SUBTASK-A: read notes.txt"))]),
            answer("parent done"),
        ],
        vec![(
            "SUBTASK-A",
            vec![
                calls(&[("c1", "read_file", json!({"path": "notes.txt"}))]),
                answer("REPORT-1: a marsupial"),
            ],
        )],
    ));
    let run = Run::of(
        agent(As::Root, &first, &ws.0, &home.0, &["-p", "look"])
            .spawn()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let before = requests_of(&first, None, &["SUBTASK-A"]);
    let second = rt.block_on(MockLlm::start(vec![answer("ok")]));
    let again = Run::of(
        agent(
            As::Root,
            &second,
            &ws.0,
            &home.0,
            &["--resume", &run.session(), "-p", "and then?"],
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    let sent = &second.requests()[0];
    let history = sent.body["messages"].as_array().unwrap();
    let was = before[1].body["messages"].as_array().unwrap();
    assert_eq!(
        history.len(),
        was.len() + 2,
        "the same history, the answer and the new message: {}",
        sent.raw_body
    );
    assert_eq!(history[1..was.len()], was[1..], "replayed exactly");
    assert!(result_in(sent, "t1").ends_with("REPORT-1: a marsupial"));
    assert!(
        !sent.raw_body.contains("WALLABY") && !sent.raw_body.contains("\"c1\""),
        "{}",
        sent.raw_body
    );
    assert!(tool_names(sent).contains(&"task".to_owned()));
}

#[test]
fn two_task_calls_of_one_message_run_at_the_same_time() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ws = Dir::new("sub-par-ws", As::Root);
    for f in ["a.fifo", "b.fifo"] {
        nix::unistd::mkfifo(
            &ws.0.join(f),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
    }
    let home = Dir::new("sub-par-home", As::Root);
    let conf = Dir::new("sub-par-conf", As::Root);
    let config = config(&conf, &["cat *.fifo"], "");
    let mock = rt.block_on(MockLlm::start_routed(
        vec![
            calls(&[
                ("t1", "task", task("a", "SUBTASK-A: read a.fifo")),
                ("t2", "task", task("b", "SUBTASK-B: read b.fifo")),
            ]),
            answer("both read"),
        ],
        vec![
            (
                "SUBTASK-A",
                vec![bash_reply("a1", "cat a.fifo"), answer("A got it")],
            ),
            (
                "SUBTASK-B",
                vec![bash_reply("b1", "cat b.fifo"), answer("B got it")],
            ),
        ],
    ));
    let mut child = agent(
        As::Root,
        &mock,
        &ws.0,
        &home.0,
        &["-p", "read both", "--config", &config],
    )
    .spawn()
    .unwrap();
    // Each subagent's `cat` waits for a writer. A writer can open a FIFO without blocking only
    // while a reader has it open: both open at once proves both subagents' commands were running
    // at the same time. Run one after the other, the first would wait for ever: after 60 s the
    // test lets each go on its own, and fails.
    let open = |name: &str| {
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(ws.0.join(name))
            .ok()
    };
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let started = Instant::now();
    let (mut a, mut b, mut together, mut served) = (None, None, false, [false, false]);
    while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(120) {
        if !served[0] && a.is_none() {
            a = open("a.fifo");
        }
        if !served[1] && b.is_none() {
            b = open("b.fifo");
        }
        if a.is_some() && b.is_some() {
            together = true;
        }
        if together || started.elapsed() > Duration::from_secs(60) {
            for (slot, (file, word)) in [(&mut a, "go-a\n"), (&mut b, "go-b\n")]
                .into_iter()
                .enumerate()
            {
                if let Some(mut f) = file.take() {
                    let _ = f.write_all(word.as_bytes());
                    served[slot] = true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = Run::of(child);
    assert!(
        together,
        "the two subagents' commands never ran at the same time"
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.result_of("t1").ends_with("A got it") && run.result_of("t2").ends_with("B got it"));
    let a_read = requests_of(&mock, Some("SUBTASK-A"), &[]);
    assert!(
        result_in(&a_read[1], "a1").contains("go-a"),
        "{}",
        a_read[1].raw_body
    );
}

#[test]
fn an_interrupt_kills_a_subagents_calls_and_leaves_a_history_that_resumes() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ws = Dir::new("sub-int-ws", As::Root);
    let home = Dir::new("sub-int-home", As::Root);
    let conf = Dir::new("sub-int-conf", As::Root);
    let config = config(&conf, &["sleep *", "echo *"], "");
    let marker = agentd_e2e::unique("subagent-sleeps");
    let command = format!("sleep 600; echo {marker}");
    let first = rt.block_on(MockLlm::start_routed(
        vec![calls(&[("t1", "task", task("wait", "SUBTASK-A: wait"))])],
        vec![(
            "SUBTASK-A",
            vec![Reply::stream(vec![
                text("FOUND-SO-FAR: the clock"),
                tool(
                    0,
                    Some("w1"),
                    Some("bash"),
                    &json!({"command": command}).to_string(),
                ),
                finish("tool_calls"),
            ])],
        )],
    ));
    let child = agent(
        As::Root,
        &first,
        &ws.0,
        &home.0,
        &["-p", "wait", "--config", &config],
    )
    .spawn()
    .unwrap();
    let started = Instant::now();
    while processes_with(&marker).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the subagent's command never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let run = Run::of(child);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        processes_with(&marker).is_empty(),
        "the subagent's command was killed"
    );
    let finished: Vec<&Value> = run.top().filter(|e| e["type"] == "turn_finished").collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["reason"], "interrupted");
    let sub_end = run.of_subagent("t1").last().unwrap().clone();
    assert_eq!(
        (sub_end["type"].as_str(), sub_end["reason"].as_str()),
        (Some("turn_finished"), Some("interrupted"))
    );
    let result = run.result_of("t1");
    assert!(
        result.starts_with("[interrupted") && result.contains("FOUND-SO-FAR: the clock"),
        "{result}"
    );

    let second = rt.block_on(MockLlm::start(vec![answer("ok")]));
    let again = Run::of(
        agent(
            As::Root,
            &second,
            &ws.0,
            &home.0,
            &["--resume", &run.session(), "-p", "go on"],
        )
        .spawn()
        .unwrap(),
    );
    // The strict mock accepted the replayed history: every call has its result.
    assert_eq!(again.code, 0, "{}", again.stderr);
    let sent = &second.requests()[0];
    let roles: Vec<&str> = sent.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "user"],
        "{}",
        sent.raw_body
    );
    assert!(result_in(sent, "t1").contains("FOUND-SO-FAR"));
    assert!(
        !sent.raw_body.contains(&marker),
        "the subagent's call stays out: {}",
        sent.raw_body
    );
}

#[test]
fn a_subagent_at_its_step_limit_returns_why_and_its_partial_findings() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ws = Dir::new("sub-max-ws", As::Root);
    let home = Dir::new("sub-max-home", As::Root);
    let conf = Dir::new("sub-max-conf", As::Root);
    let config = config(&conf, &[], "[agent]\nsubagent_max_steps = 1\n");
    let mock = rt.block_on(MockLlm::start_routed(
        vec![
            calls(&[("t1", "task", task("list", "SUBTASK-A: list"))]),
            answer("fine"),
        ],
        vec![(
            "SUBTASK-A",
            vec![Reply::stream(vec![
                text("PARTIAL: two files so far"),
                tool(0, Some("l1"), Some("list_dir"), "{}"),
                finish("tool_calls"),
            ])],
        )],
    ));
    let run = Run::of(
        agent(
            As::Root,
            &mock,
            &ws.0,
            &home.0,
            &["-p", "list", "--config", &config],
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let result = run.result_of("t1");
    assert!(
        result.starts_with("[subagent stopped before finishing: list; it reached its step limit (stopped after 1 steps)]")
            && result.ends_with("PARTIAL: two files so far"),
        "{result}"
    );
    let sub_end = run.of_subagent("t1").last().unwrap().clone();
    assert_eq!(sub_end["reason"], "max_steps");
    assert_eq!(requests_of(&mock, Some("SUBTASK-A"), &[]).len(), 1);
}

#[test]
fn a_subagents_approval_reaches_the_user_at_the_terminal() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ws = Dir::new("sub-tty-ws", As::Root);
    let home = Dir::new("sub-tty-home", As::Root);
    let mock = rt.block_on(MockLlm::start_routed(
        vec![
            calls(&[("t1", "task", task("make a dir", "SUBTASK-A: mkdir"))]),
            answer("done"),
        ],
        vec![(
            "SUBTASK-A",
            vec![
                bash_reply("m1", "mkdir approved-dir"),
                answer("it could not"),
            ],
        )],
    ));
    let command = format!(
        "{} run -p 'make a dir' --workspace {} --state-dir {} --output-format json",
        binary("agent").display(),
        ws.0.display(),
        home.0.join("state").display()
    );
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("SHELL", "/bin/sh")
        .env("TERM", "dumb")
        .env("HOME", &home.0)
        .env("BASE_URL", mock.url())
        .env("MODEL", "mock-model")
        .env("AGENTD_TOOL_WORKER", binary("tool-worker"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("needs approval") && text.contains("mkdir approved-dir"),
        "the user was asked: {text}"
    );
    // Allowed by the user, stopped by the subagent's read-only sandbox.
    let m1 = result_in(&requests_of(&mock, Some("SUBTASK-A"), &[])[1], "m1");
    assert!(m1.contains("Read-only file system"), "{m1}");
    assert!(!ws.0.join("approved-dir").exists());
}
