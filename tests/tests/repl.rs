//! The interactive `agent` (no subcommand), driven in a real terminal (the approval and Ctrl-C
//! cases as root and as an unprivileged user): `tmux` runs it in a
//! detached 200×50 pane, `send-keys` types, `capture-pane` reads the screen. Its model is the
//! scripted mock LLM over HTTP on loopback. A prompt and its answer; an approval prompt answered
//! `n`, then `y` on the next try, the directory existing only after the `y`; Ctrl-C interrupting a
//! long command while the session goes on; `/resume` and `agent -c` showing an earlier
//! session's history; no escape codes when piped or with `NO_COLOR`; and the same REPL against a
//! running `agentd serve` (`--socket`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;
mod tmux;

use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use agentd_e2e::mock_llm::{MockLlm, Reply};
use agentd_e2e::{As, Dir, agent_against, both};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tmux::Pane;

/// A workspace, a home (its state directory holds the sessions), and the mock.
struct Setup {
    who: As,
    rt: tokio::runtime::Runtime,
    mock: MockLlm,
    ws: Dir,
    home: Dir,
}

fn setup(script: Vec<Reply>) -> Setup {
    setup_as(As::Root, script)
}

/// The same, with `agent` run as `who` (its workspace and home owned by `who`).
fn setup_as(who: As, script: Vec<Reply>) -> Setup {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(script));
    Setup {
        who,
        mock,
        rt,
        ws: Dir::new("repl-ws", who),
        home: Dir::new("repl-home", who),
    }
}

impl Setup {
    /// `agent --no-daemon ARGS` in the workspace, with the mock as its model.
    fn agent(&self, args: &[&str]) -> Command {
        let mut cmd = agent_against(self.who, &self.home.0, &self.mock.url());
        cmd.arg("--no-daemon")
            .args(args)
            .env("TERM", "xterm-256color");
        cmd
    }

    fn pane(&self, args: &[&str]) -> Pane {
        Pane::start(&self.agent(args), &self.ws.0)
    }
}

/// The last line of every turn, after which the prompt is back.
const TURN_END: &str = "tokens in,";

/// The id the banner shows: `session ID ·`.
fn session_of(screen: &str) -> String {
    let after = screen
        .split("session ")
        .nth(1)
        .expect("the banner names the session");
    after.split_whitespace().next().unwrap().to_owned()
}

both!(
    a_prompt_is_answered_and_an_approval_is_refused_then_given,
    |who| {
        let s = setup_as(
            who,
            vec![
                answer("Hello from the mock."),
                bash("call_1", "mkdir newdir"),
                answer("You said no; I left it."),
                bash("call_2", "mkdir newdir"),
                answer("Created newdir."),
            ],
        );
        let pane = s.pane(&[]);
        pane.wait_for("/help for commands");
        pane.type_line("say hello");
        pane.wait_for("Hello from the mock.");
        // Typed only once the prompt is back, as a person would.
        pane.wait_for_n(TURN_END, 1);

        pane.type_line("make a directory");
        let screen = pane.wait_for("allow? [y/a/n]");
        assert!(
            screen.contains("? approve bash\n  1 │ mkdir newdir"),
            "{screen}"
        );
        assert!(
            screen.contains("why: `mkdir newdir` matches no bash rule"),
            "{screen}"
        );
        pane.type_line("n");
        pane.wait_for("note for the model");
        pane.keys(&["Enter"]);
        let screen = pane.wait_for("You said no; I left it.");
        assert!(screen.contains("denied"), "{screen}");
        assert!(!s.ws.0.join("newdir").exists(), "refused, yet made");
        pane.wait_for_n(TURN_END, 2);

        pane.type_line("try again");
        pane.wait_for_n("allow? [y/a/n]", 2);
        assert!(!s.ws.0.join("newdir").exists(), "made before the answer");
        pane.type_line("y");
        pane.wait_for("Created newdir.");
        assert!(s.ws.0.join("newdir").is_dir(), "allowed, yet not made");
        pane.wait_for_n(TURN_END, 3);

        // The model was told of the refusal, and of the run.
        let requests = s.mock.requests();
        assert_eq!(requests.len(), 5);
        let told = requests[2].raw_body.to_lowercase();
        assert!(
            told.contains("denied") || told.contains("refused"),
            "{told}"
        );

        pane.type_line("/quit");
        assert_eq!(pane.exit_status(), 0);
        drop(s.rt);
    }
);

