//! Sessions in `agentd serve`, end to end: the real daemon on a real socket, its model the
//! scripted mock LLM over HTTP on loopback. Create and drive a session; two clients get the same
//! events; the first approval wins; detach, re-attach and replay after N; an interrupt; another
//! uid can drive none of it (and its own session's workers run as it); `kill -9` mid-turn and
//! the session resumes; SIGTERM lets the step finish and exits 0; an ask with no client attached
//! is denied after the wait.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{
    answer_reply as answer, bash_reply as bash, call_reply as call,
};
use agentd_e2e::{As, Dir, command_for, processes_with, test_user};
use daemon::{Client, Daemon, Place, code, wait_for, workspace};
use protocol::Encoding;
use protocol::control::*;
use protocol::event::{Event, EventEnvelope, ToolStatus};
use protocol::ids::{Seq, SessionId};
use protocol::session::{FinishReason, SessionState};
use protocol::verdict::ApprovalDecision;
use serde_json::{Value, json};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Duration;

const ALLOW_SLEEP: &str = "[policy]\nbash = [{ pattern = \"sleep *\", action = \"allow\" }, { pattern = \"touch *\", action = \"allow\" }]\n";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

fn kinds(events: &[EventEnvelope]) -> Vec<&'static str> {
    events.iter().map(|e| e.event.variant_name()).collect()
}

fn finished(events: &[EventEnvelope]) -> &protocol::event::TurnFinished {
    match &events.last().unwrap().event {
        Event::TurnFinished(f) => f,
        other => panic!("not the turn's end: {other:?}"),
    }
}

/// The conversation a request sent, without the system prompt.
fn conversation(request: &Value) -> Vec<Value> {
    request["messages"].as_array().unwrap()[1..].to_vec()
}

#[test]
fn two_clients_attached_get_the_same_events_and_the_uid_limit_holds() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![
        call("call_1", "list_dir", json!({})),
        answer("one file: notes.txt"),
    ]));
    let place = Place::new("[server]\nmax_sessions_per_uid = 1\n");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Bincode).await;
        let mut b = Client::connect(&place.socket, Encoding::Json).await;
        let id = a.create(&ws.0, "on_risk").await;
        let again = serde_json::from_value(json!({"type": "create_session", "workspace": ws.0,
            "model": null, "approval": "on_risk", "max_steps": null, "title": null}))
        .unwrap();
        let refused = a.ask(again).await;
        assert_eq!(code(&refused), Some(ErrorCode::Forbidden), "{refused:?}");
        assert_eq!(a.attach(&id, None).await, 0);
        assert_eq!(b.attach(&id, None).await, 0);
        assert_eq!(a.send(&id, "what is here?").await, ResponseBody::Ok);
        let seen_a = a.until_turn_finished().await;
        let seen_b = b.until_turn_finished().await;
        assert_eq!(seen_a, seen_b, "both clients get the same events");
        let seqs: Vec<u64> = seen_a.iter().map(|e| e.seq.0).collect();
        assert_eq!(seqs, (1..=seen_a.len() as u64).collect::<Vec<_>>());
        let k = kinds(&seen_a);
        for want in [
            "UserMessage",
            "TurnStarted",
            "ToolCallStarted",
            "ToolCallFinished",
        ] {
            assert!(k.contains(&want), "{want} missing from {k:?}");
        }
        assert_eq!(finished(&seen_a).reason, FinishReason::Done);
        let listed = a
            .ask(Request::ListSessions(ListSessions { all_users: false }))
            .await;
        let ResponseBody::Sessions(list) = listed else {
            panic!("{listed:?}")
        };
        assert_eq!(list.sessions.len(), 1);
        assert_eq!(list.sessions[0].state, SessionState::Idle);
        assert_eq!(list.sessions[0].last_seq, Seq(seen_a.len() as u64));
        assert_eq!(list.sessions[0].title.as_deref(), Some("e2e"));
    });
}

