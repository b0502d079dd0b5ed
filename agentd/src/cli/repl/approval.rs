//! The approval prompt: what is asked, and the answer typed.

use super::render::exact_of;
use super::style::{Palette, Tone};
use crate::inert::inert;
use protocol::event::ApprovalRequested;
use protocol::verdict::ApprovalDecision;

/// The question, above the answer line: the exact call and why it asks.
pub fn question(ask: &ApprovalRequested, palette: Palette) -> String {
    // The exact command or path, never cut: it is what the answer is about.
    let title = format!(
        "? approve {} {}",
        inert(&ask.call.name),
        exact_of(&ask.call)
    );
    let title = palette.paint(Tone::Yellow, &title);
    format!(
        "{title}\n  why: {}\n  [y] yes, once   [a] always (this session)   [n] no",
        inert(&ask.reason)
    )
}

/// The prompt of the answer line.
pub const PROMPT: &str = "allow? [y/a/n] ";

/// The prompt after a refusal: an optional note, sent to the model as the next message (the
/// turn is interrupted so that the model reads it at once).
pub const NOTE_PROMPT: &str = "note for the model (Enter: none): ";

/// The answer typed: `y`, `a`, `n` (empty is no); `None` for anything else (asked again).
pub fn parse(answer: &str) -> Option<ApprovalDecision> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(ApprovalDecision::AllowOnce),
        "a" | "always" => Some(ApprovalDecision::AllowAlways),
        "n" | "no" | "" => Some(ApprovalDecision::Deny),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_decisions_and_others_are_asked_again() {
        assert_eq!(parse("y"), Some(ApprovalDecision::AllowOnce));
        assert_eq!(parse(" YES "), Some(ApprovalDecision::AllowOnce));
        assert_eq!(parse("a"), Some(ApprovalDecision::AllowAlways));
        assert_eq!(parse("n"), Some(ApprovalDecision::Deny));
        assert_eq!(parse(""), Some(ApprovalDecision::Deny));
        assert_eq!(parse("maybe"), None);
    }
}
