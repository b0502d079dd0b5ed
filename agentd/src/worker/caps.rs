//! The caps a worker's output, messages and stderr get on the supervisor's side, whatever the
//! worker did about them: streamed output is forwarded up to [`STREAM_CAP`] bytes, in at most
//! [`EVENT_BURST`] events at once and one more per [`EVENT_EVERY`], and kept (head and tail) up
//! to the output cap for a call the supervisor ends itself; a result's content is cut to the
//! output cap; frames, stderr, failure messages and a report's free text are bounded.

use protocol::frame::DEFAULT_MAX_FRAME;
use protocol::worker::{LockdownReport, SandboxSpec, ToolResult, WorkerFailure};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::task::JoinHandle;
use tool_worker::output::Capped;

/// Bytes of output forwarded as it streams; past it, output only reaches the result.
pub const STREAM_CAP: usize = 256 * 1024;
/// Bytes of a worker's stderr kept for the log and for [`super::WorkerError::Died`]; the rest is drained.
pub const STDERR_CAP: usize = 64 * 1024;
/// Room past the output cap for the markers an honest worker adds (cut, timed out).
const MARKER_ROOM: usize = 4 * 1024;
/// Bytes of a worker's stderr or failure message shown in an error.
const EXCERPT: usize = 2 * 1024;
/// The exit code of a call that ran out of time, as `timeout(1)` has it.
pub const TIMEOUT_EXIT_CODE: i32 = 124;

/// The biggest frame accepted from a worker: room for a result at the output cap (tripled, for
/// invalid UTF-8 replaced), and never less than the protocol's default.
pub(super) fn max_frame(spec: &SandboxSpec) -> usize {
    let cap = usize::try_from(spec.limits.output_cap_bytes).unwrap_or(usize::MAX);
    cap.saturating_mul(3)
        .saturating_add(1024 * 1024)
        .max(DEFAULT_MAX_FRAME)
}

/// Reads a worker's stderr to its end, keeping the first [`STDERR_CAP`] bytes.
pub(super) fn read_stderr(
    mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
) -> JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = STDERR_CAP.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&buf[..room]);
                }
            }
        }
        kept
    })
}

/// Output events a worker's chunks may make at once...
pub const EVENT_BURST: u32 = 64;
/// ...and one more each time this passes. An honest worker sends a chunk when 16 KiB wait or
/// the first waiting byte has waited 50 ms (`tool-worker/src/tools/bash.rs`): at most 16 of the
/// first kind within [`STREAM_CAP`], 20 a second of the second, so it never runs short. One that
/// sends tiny frames as fast as it can (every frame an event, each a line of the session log)
/// gets them merged instead.
pub const EVENT_EVERY: Duration = Duration::from_millis(25);

/// Output as it streams: forwarded up to [`STREAM_CAP`], in a bounded number of events, kept
/// (head and tail) up to the output cap for a call the supervisor has to end itself.
pub(super) struct Streamed {
    /// Bytes forwarded or held to be.
    forwarded: usize,
    /// Forwarding stopped (and said so).
    stopped: bool,
    kept: Capped,
    /// Text to forward with the next event: what came while no event was left. What is still
    /// held when the result comes is not forwarded (the result has it all); an honest worker's
    /// chunks never wait here.
    held: String,
    /// Events that may be made now, and when one was last earned.
    events: u32,
    earned_at: Instant,
}

/// Said once, where forwarding stops.
const STREAM_MARKER: &str =
    "\n[… output past 256 KiB is not streamed; the result keeps its head and tail …]\n";

impl Streamed {
    pub(super) fn new(output_cap: usize) -> Self {
        Streamed {
            forwarded: 0,
            stopped: false,
            kept: Capped::new(output_cap),
            held: String::new(),
            events: EVENT_BURST,
            earned_at: Instant::now(),
        }
    }

    /// A chunk from the worker: forwarded now, with what was held before it, if an event is left.
    pub(super) fn push(&mut self, text: &str, on_output: &mut impl FnMut(&str)) {
        self.push_at(text, Instant::now(), on_output);
    }

    fn push_at(&mut self, text: &str, now: Instant, on_output: &mut impl FnMut(&str)) {
        self.kept.push(text.as_bytes());
        if self.stopped {
            return;
        }
        let room = STREAM_CAP - self.forwarded;
        if text.len() <= room {
            self.forwarded += text.len();
            self.held.push_str(text);
        } else {
            let cut = floor_boundary(text, room);
            self.held.push_str(&text[..cut]);
            self.held.push_str(STREAM_MARKER);
            self.forwarded += cut;
            self.stopped = true;
        }
        self.earn(now);
        // The last event (where forwarding stops) is made whatever is left.
        if self.held.is_empty() || (self.events == 0 && !self.stopped) {
            return;
        }
        self.events = self.events.saturating_sub(1);
        on_output(&std::mem::take(&mut self.held));
    }

