//! Limits per model: how many tokens one answer of a model may hold, the cap each request
//! carries, and the context window compaction fits the history to.
//!
//! Data, one row per model family, matched by prefix in order (the first row that matches wins,
//! so a specific name comes before its family), after a router's `vendor/` prefix
//! (`anthropic/claude-sonnet-4` → `claude-sonnet-4`). Sources: Anthropic's models overview
//! (<https://docs.anthropic.com/en/docs/about-claude/models/overview>, "Max output"), OpenAI's
//! model pages (<https://platform.openai.com/docs/models>, "Max output tokens"), Google's
//! (<https://ai.google.dev/gemini-api/docs/models>, "Output token limit").
//!
//! Which cap a request carries ([`request_cap`]): the request's own (a summary's), held to the
//! model's limit; else `[provider] max_output_tokens` when set. Without either, OpenAI and
//! Gemini get none — their default is the model's own maximum, and OpenAI (and vLLM) count a
//! cap against the context window, so a large one sent on every step would turn a long history
//! into a 400. Anthropic requires the field ([`anthropic_cap`]): the table's value, or
//! [`UNKNOWN_MAX_OUTPUT_TOKENS`] for a name the table does not know.

/// The cap for a model the table does not know, where one must be sent (Anthropic): every
/// Claude model takes 4096, the smallest limit among them (Claude 3 Haiku and Opus).
pub const UNKNOWN_MAX_OUTPUT_TOKENS: u32 = 4096;

/// The most `[provider] max_output_tokens` may say: no model writes more in one answer (the
/// largest today is 128 000), and a larger number is a typo.
pub const MAX_OUTPUT_TOKENS_BOUND: u32 = 1_000_000;

/// Model families with their output limit and context window, tokens; the first prefix that
/// matches wins. The window is what a prompt may hold: GPT-5's 400 000 are 272 000 of input and
/// 128 000 of output, so 272 000; Claude's 1M window needs a beta header, so 200 000.
const TABLE: &[(&str, u32, u64)] = &[
    // Anthropic.
    ("claude-3-haiku", 4096, 200_000),
    ("claude-3-opus", 4096, 200_000),
    ("claude-3-sonnet", 4096, 200_000),
    ("claude-3-5-", 8192, 200_000),
    ("claude-3-7-sonnet", 64_000, 200_000),
    ("claude-sonnet-4", 64_000, 200_000),
    ("claude-haiku-4", 64_000, 200_000),
    ("claude-opus-4-5", 64_000, 200_000),
    ("claude-opus-4-6", 128_000, 200_000),
    ("claude-opus-4", 32_000, 200_000),
    // OpenAI.
    ("gpt-5-chat", 16_384, 128_000),
    ("gpt-5", 128_000, 272_000),
    ("gpt-4.1", 32_768, 1_047_576),
    ("gpt-4o-2024-05-13", 4096, 128_000),
    ("gpt-4o", 16_384, 128_000),
    ("gpt-4-turbo", 4096, 128_000),
    ("gpt-4", 8192, 8192),
    ("gpt-3.5-turbo", 4096, 16_385),
    ("o1-mini", 65_536, 128_000),
    ("o1", 100_000, 200_000),
    ("o3", 100_000, 200_000),
    ("o4-mini", 100_000, 200_000),
    // Google.
    ("gemini-3", 65_536, 1_048_576),
    ("gemini-2.5", 65_536, 1_048_576),
    ("gemini-2.0", 8192, 1_048_576),
    ("gemini-1.5", 8192, 1_048_576),
];

/// The context window for a model the table does not know, tokens: a local or proxied model
/// (llama.cpp, vLLM, Ollama, a router's own name) often has far less than a frontier model, and
/// a window set too large means the provider, not the compaction, finds out first. 32 768 is
/// what the common open models (Llama 3.x, Qwen 2.5, Mistral) are served with at least;
/// `[provider] context_window` or `--context-window` says otherwise.
pub const UNKNOWN_CONTEXT_WINDOW: u64 = 32_768;

/// The most `[provider] context_window` may say: no model takes more (the largest is 2M), and
/// a larger number is a typo.
pub const CONTEXT_WINDOW_BOUND: u64 = 10_000_000;

/// The least `[provider] context_window` may say: below it not even the system prompt fits.
pub const CONTEXT_WINDOW_MIN: u64 = 1000;

