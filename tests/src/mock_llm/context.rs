//! A context window for the mock: a request longer than it is refused the way each service
//! refuses a prompt over the model's window, in its own shape and words, and the script does not
//! advance. Off unless a test sets a window ([`super::MockLlm::limit_context`]): a real model's
//! window is far larger than any test's history, so the test gives the mock a small one, as a
//! small local model has.
//!
//! Tokens are counted as the body's bytes / 4, the rule of thumb every provider documents.
//!
//! The shapes:
//! - OpenAI: 400, `code: "context_length_exceeded"`, "This model's maximum context length is M
//!   tokens. However, your messages resulted in N tokens. Please reduce the length of the
//!   messages." (<https://platform.openai.com/docs/guides/error-codes>; the whole body as users
//!   quote it, e.g. ChatGPTNextWeb/NextChat#2358, crewAIInc/crewAI-examples#121).
//! - Anthropic: 400 `invalid_request_error`, "prompt is too long: N tokens > M maximum"
//!   (<https://docs.anthropic.com/en/api/errors>; quoted in anthropics/claude-code#12186,
//!   boldsoftware/exe.dev#62).
//! - Gemini: 400 `INVALID_ARGUMENT`, "The input token count (N) exceeds the maximum number of
//!   tokens allowed (M)." (<https://ai.google.dev/gemini-api/docs/troubleshooting>; quoted in
//!   google-gemini/gemini-cli#6678, #4118).

use super::Reply;
use super::strict::{Format, format_of};
use serde_json::json;

/// The tokens the mock counts for a body of `bytes`.
pub fn tokens_of(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The service's refusal of a request of `bytes` to `path` when it is over `limit` tokens.
pub(super) fn overflow(path: &str, bytes: usize, limit: u64) -> Option<Reply> {
    let n = tokens_of(bytes);
    if limit == 0 || n <= limit {
        return None;
    }
    let body = match format_of(path)? {
        Format::OpenAi => json!({"error": {
            "message": format!("This model's maximum context length is {limit} tokens. However, your messages resulted in {n} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }}),
        Format::Anthropic => json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": format!("prompt is too long: {n} tokens > {limit} maximum"),
        }}),
        Format::Gemini => json!({"error": {
            "code": 400,
            "message": format!("The input token count ({n}) exceeds the maximum number of tokens allowed ({limit})."),
            "status": "INVALID_ARGUMENT",
        }}),
    };
    Some(Reply::Json {
        status: 400,
        headers: vec![],
        body: body.to_string(),
    })
}
