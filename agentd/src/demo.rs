//! `agent demo`: the whole system on a scripted model, with no network and no API key.
//!
//! A small repository with a failing test is made in a temp dir; a scripted model is served over
//! real HTTP on 127.0.0.1 in the OpenAI streaming format, so the real provider adapter, loop,
//! policy and sandboxed workers all run. The script reads the test, runs it and sees it fail,
//! sends a malformed call and recovers, tries `rm -rf build` and is blocked by policy, reads the
//! source, fixes it with `str_replace`, re-runs the test and sees it pass.

use crate::agent::dispatch::{Dispatcher, Emit};
use crate::agent::turn::{Agent, Limits};
use crate::inert::inert;
use crate::providers::Provider;
use crate::settings::{ProviderKind, ProviderSettings};
use crate::worker;
use crate::worker::tmp::{Owner, PrivateDir};
use anyhow::{Context as _, Result};
use protocol::event::Event;
use protocol::session::FinishReason;
use protocol::verdict::ApprovalMode;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The demo's policy: the built-ins, plus running the project's test.
const DEMO_POLICY: &str =
    "[policy]\nbash = [{ pattern = \"python3 test_add.py\", action = \"allow\" }]\n";

fn call(id: &str, name: &str, args: &str) -> Vec<Value> {
    vec![
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]
}

fn say_then(text: &str, mut rest: Vec<Value>) -> Vec<Value> {
    let mut out = vec![json!({"choices": [{"index": 0, "delta": {"content": text}}]})];
    out.append(&mut rest);
    out
}