/// The model's own name, without a router's `vendor/` prefix.
fn bare(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// The model's output limit, tokens, when the table knows its family.
pub fn max_output_tokens(model: &str) -> Option<u32> {
    let model = bare(model);
    TABLE
        .iter()
        .find(|(prefix, ..)| model.starts_with(prefix))
        .map(|(_, limit, _)| *limit)
}

/// The model's context window, tokens: the table's, else [`UNKNOWN_CONTEXT_WINDOW`].
pub fn context_window(model: &str) -> u64 {
    let model = bare(model);
    TABLE
        .iter()
        .find(|(prefix, ..)| model.starts_with(prefix))
        .map_or(UNKNOWN_CONTEXT_WINDOW, |(.., window)| *window)
}

/// Whether the model is one of OpenAI's reasoning families (GPT-5, o1, o3, o4), which refuse
/// `max_tokens` and take `max_completion_tokens` (which counts reasoning tokens too).
/// <https://platform.openai.com/docs/api-reference/chat/create#chat-create-max_tokens>
pub fn is_openai_reasoning(model: &str) -> bool {
    let model = bare(model);
    ["gpt-5", "o1", "o3", "o4"].iter().any(|family| {
        model
            .strip_prefix(family)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.']))
    })
}

/// Whether the model may think for minutes before its stream sends anything: OpenAI's
/// reasoning families (their reasoning is never streamed), Gemini 2.5 and 3 (thoughts are
/// streamed only when asked for), DeepSeek's reasoner and R1 builds served without a reasoning
/// parser. A model that streams its thinking (Claude) starts at once.
pub fn thinks_silently(model: &str) -> bool {
    let m = bare(model).to_ascii_lowercase();
    is_openai_reasoning(&m)
        || m.starts_with("gemini-2.5")
        || m.starts_with("gemini-3")
        || m.contains("deepseek-reasoner")
        || m.contains("-r1")
}

/// The cap one request carries: its own (`asked`), held to the model's limit (`configured`,
/// else the table's); else `configured`. `None`: the API's default.
pub fn request_cap(asked: Option<u32>, configured: Option<u32>, model: &str) -> Option<u32> {
    let limit = configured.or_else(|| max_output_tokens(model));
    match (asked, limit) {
        (Some(asked), Some(limit)) => Some(asked.min(limit)),
        (Some(asked), None) => Some(asked),
        (None, _) => configured,
    }
}

/// Anthropic's `max_tokens`, which the API requires: [`request_cap`], else the model's limit,
/// else [`UNKNOWN_MAX_OUTPUT_TOKENS`].
pub fn anthropic_cap(asked: Option<u32>, configured: Option<u32>, model: &str) -> u32 {
    request_cap(asked, configured, model)
        .or_else(|| max_output_tokens(model))
        .unwrap_or(UNKNOWN_MAX_OUTPUT_TOKENS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_matched_specific_first() {
        for (model, limit) in [
            ("claude-3-haiku-20240307", Some(4096)),
            ("claude-3-5-haiku-latest", Some(8192)),
            ("claude-sonnet-4-5-20250929", Some(64_000)),
            ("claude-opus-4-1-20250805", Some(32_000)),
            ("claude-opus-4-5", Some(64_000)),
            ("anthropic/claude-sonnet-4", Some(64_000)),
            ("gpt-5-mini", Some(128_000)),
            ("gpt-5-chat-latest", Some(16_384)),
            ("gpt-4.1-mini", Some(32_768)),
            ("gpt-4o-mini", Some(16_384)),
            ("o1-mini", Some(65_536)),
            ("o3-pro", Some(100_000)),
            ("gemini-2.5-flash", Some(65_536)),
            ("gemini-2.0-flash-001", Some(8192)),
            ("llama3.1:8b", None),
            ("mock-model", None),
        ] {
            assert_eq!(max_output_tokens(model), limit, "{model}");
        }
    }

    #[test]
    fn each_family_has_its_window_and_an_unknown_name_a_conservative_one() {
        for (model, window) in [
            ("claude-sonnet-4-5-20250929", 200_000),
            ("gpt-5-mini", 272_000),
            ("gpt-4.1-mini", 1_047_576),
            ("openai/gpt-4o", 128_000),
            ("gemini-2.5-pro", 1_048_576),
            ("llama3.1:8b", UNKNOWN_CONTEXT_WINDOW),
        ] {
            assert_eq!(context_window(model), window, "{model}");
        }
    }

    #[test]
    fn the_reasoning_families_are_known_by_name() {
        for m in [
            "gpt-5",
            "gpt-5.1",
            "gpt-5-mini",
            "o1",
            "o3-mini",
            "o4-mini",
            "openai/o3",
        ] {
            assert!(is_openai_reasoning(m), "{m}");
        }
        for m in ["gpt-4.1", "gpt-4o", "o1x", "omni", "llama3"] {
            assert!(!is_openai_reasoning(m), "{m}");
        }
    }

    #[test]
    fn a_request_cap_is_held_to_the_limit_and_only_sent_when_asked_or_configured() {
        assert_eq!(request_cap(Some(8192), None, "claude-3-haiku"), Some(4096));
        assert_eq!(request_cap(Some(8192), Some(3000), "gpt-5"), Some(3000));
        assert_eq!(request_cap(Some(8192), None, "unknown"), Some(8192));
        assert_eq!(request_cap(None, None, "gpt-5"), None);
        assert_eq!(request_cap(None, Some(5000), "gpt-5"), Some(5000));
        assert_eq!(anthropic_cap(None, None, "claude-sonnet-4-5"), 64_000);
        assert_eq!(
            anthropic_cap(None, None, "my-proxy"),
            UNKNOWN_MAX_OUTPUT_TOKENS
        );
        assert_eq!(anthropic_cap(None, Some(2000), "claude-sonnet-4-5"), 2000);
    }
}
