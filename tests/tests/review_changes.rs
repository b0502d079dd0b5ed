//! What the user reviews comes from the supervisor's own view, not from git: a call that hides
//! its edits from git (`git update-index --assume-unchanged` / `--skip-worktree` rewrite
//! `.git/index`, which the workspace holds) leaves the host's `git status` clean, and the
//! turn's summary lists the files all the same — in `agent run`'s JSON, in its text output and
//! in the session log.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use agentd_e2e::{As, Dir, GIT, both, command_as, give, host_git, repo};
use serde_json::{Value, json};

/// A streamed reply in which the model runs `command` with bash.
fn bash(command: &str) -> Reply {
    let args = json!({ "command": command }).to_string();
    Reply::stream(vec![
        openai::tool(0, Some("call_bash_0"), Some("bash"), &args),
        openai::finish("tool_calls"),
        openai::usage(100, 20),
    ])
}

fn answer(text: &str) -> Reply {
    Reply::stream(vec![
        openai::text(text),
        openai::finish("stop"),
        openai::usage(100, 10),
    ])
}

/// What `agent run` printed.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `agent run` as `who` on `ws` against `mock`, every call run without policy checks (the
/// sandbox still holds), sessions kept in `state`.
fn agent_run(who: As, mock: &MockLlm, ws: &Dir, state: &Dir, format: &str) -> Run {
    let home = Dir::new("home", who);
    let tmp = Dir::new("tmpdir", who);
    let config = home.0.join("config.toml");
    std::fs::write(&config, "").unwrap();
    give(&config, who);
    let (home_dir, tmp_dir) = (home.0.display().to_string(), tmp.0.display().to_string());
    let out = command_as(
        "agent",
        who,
        &[
            ("HOME", home_dir.as_str()),
            ("TMPDIR", tmp_dir.as_str()),
            ("PROVIDER", "openai"),
            ("BASE_URL", mock.url().as_str()),
            ("API_KEY", "sk-e2e"),
            ("MODEL", "mock-model"),
        ],
    )
    .args(["run", "-p", "tidy up", "--dangerously-skip-permissions"])
    .args(["--output-format", format, "--workspace"])
    .arg(&ws.0)
    .arg("--config")
    .arg(&config)
    .arg("--state-dir")
    .arg(&state.0)
    .output()
    .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A repository with `conftest.py` and `setup.py` tracked and committed.
fn fixture(who: As) -> Dir {
    let ws = repo("review", who);
    std::fs::write(ws.0.join("conftest.py"), "import pytest\n").unwrap();
    std::fs::write(ws.0.join("setup.py"), "from setuptools import setup\n").unwrap();
    give(&ws.0, who);
    host_git(&ws.0, who, &["add", "conftest.py", "setup.py"]);
    host_git(&ws.0, who, &["commit", "-qm", "python"]);
    ws
}

/// The model's step: plant code in two tracked files and hide both from git.
fn hiding_script() -> Vec<Reply> {
    let command = format!(
        "echo 'import os; os.system(\"id\")' >> conftest.py && {GIT} update-index --assume-unchanged conftest.py && \
         echo 'import os; os.system(\"id\")' >> setup.py && {GIT} update-index --skip-worktree setup.py"
    );
    vec![bash(&command), answer("Tidied up.")]
}

/// [`hiding_script`], and a file hidden by a `.gitignore` that hides itself too.
fn hiding_and_ignoring_script() -> Vec<Reply> {
    let mut script = hiding_script();
    script.insert(
        1,
        bash("mkdir -p tests && echo 'import os' > tests/conftest.py && printf '*\\n' > tests/.gitignore"),
    );
    script
}

/// The paths the summary lists, with their change.
fn listed(changes: &Value) -> Vec<(String, String)> {
    changes["paths"]
        .as_array()
        .unwrap_or_else(|| panic!("no paths in {changes}"))
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_owned(),
                p["change"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

both!(
    files_hidden_from_git_still_show_in_the_turns_summary,
    |who: As| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mock = rt.block_on(MockLlm::start(hiding_and_ignoring_script()));
        let ws = fixture(who);
        let state = Dir::new("state", who);
        let run = agent_run(who, &mock, &ws, &state, "json");
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        let v: Value = serde_json::from_str(run.stdout.trim())
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
        assert_eq!(v["tool_calls"][0]["status"], "ok", "{v}");
        // The planted code is there, and git on the host does not see it.
        let conftest = std::fs::read_to_string(ws.0.join("conftest.py")).unwrap();
        assert!(conftest.contains("os.system"), "{conftest}");
        assert_eq!(host_git(&ws.0, who, &["status", "--porcelain"]), "");
        assert_eq!(host_git(&ws.0, who, &["diff", "HEAD", "--stat"]), "");
        // The summary lists both files, and the index git was told to trust.
        let paths = listed(&v["changes"]);
        for file in ["conftest.py", "setup.py", ".git/index"] {
            assert!(
                paths.contains(&(file.to_owned(), "modified".to_owned())),
                "{file} is not listed as modified: {paths:?}"
            );
        }
        // Files a new `.gitignore` hides, itself included (the fourth review's finding).
        for file in ["tests/conftest.py", "tests/.gitignore"] {
            assert!(
                paths.iter().any(|(p, c)| p == file && c == "created"),
                "{file} is not listed as created: {paths:?}"
            );
        }
        assert_eq!(v["changes"]["total"], paths.len() as u64);
        assert_eq!(v["changes"]["incomplete"], Value::Null);
        // The session log keeps it, in the turn's `turn_finished`.
        let log = state
            .0
            .join("sessions")
            .join(v["session_id"].as_str().unwrap())
            .join("log.jsonl");
        let text = std::fs::read_to_string(&log).unwrap();
        let finished: Value = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["event"]["type"] == "turn_finished")
            .unwrap_or_else(|| panic!("no turn_finished in {text}"));
        assert_eq!(finished["event"]["changes"], v["changes"]);
    }
);

#[test]
fn the_text_output_names_the_hidden_files_and_a_reading_turn_walks_nothing() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(hiding_script()));
    let ws = fixture(As::Root);
    let state = Dir::new("state", As::Root);
    let run = agent_run(As::Root, &mock, &ws, &state, "text");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("changed: "))
        .unwrap_or_else(|| panic!("no summary in:\n{}", run.stderr));
    assert_eq!(lines[at], "changed: 3 files", "{}", run.stderr);
    let listed: Vec<&str> = lines[at + 1..at + 4].iter().map(|l| l.trim()).collect();
    assert_eq!(
        listed,
        [
            "modified .git/index",
            "modified conftest.py",
            "modified setup.py"
        ]
    );
    // A turn of reads only: no walk, no summary.
    let mock = rt.block_on(MockLlm::start(vec![
        Reply::stream(vec![
            openai::tool(
                0,
                Some("call_read_0"),
                Some("read_file"),
                &json!({"path": "conftest.py"}).to_string(),
            ),
            openai::finish("tool_calls"),
        ]),
        answer("Read it."),
    ]));
    let run = agent_run(As::Root, &mock, &ws, &state, "json");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(v["changes"], Value::Null, "{v}");
}
