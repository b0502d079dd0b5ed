//! Output dripped in tiny pieces, from the supervisor's API: a real worker coalesces what its
//! command writes into a few chunks (at 16 KiB, or 50 ms after the first unsent byte, or at the
//! end), never holding a byte back longer than that and never cutting a character in two; and a
//! worker that sends tiny frames anyway (the supervisor trusts no worker) makes a bounded number
//! of output events. Before, every pipe read was one chunk and one event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::worker::run_tool;
use protocol::worker::*;
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

#[tokio::test]
async fn a_real_worker_coalesces_dripped_output_and_keeps_every_character_whole() {
    let f = Dirs::new("drip-real");
    // 150,000 writes of one byte: "é" is written as two, so a chunk boundary may fall inside it.
    let command = "for i in $(seq 50000); do printf '\\303'; printf '\\251'; printf x; done";
    let mut chunks = Vec::new();
    let started = Instant::now();
    let r = run_tool(&worker(), &f.spec(), bash(command), |t| {
        chunks.push(t.to_owned())
    })
    .await
    .unwrap();
    let took = started.elapsed();
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    eprintln!(
        "150,000 one-byte writes: {} chunks in {took:?}",
        chunks.len()
    );
    let streamed = chunks.concat();
    assert_eq!(streamed.len(), 150_000, "{} bytes streamed", streamed.len());
    assert!(
        streamed == "éx".repeat(50_000),
        "the streamed output is not what was written: {:?}",
        streamed.chars().filter(|c| *c != 'é' && *c != 'x').count()
    );
    // A chunk at most every 50 ms, or per 16 KiB, and the last one.
    let bound = took.as_millis() as usize / 50 + 150_000 / (16 * 1024) + 2;
    assert!(
        chunks.len() <= bound,
        "{} chunks in {took:?} (at most {bound})",
        chunks.len()
    );
}

#[tokio::test]
async fn a_lone_byte_is_sent_without_waiting_for_more() {
    let f = Dirs::new("drip-lone");
    let mut seen: Vec<(Instant, String)> = Vec::new();
    let r = run_tool(
        &worker(),
        &f.spec(),
        bash("printf a; sleep 1.5; printf b"),
        |t| seen.push((Instant::now(), t.to_owned())),
    )
    .await
    .unwrap();
    assert_eq!(r.content, "ab");
    let text: Vec<&str> = seen.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(text, ["a", "b"]);
    let apart = seen[1].0 - seen[0].0;
    assert!(
        apart > Duration::from_millis(1_200),
        "\"a\" was held back until just before \"b\": {apart:?} apart"
    );
}

#[tokio::test]
async fn a_worker_that_sends_tiny_frames_anyway_makes_few_events() {
    let f = Dirs::new("drip-fake");
    // 100,000 one-byte output frames as fast as the socket takes them, then a result.
    let mut frames = fake::ready(fake::honest_report());
    let one = fake::output("x");
    for _ in 0..100_000 {
        frames.extend_from_slice(&one);
    }
    let done = fake::data(&f.root, "done", &fake::result("done"));
    let flood = fake::worker(
        &f.root,
        "tiny",
        &frames,
        &format!("cat '{}' >&0", done.display()),
    );
    let mut events = 0usize;
    let mut forwarded = String::new();
    let started = Instant::now();
    let r = run_tool(&flood, &f.spec(), bash("x"), |t| {
        events += 1;
        forwarded.push_str(t);
    })
    .await
    .unwrap();
    let took = started.elapsed();
    eprintln!(
        "100,000 one-byte frames: {events} events, {} bytes forwarded, in {took:?}",
        forwarded.len()
    );
    assert_eq!(r.content, "done");
    assert!(
        forwarded.bytes().all(|b| b == b'x') && forwarded.len() <= 100_000,
        "forwarded {} bytes, not a prefix of what was sent",
        forwarded.len()
    );
    // A burst, then a few events a second.
    let bound = 64 + took.as_millis() as usize / 25 + 1;
    assert!(
        events <= bound,
        "{events} events in {took:?} (at most {bound})"
    );
}
