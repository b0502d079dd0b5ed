//! The model is untrusted input too: a response is bounded in size, in every wire format,
//! streamed and not. A mock provider that streams without end — text, tool arguments, one event
//! that never ends, events that carry nothing, a body with no end — gets its call ended with a
//! clear error, quickly, after reading little more than the bound; `agent run` against it ends
//! its turn with that error and its memory stays far below what the flood would take.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::providers::anthropic::AnthropicClient;
use agentd::providers::gemini::GeminiClient;
use agentd::providers::http::{DEFAULT_MAX_RESPONSE_BYTES, STREAM_FACTOR, Transport, wire_bound};
use agentd::providers::model::{Message, ModelRequest, ModelResponse, Role};
use agentd::providers::openai::OpenAiClient;
use agentd::providers::retry::RetryPolicy;
use agentd::providers::{CallFailed, ProviderError};
use agentd_e2e::mock_llm::{MockLlm, Reply, anthropic, gemini, openai};
use agentd_e2e::{As, Dir, command_as};
use serde_json::{Value, json};
use std::io::Read as _;
use std::time::{Duration, Instant};

/// What a flood may send before the server gives up: far past any bound here, so a client
/// without one reads all of it and fails its test instead of hanging it.
const FLOOD: usize = 256 << 20;

#[derive(Debug, Clone, Copy)]
enum Format {
    OpenAi,
    Anthropic,
    Gemini,
}

const FORMATS: [Format; 3] = [Format::OpenAi, Format::Anthropic, Format::Gemini];

fn kib(n: usize) -> String {
    "x".repeat(n << 10)
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Gemini => "gemini",
        }
    }

    /// Events that start a response and one that continues its text, 1 KiB at a time.
    fn text_flood(self) -> (Vec<Value>, Value) {
        match self {
            Format::OpenAi => (vec![], openai::text(&kib(1))),
            Format::Anthropic => (
                vec![anthropic::start(10), anthropic::text_block(0)],
                anthropic::text(0, &kib(1)),
            ),
            Format::Gemini => (vec![], gemini::chunk(vec![gemini::text(&kib(1))], None)),
        }
    }

    /// Events that start a tool call and one that adds 1 KiB to its arguments (Gemini sends
    /// calls whole: one more call with 1 KiB of arguments).
    fn arguments_flood(self) -> (Vec<Value>, Value) {
        match self {
            Format::OpenAi => (
                vec![openai::tool(
                    0,
                    Some("call_1"),
                    Some("write_file"),
                    "{\"c\": \"",
                )],
                openai::tool(0, None, None, &kib(1)),
            ),
            Format::Anthropic => (
                vec![
                    anthropic::start(10),
                    anthropic::tool_block(0, "toolu_1", "write_file"),
                ],
                anthropic::input(0, &kib(1)),
            ),
            Format::Gemini => (
                vec![],
                gemini::chunk(vec![gemini::call("write_file", json!({"c": kib(1)}))], None),
            ),
        }
    }

    /// The start of a whole response whose text then goes on without end.
    fn body_head(self) -> &'static str {
        match self {
            Format::OpenAi => {
                r#"{"choices": [{"index": 0, "message": {"role": "assistant", "content": ""#
            }
            Format::Anthropic => r#"{"content": [{"type": "text", "text": ""#,
            Format::Gemini => r#"{"candidates": [{"content": {"parts": [{"text": ""#,
        }
    }

    /// A complete streamed answer of `text`, 1 KiB per event.
    fn answer(self, text: &str) -> Reply {
        let pieces: Vec<&str> = text
            .as_bytes()
            .chunks(1024)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        match self {
            Format::OpenAi => {
                let mut events: Vec<Value> = pieces.iter().map(|p| openai::text(p)).collect();
                events.push(openai::finish("stop"));
                Reply::stream(events)
            }
            Format::Anthropic => {
                let mut events = vec![anthropic::start(10), anthropic::text_block(0)];
                events.extend(pieces.iter().map(|p| anthropic::text(0, p)));
                events.extend([
                    anthropic::stop_block(0),
                    anthropic::delta("end_turn", 5),
                    anthropic::stop(),
                ]);
                Reply::events(events)
            }
            Format::Gemini => {
                let mut events: Vec<Value> = pieces
                    .iter()
                    .map(|p| gemini::chunk(vec![gemini::text(p)], None))
                    .collect();
                events.push(gemini::chunk(vec![], Some("STOP")));
                Reply::events(events)
            }
        }
    }

    /// One call to `mock` in this format with the given bound (two tries allowed, to see that
    /// a response too large is not retried).
    async fn call(
        self,
        mock: &MockLlm,
        stream: bool,
        max: usize,
    ) -> Result<ModelResponse, CallFailed> {
        let request = ModelRequest {
            model: "mock-model".into(),
            messages: vec![
                Message::text(Role::System, "be brief"),
                Message::text(Role::User, "write a lot"),
            ],
            tools: vec![],
            max_tokens: None,
            reminder: None,
        };
        let configure = |t: &mut Transport| {
            t.max_response_bytes = max;
            t.retry = RetryPolicy {
                max_tries: 2,
                base_delay: Duration::from_millis(10),
                max_delay: Duration::from_secs(1),
            };
        };
        let url = mock.url();
        let key = Some("sk-test".to_owned());
        let mut on_text = |_: &str| {};
        match self {
            Format::OpenAi => {
                let mut c = OpenAiClient::new(&url, key).unwrap();
                c.stream = stream;
                configure(&mut c.transport);
                c.complete(&request, &mut on_text).await
            }
            Format::Anthropic => {
                let mut c = AnthropicClient::new(&url, key).unwrap();
                c.stream = stream;
                configure(&mut c.transport);
                c.complete(&request, &mut on_text).await
            }
            Format::Gemini => {
                let mut c = GeminiClient::new(&url, key).unwrap();
                c.stream = stream;
                configure(&mut c.transport);
                c.complete(&request, &mut on_text).await
            }
        }
    }
}

