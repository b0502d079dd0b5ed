//! Before each model call: old tool results cleared to a note, and when the history passes the
//! compaction threshold, one model call summarises everything before a safe cut.

use super::turn::Agent;
use crate::context::{compact, fit};
use crate::providers::model::Message;
use protocol::event::{ContextCompacted, Event};
use protocol::session::TokenUsage;

/// The default context window when neither config nor flag gives one, tokens: what current
/// frontier models offer at least.
pub const DEFAULT_WINDOW: u64 = 128_000;

impl Agent {
    /// The history's size for the next request: what the provider reported for the last request,
    /// plus an estimate of what was added since; an estimate alone before the first report.
    pub(super) fn history_tokens(&self) -> u64 {
        match self.reported {
            Some((tokens, len)) if len <= self.messages.len() => {
                tokens + self.limits.window.count_all(&self.messages[len..])
            }
            _ => self.limits.window.count_all(&self.messages),
        }
    }

    /// Clears stale results and compacts when due. `Err` says why a due compaction failed.
    pub(super) async fn fit_context(&mut self, usage: &mut TokenUsage) -> Result<(), String> {
        let window = self.limits.window;
        if fit::clear_stale(&mut self.messages, window.keep_results_steps) > 0 {
            // Cleared results are smaller than what the provider last counted.
            self.reported = None;
        }
        let before = self.history_tokens();
        if before <= window.threshold() {
            return Ok(());
        }
        let Some(cut) = fit::compaction_cut(&self.messages, &window) else {
            return Ok(());
        };
        let first = usize::from(
            self.messages
                .first()
                .is_some_and(|m| m.role == crate::providers::model::Role::System),
        );
        let older: Vec<Message> = self.messages[first..cut].to_vec();
        let request = compact::summary_request(&self.model, &older);
        let response = self
            .provider
            .complete(&request, &mut |_: &str| {})
            .await
            .map_err(|e| {
                format!("the history needed compacting and the summary call failed: {e}")
            })?;
        usage.add(response.usage);
        self.messages = compact::apply(&self.messages, cut, &response.text);
        debug_assert_eq!(
            cut,
            first + older.len(),
            "resume replays the cut from the count"
        );
        self.reported = None;
        let after = self.history_tokens();
        (self.emit)(Event::ContextCompacted(ContextCompacted {
            tokens_before: before,
            tokens_after: after,
            // `first + messages_summarised` is the cut: resume replays it from this count.
            messages_summarised: older.len() as u64,
            summary: response.text,
        }));
        Ok(())
    }
}
