//! Fitting the history to the model's window: what it costs in tokens, which old tool results
//! to clear, and where to cut for a compaction.
//!
//! Token counts: the provider's reported input tokens for the last request are exact and are
//! used when there are; what was added since is counted by the window's [`Counter`]: for an
//! OpenAI-family model, its own BPE tokenizer (tiktoken's tables, shipped inside the
//! `tiktoken-rs` crate: `o200k_base` for GPT-4o, GPT-4.1, GPT-5, o-series); for the rest
//! (Anthropic, Gemini and local models, whose tokenizers are not published as data) an estimate
//! ([`estimate`]: a byte count / 4 plus a per-message overhead — about right for English and code,
//! 3.8 bytes a token measured on this repository's docs with `o200k_base`, and on the safe side
//! for JSON-heavy tool output). The exact count is taken only where it can decide something:
//! no token is shorter than a byte, so a history whose bytes stay under the compaction threshold
//! cannot pass it, and is given the estimate without loading the tokenizer (144 ms of CPU the
//! first time in a release build).

use super::history::safe_cut;
use crate::providers::model::{Message, Role};

/// Tokens a message costs besides its text (role, separators, call framing).
const MESSAGE_OVERHEAD: u64 = 8;

/// How tokens are counted where the provider has reported none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// The byte estimate ([`estimate`]).
    Estimate,
    /// An OpenAI model's BPE tokenizer, loaded on first use.
    Bpe(tiktoken_rs::tokenizer::Tokenizer),
}

impl Counter {
    /// The counter for `model`: its BPE tokenizer when tiktoken knows the model (OpenAI's names,
    /// fine-tunes included), else the estimate.
    pub fn for_model(model: &str) -> Self {
        tiktoken_rs::tokenizer::get_tokenizer(model).map_or(Counter::Estimate, Counter::Bpe)
    }

    /// The tokens of one message: its text and calls, plus the per-message overhead.
    pub fn count(&self, m: &Message) -> u64 {
        let Counter::Bpe(tokenizer) = self else {
            return estimate(m);
        };
        let Ok(bpe) = tiktoken_rs::bpe_for_tokenizer(*tokenizer) else {
            return estimate(m);
        };
        let tokens = |text: &str| bpe.encode_ordinary(text).len() as u64;
        let calls: u64 = m
            .tool_calls
            .iter()
            .map(|c| tokens(&c.name) + tokens(&c.arguments) + tokens(c.id.as_str()))
            .sum();
        MESSAGE_OVERHEAD + tokens(&m.content) + calls
    }
}

/// How the history is fitted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// The model's context window, tokens.
    pub tokens: u64,
    /// How tokens are counted.
    pub counter: Counter,
    /// Compact when the history passes this share of the window (default 0.85).
    pub compact_at: f64,
    /// Tool results older than this many tool-calling steps are cleared to a note (default 8).
    pub keep_results_steps: usize,
    /// The newest part kept word for word by a compaction, as a share of the window (0.3).
    pub keep_recent: f64,
    /// Whether `tokens` follows the model ([`Window::per_model`]): no flag or config set it, so
    /// each model gets its own from the limits table.
    pub per_model: bool,
}

impl Window {
    /// The defaults for a window of `tokens`.
    pub fn new(tokens: u64) -> Self {
        Self {
            tokens,
            counter: Counter::Estimate,
            compact_at: 0.85,
            keep_results_steps: 8,
            keep_recent: 0.3,
            per_model: false,
        }
    }

    /// The window of whatever model the session uses ([`crate::providers::limits::context_window`]),
    /// set by [`Window::for_model`]; until then, the window for an unknown model.
    pub fn per_model() -> Self {
        Self {
            per_model: true,
            ..Self::new(crate::providers::limits::UNKNOWN_CONTEXT_WINDOW)
        }
    }

    /// The token count past which a compaction is due.
    pub fn threshold(&self) -> u64 {
        (self.tokens as f64 * self.compact_at) as u64
    }

    /// This window with the counter for `model`, and its size when it follows the model.
    pub fn for_model(self, model: &str) -> Self {
        Self {
            counter: Counter::for_model(model),
            tokens: if self.per_model {
                crate::providers::limits::context_window(model)
            } else {
                self.tokens
            },
            ..self
        }
    }

