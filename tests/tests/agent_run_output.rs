//! `agent run`'s text output for people, and where its task comes from: the model's words
//! between its tool calls are shown, the run ends with the session's id and how to go on with
//! it, all of it on stderr when stdout is a pipe (which gets the final answer alone); a resumed
//! session's earlier events sit between two rules; `-p -` and a piped stdin are the task.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::openai::{self, answer_reply as answer};
use agentd_e2e::mock_llm::{MockLlm, Reply};
use agentd_e2e::{As, Dir, agent_against};
use std::io::Write;
use std::process::{Command, Stdio};

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `agent run ARGS` in `ws` with `home`, its model `mock`, `stdin` written to it.
fn run(mock: &MockLlm, home: &Dir, ws: &Dir, args: &[&str], stdin: &str) -> Ran {
    let mut cmd: Command = agent_against(As::Root, &home.0, &mock.url());
    let mut child = cmd
        .arg("run")
        .args(args)
        .args(["--approval", "never", "--workspace"])
        .arg(&ws.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The id after `session ` in the run's last lines.
fn session_in(stderr: &str) -> String {
    let after = stderr.rsplit("session ").next().unwrap();
    after.split_whitespace().next().unwrap().to_owned()
}

#[test]
fn the_models_words_show_between_calls_and_the_run_ends_with_how_to_go_on() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        Reply::stream(vec![
            openai::text("Let me look at the notes first."),
            openai::tool(0, Some("call_1"), Some("list_dir"), "{}"),
            openai::finish("tool_calls"),
        ]),
        answer("All done."),
    ]));
    let (home, ws) = (
        Dir::new("runout-home", As::Root),
        Dir::new("runout-ws", As::Root),
    );
    std::fs::write(ws.0.join("notes.txt"), "hello\n").unwrap();
    let ran = run(&mock, &home, &ws, &["-p", "look around"], "");
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert_eq!(ran.stdout, "All done.\n", "a pipe gets the answer alone");
    let words = ran
        .stderr
        .find("Let me look at the notes first.")
        .expect(&ran.stderr);
    let call = ran.stderr.find("→ list_dir").expect(&ran.stderr);
    assert!(
        words < call,
        "the words come before their call: {}",
        ran.stderr
    );
    let id = session_in(&ran.stderr);
    assert!(id.starts_with("s-"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains(&format!("agent run --resume {id}")),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("tokens in,"), "{}", ran.stderr);

    // Resumed: the old call sits between the rules, before this run's words.
    let mock2 = rt.block_on(MockLlm::start(vec![answer("Still done.")]));
    let again = run(&mock2, &home, &ws, &["--resume", &id, "-p", "and now?"], "");
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.stdout, "Still done.\n");
    let e = &again.stderr;
    let start = e.find(&format!("── earlier in session {id} ──")).expect(e);
    let old_call = e.find("→ list_dir").expect(e);
    let end = e.find("── this run ──").expect(e);
    let new_words = e.rfind("Still done.").expect(e);
    assert!(start < old_call && old_call < end && end < new_words, "{e}");
}

#[test]
fn the_task_comes_from_stdin_with_dash_p_dash_or_a_pipe() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![answer("one"), answer("two")]));
    let (home, ws) = (
        Dir::new("runin-home", As::Root),
        Dir::new("runin-ws", As::Root),
    );
    let ran = run(&mock, &home, &ws, &["-p", "-"], "the task from stdin\n");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let ran = run(&mock, &home, &ws, &[], "the task from a pipe\n");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let sent: Vec<String> = mock.requests().iter().map(|r| r.raw_body.clone()).collect();
    assert!(sent[0].contains("the task from stdin"), "{}", sent[0]);
    assert!(!sent[0].contains(r#""content":"-""#), "{}", sent[0]);
    assert!(sent[1].contains("the task from a pipe"), "{}", sent[1]);
    // Nothing on stdin and no -p: refused, saying how.
    let ran = run(&mock, &home, &ws, &[], "");
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("-p PROMPT"), "{}", ran.stderr);
    assert_eq!(mock.requests().len(), 2, "nothing sent for it");
}

#[test]
fn an_edit_shows_as_a_diff_plain_when_not_a_terminal() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let args = serde_json::json!({"path": "notes.txt", "old": "hello", "new": "hello, world"});
    let mock = rt.block_on(MockLlm::start(vec![
        openai::call_reply("call_1", "str_replace", args),
        answer("Edited."),
    ]));
    let (home, ws) = (
        Dir::new("rundiff-home", As::Root),
        Dir::new("rundiff-ws", As::Root),
    );
    std::fs::write(ws.0.join("notes.txt"), "hello\n").unwrap();
    let ran = run(&mock, &home, &ws, &["-p", "edit the notes"], "");
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let e = &ran.stderr;
    let call = e.find("→ str_replace").expect(e);
    let removed = e.find("    - hello\n").expect(e);
    let added = e.find("    + hello, world\n").expect(e);
    assert!(call < removed && removed < added, "{e}");
    assert!(!e.contains('\x1b'), "no colour into a pipe: {e:?}");
}
