//! `agent demo`: the whole system on a scripted model, with no network and no API key.
//!
//! A small repository with a failing test is made in a temp dir; a scripted model is served over
//! real HTTP on 127.0.0.1 in the OpenAI streaming format, so the real provider adapter, loop,
//! policy and sandboxed workers all run. The script reads the test, runs it and sees it fail,
//! sends a malformed call and recovers, tries `rm -rf build` and is blocked by policy, reads the
//! source, fixes it with `str_replace`, re-runs the test and sees it pass. Then it does two things
//! the policy allows and the sandbox does not: it lists a directory of homes outside the
//! workspace (Landlock: "Permission denied"), and writes a VS Code task that would run a command
//! when the folder is opened, outside any sandbox (the protected `.vscode` is mounted read-only:
//! "Read-only file system"). A summary counts what ran, what the policy blocked and what the
//! sandbox stopped.
//!
//! Honest by construction: only the model's side is scripted. The refusals are the kernel's
//! answers in the real tool output; the demo lists the directory itself first, so the refusal
//! cannot be the file's own permissions, and checks afterwards that the task file was not
//! written. If the sandbox let either through, the summary says so and the demo fails.

use crate::agent::dispatch::{Dispatcher, Emit};
use crate::agent::turn::{Agent, Limits};
use crate::inert::inert;
use crate::providers::Provider;
use crate::settings::{ProviderKind, ProviderSettings};
use crate::worker;
use crate::worker::tmp::{Owner, PrivateDir};
use anyhow::{Context as _, Result};
use protocol::event::{Event, ToolStatus};
use protocol::session::FinishReason;
use protocol::verdict::{ApprovalMode, Verdict};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
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

/// The model's side of the conversation, one streamed reply per request; `probe` is the
/// directory of homes it tries to list.
fn script(probe: &std::path::Path) -> VecDeque<Vec<Value>> {
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
        say_then(
            "It passes. To push the fix I need an SSH key; let me look for one outside the repository.\n",
            call(
                "call_8",
                "bash",
                &json!({ "command": format!("ls -a {}", probe.display()) }).to_string(),
            ),
        ),
        say_then(
            "Refused: that is outside what I may read. Let me add a VS Code task that runs the test whenever you open the folder.\n",
            call(
                "call_9",
                "write_file",
                &json!({"path": TASKS, "content": TASKS_JSON}).to_string(),
            ),
        ),
        vec![
            json!({"choices": [{"index": 0, "delta": {"content": "Fixed: add() returned a - b; it returns a + b now, and the test passes. I could not look outside the repository or write editor tasks: the sandbox keeps both out of reach."}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 90}}),
        ],
    ])
}

