//! The REPL and what happens around it, in a real terminal (`tmux`): the daemon restarting
//! under a REPL (it connects again, says so in one line, and goes on — no log line over the
//! prompt), the REPL's warnings kept in `agent.log` under the state directory instead of on its
//! screen, and a provider's retry shown on the status line with its cause.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;
mod tmux;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::answer_reply as answer;
use agentd_e2e::{As, Dir, agent_against};
use std::time::Duration;
use tmux::Pane;

/// The last line of every turn, after which the prompt is back.
const TURN_END: &str = "tokens in,";

/// The id the banner shows: `session ID ·`.
fn session_of(screen: &str) -> String {
    let after = screen
        .split("session ")
        .nth(1)
        .expect("the banner names it");
    after.split_whitespace().next().unwrap().to_owned()
}

#[test]
fn the_repl_connects_again_when_the_daemon_restarts_and_goes_on() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        answer("Before the restart."),
        answer("After the restart."),
        answer("In a fresh session."),
    ]));
    let (ws, home) = (
        Dir::new("recon-ws", As::Root),
        Dir::new("recon-home", As::Root),
    );
    let place = daemon::Place::new("");
    let first = daemon::Daemon::start(&place, &mock.url());
    let mut cmd = agent_against(As::Root, &home.0, "http://127.0.0.1:9/unused");
    cmd.arg("--socket")
        .arg(&place.socket)
        .env("TERM", "xterm-256color");
    let pane = Pane::start(&cmd, &ws.0);
    let id = session_of(&pane.wait_for("/help for commands"));
    pane.type_line("hello");
    pane.wait_for("Before the restart.");
    pane.wait_for_n(TURN_END, 1);

    assert_eq!(first.sigterm(Duration::from_secs(20)), Some(0));
    let second = daemon::Daemon::start(&place, &mock.url());
    pane.type_line("are you there?");
    let screen = pane.wait_for("After the restart.");
    assert!(
        screen.contains(&format!(
            "agentd restarted: connected again, session {id} goes on"
        )),
        "{screen}"
    );
    assert!(
        !screen.contains("WARN"),
        "no log line on the screen: {screen}"
    );
    assert!(!screen.contains("Broken pipe"), "{screen}");
    pane.wait_for_n(TURN_END, 2);
    let sent = mock.requests().last().unwrap().raw_body.clone();
    assert!(
        sent.contains("hello") && sent.contains("are you there?"),
        "{sent}"
    );

    // A session with no message is not kept: after a restart a new one takes its place.
    pane.type_line("/new");
    let screen = pane.wait_for("this is a new one:");
    let fresh = screen.rsplit("this is a new one: ").next().unwrap();
    let fresh = fresh.split_whitespace().next().unwrap().to_owned();
    assert_eq!(second.sigterm(Duration::from_secs(20)), Some(0));
    let _third = daemon::Daemon::start(&place, &mock.url());
    pane.type_line("anyone?");
    let screen = pane.wait_for("In a fresh session.");
    assert!(
        screen.contains(&format!("session {fresh} had no message and was not kept")),
        "{screen}"
    );
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);
    drop(rt);
}

#[test]
fn a_warning_goes_to_the_log_file_not_the_screen() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![answer("Read nothing odd.")]));
    let (ws, home) = (
        Dir::new("replog-ws", As::Root),
        Dir::new("replog-home", As::Root),
    );
    // A symlinked AGENTS.md is skipped with a warning.
    std::fs::write(ws.0.join("secret.txt"), "SECRET\n").unwrap();
    std::os::unix::fs::symlink(ws.0.join("secret.txt"), ws.0.join("AGENTS.md")).unwrap();
    let mut cmd = agent_against(As::Root, &home.0, &mock.url());
    cmd.arg("--no-daemon").env("TERM", "xterm-256color");
    let pane = Pane::start(&cmd, &ws.0);
    pane.wait_for("/help for commands");
    pane.type_line("hello");
    pane.wait_for("Read nothing odd.");
    pane.wait_for_n(TURN_END, 1);
    pane.type_line("/help");
    let log = home.0.join(".local/state/agentd/agent.log");
    let screen = pane.wait_for(&format!("logs: {}", log.display()));
    assert!(!screen.contains("symbolic link"), "{screen}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("AGENTS.md") && text.contains("symbolic link"),
        "{text}"
    );
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);
    drop(rt);
}

#[test]
fn a_provider_retry_shows_on_the_status_line_with_its_cause_not_as_a_log_line() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        agentd_e2e::mock_llm::Reply::error(503, "the mock is overloaded", &[("retry-after", "2")]),
        answer("Recovered."),
    ]));
    let (ws, home) = (
        Dir::new("retry-ws", As::Root),
        Dir::new("retry-home", As::Root),
    );
    let mut cmd = agent_against(As::Root, &home.0, &mock.url());
    cmd.arg("--no-daemon").env("TERM", "xterm-256color");
    let pane = Pane::start(&cmd, &ws.0);
    pane.wait_for("/help for commands");
    pane.type_line("hello");
    let screen = pane.wait_for("the model call failed");
    assert!(
        screen.contains("the mock is overloaded"),
        "the cause: {screen}"
    );
    assert!(screen.contains("try 2 in 2s"), "{screen}");
    let screen = pane.wait_for("Recovered.");
    assert!(
        !screen.contains("WARN"),
        "no log line on the screen: {screen}"
    );
    pane.wait_for_n(TURN_END, 1);
    let log = std::fs::read_to_string(home.0.join(".local/state/agentd/agent.log")).unwrap();
    assert!(log.contains("retrying"), "{log}");
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);
    drop(rt);
}
