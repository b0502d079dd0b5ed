//! A scripted mock LLM server: real HTTP/1.1 on 127.0.0.1, answering each request with the next
//! scripted reply — JSON, a server-sent event stream, garbage, a cut stream or silence — and
//! recording every request so tests can assert what the model was sent. Requests of several
//! conversations at once (a session and its subagents) can each follow a script of their own,
//! told apart by their first user message ([`MockLlm::start_routed`]).
//!
//! It is as strict as the real APIs about what the conversation must look like ([`strict`]): a
//! request the real provider would refuse gets that provider's 400, and the script does not
//! advance.

pub mod anthropic;
pub mod context;
pub mod gemini;
pub mod openai;
pub mod prompt_cache;
mod strict;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A whole response with this status, extra headers and JSON body.
    Json {
        /// HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// A 200 event stream: each item is one event's `data`, sent with a pause between events.
    Sse {
        /// The events' data.
        events: Vec<String>,
        /// Pause before each event.
        pause: Duration,
        /// After the events, send half an event and close (a cut stream).
        cut: bool,
    },
    /// A 200 event stream that sends its headers at once and then nothing for `silence`, then
    /// its events without a pause: what an OpenAI reasoning model streams, since it sends no
    /// event (its reasoning is never streamed) until it answers
    /// (<https://platform.openai.com/docs/guides/reasoning>: "reasoning tokens are not visible
    /// via the API"; the first chunk comes once the answer starts).
    Thinking {
        /// The silence before the first event.
        silence: Duration,
        /// The events' data.
        events: Vec<String>,
    },
    /// A 200 response whose body is this text.
    Garbage(String),
    /// A 200 response that never ends: `head` once, then `repeat` again and again, with no
    /// length, until the client goes away — or until `max_bytes` of body were sent, so that a
    /// client with no bound fails its test instead of hanging it. A provider, or a proxy in
    /// front of one, gone wrong.
    Endless {
        /// `text/event-stream` or `application/json`.
        content_type: &'static str,
        /// Sent once, first.
        head: String,
        /// Sent over and over.
        repeat: String,
        /// Body bytes after which the server stops.
        max_bytes: usize,
    },
}

impl Reply {
    /// A JSON reply with status 200.
    pub fn ok(body: serde_json::Value) -> Self {
        Reply::Json {
            status: 200,
            headers: vec![],
            body: body.to_string(),
        }
    }

    /// An error reply in the OpenAI shape.
    pub fn error(status: u16, message: &str, headers: &[(&str, &str)]) -> Self {
        Reply::Json {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: serde_json::json!({"error": {"message": message, "type": "mock"}}).to_string(),
        }
    }

    /// A complete event stream of JSON chunks, then `[DONE]`.
    pub fn stream(chunks: Vec<serde_json::Value>) -> Self {
        let mut events: Vec<String> = chunks.iter().map(|c| c.to_string()).collect();
        events.push("[DONE]".into());
        Reply::Sse {
            events,
            pause: Duration::ZERO,
            cut: false,
        }
    }
}

impl Reply {
    /// An event stream that starts with `head` events and then repeats `repeat` without end (up
    /// to `max_bytes`).
    pub fn endless_events(
        head: &[serde_json::Value],
        repeat: &serde_json::Value,
        max_bytes: usize,
    ) -> Self {
        Reply::Endless {
            content_type: "text/event-stream",
            head: head.iter().map(|e| format!("data: {e}\n\n")).collect(),
            repeat: format!("data: {repeat}\n\n"),
            max_bytes,
        }
    }

    /// A JSON body that starts with `head` and repeats `repeat` without end (up to `max_bytes`):
    /// e.g. `{"choices": [{"message": {"content": "` and `xxxx`.
    pub fn endless_body(head: &str, repeat: &str, max_bytes: usize) -> Self {
        Reply::Endless {
            content_type: "application/json",
            head: head.into(),
            repeat: repeat.into(),
            max_bytes,
        }
    }

