//! A read-only session asked for over the socket (`create_session` with `read_only: true`): its
//! calls cannot write the workspace, the model is not offered the tools that write, and both
//! still hold after `kill -9`, a restart and `resume_session` (the option is in the log's header).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use daemon::{Client, Daemon, Place, workspace};
use protocol::Encoding;
use protocol::control::*;
use protocol::event::{Event, EventEnvelope, ToolStatus};
use protocol::ids::SessionId;
use serde_json::{Value, json};

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The result the model got for the turn's one call.
fn call_result(events: &[EventEnvelope]) -> (bool, String) {
    events
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolCallFinished(f) => Some((f.status != ToolStatus::Ok, f.content.clone())),
            _ => None,
        })
        .expect("the call finished")
}

/// What `touch` says when the filesystem refuses it (the mount, or Landlock behind it).
fn refused(content: &str) -> bool {
    content.contains("Read-only file system") || content.contains("Permission denied")
}

async fn create(c: &mut Client, ws: &std::path::Path, read_only: bool) -> SessionId {
    let request = serde_json::from_value(json!({"type": "create_session", "workspace": ws,
        "model": null, "approval": "skip_permissions", "max_steps": null, "title": null,
        "read_only": read_only}))
    .unwrap();
    match c.ask(request).await {
        ResponseBody::SessionCreated(info) => info.id,
        other => panic!("create_session: {other:?}"),
    }
}

#[test]
fn a_read_only_session_writes_nothing_offers_no_writers_and_stays_so_after_a_restart() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_1", "touch first.txt"),
        answer("could not"),
        bash("call_2", "touch second.txt"),
        answer("could not either"),
        bash("call_3", "touch third.txt"),
        answer("wrote it"),
    ]));
    let place = Place::new("");
    let ws = workspace();
    let d = Daemon::start(&place, &mock.url());
    let read_only = rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Bincode).await;
        let id = create(&mut c, &ws.0, true).await;
        c.attach(&id, None).await;
        assert_eq!(c.send(&id, "write a file").await, ResponseBody::Ok);
        let (is_error, content) = call_result(&c.until_turn_finished().await);
        assert!(is_error && refused(&content), "touch failed: {content}");
        id
    });
    assert!(!ws.0.join("first.txt").exists());
    d.kill9();

    let _d = Daemon::start(&place, &mock.url());
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Json).await;
        c.resume(&read_only).await;
        // Made after the restart: a session is kept from its first message on, so one made
        // before and never used would not be there to resume.
        let writable = create(&mut c, &ws.0, false).await;
        c.attach(&read_only, None).await;
        c.until_turn_finished().await; // the first turn, replayed
        assert_eq!(c.send(&read_only, "try again").await, ResponseBody::Ok);
        let (is_error, content) = call_result(&c.until_turn_finished().await);
        assert!(is_error && refused(&content), "{content}");
        // The same daemon, workspace and config: a session not asked to be read-only writes.
        c.attach(&writable, None).await;
        assert_eq!(c.send(&writable, "write").await, ResponseBody::Ok);
        let (is_error, content) = call_result(&c.until_turn_finished().await);
        assert!(!is_error, "{content}");
    });
    assert!(!ws.0.join("second.txt").exists(), "read-only after resume");
    assert!(ws.0.join("third.txt").exists(), "the other session wrote");

    let bodies: Vec<Value> = mock.requests().iter().map(|r| r.body.clone()).collect();
    assert_eq!(bodies.len(), 6);
    for (i, body) in bodies.iter().enumerate() {
        let names = tool_names(body);
        let writers = names
            .iter()
            .any(|n| n == "write_file" || n == "str_replace");
        assert_eq!(writers, i >= 4, "request {i} offered {names:?}");
        assert!(names.iter().any(|n| n == "read_file"), "{names:?}");
    }
}
