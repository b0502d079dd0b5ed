//! Random sessions for property tests, here and in the end-to-end suite (feature `testing`):
//! turns of a user message and model steps — parallel calls with results in any order, long
//! and short outputs, a text answer ending the turn — and the request-level rules every
//! provider enforces.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support: a panic is the failure report

use super::history::check;
use crate::providers::model::{Message, Role};
use proptest::prelude::*;
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;

/// One step of the model: the calls it made (each with the size of its result, and whether the
/// results came back in another order), or a final answer.
#[derive(Debug, Clone)]
pub enum Step {
    /// Calls with the sizes of their results, the results in reverse order or not.
    Calls {
        /// Result sizes, one per call.
        results: Vec<usize>,
        /// Whether the results come back last call first.
        reversed: bool,
    },
    /// A text answer of this length; it ends the turn.
    Answer(usize),
}

pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (prop::collection::vec(0usize..6000, 1..4), any::<bool>())
            .prop_map(|(results, reversed)| Step::Calls { results, reversed }),
        1 => (0usize..400).prop_map(Step::Answer),
    ]
}

/// A session: turns of a user message and steps.
pub fn session() -> impl Strategy<Value = Vec<(usize, Vec<Step>)>> {
    prop::collection::vec((1usize..300, prop::collection::vec(step(), 0..8)), 1..6)
}

pub fn build(turns: &[(usize, Vec<Step>)]) -> Vec<Message> {
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
pub fn assert_sendable(messages: &[Message]) {
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

pub fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}
