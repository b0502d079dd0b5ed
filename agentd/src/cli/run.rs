//! `agent run`: one task, headless, with an in-process supervisor (no daemon needed): a session
//! on the engine, driven through its handle, its events rendered as they come.

use super::run_session::Reopened;
use crate::agent::approval::Approver;
use crate::agent::turn::{Limits, TurnOutcome};
use crate::engine::Stopping;
use crate::engine::build::{self, Base, Plan};
use crate::engine::journal::Journal;
use crate::inert;
use crate::settings::Overrides;
use anyhow::{Context as _, Result};
use protocol::event::{Event, EventEnvelope};
use protocol::ids::SessionId;
use protocol::verdict::ApprovalMode;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `agent run`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 when the model finished; 1 for the turn's limits and errors (max steps, timeout, token budget, interrupted, error); 2 for usage or configuration errors; 3 cut off by the output limit; 4 the model refused; 5 stopped by the provider's content filter; 6 malformed tool calls; 7 the context window is full.\n\nThe model comes from PROVIDER, BASE_URL, API_KEY and MODEL in the environment or ~/.agents/env."
)]
pub struct RunArgs {
    /// The task; `-` reads it from standard input, as does a piped stdin without -p.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
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
    /// [default: provider.context_window in the config, else the model's own, 32768 for an unknown model].
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1000..))]
    pub context_window: Option<u64>,
    /// Tool calls of one model message run at once.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_parallel: u32,
    /// Tool-workers kept started and locked down ahead of the next call (0: start each at the call).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=16))]
    pub ready_workers: u32,
    /// A read-only session: the workspace is readable, not writable, by every call (the sandbox's
    /// read-only profile), and the model is not offered write_file or str_replace — for
    /// reviewing or exploring code the model must not change.
    #[arg(long)]
    pub read_only: bool,
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
    /// Allow a workspace that is `/`, a home or holds one, a system directory, or holds the
    /// agent's config, keys or state (refused otherwise); its secrets (~/.ssh, ~/.agents,
    /// ~/.config, shell startup files, …) stay hidden from every call.
    #[arg(long)]
    pub allow_broad_workspace: bool,
}

/// A fresh session id, for a session that is not kept in a store: random like a kept one's. If
/// the kernel gives no randomness (it always does once booted) the id names nothing anyone else
/// can reach — no log, no socket entry — so a time and a pid serve.
pub(crate) fn session_id() -> SessionId {
    crate::random::bytes()
        .map(SessionId::from_random)
        .or_else(|_| {
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            SessionId::new(format!("s-{ms}-{}", std::process::id()))
        })
        .unwrap_or_else(|_| SessionId::from_random([0; SessionId::RANDOM_BYTES]))
}

