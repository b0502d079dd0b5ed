//! What every provider adapter shares: sending a JSON request, retrying, turning error statuses
//! into [`ProviderError`]s, reading a body or a server-sent event stream with an idle timeout,
//! and the bound on a response's size. An adapter supplies the URL, headers, body, and how to
//! read a whole response or a stream's events.
//!
//! The model is untrusted input too: a provider, or a proxy in front of it, may stream without
//! end. So a response is bounded ([`Transport::max_response_bytes`], 8 MiB by default): its
//! text, tool arguments and thinking ([`StreamReader::size`], [`ModelResponse::size`]); one
//! event, or a whole non-streamed body, on the wire ([`wire_bound`]: escapes and envelopes make
//! the wire larger than the content); and a whole stream on the wire ([`STREAM_FACTOR`] times the
//! bound: a stream of events that carry nothing would otherwise never end). Past any of them the
//! call ends with [`ProviderError::TooLarge`], which is not retried.

use super::model::ModelResponse;
use super::retry::{RetryPolicy, body_delay, jitter, server_delay, should_retry};
use super::sse::{Decoder, Event, SseError};
use super::{CallFailed, ProviderError};
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// The default bound on one response's text, tool arguments and thinking: 8 MiB, far above what
/// any model writes in one answer (128 000 output tokens are about 0.5 MB of text).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 << 20;

/// What each tool call or content block of a response counts beyond its text: keeping it costs
/// memory even when it is empty, so a stream of empty calls is bounded too.
pub const PART_OVERHEAD: usize = 64;

/// A whole stream may bring this many times the bound on the wire. A streamed token costs 100 to
/// 250 bytes of envelope, so the 128 000 tokens of a long answer are about 32 MB: well inside
/// 32 × 8 MiB.
pub const STREAM_FACTOR: usize = 32;

/// The most one stream event or one non-streamed body may hold on the wire for a response bound
/// of `max`: four times it (JSON escapes; tool arguments that are a JSON string inside JSON are
/// escaped twice) plus 64 KiB of envelope.
pub fn wire_bound(max: usize) -> usize {
    max.saturating_mul(4).saturating_add(64 << 10)
}

/// How long a model that thinks before it streams anything (OpenAI's reasoning models send no
/// event, not even their reasoning, until they answer) may take to send its first event: ten
/// minutes, far past a high-effort answer's thinking. With the idle timeout alone, the thinking
/// was cut at 120 s and paid for again on each retry.
pub const THINKING_FIRST_EVENT: Duration = Duration::from_secs(600);

/// The most of an error status's body that is read, for its message.
const ERROR_BODY_BYTES: usize = 64 << 10;

/// Assembles a streamed response from its events.
pub trait StreamReader: Send {
    /// Takes one event; returns true when the response is complete.
    fn feed(
        &mut self,
        event: &Event,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, ProviderError>;
    /// The response once the stream has ended: `complete` says whether `feed` reported the end.
    fn finish(self: Box<Self>, complete: bool) -> Result<ModelResponse, ProviderError>;
    /// Bytes of the response kept so far: text, tool names and arguments, thinking, and
    /// [`PART_OVERHEAD`] per call or block. Kept as a running count: it is asked after every event.
    fn size(&self) -> usize;
}

/// One endpoint's transport settings.
#[derive(Debug, Clone)]
pub struct Transport {
    /// The provider's name, for messages.
    pub provider: &'static str,
    /// The HTTP client (connection pool).
    pub http: reqwest::Client,
    /// Retries.
    pub retry: RetryPolicy,
    /// Longest silence inside a stream, once its first event has come.
    pub idle_timeout: Duration,
    /// `[provider] first_byte_timeout_secs`: the longest wait for a stream's first event, for
    /// every model. Unset, a model that thinks before it streams anything gets
    /// [`THINKING_FIRST_EVENT`] ([`super::limits::thinks_silently`]) and the others the idle
    /// timeout.
    pub first_event_timeout: Option<Duration>,
    /// Longest wait for the response to start.
    pub request_timeout: Duration,
    /// The most text, tool arguments and thinking one response may bring (see the module's
    /// comment for the bounds on the wire that follow from it).
    pub max_response_bytes: usize,
    /// `[provider] headers`, checked ([`super::headers`]), sent with every request.
    /// Its `Debug` never shows a value that may be a credential.
    pub extra_headers: super::headers::ExtraHeaders,
}

/// A wire format: its name, for messages and for the transport.
pub trait Wire {
    /// The provider's name.
    const PROVIDER: &'static str;
}

/// A client for one endpoint in wire format `W`. The struct and constructor are shared; each
/// adapter adds its own `complete` (`impl Client<OpenAi>`, …).
#[derive(Clone)]
pub struct Client<W> {
    /// Sending, retrying, streaming.
    pub transport: Transport,
    /// The API root, without a trailing `/`.
    pub(crate) base_url: String,
    /// Sent in the provider's auth header, and nowhere else.
    pub(crate) api_key: Option<String>,
    /// Whether to stream.
    pub stream: bool,
    /// `[provider] max_output_tokens`: the cap on every answer, in each API's own field (see
    /// [`super::limits`] for what is sent without it).
    pub max_output_tokens: Option<u32>,
    wire: std::marker::PhantomData<W>,
}

impl<W: Wire> Client<W> {
    /// A streaming client for `base_url`; an empty key counts as none.
    pub fn new(base_url: &str, api_key: Option<String>) -> Result<Self, ProviderError> {
        Ok(Self {
            transport: Transport::new(W::PROVIDER)?,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.filter(|k| !k.is_empty()),
            stream: true,
            max_output_tokens: None,
            wire: std::marker::PhantomData,
        })
    }
}

impl<W: Wire> std::fmt::Debug for Client<W> {
    /// The key is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("provider", &W::PROVIDER)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("stream", &self.stream)
            .finish()
    }
}

