//! `agentd`: the supervisor daemon, and tools to inspect what it would do.

use clap::{Parser, Subcommand};

/// agentd: runs coding agents and keeps them on a leash.
#[derive(Debug, Parser)]
#[command(name = "agentd", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect the permission policy.
    #[command(subcommand)]
    Policy(PolicyCommand),
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Print the verdict (allow, ask, deny) and the deciding rule for a bash command.
    Check(agentd::cli::policy_check::PolicyCheckArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Policy(PolicyCommand::Check(args)) => agentd::cli::policy_check::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("agentd: {e:#}");
            std::process::exit(2);
        }
    }
}
