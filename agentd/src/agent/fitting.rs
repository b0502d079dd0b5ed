//! Before each model call: old tool results cleared to a note, and when the history passes the
//! compaction threshold, one model call summarises everything before a safe cut.

use super::turn::Agent;
use crate::context::{compact, fit};
use crate::providers::CallFailed;
use protocol::event::{ContextCompacted, Event};
use protocol::session::TokenUsage;

/// Why a compaction the user asked for was not done.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// The history is too short: nothing before its newest turn to summarise.
    #[error(
        "nothing to compact: the history has nothing before its newest turn to summarise ({0} messages)"
    )]
    Nothing(usize),
    /// The summary call failed; the history is as it was.
    #[error("the summary call failed, and the history is as it was: {0}")]
    Failed(#[source] CallFailed),
    /// The summary came back empty or cut off; the history is as it was.
    #[error("{0}, so it was refused and the history was kept as it was")]
    Refused(#[source] compact::SummaryRefused),
    /// Interrupted while the summary was being written; the history is as it was.
    #[error("the compaction was interrupted; the history is as it was")]
    Interrupted,
}

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
        let summary = self.summarise_before(cut, usage);
        let done = summary
            .await
            .map_err(|e| format!("the history needed compacting, but {e}"))?;
        self.apply_summary(cut, before, done);
        Ok(())
    }

    /// Compacts after the provider refused the history as longer than the model's context
    /// window: the window it named, when smaller than the one configured, is the session's from
    /// now on (so the next compactions come in time), and the history before the cut is
    /// summarised whatever the estimate says. `Err` says why it could not be.
    pub(super) async fn compact_after_overflow(
        &mut self,
        named: Option<u64>,
        usage: &mut TokenUsage,
    ) -> Result<(), String> {
        if let Some(tokens) = named.filter(|w| *w < self.limits.window.tokens) {
            tracing::warn!(
                tokens,
                configured = self.limits.window.tokens,
                "the provider named a smaller context window than configured; using it"
            );
            self.limits.window.tokens = tokens;
        }
        self.reported = None;
        let cut = fit::on_demand_cut(&self.messages, &self.limits.window)
            .ok_or_else(|| "there is nothing before the newest step to summarise".to_owned())?;
        let before = self.history_tokens();
        let summary = self
            .summarise_before(cut, usage)
            .await
            .map_err(|e| e.to_string())?;
        self.apply_summary(cut, before, summary);
        Ok(())
    }

    /// Compacts now, as the user asked (`compact`, `/compact`): one summary call for what is
    /// before the cut ([`fit::on_demand_cut`]), the newest turn kept, `context_compacted`
    /// emitted (and so kept in the log). Stops at the session's interrupt.
    pub async fn compact_now(&mut self) -> Result<ContextCompacted, CompactError> {
        let window = self.limits.window;
        let cut = fit::on_demand_cut(&self.messages, &window)
            .ok_or(CompactError::Nothing(self.messages.len().saturating_sub(1)))?;
        let before = self.history_tokens();
        let mut usage = TokenUsage::default();
        let interrupt = self.interrupt.clone();
        let response = tokio::select! {
            r = self.summarise_before(cut, &mut usage) => r?,
            () = interrupt.triggered() => {
                interrupt.reset();
                return Err(CompactError::Interrupted);
            }
        };
        Ok(self.apply_summary(cut, before, response))
    }

    /// The summary of the messages before `cut` (without the system prompt): one model call.
    /// An empty or cut summary is refused (`compact::summary_of`), and logged with its reason.
    async fn summarise_before(
        &self,
        cut: usize,
        usage: &mut TokenUsage,
    ) -> Result<String, CompactError> {
        let older = &self.messages[fit::after_system(&self.messages)..cut];
        let request = compact::summary_request(&self.model, older);
        let response = self
            .provider
            .complete(&request, &mut |_: &str| {})
            .await
            .map_err(CompactError::Failed)?;
        usage.add(response.usage);
        match compact::summary_of(&response) {
            Ok(summary) => Ok(summary.to_owned()),
            Err(refused) => {
                tracing::warn!(%refused, "compaction: the summary was refused; the history is kept");
                Err(CompactError::Refused(refused))
            }
        }
    }

    /// Replaces the messages before `cut` by `summary`, and emits the `context_compacted` that
    /// says so (resume replays the same cut from its count).
    fn apply_summary(&mut self, cut: usize, before: u64, summary: String) -> ContextCompacted {
        let summarised = cut - fit::after_system(&self.messages);
        self.messages = compact::apply(&self.messages, cut, &summary);
        self.reported = None;
        let done = ContextCompacted {
            tokens_before: before,
            tokens_after: self.history_tokens(),
            // `1 + messages_summarised` is the cut: resume replays it from this count.
            messages_summarised: summarised as u64,
            summary,
        };
        (self.emit)(Event::ContextCompacted(done.clone()));
        done
    }
}
