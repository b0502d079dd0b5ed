//! What a daemon session keeps across a restart of `agentd serve` beyond its history: "allow
//! always" lasts for the session, resumed too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

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

fn answer(text: &str) -> Reply {
    Reply::stream(vec![openai::text(text), openai::finish("stop")])
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
        let resume = Request::ResumeSession(ResumeSession {
            session: id.clone(),
        });
        assert_eq!(b.ask(resume).await, ResponseBody::Ok);
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