both!(
    ctrl_c_interrupts_a_long_command_and_the_session_goes_on,
    |who| {
        let s = setup_as(who, vec![bash("call_1", "sleep 30"), answer("Still here.")]);
        let pane = s.pane(&[]);
        pane.wait_for("/help for commands");
        pane.type_line("wait a while");
        pane.wait_for("bash sleep 30");
        let started = Instant::now();
        pane.keys(&["C-c"]);
        let screen = pane.wait_for("turn ended: interrupted");
        assert!(started.elapsed() < Duration::from_secs(20), "{screen}");
        pane.wait_for_n(TURN_END, 1);
        pane.type_line("are you there?");
        pane.wait_for("Still here.");
        pane.wait_for_n(TURN_END, 2);
        // The model was told the call was interrupted, in the request after the interrupt.
        let requests = s.mock.requests();
        let last = requests.last().unwrap().raw_body.clone();
        assert!(last.contains("interrupted"), "{last}");
        // Ctrl-C twice at an empty prompt leaves.
        pane.keys(&["C-c"]);
        pane.wait_for("Ctrl-C again");
        pane.keys(&["C-c"]);
        assert_eq!(pane.exit_status(), 0);
        drop(s.rt);
    }
);

#[test]
fn resume_and_continue_show_an_earlier_session_and_go_on_with_it() {
    let s = setup(vec![
        answer("First answer, about apples."),
        answer("Second answer, about pears."),
    ]);
    let first = s.pane(&[]);
    let screen = first.wait_for("/help for commands");
    let id = session_of(&screen);
    first.type_line("tell me about apples");
    first.wait_for_n(TURN_END, 1);
    first.type_line("/quit");
    assert_eq!(first.exit_status(), 0);

    // A new session lists the first and resumes it: its history is shown, and goes to the model.
    let second = s.pane(&[]);
    let screen = second.wait_for("/help for commands");
    assert_ne!(session_of(&screen), id, "a new session without -c");
    second.type_line("/sessions");
    second.wait_for(&id);
    second.type_line(&format!("/resume {id}"));
    let screen = second.wait_for("(end of history)");
    let history = screen.split("resumed session").nth(1).unwrap();
    assert!(history.contains("› tell me about apples"), "{screen}");
    assert!(history.contains("First answer, about apples."), "{screen}");
    second.type_line("and pears?");
    second.wait_for("Second answer, about pears.");
    second.wait_for_n(TURN_END, 2);
    let sent = s.mock.requests().last().unwrap().raw_body.clone();
    assert!(sent.contains("tell me about apples"), "{sent}");
    second.type_line("/quit");
    assert_eq!(second.exit_status(), 0);

    // `agent -c` opens the newest session of this directory: the resumed one, with both turns.
    let third = s.pane(&["-c"]);
    let screen = third.wait_for("(end of history)");
    assert_eq!(session_of(&screen), id, "{screen}");
    assert!(screen.contains("First answer, about apples."), "{screen}");
    assert!(screen.contains("Second answer, about pears."), "{screen}");
    third.keys(&["C-d"]);
    assert_eq!(third.exit_status(), 0);
    drop(s.rt);
}

/// Whether `text` holds an escape sequence.
fn has_escape(text: &str) -> bool {
    text.contains('\x1b')
}

