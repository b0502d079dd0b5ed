//! Fitting the history to the model's window: what it costs in tokens, which old tool results
//! to clear, and where to cut for a compaction.
//!
//! Token counts: the provider's reported input tokens for the last request are exact and are
//! used when there are; what was added since is estimated ([`estimate`]: a byte count / 4 plus a
//! per-message overhead — about right for English and code with current BPE tokenizers, and
//! on the safe side for JSON-heavy tool output, which tokenizes worse than 4 bytes a token).

use super::history::safe_cut;
use crate::providers::model::{Message, Role};

/// Tokens a message costs besides its text (role, separators, call framing).
const MESSAGE_OVERHEAD: u64 = 8;

/// How the history is fitted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// The model's context window, tokens.
    pub tokens: u64,
    /// Compact when the history passes this share of the window (default 0.85).
    pub compact_at: f64,
    /// Tool results older than this many tool-calling steps are cleared to a note (default 8).
    pub keep_results_steps: usize,
    /// The newest part kept word for word by a compaction, as a share of the window (0.3).
    pub keep_recent: f64,
}

impl Window {
    /// The defaults for a window of `tokens`.
    pub fn new(tokens: u64) -> Self {
        Self {
            tokens,
            compact_at: 0.85,
            keep_results_steps: 8,
            keep_recent: 0.3,
        }
    }

    /// The token count past which a compaction is due.
    pub fn threshold(&self) -> u64 {
        (self.tokens as f64 * self.compact_at) as u64
    }
}

/// The estimated tokens of one message.
pub fn estimate(m: &Message) -> u64 {
    let calls: usize = m
        .tool_calls
        .iter()
        .map(|c| c.name.len() + c.arguments.len() + c.id.as_str().len())
        .sum();
    let bytes = m.content.len() + calls;
    MESSAGE_OVERHEAD + (bytes as u64).div_ceil(4)
}

/// The estimated tokens of a history.
pub fn estimate_all(messages: &[Message]) -> u64 {
    messages.iter().map(estimate).sum()
}

/// The marker that starts a cleared result; a result that starts with it is not cleared again.
pub const CLEARED: &str = "[older tool result cleared to save context";

/// Replaces the content of tool results older than the newest `keep_steps` steps that called
/// tools with a one-line note; returns how many were cleared. Calls and pairs stay as they were.
pub fn clear_stale(messages: &mut [Message], keep_steps: usize) -> usize {
    let steps: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant && !m.tool_calls.is_empty())
        .map(|(i, _)| i)
        .collect();
    let boundary = match steps.len().checked_sub(keep_steps) {
        None => return 0,
        Some(n) => steps.get(n).copied().unwrap_or(messages.len()),
    };
    let mut cleared = 0;
    for m in &mut messages[..boundary] {
        if m.role != Role::Tool || m.content.starts_with(CLEARED) {
            continue;
        }
        let note = format!(
            "{CLEARED}: {} bytes; run the call again if you need it]",
            m.content.len()
        );
        if note.len() < m.content.len() {
            m.content = note;
            cleared += 1;
        }
    }
    cleared
}

/// Where a compaction cuts: the first message of the tail kept word for word — the latest
/// safe cut whose tail fits in `keep_recent` of the window, and after the first user message.
/// `None` when nothing before the tail could be summarised.
pub fn compaction_cut(messages: &[Message], window: &Window) -> Option<usize> {
    let budget = (window.tokens as f64 * window.keep_recent) as u64;
    let first_user = messages.iter().position(|m| m.role == Role::User)?;
    let mut tail = 0u64;
    let mut cut = None;
    for index in (first_user + 1..messages.len()).rev() {
        tail += estimate(&messages[index]);
        if tail > budget {
            break;
        }
        if safe_cut(messages, index) {
            cut = Some(index);
        }
    }
    // Without a cut that fits, keep at least the newest step: summarising everything would
    // drop the results the model is waiting to read.
    cut.or_else(|| {
        (first_user + 1..messages.len())
            .rev()
            .find(|&i| safe_cut(messages, i))
    })
}
