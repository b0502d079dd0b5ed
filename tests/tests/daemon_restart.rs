//! What a daemon session keeps across a restart of `agentd serve` beyond its history: "allow
//! always" lasts for the session, resumed too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::openai::answer_reply as answer;
use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use daemon::{Client, Daemon, Place, workspace};
use protocol::Encoding;
use protocol::control::*;
use protocol::event::Event;
use protocol::session::FinishReason;
use protocol::verdict::ApprovalDecision;
use std::time::Duration;

fn mkdir() -> Reply {
    Reply::stream(vec![
        openai::tool(
            0,
            Some("call_mk"),
            Some("bash"),
            r#"{"command": "mkdir -p made"}"#,
        ),
        openai::finish("tool_calls"),
    ])
}

#[test]
fn allow_always_lasts_for_the_session_across_a_restart() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        mkdir(),
        answer("made"),
        mkdir(),
        answer("made again"),
    ]));
    let place = Place::new("");
    let ws = workspace();
    let d = Daemon::start(&place, &mock.url());
    let (id, last) = rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        a.send(&id, "make it").await;
        let approval = loop {
            if let Event::ApprovalRequested(r) = a.event().await.event {
                break r.approval;
            }
        };
        let reply = Request::ApprovalReply(ApprovalReply {
            session: id.clone(),
            approval,
            decision: ApprovalDecision::AllowAlways,
        });
        assert_eq!(a.ask(reply).await, ResponseBody::Ok);
        let rest = a.until_turn_finished().await;
        (id, rest.last().unwrap().seq.0)
    });
    assert_eq!(d.sigterm(Duration::from_secs(30)), Some(0));
    let _d = Daemon::start(&place, &mock.url());
    rt.block_on(async {
        let mut b = Client::connect(&place.socket, Encoding::Bincode).await;
        b.resume(&id).await;
        b.attach(&id, Some(last)).await;
        b.send(&id, "once more").await;
        // Attached and never answering: the ask is settled by what was allowed always.
        let events = b.until_turn_finished().await;
        let resolved = events.iter().find_map(|e| match &e.event {
            Event::ApprovalResolved(r) => Some(r.clone()),
            _ => None,
        });
        let resolved = resolved.unwrap();
        assert_eq!(
            (resolved.decision, resolved.by.as_str()),
            (ApprovalDecision::AllowOnce, "session")
        );
        match &events.last().unwrap().event {
            Event::TurnFinished(f) => assert_eq!(f.reason, FinishReason::Done),
            other => panic!("{other:?}"),
        }
    });
    assert!(
        mock.requests()[3].raw_body.contains("made") && ws.0.join("made").is_dir(),
        "the call ran"
    );
}

#[test]
fn past_the_grace_period_sigterm_interrupts_the_step_and_the_session_resumes_from_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        Reply::stream(vec![
            openai::tool(
                0,
                Some("call_long"),
                Some("bash"),
                r#"{"command": "sleep 30; echo never-g"}"#,
            ),
            openai::finish("tool_calls"),
        ]),
        answer("picked up"),
    ]));
    let place = Place::new(
        "[server]\nshutdown_grace_ms = 500\n[policy]\nbash = [{ pattern = \"sleep *\", action = \"allow\" }]\n",
    );
    let ws = workspace();
    let d = Daemon::start(&place, &mock.url());
    let started = std::time::Instant::now();
    let (id, rest, code) = rt.block_on(async {
        let mut a = Client::connect(&place.socket, Encoding::Json).await;
        let id = a.create(&ws.0, "on_risk").await;
        a.attach(&id, None).await;
        a.send(&id, "wait").await;
        while !matches!(a.event().await.event, Event::ToolCallStarted(_)) {}
        let stopping = tokio::task::spawn_blocking(move || d.sigterm(Duration::from_secs(30)));
        let rest = a.until_turn_finished().await;
        (id, rest, stopping.await.unwrap())
    });
    assert_eq!(code, Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "not the call's 30 s"
    );
    let result = rest.iter().find_map(|e| match &e.event {
        Event::ToolCallFinished(f) => Some(f.content.clone()),
        _ => None,
    });
    assert!(result.unwrap().starts_with("[interrupted"), "{rest:?}");
    let last = rest.last().unwrap().seq.0;
    match &rest.last().unwrap().event {
        Event::TurnFinished(f) => assert_eq!(f.reason, FinishReason::Interrupted),
        other => panic!("{other:?}"),
    }
    assert!(agentd_e2e::processes_with("echo never-g").is_empty());
    let _d = Daemon::start(&place, &mock.url());
    rt.block_on(async {
        let mut b = Client::connect(&place.socket, Encoding::Json).await;
        b.resume(&id).await;
        b.attach(&id, Some(last)).await;
        b.send(&id, "go on").await;
        let events = b.until_turn_finished().await;
        match &events.last().unwrap().event {
            Event::TurnFinished(f) => assert_eq!(f.reason, FinishReason::Done),
            other => panic!("{other:?}"),
        }
    });
    let sent = mock.requests()[1].body["messages"].as_array().unwrap()[1..].to_vec();
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"], "{sent:#?}");
    assert!(
        sent[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("[interrupted")
    );
}
