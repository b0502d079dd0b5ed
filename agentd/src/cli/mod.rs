//! Subcommands of the `agentd` binary, each a function from parsed arguments to an exit code, so
//! the binary stays a thin shell over them.

pub mod client;
pub mod log_file;
pub mod policy_check;
pub mod repl;
pub mod repl_status;
pub mod run;
pub mod run_input;
pub mod run_output;
pub mod run_session;
pub mod sandbox;
pub mod serve;
pub mod sessions;
pub mod status;

/// Logs to stderr for a command-line binary: warnings and errors by default (a skipped
/// `AGENTS.md`, a cgroup left behind), more with `AGENTD_LOG` (`info`, `debug`, `agentd=trace`, …
/// in `tracing-subscriber`'s filter syntax).
///
/// Under systemd, when stderr is the journal (`$JOURNAL_STREAM` names its device and inode), each
/// line starts with its syslog priority (`<4>` for a warning, as `sd-daemon.h` writes it) instead
/// of a level word: the journal stores it as the entry's priority (`journalctl -p warning`), and
/// adds its own timestamp — we add none, here or anywhere.
pub fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if stderr_is_journal() {
        let _ = builder.with_ansi(false).event_format(Journal).try_init();
        return;
    }
    // Colour only on a terminal, and not with NO_COLOR: a log piped to a file stays plain text.
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let _ = builder
        .with_ansi(colour)
        .without_time()
        .with_target(false)
        .try_init();
}

/// Whether stderr is the stream systemd connected to the journal: `$JOURNAL_STREAM` is
/// `DEVICE:INODE` of it (a stderr redirected elsewhere since keeps the variable but not the
/// stream).
fn stderr_is_journal() -> bool {
    let Some(value) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    nix::sys::stat::fstat(std::io::stderr())
        .is_ok_and(|st| journal_stream_is(&value.to_string_lossy(), st.st_dev, st.st_ino))
}

/// Whether `$JOURNAL_STREAM`'s `value` names the file with this device and inode.
pub fn journal_stream_is(value: &str, dev: u64, ino: u64) -> bool {
    value
        .split_once(':')
        .and_then(|(d, i)| Some((d.parse::<u64>().ok()?, i.parse::<u64>().ok()?)))
        == Some((dev, ino))
}

/// The journal's line format: `<priority>message fields`, nothing else.
struct Journal;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Journal
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        write!(writer, "<{}>", priority(*event.metadata().level()))?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The syslog priority of a level: err 3, warning 4, info 6, debug 7.
fn priority(level: tracing::Level) -> u8 {
    match level {
        tracing::Level::ERROR => 3,
        tracing::Level::WARN => 4,
        tracing::Level::INFO => 6,
        tracing::Level::DEBUG | tracing::Level::TRACE => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_stream_is_recognised_by_device_and_inode() {
        assert!(journal_stream_is("8:1234", 8, 1234));
        for other in ["8:1235", "9:1234", "8", "", "x:y", "8:1234:5"] {
            assert!(!journal_stream_is(other, 8, 1234), "{other}");
        }
        assert_eq!(priority(tracing::Level::WARN), 4);
        assert_eq!(priority(tracing::Level::ERROR), 3);
    }
}