/// Runs `agent run`; returns the exit code.
pub fn run(args: RunArgs) -> Result<i32> {
    let prompt = super::run_input::prompt(args.prompt.as_deref())?;
    let store = super::run_session::store(args.state_dir.as_deref())?;
    let resumed = match &args.resume {
        Some(id) => Some(super::run_session::reopen(store.as_ref(), id)?),
        None => None,
    };
    let workspace = workspace(&args, resumed.as_ref())?;
    let config_path = args
        .config
        .clone()
        .or_else(super::policy_check::default_config_path);
    let mut base = Base::load(config_path.as_deref())?;
    base.guard.allow |= args.allow_broad_workspace;
    if let Some(dir) = &args.state_dir {
        base.guard
            .own
            .push((dir.clone(), "the agent's session state"));
    }
    let overrides = Overrides {
        provider: args.provider.clone(),
        base_url: None,
        model: args.model.clone(),
    };
    let settings = base.settings(&overrides)?;
    let provider = base.provider(&settings)?;
    let mode = if args.dangerously_skip_permissions {
        ApprovalMode::SkipPermissions
    } else {
        match args.approval.as_str() {
            "always" => ApprovalMode::Always,
            "never" => ApprovalMode::Never,
            _ => ApprovalMode::OnRisk,
        }
    };
    let plan = Plan {
        workspace: workspace.clone(),
        provider,
        model: settings.model.clone(),
        mode,
        approver: approver(mode),
        limits: Limits {
            max_steps: args.max_steps,
            timeout: args
                .timeout
                .filter(|t| *t > 0.0)
                .map(Duration::from_secs_f64),
            token_budget: args.token_budget,
            max_parallel: args.max_parallel as usize,
            window: base.window(args.context_window),
        },
        ready_workers: args.ready_workers as usize,
        home: std::env::var_os("HOME").map(PathBuf::from),
        run_as: None,
        tmp_parent: std::env::temp_dir(),
        read_only: args.read_only,
    };
    let prepared = build::prepare(&base, plan)?;
    let (log, records) = match resumed {
        Some(r) => (Some(r.log), Some(r.records)),
        None => (
            super::run_session::create(store.as_ref(), &workspace, &settings.model)?,
            None,
        ),
    };
    let session = log.as_ref().map_or_else(session_id, |l| l.id().clone());
    let journal = Arc::new(Journal::new(session.clone(), log));
    let built = build::build(&base, prepared, &journal, records.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let format = args.output_format.as_str();
    let (outcome, live) = runtime.block_on(drive(built, journal, &prompt, format))?;
    report(&outcome, format, &session, live.as_ref());
    if live.is_some() {
        super::run_output::footer(&outcome, &session, store.is_some());
    }
    Ok(crate::agent::outcome::exit_code(outcome.reason))
}

/// The workspace: `--workspace`, else the resumed session's, else the current directory;
/// canonical, and the resumed session's own.
fn workspace(args: &RunArgs, resumed: Option<&Reopened>) -> Result<PathBuf> {
    let workspace = match (&args.workspace, resumed) {
        (None, Some(r)) => r.workspace.clone(),
        (Some(w), _) => w.clone(),
        (None, None) => {
            std::env::current_dir().context("cannot determine the current directory")?
        }
    };
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {} does not exist", workspace.display()))?;
    if let Some(r) = resumed
        && r.workspace != workspace
    {
        anyhow::bail!(
            "session {} works in {}, not {}: resume it there (or leave out --workspace)",
            r.id.as_str(),
            r.workspace.display(),
            workspace.display()
        );
    }
    Ok(workspace)
}

/// The terminal when there is one to ask on and the mode asks; else no one (and a warning).
fn approver(mode: ApprovalMode) -> Approver {
    let asks = matches!(mode, ApprovalMode::OnRisk | ApprovalMode::Always);
    if asks && std::io::stdin().is_terminal() && std::fs::File::open("/dev/tty").is_ok() {
        return Approver::terminal();
    }
    if asks {
        eprintln!(
            "agent: there is no terminal to ask: calls that need approval are refused (use --approval never to say so, or a config that allows them)"
        );
    }
    Approver::Nobody
}

/// Starts the session on the engine, runs the one turn and shows its events as they come;
/// returns once the session has stopped (its workers gone, its log closed).
async fn drive(
    built: build::Built,
    journal: Arc<Journal>,
    prompt: &str,
    format: &str,
) -> Result<(TurnOutcome, Option<super::run_output::Live>)> {
    let handle = crate::engine::start(built, journal, None, Stopping::default());
    let mut events = handle.subscribe(None)?;
    let mut live = (format == "text")
        .then(|| super::run_output::Live::new(handle.id().clone(), events.replaying()));
    // Ctrl-C (SIGINT) stops the turn: running calls are killed and answered as interrupted,
    // the history stays well formed, and the outcome is printed as usual.
    let interrupter = handle.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = interrupter.interrupt().await;
        }
    });
    let turn = handle.run_turn(prompt);
    tokio::pin!(turn);
    let mut ended = false;
    let outcome = loop {
        tokio::select! {
            outcome = &mut turn => break outcome,
            Some(envelope) = events.next() => ended |= show(&envelope, format, live.as_mut()),
        }
    };
    // The turn's last events are already queued: show them up to its end.
    while outcome.is_ok() && !ended {
        let Some(envelope) = events.next().await else {
            break;
        };
        ended = show(&envelope, format, live.as_mut());
    }
    handle.stop().await;
    Ok((outcome?, live))
}

/// One event, as `--output-format` says: a JSON line (stream-json), the model's text and tool
/// activity (text, [`super::run_output`]), nothing (json). Returns whether it ended the turn.
fn show(
    envelope: &EventEnvelope,
    format: &str,
    live: Option<&mut super::run_output::Live>,
) -> bool {
    match format {
        "stream-json" => {
            if let Ok(line) = serde_json::to_string(envelope) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", inert::json(&line));
                let _ = out.flush();
            }
        }
        _ => {
            if let Some(live) = live {
                live.event(&envelope.event);
            }
        }
    }
    matches!(envelope.event, Event::TurnFinished(_))
}

/// The turn's outcome, as `--output-format` says.
fn report(
    outcome: &TurnOutcome,
    format: &str,
    session: &SessionId,
    live: Option<&super::run_output::Live>,
) {
    match format {
        "json" => {
            let v = crate::agent::outcome::json(outcome, session);
            // The same value, with what serde leaves raw (C1, bidi) escaped too.
            println!("{}", inert::json(&v.to_string()));
        }
        "text" => {
            super::run_output::answer(outcome, live);
            if let Some(line) = crate::agent::outcome::text_line(outcome) {
                eprintln!("{line}");
            }
        }
        _ => {}
    }
}