    /// The tokens of `messages`: counted by the window's counter where the count could pass the
    /// threshold, else the estimate (see the module's note: bytes bound tokens from above).
    pub fn count_all(&self, messages: &[Message]) -> u64 {
        if matches!(self.counter, Counter::Estimate) || upper_bound(messages) <= self.threshold() {
            return estimate_all(messages);
        }
        messages.iter().map(|m| self.counter.count(m)).sum()
    }
}

/// At least as many as the tokens of `messages` by any byte-level BPE: one per byte, plus the
/// per-message overhead.
fn upper_bound(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| MESSAGE_OVERHEAD + bytes_of(m))
        .sum()
}

/// The bytes of a message's text and calls (name, arguments, id).
fn bytes_of(m: &Message) -> u64 {
    let calls: usize = m
        .tool_calls
        .iter()
        .map(|c| c.name.len() + c.arguments.len() + c.id.as_str().len())
        .sum();
    (m.content.len() + calls) as u64
}

/// The estimated tokens of one message.
pub fn estimate(m: &Message) -> u64 {
    MESSAGE_OVERHEAD + bytes_of(m).div_ceil(4)
}

/// The estimated tokens of a history.
pub fn estimate_all(messages: &[Message]) -> u64 {
    messages.iter().map(estimate).sum()
}

/// The marker that starts a cleared result; a result that starts with it is not cleared again.
pub const CLEARED: &str = "[older tool result cleared to save context";

/// Clears stale tool results in batches: once a result is `2 × keep_steps` tool-calling steps
/// old, every result older than the newest `keep_steps` steps is replaced by a one-line note
/// ([`clear_older_than`]); returns how many were cleared. So results live between `keep_steps`
/// and `2 × keep_steps` steps, and the history is rewritten once every `keep_steps` steps rather
/// than at every step: each rewrite changes a message far back in the request, which ends the
/// prefix the providers' prompt caches reuse (OpenAI and Gemini match a byte-identical prefix,
/// Anthropic a prefix up to a breakpoint), so the whole history after it is paid in full again.
pub fn clear_stale(messages: &mut [Message], keep_steps: usize) -> usize {
    let due = step_starts(messages)
        .iter()
        .rev()
        .nth(keep_steps.saturating_mul(2).saturating_sub(1))
        .is_some_and(|&boundary| {
            messages[..boundary]
                .iter()
                .any(|m| m.role == Role::Tool && clearable(m))
        });
    if due || keep_steps == 0 {
        clear_older_than(messages, keep_steps)
    } else {
        0
    }
}

/// The indices of the assistant messages that called tools, oldest first.
fn step_starts(messages: &[Message]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant && !m.tool_calls.is_empty())
        .map(|(i, _)| i)
        .collect()
}

/// The note that replaces a result, when it is shorter than the result.
fn note_for(m: &Message) -> Option<String> {
    if m.content.starts_with(CLEARED) {
        return None;
    }
    let note = format!(
        "{CLEARED}: {} bytes; run the call again if you need it]",
        m.content.len()
    );
    (note.len() < m.content.len()).then_some(note)
}

fn clearable(m: &Message) -> bool {
    note_for(m).is_some()
}

