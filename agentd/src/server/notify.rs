//! systemd's readiness protocol (`sd_notify`, `Type=notify`): datagrams of `KEY=VALUE` lines to
//! the socket named by `$NOTIFY_SOCKET` — a path, or an abstract name written with a leading
//! `@`. `READY=1` with a `STATUS=` once the socket listens, `STOPPING=1` when shutdown starts,
//! and `WATCHDOG=1` at half of `$WATCHDOG_USEC` when systemd asks for it (and `$WATCHDOG_PID`,
//! if set, is this process).
//!
//! Written here over std's `UnixDatagram` rather than with a crate: the protocol is one datagram
//! per message, and the only subtle part, abstract addresses, is in std. Nothing here fails the
//! daemon: a notification that cannot be sent is logged, and without `$NOTIFY_SOCKET` every call
//! does nothing (not run by systemd, or `Type=simple`).

use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// What systemd asked of this process, read once from the environment.
#[derive(Debug, Default)]
pub struct Systemd {
    /// Where notifications go, when systemd listens for them.
    target: Option<Target>,
    /// How often to tell the watchdog we are alive, when one watches this process.
    watchdog: Option<Duration>,
}

/// The notification socket and the unbound socket that sends to it.
#[derive(Debug)]
struct Target {
    /// `$NOTIFY_SOCKET`, resolved.
    addr: SocketAddr,
    /// Non-blocking: a full queue on systemd's side drops a notification rather than stall the
    /// daemon.
    socket: UnixDatagram,
}

/// Why `$NOTIFY_SOCKET` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// Not an absolute path or an `@` abstract name.
    #[error("NOTIFY_SOCKET={0:?} is neither an absolute path nor an @abstract name")]
    BadAddress(String),
    /// The socket could not be made.
    #[error("cannot make the notification socket: {0}")]
    Socket(#[source] std::io::Error),
}

impl Systemd {
    /// Reads `$NOTIFY_SOCKET`, `$WATCHDOG_USEC` and `$WATCHDOG_PID`, and removes them so that no
    /// child inherits them. Call it before any other thread exists (the environment is not
    /// thread-safe). A `$NOTIFY_SOCKET` that cannot be used is logged and ignored.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let (notify, usec, pid) = (
            var("NOTIFY_SOCKET"),
            var("WATCHDOG_USEC"),
            var("WATCHDOG_PID"),
        );
        // SAFETY: called at start-up, before the runtime or any other thread reads the
        // environment (as `listen::activated` is).
        unsafe {
            std::env::remove_var("NOTIFY_SOCKET");
            std::env::remove_var("WATCHDOG_USEC");
            std::env::remove_var("WATCHDOG_PID");
        }
        let target = match notify.as_deref().map(Target::new).transpose() {
            Ok(target) => target,
            Err(e) => {
                tracing::warn!("{e}; systemd will not be told when agentd is ready");
                None
            }
        };
        Self {
            watchdog: target.as_ref().and_then(|_| {
                watchdog_interval(usec.as_deref(), pid.as_deref(), std::process::id())
            }),
            target,
        }
    }

    /// Whether systemd listens for notifications.
    pub fn is_notified(&self) -> bool {
        self.target.is_some()
    }

    /// How often the watchdog is pinged, when one watches.
    pub fn watchdog(&self) -> Option<Duration> {
        self.watchdog
    }

    /// Sends `state` (`KEY=VALUE` lines); does nothing without a socket, logs a failure.
    pub fn notify(&self, state: &str) {
        if let Some(t) = &self.target
            && let Err(e) = t.socket.send_to_addr(state.as_bytes(), &t.addr)
        {
            tracing::warn!("cannot notify systemd ({}): {e}", first_line(state));
        }
    }

    /// `READY=1` with `status` as the `STATUS=` systemctl shows; then, when a watchdog watches,
    /// a task that pings it until the returned guard is dropped. Call it inside the runtime.
    pub fn ready(self: &std::sync::Arc<Self>, status: &str) -> Option<WatchdogGuard> {
        self.notify(&format!("READY=1\nSTATUS={}", one_line(status)));
        let every = self.watchdog?;
        let me = self.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                me.notify("WATCHDOG=1");
            }
        });
        Some(WatchdogGuard(task))
    }

    /// `STOPPING=1` with a status saying so: shutdown has begun.
    pub fn stopping(&self) {
        self.notify("STOPPING=1\nSTATUS=shutting down");
    }
}

/// Stops the watchdog pings when dropped (at shutdown, after `STOPPING=1`).
#[derive(Debug)]
pub struct WatchdogGuard(tokio::task::JoinHandle<()>);

