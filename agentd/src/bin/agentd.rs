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
    /// Run a command in a real tool-worker sandbox, as a bash tool call would, and show the result.
    Sandbox(agentd::cli::sandbox::SandboxArgs),
    /// Serve the control socket (docs/protocol.md) until SIGINT or SIGTERM.
    Serve(agentd::cli::serve::ServeArgs),
    /// Ask a running daemon for its status: version, uptime, sessions, workers, Landlock ABI,
    /// seccomp.
    Status(agentd::cli::status::StatusArgs),
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Print the verdict (allow, ask, deny) and the deciding rule for a bash command.
    Check(agentd::cli::policy_check::PolicyCheckArgs),
}

fn main() {
    // Started as a tool-worker (by ourselves)? Then nothing else may happen first.
    agentd::worker::spawn::run_as_worker_if_asked();
    let cli = Cli::parse();
    agentd::cli::init_logging();
    // The supervisor holds keys and config: no core dumps, and /proc/<pid>/{environ,mem} closed to
    // other processes of the same uid, tool-workers included.
    let _ = nix::sys::prctl::set_dumpable(false);
    let result = match cli.command {
        Command::Policy(PolicyCommand::Check(args)) => agentd::cli::policy_check::run(args),
        Command::Sandbox(args) => agentd::cli::sandbox::run(args),
        Command::Serve(args) => agentd::cli::serve::run(args),
        Command::Status(args) => agentd::cli::status::run(args),
    };
    agentd::worker::late_check::wait_before_exit("agentd");
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("agentd: {e:#}");
            std::process::exit(2);
        }
    }
}
