//! SIGHUP reloads the daemon's policy without dropping a session: the running session's next
//! call is checked against the new policy; a bad new config is refused and the policy in force
//! stays, the daemon and the session going on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use daemon::{Client, Daemon, Place, workspace};
use protocol::Encoding;
use protocol::event::{Event, EventEnvelope, ToolStatus};
use std::time::Duration;

fn status_of(events: &[EventEnvelope]) -> Option<ToolStatus> {
    events.iter().find_map(|e| match &e.event {
        Event::ToolCallFinished(f) => Some(f.status),
        _ => None,
    })
}

fn policy(action: &str) -> String {
    format!("[policy]\nbash = [{{ pattern = \"mkdir *\", action = \"{action}\" }}]\n")
}

fn hangup(d: &Daemon) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(d.child.id() as i32),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
    // The reload is done when the signal is handled; give the daemon a moment to get to it.
    std::thread::sleep(Duration::from_millis(500));
}

#[test]
fn sighup_replaces_the_policy_of_a_running_session_and_a_bad_config_is_refused() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("c1", "mkdir first"),
        answer("made first"),
        bash("c2", "mkdir second"),
        answer("second was refused"),
        bash("c3", "mkdir third"),
        answer("third was refused"),
    ]));
    let place = Place::new(&policy("allow"));
    let ws = workspace();
    let d = Daemon::start(&place, &mock.url());
    let mut a = rt.block_on(Client::connect(&place.socket, Encoding::Json));
    let id = rt.block_on(a.create(&ws.0, "never"));
    rt.block_on(a.attach(&id, None));
    let mut turn = |text: &str| {
        rt.block_on(async {
            a.send(&id, text).await;
            a.until_turn_finished().await
        })
    };

    let first = turn("make first");
    assert_eq!(status_of(&first), Some(ToolStatus::Ok), "{first:?}");
    assert!(ws.0.join("first").is_dir());

    // The same session, after a reload that denies mkdir.
    std::fs::write(&place.config, policy("deny")).unwrap();
    hangup(&d);
    let second = turn("make second");
    assert_eq!(status_of(&second), Some(ToolStatus::Denied), "{second:?}");
    assert!(!ws.0.join("second").exists());

    // A bad config: refused, the deny stays, the daemon and the session go on.
    std::fs::write(&place.config, policy("perhaps")).unwrap();
    hangup(&d);
    let third = turn("make third");
    assert_eq!(status_of(&third), Some(ToolStatus::Denied), "{third:?}");
    assert!(!ws.0.join("third").exists());
    assert_eq!(mock.requests().len(), 6, "every turn ran to its answer");
}
