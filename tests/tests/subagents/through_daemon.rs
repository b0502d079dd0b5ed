//! A subagent in a daemon session: its ask is the session's own `approval_requested`, answered
//! by an attached client with `approval_reply` like any other; its other events come tagged.

#[path = "../daemon/mod.rs"]
mod daemon;

use super::support::{calls, requests_of, result_in, task};
use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply};
use daemon::{Client, Daemon, Place, workspace};
use protocol::Encoding;
use protocol::control::{ApprovalReply, Request, ResponseBody};
use protocol::event::{Event, ToolCallStarted};
use protocol::session::FinishReason;
use protocol::verdict::{ApprovalDecision, Verdict};

#[test]
fn a_subagents_ask_is_answered_by_the_sessions_client() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start_routed(
        vec![
            calls(&[("t1", "task", task("make a dir", "SUBTASK-A: mkdir"))]),
            answer("done"),
        ],
        vec![(
            "SUBTASK-A",
            vec![
                bash_reply("m1", "mkdir approved-dir"),
                answer("it could not"),
            ],
        )],
    ));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut client = Client::connect(&place.socket, Encoding::Json).await;
        let id = client.create(&ws.0, "on_risk").await;
        client.attach(&id, None).await;
        assert_eq!(client.send(&id, "make a dir").await, ResponseBody::Ok);
        let mut asked_by_child = false;
        let approval = loop {
            match client.event().await.event {
                Event::Subagent(s) => {
                    if let Event::ToolCallStarted(ToolCallStarted { call, verdict, .. }) = &*s.event
                    {
                        asked_by_child |= call.id.as_str() == "m1" && *verdict == Verdict::Ask;
                    }
                }
                Event::ApprovalRequested(r) => break r,
                _ => {}
            }
        };
        assert!(asked_by_child, "the tagged call came first");
        assert_eq!(
            approval.call.arguments,
            r#"{"command":"mkdir approved-dir"}"#
        );
        let reply = Request::ApprovalReply(ApprovalReply {
            session: id.clone(),
            approval: approval.approval,
            decision: ApprovalDecision::AllowOnce,
        });
        assert_eq!(client.ask(reply).await, ResponseBody::Ok);
        let rest = client.until_turn_finished().await;
        let Some(Event::TurnFinished(end)) = rest.last().map(|e| &e.event) else {
            panic!("{rest:?}")
        };
        assert_eq!(end.reason, FinishReason::Done);
    });
    // Allowed by the user, stopped by the subagent's read-only sandbox.
    let child = requests_of(&mock, Some("SUBTASK-A"), &[]);
    let m1 = result_in(&child[1], "m1");
    assert!(m1.contains("Read-only file system"), "{m1}");
    assert!(!ws.0.join("approved-dir").exists());
    let parent = requests_of(&mock, None, &["SUBTASK-A"]);
    assert!(result_in(&parent[1], "t1").ends_with("it could not"));
}