    /// An event stream of these JSON events as they are, with no `[DONE]` (Anthropic, Gemini).
    pub fn events(events: Vec<serde_json::Value>) -> Self {
        Reply::Sse {
            events: events.iter().map(|e| e.to_string()).collect(),
            pause: Duration::ZERO,
            cut: false,
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// e.g. `POST`.
    pub method: String,
    /// e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: serde_json::Value,
    /// The body as text.
    pub raw_body: String,
}

impl Recorded {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The server. Stops when dropped.
#[derive(Debug)]
pub struct MockLlm {
    addr: std::net::SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

/// What one server shares between its connections.
#[derive(Debug, Default)]
struct State {
    /// Every request so far.
    requests: Mutex<Vec<Recorded>>,
    /// The replies still to send.
    script: Mutex<VecDeque<Reply>>,
    /// Scripts of their own for the conversations whose first user message contains the key.
    routes: Mutex<Vec<(String, VecDeque<Reply>)>>,
    /// What was sent that must come back unchanged.
    issued: Mutex<strict::Issued>,
    /// The context window, tokens ([`context`]); 0 for none.
    context_limit: std::sync::atomic::AtomicU64,
    /// Anthropic's prompt cache, when a test counts it ([`MockLlm::count_prompt_cache`]).
    prompt_cache: Mutex<Option<prompt_cache::PromptCache>>,
    /// Body bytes of endless replies written to clients so far.
    endless_sent: std::sync::atomic::AtomicUsize,
    /// When set, chooses every reply from the request's body instead of the script.
    responder: Responder,
}

/// A function from a request's JSON body to its reply: for many conversations at once, which
/// one script in one order cannot serve.
#[derive(Default)]
struct Responder(Option<Box<ReplyFn>>);

/// What [`MockLlm::responding`] is given.
type ReplyFn = dyn Fn(&serde_json::Value) -> Reply + Send + Sync;

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Responder(fn)"
        } else {
            "Responder(none)"
        })
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockLlm {
    /// Starts a server that answers with `script`, in order; past its end it answers 500.
    pub async fn start(script: Vec<Reply>) -> Self {
        Self::serving(State {
            script: Mutex::new(VecDeque::from(script)),
            ..State::default()
        })
        .await
    }

    /// Starts a server that answers each request with what `reply` makes of its JSON body, as
    /// strict as a scripted one, but keeping no record of requests: it serves benchmarks of many
    /// sessions at once.
    pub async fn responding(
        reply: impl Fn(&serde_json::Value) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self::serving(State {
            responder: Responder(Some(Box::new(reply))),
            ..State::default()
        })
        .await
    }

    async fn serving(state: State) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(state);
        let shared = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, state).await;
                });
            }
        });
        Self { addr, state, task }
    }

    /// Starts a server that answers a request whose first user message contains one of the
    /// `routes`' keys with the next reply of that route's script (the first key found wins),
    /// and any other request with the next of `script`. Each script past its end answers 500.
    pub async fn start_routed(script: Vec<Reply>, routes: Vec<(&str, Vec<Reply>)>) -> Self {
        let mock = Self::start(script).await;
        *mock.state.routes.lock().unwrap() = routes
            .into_iter()
            .map(|(key, replies)| (key.to_owned(), VecDeque::from(replies)))
            .collect();
        mock
    }

    /// Gives the mock a context window of `tokens`: a longer request is refused as each service
    /// refuses a prompt over the model's window ([`context`]).
    pub fn limit_context(&self, tokens: u64) {
        self.state
            .context_limit
            .store(tokens, std::sync::atomic::Ordering::Relaxed);
    }

    /// Makes the mock bill Anthropic requests as the real prompt cache does ([`prompt_cache`]):
    /// each reply's usage says what was read from and written to the cache. Off by default, so
    /// that scripted usage reaches the client as the script says.
    pub fn count_prompt_cache(&self) {
        *self.state.prompt_cache.lock().unwrap() = Some(prompt_cache::PromptCache::default());
    }

    /// The API root to configure a client with, e.g. `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Body bytes of [`Reply::Endless`] replies the server managed to write so far: what the
    /// client read, give or take the sockets' buffers.
    pub fn endless_bytes_sent(&self) -> usize {
        self.state
            .endless_sent
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Posts `body` to `path` as a plain HTTP client, returning the status and the JSON body: for
    /// requests no adapter would send, to check that the mock refuses them as the real API does.
    pub async fn post(&self, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        let body = body.to_string();
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (
            status,
            serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
        )
    }
}

