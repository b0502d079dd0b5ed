//! `agent sessions`: this user's sessions — listed, removed (`rm`), pruned by age or emptiness
//! (`prune`) — in the running daemon when one answers (it counts them against
//! `max_sessions_per_uid`), else in the state directory of in-process sessions.
//!
//! * [`source`]: the daemon or the state directory, behind one list and one remove;
//! * [`age`]: `30d`, `12h`, … and "3h ago".

pub mod age;
pub mod source;

use super::client::Client;
use crate::inert::inert_line;
use anyhow::{Context as _, Result};
use source::{Row, Source};
use std::path::PathBuf;

/// Arguments of `agent sessions`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Sessions come from the running daemon when its socket answers (--socket, or the default socket), else from the state directory of in-process sessions (--state-dir, or the default). A session is kept from its first message on: an `agent` opened and left keeps nothing."
)]
pub struct SessionsArgs {
    /// What to do [default: list].
    #[command(subcommand)]
    pub action: Option<Action>,
    /// Where in-process sessions are kept [default: $XDG_STATE_HOME/agentd, else
    /// ~/.local/state/agentd]. Given, no daemon is asked.
    #[arg(long, value_name = "DIR", global = true, conflicts_with = "socket")]
    pub state_dir: Option<PathBuf>,
    /// The daemon's control socket [default: $XDG_RUNTIME_DIR/agentd/agentd.sock; as root
    /// /run/agentd/agentd.sock]. Given, the daemon must be there.
    #[arg(long, value_name = "PATH", global = true)]
    pub socket: Option<PathBuf>,
}

/// What `agent sessions` does.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// List them, newest activity first: id, state, last activity, workspace, title.
    List,
    /// Remove sessions by id: log, spilled outputs, summary. A session running a turn is refused.
    Rm {
        /// The sessions (see `agent sessions`).
        #[arg(value_name = "ID", required = true)]
        ids: Vec<String>,
    },
    /// Remove the sessions last used longer ago than --older-than, and with --empty those never
    /// given a message. Running sessions are left alone.
    Prune {
        /// An age: 30d, 12h, 90m, 45s, 2w.
        #[arg(long, value_name = "AGE", value_parser = age::parse)]
        older_than: Option<u64>,
        /// Sessions that never had a message.
        #[arg(long)]
        empty: bool,
        /// Print what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Runs `agent sessions`; the exit code is 1 when a session could not be read or removed.
pub fn run(args: SessionsArgs) -> Result<i32> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let Some(mut source) = open(&args).await? else {
            return Ok(2);
        };
        match args.action.unwrap_or(Action::List) {
            Action::List => list(&mut source).await,
            Action::Rm { ids } => remove(&mut source, &ids).await,
            Action::Prune {
                older_than,
                empty,
                dry_run,
            } => prune(&mut source, older_than, empty, dry_run).await,
        }
    })
}

/// The daemon when `--socket` is given or the default socket answers (and no `--state-dir`),
/// else the state directory.
async fn open(args: &SessionsArgs) -> Result<Option<Source>> {
    let socket = match (&args.state_dir, &args.socket) {
        (Some(_), _) => None,
        (None, Some(socket)) => Some(socket.clone()),
        (None, None) => crate::server::listen::defaults()
            .ok()
            .map(|d| d.socket)
            .filter(|s| std::os::unix::net::UnixStream::connect(s).is_ok()),
    };
    if let Some(socket) = socket {
        let client = Client::connect(&socket)
            .await
            .with_context(|| format!("agentd at {}", socket.display()))?;
        return Ok(Some(Source::Daemon { socket, client }));
    }
    Ok(super::run_session::store(args.state_dir.as_deref())?.map(Source::Store))
}

async fn list(source: &mut Source) -> Result<i32> {
    let (rows, errors) = source.list().await?;
    if rows.is_empty() && errors.is_empty() {
        println!("no sessions in {}", source.name());
    }
    let now = crate::store::log::now_ms();
    for r in &rows {
        let when = match r.last_activity_unix_ms {
            0 => "no message".to_owned(),
            t => age::ago(now.saturating_sub(t)),
        };
        println!(
            "{}  {:<20}  {:>10}  {}  {}",
            r.id,
            r.state,
            when,
            inert_line(&r.workspace.display().to_string()),
            inert_line(r.title.as_deref().unwrap_or("(no message yet)"))
        );
    }
    for e in &errors {
        eprintln!("agent: {e}");
    }
    Ok(i32::from(!errors.is_empty()))
}

async fn remove(source: &mut Source, ids: &[String]) -> Result<i32> {
    let mut failed = false;
    for id in ids {
        match source.remove(id).await {
            Ok(()) => println!("removed {}", inert_line(id)),
            Err(why) => {
                eprintln!("agent: {}: {}", inert_line(id), inert_line(&why));
                failed = true;
            }
        }
    }
    Ok(i32::from(failed))
}

/// The rows `prune` removes: last used longer than `older_than` ago, or (with `empty`) kept
/// with no message (written before sessions waited for their first). A daemon's session not
/// written yet (no activity) is never taken: a REPL open on it now would lose it, and it leaves
/// nothing behind once its client goes. Pure.
pub fn chosen(rows: &[Row], now: u64, older_than: Option<u64>, empty: bool) -> Vec<&Row> {
    rows.iter()
        .filter(|r| r.last_activity_unix_ms != 0)
        .filter(|r| {
            let old =
                older_than.is_some_and(|age| now.saturating_sub(r.last_activity_unix_ms) > age);
            old || (empty && r.empty)
        })
        .collect()
}

async fn prune(
    source: &mut Source,
    older_than: Option<u64>,
    empty: bool,
    dry_run: bool,
) -> Result<i32> {
    if older_than.is_none() && !empty {
        anyhow::bail!("say which sessions to prune: --older-than AGE (e.g. 30d), --empty, or both");
    }
    let (rows, errors) = source.list().await?;
    for e in &errors {
        eprintln!("agent: {e}");
    }
    let now = crate::store::log::now_ms();
    let ids: Vec<String> = chosen(&rows, now, older_than, empty)
        .into_iter()
        .map(|r| r.id.clone())
        .collect();
    if ids.is_empty() {
        println!("nothing to prune in {}", source.name());
        return Ok(i32::from(!errors.is_empty()));
    }
    if dry_run {
        for id in &ids {
            println!("would remove {id}");
        }
        return Ok(0);
    }
    // A running session is left alone: its refusal is reported, the others go on.
    remove(source, &ids).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, last: u64, empty: bool) -> Row {
        Row {
            id: id.into(),
            state: String::new(),
            last_activity_unix_ms: last,
            workspace: "/w".into(),
            title: None,
            empty,
        }
    }

    #[test]
    fn prune_takes_the_old_and_with_empty_the_empty_ones() {
        let day = 86_400_000;
        let now = 100 * day;
        let rows = [
            row("fresh", now - day, false),
            row("old", now - 40 * day, false),
            row("fresh-empty", now - day, true),
            row("pending", 0, true),
        ];
        let ids = |v: Vec<&Row>| v.into_iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(chosen(&rows, now, Some(30 * day), false)), ["old"]);
        assert_eq!(ids(chosen(&rows, now, None, true)), ["fresh-empty"]);
        assert_eq!(
            ids(chosen(&rows, now, Some(30 * day), true)),
            ["old", "fresh-empty"]
        );
        assert!(chosen(&rows, now, None, false).is_empty());
    }
}