    /// Adds the events earned since the last one, up to [`EVENT_BURST`].
    fn earn(&mut self, now: Instant) {
        let since = now.saturating_duration_since(self.earned_at);
        let earned = u32::try_from(since.as_nanos() / EVENT_EVERY.as_nanos()).unwrap_or(u32::MAX);
        if earned == 0 {
            return;
        }
        self.events = self.events.saturating_add(earned).min(EVENT_BURST);
        self.earned_at = if self.events == EVENT_BURST {
            now
        } else {
            self.earned_at + EVENT_EVERY * earned
        };
    }

    /// The result of a call whose worker was still running at its deadline.
    pub(super) fn timed_out(
        self,
        timeout_ms: u64,
        elapsed: Duration,
        lockdown: LockdownReport,
    ) -> ToolResult {
        let bytes_seen = self.kept.total();
        let (mut content, truncated) = self.kept.finish();
        content.push_str(&format!(
            "\n[timed out after {} s: the tool-worker had not reported by then, so it and everything it started were killed. Narrow the command or raise the timeout.]",
            Duration::from_millis(timeout_ms).as_secs_f64()
        ));
        ToolResult {
            content,
            is_error: true,
            exit_code: Some(TIMEOUT_EXIT_CODE),
            timed_out: true,
            truncated,
            bytes_seen,
            duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            lockdown,
        }
    }
}

/// `result` with its content cut to `cap` (head and tail, a marker between) if the worker sent
/// more than the cap and its markers, and with the lockdown the supervisor verified.
pub(super) fn capped(mut result: ToolResult, cap: usize, verified: &LockdownReport) -> ToolResult {
    result.lockdown = verified.clone();
    let len = result.content.len();
    if len <= cap.saturating_add(MARKER_ROOM) {
        return result;
    }
    tracing::warn!(
        len,
        cap,
        "the tool-worker sent a result over the output cap; cut"
    );
    let (head, tail) = middle(&result.content, cap);
    result.content = format!(
        "{}\n[… {} bytes cut by the supervisor; {len} bytes of result in all …]\n{}",
        &result.content[..head],
        tail - head,
        &result.content[tail..]
    );
    result.truncated = true;
    result.bytes_seen = result.bytes_seen.max(len as u64);
    result
}

/// The middle of `text` to cut so that at most `cap` bytes are kept, half of them from the start
/// and the rest from the end: the range `head..tail`, on char boundaries.
pub fn middle(text: &str, cap: usize) -> (usize, usize) {
    let head = floor_boundary(text, cap / 2);
    let tail = ceil_boundary(text, text.len().saturating_sub(cap - cap / 2)).max(head);
    (head, tail)
}

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest char boundary of `text` at or above `at`.
fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The end of `text`, at most [`EXCERPT`] bytes.
pub(super) fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT {
        return text.to_owned();
    }
    format!("…{}", &text[ceil_boundary(text, text.len() - EXCERPT)..])
}

/// Warnings kept from a worker's report, each cut to [`EXCERPT`] bytes: the report goes with every
/// result, so its text must not be the worker's to size.
const MAX_WARNINGS: usize = 16;

/// `report` with its free text bounded.
pub(super) fn trimmed(mut report: LockdownReport) -> LockdownReport {
    report.warnings.truncate(MAX_WARNINGS);
    for text in report
        .warnings
        .iter_mut()
        .chain(std::iter::once(&mut report.containment))
    {
        if text.len() > EXCERPT {
            text.truncate(floor_boundary(text, EXCERPT));
            text.push('…');
        }
    }
    report
}