impl Drop for WatchdogGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Target {
    fn new(value: &str) -> Result<Self, NotifyError> {
        let addr = if let Some(name) = value.strip_prefix('@') {
            SocketAddr::from_abstract_name(name.as_bytes())
        } else if value.starts_with('/') {
            SocketAddr::from_pathname(value)
        } else {
            return Err(NotifyError::BadAddress(value.to_owned()));
        }
        .map_err(|_| NotifyError::BadAddress(value.to_owned()))?;
        let socket = UnixDatagram::unbound().map_err(NotifyError::Socket)?;
        socket.set_nonblocking(true).map_err(NotifyError::Socket)?;
        Ok(Self { addr, socket })
    }
}

/// Half of `$WATCHDOG_USEC` (as `sd_watchdog_enabled` advises), if set, positive, and meant for
/// `pid` (`$WATCHDOG_PID` unset, or equal to it).
pub fn watchdog_interval(usec: Option<&str>, for_pid: Option<&str>, pid: u32) -> Option<Duration> {
    if let Some(for_pid) = for_pid
        && for_pid.trim().parse::<u32>().ok() != Some(pid)
    {
        return None;
    }
    let usec = usec?.trim().parse::<u64>().ok().filter(|u| *u > 0)?;
    Some(Duration::from_micros(usec / 2))
}

/// `text` on one line: a newline in a status would start a new `KEY=VALUE`.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

fn first_line(state: &str) -> &str {
    state.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_interval_is_half_and_only_for_this_process() {
        let s = Duration::from_secs;
        assert_eq!(watchdog_interval(Some("30000000"), None, 7), Some(s(15)));
        assert_eq!(
            watchdog_interval(Some("30000000"), Some("7"), 7),
            Some(s(15))
        );
        assert_eq!(watchdog_interval(Some("30000000"), Some("8"), 7), None);
        assert_eq!(watchdog_interval(Some("30000000"), Some("x"), 7), None);
        for bad in [None, Some("0"), Some(""), Some("-1"), Some("soon")] {
            assert_eq!(watchdog_interval(bad, None, 7), None, "{bad:?}");
        }
    }

    #[test]
    fn addresses_are_absolute_paths_or_abstract_names() {
        assert!(Target::new("/run/systemd/notify").is_ok());
        assert!(Target::new("@/org/freedesktop/systemd1/notify/123").is_ok());
        for bad in ["run/notify", "vsock:2:1234", "x"] {
            assert!(
                matches!(Target::new(bad), Err(NotifyError::BadAddress(_))),
                "{bad}"
            );
        }
    }

    fn received(socket: &UnixDatagram) -> String {
        let mut buf = [0u8; 512];
        let n = socket.recv(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn notifications_reach_a_path_and_an_abstract_socket() {
        let dir = std::env::temp_dir().join(format!("agentd-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let _ = std::fs::remove_file(&path);
        let listener = UnixDatagram::bind(&path).unwrap();
        let by_path = Systemd {
            target: Some(Target::new(path.to_str().unwrap()).unwrap()),
            watchdog: None,
        };
        by_path.notify("READY=1\nSTATUS=ok");
        assert_eq!(received(&listener), "READY=1\nSTATUS=ok");
        std::fs::remove_dir_all(&dir).ok();

        let name = format!("agentd-notify-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixDatagram::bind_addr(&addr).unwrap();
        let by_name = Systemd {
            target: Some(Target::new(&format!("@{name}")).unwrap()),
            watchdog: None,
        };
        by_name.stopping();
        assert_eq!(received(&listener), "STOPPING=1\nSTATUS=shutting down");
        // Without a socket, nothing happens and nothing fails.
        Systemd::default().notify("READY=1");
    }

    #[tokio::test]
    async fn ready_sends_a_one_line_status_and_pings_the_watchdog() {
        let name = format!("agentd-notify-wd-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixDatagram::bind_addr(&addr).unwrap();
        listener
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let systemd = std::sync::Arc::new(Systemd {
            target: Some(Target::new(&format!("@{name}")).unwrap()),
            watchdog: Some(Duration::from_millis(20)),
        });
        let guard = systemd.ready("listening on /x\nsessions in /y");
        assert!(guard.is_some());
        let listener = tokio::task::spawn_blocking(move || {
            assert_eq!(
                received(&listener),
                "READY=1\nSTATUS=listening on /x sessions in /y"
            );
            assert_eq!(received(&listener), "WATCHDOG=1");
            assert_eq!(received(&listener), "WATCHDOG=1");
            listener
        })
        .await
        .unwrap();
        drop(guard);
        tokio::time::sleep(Duration::from_millis(60)).await;
        // Pings sent before the abort may still be queued; none comes after it.
        listener.set_nonblocking(true).unwrap();
        while listener.recv(&mut [0u8; 64]).is_ok() {}
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(
            listener.recv(&mut [0u8; 64]).is_err(),
            "no ping after the guard"
        );
    }
}