#[test]
fn the_first_approval_wins_and_a_later_one_is_told_so() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_mk", "mkdir approved"),
        answer("made it"),
    ]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        let mut b = Client::connect(&place.socket, Encoding::Bincode).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        b.attach(&id, None).await;
        assert_eq!(a.send(&id, "make a dir").await, ResponseBody::Ok);
        let approval = loop {
            if let Event::ApprovalRequested(r) = a.event().await.event {
                break r.approval;
            }
        };
        loop {
            if let Event::ApprovalRequested(r) = b.event().await.event {
                assert_eq!(r.approval, approval, "both were asked");
                break;
            }
        }
        let listed = b
            .ask(Request::ListSessions(ListSessions { all_users: false }))
            .await;
        let ResponseBody::Sessions(list) = listed else {
            panic!("{listed:?}")
        };
        assert_eq!(list.sessions[0].state, SessionState::WaitingApproval);
        let reply = |decision| {
            Request::ApprovalReply(ApprovalReply {
                session: id.clone(),
                approval,
                decision,
            })
        };
        assert_eq!(
            a.ask(reply(ApprovalDecision::AllowOnce)).await,
            ResponseBody::Ok
        );
        let late = b.ask(reply(ApprovalDecision::Deny)).await;
        assert_eq!(code(&late), Some(ErrorCode::Conflict), "{late:?}");
        let rest = a.until_turn_finished().await;
        let resolved = rest.iter().find_map(|e| match &e.event {
            Event::ApprovalResolved(r) => Some(r.clone()),
            _ => None,
        });
        let resolved = resolved.unwrap();
        assert_eq!(
            (resolved.decision, resolved.by.as_str()),
            (ApprovalDecision::AllowOnce, "user")
        );
        assert_eq!(finished(&rest).reason, FinishReason::Done);
    });
    assert!(ws.0.join("approved").is_dir(), "the approved call ran");
}

#[test]
fn a_client_detaches_reattaches_and_gets_everything_after_n() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![answer("first"), answer("second")]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        let id = a.create(&ws.0, "never").await;
        a.attach(&id, None).await;
        a.send(&id, "one").await;
        let first = a.until_turn_finished().await;
        let n = first.last().unwrap().seq.0;
        let detach = || {
            Request::DetachSession(DetachSession {
                session: id.clone(),
            })
        };
        assert_eq!(a.ask(detach()).await, ResponseBody::Ok);
        assert_eq!(code(&a.ask(detach()).await), Some(ErrorCode::NotFound));
        // The session goes on without a client.
        assert_eq!(a.send(&id, "two").await, ResponseBody::Ok);
        let log = place.log(&id);
        wait_for("the second turn's end in the log", || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .matches("turn_finished")
                .count()
                == 2
        });
        let replaying = a.attach(&id, Some(n)).await;
        let second = a.until_turn_finished().await;
        assert_eq!(
            replaying,
            second.len() as u64,
            "exactly what came after {n}"
        );
        let seqs: Vec<u64> = second.iter().map(|e| e.seq.0).collect();
        assert_eq!(seqs, (n + 1..=n + replaying).collect::<Vec<_>>());
        assert!(matches!(&second[0].event, Event::UserMessage(u) if u.text == "two"));
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text.lines().count() as u64,
            1 + n + replaying,
            "the log holds the same"
        );
    });
}

#[test]
fn a_clients_interrupt_answers_every_started_call_and_kills_it() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![bash(
        "call_long",
        "sleep 30; echo never-d",
    )]));
    let place = Place::new(ALLOW_SLEEP);
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        a.send(&id, "wait").await;
        while !matches!(a.event().await.event, Event::ToolCallStarted(_)) {}
        tokio::time::sleep(Duration::from_millis(300)).await;
        let busy = a.send(&id, "another").await;
        assert_eq!(
            code(&busy),
            Some(ErrorCode::Conflict),
            "one turn at a time: {busy:?}"
        );
        let interrupt = Request::Interrupt(Interrupt {
            session: id.clone(),
        });
        assert_eq!(a.ask(interrupt).await, ResponseBody::Ok);
        let rest = a.until_turn_finished().await;
        let result = rest.iter().find_map(|e| match &e.event {
            Event::ToolCallFinished(f) => Some(f.clone()),
            _ => None,
        });
        assert!(
            result.unwrap().content.starts_with("[interrupted"),
            "{rest:?}"
        );
        assert_eq!(finished(&rest).reason, FinishReason::Interrupted);
    });
    wait_for("the call's processes killed", || {
        processes_with("echo never-d").is_empty()
    });
}

#[test]
fn another_uid_can_drive_none_of_it_and_its_own_workers_run_as_it() {
    let Some(user) = test_user() else {
        eprintln!("skipped: needs root to create the test user");
        return;
    };
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_touch", "touch mine.txt"),
        answer("touched"),
    ]));
    let place = Place::new(ALLOW_SLEEP);
    let _d = Daemon::start(&place, &mock.url());
    let root_ws = workspace();
    let user_ws = Dir::new("dsess-user-ws", As::User);
    let root_session = rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        a.create(&root_ws.0, "on_risk").await
    });
    // Let the test user reach the socket (its own mode is daemon_socket's to test).
    std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let script = r#"
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
def send(o):
    b = json.dumps(o).encode(); s.sendall(struct.pack(">I", len(b)) + b)
def recv():
    n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
    return json.loads(s.recv(n, socket.MSG_WAITALL))
