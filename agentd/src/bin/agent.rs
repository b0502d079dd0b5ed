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
    /// The scripted demo (not built yet).
    Demo,
}

fn main() {
    let cli = Cli::parse();
    // The process holds the API key: no core dumps, /proc/<pid>/{environ,mem} closed.
    let _ = nix::sys::prctl::set_dumpable(false);
    let result = match cli.command {
        Command::Run(args) => agentd::cli::run::run(*args),
        Command::Demo => {
            eprintln!(
                "agent demo: not built yet. `agent run -p …` works against a real or local model (BASE_URL, API_KEY, MODEL)."
            );
            Ok(2)
        }
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("agent: {e:#}");
            std::process::exit(2);
        }
    }
}
