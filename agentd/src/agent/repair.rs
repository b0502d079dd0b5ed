//! What a turn does when the provider's answer cannot be used as it is, before giving up: a call
//! cut by the output limit or a call the provider could not parse is answered with an error and
//! the turn goes on ([`MAX_REPAIRS`] times); a history over the context window is compacted and
//! the step asked again (once). Past that, the turn ends with the outcome that says why
//! (`agent/outcome.rs`).

use super::turn::{Agent, TurnOutcome};
use crate::providers::model::{Message, ModelResponse, Role, Stop};
use protocol::session::FinishReason;

/// How many steps of one turn may have their cut or malformed calls answered with an error
/// before the turn ends with that outcome.
pub const MAX_REPAIRS: u32 = 2;

/// What a turn has repaired so far.
#[derive(Debug, Default)]
pub(super) struct Repairs {
    /// Steps whose calls came cut or malformed, answered with an error.
    steps: u32,
    /// Whether the provider already said the history is over the context window.
    overflowed: bool,
    /// Whether the history was just compacted after an overflow: the step is asked again as it
    /// is, since the window the provider named may put the summary itself past the threshold.
    pub(super) just_compacted: bool,
}

impl Repairs {
    /// A step whose last call the output limit cut was answered; `Some` ends the turn, with why.
    pub(super) fn cut(&mut self, response: &ModelResponse) -> Option<String> {
        self.steps += 1;
        (self.steps > MAX_REPAIRS).then(|| {
            format!(
                "the model's output limit cut its tool calls off {} times in this turn (finish reason {}); [provider] max_output_tokens sets the limit",
                self.steps,
                response.finish_reason.as_deref().unwrap_or_default()
            )
        })
    }
}

impl Agent {
    /// An answer without calls: `None` when the turn goes on (a malformed call was fed back),
    /// else how it ends — `done`, or the outcome the provider's stop makes of it.
    pub(super) fn answered(
        &mut self,
        repairs: &mut Repairs,
        response: &ModelResponse,
    ) -> Option<(FinishReason, Option<String>)> {
        if response.stop() == Stop::MalformedCall && repairs.steps < MAX_REPAIRS {
            // No call arrived to answer: the error goes back as the user's words.
            repairs.steps += 1;
            let feedback = malformed_feedback(response);
            self.messages.push(Message::text(Role::User, feedback));
            return None;
        }
        Some(match super::outcome::of_stop(response) {
            Some((reason, message)) => {
                tracing::warn!(finish_reason = ?response.finish_reason, %message, "the model's answer ended the turn");
                (reason, Some(message))
            }
            None => (FinishReason::Done, None),
        })
    }

    /// The provider said the history is over the context window (`window`, when it named it):
    /// the first time in the turn, compact and return `None` to ask the step again; else, or
    /// when compacting failed, the message the turn ends with.
    pub(super) async fn overflowed(
        &mut self,
        repairs: &mut Repairs,
        out: &mut TurnOutcome,
        message: String,
        window: Option<u64>,
    ) -> Option<String> {
        let why = if repairs.overflowed {
            "even after compacting".to_owned()
        } else {
            repairs.overflowed = true;
            let mut usage = out.usage;
            let compacted = self.compact_after_overflow(window, &mut usage).await;
            out.usage = usage;
            match compacted {
                Ok(()) => {
                    repairs.just_compacted = true;
                    return None;
                }
                Err(why) => format!("and compacting did not help: {why}"),
            }
        };
        Some(format!("{message} ({why})"))
    }
}

/// What the model is told when the provider could not parse the call it wrote, and no call
/// arrived (Gemini `MALFORMED_FUNCTION_CALL`): the provider's words, and to try again.
fn malformed_feedback(response: &ModelResponse) -> String {
    let detail = response
        .finish_message
        .as_deref()
        .map(|m| format!(" The provider said: {m}"))
        .unwrap_or_default();
    format!(
        "[error] Your last tool call was malformed and was not run (finish reason {}).{detail} Write the call again with arguments that are one valid JSON object matching the tool's schema.",
        response.finish_reason.as_deref().unwrap_or_default()
    )
}
