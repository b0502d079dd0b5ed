//! Operations on a running session in `agentd serve`, end to end: the real daemon on a real
//! socket, its model the scripted mock LLM over HTTP on loopback. `compact` makes one summary
//! call and the next request carries the summary instead of the old turns; it is refused with
//! nothing to compact, while a turn runs, and on another uid's session. `set_approval_mode`
//! `never` denies an asking call without an approval request; `set_model` names the new model
//! in the next request; both hold after a restart and `resume_session`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use agentd_e2e::test_user;
use daemon::{Client, Daemon, Place, as_user, code, workspace};
use protocol::Encoding;
use protocol::control::*;
use protocol::event::{Event, EventEnvelope, ToolStatus};
use protocol::ids::SessionId;
use protocol::session::FinishReason;
use protocol::verdict::ApprovalMode;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

const ALLOW_SLEEP: &str = "[policy]\nbash = [{ pattern = \"sleep *\", action = \"allow\" }]\n";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

/// The text of every message a request sent, in order.
fn texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn compact(session: &SessionId) -> Request {
    Request::Compact(Compact {
        session: session.clone(),
    })
}

fn set_mode(session: &SessionId, mode: ApprovalMode) -> Request {
    Request::SetApprovalMode(SetApprovalMode {
        session: session.clone(),
        mode,
    })
}

fn set_model(session: &SessionId, model: &str) -> Request {
    Request::SetModel(SetModel {
        session: session.clone(),
        model: model.into(),
    })
}

/// Events up to and including the first that `done` matches.
async fn until(client: &mut Client, done: impl Fn(&Event) -> bool) -> Vec<EventEnvelope> {
    let mut seen = Vec::new();
    loop {
        let e = client.event().await;
        let end = done(&e.event);
        seen.push(e);
        if end {
            return seen;
        }
    }
}

#[test]
fn compact_summarises_once_and_the_next_request_carries_the_summary() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![
        answer("Apples are red."),
        answer("Pears are green."),
        answer("SUMMARY-OF-FRUIT: the user asked about apples."),
        bash("call_sleep", "sleep 3"),
        answer("Plums are purple."),
    ]));
    let place = Place::new(ALLOW_SLEEP);
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    let id = rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Bincode).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        let empty = a.ask(compact(&id)).await;
        assert_eq!(code(&empty), Some(ErrorCode::BadRequest), "{empty:?}");
        let ResponseBody::Error(e) = &empty else {
            unreachable!()
        };
        assert!(e.message.contains("nothing to compact"), "{e:?}");
        assert!(mock.requests().is_empty(), "no model call for nothing");

        for text in ["tell me about apples", "and pears?"] {
            assert_eq!(a.send(&id, text).await, ResponseBody::Ok);
            a.until_turn_finished().await;
        }
        assert_eq!(a.ask(compact(&id)).await, ResponseBody::Ok);
        let seen = until(&mut a, |e| matches!(e, Event::ContextCompacted(_))).await;
        let Event::ContextCompacted(c) = &seen.last().unwrap().event else {
            unreachable!()
        };
        assert_eq!(c.messages_summarised, 2, "the first turn; the second stays");
        assert!(c.summary.contains("SUMMARY-OF-FRUIT"), "{c:?}");
        assert_eq!(mock.requests().len(), 3, "exactly one summary call");
        let summary_call = texts(&mock.requests()[2].body).concat();
        assert!(
            summary_call.contains("tell me about apples"),
            "{summary_call}"
        );

        // While a turn runs, compacting (or switching the model) is busy, as a message is.
        assert_eq!(a.send(&id, "and plums?").await, ResponseBody::Ok);
        until(&mut a, |e| matches!(e, Event::ToolCallStarted(_))).await;
        for request in [compact(&id), set_model(&id, "other")] {
            let busy = a.ask(request).await;
            assert_eq!(code(&busy), Some(ErrorCode::Conflict), "{busy:?}");
        }
        let rest = a.until_turn_finished().await;
        let Event::TurnFinished(f) = &rest.last().unwrap().event else {
            unreachable!()
        };
        assert_eq!(f.reason, FinishReason::Done);
        id
    });
    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "no model call for the refused ones");
    let next = texts(&requests[3].body);
    let all = next.concat();
    assert!(all.contains("SUMMARY-OF-FRUIT"), "{next:#?}");
    assert!(!all.contains("tell me about apples"), "{next:#?}");
    assert!(!all.contains("Apples are red."), "{next:#?}");
    assert!(all.contains("and pears?") && all.contains("Pears are green."));
    assert!(all.contains("and plums?"), "{next:#?}");
    let log = std::fs::read_to_string(place.log(&id)).unwrap();
    assert!(log.contains(r#""type":"context_compacted""#), "{log}");

    // Another uid can neither compact it nor change its mode or model.
    let Some(_user) = test_user() else {
        eprintln!("skipped the other-uid part: needs root to create the test user");
        return;
    };
    // Let the test user reach the socket (its own mode is daemon_socket's to test).
    std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let theirs = id.as_str();
    let frames = as_user(
        &place.socket,
        &[
            json!({"type": "compact", "session": theirs}),
            json!({"type": "set_approval_mode", "session": theirs, "mode": "never"}),
            json!({"type": "set_model", "session": theirs, "model": "other"}),
        ],
    );
    let answers: Vec<&Value> = frames.iter().filter(|f| f["type"] == "response").collect();
    assert_eq!(answers.len(), 3, "{frames:#?}");
    for answer in answers {
        assert_eq!(answer["body"]["code"], "not_found", "{answer}");
    }
    assert_eq!(mock.requests().len(), 5, "no model call for another uid");
}

#[test]
fn never_denies_without_asking_and_the_mode_and_model_survive_a_restart() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_1", "mkdir made"),
        answer("It was refused."),
        bash("call_2", "mkdir made-again"),
        answer("Refused again."),
    ]));
    let place = Place::new("");
    let ws = workspace();
    let d = Daemon::start(&place, &mock.url());
    let id = rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        let skip = a.ask(set_mode(&id, ApprovalMode::SkipPermissions)).await;
        assert_eq!(code(&skip), Some(ErrorCode::BadRequest), "{skip:?}");
        let empty = a.ask(set_model(&id, "  ")).await;
        assert_eq!(code(&empty), Some(ErrorCode::BadRequest), "{empty:?}");
        assert_eq!(
            a.ask(set_mode(&id, ApprovalMode::Never)).await,
            ResponseBody::Ok
        );
        assert_eq!(a.ask(set_model(&id, "other-model")).await, ResponseBody::Ok);
        let changes = until(&mut a, |e| matches!(e, Event::ModelChanged(_))).await;
        let kinds: Vec<&str> = changes.iter().map(|e| e.event.variant_name()).collect();
        assert_eq!(kinds, ["ApprovalModeChanged", "ModelChanged"]);
        denied_without_asking(&mut a, &id, "make a directory").await;
        let listed = a
            .ask(Request::ListSessions(ListSessions { all_users: false }))
            .await;
        let ResponseBody::Sessions(list) = listed else {
            panic!("{listed:?}")
        };
        assert_eq!(list.sessions[0].approval, ApprovalMode::Never);
        assert_eq!(list.sessions[0].model, "other-model");
        id
    });
    assert_eq!(mock.requests()[0].body["model"], "other-model");
    assert!(!ws.0.join("made").exists());
    assert_eq!(d.sigterm(Duration::from_secs(20)), Some(0));

    let _d = Daemon::start(&place, &mock.url());
    rt.block_on(async {
        let mut b = Client::connect(&place.socket, Encoding::Bincode).await;
        b.resume(&id).await;
        let replayed = b.attach(&id, None).await;
        for _ in 0..replayed {
            b.event().await;
        }
        denied_without_asking(&mut b, &id, "try once more").await;
    });
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    for r in &requests[2..] {
        assert_eq!(r.body["model"], "other-model", "after the restart too");
    }
    assert!(!ws.0.join("made-again").exists());
}

