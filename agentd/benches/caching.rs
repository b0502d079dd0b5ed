//! Prompt caching, measured (issue 20, finding 7): a scripted session of 50 tool-calling steps,
//! each result 10 kB, each request carrying a reminder that changes every step, sent to each
//! provider's mock (the strict mock of the end-to-end suite, over loopback HTTP) as the loop
//! builds it — before each step the history is fitted (stale results cleared), the request built
//! by the provider's adapter and posted.
//!
//! Two ways of fitting and building, on the same session:
//! - `before`: what the code did before prompt caching — one stale result cleared per step
//!   ([`clear_older_than`] at every step), the reminder inside the newest message, no
//!   `cache_control` breakpoints (taken out of the Anthropic body);
//! - `after`: the loop's [`clear_stale`] (batches), the reminder after everything, Anthropic's
//!   breakpoints as the adapter sets them.
//!
//! Per step: the bytes sent, and how much of the previous request is a byte-identical prefix of
//! this one (`reuse`: what a prefix cache written by the previous step can serve; the bytes are
//! compared in the order the providers read a prompt — tools, system, messages — with the
//! `cache_control` markers taken out, since they are not part of the prompt). For Anthropic, the
//! input tokens the mock's prompt cache bills at full price, read, and written. Then totals and
//! what the 50 steps cost at list prices (see [`PRICES`]).
//!
//! `cargo bench -p agentd --bench caching`; `cargo test --all-targets` runs it as a smoke test
//! with 6 steps.

use agentd::context::fit::{clear_older_than, clear_stale};
use agentd::providers::model::{Message, ModelRequest, Role};
use agentd::providers::{anthropic, gemini, openai};
use agentd_e2e::mock_llm::{MockLlm, Reply};
use protocol::event::ToolCall;
use protocol::ids::ToolCallId;
use serde_json::{Value, json};

/// Results kept whole (the default `keep_results_steps`).
const KEEP: usize = 8;
/// List prices, US dollars per million tokens, as published on 2026-12-01: input, cache read,
/// cache write (5 minutes), output. Anthropic Claude Sonnet 4.5
/// (<https://docs.anthropic.com/en/docs/about-claude/pricing>); OpenAI GPT-4.1, whose cached
/// input is 75 % off (<https://openai.com/api/pricing/>); Gemini 2.5 Pro up to 200k tokens, whose
/// implicit cache hits are 75 % off (<https://ai.google.dev/gemini-api/docs/pricing>).
const PRICES: [(&str, f64, f64, f64); 3] = [
    ("openai gpt-4.1", 2.00, 0.50, 2.00),
    ("anthropic claude-sonnet-4-5", 3.00, 0.30, 3.75),
    ("gemini gemini-2.5-pro", 1.25, 0.3125, 1.25),
];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    OpenAi,
    Anthropic,
    Gemini,
}

/// One step as sent: bytes, the prompt in cache order, and Anthropic's billing.
struct Sent {
    bytes: usize,
    prompt: String,
    billed: Option<(u64, u64, u64)>,
}