#[test]
fn colour_only_at_a_terminal_without_no_color() {
    let s = setup(vec![
        bash("call_1", "printf 'ok\\033[31m red\\n'"),
        answer("Done."),
        bash("call_2", "printf 'ok\\033[31m red\\n'"),
        answer("Done."),
        bash("call_3", "printf 'ok\\033[31m red\\n'"),
        answer("Done."),
    ]);
    // At a terminal: coloured (tmux shows the attributes as escapes with `capture-pane -e`).
    let pane = s.pane(&["--approval", "never"]);
    pane.wait_for("/help for commands");
    pane.type_line("go");
    pane.wait_for_n(TURN_END, 1);
    assert!(has_escape(&pane.capture(true)), "no colour at a terminal");
    // The tool's escape is shown escaped, not acted on.
    assert!(pane.capture(false).contains(r"ok\x1b[31m red"));

    // NO_COLOR at a terminal: no colour.
    let mut cmd = s.agent(&["--approval", "never"]);
    cmd.env("NO_COLOR", "1");
    let plain = Pane::start(&cmd, &s.ws.0);
    plain.wait_for("/help for commands");
    plain.type_line("go");
    plain.wait_for_n(TURN_END, 1);
    let screen = plain.capture(true);
    assert!(!has_escape(&screen), "{screen:?}");
    assert!(screen.contains(r"ok\x1b[31m red"), "{screen}");

    // Piped: no escape at all in the bytes written.
    let mut cmd = s.agent(&["--approval", "never"]);
    let mut child = cmd
        .current_dir(&s.ws.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"go\n/quit\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("Done."), "{stdout}");
    assert!(stdout.contains(r"ok\x1b[31m red"), "{stdout}");
    assert!(!has_escape(&stdout), "{stdout:?}");
    drop(s.rt);
}

#[test]
fn the_same_repl_drives_a_session_in_a_running_daemon() {
    let s = setup(vec![
        answer("Hello from the daemon's model."),
        bash("call_1", "mkdir fromdaemon"),
        answer("Made it."),
    ]);
    let place = daemon::Place::new("");
    let _daemon = daemon::Daemon::start(&place, &s.mock.url());
    let mut cmd = agent_against(As::Root, &s.home.0, "http://127.0.0.1:9/unused");
    cmd.arg("--socket")
        .arg(&place.socket)
        .env("TERM", "xterm-256color");
    let pane = Pane::start(&cmd, &s.ws.0);
    let screen = pane.wait_for("/help for commands");
    assert!(screen.contains("agentd at"), "{screen}");
    let id = session_of(&screen);
    pane.type_line("hello");
    pane.wait_for("Hello from the daemon's model.");
    pane.wait_for_n(TURN_END, 1);
    pane.type_line("make a directory");
    let screen = pane.wait_for("allow? [y/a/n]");
    assert!(
        screen.contains("? approve bash\n  1 │ mkdir fromdaemon"),
        "{screen}"
    );
    assert!(
        !s.ws.0.join("fromdaemon").exists(),
        "made before the answer"
    );
    pane.type_line("y");
    pane.wait_for("Made it.");
    assert!(s.ws.0.join("fromdaemon").is_dir());
    pane.wait_for_n(TURN_END, 2);
    // The daemon's session changes its model; the REPL shows the one in force.
    pane.type_line("/model other");
    pane.wait_for("(model is now other)");
    pane.type_line("/model");
    pane.wait_for("model: other");
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);
    // The session is the daemon's: kept in its state directory.
    let log =
        std::fs::read_to_string(place.log(&protocol::ids::SessionId::new(&id).unwrap())).unwrap();
    assert!(log.contains("Made it."), "{log}");

    // `-c` through the daemon: the same session, its history replayed from the daemon.
    cmd.arg("-c");
    let again = Pane::start(&cmd, &s.ws.0);
    let screen = again.wait_for("(end of history)");
    assert_eq!(session_of(&screen), id, "{screen}");
    assert!(
        screen.contains("Hello from the daemon's model."),
        "{screen}"
    );
    again.type_line("/model");
    again.wait_for("model: other");
    again.type_line("/quit");
    assert_eq!(again.exit_status(), 0);
    drop(s.rt);
}

#[test]
fn the_interactive_demo_asks_and_always_covers_the_second_run() {
    let home = Dir::new("repl-demo-home", As::Root);
    let mut cmd = agentd_e2e::command_as("agent", As::Root, &[]);
    cmd.env("HOME", &home.0)
        .env("TERM", "xterm-256color")
        .args(["demo", "--interactive"]);
    let pane = Pane::start(&cmd, &home.0);
    let screen = pane.wait_for("allow? [y/a/n]");
    assert!(
        screen.contains("? approve bash\n  1 │ python3 test_add.py"),
        "{screen}"
    );
    pane.type_line("a");
    let screen = pane.wait_for("the sandbox keeps both out of reach");
    // One question: the second run of the test was covered by the "always".
    assert_eq!(screen.matches("allow? [y/a/n]").count(), 1, "{screen}");
    assert!(
        screen.contains("you said always for this session"),
        "{screen}"
    );
    assert!(screen.contains("ok: 1 test passed"), "{screen}");
    assert!(screen.contains("+ return a + b"), "the diff: {screen}");
    assert!(screen.contains("rm -rf build  [deny]"), "{screen}");
    let screen = pane.wait_for_n(TURN_END, 1);
    // What the turn changed, from the supervisor's walk: the fix, and nothing the sandbox stopped.
    assert!(
        screen.contains("changed: 1 file\n  modified add.py"),
        "{screen}"
    );
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);
    let screen = pane.capture(false);
    assert!(screen.contains("return a + b"), "{screen}");
}

