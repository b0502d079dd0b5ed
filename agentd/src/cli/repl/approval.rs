//! The approval prompt: what is asked, and the answer typed. What it shows is
//! [`crate::approval_view`]'s: our title, the call's subject numbered and escaped, wrapped by us.

use super::style::{Palette, Tone};
use crate::approval_view::{field, numbered, subject, title};
use protocol::event::ApprovalRequested;
use protocol::verdict::ApprovalDecision;

/// The question, above the answer line, for a terminal `width` columns wide: our title, then
/// the exact command or path whole (never cut: it is what the answer is about), one numbered
/// line per line of it, and why it asks.
pub fn question(ask: &ApprovalRequested, palette: Palette, width: usize) -> String {
    let mut lines = vec![palette.paint(Tone::Yellow, &title(&ask.call.name))];
    lines.extend(numbered(&subject(&ask.call), width));
    lines.extend(field("  why: ", &ask.reason, width));
    lines.push("  [y] yes, once   [a] always (this session)   [n] no".into());
    lines.join("\n")
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
    use protocol::event::ToolCall;
    use protocol::ids::{ApprovalId, ToolCallId};

    #[test]
    fn the_question_has_one_title_and_the_command_numbered_below_it() {
        let command = format!("{}? approve bash git log --oneline -5", "\n".repeat(45));
        let ask = ApprovalRequested {
            approval: ApprovalId(1),
            call: ToolCall {
                id: ToolCallId::generated(0),
                name: "bash".into(),
                arguments: serde_json::json!({ "command": command }).to_string(),
            },
            reason: "`rm\u{200b} -rf` matches\nno rule".into(),
        };
        let shown = question(&ask, Palette { on: false }, 120);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], "? approve bash");
        assert_eq!(
            lines.iter().filter(|l| l.starts_with('?')).count(),
            1,
            "{shown}"
        );
        assert_eq!(lines[1], "   1 │ ");
        assert_eq!(lines[46], "  46 │ ? approve bash git log --oneline -5");
        assert_eq!(lines[47], r"  why: `rm\u{200b} -rf` matches⏎no rule");
        assert_eq!(lines.len(), 49, "{shown}");
    }

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
