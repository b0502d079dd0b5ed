//! Compaction: one model call summarises the older history, the newest tail is kept word for
//! word, and the cut is at a safe boundary ([`super::history::safe_cut`]).

use crate::providers::model::{Message, ModelRequest, Role};
use std::fmt::Write as _;

/// Longest piece of one message put into the summary request (head and tail kept).
const PIECE_CHARS: usize = 4000;

/// What the summariser is told.
const INSTRUCTIONS: &str = "\
You summarise the earlier part of a coding agent's session so that the agent can go on without it. \
Write, under these headings: Goal (the user's request, in their words where it matters); Decisions \
(what was chosen and why); Files (touched or important, with what changed); State (what works, what \
fails, the last error verbatim if one is open); Next steps. Only what the transcript shows: never \
claim progress that is not in it. Be concise.";

/// The heading of the summary in the new history.
pub const SUMMARY_HEADING: &str =
    "[Summary of the earlier part of this session, written when it was compacted]";

/// The request that asks `model` to summarise `older` (the messages before the cut, without
/// the system prompt).
pub fn summary_request(model: &str, older: &[Message]) -> ModelRequest {
    let mut transcript = String::new();
    for m in older {
        let who = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool result",
        };
        let _ = writeln!(transcript, "--- {who}:\n{}", piece(&m.content));
        for c in &m.tool_calls {
            let _ = writeln!(transcript, "(calls {} {})", c.name, piece(&c.arguments));
        }
    }
    ModelRequest {
        model: model.to_owned(),
        messages: vec![
            Message::text(Role::System, INSTRUCTIONS),
            Message::text(Role::User, format!("The transcript:\n\n{transcript}")),
        ],
        tools: vec![],
        max_tokens: Some(2048),
    }
}

fn piece(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= PIECE_CHARS {
        return text.to_owned();
    }
    let head: String = text.chars().take(PIECE_CHARS / 2).collect();
    let tail: String = text.chars().skip(chars - PIECE_CHARS / 2).collect();
    format!("{head}\n[… {} characters …]\n{tail}", chars - PIECE_CHARS)
}

/// The history after a compaction at `cut`: the system prompt, the summary as a user message
/// (merged into the tail's first message when that is the user's, so roles still alternate),
/// then the tail as it was.
pub fn apply(messages: &[Message], cut: usize, summary: &str) -> Vec<Message> {
    let mut out: Vec<Message> = messages
        .first()
        .filter(|m| m.role == Role::System)
        .cloned()
        .into_iter()
        .collect();
    let summary = format!("{SUMMARY_HEADING}\n{}", summary.trim());
    let tail = messages.get(cut..).unwrap_or_default();
    match tail.first() {
        Some(first) if first.role == Role::User => {
            out.push(Message::text(
                Role::User,
                format!("{summary}\n\n{}", first.content),
            ));
            out.extend_from_slice(&tail[1..]);
        }
        _ => {
            out.push(Message::text(Role::User, summary));
            out.extend_from_slice(tail);
        }
    }
    out
}
