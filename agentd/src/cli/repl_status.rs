//! A provider's retry, shown on the REPL's status line (where the spinner is) instead of as a
//! log line over it: a `tracing` layer picks up the providers' warnings — "model call failed;
//! retrying" with its `error`, `tries` and `wait` — and keeps the newest, which the spinner
//! shows until the retry is due. The warning still goes to the log file.
//!
//! Only what the warning says reaches the screen: a cause the provider left out of its error
//! (a connection refused, behind "error sending request") is not there to show.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tracing::field::{Field, Visit};

/// The newest retry, in words, and until when to show it.
static STATUS: Mutex<Option<(String, Instant)>> = Mutex::new(None);

/// How long past its wait a retry stays shown (the retried call is under way by then).
const LINGER: Duration = Duration::from_secs(2);

/// What the status line should say now instead of "working", if anything.
pub fn current() -> Option<String> {
    let status = STATUS.lock().unwrap_or_else(|e| e.into_inner());
    status
        .as_ref()
        .filter(|(_, until)| Instant::now() < *until)
        .map(|(text, _)| text.clone())
}

/// The layer that keeps the providers' retries for [`current`].
#[derive(Debug, Default)]
pub struct RetryLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for RetryLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() != tracing::Level::WARN || !meta.target().starts_with("agentd::providers")
        {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Some((text, wait)) = fields.retry() {
            let until = Instant::now() + wait + LINGER;
            *STATUS.lock().unwrap_or_else(|e| e.into_inner()) = Some((text, until));
        }
    }
}

/// The fields of a retry warning.
#[derive(Debug, Default)]
struct Fields {
    message: String,
    error: Option<String>,
    tries: Option<u64>,
    wait: Option<String>,
}

impl Fields {
    /// The status line's words and the wait, when the event is a retry.
    fn retry(&self) -> Option<(String, Duration)> {
        if !self.message.contains("retrying") {
            return None;
        }
        let wait = self.wait.as_deref().and_then(parse_debug_duration);
        let mut text = String::from("the model call failed");
        if let Some(error) = &self.error {
            let _ = write!(text, ": {error}");
        }
        match (self.tries, &self.wait) {
            (Some(n), Some(w)) => {
                let _ = write!(text, " — try {n} in {w}");
            }
            (Some(n), None) => {
                let _ = write!(text, " — try {n}");
            }
            _ => text.push_str(" — retrying"),
        }
        Some((
            crate::inert::inert_line(&text).into_owned(),
            wait.unwrap_or_default(),
        ))
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        match field.name() {
            "message" => self.message = text,
            "error" => self.error = Some(text),
            "wait" => self.wait = Some(text),
            _ => {}
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "tries" => self.tries = Some(value),
            _ => self.record_debug(field, &value),
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        match (field.name(), u64::try_from(value)) {
            ("tries", Ok(v)) => self.tries = Some(v),
            _ => self.record_debug(field, &value),
        }
    }
}

/// A `Duration`'s `Debug` text (`1.5s`, `250ms`, `3µs`) back as a duration.
fn parse_debug_duration(text: &str) -> Option<Duration> {
    let units = [("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9), ("s", 1.0)];
    units.iter().find_map(|(unit, scale)| {
        let number: f64 = text.strip_suffix(unit)?.parse().ok()?;
        Duration::try_from_secs_f64(number * scale).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_warning_becomes_a_status_and_nothing_else_does() {
        let retry = Fields {
            message: "model call failed; retrying".into(),
            error: Some("openai: cannot reach http://x: connection refused".into()),
            tries: Some(2),
            wait: Some("1.5s".into()),
        };
        let (text, wait) = retry.retry().unwrap();
        assert_eq!(
            text,
            "the model call failed: openai: cannot reach http://x: connection refused — try 2 in 1.5s"
        );
        assert_eq!(wait, Duration::from_millis(1500));
        let other = Fields {
            message: "skipped AGENTS.md".into(),
            ..Fields::default()
        };
        assert!(other.retry().is_none());
        assert_eq!(
            parse_debug_duration("250ms"),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_debug_duration("2s"), Some(Duration::from_secs(2)));
        assert_eq!(parse_debug_duration("soon"), None);
    }
}
