//! Caps and deadlines the supervisor enforces itself, whatever the worker does: a flood of
//! streamed output stops being forwarded at the streaming cap and costs the supervisor no memory,
//! an oversized result is cut to the output cap, an oversized frame is refused unread, and a call
//! whose worker has not reported by its timeout ends there, timed out, with what it streamed.
//! Memory is measured by a counting allocator: the bytes the supervisor (this process) allocates.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::worker::caps::STREAM_CAP;
use agentd::worker::spawn::RESULT_GRACE;
use agentd::worker::{WorkerError, run_tool};
use protocol::worker::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod common;
#[path = "common/fake.rs"]
mod fake;
use common::{Dirs, worker};

fn bash(command: &str) -> ToolRequest {
    ToolRequest::Bash(BashRequest {
        command: command.into(),
    })
}

/// Counts the bytes this test process has allocated: now and at the peak since the last reset.
/// Exact where the resident set is not (freed memory stays resident and is reused).
struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on unchanged to the system allocator; only counters are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is the system allocator's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, that is from the system allocator.
        unsafe { System.dealloc(ptr, layout) };
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes allocated now; the peak starts again from here.
fn reset_peak() -> usize {
    let now = NOW.load(Ordering::Relaxed);
    PEAK.store(now, Ordering::Relaxed);
    now
}

fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// The floods in one test, one after the other, so they do not add up in the counter (the other
/// tests here allocate a few 64 KiB frames at a time, well within the bounds).
#[tokio::test]
async fn floods_are_capped_by_the_supervisor_in_bounded_memory() {
    let f = Dirs::new("caps-flood");
    let spec = f.spec();
    let cap = spec.limits.output_cap_bytes as usize;

    // 100 MiB of output chunks (1600 × 64 KiB), then a small result.
    let chunk = fake::output(&"y".repeat(64 * 1024));
    let block = fake::data(&f.root, "block", &chunk.repeat(16));
    let flood = fake::worker(
        &f.root,
        "chunks",
        &fake::ready(fake::honest_report()),
        &format!(
            "i=0; while [ $i -lt 100 ]; do cat '{}' >&0; i=$((i+1)); done\ncat '{}' >&0",
            block.display(),
            fake::data(&f.root, "done", &fake::result("done")).display()
        ),
    );
    let before = reset_peak();
    let mut forwarded = 0usize;
    let mut marker = false;
    let r = run_tool(&flood, &spec, bash("x"), |text| {
        forwarded += text.len();
        marker |= text.contains("not streamed");
    })
    .await
    .unwrap();
    let grew = peak() - before;
    assert_eq!(r.content, "done", "a result within the cap passes as sent");
    assert!(!r.truncated);
    assert!(
        marker,
        "the stream says where it stopped ({forwarded} bytes forwarded)"
    );
    assert!(
        (STREAM_CAP..=STREAM_CAP + 200).contains(&forwarded),
        "{forwarded} bytes forwarded"
    );
    eprintln!("100 MiB of chunks: peak grew by {} KiB", grew / 1024);
    assert!(
        grew < 8 << 20,
        "memory grew by {grew} bytes for 100 MiB of chunks"
    );

    // A 10 MB result, head and tail marked: cut to the cap.
    let mut big = String::from("HEAD-OF-RESULT");
    big.push_str(&"z".repeat(10_000_000));
    big.push_str("TAIL-OF-RESULT");
    let frames = [fake::ready(fake::honest_report()), fake::result(&big)].concat();
    drop(big);
    let huge = fake::worker(&f.root, "huge", &frames, "sleep 5");
    drop(frames);
    let before = reset_peak();
    let r = run_tool(&huge, &spec, bash("x"), |_| {}).await.unwrap();
    let grew = peak() - before;
    assert!(r.truncated);
    assert!(
        r.content.len() <= cap + 200,
        "{} bytes kept",
        r.content.len()
    );
    assert!(r.content.starts_with("HEAD-OF-RESULT") && r.content.ends_with("TAIL-OF-RESULT"));
    assert!(r.content.contains("bytes cut by the supervisor"));
    assert!(r.bytes_seen >= 10_000_000);
    eprintln!("a 10 MB result: peak grew by {} KiB", grew / 1024);
    assert!(
        grew < 40 << 20,
        "memory grew by {grew} bytes for a 10 MB result"
    );

    // A frame that claims 64 MiB is refused before anything is read or allocated for it.
    let claim = (64u32 << 20).to_be_bytes();
    let frames = [&fake::ready(fake::honest_report())[..], &claim].concat();
    let liar = fake::worker(&f.root, "claims", &frames, "exec sleep 63.1");
    let started = Instant::now();
    match run_tool(&liar, &spec, bash("x"), |_| {}).await {
        Err(WorkerError::Protocol(message)) => assert!(message.contains("exceeds"), "{message}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(fake::none_runs("sleep 63.1"));
}

#[tokio::test]
async fn a_call_whose_worker_outlives_its_timeout_is_ended_there_with_its_output() {
    let f = Dirs::new("caps-deadline");
    let mut spec = f.spec();
    spec.limits.timeout_ms = 1_000;
    let streamed = [
        fake::ready(fake::honest_report()),
        fake::output("partial one\n"),
        fake::output("partial two\n"),
    ]
    .concat();
    // It streams, starts a child, then hangs without a result.
    let hangs = fake::worker(&f.root, "hangs", &streamed, "sleep 61.7 &\nexec sleep 61.8");
    let mut seen = String::new();
    let started = Instant::now();
    let r = run_tool(&hangs, &spec, bash("x"), |t| seen.push_str(t))
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(r.timed_out && r.is_error, "{r:?}");
    assert_eq!(r.exit_code, Some(124));
    assert!(
        r.content
            .starts_with("partial one\npartial two\n\n[timed out after 1 s"),
        "{}",
        r.content
    );
    assert_eq!(seen, "partial one\npartial two\n");
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(
        took < Duration::from_secs(1) + RESULT_GRACE + Duration::from_secs(2),
        "{took:?}"
    );
    assert!(fake::none_runs("sleep 61.8"), "the worker was killed");
    if agentd::worker::cgroup::Layout::detect() != agentd::worker::cgroup::Layout::Unavailable {
        assert!(
            fake::none_runs("sleep 61.7"),
            "its child was killed with the cgroup"
        );
    }

    // A worker that floods output without end always has a frame ready: still ended in time.
    let chunk = fake::output(&"w".repeat(64 * 1024));
    let block = fake::data(&f.root, "block", &chunk.repeat(16));
    let floods = fake::worker(
        &f.root,
        "floods",
        &fake::ready(fake::honest_report()),
        &format!("while :; do cat '{}' >&0 || exit; done", block.display()),
    );
    let started = Instant::now();
    let r = run_tool(&floods, &spec, bash("x"), |_| {}).await.unwrap();
    let took = started.elapsed();
    assert!(
        r.timed_out && r.truncated && r.exit_code == Some(124),
        "{r:?}"
    );
    assert!(r.content.len() < spec.limits.output_cap_bytes as usize + 400);
    assert!(
        took < Duration::from_secs(1) + RESULT_GRACE + Duration::from_secs(2),
        "{took:?}"
    );

    // Sanity: the same worker with its result in time is not timed out.
    let in_time = [streamed, fake::result("in time")].concat();
    let answers = fake::worker(&f.root, "answers", &in_time, "exec sleep 61.9");
    let r = run_tool(&answers, &spec, bash("x"), |_| {}).await.unwrap();
    assert!(
        !r.timed_out && !r.is_error && r.content == "in time",
        "{r:?}"
    );
}

#[tokio::test]
async fn a_command_that_silences_itself_and_sleeps_still_times_out() {
    let f = Dirs::new("caps-silent");
    let mut spec = f.spec();
    spec.limits.timeout_ms = 1_000;
    let started = Instant::now();
    let r = run_tool(
        &worker(),
        &spec,
        bash("echo before; exec >/dev/null 2>&1; sleep 31.3"),
        |_| {},
    )
    .await
    .unwrap();
    let took = started.elapsed();
    assert!(r.timed_out && r.is_error, "{r:?}");
    assert_eq!(r.exit_code, Some(124));
    assert!(r.content.starts_with("before\n"), "{}", r.content);
    assert!(
        took < Duration::from_secs(1) + RESULT_GRACE + Duration::from_secs(2),
        "{took:?}"
    );
    assert!(fake::none_runs("sleep 31.3"), "the command was killed");
    // Sanity: a command that ends in time, in the same sandbox.
    let r = run_tool(&worker(), &spec, bash("echo quick"), |_| {})
        .await
        .unwrap();
    assert_eq!(
        (r.exit_code, r.timed_out, r.content.as_str()),
        (Some(0), false, "quick\n")
    );
}
