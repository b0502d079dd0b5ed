//! Model providers: adapters from the one internal model ([`model`]) to each wire format, with
//! retries ([`retry`]) and streaming over a bounded, linear-time SSE decoder ([`sse`]).
//!
//! Adapters: OpenAI-compatible chat completions ([`openai`]: OpenAI, OpenRouter, vLLM, Ollama,
//! llama.cpp), Anthropic Messages ([`anthropic`]) and Gemini ([`gemini`]). What they share —
//! sending, retrying, error statuses, the SSE loop with its idle timeout, the bound on a
//! response's size — is [`http`]. Each model's output limit and context window, and the cap a
//! request carries, is [`limits`]; a context-length error in each provider's words is
//! [`overflow`]; `[provider] headers` are checked in [`headers`].

pub mod anthropic;
pub mod gemini;
pub mod headers;
pub mod http;
pub mod limits;
pub mod model;
pub mod openai;
pub mod overflow;
pub mod retry;
pub mod sse;

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

    /// Applies the config file's `[provider]` keys for the client (`max_tries`,
    /// `idle_timeout_secs`, `first_byte_timeout_secs`, `max_response_bytes`, `max_retry_wait_secs`, `max_output_tokens`,
    /// `headers`);
    /// keys not set keep their defaults.
    pub fn configure(&mut self, section: Option<&crate::config::ProviderSection>) {
        let Some(section) = section else { return };
        let cap = section.max_output_tokens.map(|n| n.get());
        match self {
            Provider::OpenAi(c) => c.max_output_tokens = cap,
            Provider::Anthropic(c) => c.max_output_tokens = cap,
            Provider::Gemini(c) => c.max_output_tokens = cap,
        }
        let transport = self.transport_mut();
        if let Some(headers) = &section.headers {
            transport.extra_headers = headers.clone();
        }
        if let Some(secs) = section.max_retry_wait_secs {
            transport.retry.max_delay = Duration::from_secs(secs);
        }
        if let Some(tries) = section.max_tries {
            transport.retry.max_tries = tries.max(1);
        }
        if let Some(secs) = section.idle_timeout_secs {
            transport.idle_timeout = Duration::from_secs(secs.max(1));
        }
        if let Some(secs) = section.first_byte_timeout_secs {
            transport.first_event_timeout = Some(Duration::from_secs(secs.get()));
        }
        if let Some(bytes) = section.max_response_bytes {
            transport.max_response_bytes = bytes;
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
        /// The wait the server asked for: `retry-after-ms`, `Retry-After`, or a
        /// `google.rpc.RetryInfo` in the body.
        retry_after: Option<Duration>,
        /// The server's `x-should-retry`, which overrides the status either way, as the
        /// Anthropic and OpenAI SDKs obey it.
        should_retry: Option<bool>,
    },
    /// The request is longer than the model's context window, in the provider's words
    /// ([`overflow`]). Not retried as it is: the turn compacts the history first.
    #[error("{provider}: the conversation is longer than the model's context window: {message}")]
    ContextOverflow {
        /// Which provider.
        provider: &'static str,
        /// The server's message.
        message: String,
        /// The window the server named, tokens.
        window: Option<u64>,
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
    /// The model's name cannot be put where the wire format puts it (Gemini: in the URL's
    /// path, where `../` or `?` would send the request, and the API key, to another endpoint).
    #[error(
        "{provider}: the model name {model:?} is not one this provider takes (letters, digits, '.', '_', '-')"
    )]
    BadModel {
        /// Which provider.
        provider: &'static str,
        /// The name asked for.
        model: String,
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
    /// The response passed a bound on its size ([`http::Transport::max_response_bytes`] or one
    /// that follows from it); the call was ended there. Not retried: the same request would
    /// likely bring the same flood.
    #[error(
        "{provider}: response too large: {what} passed {limit} bytes, so the model call was ended ([provider] max_response_bytes sets the bound)"
    )]
    TooLarge {
        /// Which provider.
        provider: &'static str,
        /// What passed its bound: the content, one event, the body, the stream.
        what: &'static str,
        /// That bound, bytes.
        limit: usize,
    },
    /// The server reported an error inside a successful stream.
    #[error("{provider}: error in the response stream: {message}")]
    InStream {
        /// Which provider.
        provider: &'static str,
        /// The server's message.
        message: String,
    },
    /// The server reported, inside a successful stream, a failure that outside one is a
    /// retried status (Anthropic `overloaded_error` is its 529, `api_error` its 500): retried
    /// the same way.
    #[error("{provider}: {kind} in the response stream: {message}")]
    InStreamTransient {
        /// Which provider.
        provider: &'static str,
        /// The error's type, as the server named it.
        kind: String,
        /// The server's message.
        message: String,
    },
    /// The server asked to wait longer before the next try than a retry may wait
    /// ([`retry::RetryPolicy::max_delay`]): the call is given up rather than held for it.
    #[error(
        "{cause}; the server asked to wait {}s before retrying, longer than the {}s a retry may wait, so the call was given up ([provider] max_retry_wait_secs sets that maximum)",
        asked.as_secs_f64(), max.as_secs()
    )]
    WaitTooLong {
        /// What the server answered.
        cause: Box<ProviderError>,
        /// The wait it asked for.
        asked: Duration,
        /// The most a retry waits.
        max: Duration,
    },
}

impl ProviderError {
    /// Whether another try may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Status {
                status,
                should_retry,
                ..
            } => should_retry.unwrap_or_else(|| retry::is_retryable_status(*status)),
            ProviderError::Connect { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::InStreamTransient { .. } => true,
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
