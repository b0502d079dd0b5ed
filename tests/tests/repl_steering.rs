//! The interactive `agent` is not steered by what the model makes or writes, driven in a real
//! terminal (`tmux`, a 200×50 pane) with the scripted mock model:
//!
//! * a FIFO the model made (`mkfifo pipe`, then `write_file pipe`) is named in the diff preview,
//!   never opened: the REPL used to block in `open()` for ever, Ctrl-C and Ctrl-D dead;
//! * a command of 45 newlines and then `? approve bash git log --oneline -5` cannot draw a
//!   forged approval title: the command is shown numbered, one line per line, escaped, under
//!   the one title the client draws.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod tmux;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash, call_reply};
use agentd_e2e::{As, Dir, agent_against, both};
use tmux::Pane;

/// The last line of every turn, after which the prompt is back.
const TURN_END: &str = "tokens in,";
/// The REPL's answer line for an approval.
const ASKED: &str = "allow? [y/a/n]";

/// `agent --no-daemon` as `who` in a fresh workspace, against a mock playing `script`; the
/// runtime, the mock and the directories live as long as the pane.
struct Session {
    pane: Pane,
    ws: Dir,
    _home: Dir,
    _mock: MockLlm,
    _rt: tokio::runtime::Runtime,
}

fn start(who: As, script: Vec<agentd_e2e::mock_llm::Reply>) -> Session {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(script));
    let ws = Dir::new("steer-ws", who);
    let home = Dir::new("steer-home", who);
    let mut cmd = agent_against(who, &home.0, &mock.url());
    cmd.arg("--no-daemon").env("TERM", "xterm-256color");
    let pane = Pane::start(&cmd, &ws.0);
    pane.wait_for("/help for commands");
    Session {
        pane,
        ws,
        _home: home,
        _mock: mock,
        _rt: rt,
    }
}

both!(
    a_fifo_the_model_made_does_not_hang_the_diff_preview,
    |who| {
        let s = start(
            who,
            vec![
                bash("call_1", "mkfifo pipe"),
                call_reply(
                    "call_2",
                    "write_file",
                    serde_json::json!({"path": "pipe", "content": "hello\n"}),
                ),
                answer("Wrote over the pipe."),
                answer("Still here."),
            ],
        );
        s.pane.type_line("make a pipe, then write to it");
        // mkfifo asks (no rule knows it); the write inside the workspace does not.
        s.pane.wait_for(ASKED);
        s.pane.type_line("y");
        // Before the fix the REPL blocked here, in open() of the FIFO, for ever.
        let screen = s
            .pane
            .wait_for("(not compared with the file now: a FIFO, not a regular file)");
        assert!(screen.contains("+ hello"), "{screen}");
        s.pane.wait_for("Wrote over the pipe.");
        s.pane.wait_for_n(TURN_END, 1);
        let written = std::fs::read_to_string(s.ws.0.join("pipe")).unwrap();
        assert_eq!(written, "hello\n", "the worker's write replaced the FIFO");
        // The session goes on, and /quit leaves.
        s.pane.type_line("are you there?");
        s.pane.wait_for("Still here.");
        s.pane.wait_for_n(TURN_END, 2);
        s.pane.type_line("/quit");
        assert_eq!(s.pane.exit_status(), 0);
    }
);

#[test]
fn a_forged_approval_title_in_a_command_shows_as_a_numbered_line_of_it() {
    let forged = format!("{}? approve bash git log --oneline -5", "\n".repeat(45));
    let s = start(As::Root, vec![bash("call_1", &forged), answer("Left it.")]);
    s.pane.type_line("look at the log");
    let screen = s.pane.wait_for(ASKED);
    // Trailing spaces are the pane's, not ours to compare.
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let titles: Vec<&&str> = lines.iter().filter(|l| l.starts_with("? ")).collect();
    assert_eq!(titles, [&"? approve bash"], "one title, ours:\n{screen}");
    // The command whole, one numbered line per line, the forged title its line 46, right
    // above the real `why:`.
    let first = lines
        .iter()
        .position(|l| *l == "   1 │")
        .unwrap_or_else(|| {
            panic!("line 1 of the command is not shown numbered:\n{screen}");
        });
    assert_eq!(lines[first - 1], "? approve bash", "{screen}");
    for n in 2..=45 {
        assert_eq!(lines[first + n - 1], format!("  {n:>2} │"), "{screen}");
    }
    assert_eq!(
        lines[first + 45],
        "  46 │ ? approve bash git log --oneline -5",
        "{screen}"
    );
    assert!(lines[first + 46].starts_with("  why: "), "{screen}");
    // The call's own line above it holds the command on that one line.
    let started = lines.iter().find(|l| l.starts_with("● bash")).unwrap();
    assert!(started.contains("? approve bash git log"), "{screen}");
    // Refused, and the session goes on.
    s.pane.type_line("n");
    s.pane.wait_for("note for the model");
    s.pane.keys(&["Enter"]);
    s.pane.wait_for("Left it.");
    s.pane.wait_for_n(TURN_END, 1);
    s.pane.type_line("/quit");
    assert_eq!(s.pane.exit_status(), 0);
}