/// Replaces the content of tool results older than the newest `keep_steps` steps that called
/// tools with a one-line note; returns how many were cleared. Calls and pairs stay as they
/// were. Called at every step, this rewrites one message each step ([`clear_stale`] batches).
pub fn clear_older_than(messages: &mut [Message], keep_steps: usize) -> usize {
    let steps = step_starts(messages);
    let boundary = match steps.len().checked_sub(keep_steps) {
        None => return 0,
        Some(n) => steps.get(n).copied().unwrap_or(messages.len()),
    };
    let mut cleared = 0;
    for m in &mut messages[..boundary] {
        if m.role != Role::Tool {
            continue;
        }
        if let Some(note) = note_for(m) {
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
        tail += window.counter.count(&messages[index]);
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

/// The index of the first message after the system prompt: where a summary may begin.
pub fn after_system(messages: &[Message]) -> usize {
    usize::from(messages.first().is_some_and(|m| m.role == Role::System))
}

/// Where a compaction the user asked for cuts: before the newest user message — the newest
/// turn stays word for word — when that is safe, fits in `keep_recent` of the window and leaves
/// at least two messages to summarise; else where an automatic one would ([`compaction_cut`]).
/// `None` when fewer than two messages after the system prompt would be summarised: a summary
/// of one message saves nothing.
pub fn on_demand_cut(messages: &[Message], window: &Window) -> Option<usize> {
    let first = after_system(messages);
    let enough = |cut: &usize| *cut >= first + 2;
    let budget = (window.tokens as f64 * window.keep_recent) as u64;
    let newest_user = messages.iter().rposition(|m| m.role == Role::User)?;
    let tail: u64 = messages[newest_user..]
        .iter()
        .map(|m| window.counter.count(m))
        .sum();
    Some(newest_user)
        .filter(|c| enough(c) && tail <= budget && safe_cut(messages, *c))
        .or_else(|| compaction_cut(messages, window).filter(enough))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(role: Role, content: &str) -> Message {
        Message::text(role, content.to_owned())
    }

    /// A 50-step session with 10 kB results, fitted before each step as the loop does: the
    /// history before the newest step is rewritten at most once every 8 steps (clearing one
    /// result per step rewrote it at 42 of the 50), and no result outlives 16 steps.
    #[test]
    fn stale_results_are_cleared_in_batches_not_one_per_step() {
        use protocol::event::ToolCall;
        use protocol::ids::ToolCallId;
        let mut history = vec![text(Role::System, "sys"), text(Role::User, "go")];
        let mut rewrites = 0;
        for step in 0..50u64 {
            let before = history.clone();
            clear_stale(&mut history, 8);
            if history != before {
                rewrites += 1;
            }
            let kept = history
                .iter()
                .filter(|m| m.role == Role::Tool && !m.content.starts_with(CLEARED))
                .count();
            assert!(kept <= 16, "step {step}: {kept} results kept whole");
            let call = ToolCall {
                id: ToolCallId::generated(step),
                name: "bash".into(),
                arguments: "{}".into(),
            };
            history.push(Message {
                tool_calls: vec![call.clone()],
                ..text(Role::Assistant, "")
            });
            history.push(Message::tool_result(&call, "x".repeat(10_000)));
        }
        assert!(rewrites <= 50 / 8, "{rewrites} rewrites in 50 steps");
        assert!(rewrites >= 4, "results are still cleared: {rewrites}");
    }

    #[test]
    fn on_demand_the_newest_turn_stays_and_a_short_history_has_nothing_to_compact() {
        let system = text(Role::System, "sys");
        let turn = |n: &str| vec![text(Role::User, n), text(Role::Assistant, n)];
        let window = Window::new(100_000);
        let one: Vec<Message> = std::iter::once(system.clone()).chain(turn("a")).collect();
        assert_eq!(
            on_demand_cut(&one, &window),
            None,
            "one turn: nothing before it"
        );
        let two: Vec<Message> = std::iter::once(system.clone())
            .chain(turn("a"))
            .chain(turn("b"))
            .collect();
        assert_eq!(
            on_demand_cut(&two, &window),
            Some(3),
            "the second turn stays"
        );
        // After a compaction the history is the summary merged into the newest turn.
        let after = super::super::compact::apply(&two, 3, "s");
        assert_eq!(on_demand_cut(&after, &window), None);
    }

    #[test]
    fn openai_models_count_with_their_tokenizer_and_others_estimate() {
        assert_eq!(
            Counter::for_model("gpt-4o"),
            Counter::Bpe(tiktoken_rs::tokenizer::Tokenizer::O200kBase)
        );
        assert_eq!(Counter::for_model("claude-sonnet-4-5"), Counter::Estimate);
        assert_eq!(Counter::for_model("llama3.1:8b"), Counter::Estimate);
        // "hello world" is two o200k tokens; the estimate says 3 (11 bytes / 4, rounded up).
        let m = text(Role::User, "hello world");
        assert_eq!(
            Counter::for_model("gpt-4.1").count(&m),
            MESSAGE_OVERHEAD + 2
        );
        assert_eq!(Counter::Estimate.count(&m), MESSAGE_OVERHEAD + 3);
    }

    #[test]
    fn the_tokenizer_decides_only_where_the_count_could_pass_the_threshold() {
        // Digits tokenize in groups of three with o200k: 3000 bytes are 1000 tokens, where the
        // estimate says 750.
        let history = vec![text(Role::User, &"123".repeat(1000))];
        let small = Window::new(100_000).for_model("gpt-4o");
        assert_eq!(
            small.count_all(&history),
            estimate_all(&history),
            "bytes bound it under the threshold"
        );
        let tight = Window::new(1_000).for_model("gpt-4o");
        assert_eq!(tight.count_all(&history), MESSAGE_OVERHEAD + 1000);
        assert!(
            tight.count_all(&history) > tight.threshold(),
            "the exact count passes where the estimate would not"
        );
        assert!(estimate_all(&history) < tight.threshold());
    }
}
