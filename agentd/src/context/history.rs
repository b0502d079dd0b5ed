//! The shape rules of a conversation that every provider enforces, and where it may be cut.
//!
//! A history is well formed when every tool result follows the assistant message that made its
//! call (with only other results of that message between them) and every call of an assistant
//! message has its result before the next assistant or user message. A cut that keeps a tail
//! of the history is safe only at a message that starts a step: a user message, or an assistant
//! message (its results come after it); never at a tool result, which would lose its call.

use crate::providers::model::{Message, Role};
use std::collections::HashSet;

/// Why a history is not well formed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A tool result whose call is not in the assistant message before it.
    OrphanResult {
        /// The message's index.
        index: usize,
    },
    /// A call without a result before the next message that is not a result.
    MissingResult {
        /// The assistant message's index.
        index: usize,
    },
    /// A system message after the start.
    LateSystem {
        /// The message's index.
        index: usize,
    },
}

/// Checks the rules above; `Ok` when the history is well formed.
pub fn check(messages: &[Message]) -> Result<(), Shape> {
    let mut open: HashSet<&str> = HashSet::new();
    let mut opened_at = 0;
    for (index, m) in messages.iter().enumerate() {
        match m.role {
            Role::Tool => {
                let answers = m.tool_result_for.as_ref().map(|(id, _)| id.as_str());
                if !answers.is_some_and(|id| open.remove(id)) {
                    return Err(Shape::OrphanResult { index });
                }
            }
            role => {
                if !open.is_empty() {
                    return Err(Shape::MissingResult { index: opened_at });
                }
                if role == Role::System && index > 0 {
                    return Err(Shape::LateSystem { index });
                }
                if role == Role::Assistant {
                    open = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
                    opened_at = index;
                }
            }
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(Shape::MissingResult { index: opened_at })
    }
}

/// Whether the history may be cut just before `index`: the tail from there holds every result
/// of every call it holds, and nothing in it answers a call before it.
pub fn safe_cut(messages: &[Message], index: usize) -> bool {
    messages
        .get(index)
        .is_some_and(|m| matches!(m.role, Role::User | Role::Assistant))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::event::ToolCall;
    use protocol::ids::ToolCallId;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: ToolCallId::new(id).unwrap_or_else(|e| panic!("{e}")),
            name: "bash".into(),
            arguments: "{}".into(),
        }
    }

    fn asks(ids: &[&str]) -> Message {
        Message {
            tool_calls: ids.iter().map(|i| call(i)).collect(),
            ..Message::text(Role::Assistant, "")
        }
    }

    #[test]
    fn pairs_must_be_whole_and_in_order() {
        let sys = Message::text(Role::System, "s");
        let user = Message::text(Role::User, "u");
        let ok = [
            sys.clone(),
            user.clone(),
            asks(&["a", "b"]),
            Message::tool_result(&call("b"), "2"),
            Message::tool_result(&call("a"), "1"),
            Message::text(Role::Assistant, "done"),
        ];
        assert_eq!(check(&ok), Ok(()));
        let mut missing = ok.to_vec();
        missing.remove(3);
        assert_eq!(check(&missing), Err(Shape::MissingResult { index: 2 }));
        let orphan = [
            sys.clone(),
            user.clone(),
            Message::tool_result(&call("a"), "1"),
        ];
        assert_eq!(check(&orphan), Err(Shape::OrphanResult { index: 2 }));
        let twice = [
            user,
            asks(&["a"]),
            Message::tool_result(&call("a"), "1"),
            Message::tool_result(&call("a"), "1"),
        ];
        assert_eq!(check(&twice), Err(Shape::OrphanResult { index: 3 }));
        assert!(safe_cut(&ok, 2) && !safe_cut(&ok, 3) && !safe_cut(&ok, 9));
    }
}
