//! Retries: which failures are worth another try, and how long to wait before it.
//!
//! Pure: the policy computes delays; the caller sleeps. Connection errors, timeouts and HTTP 408,
//! 409, 429, 5xx and 529 are retried with exponential backoff and jitter; a server's
//! `retry-after-ms` or `Retry-After` (seconds or an HTTP date), or a wait in the error body
//! (Gemini's `google.rpc.RetryInfo`), is honoured — a wait past [`RetryPolicy::max_delay`] ends
//! the call instead (the transport says so); `x-should-retry: true|false` overrides the status
//! either way, as the Anthropic and OpenAI SDKs do (`_should_retry` in anthropic-sdk-python's
//! `_base_client.py`: "If the server explicitly says whether or not to retry, obey.").

use std::time::{Duration, SystemTime};

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included.
    pub max_tries: u32,
    /// The first backoff.
    pub base_delay: Duration,
    /// No backoff is longer than this, and no server-requested wait either.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_tries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// Whether an HTTP status is worth retrying.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 529) || (500..600).contains(&status)
}

/// The wait a server asked for: `retry-after-ms`, else `Retry-After` in seconds or as an HTTP date.
pub fn server_delay(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = retry_after?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The server's `x-should-retry` header: `true` or `false`; anything else says nothing.
pub fn should_retry(value: &str) -> Option<bool> {
    match value.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The wait an error body asks for: a `google.rpc.RetryInfo` among `error.details`, its
/// `retryDelay` a protobuf `Duration` in JSON (`"31s"`, `"0.5s"`), as Gemini sends it on a 429
/// (<https://ai.google.dev/gemini-api/docs/troubleshooting>; googleapis'
/// `google/rpc/error_details.proto`).
pub fn body_delay(body: &str) -> Option<Duration> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v.pointer("/error/details")?
        .as_array()?
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|t| t.ends_with("/google.rpc.RetryInfo"))
        })
        .find_map(|d| d.get("retryDelay")?.as_str().and_then(protobuf_duration))
}

/// A protobuf `Duration` in its JSON form: decimal seconds with an `s` suffix.
fn protobuf_duration(text: &str) -> Option<Duration> {
    let secs: f64 = text.trim().strip_suffix('s')?.parse().ok()?;
    (secs.is_finite() && (0.0..=1e9).contains(&secs)).then(|| Duration::from_secs_f64(secs))
}

impl RetryPolicy {
    /// The wait before try number `next_try` (2 for the first retry), given what the server asked
    /// for and a random number in [0, 1) for jitter.
    pub fn delay(&self, next_try: u32, server: Option<Duration>, random: f64) -> Duration {
        if let Some(wait) = server {
            return wait.min(self.max_delay);
        }
        let exp = next_try.saturating_sub(2).min(20);
        let backoff = self
            .base_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay);
        // "Equal jitter": half fixed, half random, so retries spread out but never bunch at zero.
        backoff.mul_f64(0.5 + 0.5 * random.clamp(0.0, 1.0))
    }
}

/// A random number in [0, 1) for jitter; not for anything that needs to be unpredictable.
pub fn jitter() -> f64 {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x = u64::from(nanos) ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_statuses() {
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [200, 400, 401, 403, 404, 422] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn backoff_grows_exponentially_with_bounded_jitter() {
        let p = RetryPolicy {
            max_tries: 6,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        assert_eq!(p.delay(2, None, 0.0), Duration::from_millis(50));
        assert_eq!(p.delay(2, None, 1.0), Duration::from_millis(100));
        assert_eq!(p.delay(3, None, 1.0), Duration::from_millis(200));
        assert_eq!(p.delay(4, None, 1.0), Duration::from_millis(400));
        assert_eq!(p.delay(9, None, 1.0), Duration::from_secs(1), "capped");
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j));
        }
    }

    #[test]
    fn server_waits_are_honoured_and_capped() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(
            server_delay(Some("1500"), Some("9"), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            server_delay(None, Some("2"), now),
            Some(Duration::from_secs(2))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(
            server_delay(None, Some(&date), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(server_delay(None, Some("soon"), now), None);
        assert_eq!(server_delay(Some("-5"), None, now), None);
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(2, Some(Duration::from_secs(3600)), 0.5),
            p.max_delay
        );
    }

    #[test]
    fn waits_in_the_body_and_should_retry_are_read() {
        let gemini = r#"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"}]}}"#;
        assert_eq!(body_delay(gemini), Some(Duration::from_secs(31)));
        let half = gemini.replace("31s", "0.5s");
        assert_eq!(body_delay(&half), Some(Duration::from_millis(500)));
        for bad in ["-3s", "31", "soon", "1e20s", "NaNs"] {
            assert_eq!(body_delay(&gemini.replace("31s", bad)), None, "{bad}");
        }
        assert_eq!(body_delay(r#"{"error": {"message": "x"}}"#), None);
        assert_eq!(body_delay("<html>"), None);
        assert_eq!(should_retry("true"), Some(true));
        assert_eq!(should_retry(" false "), Some(false));
        assert_eq!(should_retry("maybe"), None);
    }
}
