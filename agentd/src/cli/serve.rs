//! `agentd serve`: the daemon's control socket and its sessions, until SIGINT or SIGTERM.

use crate::engine::build::Base;
use crate::engine::{Shutdown, Stopping};
use crate::server::factory::Factory;
use crate::server::{self, Server, listen, notify, privileges, sessions::Sessions};
use crate::store::Store;
use anyhow::Context as _;
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `agentd serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The socket to listen on [default: /run/agentd/agentd.sock as root, else
    /// $XDG_RUNTIME_DIR/agentd/agentd.sock; ignored under socket activation].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// A config file [default: $XDG_CONFIG_HOME/agentd/config.toml, else
    /// /etc/agentd/config.toml]: [provider], [policy] and [sandbox] for its sessions; [server]
    /// for the limits (max_connections, max_connections_per_uid, reserved_connections_per_uid,
    /// max_frame_bytes, handshake_timeout_ms, idle_timeout_ms, outgoing_queue, max_sessions_per_uid,
    /// admin_group, approval_wait_ms, shutdown_grace_ms).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where sessions are kept [default: /var/lib/agentd as root, else $XDG_STATE_HOME/agentd].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// Runs the server until SIGINT or SIGTERM; then lets running steps finish within the grace
/// period, saves every session, tells the clients, kills the workers, and returns 0.
pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    // Before any thread exists: capabilities are per thread, so they are dropped here, once,
    // for every thread and process agentd will start.
    if let Some(kept) = privileges::drop_unneeded()? {
        tracing::info!(
            kept = %privileges::names(&kept).join(" "),
            "capabilities dropped but those needed to start workers as other users"
        );
    }
    // Before any thread exists: the activation variables are read and removed here.
    let activated = listen::activated();
    let systemd = Arc::new(notify::Systemd::from_env());
    let defaults = match (&args.socket, &args.state_dir) {
        (Some(_), Some(_)) => None,
        _ => Some(listen::defaults().map_err(anyhow::Error::msg)?),
    };
    let config_path = args
        .config
        .clone()
        .or_else(super::policy_check::default_config_path);
    let mut base = Base::load(config_path.as_deref())?;
    let section = base.config.server.clone().unwrap_or_default();
    let admin_gid = match &section.admin_group {
        Some(name) => Some(
            nix::unistd::Group::from_name(name)
                .ok()
                .flatten()
                .with_context(|| format!("server.admin_group: no group named {name:?}"))?
                .gid
                .as_raw(),
        ),
        None => None,
    };
    let state_dir = args
        .state_dir
        .or_else(|| defaults.as_ref().map(|d| d.state_dir.clone()))
        .context("no state directory")?;
    let store = Store::open(&state_dir)?;
    warn_if_closed(&state_dir);
    let (listener, shown, bound) = match activated {
        Some(l) => (l, "the socket systemd passed".to_owned(), None),
        None => {
            let path = args
                .socket
                .or_else(|| defaults.as_ref().map(|d| d.socket.clone()))
                .context("no socket path")?;
            let system = nix::unistd::geteuid().is_root();
            let listener = listen::bind(&path, system).map_err(anyhow::Error::msg)?;
            (listener, path.display().to_string(), Some(path))
        }
    };
    listener.set_nonblocking(true)?;
    // Every create and resume is checked here, by the daemon: only its own config allows a
    // broad workspace, never a client.
    base.guard.how = crate::workspace_check::Override::DaemonConfig;
    base.guard
        .own
        .push((state_dir.clone(), "the daemon's session state"));
    if let Some(socket) = &bound {
        base.guard.own.push((socket.clone(), "the daemon's socket"));
    }
    let limits = section.limits();
    // The one token: the accept loop, every connection, every session and so its workers.
    let shutdown = Shutdown::new();
    let factory = Factory {
        base,
        approval_wait: limits.approval_wait,
        stopping: Stopping {
            shutdown: shutdown.clone(),
            grace: limits.shutdown_grace,
        },
        ready_workers: 1,
    };
    let sessions = Sessions::new(store, admin_gid, factory, limits.max_sessions_per_uid);
    let server = Arc::new(Server::new(limits, sessions, shutdown.clone()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads())
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::UnixListener::from_std(listener)?;
        // The handlers are in place before anyone is told we are ready, so an early SIGTERM
        // still shuts down in order.
        let stop = stop_signal();
        reload_on_hangup(Arc::clone(&server));
        let status = format!("listening on {shown}; sessions in {}", state_dir.display());
        eprintln!("agentd: {status}");
        let _watchdog = systemd.ready(&status);
        let told = Arc::clone(&systemd);
        tokio::spawn(async move {
            stop.await;
            eprintln!("agentd: stopping: running steps may finish, then every session is saved");
            told.stopping();
            shutdown.trigger();
        });
        server::serve(listener, server).await;
        anyhow::Ok(())
    })?;
    if let Some(path) = bound {
        let _ = std::fs::remove_file(path);
    }
    eprintln!("agentd: stopped");
    Ok(0)
}

/// At each SIGHUP, the config file is read again and its policy replaces the one every session
/// is checked against; a bad file is refused with the reason and the policy in force stays.
fn reload_on_hangup(server: Arc<Server>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        eprintln!("agentd: cannot handle SIGHUP: the configuration cannot be reloaded");
        return;
    };
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            match server.sessions.reload_policy() {
                Ok(Some(path)) => eprintln!(
                    "agentd: SIGHUP: reloaded the policy from {}; every session's next call is checked against it",
                    path.display()
                ),
                Ok(None) => eprintln!("agentd: SIGHUP: no config file; the built-in policy stays"),
                Err(e) => eprintln!(
                    "agentd: SIGHUP: the new configuration is refused, the old one stays: {e}"
                ),
            }
        }
    });
}

/// Resolves at SIGTERM or SIGINT; the handlers are installed when this is called, not when the
/// future is first polled.
fn stop_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let signals = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        let (Ok(mut term), Ok(mut int)) = signals else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}

/// A root daemon's state directory must be passable by others (0711: not listable) for a
/// session's owner to reach its spill folder; one that is not is said once, at start.
fn warn_if_closed(state_dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    if let Ok(meta) = std::fs::metadata(state_dir)
        && meta.permissions().mode() & 0o001 == 0
    {
        tracing::warn!(
            "{} is not passable by other users (make it 0711): sessions of other users cannot page back a spilled output",
            state_dir.display()
        );
    }
}

/// The runtime's worker threads: four per core (at least 4, at most 16), not tokio's one per
/// core, because a session's journal syncs its log at each step's end (`fdatasync`, about 1.4 ms
/// on the build machines) on the thread that emits the event. With one thread per core, two
/// syncing sessions stall every other session and client; with more threads their syncs overlap.
/// Measured with `tests/benches/daemon_load.rs` at 50 sessions on 2 cores, alternating runs:
/// 2 threads 211 and 204 calls/s, 8 threads 243 and 232 (docs/daemon.md, "Benchmark"), for
/// about 4 MiB more at peak.
fn worker_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .saturating_mul(4)
        .clamp(4, 16)
}
