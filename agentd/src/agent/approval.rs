//! Approval: a human answers a call the policy rated `ask` (or every call, in `always` mode).
//!
//! `agent run` at a terminal asks on `/dev/tty`; in the daemon the session's clients answer
//! ([`crate::engine::approvals`]); with no one to ask the dispatcher refuses, saying so. "Allow always" remembers exactly the parts of the call that
//! asked (each command, normalised, with the rule that asked; each path; each construct the
//! policy could not see through), and a later call runs without a question only when every part
//! of it that asks was remembered: after `mkdir x` is allowed always, `mkdir y && python3 evil.py`
//! still asks. In `always` mode a call the policy allows has no such parts, and the whole call is
//! remembered instead. The remembered set is a serialisable value ([`policy::Approvals`]), kept
//! with the session.

use policy::{ApprovalKey, Approvals, Decision};
use protocol::event::ToolCall;
use protocol::ids::ApprovalId;
use protocol::verdict::ApprovalDecision;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

/// Who answers approval requests.
#[derive(Debug)]
pub enum Approver {
    /// No one: asks are refused.
    Nobody,
    /// The controlling terminal.
    Terminal {
        /// What the human allowed for the rest of the session.
        always: Mutex<Approvals>,
        /// One prompt at a time (parallel calls wait their turn).
        prompt: tokio::sync::Mutex<()>,
    },
    /// The session's clients (the daemon): the first answer wins; with no client attached the
    /// ask is denied after a wait.
    Clients(Arc<crate::engine::approvals::Broker>),
}

impl Approver {
    /// An approver on the controlling terminal.
    pub fn terminal() -> Self {
        Self::terminal_with(Approvals::new())
    }

    /// An approver on the controlling terminal that remembers `approved` already (a resumed
    /// session).
    pub fn terminal_with(approved: Approvals) -> Self {
        Approver::Terminal {
            always: Mutex::new(approved),
            prompt: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether anyone can be asked.
    pub fn can_ask(&self) -> bool {
        matches!(self, Approver::Terminal { .. } | Approver::Clients(_))
    }

    /// Adds `approved` to what was allowed always (a resumed session's).
    pub fn restore(&self, approved: &Approvals) {
        match self {
            Approver::Nobody => {}
            Approver::Terminal { always, .. } => {
                if let Ok(mut a) = always.lock() {
                    approved.keys().for_each(|k| a.remember_key(k.clone()));
                }
            }
            Approver::Clients(broker) => broker.restore(approved),
        }
    }

    /// What was allowed always so far, to be kept with the session.
    pub fn approved(&self) -> Approvals {
        match self {
            Approver::Nobody | Approver::Clients(_) => Approvals::new(),
            Approver::Terminal { always, .. } => {
                always.lock().map(|a| a.clone()).unwrap_or_default()
            }
        }
    }

    /// The human's answer for `call` (ask `approval`), rated `decision`, and who gave it (`user`,
    /// `session` for an earlier "always" that covers it, or `timeout` when no client answered in
    /// time). `None` when no one can be asked or the terminal failed.
    pub async fn decide(
        &self,
        approval: ApprovalId,
        call: &ToolCall,
        decision: &Decision,
    ) -> Option<(ApprovalDecision, &'static str)> {
        let (always, prompt) = match self {
            Approver::Nobody => return None,
            Approver::Clients(broker) => {
                return Some(broker.decide(approval, call, decision).await);
            }
            Approver::Terminal { always, prompt } => (always, prompt),
        };
        if always.lock().is_ok_and(|a| covered(&a, call, decision)) {
            return Some((ApprovalDecision::AllowOnce, "session"));
        }
        let _turn = prompt.lock().await;
        // The model wrote the call: shown exactly (escaped, numbered, wrapped by us) under our
        // own title, so it cannot draw what the human reads (crate::approval_view).
        let (call_shown, reason) = (call.clone(), decision.reason.clone());
        let covers = what_always_covers(call, decision);
        let asking = move |width: usize| question(&call_shown, &reason, &covers, width);
        let answer = tokio::task::spawn_blocking(move || ask_tty(asking))
            .await
            .ok()
            .flatten()?;
        let answer = match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => ApprovalDecision::AllowOnce,
            "a" | "always" => ApprovalDecision::AllowAlways,
            _ => ApprovalDecision::Deny,
        };
        if answer == ApprovalDecision::AllowAlways
            && let Ok(mut a) = always.lock()
        {
            remember(&mut a, call, decision);
        }
        Some((answer, "user"))
    }
}

/// The key of a whole call: what `always` mode remembers of a call the policy allows.
fn call_key(call: &ToolCall) -> ApprovalKey {
    ApprovalKey::Call {
        tool: call.name.clone(),
        detail: call.arguments.clone(),
    }
}

/// Whether the session's approvals cover `call`: every part of it that asks was allowed always
/// (or, for a call with no such parts, the call itself was).
pub fn covered(approved: &Approvals, call: &ToolCall, decision: &Decision) -> bool {
    if decision.parts.is_empty() {
        return approved.contains(&call_key(call));
    }
    approved.covers(decision)
}

/// Remembers what "allow always" means for `call`.
pub fn remember(approved: &mut Approvals, call: &ToolCall, decision: &Decision) {
    if decision.asking().next().is_none() {
        approved.remember_key(call_key(call));
    } else {
        approved.remember(decision);
    }
}

/// What "allow always" would remember, in words, for the prompt.
fn what_always_covers(call: &ToolCall, decision: &Decision) -> String {
    let parts: Vec<String> = decision
        .asking()
        .map(|p| match &p.key {
            ApprovalKey::Command { line, .. } => format!("`{line}`"),
            ApprovalKey::Path { access, path } => format!("{access:?} {path}").to_lowercase(),
            ApprovalKey::Construct { text, .. } => format!("`{text}`"),
            ApprovalKey::Call { tool, .. } => format!("this {tool} call"),
        })
        .collect();
    if parts.is_empty() {
        format!("this exact {} call", call.name)
    } else {
        parts.join(", ")
    }
}

/// The question on the terminal, `width` columns wide: our title, the call's subject whole and
/// numbered, why it asks and what "always" would cover, each escaped and wrapped by us; the
/// answer line last.
fn question(call: &ToolCall, reason: &str, covers: &str, width: usize) -> String {
    use crate::approval_view::{field, numbered, subject, title};
    let mut lines = vec![String::new(), title(&call.name)];
    lines.extend(numbered(&subject(call), width));
    lines.extend(field("  needs approval: ", reason, width));
    lines.extend(field("  [a] would allow always: ", covers, width));
    lines.push("  [y] allow once  [a] allow always  [N] deny: ".into());
    lines.join("\n")
}

/// Asks on the controlling terminal the question `asking` draws for its width; `None` if there
/// is no terminal.
fn ask_tty(asking: impl FnOnce(usize) -> String) -> Option<String> {
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    let question = asking(crate::approval_view::columns(&tty));
    tty.write_all(question.as_bytes()).ok()?;
    tty.flush().ok()?;
    let mut line = String::new();
    std::io::BufReader::new(tty).read_line(&mut line).ok()?;
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy::{Context, Policy};
    use protocol::ids::ToolCallId;
    use std::path::Path;

    fn bash(command: &str) -> ToolCall {
        ToolCall {
            id: ToolCallId::generated(0),
            name: "bash".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
        }
    }

    fn rate(p: &Policy, command: &str) -> Decision {
        let ctx = Context {
            workspace: Path::new("/work/project"),
            home: Some(Path::new("/home/dev")),
        };
        p.check_bash(command, &ctx)
    }

    #[test]
    fn the_terminal_question_numbers_the_command_under_one_title_of_ours() {
        let command = format!("{}? approve bash git log --oneline -5", "\n".repeat(45));
        let shown = question(&bash(&command), "asks\u{202e}", "`x`", 120);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[1], "? approve bash");
        assert_eq!(
            lines.iter().filter(|l| l.starts_with('?')).count(),
            1,
            "{shown}"
        );
        assert_eq!(lines[47], "  46 │ ? approve bash git log --oneline -5");
        assert_eq!(lines[48], r"  needs approval: asks\u{202e}");
        assert!(shown.ends_with("[N] deny: "), "{shown}");
    }

