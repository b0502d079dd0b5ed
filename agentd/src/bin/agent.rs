//! `agent`: the client. With no subcommand, an interactive session in the current directory:
//! in a running daemon when there is one, else with the supervisor hosted in-process.

use clap::{Parser, Subcommand};

/// agent: a coding agent on a leash.
///
/// With no command, `agent` opens an interactive session (a REPL) in the current directory. It
/// uses a running agentd daemon when its socket answers (--socket, or the default socket),
/// otherwise it hosts the supervisor in this process; either way every tool call runs in a
/// sandboxed tool-worker and asks you when the policy says ask.
#[derive(Debug, Parser)]
#[command(
    name = "agent",
    version,
    about,
    args_conflicts_with_subcommands = true,
    after_help = "In the REPL: type a task and press Enter; /help lists the slash commands (/todos, /sessions, /resume ID, /new, /delete, /model, /approval, /compact, /quit); a message that starts with a path (/etc/hosts …) is sent as typed, and //text sends /text. Ctrl-C interrupts a running turn; Ctrl-C twice at an empty prompt, or Ctrl-D, leaves. Approval prompts take y (once), a (always for this session) or n (no).\n\nThe model comes from PROVIDER, BASE_URL, API_KEY and MODEL in the environment or ~/.agents/env (in-process), or from the daemon's settings. Output is coloured only on a terminal and without NO_COLOR. The REPL's warnings (more with AGENTD_LOG=info) go to agent.log in the state directory ($XDG_STATE_HOME/agentd, else ~/.local/state/agentd), never to its terminal."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    repl: agentd::cli::repl::ReplArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task headless, with an in-process supervisor, and print the result.
    Run(Box<agentd::cli::run::RunArgs>),
    /// The whole system on a built-in scripted model: no network, no API key.
    Demo(agentd::demo::DemoArgs),
    /// The sessions kept for this user: list them, `rm ID…`, `prune --older-than 30d` / `--empty` (continue one with `agent -c`, `/resume ID`, or `agent run --resume ID -p …`).
    Sessions(agentd::cli::sessions::SessionsArgs),
}

fn main() {
    // Started as a tool-worker (by ourselves)? Then nothing else may happen first.
    agentd::worker::spawn::run_as_worker_if_asked();
    let cli = Cli::parse();
    match &cli.command {
        // The REPL draws on the terminal: its logs go to a file.
        None => {
            let dir = cli
                .repl
                .state_dir
                .clone()
                .or_else(agentd::store::Store::default_dir);
            agentd::cli::log_file::init(dir.as_deref());
        }
        Some(_) => agentd::cli::init_logging(),
    }
    // The process holds the API key: no core dumps, /proc/<pid>/{environ,mem} closed.
    let _ = nix::sys::prctl::set_dumpable(false);
    let result = match cli.command {
        None => agentd::cli::repl::run(cli.repl),
        Some(Command::Run(args)) => agentd::cli::run::run(*args),
        Some(Command::Demo(args)) => agentd::demo::run(args),
        Some(Command::Sessions(args)) => agentd::cli::sessions::run(args),
    };
    agentd::worker::late_check::wait_before_exit("agent");
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("agent: {e:#}");
            std::process::exit(2);
        }
    }
}
