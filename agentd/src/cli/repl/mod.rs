//! `agent` with no subcommand: an interactive session in the current directory.
//!
//! One REPL ([`Repl`]) drives a [`link::SessionLink`], of which there are two: a session hosted
//! in this process on the engine ([`local`]), or one in a running daemon behind its socket
//! ([`remote`]). Which one: `--no-daemon` forces in-process; `--socket PATH` forces that daemon;
//! otherwise the daemon's default socket is tried and, when nobody answers there, the session is
//! hosted in-process ([`choose`]).
//!
//! * [`editor`]: the input line and its history; [`slash`]: the slash commands;
//! * [`turn`]: a running turn's events, the spinner, Ctrl-C; [`approval`]: the approval prompt;
//! * [`render`]: events on the terminal; [`diff`]: edits as coloured diffs; [`style`]: colour
//!   only at a terminal without `NO_COLOR`.

pub mod approval;
pub mod diff;
pub mod editor;
pub mod link;
pub mod local;
pub mod remote;
pub mod render;
pub mod slash;
pub mod style;
pub mod turn;

mod interactive;

use anyhow::{Context as _, Result};
use std::path::PathBuf;

pub use interactive::Repl;

/// The flags of `agent` when it runs the REPL (no subcommand).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReplArgs {
    /// Continue the newest session of this directory (a new one when there is none).
    #[arg(short = 'c', long = "continue")]
    pub continue_last: bool,
    /// Host the supervisor in this process even when a daemon is running.
    #[arg(long, conflicts_with = "socket")]
    pub no_daemon: bool,
    /// The daemon's control socket [default: $XDG_RUNTIME_DIR/agentd/agentd.sock; as root
    /// /run/agentd/agentd.sock]. Given, the daemon must be there.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// The model for a new session [default: MODEL from the environment, ~/.agents/env or the config].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// When to ask you: on-risk (ask verdicts), always, never (ask becomes deny).
    #[arg(long, value_name = "MODE", default_value = "on-risk", value_parser = ["on-risk", "always", "never"])]
    pub approval: String,
    /// In-process only: config file ([provider], [policy], [sandbox]) [default:
    /// $XDG_CONFIG_HOME/agentd/config.toml, else /etc/agentd/config.toml].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where in-process sessions are kept, and the input history (repl_history) either way
    /// [default: $XDG_STATE_HOME/agentd, else ~/.local/state/agentd].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Model calls per turn at most.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: u32,
    /// In-process only: allow a workspace that is `/`, a home or holds one, a system directory,
    /// or holds the agent's config, keys or state; its secrets stay hidden from every call. A
    /// daemon decides by its own config.
    #[arg(long)]
    pub allow_broad_workspace: bool,
}

/// Where the session is hosted.
#[derive(Debug, PartialEq, Eq)]
pub enum Host {
    /// In this process.
    InProcess,
    /// In the daemon at this socket.
    Daemon(PathBuf),
}

/// In-process or daemon: `--no-daemon`, `--socket`, else whether the default socket answers.
pub fn choose(args: &ReplArgs) -> Host {
    if args.no_daemon {
        return Host::InProcess;
    }
    if let Some(socket) = &args.socket {
        return Host::Daemon(socket.clone());
    }
    match crate::server::listen::defaults() {
        Ok(d) if std::os::unix::net::UnixStream::connect(&d.socket).is_ok() => {
            Host::Daemon(d.socket)
        }
        _ => Host::InProcess,
    }
}

/// The approval mode named by `--approval`.
pub fn mode_of(name: &str) -> protocol::verdict::ApprovalMode {
    use protocol::verdict::ApprovalMode;
    match name {
        "always" => ApprovalMode::Always,
        "never" => ApprovalMode::Never,
        _ => ApprovalMode::OnRisk,
    }
}

/// Runs the REPL; returns the exit code.
pub fn run(args: ReplArgs) -> Result<i32> {
    let workspace = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .context("cannot determine the current directory")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let first = if args.continue_last {
        link::Start::Last
    } else {
        link::Start::New
    };
    let history = args
        .state_dir
        .clone()
        .or_else(crate::store::Store::default_dir)
        .map(|d| d.join("repl_history"));
    match choose(&args) {
        Host::InProcess => {
            let recipe = recipe(&args, workspace.clone())?;
            let (link, opened) = {
                let _entered = runtime.enter();
                local::LocalLink::open(recipe, &first)?
            };
            Repl::new(link, runtime, workspace, history)?.run(opened, None)
        }
        Host::Daemon(socket) => {
            let connect = remote::Connect {
                socket: &socket,
                workspace: &workspace,
                model: args.model.clone(),
                approval: mode_of(&args.approval),
                max_steps: Some(args.max_steps),
            };
            let (link, opened) = runtime
                .block_on(remote::RemoteLink::open(connect, &first))
                .with_context(|| format!("agentd at {}", socket.display()))?;
            Repl::new(link, runtime, workspace, history)?.run(opened, None)
        }
    }
}

/// How in-process sessions are built, from the flags, the config file and the environment.
fn recipe(args: &ReplArgs, workspace: PathBuf) -> Result<local::Recipe> {
    let config_path = args
        .config
        .clone()
        .or_else(super::policy_check::default_config_path);
    let mut base = crate::engine::build::Base::load(config_path.as_deref())?;
    base.guard.allow |= args.allow_broad_workspace;
    if let Some(dir) = &args.state_dir {
        base.guard
            .own
            .push((dir.clone(), "the agent's session state"));
    }
    let overrides = crate::settings::Overrides {
        provider: None,
        base_url: None,
        model: args.model.clone(),
    };
    let settings = base.settings(&overrides)?;
    let store = super::run_session::store(args.state_dir.as_deref())?;
    let limits = crate::agent::turn::Limits {
        max_steps: args.max_steps,
        window: base.window(None),
        ..Default::default()
    };
    Ok(local::Recipe {
        base,
        settings,
        mode: mode_of(&args.approval),
        store,
        workspace,
        limits,
        home: std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute()),
    })
}