async fn serve(mut stream: TcpStream, state: Arc<State>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let header_end = loop {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (method, path) = (
        first.next().unwrap_or_default().to_owned(),
        first.next().unwrap_or_default().to_owned(),
    );
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let raw_body = String::from_utf8_lossy(&buf[header_end..]).into_owned();
    let body = serde_json::from_str(&raw_body).unwrap_or(serde_json::Value::Null);
    let limit = state
        .context_limit
        .load(std::sync::atomic::Ordering::Relaxed);
    let checked = strict::check(&path, &body, &state.issued.lock().unwrap())
        .and_then(|()| context::overflow(&path, raw_body.len(), limit).map_or(Ok(()), Err));
    let scripted = match (&checked, &state.responder.0) {
        (Err(_), _) => None,
        (Ok(()), Some(respond)) => Some(respond(&body)),
        (Ok(()), None) => {
            let first = first_user_message(&body);
            Some(
                next_reply(&state, first.as_deref())
                    .unwrap_or_else(|| Reply::error(500, "the mock's script is exhausted", &[])),
            )
        }
    };
    let billed = match state.prompt_cache.lock().unwrap().as_mut() {
        Some(cache)
            if scripted.is_some()
                && strict::format_of(&path) == Some(strict::Format::Anthropic) =>
        {
            Some(cache.bill(&body, context::tokens_of(raw_body.len())))
        }
        _ => None,
    };
    // A scripted mock records every request, refused ones too (a test checks what was sent); a
    // responding mock is as strict, but keeps no record: it serves benchmarks of thousands of
    // calls.
    if state.responder.0.is_none() {
        state.requests.lock().unwrap().push(Recorded {
            method,
            path,
            headers,
            body,
            raw_body,
        });
    }
    let reply = match (checked, scripted) {
        (Err(refusal), _) => refusal,
        (Ok(()), Some(reply)) => {
            strict::record(&mut state.issued.lock().unwrap(), &reply);
            match billed {
                Some(billed) => prompt_cache::with_usage(reply, billed),
                None => reply,
            }
        }
        (Ok(()), None) => Reply::error(500, "the mock answered nothing", &[]),
    };
    write_reply(&mut stream, &state, reply).await
}

/// Writes `reply` and closes the connection.
async fn write_reply(stream: &mut TcpStream, state: &State, reply: Reply) -> std::io::Result<()> {
    match reply {
        Reply::Json {
            status,
            headers,
            body,
        } => {
            let mut out = format!(
                "HTTP/1.1 {status} Mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            out.push_str(&body);
            stream.write_all(out.as_bytes()).await?;
        }
        Reply::Thinking { silence, events } => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n")
                .await?;
            stream.flush().await?;
            tokio::time::sleep(silence).await;
            for data in events {
                stream
                    .write_all(format!("data: {data}\n\n").as_bytes())
                    .await?;
            }
        }
        Reply::Garbage(text) => {
            let out = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            stream.write_all(out.as_bytes()).await?;
        }
        Reply::Sse { events, pause, cut } => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n: keep-alive\n\n")
                .await?;
            for data in events {
                tokio::time::sleep(pause).await;
                stream
                    .write_all(format!("data: {data}\n\n").as_bytes())
                    .await?;
                stream.flush().await?;
            }
            if cut {
                stream
                    .write_all(b"data: {\"choices\": [{\"delta\": {\"content\": \"trunc")
                    .await?;
            }
        }
        Reply::Endless {
            content_type,
            head,
            repeat,
            max_bytes,
        } => {
            let out = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n"
            );
            stream.write_all(out.as_bytes()).await?;
            let mut sent = 0;
            let mut piece = if head.is_empty() { &repeat } else { &head }.as_bytes();
            while sent < max_bytes && !piece.is_empty() {
                // A client that hung up ends the reply with an error: that is the point.
                stream.write_all(piece).await?;
                sent += piece.len();
                state
                    .endless_sent
                    .fetch_add(piece.len(), std::sync::atomic::Ordering::Relaxed);
                piece = repeat.as_bytes();
            }
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}

/// The next reply for a request whose first user message is `first`: from the first route whose
/// key it contains, else from the main script.
fn next_reply(state: &State, first: Option<&str>) -> Option<Reply> {
    let mut routes = state.routes.lock().unwrap();
    if let Some(first) = first
        && let Some((_, script)) = routes
            .iter_mut()
            .find(|(key, _)| first.contains(key.as_str()))
    {
        return script.pop_front();
    }
    drop(routes);
    state.script.lock().unwrap().pop_front()
}

/// The first user message of a request in any of the three wire formats (OpenAI and Anthropic
/// `messages`, Gemini `contents`), as JSON text.
pub fn first_user_message(body: &serde_json::Value) -> Option<String> {
    ["messages", "contents"]
        .iter()
        .filter_map(|k| body[*k].as_array())
        .flatten()
        .find(|m| m["role"] == "user")
        .map(|m| m.to_string())
}

/// What the real API would answer a request of this path and body with, if it refuses it: the
/// mock's own check (nothing signed has been issued), for tests that build requests without
/// sending them. `None` when it would be accepted.
pub fn refusal(path: &str, body: &serde_json::Value) -> Option<String> {
    match strict::check(path, body, &strict::Issued::default()) {
        Ok(()) => None,
        Err(Reply::Json { body, .. }) => Some(body),
        Err(other) => Some(format!("{other:?}")),
    }
}
