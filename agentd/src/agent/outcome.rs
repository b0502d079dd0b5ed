//! How a turn ended, for people and scripts: the outcome a provider's stop becomes
//! ([`of_stop`]), its words, its exit status for `agent run` ([`exit_code`]) and its JSON
//! ([`json`]).
//!
//! A provider's stop is part of the outcome, not a detail of the logs: a refusal, a safety
//! stop or an answer cut by the output limit used to end as "done" with empty or cut text. The
//! provider's own name for it is kept in the message, so a user can look it up.

use super::turn::TurnOutcome;
use crate::providers::model::{ModelResponse, Stop};
use protocol::ids::SessionId;
use protocol::session::FinishReason;

/// The outcome of a response that asked for no tool, when it is not `done`: which one, and the
/// words that say why, with the provider's own reason.
pub fn of_stop(response: &ModelResponse) -> Option<(FinishReason, String)> {
    let said = response.finish_reason.as_deref().unwrap_or_default();
    let detail = response
        .finish_message
        .as_deref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    let (reason, what) = match response.stop() {
        Stop::Done | Stop::ToolCalls | Stop::Other => return None,
        Stop::Length => (
            FinishReason::OutputLimit,
            "the model's output limit cut its answer off ([provider] max_output_tokens sets it)",
        ),
        Stop::Refusal => (FinishReason::Refused, "the model declined to answer"),
        Stop::Filtered if said.starts_with("blockReason:") => (
            FinishReason::Filtered,
            "the provider's content filter blocked the prompt",
        ),
        Stop::Filtered => (
            FinishReason::Filtered,
            "the provider's content filter stopped the answer",
        ),
        Stop::MalformedCall => (
            FinishReason::MalformedCall,
            "the model wrote a tool call the provider could not parse",
        ),
        Stop::ContextOverflow => (
            FinishReason::ContextOverflow,
            "the conversation filled the model's context window",
        ),
    };
    Some((reason, format!("{what} (finish reason {said}){detail}")))
}

/// `agent run`'s exit status for an outcome: 0 for `done`; 1 for the turn's own limits and
/// errors (max steps, timeout, token budget, interrupted, error); a status of its own for each
/// way the provider ended it (2 is a usage or configuration error, before any turn).
pub fn exit_code(reason: FinishReason) -> i32 {
    match reason {
        FinishReason::Done => 0,
        FinishReason::MaxSteps
        | FinishReason::Timeout
        | FinishReason::TokenBudget
        | FinishReason::Interrupted
        | FinishReason::Error => 1,
        FinishReason::OutputLimit => 3,
        FinishReason::Refused => 4,
        FinishReason::Filtered => 5,
        FinishReason::MalformedCall => 6,
        FinishReason::ContextOverflow => 7,
    }
}

/// The outcome in a few words, for the line that says why a turn ended.
pub fn words(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Done => "done",
        FinishReason::MaxSteps => "step limit reached",
        FinishReason::Timeout => "timed out",
        FinishReason::TokenBudget => "token budget spent",
        FinishReason::Interrupted => "interrupted",
        FinishReason::Error => "error",
        FinishReason::OutputLimit => "cut off by the output limit",
        FinishReason::Refused => "the model refused",
        FinishReason::Filtered => "stopped by the content filter",
        FinishReason::MalformedCall => "malformed tool calls",
        FinishReason::ContextOverflow => "context window full",
    }
}

/// The line `agent run --output-format text` writes on stderr when a turn did not end `done`.
pub fn text_line(outcome: &TurnOutcome) -> Option<String> {
    let message = outcome.message.as_deref()?;
    Some(format!(
        "agent: the turn ended ({}: {}): {}",
        outcome.reason.as_str(),
        words(outcome.reason),
        crate::inert::inert(message)
    ))
}

/// `agent run --output-format json`'s one object.
pub fn json(outcome: &TurnOutcome, session: &SessionId) -> serde_json::Value {
    let calls: Vec<serde_json::Value> = outcome
        .tool_calls
        .iter()
        .map(|(c, status)| serde_json::json!({"id": c.id.as_str(), "name": c.name, "arguments": c.arguments, "status": status}))
        .collect();
    serde_json::json!({
        "result": outcome.final_text,
        "finish_reason": outcome.reason,
        "outcome": words(outcome.reason),
        "exit_code": exit_code(outcome.reason),
        "message": outcome.message,
        "usage": outcome.usage,
        "session_id": session,
        "tool_calls": calls,
        "changes": outcome.changes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stopped(reason: &str) -> ModelResponse {
        ModelResponse {
            finish_reason: Some(reason.into()),
            ..ModelResponse::default()
        }
    }

    #[test]
    fn each_stop_is_an_outcome_with_its_provider_reason_and_an_exit_status_of_its_own() {
        assert_eq!(of_stop(&stopped("stop")), None);
        assert_eq!(of_stop(&stopped("end_turn")), None);
        let mut seen = std::collections::BTreeSet::new();
        for (said, reason) in [
            ("length", FinishReason::OutputLimit),
            ("refusal", FinishReason::Refused),
            ("SAFETY", FinishReason::Filtered),
            ("blockReason:PROHIBITED_CONTENT", FinishReason::Filtered),
            ("MALFORMED_FUNCTION_CALL", FinishReason::MalformedCall),
            (
                "model_context_window_exceeded",
                FinishReason::ContextOverflow,
            ),
        ] {
            let (got, message) = of_stop(&stopped(said)).unwrap();
            assert_eq!(got, reason, "{said}");
            assert!(message.contains(said), "{message}");
            seen.insert(exit_code(got));
        }
        assert_eq!(seen.len(), 5, "one status per outcome: {seen:?}");
        assert!(!seen.contains(&0) && !seen.contains(&1) && !seen.contains(&2));
    }
}
