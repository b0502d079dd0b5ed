//! Cost of building a model request as the history grows: 10, 100 and 1000 turns (each a user
//! message, two tool-calling steps with a 2 kB and a 40 kB result, and an answer), with stale
//! results cleared to notes as the loop does, then the body each provider adapter sends,
//! serialised. Prints µs per build (median of 30) and the bytes sent, in one table.
//!
//! `cargo bench -p agentd --bench request_build`.

use agentd::context::fit::{Window, clear_stale, estimate_all};
use agentd::providers::model::{Message, ModelRequest, Role};
use agentd::providers::{anthropic, gemini, openai};
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;
use std::time::{Duration, Instant};

fn history(turns: usize) -> Vec<Message> {
    let mut out = vec![Message::text(Role::System, "s".repeat(3000))];
    let mut n = 0;
    for t in 0..turns {
        out.push(Message::text(
            Role::User,
            format!("task {t}: make the tests pass"),
        ));
        for size in [2_000, 40_000] {
            n += 1;
            let call = ToolCall {
                id: ToolCallId::generated(n),
                name: "bash".into(),
                arguments: r#"{"command": "cargo test"}"#.into(),
            };
            out.push(Message {
                tool_calls: vec![call.clone()],
                ..Message::text(Role::Assistant, "")
            });
            out.push(Message::tool_result(&call, "x".repeat(size)));
        }
        out.push(Message::text(Role::Assistant, "done"));
    }
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let tools = agentd::agent::tools::specs().to_vec();
    let window = Window::new(10_000_000);
    println!(
        "{:>6} {:>9} {:>12} | {:>12} {:>12} {:>12} | {:>10} {:>10} {:>10}",
        "turns",
        "messages",
        "est. tokens",
        "openai µs",
        "anthropic µs",
        "gemini µs",
        "openai B",
        "anthropic B",
        "gemini B"
    );
    for turns in [10, 100, 1000] {
        let base = history(turns);
        let mut times = [Vec::new(), Vec::new(), Vec::new()];
        let mut bytes = [0usize; 3];
        for _ in 0..30 {
            for (k, times) in times.iter_mut().enumerate() {
                let start = Instant::now();
                let mut messages = base.clone();
                clear_stale(&mut messages, window.keep_results_steps);
                let tokens = estimate_all(&messages);
                let request = ModelRequest {
                    model: "m".into(),
                    messages,
                    tools: tools.clone(),
                    max_tokens: None,
                    reminder: None,
                };
                let body = match k {
                    0 => openai::request_body(&request, true),
                    1 => anthropic::request_body(&request, true),
                    _ => gemini::request_body(&request),
                };
                let sent = body.to_string();
                times.push(start.elapsed());
                bytes[k] = sent.len();
                std::hint::black_box((tokens, sent));
            }
        }
        let mut cleared = base.clone();
        clear_stale(&mut cleared, window.keep_results_steps);
        let [o, a, g] = times.map(|t| median(t).as_secs_f64() * 1e6);
        println!(
            "{turns:>6} {:>9} {:>12} | {o:>12.0} {a:>12.0} {g:>12.0} | {:>10} {:>10} {:>10}",
            base.len(),
            estimate_all(&cleared),
            bytes[0],
            bytes[1],
            bytes[2]
        );
    }
    println!(
        "(the history is cloned, cleared, estimated, built and serialised on each build, as the loop does per step; results older than the newest 8 tool steps are one-line notes)"
    );
}