/// Sends `text`; the turn's one asking call is denied without an approval request.
async fn denied_without_asking(client: &mut Client, id: &SessionId, text: &str) {
    assert_eq!(client.send(id, text).await, ResponseBody::Ok);
    let turn = client.until_turn_finished().await;
    assert!(
        !turn
            .iter()
            .any(|e| matches!(e.event, Event::ApprovalRequested(_))),
        "asked: {turn:#?}"
    );
    let denied = turn.iter().find_map(|e| match &e.event {
        Event::ToolCallFinished(f) => Some(f),
        _ => None,
    });
    let denied = denied.expect("the call finished");
    assert_eq!(denied.status, ToolStatus::Denied, "{denied:?}");
    assert!(denied.content.contains("`never`"), "{denied:?}");
}

#[test]
fn a_message_over_the_size_limit_is_refused_and_nothing_is_logged() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![answer("short one taken")]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Bincode).await;
        let id = c.create(&ws.0, "on_risk").await;
        let logged = || std::fs::metadata(place.log(&id)).map_or(0, |m| m.len());
        let before = logged();
        let big = "x".repeat((1 << 20) + 1);
        let body = c.send(&id, &big).await;
        assert_eq!(code(&body), Some(ErrorCode::BadRequest), "{body:?}");
        let ResponseBody::Error(e) = &body else {
            panic!("{body:?}")
        };
        assert!(e.message.contains("1048577"), "{e:?}");
        assert_eq!(logged(), before, "nothing of it reached the log");
        assert!(mock.requests().is_empty(), "nor the model");
        // A message at the limit is taken.
        c.attach(&id, None).await;
        let body = c.send(&id, &"y".repeat(1 << 20)).await;
        assert!(matches!(body, ResponseBody::Ok), "{body:?}");
        c.until_turn_finished().await;
        assert_eq!(mock.requests().len(), 1);
    });
}

#[test]
fn a_session_whose_log_passed_its_bound_takes_no_new_turn() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![
        answer("one"),
        answer("two"),
        answer("three"),
    ]));
    // A small bound, so that a few turns pass it.
    let place = Place::new("[server]\nmax_session_log_bytes = 3000\n");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Bincode).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        let long = "x".repeat(1500);
        let mut refused = None;
        for _ in 0..3 {
            match a.send(&id, &long).await {
                ResponseBody::Ok => {
                    a.until_turn_finished().await;
                }
                other => {
                    refused = Some(other);
                    break;
                }
            }
        }
        let refused = refused.expect("a turn past the bound was refused");
        assert_eq!(code(&refused), Some(ErrorCode::Conflict), "{refused:?}");
        let ResponseBody::Error(e) = &refused else {
            unreachable!()
        };
        assert!(e.message.contains("max_session_log_bytes"), "{e:?}");
        assert!(std::fs::metadata(place.log(&id)).unwrap().len() > 3000);
        assert!(mock.requests().len() < 3, "no model call once refused");
        // A new session of the same user starts empty and works.
        let other = a.create(&ws.0, "on_risk").await;
        a.attach(&other, None).await;
        assert_eq!(a.send(&other, "hello").await, ResponseBody::Ok);
        a.until_turn_finished().await;
    });
}