send({"hello": {"protocol": 1, "encoding": "json"}}); recv()
theirs, mine = sys.argv[2], sys.argv[3]
requests = [
    {"type": "attach_session", "session": theirs, "after_seq": None},
    {"type": "send_message", "session": theirs, "text": "hi"},
    {"type": "interrupt", "session": theirs},
    {"type": "approval_reply", "session": theirs, "approval": 1, "decision": "allow_once"},
    {"type": "resume_session", "session": theirs},
    {"type": "delete_session", "session": theirs},
    {"type": "create_session", "workspace": sys.argv[4], "model": None, "approval": "on_risk", "max_steps": None, "title": None},
    {"type": "create_session", "workspace": mine, "model": None, "approval": "on_risk", "max_steps": None, "title": None},
]
for i, req in enumerate(requests):
    send({"id": i, "request": req}); print(json.dumps(recv()), flush=True)
"#;
    let out = command_for("/usr/bin/python3", As::User)
        .arg("-c")
        .arg(script)
        .arg(&place.socket)
        .arg(root_session.as_str())
        .arg(&user_ws.0)
        .arg(&root_ws.0)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        8,
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (i, line) in lines[..6].iter().enumerate() {
        assert_eq!(line["body"]["code"], "not_found", "request {i}: {line}");
    }
    assert_eq!(
        lines[6]["body"]["code"], "forbidden",
        "root's workspace: {}",
        lines[6]
    );
    assert_eq!(lines[7]["body"]["type"], "session_created", "{}", lines[7]);
    assert_eq!(lines[7]["body"]["owner_uid"], user.uid);
    // Root's own session is untouched, and root cannot drive the user's either.
    let user_session: protocol::ids::SessionId =
        serde_json::from_value(lines[7]["body"]["id"].clone()).unwrap();
    rt.block_on(async {
        let mut root = Client::connect(&place.socket, Encoding::Json).await;
        assert_eq!(root.attach(&root_session, None).await, 0);
        let theirs = root.send(&user_session, "hi").await;
        assert_eq!(code(&theirs), Some(ErrorCode::NotFound), "{theirs:?}");
    });
    // The user's own session runs; its call ran as the user.
    let script = r#"
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
def send(o):
    b = json.dumps(o).encode(); s.sendall(struct.pack(">I", len(b)) + b)
def recv():
    n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
    return json.loads(s.recv(n, socket.MSG_WAITALL))
send({"hello": {"protocol": 1, "encoding": "json"}}); recv()
send({"id": 1, "request": {"type": "attach_session", "session": sys.argv[2], "after_seq": None}}); recv()
send({"id": 2, "request": {"type": "send_message", "session": sys.argv[2], "text": "touch it"}})
while True:
    m = recv(); print(json.dumps(m), flush=True)
    if m.get("type") == "event" and m["event"]["type"] == "turn_finished": break
"#;
    let out = command_for("/usr/bin/python3", As::User)
        .arg("-c")
        .arg(script)
        .arg(&place.socket)
        .arg(user_session.as_str())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(r#""reason": "done""#),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made = std::fs::metadata(user_ws.0.join("mine.txt")).unwrap();
    assert_eq!(
        (made.uid(), made.gid()),
        (user.uid, user.gid),
        "the worker ran as the owner"
    );
}

