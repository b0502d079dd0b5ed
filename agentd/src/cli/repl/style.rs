//! Colour and cursor movement, only where they belong: stdout is a terminal and `NO_COLOR` is
//! unset or empty (no-color.org). Everywhere else the same text comes out plain.

use std::io::IsTerminal;

/// Whether stdout takes styling.
pub fn styled() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// SGR codes the REPL uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Bold.
    Bold,
    /// Dim (secondary text: durations, usage, live output).
    Dim,
    /// Red (deny, errors, removed lines).
    Red,
    /// Green (allow, ok, added lines).
    Green,
    /// Yellow (ask, the approval prompt).
    Yellow,
    /// Cyan (tool names, diff hunks).
    Cyan,
}

impl Tone {
    fn code(self) -> &'static str {
        match self {
            Tone::Bold => "1",
            Tone::Dim => "2",
            Tone::Red => "31",
            Tone::Green => "32",
            Tone::Yellow => "33",
            Tone::Cyan => "36",
        }
    }
}

/// Paints text when styling is on, and leaves it as it is when it is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Palette {
    /// Whether to style at all.
    pub on: bool,
}

impl Palette {
    /// `text` in `tone` (the text must already be inert: it is printed as it is).
    pub fn paint(&self, tone: Tone, text: &str) -> String {
        if self.on {
            format!("\x1b[{}m{text}\x1b[0m", tone.code())
        } else {
            text.to_owned()
        }
    }

    /// Back to the start of the line and erase it (for the spinner); nothing when off.
    pub fn erase_line(&self) -> &'static str {
        if self.on { "\r\x1b[K" } else { "" }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_leaves_text_plain_and_on_wraps_it() {
        let off = Palette { on: false };
        assert_eq!(off.paint(Tone::Red, "x"), "x");
        assert_eq!(off.erase_line(), "");
        let on = Palette { on: true };
        assert_eq!(on.paint(Tone::Red, "x"), "\x1b[31mx\x1b[0m");
    }
}