/// How one call is made and read.
pub struct Call<'a> {
    /// Where.
    pub url: String,
    /// Extra headers (authentication lives here, and only here).
    pub headers: Vec<(&'static str, String)>,
    /// The JSON body.
    pub body: &'a Value,
    /// Reads a whole response.
    pub parse: fn(&Value) -> Result<ModelResponse, ProviderError>,
    /// Makes a stream reader, when the call streams.
    pub stream: Option<fn() -> Box<dyn StreamReader>>,
    /// The model asked: how long its first event may take follows from it.
    pub model: &'a str,
}

impl std::fmt::Debug for Call<'_> {
    /// Header values are not printed: they hold the API key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| *n).collect();
        f.debug_struct("Call")
            .field("url", &self.url)
            .field("headers", &names)
            .field("streams", &self.stream.is_some())
            .finish()
    }
}

impl Transport {
    /// Settings with the defaults, for `provider`.
    pub fn new(provider: &'static str) -> Result<Self, ProviderError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| ProviderError::Connect {
                provider,
                url: String::new(),
                message: e.to_string(),
            })?;
        Ok(Self {
            provider,
            http,
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(300),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            first_event_timeout: None,
            extra_headers: super::headers::ExtraHeaders::default(),
        })
    }

    /// Makes `call`, retrying as the policy says.
    pub async fn run(
        &self,
        call: &Call<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, CallFailed> {
        let mut tries = 1;
        loop {
            match self.try_once(call, on_text).await {
                Ok(response) => return Ok(response),
                Err(error) if error.is_retryable() && tries < self.retry.max_tries => {
                    // A wait past the maximum is not shortened (the server would refuse again)
                    // nor held for: the call ends, saying so.
                    let max = self.retry.max_delay;
                    if let Some(asked) = error.server_delay().filter(|d| *d > max) {
                        let error = ProviderError::WaitTooLong {
                            cause: Box::new(error),
                            asked,
                            max,
                        };
                        return Err(CallFailed { error, tries });
                    }
                    tries += 1;
                    let wait = self.retry.delay(tries, error.server_delay(), jitter());
                    tracing::warn!(%error, ?wait, tries, "model call failed; retrying");
                    tokio::time::sleep(wait).await;
                }
                Err(error) => return Err(CallFailed { error, tries }),
            }
        }
    }

    fn malformed(&self, message: String) -> ProviderError {
        ProviderError::Malformed {
            provider: self.provider,
            message,
        }
    }

    async fn try_once(
        &self,
        call: &Call<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        let response = self.send(call).await?;
        if !response.status().is_success() {
            return Err(self.status_error(response).await);
        }
        match call.stream {
            Some(make) => {
                let first = self.first_event_wait(call.model);
                self.read_stream(response, make(), first, on_text).await
            }
            None => self.read_whole(response, call, on_text).await,
        }
    }

    /// Sends the request and waits for the response to start.
    async fn send(&self, call: &Call<'_>) -> Result<reqwest::Response, ProviderError> {
        let mut request = self.http.post(&call.url).json(call.body);
        for (name, value) in self.extra_headers.pairs() {
            request = request.header(name.as_str(), value.as_str());
        }
        for (name, value) in &call.headers {
            request = request.header(*name, value);
        }
        match tokio::time::timeout(self.request_timeout, request.send()).await {
            Err(_) => Err(ProviderError::Timeout {
                provider: self.provider,
                what: "request",
                after: self.request_timeout,
            }),
            Ok(Err(e)) => Err(ProviderError::Connect {
                provider: self.provider,
                url: call.url.clone(),
                message: e.to_string(),
            }),
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// An error status, with the wait the server asked for (in a header, else in the body),
    /// whether it said to retry, and the message from the start of its body (read only so far:
    /// an error body can be endless too).
    async fn status_error(&self, mut response: reqwest::Response) -> ProviderError {
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = server_delay(
            header("retry-after-ms").as_deref(),
            header("retry-after").as_deref(),
            SystemTime::now(),
        );
        let should_retry = header("x-should-retry").as_deref().and_then(should_retry);
        let body = match self.read_body(&mut response, ERROR_BODY_BYTES).await {
            Ok((body, _)) => body,
            Err(_) => Vec::new(),
        };
        let body = String::from_utf8_lossy(&body);
        if let Some(window) = super::overflow::context_overflow(status, &body) {
            return ProviderError::ContextOverflow {
                provider: self.provider,
                message: error_message(&body),
                window,
            };
        }
        ProviderError::Status {
            provider: self.provider,
            status,
            message: error_message(&body),
            retry_after: retry_after.or_else(|| body_delay(&body)),
            should_retry,
        }
    }

    fn too_large(&self, what: &'static str, limit: usize) -> ProviderError {
        ProviderError::TooLarge {
            provider: self.provider,
            what,
            limit,
        }
    }

    /// The longest wait for the first event of a stream from `model`.
    pub fn first_event_wait(&self, model: &str) -> Duration {
        self.first_event_timeout.unwrap_or_else(|| {
            if super::limits::thinks_silently(model) {
                THINKING_FIRST_EVENT.max(self.idle_timeout)
            } else {
                self.idle_timeout
            }
        })
    }

    /// The next piece of the body, waiting at most the idle timeout for it.
    async fn chunk(
        &self,
        response: &mut reqwest::Response,
    ) -> Result<Option<impl AsRef<[u8]> + use<>>, Read> {
        self.chunk_within(response, self.idle_timeout).await
    }

    /// The next piece of the body, waiting at most `wait` for it.
    async fn chunk_within(
        &self,
        response: &mut reqwest::Response,
        wait: Duration,
    ) -> Result<Option<impl AsRef<[u8]> + use<>>, Read> {
        match tokio::time::timeout(wait, response.chunk()).await {
            Err(_) => Err(Read::Idle),
            Ok(Err(e)) => Err(Read::Failed(e.to_string())),
            Ok(Ok(chunk)) => Ok(chunk),
        }
    }

    /// At most `cap` bytes of the body, and whether that was all of it. What is past `cap` is
    /// not read.
    async fn read_body(
        &self,
        response: &mut reqwest::Response,
        cap: usize,
    ) -> Result<(Vec<u8>, bool), Read> {
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk(response).await? {
            let chunk = chunk.as_ref();
            let room = cap.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, false));
            }
            body.extend_from_slice(chunk);
        }
        Ok((body, true))
    }

    /// A whole (non-streamed) response, read up to its bound on the wire: a declared length
    /// over it is refused before anything is read.
    async fn read_whole(
        &self,
        mut response: reqwest::Response,
        call: &Call<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        let cap = wire_bound(self.max_response_bytes);
        if response.content_length().is_some_and(|n| n > cap as u64) {
            return Err(self.too_large("the response body", cap));
        }
        let body = match self.read_body(&mut response, cap).await {
            Ok((body, true)) => body,
            Ok((_, false)) => return Err(self.too_large("the response body", cap)),
            Err(Read::Idle) => {
                return Err(ProviderError::Timeout {
                    provider: self.provider,
                    what: "response body",
                    after: self.idle_timeout,
                });
            }
            Err(Read::Failed(message)) => {
                return Err(ProviderError::Connect {
                    provider: self.provider,
                    url: call.url.clone(),
                    message,
                });
            }
        };
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            let text = String::from_utf8_lossy(&body);
            self.malformed(format!("{e}; body starts {:?}", head(&text)))
        })?;
        let parsed = (call.parse)(&value)?;
        if parsed.size() > self.max_response_bytes {
            return Err(self.too_large(CONTENT, self.max_response_bytes));
        }
        if !parsed.text.is_empty() {
            on_text(&parsed.text);
        }
        Ok(parsed)
    }

    /// A streamed response, event by event, within the bounds of the module's comment.
    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        mut reader: Box<dyn StreamReader>,
        first_event: Duration,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        let max = self.max_response_bytes;
        let stream_cap = max.saturating_mul(STREAM_FACTOR);
        let mut decoder = Decoder::new(wire_bound(max));
        let mut received = 0usize;
        // Until the first event, the model may be thinking: keep-alive comments and headers do
        // not count as its answer starting.
        let mut started = false;
        loop {
            let wait = if started {
                self.idle_timeout
            } else {
                first_event
            };
            let chunk = match self.chunk_within(&mut response, wait).await {
                Err(Read::Idle) => {
                    return Err(ProviderError::Timeout {
                        provider: self.provider,
                        what: if started {
                            "idle stream"
                        } else {
                            "the wait for the stream's first event"
                        },
                        after: wait,
                    });
                }
                Err(Read::Failed(_)) => {
                    return Err(ProviderError::StreamCut {
                        provider: self.provider,
                    });
                }
                Ok(None) => return reader.finish(false),
                Ok(Some(chunk)) => chunk,
            };
            let chunk = chunk.as_ref();
            received = received.saturating_add(chunk.len());
            if received > stream_cap {
                return Err(self.too_large("the event stream", stream_cap));
            }
            decoder.push(chunk);
            while let Some(event) = decoder.next_event().map_err(|e| match e {
                SseError::EventTooLarge { limit } => self.too_large("one stream event", limit),
                SseError::NotUtf8 => self.malformed(format!("not an event stream: {e}")),
            })? {
                started = true;
                let done = reader.feed(&event, on_text)?;
                if reader.size() > max {
                    return Err(self.too_large(CONTENT, max));
                }
                if done {
                    return reader.finish(true);
                }
            }
        }
    }
}

