//! `agent sessions`: the sessions kept for this user, newest first.

use crate::inert::inert_line;
use anyhow::Result;
use std::path::PathBuf;

/// Arguments of `agent sessions`.
#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    /// Where sessions are kept [default: $XDG_STATE_HOME/agentd, else ~/.local/state/agentd].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// Prints one line per session: id, status, last activity, workspace, title. Logs that cannot be
/// read are reported on stderr, by file and line; the exit code is then 1.
pub fn run(args: SessionsArgs) -> Result<i32> {
    let Some(store) = super::run_session::store(args.state_dir.as_deref())? else {
        return Ok(2);
    };
    let (sessions, errors) = store.list();
    if sessions.is_empty() && errors.is_empty() {
        println!("no sessions in {}", store.root().display());
    }
    let now = crate::store::log::now_ms();
    for s in &sessions {
        println!(
            "{}  {:<20}  {:>9}  {}  {}",
            s.id,
            s.status.to_string(),
            ago(now.saturating_sub(s.last_activity_unix_ms)),
            inert_line(&s.workspace.display().to_string()),
            inert_line(s.title.as_deref().unwrap_or("(no message yet)"))
        );
    }
    for e in &errors {
        eprintln!("agent: {e}");
    }
    Ok(i32::from(!errors.is_empty()))
}

fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}
