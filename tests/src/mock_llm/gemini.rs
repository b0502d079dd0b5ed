//! Gemini response chunks.

use serde_json::{Value, json};

/// A chunk with these parts; `finish` adds a finish reason and usage.
pub fn chunk(parts: Vec<Value>, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut v = json!({"candidates": [candidate.clone()]});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
        v = json!({"candidates": [candidate], "usageMetadata": {"promptTokenCount": 21, "candidatesTokenCount": 9}});
    }
    v
}
/// A text part.
pub fn text(t: &str) -> Value {
    json!({"text": t})
}
/// A function call part.
pub fn call(name: &str, args: Value) -> Value {
    json!({"functionCall": {"name": name, "args": args}})
}
/// A Gemini 2.5 answer whose thinking used the whole `maxOutputTokens`: no parts at all,
/// `finishReason: MAX_TOKENS`, the thinking counted in `thoughtsTokenCount`
/// (<https://ai.google.dev/gemini-api/docs/thinking>: thinking tokens count against the
/// output limit; `FinishReason.MAX_TOKENS` in
/// <https://ai.google.dev/api/generate-content#FinishReason>).
pub fn thought_out(max_output_tokens: u64) -> Value {
    json!({"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}],
           "usageMetadata": {"promptTokenCount": 900, "totalTokenCount": 900 + max_output_tokens, "thoughtsTokenCount": max_output_tokens}})
}
/// A 429 as Gemini sends it: the wait is in the body, a `google.rpc.RetryInfo` among
/// `error.details` with a protobuf `Duration` such as `"31s"`, and no `Retry-After` header
/// (<https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes>; the detail types are
/// googleapis' `google/rpc/error_details.proto`).
pub fn rate_limited(retry_delay: &str) -> super::Reply {
    super::Reply::Json {
        status: 429,
        headers: vec![],
        body: json!({"error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
                {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
            ]
        }})
        .to_string(),
    }
}
/// `part` with a `thoughtSignature`, as Gemini 3 signs the first call of each step.
pub fn signed(mut part: Value, signature: &str) -> Value {
    part["thoughtSignature"] = json!(signature);
    part
}
/// A candidate stopped by `reason` with no content, as Gemini ends a `SAFETY`, `RECITATION` or
/// `PROHIBITED_CONTENT` stop (with its `safetyRatings`), or a `MALFORMED_FUNCTION_CALL` (with a
/// `finishMessage` quoting the call it could not parse)
/// (<https://ai.google.dev/api/generate-content#FinishReason>, `Candidate.finishMessage`).
pub fn stopped(reason: &str, finish_message: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model"}, "finishReason": reason, "index": 0,
        "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": if reason == "SAFETY" { "HIGH" } else { "NEGLIGIBLE" }}]});
    if let Some(m) = finish_message {
        candidate["finishMessage"] = json!(m);
    }
    json!({"candidates": [candidate], "usageMetadata": {"promptTokenCount": 30, "totalTokenCount": 30}})
}
/// A prompt blocked before any answer: no candidates, only `promptFeedback.blockReason`
/// (<https://ai.google.dev/api/generate-content#PromptFeedback>, `BlockReason`).
pub fn blocked(reason: &str) -> Value {
    json!({"promptFeedback": {"blockReason": reason, "safetyRatings": []}, "usageMetadata": {"promptTokenCount": 30, "totalTokenCount": 30}})
}
/// A last chunk with these parts, `STOP`, and the usage Gemini reports for a thinking model and
/// a cached prompt: `thoughtsTokenCount` beside `candidatesTokenCount` (not in it), and
/// `cachedContentTokenCount` inside `promptTokenCount`
/// (<https://ai.google.dev/api/generate-content#UsageMetadata>).
pub fn chunk_with_usage(
    parts: Vec<Value>,
    prompt: u64,
    cached: u64,
    candidates: u64,
    thoughts: u64,
) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
           "usageMetadata": {"promptTokenCount": prompt, "cachedContentTokenCount": cached,
               "candidatesTokenCount": candidates, "thoughtsTokenCount": thoughts,
               "totalTokenCount": prompt + candidates + thoughts}})
}
