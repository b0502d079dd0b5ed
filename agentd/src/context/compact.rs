//! Compaction: one model call summarises the older history, the newest tail is kept word for
//! word, and the cut is at a safe boundary ([`super::history::safe_cut`]). A summary that came
//! back empty, or was cut off by the output limit, is refused ([`summary_of`]): it would replace
//! the history with nothing, or with half a record.

use crate::providers::model::{Message, ModelRequest, ModelResponse, Role};
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

/// The output cap of the summary request, tokens. A summary is one to two thousand tokens; the
/// rest is room for models that think before they answer and count the thinking against the
/// cap (Gemini 2.5, OpenAI's reasoning models), which with 2048 could spend it all thinking and
/// answer nothing. The provider holds it to the model's own limit (`providers::limits`).
pub const SUMMARY_MAX_TOKENS: u32 = 8192;

/// Why a summary the model answered cannot replace the history.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryRefused {
    /// No text at all: a thinking model spent the whole cap thinking, a refusal, a safety stop.
    #[error("the summary came back empty (finish reason {})", reason(.finish_reason))]
    Empty {
        /// The provider's finish reason.
        finish_reason: Option<String>,
    },
    /// The output limit ended it: what came is half a record.
    #[error("the summary was cut off by the output limit (finish reason {finish_reason})")]
    Cut {
        /// The provider's finish reason.
        finish_reason: String,
    },
}

fn reason(finish_reason: &Option<String>) -> &str {
    finish_reason.as_deref().unwrap_or("none given")
}

/// The summary in `response`, unless it is empty or was cut off by the output limit.
pub fn summary_of(response: &ModelResponse) -> Result<&str, SummaryRefused> {
    if response.text.trim().is_empty() {
        return Err(SummaryRefused::Empty {
            finish_reason: response.finish_reason.clone(),
        });
    }
    if response.hit_output_limit() {
        return Err(SummaryRefused::Cut {
            finish_reason: response.finish_reason.clone().unwrap_or_default(),
        });
    }
    Ok(&response.text)
}

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
        max_tokens: Some(SUMMARY_MAX_TOKENS),
        reminder: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str, finish: &str) -> ModelResponse {
        ModelResponse {
            text: text.into(),
            finish_reason: Some(finish.into()),
            ..ModelResponse::default()
        }
    }

    #[test]
    fn an_empty_or_cut_summary_is_refused() {
        assert_eq!(summary_of(&answer("Goal: x.", "STOP")), Ok("Goal: x."));
        assert_eq!(summary_of(&answer("Goal: x.", "end_turn")), Ok("Goal: x."));
        for (text, finish) in [("", "MAX_TOKENS"), ("  \n", "stop"), ("", "SAFETY")] {
            let refused = summary_of(&answer(text, finish)).unwrap_err();
            assert!(matches!(refused, SummaryRefused::Empty { .. }), "{refused}");
            assert!(refused.to_string().contains(finish), "{refused}");
        }
        for finish in ["length", "max_tokens", "MAX_TOKENS"] {
            let refused = summary_of(&answer("Goal: fix the par", finish)).unwrap_err();
            assert_eq!(
                refused.to_string(),
                format!("the summary was cut off by the output limit (finish reason {finish})")
            );
        }
    }
}