/// The body without `cache_control` anywhere.
fn strip(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("cache_control");
            o.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

/// The prompt in the order the provider reads it, markers out.
fn prompt_of(body: &Value) -> String {
    let mut body = body.clone();
    strip(&mut body);
    [
        "tools",
        "system",
        "systemInstruction",
        "messages",
        "contents",
    ]
    .iter()
    .map(|k| body.get(*k).map(Value::to_string).unwrap_or_default())
    .collect()
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

fn body_of(kind: Kind, request: &ModelRequest, caching: bool) -> Value {
    match kind {
        Kind::OpenAi => openai::request_body(request, false),
        Kind::Gemini => gemini::request_body(request),
        Kind::Anthropic => {
            let mut body = anthropic::request_body(request, false);
            if !caching {
                strip(&mut body);
            }
            body
        }
    }
}

/// Runs the session on `kind`'s mock, fitted and built the new way when `caching`.
async fn session(kind: Kind, caching: bool, steps: u64) -> Vec<Sent> {
    let reply = match kind {
        Kind::Anthropic => json!({"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 40}}),
        _ => json!({}),
    };
    let mock = MockLlm::responding(move |_| Reply::ok(reply.clone())).await;
    mock.count_prompt_cache();
    let path = match kind {
        Kind::OpenAi => "/v1/chat/completions",
        Kind::Anthropic => "/v1/messages",
        Kind::Gemini => "/v1beta/models/gemini-2.5-pro:generateContent",
    };
    let system = "You are a coding agent. ".repeat(250);
    let mut messages = vec![
        Message::text(Role::System, system),
        Message::text(Role::User, "make the tests pass"),
    ];
    let mut out = Vec::new();
    for step in 0..steps {
        if caching {
            clear_stale(&mut messages, KEEP);
        } else {
            clear_older_than(&mut messages, KEEP);
        }
        let mut request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            messages: messages.clone(),
            tools: agentd::agent::tools::specs().to_vec(),
            max_tokens: None,
            reminder: Some(format!("Todo: step {step} of the plan is in progress.\n")),
        };
        if !caching {
            request.messages = request.messages_with_reminder().into_owned();
            request.reminder = None;
        }
        let body = body_of(kind, &request, caching);
        let (status, answer) = mock.post(path, &body).await;
        assert_eq!(status, 200, "the mock refused step {step}: {answer}");
        let usage = &answer["usage"];
        let n = |k: &str| usage[k].as_u64().unwrap_or(0);
        out.push(Sent {
            bytes: body.to_string().len(),
            prompt: prompt_of(&body),
            billed: (kind == Kind::Anthropic).then(|| {
                (
                    n("input_tokens"),
                    n("cache_read_input_tokens"),
                    n("cache_creation_input_tokens"),
                )
            }),
        });
        let call = ToolCall {
            id: ToolCallId::generated(step),
            name: "bash".into(),
            arguments: format!(r#"{{"command": "cargo test --test t{step}"}}"#),
        };
        messages.push(Message {
            tool_calls: vec![call.clone()],
            ..Message::text(Role::Assistant, "")
        });
        let result = format!("test t{step} ... ").repeat(10_000 / 16);
        messages.push(Message::tool_result(&call, result));
    }
    out
}

/// The share of the previous request that begins this one, per step (100 for the first).
fn reuse(sent: &[Sent]) -> Vec<f64> {
    std::iter::once(100.0)
        .chain(sent.windows(2).map(|w| {
            100.0 * common_prefix(&w[0].prompt, &w[1].prompt) as f64 / w[0].prompt.len() as f64
        }))
        .collect()
}

fn dollars(tokens: u64, per_million: f64) -> f64 {
    tokens as f64 * per_million / 1e6
}

fn report(name: &str, kind: Kind, before: &[Sent], after: &[Sent]) {
    let (rb, ra) = (reuse(before), reuse(after));
    println!("\n{name}");
    print!(
        "{:>4} {:>9} {:>7} | {:>9} {:>7}",
        "step", "B before", "reuse%", "B after", "reuse%"
    );
    if kind == Kind::Anthropic {
        print!(
            " | {:>11} | {:>10} {:>10} {:>10}",
            "full before", "full after", "read", "written"
        );
    }
    println!();
    for i in 0..after.len() {
        print!(
            "{:>4} {:>9} {:>7.1} | {:>9} {:>7.1}",
            i + 1,
            before[i].bytes,
            rb[i],
            after[i].bytes,
            ra[i]
        );
        if let (Some(b), Some(a)) = (before[i].billed, after[i].billed) {
            print!(" | {:>11} | {:>10} {:>10} {:>10}", b.0, a.0, a.1, a.2);
        }
        println!();
    }
    let from3 = |r: &[f64]| r.iter().skip(2).copied().fold(100.0, f64::min);
    let low = |r: &[f64]| r.iter().skip(2).filter(|x| **x < 90.0).count();
    let bytes = |s: &[Sent]| s.iter().map(|s| s.bytes).sum::<usize>();
    println!(
        "bytes sent: {} before, {} after; reuse from step 3: min {:.1} % before ({} steps under 90 %), min {:.1} % after ({} steps under 90 %)",
        bytes(before),
        bytes(after),
        from3(&rb),
        low(&rb),
        from3(&ra),
        low(&ra)
    );
    let (_, input, read, write) = PRICES[kind as usize];
    let tokens = |s: &[Sent]| -> (u64, u64, u64) {
        s.iter()
            .map(|s| {
                s.billed
                    .unwrap_or((agentd_e2e::mock_llm::context::tokens_of(s.bytes), 0, 0))
            })
            .fold((0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2))
    };
    let (b, a) = (tokens(before), tokens(after));
    if kind == Kind::Anthropic {
        let cost =
            |t: (u64, u64, u64)| dollars(t.0, input) + dollars(t.1, read) + dollars(t.2, write);
        println!(
            "input tokens at full price: {} before, {} after ({:.1} % less); read {}, written {}; input cost at list price: ${:.2} before, ${:.2} after",
            b.0,
            a.0,
            100.0 * (1.0 - a.0 as f64 / b.0.max(1) as f64),
            a.1,
            a.2,
            cost(b),
            cost(a)
        );
    } else {
        // An automatic cache reads, at best, the part of each request the previous one began
        // with (its tokens counted as bytes / 4); the rest is full price.
        let cost = |s: &[Sent], r: &[f64]| {
            s.iter()
                .zip(std::iter::once(None).chain(s.iter().map(Some)))
                .zip(r)
                .map(|((now, prev), share)| {
                    let all = agentd_e2e::mock_llm::context::tokens_of(now.bytes);
                    let cached = prev.map_or(0, |p| {
                        (agentd_e2e::mock_llm::context::tokens_of(p.bytes) as f64 * share / 100.0)
                            as u64
                    });
                    dollars(all - cached.min(all), input) + dollars(cached.min(all), read)
                })
                .sum::<f64>()
        };
        println!(
            "input tokens: {} before, {} after; input cost at list price with every reused prefix read from the cache: ${:.2} before, ${:.2} after",
            b.0,
            a.0,
            cost(before, &rb),
            cost(after, &ra)
        );
    }
}

fn main() -> std::io::Result<()> {
    let steps = if std::env::args().any(|a| a == "--bench") {
        50
    } else {
        6
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!(
        "{steps} steps, 10 kB results, results kept whole for {KEEP} steps; B = bytes sent; reuse% = share of the previous request that begins this one; Anthropic tokens as its prompt cache bills them"
    );
    for (kind, name) in [
        (Kind::OpenAi, PRICES[0].0),
        (Kind::Anthropic, PRICES[1].0),
        (Kind::Gemini, PRICES[2].0),
    ] {
        let before = runtime.block_on(session(kind, false, steps));
        let after = runtime.block_on(session(kind, true, steps));
        report(name, kind, &before, &after);
    }
    Ok(())
}