/// What the bound of [`Transport::max_response_bytes`] counts, for its error.
const CONTENT: &str = "its text, tool arguments and thinking";

/// Why a body could not be read.
#[derive(Debug)]
enum Read {
    /// Nothing arrived within the idle timeout.
    Idle,
    /// The connection failed.
    Failed(String),
}

/// The first 200 characters, for quoting a body in an error.
pub fn head(text: &str) -> String {
    text.chars().take(200).collect()
}

/// The message of an error body (`{"error": {"message": …}}`, as all three providers send it), or
/// the body's start.
pub fn error_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| head(body.trim()))
}

/// Parses one event's JSON data.
pub fn event_json(provider: &'static str, data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|e| ProviderError::Malformed {
        provider,
        message: format!("{e} in stream event {:?}", head(data)),
    })
}

/// Tool-call arguments as text: `{}` for nothing.
pub fn arguments_text(text: &str) -> String {
    if text.trim().is_empty() {
        "{}".to_owned()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Test;
    impl Wire for Test {
        const PROVIDER: &'static str = "test";
    }

    #[test]
    fn a_client_never_prints_its_key() {
        let c =
            Client::<Test>::new("http://127.0.0.1:1/v1/", Some("sk-secret-123".into())).unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("sk-secret-123") && shown.contains("<set>"),
            "{shown}"
        );
        assert_eq!(
            c.base_url, "http://127.0.0.1:1/v1",
            "the trailing slash is dropped"
        );
        assert!(
            Client::<Test>::new("http://x", Some(String::new()))
                .unwrap()
                .api_key
                .is_none(),
            "an empty key is none"
        );
    }
}