#[test]
fn output_streams_live_the_spinner_carries_the_todo_and_slash_commands_answer() {
    let todos = serde_json::json!({"todos": [
        {"content": "Run the slow check", "active_form": "Running the slow check", "status": "in_progress"},
        {"content": "Report", "active_form": "Reporting", "status": "pending"},
    ]});
    let s = setup(vec![
        agentd_e2e::mock_llm::openai::call_reply("call_1", "write_todos", todos),
        bash("call_2", "echo first-line; sleep 4; echo last-line"),
        answer("Checked."),
    ]);
    let pane = s.pane(&[]);
    pane.wait_for("/help for commands");
    pane.type_line("check it");
    // While the command sleeps: its first line is there, it has not finished, and the spinner
    // says what the in-progress todo is doing.
    let screen = pane.wait_for("│ first-line");
    let after = screen.split("echo first-line").last().unwrap();
    assert!(!after.contains("└"), "finished already: {screen}");
    let screen = pane.wait_for("Running the slow check");
    assert!(!screen.contains("│ last-line"), "{screen}");
    pane.wait_for("│ last-line");
    pane.wait_for_n(TURN_END, 1);

    pane.type_line("/todos");
    let screen = pane.wait_for("[>] Run the slow check");
    assert!(screen.contains("[ ] Report"), "{screen}");
    pane.type_line("/model");
    pane.wait_for("model: mock-model");
    for (command, answer) in [
        ("/approval", "approval mode: on-risk"),
        ("/nonsense", "unknown command /nonsense"),
        ("/help", "/resume ID"),
    ] {
        let before = pane.capture(false).matches(answer).count();
        pane.type_line(command);
        pane.wait_for_n(answer, before + 1);
    }
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);
    drop(s.rt);
}

#[test]
fn a_refusal_with_a_note_interrupts_and_the_note_goes_to_the_model() {
    // The reply after the refusal may be asked for before the interrupt lands: twice, the same.
    let s = setup(vec![
        bash("call_1", "mkdir newdir"),
        answer("Understood: the tmp folder it is."),
        answer("Understood: the tmp folder it is."),
    ]);
    let pane = s.pane(&[]);
    pane.wait_for("/help for commands");
    pane.type_line("make a directory");
    pane.wait_for("allow? [y/a/n]");
    pane.type_line("n");
    pane.wait_for("note for the model");
    pane.type_line("use the tmp folder instead");
    let screen = pane.wait_for("Understood: the tmp folder it is.");
    assert!(screen.contains("› use the tmp folder instead"), "{screen}");
    assert!(!s.ws.0.join("newdir").exists());
    // The model got the refusal, then the note as the user's message.
    let last = s.mock.requests().last().unwrap().body.clone();
    let messages = last["messages"].as_array().unwrap();
    let user = messages.last().unwrap();
    assert_eq!(user["role"], "user", "{last}");
    assert!(
        user["content"]
            .to_string()
            .contains("use the tmp folder instead"),
        "{last}"
    );
    assert!(last.to_string().contains("Denied by the user"), "{last}");
    pane.wait_for_n(TURN_END, 2);
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);
    drop(s.rt);
}

#[test]
fn compact_approval_and_model_change_the_running_session_and_survive_continue() {
    let s = setup(vec![
        answer("Apples are red."),
        answer("Pears are green."),
        answer("SUMMARY-OF-FRUIT"),
        bash("call_1", "mkdir newdir"),
        answer("Refused, so no directory."),
        answer("Done on the other model."),
    ]);
    let pane = s.pane(&[]);
    pane.wait_for("/help for commands");
    pane.type_line("/compact");
    pane.wait_for("nothing to compact");
    pane.type_line("tell me about apples");
    pane.wait_for_n(TURN_END, 1);
    pane.type_line("and pears?");
    pane.wait_for_n(TURN_END, 2);
    pane.type_line("/compact");
    pane.wait_for("(history compacted: 2 messages summarised");
    assert_eq!(s.mock.requests().len(), 3, "one summary call");

    pane.type_line("/approval sometimes");
    pane.wait_for("unknown approval mode sometimes: the modes are on-risk, always, never");
    pane.type_line("/approval never");
    pane.wait_for("(approval mode is now never)");
    pane.type_line("/approval");
    pane.wait_for("approval mode: never");
    pane.type_line("make a directory");
    let screen = pane.wait_for("Refused, so no directory.");
    assert!(!screen.contains("allow? [y/a/n]"), "prompted: {screen}");
    assert!(!s.ws.0.join("newdir").exists());
    pane.wait_for_n(TURN_END, 3);
    let sent = s.mock.requests()[3].raw_body.clone();
    assert!(sent.contains("SUMMARY-OF-FRUIT"), "{sent}");
    assert!(!sent.contains("tell me about apples"), "{sent}");

    pane.type_line("/model other");
    pane.wait_for("(model is now other)");
    pane.type_line("one more");
    pane.wait_for("Done on the other model.");
    pane.wait_for_n(TURN_END, 4);
    assert_eq!(s.mock.requests()[5].body["model"], "other");
    pane.type_line("/quit");
    assert_eq!(pane.exit_status(), 0);

    // `agent -c`: the same session, still on the other model and in `never`.
    let again = s.pane(&["-c"]);
    again.wait_for("(end of history)");
    again.type_line("/model");
    again.wait_for("model: other");
    again.type_line("/approval");
    again.wait_for("approval mode: never");
    again.type_line("/quit");
    assert_eq!(again.exit_status(), 0);
    drop(s.rt);
}
