//! `agent`: the client. With no daemon it hosts the supervisor in-process.

use clap::{Parser, Subcommand};

/// agent: a coding agent on a leash.
#[derive(Debug, Parser)]
#[command(name = "agent", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task headless, with an in-process supervisor, and print the result.
    Run(Box<agentd::cli::run::RunArgs>),
    /// The whole system on a built-in scripted model: no network, no API key.
    Demo,
    /// List the sessions kept for this user (resume one with `agent run --resume ID -p …`).
    Sessions(agentd::cli::sessions::SessionsArgs),
}

fn main() {
    // Started as a tool-worker (by ourselves)? Then nothing else may happen first.
    agentd::worker::spawn::run_as_worker_if_asked();
    let cli = Cli::parse();
    agentd::cli::init_logging();
    // The process holds the API key: no core dumps, /proc/<pid>/{environ,mem} closed.
    let _ = nix::sys::prctl::set_dumpable(false);
    let result = match cli.command {
        Command::Run(args) => agentd::cli::run::run(*args),
        Command::Demo => agentd::demo::run(),
        Command::Sessions(args) => agentd::cli::sessions::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("agent: {e:#}");
            std::process::exit(2);
        }
    }
}
