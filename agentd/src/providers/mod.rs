//! Model providers: adapters from the one internal model ([`model`]) to each wire format, with
//! retries ([`retry`]) and streaming over a real SSE parser (`eventsource-stream`).
//!
//! Adapters: OpenAI-compatible chat completions ([`openai`]: OpenAI, OpenRouter, vLLM, Ollama,
//! llama.cpp), Anthropic Messages ([`anthropic`]) and Gemini ([`gemini`]). What they share —
//! sending, retrying, error statuses, the SSE loop with its idle timeout — is [`http`].

pub mod anthropic;
pub mod gemini;
pub mod http;
pub mod model;
pub mod openai;
pub mod retry;

use crate::settings::{ProviderKind, ProviderSettings};
use model::{ModelRequest, ModelResponse};
use std::time::Duration;

/// A configured provider of any kind.
#[derive(Debug, Clone)]
pub enum Provider {
    /// OpenAI-compatible.
    OpenAi(openai::OpenAiClient),
    /// Anthropic.
    Anthropic(anthropic::AnthropicClient),
    /// Gemini.
    Gemini(gemini::GeminiClient),
}

impl Provider {
    /// The client the settings describe.
    pub fn from_settings(s: &ProviderSettings) -> Result<Self, ProviderError> {
        Ok(match s.kind {
            ProviderKind::OpenAi => {
                Provider::OpenAi(openai::OpenAiClient::new(&s.base_url, s.api_key.clone())?)
            }
            ProviderKind::Anthropic => Provider::Anthropic(anthropic::AnthropicClient::new(
                &s.base_url,
                s.api_key.clone(),
            )?),
            ProviderKind::Gemini => {
                Provider::Gemini(gemini::GeminiClient::new(&s.base_url, s.api_key.clone())?)
            }
        })
    }

    /// One model call.
    pub async fn complete(
        &self,
        req: &ModelRequest,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, CallFailed> {
        match self {
            Provider::OpenAi(c) => c.complete(req, on_text).await,
            Provider::Anthropic(c) => c.complete(req, on_text).await,
            Provider::Gemini(c) => c.complete(req, on_text).await,
        }
    }

    /// The transport settings (retries, timeouts), to adjust.
    pub fn transport_mut(&mut self) -> &mut http::Transport {
        match self {
            Provider::OpenAi(c) => &mut c.transport,
            Provider::Anthropic(c) => &mut c.transport,
            Provider::Gemini(c) => &mut c.transport,
        }
    }
}

/// Why a model call failed (one try).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The server answered with an error status.
    #[error("{provider}: HTTP {status}: {message}")]
    Status {
        /// Which provider.
        provider: &'static str,
        /// The status.
        status: u16,
        /// The server's error message, or the start of its body.
        message: String,
        /// The wait the server asked for.
        retry_after: Option<Duration>,
    },
    /// No connection, or it broke before a response.
    #[error("{provider}: cannot reach {url}: {message}")]
    Connect {
        /// Which provider.
        provider: &'static str,
        /// Where.
        url: String,
        /// Why.
        message: String,
    },
    /// Nothing arrived in time.
    #[error("{provider}: {what} timed out after {after:?}")]
    Timeout {
        /// Which provider.
        provider: &'static str,
        /// What timed out: the request, or an idle stream.
        what: &'static str,
        /// After how long.
        after: Duration,
    },
    /// The response was not the format promised.
    #[error("{provider}: malformed response: {message}")]
    Malformed {
        /// Which provider.
        provider: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The stream ended before the response was complete.
    #[error("{provider}: the response stream ended before it was complete")]
    StreamCut {
        /// Which provider.
        provider: &'static str,
    },
    /// The server reported an error inside a successful stream.
    #[error("{provider}: error in the response stream: {message}")]
    InStream {
        /// Which provider.
        provider: &'static str,
        /// The server's message.
        message: String,
    },
}

impl ProviderError {
    /// Whether another try may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Status { status, .. } => retry::is_retryable_status(*status),
            ProviderError::Connect { .. } | ProviderError::Timeout { .. } => true,
            _ => false,
        }
    }

    /// The wait the server asked for, if any.
    pub fn server_delay(&self) -> Option<Duration> {
        match self {
            ProviderError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A failed call after every try.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error} (after {tries} {})", if *.tries == 1 { "try" } else { "tries" })]
pub struct CallFailed {
    /// The last try's error.
    pub error: ProviderError,
    /// Tries made.
    pub tries: u32,
}
