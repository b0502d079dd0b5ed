//! The request parameters the real APIs refuse by model name, and the messages they refuse by
//! shape, each with the provider's reference beside it. The model families are matched the way
//! the services name them (`gpt-5-mini`, `o3-2025-04-16`, `claude-3-haiku-20240307`), after a
//! router's `vendor/` prefix.

use super::{anthropic_error, array, bad_request, str_of};
use crate::mock_llm::Reply;
use serde_json::{Value, json};

/// The model's own name, without a router's `vendor/` prefix (`openai/gpt-5` → `gpt-5`).
fn bare(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// OpenAI's reasoning families (GPT-5, o1, o3, o4), which take `max_completion_tokens` only.
///
/// Reference: <https://platform.openai.com/docs/api-reference/chat/create#chat-create-max_tokens>
/// ("`max_tokens` … is now deprecated in favor of `max_completion_tokens`, and is not
/// compatible with o-series models") and the reasoning guide
/// (<https://platform.openai.com/docs/guides/reasoning>). The answer below is the one the API
/// gives, word for word (e.g. openai-python issues, griptape-ai/ComfyUI-Griptape#312).
fn refuses_max_tokens(model: &str) -> bool {
    let m = bare(model);
    ["gpt-5", "o1", "o3", "o4"].iter().any(|family| {
        m.strip_prefix(family)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.']))
    })
}

/// OpenAI chat completions: `max_tokens` for a reasoning model, and an assistant message with
/// neither content nor tool calls.
///
/// The assistant message's `content` is "Required unless `tool_calls` or `function_call` is
/// specified" (<https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages>,
/// Assistant message); `null` without calls is answered "Invalid value for 'content': expected a
/// string, got null." with `param: messages.[i].content` (langchain-ai/langchainjs#4153,
/// docker/docker-agent#63).
pub(super) fn check_openai(body: &Value) -> Result<(), Reply> {
    if body.get("max_tokens").is_some() && refuses_max_tokens(str_of(body, "model")) {
        return Err(bad_request(json!({"error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        }})));
    }
    for (i, m) in array(body, "messages").iter().enumerate() {
        let no_content = m.get("content").is_none_or(Value::is_null);
        if str_of(m, "role") == "assistant" && no_content && array(m, "tool_calls").is_empty() {
            return Err(bad_request(json!({"error": {
                "message": "Invalid value for 'content': expected a string, got null.",
                "type": "invalid_request_error",
                "param": format!("messages.[{i}].content"),
                "code": null,
            }})));
        }
    }
    Ok(())
}

/// Anthropic's output limits of the models whose limit is below the 8192 that clients often
/// send: the Claude 3 Haiku and Opus models (4096). Source: the models overview,
/// <https://docs.anthropic.com/en/docs/about-claude/models/overview> (Max output). The answer is
/// the API's own (continuedev/continue#4225, stackblitz-labs/bolt.diy#173).
fn anthropic_output_limit(model: &str) -> Option<u64> {
    let m = bare(model);
    (m.starts_with("claude-3-haiku") || m.starts_with("claude-3-opus")).then_some(4096)
}

/// Anthropic Messages: `max_tokens` is required
/// (<https://docs.anthropic.com/en/api/messages>, "max_tokens: required"), a positive integer,
/// and no more than the model's output limit.
pub(super) fn check_anthropic(body: &Value) -> Result<(), Reply> {
    let model = str_of(body, "model");
    let Some(max) = body.get("max_tokens").and_then(Value::as_u64) else {
        return Err(anthropic_error("max_tokens: Field required".into()));
    };
    if max == 0 {
        return Err(anthropic_error(
            "max_tokens: Input should be greater than or equal to 1".into(),
        ));
    }
    match anthropic_output_limit(model) {
        Some(limit) if max > limit => Err(anthropic_error(format!(
            "max_tokens: {max} > {limit}, which is the maximum allowed number of output tokens for {model}"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_families_are_recognised_by_their_names() {
        for m in [
            "gpt-5",
            "gpt-5-mini",
            "openai/gpt-5.1",
            "o1",
            "o3-mini",
            "o4-mini-2025-04-16",
        ] {
            assert!(refuses_max_tokens(m), "{m}");
        }
        for m in ["gpt-4.1", "gpt-4o", "o1x", "mock-model", "llama3"] {
            assert!(!refuses_max_tokens(m), "{m}");
        }
    }
}