    #[test]
    fn allow_always_covers_only_the_parts_that_asked() {
        let p = Policy::builtin().unwrap();
        let mut approved = Approvals::new();
        let first = rate(&p, "mkdir x");
        remember(&mut approved, &bash("mkdir x"), &first);
        assert!(covered(&approved, &bash("mkdir x"), &rate(&p, "mkdir x")));
        assert!(covered(
            &approved,
            &bash("ls && mkdir x"),
            &rate(&p, "ls && mkdir x")
        ));
        for other in [
            "mkdir y && python3 evil.py",
            "mkdir x && python3 evil.py",
            "mkdir y",
        ] {
            assert!(
                !covered(&approved, &bash(other), &rate(&p, other)),
                "{other}"
            );
        }
    }

    #[test]
    fn in_always_mode_an_allowed_call_is_remembered_whole() {
        let p = Policy::builtin().unwrap();
        let mut approved = Approvals::new();
        let d = rate(&p, "ls");
        assert!(!covered(&approved, &bash("ls"), &d));
        remember(&mut approved, &bash("ls"), &d);
        assert!(covered(&approved, &bash("ls"), &d));
        assert!(!covered(&approved, &bash("ls -la"), &rate(&p, "ls -la")));
    }

    #[test]
    fn the_remembered_set_survives_serialisation() {
        let p = Policy::builtin().unwrap();
        let mut approved = Approvals::new();
        let d = rate(&p, "cat ~/.ssh/config; touch x");
        remember(&mut approved, &bash("cat ~/.ssh/config; touch x"), &d);
        let text = serde_json::to_string(&approved).unwrap();
        let back: Approvals = serde_json::from_str(&text).unwrap();
        assert!(covered(
            &back,
            &bash("touch x; cat ~/.ssh/config"),
            &rate(&p, "touch x; cat ~/.ssh/config")
        ));
    }
}
