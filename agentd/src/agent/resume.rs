//! A stored session back into the conversation the model saw: its events replayed in order.
//!
//! The rules mirror the loop (`turn.rs`, `fitting.rs`): a user message and an assistant message
//! (with its provider-opaque parts) each become a message; the results of one assistant
//! message's calls follow it in call order, whatever order they finished in; a compaction
//! replaces the messages it summarised with its summary, exactly as it did live. A call whose
//! result was never written (the process died mid-call) gets a result saying so, so the history
//! stays well formed.

use crate::context::compact;
use crate::providers::model::{Message, Opaque, Role};
use crate::store::log::Record;
use protocol::event::{Event, ToolCall};
use std::collections::HashMap;

/// What a call that never finished is answered with.
pub const NEVER_FINISHED: &str =
    "[no result: the session ended before this call finished; run it again if you still need it]";

/// The todo list a stored session ended with.
pub fn todos(records: &[Record]) -> Vec<protocol::session::TodoItem> {
    records
        .iter()
        .rev()
        .find_map(|r| match &r.event {
            Event::TodoListChanged(t) => Some(t.items.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// What a stored session was switched to while it ran (`set_approval_mode`, `set_model`): the
/// newest of each, `None` where it never was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Switched {
    /// The approval mode it was last switched to.
    pub mode: Option<protocol::verdict::ApprovalMode>,
    /// The model it was last switched to.
    pub model: Option<String>,
}

/// What `records` switched the session to.
pub fn switched(records: &[Record]) -> Switched {
    let mut out = Switched::default();
    for record in records {
        match &record.event {
            Event::ApprovalModeChanged(c) => out.mode = Some(c.mode),
            Event::ModelChanged(c) => out.model = Some(c.model.clone()),
            _ => {}
        }
    }
    out
}

/// What the user allowed always in `records` ("allow always" lasts for the session, resumed
/// too): each such call rated again by `policy` (as it was when asked) and remembered.
pub fn always_allowed(
    records: &[Record],
    policy: &policy::Policy,
    ctx: &policy::Context<'_>,
) -> policy::Approvals {
    let mut asked: HashMap<u64, &ToolCall> = HashMap::new();
    let mut approved = policy::Approvals::new();
    for record in records {
        match &record.event {
            Event::ApprovalRequested(r) => {
                asked.insert(r.approval.0, &r.call);
            }
            Event::ApprovalResolved(r)
                if r.decision == protocol::verdict::ApprovalDecision::AllowAlways =>
            {
                let Some(call) = asked.get(&r.approval.0) else {
                    continue;
                };
                if let Ok(request) = super::tools::to_request(&call.name, &call.arguments) {
                    let decision = policy.check_tool(&request, ctx);
                    super::approval::remember(&mut approved, call, &decision);
                }
            }
            _ => {}
        }
    }
    approved
}

/// The conversation of `records`, after `system` (the system prompt of this run), and how
/// many turns they hold.
pub fn conversation(system: Message, records: &[Record]) -> (Vec<Message>, u64) {
    let mut messages = vec![system];
    let mut open: Vec<ToolCall> = Vec::new();
    let mut results: HashMap<String, (String, bool)> = HashMap::new();
    let mut turns = 0;
    for record in records {
        match &record.event {
            Event::ToolCallFinished(f) => {
                let failed = f.status != protocol::event::ToolStatus::Ok;
                results.insert(f.call_id.as_str().to_owned(), (f.content.clone(), failed));
                continue;
            }
            Event::ToolOutputDelta(_)
            | Event::AssistantTextDelta(_)
            | Event::ToolCallStarted(_)
            | Event::ApprovalRequested(_)
            | Event::ApprovalResolved(_)
            | Event::TodoListChanged(_)
            | Event::ApprovalModeChanged(_)
            | Event::ModelChanged(_)
            // A subagent's transcript: only its report, the `task` call's result, was the
            // parent's history.
            | Event::Subagent(_) => continue,
            _ => close(&mut messages, &mut open, &mut results),
        }
        match &record.event {
            Event::UserMessage(u) => messages.push(Message::text(Role::User, u.text.clone())),
            Event::TurnStarted(_) => turns += 1,
            Event::AssistantMessage(a) => {
                messages.push(Message {
                    tool_calls: a.tool_calls.clone(),
                    opaque: a
                        .opaque
                        .iter()
                        .filter_map(|o| serde_json::from_str::<Opaque>(o).ok())
                        .collect(),
                    ..Message::text(Role::Assistant, a.text.clone())
                });
                open = a.tool_calls.clone();
            }
            Event::ContextCompacted(c) => {
                let cut = usize::try_from(c.messages_summarised)
                    .map_or(messages.len(), |n| (1 + n).min(messages.len()));
                messages = compact::apply(&messages, cut, &c.summary);
            }
            _ => {}
        }
    }
    close(&mut messages, &mut open, &mut results);
    (messages, turns)
}

/// Appends the results of the open calls in call order.
fn close(
    messages: &mut Vec<Message>,
    open: &mut Vec<ToolCall>,
    results: &mut HashMap<String, (String, bool)>,
) {
    for call in open.drain(..) {
        let (content, failed) = results
            .remove(call.id.as_str())
            .unwrap_or_else(|| (NEVER_FINISHED.to_owned(), true));
        messages.push(Message::tool_outcome(&call, content, failed));
    }
    results.clear();
}
