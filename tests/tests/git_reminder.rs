//! The git reminder of each request (issue 11, layer 3): the branch, and the files a step
//! changed, read by a probe in a sandboxed worker after steps that can write; not stored in the
//! history; absent outside a repository.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::openai::{
    answer_reply as answer, bash_reply as bash, call_reply as call,
};
use agentd_e2e::mock_llm::{MockLlm, Reply};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::json;
use std::process::Stdio;

/// A write_file of `new.txt`.
fn write_new(id: &str) -> Reply {
    call(
        id,
        "write_file",
        json!({ "path": "new.txt", "content": "x\n" }),
    )
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "git {args:?}");
}

/// Runs `agent run` in `ws` against the replies; returns the last message of each request.
fn run(ws: &Dir, replies: Vec<Reply>) -> Vec<String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(replies));
    let home = Dir::new("gitrem-home", As::Root);
    let state = Dir::new("gitrem-state", As::Root);
    let url = mock.url();
    let out = agent_against(As::Root, &home.0, &url)
        .args(["run", "-p", "go", "--output-format", "json", "--workspace"])
        .arg(&ws.0)
        .arg("--state-dir")
        .arg(&state.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    mock.requests()
        .iter()
        .map(|r| {
            r.body["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[test]
fn each_request_says_the_branch_and_what_the_last_step_changed() {
    let ws = Dir::new("gitrem-ws", As::Root);
    std::fs::write(ws.0.join("notes.txt"), "hello\n").unwrap();
    git(&ws.0, &["init", "-q", "-b", "main"]);
    git(&ws.0, &["add", "notes.txt"]);
    git(&ws.0, &["commit", "-q", "-m", "init"]);
    let last = run(
        &ws,
        vec![write_new("c1"), bash("c2", "cat notes.txt"), answer("done")],
    );
    assert_eq!(last.len(), 3);
    assert!(
        last[0].contains("<reminder>") && last[0].contains("Git branch: main"),
        "{}",
        last[0]
    );
    assert!(
        last[1].contains("Changed since the last step: new.txt"),
        "{}",
        last[1]
    );
    assert!(
        last[2].contains("Git branch: main") && !last[2].contains("Changed since"),
        "a step that changed nothing reports nothing: {}",
        last[2]
    );
}

#[test]
fn outside_a_repository_there_is_no_git_reminder() {
    let ws = Dir::new("gitrem-plain", As::Root);
    let last = run(&ws, vec![write_new("c1"), answer("done")]);
    assert!(last.iter().all(|m| !m.contains("Git branch")), "{last:?}");
}
