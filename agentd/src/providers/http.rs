//! What every provider adapter shares: sending a JSON request, retrying, turning error statuses
//! into [`ProviderError`]s, and reading a server-sent event stream with an idle timeout. An adapter
//! supplies the URL, headers, body, and how to read a whole response or a stream's events.

use super::model::ModelResponse;
use super::retry::{RetryPolicy, jitter, server_delay};
use super::{CallFailed, ProviderError};
use eventsource_stream::{Event, Eventsource};
use futures_util::StreamExt;
use serde_json::Value;
use std::time::{Duration, SystemTime};

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
    /// Longest silence inside a stream.
    pub idle_timeout: Duration,
    /// Longest wait for the response to start.
    pub request_timeout: Duration,
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
        let provider = self.provider;
        let mut request = self.http.post(&call.url).json(call.body);
        for (name, value) in &call.headers {
            request = request.header(*name, value);
        }
        let response = match tokio::time::timeout(self.request_timeout, request.send()).await {
            Err(_) => {
                return Err(ProviderError::Timeout {
                    provider,
                    what: "request",
                    after: self.request_timeout,
                });
            }
            Ok(Err(e)) => {
                return Err(ProviderError::Connect {
                    provider,
                    url: call.url.clone(),
                    message: e.to_string(),
                });
            }
            Ok(Ok(r)) => r,
        };
        if !response.status().is_success() {
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
            let text = response.text().await.unwrap_or_default();
            return Err(ProviderError::Status {
                provider,
                status,
                message: error_message(&text),
                retry_after,
            });
        }
        match call.stream {
            Some(make) => self.read_stream(response, make(), on_text).await,
            None => {
                let text = response.text().await.map_err(|e| ProviderError::Connect {
                    provider,
                    url: call.url.clone(),
                    message: e.to_string(),
                })?;
                let value: Value = serde_json::from_str(&text)
                    .map_err(|e| self.malformed(format!("{e}; body starts {:?}", head(&text))))?;
                let parsed = (call.parse)(&value)?;
                if !parsed.text.is_empty() {
                    on_text(&parsed.text);
                }
                Ok(parsed)
            }
        }
    }

    async fn read_stream(
        &self,
        response: reqwest::Response,
        mut reader: Box<dyn StreamReader>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        let mut events = response.bytes_stream().eventsource();
        loop {
            let next = match tokio::time::timeout(self.idle_timeout, events.next()).await {
                Err(_) => {
                    return Err(ProviderError::Timeout {
                        provider: self.provider,
                        what: "idle stream",
                        after: self.idle_timeout,
                    });
                }
                Ok(next) => next,
            };
            match next {
                None => return reader.finish(false),
                Some(Err(eventsource_stream::EventStreamError::Transport(_))) => {
                    return Err(ProviderError::StreamCut {
                        provider: self.provider,
                    });
                }
                Some(Err(e)) => return Err(self.malformed(format!("not an event stream: {e}"))),
                Some(Ok(event)) => {
                    if reader.feed(&event, on_text)? {
                        return reader.finish(true);
                    }
                }
            }
        }
    }
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
