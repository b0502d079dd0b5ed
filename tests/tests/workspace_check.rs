//! Workspace sanity with the real `agent run`: a workspace that is a home, `/`, a home's parent
//! or a directory holding the agent's config is refused before anything runs (the scripted
//! model is never asked); with `--allow-broad-workspace` a home is worked in, and its keys,
//! the agent's API key and the shell's startup files are neither readable nor writable.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use agentd_e2e::mock_llm::{MockLlm, Recorded};
use agentd_e2e::{As, Dir, agent_against};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

/// A home under `root/home/me` with an API key, an SSH key and a `.bashrc`.
fn home_in(root: &Dir) -> PathBuf {
    let home = root.0.join("home/me");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join(".agents")).unwrap();
    std::fs::write(home.join(".agents/env"), "API_KEY=sk-secret-e2e\n").unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE-KEY-e2e\n").unwrap();
    std::fs::write(home.join(".bashrc"), "# mine\n").unwrap();
    home
}

/// `agent run` in `ws` with HOME `home`, the model a script that first runs `command`.
fn run(home: &Path, ws: &Path, command: &str, extra: &[&str]) -> (Output, Vec<Recorded>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_1", command),
        answer("done"),
    ]));
    let state = Dir::new("wscheck-state", As::Root);
    let out = agent_against(As::Root, home, &mock.url())
        .args(["run", "-p", "work", "--output-format", "json"])
        .arg("--workspace")
        .arg(ws)
        .arg("--state-dir")
        .arg(&state.0)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (out, mock.requests())
}

/// Refused: exit 2, the error names the workspace, why and the flag; the model never asked,
/// so no call ran.
fn assert_refused(home: &Path, ws: &Path, why: &str, extra: &[(&str, &str)]) {
    let marker = std::env::temp_dir().join(agentd_e2e::unique("wscheck-ran"));
    let command = format!("touch {}", marker.display());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![bash("c", &command), answer("x")]));
    let state = Dir::new("wscheck-state", As::Root);
    let mut cmd = agent_against(As::Root, home, &mock.url());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd
        .args(["run", "-p", "work", "--dangerously-skip-permissions"])
        .arg("--workspace")
        .arg(ws)
        .arg("--state-dir")
        .arg(&state.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let shown = ws.canonicalize().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}: {err}", ws.display());
    let named = format!("workspace {} is too broad", shown.display());
    for part in [named.as_str(), why, "--allow-broad-workspace"] {
        assert!(err.contains(part), "{part:?} in: {err}");
    }
    assert!(mock.requests().is_empty(), "the model was asked");
    assert!(!marker.exists(), "a call ran");
}

#[test]
fn a_home_root_a_homes_parent_or_the_configs_parent_is_refused_before_anything_runs() {
    let root = Dir::new("wscheck-root", As::Root);
    let home = home_in(&root);
    assert_refused(&home, &home, "it is the home directory", &[]);
    assert_refused(&home, Path::new("/"), "root of the filesystem", &[]);
    assert_refused(
        &home,
        &root.0.join("home"),
        "it holds the home directory",
        &[],
    );
    // Through a symlink and `..`: compared where it leads.
    std::os::unix::fs::symlink(&home, root.0.join("link")).unwrap();
    assert_refused(&home, &root.0.join("link"), "it is the home directory", &[]);
    assert_refused(
        &home,
        &root.0.join("home/../home/me"),
        "home directory",
        &[],
    );
    // A config directory outside the home: the directory holding it is refused.
    let elsewhere = Dir::new("wscheck-cfg", As::Root);
    std::fs::create_dir_all(elsewhere.0.join("xdg/agentd")).unwrap();
    let xdg = elsewhere.0.join("xdg").display().to_string();
    assert_refused(
        &home,
        &elsewhere.0,
        "the agent's config",
        &[("XDG_CONFIG_HOME", xdg.as_str())],
    );
}

#[test]
fn an_allowed_home_keeps_its_keys_and_startup_files_from_every_call() {
    let root = Dir::new("wscheck-allowed", As::Root);
    let home = home_in(&root);
    let command = "cat ~/.agents/env; cat ~/.ssh/id_rsa; echo planted >> ~/.bashrc; \
                   echo planted > ~/.profile; touch ~/made-here && echo wrote-workspace";
    let (out, requests) = run(
        &home,
        &home,
        command,
        &["--allow-broad-workspace", "--dangerously-skip-permissions"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(requests.len(), 2, "{err}");
    let result = requests[1].body.to_string();
    assert!(
        result.contains("wrote-workspace"),
        "the call ran, in a writable home: {result}"
    );
    assert!(home.join("made-here").exists());
    for secret in ["sk-secret-e2e", "PRIVATE-KEY-e2e"] {
        assert!(
            !result.contains(secret),
            "{secret} reached the model: {result}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".bashrc")).unwrap(),
        "# mine\n"
    );
    assert!(
        !home.join(".profile").exists(),
        "a startup file the call made is moved aside"
    );
}