/// Runs one call against `reply` and checks that it ended with `TooLarge` for `what` at
/// `limit`, at once (one try, in seconds) and having let the server send at most `sent_at_most`.
async fn assert_ended(
    format: Format,
    reply: Reply,
    stream: bool,
    max: usize,
    (what, limit): (&'static str, usize),
    sent_at_most: usize,
) {
    let mock = MockLlm::start(vec![reply]).await;
    let start = Instant::now();
    let err = format
        .call(&mock, stream, max)
        .await
        .expect_err("a flood is not a response");
    let elapsed = start.elapsed();
    let shown = err.to_string();
    assert_eq!(
        err.error,
        ProviderError::TooLarge {
            provider: format.name(),
            what: match what {
                "content" => "its text, tool arguments and thinking",
                other => other,
            },
            limit
        },
        "{format:?}: {shown}"
    );
    assert!(
        shown.contains("response too large") && shown.contains("max_response_bytes"),
        "the message says what happened and what sets the bound: {shown}"
    );
    assert_eq!(err.tries, 1, "not retried: {shown}");
    assert_eq!(mock.requests().len(), 1);
    assert!(
        elapsed < Duration::from_secs(20),
        "{format:?}: took {elapsed:?}"
    );
    let sent = mock.endless_bytes_sent();
    assert!(
        sent <= sent_at_most,
        "{format:?}: the client let {sent} bytes be sent (at most {sent_at_most} expected)"
    );
}

/// What the loopback sockets' buffers may hold beyond what the client read.
const BUFFERS: usize = 16 << 20;

#[tokio::test]
async fn endless_text_ends_the_call_at_the_default_bound_in_every_format() {
    let max = DEFAULT_MAX_RESPONSE_BYTES;
    for format in FORMATS {
        let (head, repeat) = format.text_flood();
        // A 1 KiB piece of text costs at most 200 bytes of envelope on the wire here.
        assert_ended(
            format,
            Reply::endless_events(&head, &repeat, FLOOD),
            true,
            max,
            ("content", max),
            max + max / 5 + BUFFERS,
        )
        .await;
    }
}

#[tokio::test]
async fn endless_tool_arguments_end_the_call_in_every_format() {
    let max = 1 << 20;
    for format in FORMATS {
        let (head, repeat) = format.arguments_flood();
        assert_ended(
            format,
            Reply::endless_events(&head, &repeat, FLOOD),
            true,
            max,
            ("content", max),
            2 * max + BUFFERS,
        )
        .await;
    }
}

#[tokio::test]
async fn one_event_that_never_ends_is_cut_at_its_bound_on_the_wire() {
    let max = 1 << 20;
    for format in FORMATS {
        // The start of an event, then text without a line end, ever.
        let reply = Reply::Endless {
            content_type: "text/event-stream",
            head: format!("data: {}", format.body_head()),
            repeat: kib(1),
            max_bytes: FLOOD,
        };
        assert_ended(
            format,
            reply,
            true,
            max,
            ("one stream event", wire_bound(max)),
            wire_bound(max) + BUFFERS,
        )
        .await;
    }
}

#[tokio::test]
async fn events_that_carry_nothing_end_when_the_stream_passes_its_bound() {
    // Keep-alive comments forever: nothing is kept, but the call would never end.
    let max = 64 << 10;
    for format in FORMATS {
        let reply = Reply::Endless {
            content_type: "text/event-stream",
            head: String::new(),
            repeat: format!(": keep-alive {}\n\n", kib(1)),
            max_bytes: FLOOD,
        };
        let stream_cap = max * STREAM_FACTOR;
        assert_ended(
            format,
            reply,
            true,
            max,
            ("the event stream", stream_cap),
            stream_cap + BUFFERS,
        )
        .await;
    }
}

#[tokio::test]
async fn a_body_without_end_is_read_only_to_its_bound() {
    let max = 1 << 20;
    for format in FORMATS {
        assert_ended(
            format,
            Reply::endless_body(format.body_head(), &kib(1), FLOOD),
            false,
            max,
            ("the response body", wire_bound(max)),
            wire_bound(max) + BUFFERS,
        )
        .await;
    }
}

#[tokio::test]
async fn a_whole_body_under_its_wire_bound_is_still_held_to_the_content_bound() {
    let max = 16 << 10;
    let bodies = [
        (Format::OpenAi, openai::completion(Some(&kib(20)), &[])),
        (Format::Anthropic, anthropic::message(&kib(20), &[])),
        (
            Format::Gemini,
            gemini::chunk(vec![gemini::text(&kib(20))], Some("STOP")),
        ),
    ];
    for (format, body) in bodies {
        let mock = MockLlm::start(vec![Reply::ok(body)]).await;
        let err = format.call(&mock, false, max).await.unwrap_err();
        assert_eq!(
            err.error,
            ProviderError::TooLarge {
                provider: format.name(),
                what: "its text, tool arguments and thinking",
                limit: max
            },
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn an_answer_under_the_bound_passes_and_the_same_answer_over_it_does_not() {
    let text = kib(60);
    for format in FORMATS {
        let mock = MockLlm::start(vec![format.answer(&text), format.answer(&text)]).await;
        let r = format.call(&mock, true, 64 << 10).await.unwrap();
        assert_eq!(r.text, text, "{format:?}");
        let err = format.call(&mock, true, 56 << 10).await.unwrap_err();
        assert!(
            matches!(err.error, ProviderError::TooLarge { limit, .. } if limit == 56 << 10),
            "{format:?}: {err}"
        );
    }
}

/// Runs `agent run` against a provider flooding text and returns its exit code, stdout, stderr
/// and peak resident memory in KiB (from `wait4`, exact, whatever the timing).
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4, which also reports its peak memory"
)]
fn agent_run_measured(format: Format, mock: &MockLlm, config: &str) -> (i32, String, String, i64) {
    let home = Dir::new("limit-home", As::Root);
    let ws = Dir::new("limit-ws", As::Root);
    let config_text = config;
    let config = home.0.join("config.toml");
    std::fs::write(&config, config_text).unwrap();
    let mut child = command_as(
        "agent",
        As::Root,
        &[
            ("HOME", home.0.to_str().unwrap()),
            ("TMPDIR", home.0.to_str().unwrap()),
            ("PROVIDER", format.name()),
            ("BASE_URL", mock.url().as_str()),
            ("API_KEY", "sk-e2e"),
            ("MODEL", "mock-model"),
        ],
    )
    .args(["run", "-p", "write a lot", "--output-format", "json"])
    .arg("--workspace")
    .arg(&ws.0)
    .arg("--config")
    .arg(&config)
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            r.read_to_string(&mut s).unwrap();
            s
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    let pid = i32::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (std's Child is never waited on
    // here); `status` and `usage` are valid for writes.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (
        code,
        out.join().unwrap(),
        err.join().unwrap(),
        usage.ru_maxrss,
    )
}

#[test]
fn agent_run_against_an_endless_stream_ends_with_the_error_and_bounded_memory() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for format in FORMATS {
        let (head, repeat) = format.text_flood();
        let mock = rt.block_on(MockLlm::start(vec![Reply::endless_events(
            &head, &repeat, FLOOD,
        )]));
        let start = Instant::now();
        let (code, stdout, stderr, peak_kib) = agent_run_measured(format, &mock, "");
        let elapsed = start.elapsed();
        assert!(elapsed < Duration::from_secs(60), "{format:?}: {elapsed:?}");
        // The flood is 256 MiB; the bound 8 MiB. Without it the process holds the flood.
        let peak_mib = peak_kib / 1024;
        eprintln!(
            "{format:?}: peak {peak_mib} MiB, {} MiB sent, {elapsed:?}",
            mock.endless_bytes_sent() >> 20
        );
        assert!(
            peak_mib < 80,
            "{format:?}: agent run peaked at {peak_mib} MiB resident"
        );
        assert!(mock.endless_bytes_sent() < 8 * DEFAULT_MAX_RESPONSE_BYTES);
        let v: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{format:?}: {e}: {stdout}\n{stderr}"));
        assert_eq!(code, 1, "{format:?}: {stdout}\n{stderr}");
        assert_eq!(v["finish_reason"], "error", "{v}");
        let message = v["message"].as_str().unwrap();
        assert!(
            message.contains("response too large")
                && message.contains(&DEFAULT_MAX_RESPONSE_BYTES.to_string()),
            "{format:?}: {message}"
        );
    }
}

#[test]
fn the_bound_is_read_from_the_config_file() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (head, repeat) = Format::OpenAi.text_flood();
    let mock = rt.block_on(MockLlm::start(vec![Reply::endless_events(
        &head, &repeat, FLOOD,
    )]));
    let (code, stdout, stderr, _) = agent_run_measured(
        Format::OpenAi,
        &mock,
        "[provider]\nmax_response_bytes = 65536\n",
    );
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains("response too large") && message.contains("passed 65536 bytes"),
        "{message}"
    );
    // A typo is an error naming the key, not a silent default.
    let err = agentd::config::parse("[provider]\nmax_response_byte = 1\n", "c.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_response_byte"), "{err}");
}
