//! `agent run`: one task, headless, with an in-process supervisor (no daemon needed).

use crate::agent::dispatch::{Dispatcher, Emit};
use crate::agent::turn::{Agent, Limits};
use crate::inert::{self, inert};
use crate::providers::Provider;
use crate::settings::{self, Overrides};
use crate::worker;
use crate::worker::tmp::{Owner, PrivateDir};
use anyhow::{Context as _, Result};
use protocol::event::{Event, EventEnvelope};
use protocol::ids::{Seq, SessionId};
use protocol::session::FinishReason;
use protocol::verdict::ApprovalMode;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Arguments of `agent run`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 when the model finished; 1 for any other end (max steps, timeout, token budget, error); 2 for usage or configuration errors.\n\nThe model comes from PROVIDER, BASE_URL, API_KEY and MODEL in the environment or ~/.agents/env."
)]
pub struct RunArgs {
    /// The task.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: String,
    /// The repository to work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// How to print: the final answer (text), one final JSON object (json), or every event as a JSON line (stream-json).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json", "stream-json"])]
    pub output_format: String,
    /// When to ask a human: on-risk (ask verdicts), always, never (ask becomes deny).
    #[arg(long, value_name = "MODE", default_value = "on-risk", value_parser = ["on-risk", "always", "never"])]
    pub approval: String,
    /// Model calls in the turn at most.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: u32,
    /// Wall-clock limit of the turn, in seconds.
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Tokens (input + output) the turn may use.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u64>,
    /// The model's context window, tokens: past 85 % of it the older history is summarised
    /// [default: provider.context_window in the config, else 128000].
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1000..))]
    pub context_window: Option<u64>,
    /// Tool calls of one model message run at once.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_parallel: u32,
    /// Tool-workers kept started and locked down ahead of the next call (0: start each at the call).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=16))]
    pub ready_workers: u32,
    /// Config file ([provider], [policy]); default: $XDG_CONFIG_HOME/agentd/config.toml, else /etc/agentd/config.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override PROVIDER (openai, anthropic, gemini).
    #[arg(long)]
    pub provider: Option<String>,
    /// Override MODEL.
    #[arg(long)]
    pub model: Option<String>,
    /// Continue the stored session ID (see `agent sessions`): its history goes to the model
    /// before PROMPT, and the run is appended to its log.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Where sessions are kept [default: $XDG_STATE_HOME/agentd, else ~/.local/state/agentd].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Run every call without policy checks. The sandbox still applies.
    #[arg(long)]
    pub dangerously_skip_permissions: bool,
}

fn session_id() -> SessionId {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    SessionId::generate(ms, std::process::id())
}

