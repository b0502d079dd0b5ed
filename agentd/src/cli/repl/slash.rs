//! Slash commands: what the user typed, parsed (pure; the REPL carries them out).

use protocol::verdict::ApprovalMode;

/// One slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    /// `/help`.
    Help,
    /// `/compact`.
    Compact,
    /// `/todos`.
    Todos,
    /// `/sessions`.
    Sessions,
    /// `/resume ID`.
    Resume(Option<String>),
    /// `/model [NAME]`.
    Model(Option<String>),
    /// `/approval [MODE]`.
    Approval(Option<String>),
    /// `/quit` (or `/exit`).
    Quit,
    /// Something else that starts with `/`.
    Unknown(String),
}

/// The help text: every command, one a line.
pub const HELP: &str = "\
/help             this list
/todos            the agent's todo list
/sessions         your sessions, newest first
/resume ID        continue session ID here (its history is shown)
/model [NAME]     the model this session talks to; with NAME, switch to it (same provider)
/approval [MODE]  the approval mode; with MODE (on-risk, always, never), change it
/compact          summarise the history before the newest turn now
/quit             leave (also Ctrl-D, or Ctrl-C twice at an empty prompt)
keys: Enter sends · Ctrl-C interrupts a running turn · ↑/↓ history · Ctrl-R search";

/// The approval modes `/approval` switches between, as the user types them.
pub const MODES: &str = "on-risk, always, never";

/// The approval mode `name` names (`on-risk`, `always`, `never`; `on_risk` too), or what to say.
pub fn mode(name: &str) -> Result<ApprovalMode, String> {
    match name {
        "on-risk" | "on_risk" => Ok(ApprovalMode::OnRisk),
        "always" => Ok(ApprovalMode::Always),
        "never" => Ok(ApprovalMode::Never),
        _ => Err(format!(
            "unknown approval mode {}: the modes are {MODES}",
            crate::inert::inert(name)
        )),
    }
}

/// How the REPL names `mode` (as `--approval` does).
pub fn mode_name(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::OnRisk => "on-risk",
        ApprovalMode::Always => "always",
        ApprovalMode::Never => "never",
        ApprovalMode::SkipPermissions => "skip-permissions (--dangerously-skip-permissions)",
    }
}

/// `line` as a slash command, if it is one.
pub fn parse(line: &str) -> Option<Slash> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let mut words = rest.split_whitespace();
    let name = words.next().unwrap_or_default();
    let arg = words.next().map(str::to_owned);
    Some(match name {
        "help" | "?" => Slash::Help,
        "compact" => Slash::Compact,
        "todos" => Slash::Todos,
        "sessions" => Slash::Sessions,
        "resume" => Slash::Resume(arg),
        "model" => Slash::Model(arg),
        "approval" => Slash::Approval(arg),
        "quit" | "exit" => Slash::Quit,
        _ => Slash::Unknown(line.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_argument() {
        let cases = [
            ("/help", Some(Slash::Help)),
            ("  /todos ", Some(Slash::Todos)),
            ("/resume 01abc", Some(Slash::Resume(Some("01abc".into())))),
            ("/resume", Some(Slash::Resume(None))),
            ("/model gpt-x", Some(Slash::Model(Some("gpt-x".into())))),
            (
                "/approval never",
                Some(Slash::Approval(Some("never".into()))),
            ),
            ("/quit", Some(Slash::Quit)),
            ("/exit", Some(Slash::Quit)),
            ("/frobnicate", Some(Slash::Unknown("/frobnicate".into()))),
            ("hello /help", None),
            ("", None),
        ];
        for (line, want) in cases {
            assert_eq!(parse(line), want, "{line:?}");
        }
    }

    #[test]
    fn modes_parse_and_an_unknown_one_names_the_valid_ones() {
        assert_eq!(mode("on-risk"), Ok(ApprovalMode::OnRisk));
        assert_eq!(mode("on_risk"), Ok(ApprovalMode::OnRisk));
        assert_eq!(mode("always"), Ok(ApprovalMode::Always));
        assert_eq!(mode("never"), Ok(ApprovalMode::Never));
        for bad in ["sometimes", "skip-permissions", ""] {
            let e = mode(bad).unwrap_err();
            assert!(e.contains("on-risk, always, never"), "{e}");
        }
    }
}
