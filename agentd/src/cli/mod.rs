//! Subcommands of the `agentd` binary, each a function from parsed arguments to an exit code, so
//! the binary stays a thin shell over them.

pub mod policy_check;
pub mod run;
pub mod run_session;
pub mod sandbox;
pub mod serve;
pub mod sessions;

/// Logs to stderr for a command-line binary: warnings and errors by default (a skipped
/// `AGENTS.md`, a cgroup left behind), more with `AGENTD_LOG` (`info`, `debug`, `agentd=trace`, …
/// in `tracing-subscriber`'s filter syntax).
pub fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colour only on a terminal, and not with NO_COLOR: a log piped to a file stays plain text.
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .try_init();
}
