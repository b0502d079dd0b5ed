//! Properties over random sessions: whatever fitting and compaction do, every request stays well
//! formed — pairs whole and in order, the conversation opening with the user, no two messages of
//! the same side in a row (Anthropic's and Gemini's alternation).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use super::compact::{SUMMARY_HEADING, apply};
use super::fit::{CLEARED, Window, clear_stale, compaction_cut, estimate_all};
use super::history::check;
use crate::providers::model::{Message, Role};
use proptest::prelude::*;
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;

/// One step of the model: the calls it made (each with the size of its result, and whether the
/// results came back in another order), or a final answer.
#[derive(Debug, Clone)]
enum Step {
    Calls { results: Vec<usize>, reversed: bool },
    Answer(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (prop::collection::vec(0usize..6000, 1..4), any::<bool>())
            .prop_map(|(results, reversed)| Step::Calls { results, reversed }),
        1 => (0usize..400).prop_map(Step::Answer),
    ]
}

/// A session: turns of a user message and steps.
fn session() -> impl Strategy<Value = Vec<(usize, Vec<Step>)>> {
    prop::collection::vec((1usize..300, prop::collection::vec(step(), 0..8)), 1..6)
}

fn build(turns: &[(usize, Vec<Step>)]) -> Vec<Message> {
    let mut out = vec![Message::text(Role::System, "system")];
    let mut n = 0u64;
    for (user, steps) in turns {
        out.push(Message::text(Role::User, "u".repeat(*user)));
        for s in steps {
            match s {
                Step::Calls { results, reversed } => {
                    let calls: Vec<ToolCall> = results
                        .iter()
                        .map(|_| {
                            n += 1;
                            ToolCall {
                                id: ToolCallId::new(format!("call_{n}")).unwrap(),
                                name: "bash".into(),
                                arguments: "{\"command\":\"ls\"}".into(),
                            }
                        })
                        .collect();
                    out.push(Message {
                        tool_calls: calls.clone(),
                        ..Message::text(Role::Assistant, "")
                    });
                    let mut pairs: Vec<(&ToolCall, &usize)> = calls.iter().zip(results).collect();
                    if *reversed {
                        pairs.reverse();
                    }
                    for (call, size) in pairs {
                        out.push(Message::tool_result(call, "r".repeat(*size)));
                    }
                }
                Step::Answer(len) => {
                    // A text-only answer ends the turn.
                    out.push(Message::text(Role::Assistant, "a".repeat(*len)));
                    break;
                }
            }
        }
        // A turn ends with the model's answer.
        if out
            .last()
            .is_some_and(|m| m.role != Role::Assistant || !m.tool_calls.is_empty())
        {
            out.push(Message::text(Role::Assistant, "done"));
        }
    }
    out
}

/// The request-level rules every provider enforces.
fn assert_sendable(messages: &[Message]) {
    check(messages).unwrap_or_else(|e| panic!("{e:?} in {:#?}", roles(messages)));
    let first = messages.iter().find(|m| m.role != Role::System);
    assert_eq!(
        first.map(|m| m.role),
        Some(Role::User),
        "{:?}",
        roles(messages)
    );
    // Sides: the user's (user text and tool results) and the model's.
    let sides: Vec<bool> = messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| m.role == Role::Assistant)
        .collect();
    for w in sides.windows(2) {
        assert!(
            !(w[0] && w[1]),
            "two assistant messages in a row: {:?}",
            roles(messages)
        );
    }
    for w in messages.windows(2) {
        assert!(
            !(w[0].role == Role::User && w[1].role == Role::User),
            "two user messages in a row: {:?}",
            roles(messages)
        );
    }
}

fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn fitting_and_compaction_keep_every_request_sendable(
        turns in session(),
        window_tokens in 500u64..20_000,
        keep in 0usize..10,
    ) {
        let history = build(&turns);
        assert_sendable(&history);

        let mut cleared = history.clone();
        clear_stale(&mut cleared, keep);
        assert_sendable(&cleared);
        if keep > 0 {
            let newest = cleared.iter().rposition(|m| !m.tool_calls.is_empty()).unwrap_or(0);
            prop_assert!(
                cleared[newest..].iter().all(|m| !m.content.starts_with(CLEARED)),
                "the newest step's results are never cleared"
            );
        }
        let old = history.iter().position(|m| m.role == Role::Tool && m.content.len() > 100);
        let steps_after = |i: usize| history[i..].iter().filter(|m| !m.tool_calls.is_empty()).count();
        if let Some(i) = old.filter(|&i| steps_after(i) > keep) {
            prop_assert!(cleared[i].content.starts_with(CLEARED), "an old, long result is cleared");
        }

        let window = Window::new(window_tokens);
        if let Some(cut) = compaction_cut(&cleared, &window) {
            let compacted = apply(&cleared, cut, "Goal: fix it. State: half done.");
            assert_sendable(&compacted);
            prop_assert!(compacted[1].content.starts_with(SUMMARY_HEADING));
            prop_assert_eq!(&compacted.last(), &cleared.last(), "the newest message is kept");
            prop_assert!(estimate_all(&compacted) <= estimate_all(&cleared) + 40);
        }
    }
}