/// Runs `agent run`; returns the exit code.
pub fn run(args: RunArgs) -> Result<i32> {
    let store = super::run_session::store(args.state_dir.as_deref())?;
    let resumed = match &args.resume {
        Some(id) => Some(super::run_session::reopen(store.as_ref(), id)?),
        None => None,
    };
    let workspace = match (&args.workspace, &resumed) {
        (None, Some(r)) => r.workspace.clone(),
        (Some(w), _) => w.clone(),
        (None, None) => {
            std::env::current_dir().context("cannot determine the current directory")?
        }
    };
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {} does not exist", workspace.display()))?;
    if let Some(r) = &resumed
        && r.workspace != workspace
    {
        anyhow::bail!(
            "session {} works in {}, not {}: resume it there (or leave out --workspace)",
            r.id.as_str(),
            r.workspace.display(),
            workspace.display()
        );
    }
    let overrides = Overrides {
        provider: args.provider.clone(),
        base_url: None,
        model: args.model.clone(),
    };
    let config_path = args
        .config
        .clone()
        .or_else(super::policy_check::default_config_path);
    let (config, config_text, policy) = match &config_path {
        Some(path) => {
            let (config, text) = crate::config::load(path)?;
            let policy = policy::Policy::from_config(&text, &path.display().to_string())?;
            (config, text, policy)
        }
        None => (
            crate::config::ConfigFile::default(),
            String::new(),
            policy::Policy::builtin()?,
        ),
    };
    let settings = settings::resolve_layered(
        config.provider.as_ref(),
        settings::default_env_file().as_deref(),
        &overrides,
    )?;
    let mut provider = Provider::from_settings(&settings)?;
    provider.configure(config.provider.as_ref());
    let mode = if args.dangerously_skip_permissions {
        ApprovalMode::SkipPermissions
    } else {
        match args.approval.as_str() {
            "always" => ApprovalMode::Always,
            "never" => ApprovalMode::Never,
            _ => ApprovalMode::OnRisk,
        }
    };
    let asks = matches!(mode, ApprovalMode::OnRisk | ApprovalMode::Always);
    let approver = if asks
        && std::io::stdin().is_terminal()
        && std::fs::File::open("/dev/tty").is_ok()
    {
        crate::agent::approval::Approver::terminal()
    } else {
        if asks {
            eprintln!(
                "agent: there is no terminal to ask: calls that need approval are refused (use --approval never to say so, or a config that allows them)"
            );
        }
        crate::agent::approval::Approver::Nobody
    };
    let worker_bin = worker::locate_worker().context(
        "cannot find the tool-worker binary beside agent; set AGENTD_TOOL_WORKER to its path",
    )?;
    // The session's temp root; each call gets a private dir inside it (see worker::tmp).
    let tmp = PrivateDir::create(&std::env::temp_dir(), "agentd-run-", Owner::current())
        .context("cannot create the session's temp dir")?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut sandbox =
        worker::default_sandbox(workspace.clone(), tmp.path().to_owned(), home.as_deref());
    sandbox.network = policy.network() == protocol::verdict::Verdict::Allow;
    if let (Some(section), Some(path)) = (&config.sandbox, &config_path) {
        section.apply(&mut sandbox, &config_text, &path.display().to_string())?;
    }
    let (log, resumed) = match resumed {
        Some(r) => (Some(r.log), Some(r.records)),
        None => (
            super::run_session::create(store.as_ref(), &workspace, &settings.model)?,
            None,
        ),
    };
    // Big outputs are kept whole and spilled to the session's folder, which every call may read.
    let spill = match &log {
        Some(log) => Some(
            log.lock()
                .map_err(|_| anyhow::anyhow!("the session log's lock is poisoned"))?
                .spill_dir()?,
        ),
        None => None,
    };
    if let Some(dir) = &spill {
        sandbox.read_paths.push(dir.clone());
        sandbox.limits.output_cap_bytes = crate::agent::spill::SPILL_CAP;
    }
    let dispatcher = Arc::new(Dispatcher {
        policy: Arc::new(policy),
        mode,
        workers: worker::WorkerPool::new(worker_bin, sandbox, args.ready_workers as usize),
        home,
        approver,
        approvals: AtomicU64::new(0),
        session: Default::default(),
    });
    if let Some(dir) = spill {
        dispatcher.session.set_spill_dir(dir);
    }
    let session = log
        .as_ref()
        .and_then(|l| l.lock().ok().map(|l| l.id().clone()))
        .unwrap_or_else(session_id);
    let format = args.output_format.clone();
    let seq = Arc::new(AtomicU64::new(0));
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let emit: Emit = {
        let (session, format, out, log) =
            (session.clone(), format.clone(), out.clone(), log.clone());
        Arc::new(move |event: Event| {
            // The store numbers and keeps the event before anyone is shown it.
            let n = match &log {
                Some(log) => super::run_session::persist(log, &event),
                None => seq.fetch_add(1, Ordering::Relaxed) + 1,
            };
            match format.as_str() {
                "stream-json" => {
                    let envelope = EventEnvelope {
                        session: session.clone(),
                        seq: Seq(n),
                        event,
                    };
                    if let (Ok(line), Ok(mut out)) = (serde_json::to_string(&envelope), out.lock())
                    {
                        let _ = writeln!(out, "{}", inert::json(&line));
                        let _ = out.flush();
                    }
                }
                "text" => describe(&event),
                _ => {}
            }
        })
    };
    let limits = Limits {
        max_steps: args.max_steps,
        timeout: args
            .timeout
            .filter(|t| *t > 0.0)
            .map(Duration::from_secs_f64),
        token_budget: args.token_budget,
        max_parallel: args.max_parallel as usize,
        window: crate::context::fit::Window::new(
            args.context_window
                .or(config.provider.as_ref().and_then(|p| p.context_window))
                .unwrap_or(crate::agent::DEFAULT_WINDOW),
        ),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut agent = Agent::new(provider, settings.model.clone(), dispatcher, limits, emit);
    if let (Some(records), Some(system)) = (resumed, agent.system_message().cloned()) {
        let (messages, turns) = crate::agent::resume::conversation(system, &records);
        agent.resume_from(messages, turns);
        agent
            .dispatcher
            .session
            .restore_todos(crate::agent::resume::todos(&records));
    }
    let outcome = runtime.block_on(async {
        // Workers lock down while the model thinks about its first answer.
        agent.dispatcher.workers.warm_up();
        // Ctrl-C (SIGINT) stops the turn: running calls are killed and answered as interrupted,
        // the history stays well formed, and the outcome is printed as usual.
        let interrupt = agent.interrupt.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupt.trigger();
            }
        });
        agent.run_turn(&args.prompt).await
    });
    // The pool's waiting worker is killed, reaped and its cgroup removed before its temp dir goes.
    drop(agent);
    drop(tmp);
    match format.as_str() {
        "json" => {
            let calls: Vec<serde_json::Value> = outcome
                .tool_calls
                .iter()
                .map(|(c, status)| serde_json::json!({"id": c.id.as_str(), "name": c.name, "arguments": c.arguments, "status": status}))
                .collect();
            let v = serde_json::json!({
                "result": outcome.final_text,
                "finish_reason": outcome.reason,
                "message": outcome.message,
                "usage": outcome.usage,
                "session_id": session,
                "tool_calls": calls,
            });
            // The same value, with what serde leaves raw (C1, bidi) escaped too.
            println!("{}", inert::json(&v.to_string()));
        }
        "text" => {
            println!("{}", inert(&outcome.final_text));
            if let Some(m) = &outcome.message {
                eprintln!("agent: the turn ended ({:?}): {}", outcome.reason, inert(m));
            }
        }
        _ => {}
    }
    Ok(if outcome.reason == FinishReason::Done {
        0
    } else {
        1
    })
}

/// Tool activity on stderr, for `--output-format text`. The model's and the tools' words are
/// made [`inert`]: they reach a terminal.
fn describe(event: &Event) {
    match event {
        Event::ToolCallStarted(s) => eprintln!(
            "→ {} {} [{}: {}]",
            inert(&s.call.name),
            inert(&s.call.arguments),
            s.verdict,
            inert(&s.reason)
        ),
        Event::ToolCallFinished(f) => {
            let first = f.content.lines().next().unwrap_or_default();
            let first: String = first.chars().take(100).collect();
            eprintln!("  {:?} ({} ms) {}", f.status, f.duration_ms, inert(&first));
        }
        _ => {}
    }
}
