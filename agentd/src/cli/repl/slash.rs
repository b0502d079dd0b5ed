//! Slash commands: what the user typed, parsed (pure; the REPL carries them out).
//!
//! Only a known `/command` is a command. A line that starts with a path (`/etc/hosts looks
//! wrong`) is a message: an unknown `/word` that holds another `/` or is followed by more text
//! is sent as typed. `//text` sends `/text`. What is left — a lone unknown `/word` — is most
//! likely a mistyped command, and is answered with the list and how to send it anyway.

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
    /// `/new`.
    New,
    /// `/delete [ID…]`: the sessions named, or the open one.
    Delete(Vec<String>),
    /// `/quit` (or `/exit`).
    Quit,
    /// A lone `/word` that is no command.
    Unknown(String),
}

/// A line as typed: a command, or a message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A slash command.
    Command(Slash),
    /// A message, to send as it is.
    Message(String),
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
/new              leave this session for a new one here (it stays in /sessions)
/delete [ID…]     delete sessions; alone, this one (and go on in a new one)
/quit             leave (also Ctrl-D, or Ctrl-C twice at an empty prompt)
a message that starts with a path is sent as typed (/etc/hosts is wrong…); //text sends /text
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

/// What `line` is: a known command, or a message (see the module's comment).
pub fn parse(line: &str) -> Line {
    let line = line.trim();
    let Some(rest) = line.strip_prefix('/') else {
        return Line::Message(line.to_owned());
    };
    if rest.starts_with('/') {
        return Line::Message(rest.to_owned());
    }
    let mut words = rest.split_whitespace();
    let name = words.next().unwrap_or_default();
    let arg = words.clone().next().map(str::to_owned);
    Line::Command(match name {
        "help" | "?" => Slash::Help,
        "compact" => Slash::Compact,
        "todos" => Slash::Todos,
        "sessions" => Slash::Sessions,
        "resume" => Slash::Resume(arg),
        "model" => Slash::Model(arg),
        "approval" => Slash::Approval(arg),
        "new" => Slash::New,
        "delete" => Slash::Delete(words.map(str::to_owned).collect()),
        "quit" | "exit" => Slash::Quit,
        _ if name.contains('/') || arg.is_some() => return Line::Message(line.to_owned()),
        _ => Slash::Unknown(line.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_argument() {
        let command = |s| Line::Command(s);
        let message = |s: &str| Line::Message(s.into());
        let cases = [
            ("/help", command(Slash::Help)),
            ("  /todos ", command(Slash::Todos)),
            (
                "/resume 01abc",
                command(Slash::Resume(Some("01abc".into()))),
            ),
            ("/resume", command(Slash::Resume(None))),
            ("/model gpt-x", command(Slash::Model(Some("gpt-x".into())))),
            (
                "/approval never",
                command(Slash::Approval(Some("never".into()))),
            ),
            ("/new", command(Slash::New)),
            ("/delete", command(Slash::Delete(vec![]))),
            (
                "/delete s-1 s-2",
                command(Slash::Delete(vec!["s-1".into(), "s-2".into()])),
            ),
            ("/quit", command(Slash::Quit)),
            ("/exit", command(Slash::Quit)),
            ("/frobnicate", command(Slash::Unknown("/frobnicate".into()))),
            ("hello /help", message("hello /help")),
            ("", message("")),
        ];
        for (line, want) in cases {
            assert_eq!(parse(line), want, "{line:?}");
        }
    }

    #[test]
    fn a_line_that_starts_with_a_path_or_goes_on_is_a_message() {
        let cases = [
            (
                "/etc/hosts looks wrong, can you check it?",
                "/etc/hosts looks wrong, can you check it?",
            ),
            ("/etc/hosts", "/etc/hosts"),
            ("/usr/bin/env python3 fails", "/usr/bin/env python3 fails"),
            ("/tmp is full", "/tmp is full"),
            ("//help", "/help"),
            ("//quit now", "/quit now"),
            ("// a comment", "/ a comment"),
        ];
        for (line, sent) in cases {
            assert_eq!(parse(line), Line::Message(sent.into()), "{line:?}");
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