#[test]
fn kill_9_mid_turn_then_a_restart_and_the_session_resumes() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_long", "sleep 30; echo never-k"),
        answer("picked up where we were"),
    ]));
    let place = Place::new(ALLOW_SLEEP);
    let ws = workspace();
    let d = Daemon::start(&place, &mock.url());
    let id = rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Bincode).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        a.send(&id, "wait").await;
        while !matches!(a.event().await.event, Event::ToolCallStarted(_)) {}
        id
    });
    std::thread::sleep(Duration::from_millis(300));
    d.kill9();
    wait_for("the call's processes gone with agentd", || {
        processes_with("echo never-k").is_empty()
    });
    let _d = Daemon::start(&place, &mock.url());
    rt.block_on(async {
        let mut b = Client::connect(&place.socket, Encoding::Json).await;
        let listed = b
            .ask(Request::ListSessions(ListSessions { all_users: false }))
            .await;
        let ResponseBody::Sessions(list) = listed else {
            panic!("{listed:?}")
        };
        assert_eq!(list.sessions.len(), 1);
        assert_eq!(list.sessions[0].state, SessionState::Stopped);
        let stopped = b.send(&id, "go on").await;
        assert_eq!(
            code(&stopped),
            Some(ErrorCode::Conflict),
            "resume first: {stopped:?}"
        );
        let resume = || {
            Request::ResumeSession(ResumeSession {
                session: id.clone(),
            })
        };
        assert_eq!(b.ask(resume()).await, ResponseBody::Ok);
        assert_eq!(
            b.ask(resume()).await,
            ResponseBody::Ok,
            "resuming a loaded one is fine"
        );
        let last = list.sessions[0].last_seq.0;
        assert_eq!(b.attach(&id, Some(last)).await, 0);
        assert_eq!(b.send(&id, "go on").await, ResponseBody::Ok);
        let rest = b.until_turn_finished().await;
        assert_eq!(finished(&rest).reason, FinishReason::Done);
        assert_eq!(rest[0].seq.0, last + 1, "numbering goes on");
    });
    let sent = conversation(&mock.requests()[1].body);
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"], "{sent:#?}");
    assert!(
        sent[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("[no result"),
        "{sent:#?}"
    );
}

#[test]
fn sigterm_lets_the_step_finish_saves_the_session_tells_clients_and_exits_0() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_short", "sleep 2"),
        answer("not asked: the daemon stopped"),
    ]));
    let place = Place::new(&format!(
        "[server]\nshutdown_grace_ms = 15000\n{ALLOW_SLEEP}"
    ));
    let ws = workspace();
    let d = Daemon::start(&place, &mock.url());
    let (id, rest, goodbye, code) = rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        a.send(&id, "wait a bit").await;
        while !matches!(a.event().await.event, Event::ToolCallStarted(_)) {}
        let stopping = tokio::task::spawn_blocking(move || d.sigterm(Duration::from_secs(30)));
        let rest = a.until_turn_finished().await;
        let goodbye = a.frame_after_events().await;
        (id, rest, goodbye, stopping.await.unwrap())
    });
    assert_eq!(code, Some(0), "agentd exits 0");
    let result = rest.iter().find_map(|e| match &e.event {
        Event::ToolCallFinished(f) => Some(f.status),
        _ => None,
    });
    assert_eq!(
        result,
        Some(ToolStatus::Ok),
        "the running step finished: {rest:?}"
    );
    let end = finished(&rest);
    assert_eq!(end.reason, FinishReason::Interrupted);
    assert!(
        end.message.as_deref().unwrap().contains("shutting down"),
        "{end:?}"
    );
    assert!(
        matches!(&goodbye, ServerMessage::Error(e) if e.code == ErrorCode::ShuttingDown),
        "{goodbye:?}"
    );
    assert_eq!(
        mock.requests().len(),
        1,
        "no step was started after SIGTERM"
    );
    // Saved: the log ends with the turn's end, and no one holds it.
    let text = std::fs::read_to_string(place.log(&id)).unwrap();
    assert!(
        text.lines().last().unwrap().contains("turn_finished"),
        "{text}"
    );
    let store = agentd::store::Store::open(&place.state.0).unwrap();
    agentd::store::log::SessionLog::reopen(&store, &id).unwrap();
}

#[test]
fn an_ask_with_no_client_attached_is_denied_after_the_wait_saying_so() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_mk", "mkdir unattended"),
        answer("ok, I will ask"),
    ]));
    let place = Place::new("[server]\napproval_wait_ms = 700\n");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        let id = a.create(&ws.0, "on_risk").await;
        // Nobody attached.
        assert_eq!(a.send(&id, "make a dir").await, ResponseBody::Ok);
        let log = place.log(&id);
        wait_for("the turn's end", || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("turn_finished")
        });
        a.attach(&id, None).await;
        let all = a.until_turn_finished().await;
        let resolved = all.iter().find_map(|e| match &e.event {
            Event::ApprovalResolved(r) => Some(r.clone()),
            _ => None,
        });
        let resolved = resolved.unwrap();
        assert_eq!(
            (resolved.decision, resolved.by.as_str()),
            (ApprovalDecision::Deny, "timeout")
        );
        let result = all.iter().find_map(|e| match &e.event {
            Event::ToolCallFinished(f) => Some(f.clone()),
            _ => None,
        });
        let result = result.unwrap();
        assert_eq!(result.status, ToolStatus::Denied);
        assert!(
            result.content.contains("no one answered"),
            "{}",
            result.content
        );
        assert_eq!(finished(&all).reason, FinishReason::Done);
    });
    // The log's times show the wait.
    let store = agentd::store::Store::open(&place.state.0).unwrap();
    let (found, _) = store.list();
    let records =
        agentd::store::read::load(&place.log(&SessionId::new(found[0].id.clone()).unwrap()))
            .unwrap()
            .records;
    let at = |kind: &str| {
        records
            .iter()
            .find(|r| r.event.variant_name() == kind)
            .unwrap()
            .unix_ms
    };
    assert!(
        at("ApprovalResolved") - at("ApprovalRequested") >= 700,
        "denied only after the wait"
    );
    assert!(
        !ws.0.join("unattended").exists(),
        "the denied call did not run"
    );
    assert!(
        mock.requests()[1].raw_body.contains("no one answered"),
        "the model was told"
    );
}