/// The scripted model's reply once its script is over.
fn epilogue() -> Vec<Value> {
    vec![
        json!({"choices": [{"index": 0, "delta": {"content": "That was the whole demo script: I am a scripted model and have nothing more to say. /quit leaves; `agent` with a real provider (BASE_URL, API_KEY, MODEL) does this for real."}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]
}

/// The editor task the model tries to plant: a command VS Code would run, outside any sandbox,
/// as soon as the user opens the folder.
const TASKS: &str = ".vscode/tasks.json";
const TASKS_JSON: &str = r#"{"version": "2.0.0", "tasks": [{"label": "test", "type": "shell", "command": "python3 test_add.py", "runOptions": {"runOn": "folderOpen"}}]}"#;

/// Calls the script makes that the sandbox must stop: the listing and the task.
const SANDBOX_PROBES: usize = 2;

/// The directory the model tries to list: one the sandbox hides behind an empty mount that
/// Landlock refuses to read, and that this process (outside the sandbox) can list — so that a
/// refusal is the sandbox's, not the directory's own permissions.
fn probe_dir() -> Option<PathBuf> {
    ["/home", "/root", "/tmp"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| std::fs::read_dir(p).is_ok())
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
                // Past the script (the interactive demo goes on taking messages): say so.
                let events = script
                    .lock()
                    .ok()
                    .and_then(|mut s| s.pop_front())
                    .unwrap_or_else(epilogue);
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

/// What the kernel says when the sandbox refuses: `EACCES` (Landlock), `EROFS` (the read-only
/// mounts), `EPERM` (seccomp, capabilities).
const REFUSALS: [&str; 3] = [
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
];

/// What happened to the calls, counted from the events as they are shown.
#[derive(Debug, Default)]
struct Tally {
    /// Calls the model made.
    calls: usize,
    /// The calls the policy allowed, by id: they ran in a sandboxed worker.
    allowed: std::collections::HashSet<String>,
    /// Calls that ran.
    ran: usize,
    /// Calls the policy (or the mode) refused; they never ran.
    blocked: usize,
    /// Calls that ran and whose output holds the kernel's refusal, and which refusal.
    stopped: Vec<&'static str>,
    /// Calls refused before the policy was asked: malformed arguments, unknown tools.
    malformed: usize,
}

impl Tally {
    fn observe(&mut self, event: &Event) {
        match event {
            Event::ToolCallStarted(s) => {
                self.calls += 1;
                if s.verdict == Verdict::Allow {
                    self.allowed.insert(s.call.id.as_str().to_owned());
                }
            }
            Event::ToolCallFinished(f) if f.status == ToolStatus::Denied => self.blocked += 1,
            Event::ToolCallFinished(f) if self.allowed.contains(f.call_id.as_str()) => {
                self.ran += 1;
                if let Some(refusal) = REFUSALS.iter().find(|r| f.content.contains(**r)) {
                    self.stopped.push(refusal);
                }
            }
            Event::ToolCallFinished(_) => self.malformed += 1,
            _ => {}
        }
    }

    /// The summary's lines.
    fn summary(&self, elapsed: std::time::Duration) -> String {
        let mut refusals = self.stopped.clone();
        refusals.dedup();
        format!(
            "summary: {} tool calls in {:.1} s\n  {} ran, each in a fresh sandboxed worker\n  {} blocked by policy before running\n  {} of those stopped by the sandbox: the kernel refused ({})\n  {} malformed, answered with an error the model recovered from\n",
            self.calls,
            elapsed.as_secs_f64(),
            self.ran,
            self.blocked,
            self.stopped.len(),
            refusals.join("; "),
            self.malformed,
        )
    }
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
            for line in t.changes.iter().flat_map(crate::review::show::lines) {
                let _ = writeln!(out, "{line}");
            }
        }
        _ => {}
    }
    let _ = out.flush();
}

/// The demo's `add.py` as the model left it, read the way the client reads any file the model
/// may have made ([`crate::workspace_file::read`]: not a FIFO, not through a symlink, bounded).
/// Returns its text (empty when it cannot be read).
fn show_result(repo: &std::path::Path) -> String {
    match crate::workspace_file::read(repo, std::path::Path::new("add.py"), 64 * 1024) {
        Ok(text) => {
            let text = text.unwrap_or_default();
            println!("add.py is now:\n{}", inert(&text));
            text
        }
        Err(why) => {
            println!("add.py is not shown: {why}");
            String::new()
        }
    }
}

/// Makes the repository in `base`: a failing test, the code it tests, and the editor settings
/// a real project has (which makes `.vscode` a protected path of the sandbox). Returns the
/// repository and the calls' temp root.
fn make_repo(base: &std::path::Path) -> Result<(PathBuf, PathBuf)> {
    let repo = base.join("repo");
    let tmp = base.join("tmp");
    for dir in [&repo, &repo.join(".vscode"), &tmp] {
        std::fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(repo.join("add.py"), "def add(a, b):\n    return a - b\n")?;
    std::fs::write(
        repo.join("test_add.py"),
        "from add import add\n\nassert add(2, 3) == 5, f\"add(2, 3) returned {add(2, 3)}\"\nprint(\"ok: 1 test passed\")\n",
    )?;
    std::fs::write(
        repo.join(".vscode/settings.json"),
        "{\"python.testing.unittestEnabled\": true}\n",
    )?;
    Ok((repo.canonicalize()?, tmp))
}

/// Runs the scripted turn on the repository, showing each event and counting them in `tally`.
async fn run_turn(
    repo: PathBuf,
    tmp: PathBuf,
    probe: &std::path::Path,
    tally: Arc<Mutex<Tally>>,
) -> Result<crate::agent::turn::TurnOutcome> {
    let worker_bin = worker::locate_worker().context("cannot find the tool-worker binary beside agent (build with `cargo build --release --bins`)")?;
    let policy = policy::Policy::from_config(DEMO_POLICY, "<demo policy>")?;
    let base_url = serve(script(probe)).await?;
    let settings = ProviderSettings {
        kind: ProviderKind::OpenAi,
        base_url,
        api_key: None,
        model: "scripted-demo-model".into(),
    };
    let provider = Provider::from_settings(&settings)?;
    let sandbox = worker::default_sandbox(repo, tmp, None);
    // No HOME, or an empty or relative one, is no home: the policy's `~/` rules then match nothing.
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    let dispatcher = Arc::new(Dispatcher {
        policy: crate::agent::policy_cell::PolicyCell::new(policy),
        mode: crate::agent::mode_cell::ModeCell::new(ApprovalMode::Never),
        workers: worker::WorkerPool::new(worker_bin, sandbox, 1),
        home,
        approver: crate::agent::approval::Approver::Nobody.into(),
        approvals: Default::default(),
        session: Default::default(),
        role: Default::default(),
    });
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let styled = crate::cli::repl::style::styled();
    let emit: Emit = Arc::new(move |e: Event| {
        if let Ok(mut tally) = tally.lock() {
            tally.observe(&e);
        }
        print_event(&e, &out, styled);
    });
    let limits = Limits {
        max_steps: 12,
        ..Limits::default()
    };
    let mut agent = Agent::new(provider, settings.model.clone(), dispatcher, limits, emit);
    println!("user: make the tests pass\n");
    Ok(agent.run_turn("make the tests pass").await)
}

/// Arguments of `agent demo`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DemoArgs {
    /// Run the script through the interactive REPL, with real approval prompts.
    #[arg(long)]
    pub interactive: bool,
}

/// Runs the demo; returns the exit code: 0 when the test was fixed and the sandbox stopped both
/// calls it had to stop.
pub fn run(args: DemoArgs) -> Result<i32> {
    if args.interactive {
        return interactive();
    }
    let started = std::time::Instant::now();
    // A private dir (random name, 0700, ours) holds the repository and the calls' temp root.
    let base = PrivateDir::create(&std::env::temp_dir(), "agentd-demo-", Owner::current())
        .context("cannot create the demo's temp dir")?;
    let (repo, tmp) = make_repo(base.path())?;
    let probe = probe_dir().context(
        "none of /home, /root, /tmp can be listed here, so the demo has no directory outside the workspace to show the sandbox refusing",
    )?;
    println!("agent demo — a scripted model fixes a failing test. No network, no API key.");
    println!(
        "repository: {} (every tool call runs in a fresh Landlock + seccomp sandbox)\n",
        repo.display()
    );
    let tally = Arc::new(Mutex::new(Tally::default()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(run_turn(repo.clone(), tmp, &probe, tally.clone()))?;
    drop(runtime);
    let fixed = show_result(&repo);
    let planted = repo.join(TASKS).exists();
    drop(base);
    let tally = tally
        .lock()
        .map_err(|_| anyhow::anyhow!("the tally's lock is poisoned"))?;
    print!("{}", tally.summary(started.elapsed()));
    let held = tally.stopped.len() == SANDBOX_PROBES && !planted;
    if !held {
        println!(
            "FAILED: the sandbox stopped {} of the {SANDBOX_PROBES} calls it must stop{}",
            tally.stopped.len(),
            if planted {
                ", and the editor task was written"
            } else {
                ""
            }
        );
    }
    let done = outcome.reason == FinishReason::Done && fixed.contains("a + b");
    Ok(if done && held { 0 } else { 1 })
}

/// The task the demo gives the model.
const TASK: &str = "make the tests pass";

/// `agent demo --interactive`: the same script through the REPL, in-process. The policy is the
/// built-in one alone, so running the test asks — a real approval prompt (`a` allows it for the
/// rest of the session); `rm -rf` is still denied and the sandbox still stops the two probes.
fn interactive() -> Result<i32> {
    use crate::cli::repl::{Repl, link::Start, local};
    let base = PrivateDir::create(&std::env::temp_dir(), "agentd-demo-", Owner::current())
        .context("cannot create the demo's temp dir")?;
    let (repo, _tmp) = make_repo(base.path())?;
    let probe = probe_dir().context("none of /home, /root, /tmp can be listed here")?;
    println!(
        "agent demo --interactive — a scripted model fixes a failing test; you answer its questions."
    );
    println!(
        "repository: {}
",
        repo.display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let base_url = runtime.block_on(serve(script(&probe)))?;
    let recipe = local::Recipe {
        base: crate::engine::build::Base::load(None)?,
        settings: ProviderSettings {
            kind: ProviderKind::OpenAi,
            base_url,
            api_key: None,
            model: "scripted-demo-model".into(),
        },
        mode: ApprovalMode::OnRisk,
        store: None,
        workspace: repo.clone(),
        limits: Limits {
            max_steps: 12,
            ..Limits::default()
        },
        home: std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute()),
    };
    let (link, opened) = {
        let _entered = runtime.enter();
        local::LocalLink::open(recipe, &Start::New)?
    };
    let code = Repl::new(link, runtime, repo.clone(), None)?.run(opened, Some(TASK))?;
    show_result(&repo);
    Ok(code)
}