/// `failure` with its message cut to [`EXCERPT`] bytes (it is the worker's text).
pub(super) fn bounded(mut failure: WorkerFailure) -> WorkerFailure {
    if failure.message.len() > EXCERPT {
        failure.message = format!(
            "{}…",
            &failure.message[..floor_boundary(&failure.message, EXCERPT)]
        );
    }
    failure
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

    use super::*;
    use protocol::worker::LandlockStatus;

    fn report() -> LockdownReport {
        LockdownReport {
            landlock_abi: Some(7),
            landlock: LandlockStatus::FullyEnforced,
            seccomp: true,
            no_new_privs: true,
            capabilities_cleared: true,
            containment: "pid namespace".into(),
            mount_namespace: true,
            ipc_namespace: true,
            protected: vec![],
            protected_ids: vec![],
            uid: 0,
            gid: 0,
            warnings: vec![],
        }
    }

    fn result(content: String) -> ToolResult {
        ToolResult {
            bytes_seen: content.len() as u64,
            content,
            is_error: false,
            exit_code: Some(0),
            timed_out: false,
            truncated: false,
            duration_ms: 1,
            lockdown: report(),
        }
    }

    #[test]
    fn a_result_over_the_cap_keeps_head_and_tail_at_char_boundaries() {
        // (content, cap, cut?)
        let cases = [
            ("short".to_owned(), 100, false),
            // An honest worker's head, marker and tail: within the room for markers.
            ("a".repeat(100 + MARKER_ROOM), 100, false),
            ("é".repeat(10_000), 100, true),
            (format!("HEAD{}TAIL", "x".repeat(1_000_000)), 1000, true),
        ];
        for (content, cap, cut) in cases {
            let len = content.len();
            let r = capped(result(content.clone()), cap, &report());
            assert_eq!(r.truncated, cut, "{len} bytes, cap {cap}");
            if !cut {
                assert_eq!(r.content, content);
                continue;
            }
            assert!(r.content.len() <= cap + 100, "{} kept", r.content.len());
            assert_eq!(r.bytes_seen, len as u64);
            assert!(r.content.contains("bytes cut by the supervisor"));
            let (head, tail) = (&content[..4], &content[len - 4..]);
            assert!(r.content.starts_with(head) && r.content.ends_with(tail));
        }
    }

    #[test]
    fn streaming_stops_at_the_cap_once_and_keeps_head_and_tail() {
        let mut stream = Streamed::new(64);
        let mut forwarded = String::new();
        let chunk = "ü".repeat(1000); // 2000 bytes
        for _ in 0..200 {
            stream.push(&chunk, &mut |t: &str| forwarded.push_str(t));
        }
        let marker_at = forwarded.find(STREAM_MARKER).unwrap();
        assert!(marker_at <= STREAM_CAP && marker_at > STREAM_CAP - 10);
        assert_eq!(forwarded.matches("not streamed").count(), 1);
        let r = stream.timed_out(1500, Duration::from_millis(3500), report());
        assert!(r.timed_out && r.is_error && r.truncated);
        assert_eq!(r.exit_code, Some(TIMEOUT_EXIT_CODE));
        assert_eq!(r.bytes_seen, 400_000);
        assert!(r.content.starts_with("üüü"), "{}", r.content);
        assert!(r.content.ends_with("raise the timeout.]"), "{}", r.content);
        assert!(
            r.content.contains("[timed out after 1.5 s"),
            "{}",
            r.content
        );
        assert!(r.content.len() < 64 + 400, "{}", r.content);
    }

    #[test]
    fn tiny_chunks_sent_as_fast_as_possible_make_few_events_and_lose_no_order() {
        let start = Instant::now();
        let mut stream = Streamed::new(1 << 20);
        let mut events: Vec<String> = Vec::new();
        let mut sent = String::new();
        // 100,000 one-character chunks over one second.
        for i in 0..100_000u32 {
            let text = char::from(b'a' + (i % 26) as u8).to_string();
            sent.push_str(&text);
            let now = start + Duration::from_micros(u64::from(i) * 10);
            stream.push_at(&text, now, &mut |t: &str| events.push(t.to_owned()));
        }
        let bound = EVENT_BURST as usize + 1_000 / EVENT_EVERY.as_millis() as usize;
        assert!(events.len() <= bound, "{} events", events.len());
        // What was forwarded is what was sent, in order; the rest goes with the next chunk.
        let forwarded = events.concat();
        assert!(sent.starts_with(&forwarded));
        stream.push_at("!", start + Duration::from_secs(2), &mut |t: &str| {
            events.push(t.to_owned())
        });
        sent.push('!');
        assert_eq!(events.concat(), sent);
    }

    #[test]
    fn an_honest_workers_chunks_are_each_forwarded_at_once() {
        let start = Instant::now();
        let mut stream = Streamed::new(1 << 20);
        let mut events = 0;
        // The most a worker sends: 16 chunks of 16 KiB (all the streaming cap holds) and a timed
        // one at once, then a timed chunk every 50 ms, now and then two (a full one, a timed one).
        for i in 0..1_200u32 {
            let now = start + Duration::from_millis(u64::from(i) * 50);
            let burst = match i {
                0 => 17,
                _ if i % 100 == 0 => 2,
                _ => 1,
            };
            for _ in 0..burst {
                let before = events;
                stream.push_at("0123456789", now, &mut |_: &str| events += 1);
                assert_eq!(events, before + 1, "chunk {i} was held");
            }
        }
    }

    #[test]
    fn a_reports_free_text_is_bounded() {
        let mut big = report();
        big.containment = "c".repeat(100_000);
        big.warnings = vec!["w".repeat(100_000); 1000];
        let r = trimmed(big);
        assert_eq!(r.warnings.len(), MAX_WARNINGS);
        assert!(r.warnings.iter().all(|w| w.len() <= EXCERPT + 3));
        assert!(r.containment.len() <= EXCERPT + 3);
        assert_eq!(
            trimmed(report()),
            report(),
            "a normal report is kept as it is"
        );
        let failure = bounded(WorkerFailure {
            step: protocol::worker::WorkerStep::Tool,
            message: "m".repeat(100_000),
        });
        assert!(failure.message.len() <= EXCERPT + 3);
        assert!(excerpt(&"e".repeat(100_000)).len() <= EXCERPT + 3);
    }
}
