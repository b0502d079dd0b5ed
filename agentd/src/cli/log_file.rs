//! The REPL's log: a file under the state directory, never the terminal the REPL draws on — a
//! warning written there landed over the prompt and the spinner (`⠋ working WARN …`). Its path
//! is in `agent --help` and `/help`. A provider's retry is shown on the status line instead
//! ([`super::repl_status`]).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The log's name in the state directory.
pub const FILE: &str = "agent.log";

/// Past this size at start, the log is moved to `agent.log.1` (replacing the one before), so
/// it never grows without bound.
const ROTATE_BYTES: u64 = 4 << 20;

/// Where this process logs, once [`init`] has opened it.
static PATH: OnceLock<PathBuf> = OnceLock::new();

/// The file this process logs to, if it logs to one.
pub fn path() -> Option<&'static Path> {
    PATH.get().map(PathBuf::as_path)
}

/// Logs to `<state_dir>/agent.log` (0600, appended to, with times): warnings and errors, more
/// with `AGENTD_LOG`. A log that cannot be opened is said once, now, on stderr (before the REPL
/// draws), and nothing is logged.
pub fn init(state_dir: Option<&Path>) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let file = match state_dir.map(open) {
        Some(Ok((file, path))) => {
            let _ = PATH.set(path);
            Some(file)
        }
        Some(Err(e)) => {
            eprintln!("agent: logs are not kept: {e}");
            None
        }
        None => None,
    };
    let to_file = file.map(|file| {
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(file))
    });
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(to_file)
        .with(super::repl_status::RetryLayer)
        .try_init();
}

/// Opens the log in `dir` (made 0700 if missing), moved aside first when it is too big.
fn open(dir: &Path) -> Result<(std::fs::File, PathBuf), String> {
    let fail = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| fail(dir, e))?;
    let path = dir.join(FILE);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.len() > ROTATE_BYTES) {
        let _ = std::fs::rename(&path, dir.join(format!("{FILE}.1")));
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| fail(&path, e))?;
    let _ = writeln!(file, "--- agent {} started", std::process::id());
    Ok((file, path))
}
