//! Sessions from the REPL's side, in a real terminal (`tmux`), in-process and against a running
//! `agentd serve`: an `agent` opened and left keeps nothing, so `agent -c` afterwards continues
//! the last conversation of this directory; `/delete` removes sessions (the open one: and goes on
//! in a new one); a message that starts with a path is sent as typed, `//text` sends `/text`,
//! and a lone unknown `/word` says how to send it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;
mod tmux;

use agentd_e2e::mock_llm::openai::answer_reply as answer;
use agentd_e2e::mock_llm::{MockLlm, Reply};
use agentd_e2e::{As, Dir, agent_against};
use std::path::PathBuf;
use std::process::Command;
use tmux::Pane;

/// The last line of every turn, after which the prompt is back.
const TURN_END: &str = "tokens in,";

struct Setup {
    rt: tokio::runtime::Runtime,
    mock: MockLlm,
    ws: Dir,
    home: Dir,
}

fn setup(script: Vec<Reply>) -> Setup {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(script));
    Setup {
        mock,
        rt,
        ws: Dir::new("repl-sess-ws", As::Root),
        home: Dir::new("repl-sess-home", As::Root),
    }
}

impl Setup {
    /// `agent ARGS` (in-process unless ARGS say `--socket`) with the mock as its model.
    fn agent(&self, args: &[&str]) -> Command {
        let mut cmd = agent_against(As::Root, &self.home.0, &self.mock.url());
        cmd.args(args).env("TERM", "xterm-256color");
        cmd
    }

    fn pane(&self, args: &[&str]) -> Pane {
        Pane::start(&self.agent(args), &self.ws.0)
    }

    /// Where in-process sessions are kept.
    fn sessions(&self) -> PathBuf {
        self.home.0.join(".local/state/agentd/sessions")
    }
}

/// The sessions kept in `dir`: those with a log (an open session not written yet holds a
/// directory of its own, for its spill folder, and no log).
fn kept(dir: &std::path::Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().join("log.jsonl").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// The id the banner shows: `session ID ·`.
fn session_of(screen: &str) -> String {
    let after = screen
        .split("session ")
        .nth(1)
        .expect("the banner names it");
    after.split_whitespace().next().unwrap().to_owned()
}

/// One conversation (a message and its answer), then an `agent` opened and left without a
/// message, then `agent -c`: the conversation, not the empty one. `args` pick the host.
fn continue_after_an_empty_open_and_quit(s: &Setup, args: &[&str], kept_in: &std::path::Path) {
    let first = s.pane(args);
    let id = session_of(&first.wait_for("/help for commands"));
    first.type_line("tell me about apples");
    first.wait_for_n(TURN_END, 1);
    first.type_line("/quit");
    assert_eq!(first.exit_status(), 0);
    let screen = first.capture(false);
    assert!(
        screen.contains(&format!(
            "session {id} is kept: continue it here with `agent -c`"
        )),
        "{screen}"
    );
    assert_eq!(kept(kept_in), vec![id.clone()]);

    let empty = s.pane(args);
    let screen = empty.wait_for("/help for commands");
    assert_ne!(session_of(&screen), id);
    empty.type_line("/quit");
    assert_eq!(empty.exit_status(), 0);
    assert!(
        !empty.capture(false).contains("is kept"),
        "nothing to continue"
    );
    assert_eq!(
        kept(kept_in),
        vec![id.clone()],
        "the empty one left nothing"
    );

    let mut with_c = args.to_vec();
    with_c.push("-c");
    let again = s.pane(&with_c);
    let screen = again.wait_for("(end of history)");
    assert_eq!(session_of(&screen), id, "{screen}");
    assert!(screen.contains("First answer, about apples."), "{screen}");
    again.type_line("/quit");
    assert_eq!(again.exit_status(), 0);
}

#[test]
fn continue_after_an_empty_open_and_quit_in_process() {
    let s = setup(vec![answer("First answer, about apples.")]);
    continue_after_an_empty_open_and_quit(&s, &["--no-daemon"], &s.sessions());
    drop(s.rt);
}

#[test]
fn continue_after_an_empty_open_and_quit_in_the_daemon() {
    let s = setup(vec![answer("First answer, about apples.")]);
    let place = daemon::Place::new("");
    let _daemon = daemon::Daemon::start(&place, &s.mock.url());
    let socket = place.socket.display().to_string();
    continue_after_an_empty_open_and_quit(
        &s,
        &["--socket", &socket],
        &place.state.0.join("sessions"),
    );
    drop(s.rt);
}

#[test]
fn a_message_that_starts_with_a_path_is_sent_and_a_double_slash_escapes() {
    let s = setup(vec![
        answer("The hosts file looks fine."),
        answer("Help is on its way."),
    ]);
    let pane = s.pane(&["--no-daemon"]);
    pane.wait_for("/help for commands");
    pane.type_line("/etc/hosts looks wrong, can you check it?");
    pane.wait_for("The hosts file looks fine.");
    pane.wait_for_n(TURN_END, 1);
    pane.type_line("//help");
    pane.wait_for("Help is on its way.");
    pane.wait_for_n(TURN_END, 2);
    let sent: Vec<String> = s
        .mock
        .requests()
        .iter()
        .map(|r| r.raw_body.clone())
        .collect();
    assert!(
        sent[0].contains("/etc/hosts looks wrong, can you check it?"),
        "{sent:?}"
    );
    assert!(sent[1].contains(r#""content":"/help""#), "{sent:?}");
    // A lone unknown word is not sent: it says how.
    pane.type_line("/frobnicate");
    let screen = pane.wait_for("unknown command /frobnicate");
    assert!(screen.contains("start it with //"), "{screen}");
    assert_eq!(s.mock.requests().len(), 2, "nothing sent for it");
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);
    drop(s.rt);
}

#[test]
fn delete_removes_another_session_and_the_open_one() {
    let s = setup(vec![answer("one"), answer("two")]);
    let first = s.pane(&["--no-daemon"]);
    let a = session_of(&first.wait_for("/help for commands"));
    first.type_line("first");
    first.wait_for_n(TURN_END, 1);
    first.type_line("/quit");
    assert_eq!(first.exit_status(), 0);

    let pane = s.pane(&["--no-daemon"]);
    let b = session_of(&pane.wait_for("/help for commands"));
    pane.type_line("second");
    pane.wait_for_n(TURN_END, 1);
    let mut both = vec![a.clone(), b.clone()];
    both.sort();
    assert_eq!(kept(&s.sessions()), both);
    pane.type_line(&format!("/delete {a}"));
    pane.wait_for(&format!("deleted session {a}"));
    assert_eq!(kept(&s.sessions()), vec![b.clone()]);
    pane.type_line("/delete");
    let screen = pane.wait_for("this is a new one:");
    assert!(screen.contains(&format!("deleted session {b}")), "{screen}");
    assert!(kept(&s.sessions()).is_empty(), "{:?}", kept(&s.sessions()));
    pane.type_line("/sessions");
    pane.wait_for("no sessions");
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);
    assert!(kept(&s.sessions()).is_empty(), "the new one was never used");
    drop(s.rt);
}
