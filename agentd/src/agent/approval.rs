//! Approval: a human answers a call the policy rated `ask` (or every call, in `always` mode).
//!
//! `agent run` at a terminal asks on `/dev/tty`; with no terminal there is no one to ask and the
//! dispatcher refuses, saying so. "Allow always" holds for the rest of the session for calls with
//! the same key: the tool and, for bash, the command's first word; for file tools, the path.

use crate::inert::inert;
use protocol::event::ToolCall;
use protocol::verdict::ApprovalDecision;
use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::Mutex;

/// Who answers approval requests.
#[derive(Debug)]
pub enum Approver {
    /// No one: asks are refused.
    Nobody,
    /// The controlling terminal.
    Terminal {
        /// Keys allowed for the rest of the session.
        always: Mutex<HashSet<String>>,
        /// One prompt at a time (parallel calls wait their turn).
        prompt: tokio::sync::Mutex<()>,
    },
}

impl Approver {
    /// An approver on the controlling terminal.
    pub fn terminal() -> Self {
        Approver::Terminal {
            always: Mutex::new(HashSet::new()),
            prompt: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether anyone can be asked.
    pub fn can_ask(&self) -> bool {
        matches!(self, Approver::Terminal { .. })
    }

    /// The human's answer for `call`, and who gave it (`user`, or `session` for an earlier
    /// "always"). `None` when no one can be asked or the terminal failed.
    pub async fn decide(
        &self,
        call: &ToolCall,
        reason: &str,
    ) -> Option<(ApprovalDecision, &'static str)> {
        let Approver::Terminal { always, prompt } = self else {
            return None;
        };
        let key = key_of(call);
        if always.lock().is_ok_and(|a| a.contains(&key)) {
            return Some((ApprovalDecision::AllowOnce, "session"));
        }
        let _turn = prompt.lock().await;
        // The model wrote the call: shown inert, so it cannot rewrite what the human reads.
        let question = format!(
            "\n? {} {}\n  needs approval: {}\n  [y] allow once  [a] allow always for `{}`  [N] deny: ",
            inert(&call.name),
            inert(&call.arguments),
            inert(reason),
            inert(&key)
        );
        let answer = tokio::task::spawn_blocking(move || ask_tty(&question))
            .await
            .ok()
            .flatten()?;
        let decision = match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => ApprovalDecision::AllowOnce,
            "a" | "always" => ApprovalDecision::AllowAlways,
            _ => ApprovalDecision::Deny,
        };
        if decision == ApprovalDecision::AllowAlways
            && let Ok(mut a) = always.lock()
        {
            a.insert(key);
        }
        Some((decision, "user"))
    }
}

/// What "allow always" remembers a call by.
pub fn key_of(call: &ToolCall) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    let detail = match call.name.as_str() {
        "bash" => args
            .get("command")
            .and_then(|c| c.as_str())
            .and_then(|c| c.split_whitespace().next())
            .unwrap_or("")
            .to_owned(),
        _ => args
            .get("path")
            .and_then(|p| p.as_str())
            .unwrap_or("")
            .to_owned(),
    };
    format!("{} {detail}", call.name).trim().to_owned()
}

/// Asks on the controlling terminal; `None` if there is none.
fn ask_tty(question: &str) -> Option<String> {
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    tty.write_all(question.as_bytes()).ok()?;
    tty.flush().ok()?;
    let mut line = String::new();
    std::io::BufReader::new(tty).read_line(&mut line).ok()?;
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ids::ToolCallId;

    #[test]
    fn always_keys_group_by_tool_and_command_or_path() {
        let call = |name: &str, args: &str| ToolCall {
            id: ToolCallId::generated(0),
            name: name.into(),
            arguments: args.into(),
        };
        assert_eq!(
            key_of(&call("bash", r#"{"command": "mkdir -p build/x"}"#)),
            "bash mkdir"
        );
        assert_eq!(
            key_of(&call("write_file", r#"{"path": "../x", "content": ""}"#)),
            "write_file ../x"
        );
        assert_eq!(key_of(&call("bash", "not json")), "bash");
    }
}