/// The model's side of the conversation, one streamed reply per request.
fn script() -> VecDeque<Vec<Value>> {
    VecDeque::from(vec![
        say_then(
            "Let me look at the test first.\n",
            call("call_1", "read_file", r#"{"path": "test_add.py"}"#),
        ),
        say_then(
            "Running it to see the failure.\n",
            call("call_2", "bash", r#"{"command": "python3 test_add.py"}"#),
        ),
        say_then(
            "Now the source.\n",
            call("call_3", "read_file", r#"{"path": "add.py""#),
        ),
        say_then(
            "My arguments were not valid JSON; again.\n",
            call("call_4", "read_file", r#"{"path": "add.py"}"#),
        ),
        say_then(
            "Let me clear old build output first.\n",
            call("call_5", "bash", r#"{"command": "rm -rf build"}"#),
        ),
        say_then(
            "Blocked, and it was not needed. add() subtracts; fixing it.\n",
            call(
                "call_6",
                "str_replace",
                r#"{"path": "add.py", "old": "return a - b", "new": "return a + b"}"#,
            ),
        ),
        say_then(
            "Re-running the test.\n",
            call("call_7", "bash", r#"{"command": "python3 test_add.py"}"#),
        ),
        vec![
            json!({"choices": [{"index": 0, "delta": {"content": "Fixed: add() returned a - b; it returns a + b now, and the test passes."}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 90}}),
        ],
    ])
}

/// Serves the script over HTTP/1.1 on 127.0.0.1; returns the API root.
async fn serve(script: VecDeque<Vec<Value>>) -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot listen on 127.0.0.1")?;
    let addr = listener.local_addr()?;
    let script = Arc::new(Mutex::new(script));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                // Read the request: headers, then Content-Length bytes of body.
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                loop {
                    let Ok(n) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let events = script
                    .lock()
                    .ok()
                    .and_then(|mut s| s.pop_front())
                    .unwrap_or_default();
                let mut body = String::from(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
                );
                for e in events {
                    body.push_str(&format!("data: {e}\n\n"));
                }
                body.push_str("data: [DONE]\n\n");
                let _ = stream.write_all(body.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    Ok(format!("http://{addr}/v1"))
}

/// Whether stdout takes styling: a terminal, and `NO_COLOR` unset or empty (no-color.org).
fn styled() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn print_event(event: &Event, out: &Mutex<std::io::Stdout>, styled: bool) {
    let Ok(mut out) = out.lock() else { return };
    match event {
        // Our own bold around the model's text (at a terminal), which is made inert like the
        // tools' output.
        Event::AssistantTextDelta(d) if styled => {
            let _ = write!(out, "\x1b[1m{}\x1b[0m", inert(&d.text));
        }
        Event::AssistantTextDelta(d) => {
            let _ = write!(out, "{}", inert(&d.text));
        }
        Event::ToolCallStarted(s) => {
            let _ = writeln!(
                out,
                "  ▶ {} {}   [{}: {}]",
                inert(&s.call.name),
                inert(&s.call.arguments),
                s.verdict,
                inert(&s.reason)
            );
        }
        Event::ToolCallFinished(f) => {
            let lines: Vec<&str> = f.content.lines().collect();
            for line in lines.iter().take(6) {
                let _ = writeln!(out, "    │ {}", inert(line));
            }
            if lines.len() > 6 {
                let _ = writeln!(out, "    │ … {} more lines", lines.len() - 6);
            }
            let _ = writeln!(out, "    └ {:?} in {} ms\n", f.status, f.duration_ms);
        }
        Event::TurnFinished(t) => {
            let _ = writeln!(
                out,
                "\n\nturn finished: {:?} ({} tokens in, {} out)",
                t.reason, t.usage.input_tokens, t.usage.output_tokens
            );
        }
        _ => {}
    }
    let _ = out.flush();
}

/// Runs the demo; returns the exit code.
pub fn run() -> Result<i32> {
    // A private dir (random name, 0700, ours) holds the repository and the calls' temp root.
    let base = PrivateDir::create(&std::env::temp_dir(), "agentd-demo-", Owner::current())
        .context("cannot create the demo's temp dir")?;
    let repo = base.path().join("repo");
    std::fs::create_dir(&repo).with_context(|| format!("cannot create {}", repo.display()))?;
    std::fs::write(repo.join("add.py"), "def add(a, b):\n    return a - b\n")?;
    std::fs::write(
        repo.join("test_add.py"),
        "from add import add\n\nassert add(2, 3) == 5, f\"add(2, 3) returned {add(2, 3)}\"\nprint(\"ok: 1 test passed\")\n",
    )?;
    let tmp = base.path().join("tmp");
    std::fs::create_dir(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    println!("agent demo — a scripted model fixes a failing test. No network, no API key.");
    println!(
        "repository: {} (every tool call runs in a fresh Landlock + seccomp sandbox)\n",
        repo.display()
    );
    let worker_bin = worker::locate_worker().context("cannot find the tool-worker binary beside agent (build with `cargo build --release --bins`)")?;
    let policy = policy::Policy::from_config(DEMO_POLICY, "<demo policy>")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(async {
        let base_url = serve(script()).await?;
        let settings = ProviderSettings {
            kind: ProviderKind::OpenAi,
            base_url,
            api_key: None,
            model: "scripted-demo-model".into(),
        };
        let provider = Provider::from_settings(&settings)?;
        let sandbox = worker::default_sandbox(repo.canonicalize()?, tmp.clone(), None);
        let dispatcher = Arc::new(Dispatcher {
            policy: Arc::new(policy),
            mode: ApprovalMode::Never,
            workers: worker::WorkerPool::new(worker_bin, sandbox, 1),
            home: std::env::var_os("HOME").map(PathBuf::from),
            approver: crate::agent::approval::Approver::Nobody,
            approvals: AtomicU64::new(0),
            session: Default::default(),
        });
        let out = Arc::new(Mutex::new(std::io::stdout()));
        let styled = styled();
        let emit: Emit = Arc::new(move |e: Event| print_event(&e, &out, styled));
        let mut agent = Agent::new(
            provider,
            settings.model.clone(),
            dispatcher,
            Limits {
                max_steps: 12,
                ..Limits::default()
            },
            emit,
        );
        println!("user: make the tests pass\n");
        anyhow::Ok(agent.run_turn("make the tests pass").await)
    })?;
    let fixed = std::fs::read_to_string(repo.join("add.py")).unwrap_or_default();
    println!("add.py is now:\n{}", inert(&fixed));
    drop(base);
    Ok(
        if outcome.reason == FinishReason::Done && fixed.contains("a + b") {
            0
        } else {
            1
        },
    )
}
