//! Whether an error answer says the request is longer than the model's context window, in each
//! provider's words, and the window it names: the turn compacts and tries again on it instead
//! of ending (issue 20, finding 11).
//!
//! - OpenAI (and vLLM, which copies it): 400 with `error.code: "context_length_exceeded"`,
//!   "This model's maximum context length is M tokens. However, …"
//!   (<https://platform.openai.com/docs/guides/error-codes>).
//! - Anthropic: 400 `invalid_request_error`, "prompt is too long: N tokens > M maximum"
//!   (<https://docs.anthropic.com/en/api/errors>).
//! - Gemini: 400 `INVALID_ARGUMENT`, "The input token count (N) exceeds the maximum number of
//!   tokens allowed (M)." (<https://ai.google.dev/gemini-api/docs/troubleshooting>).
//!
//! Only a 400 (and 413, which some proxies send for the same) is read: a 5xx that happens to
//! quote such words is the server's trouble, retried as such.

use serde_json::Value;

/// The window an overflow error names, tokens, when it names one.
pub type Window = Option<u64>;

/// `Some(window)` when the error answer with `status` and `body` says the prompt is over the
/// model's context window; `None` for any other error.
pub fn context_overflow(status: u16, body: &str) -> Option<Window> {
    if status != 400 && status != 413 {
        return None;
    }
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let code = v.pointer("/error/code").and_then(Value::as_str);
    let message = v
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or(body);
    let lower = message.to_ascii_lowercase();
    let said = code == Some("context_length_exceeded")
        || lower.contains("maximum context length")
        || lower.contains("prompt is too long")
        || (lower.contains("input token count") && lower.contains("exceeds the maximum"));
    said.then(|| window_in(&lower))
}

/// The window the message names: "maximum context length is M", "> M maximum", "allowed (M)".
fn window_in(message: &str) -> Window {
    let number_after = |marker: &str| {
        let at = message.find(marker)? + marker.len();
        let digits: String = message[at..]
            .chars()
            .skip_while(|c| *c == ' ' || *c == '(')
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    number_after("maximum context length is")
        .or_else(|| number_after(" > "))
        .or_else(|| number_after("tokens allowed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_s_overflow_is_recognised_with_its_window() {
        for (body, window) in [
            (
                r#"{"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}"#,
                Some(8192),
            ),
            (
                r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 208656 tokens > 200000 maximum"}}"#,
                Some(200_000),
            ),
            (
                r#"{"error": {"code": 400, "message": "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}"#,
                Some(1_048_576),
            ),
            (
                r#"{"error": {"message": "too long", "code": "context_length_exceeded"}}"#,
                None,
            ),
        ] {
            assert_eq!(context_overflow(400, body), Some(window), "{body}");
        }
    }

    #[test]
    fn other_errors_are_not_overflows() {
        let overflow = r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 5 tokens > 4 maximum"}}"#;
        assert_eq!(context_overflow(500, overflow), None);
        assert_eq!(context_overflow(429, overflow), None);
        for body in [
            r#"{"error": {"message": "Unsupported parameter: 'max_tokens'", "code": "unsupported_parameter"}}"#,
            r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}}"#,
            "not json",
        ] {
            assert_eq!(context_overflow(400, body), None, "{body}");
        }
    }
}
