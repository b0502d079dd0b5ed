//! `agentd serve` under systemd, without systemd as PID 1: the readiness protocol on a
//! `NOTIFY_SOCKET` the test binds (a path and an abstract name) — `READY=1` only once clients can
//! connect, watchdog pings at half of `WATCHDOG_USEC`, `STOPPING=1` at SIGTERM; socket activation
//! through `systemd-socket-activate`, systemd's own tool for it; and log lines with the journal's
//! priority prefix, and no timestamp, when stderr is the journal stream.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::{As, Dir, binary};
use protocol::io::{FrameReader, client_handshake};
use protocol::{Encoding, FrameDecoder};
use std::io::{BufRead as _, BufReader};
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A daemon, killed if the test ends early.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Daemon {
    fn terminate(&mut self) -> i32 {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.0.id()).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        self.0.wait().unwrap().code().unwrap_or(-1)
    }
}

/// The next notification, within `wait`.
fn next(socket: &UnixDatagram, wait: Duration) -> Option<String> {
    socket.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 1024];
    let n = socket.recv(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// Whether a client completes the handshake on `socket` now.
fn serves(socket: &Path) -> bool {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let Ok(stream) = tokio::net::UnixStream::connect(socket).await else {
            return false;
        };
        let mut reader = FrameReader::new(stream, FrameDecoder::new(1 << 20));
        client_handshake(&mut reader, Encoding::Json).await.is_ok()
    })
}

fn serve(dir: &Dir, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(binary("agentd"));
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(env.iter().copied())
        .arg("serve")
        .arg("--socket")
        .arg(dir.0.join("agentd.sock"))
        .arg("--state-dir")
        .arg(dir.0.join("state"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Runs the daemon with `NOTIFY_SOCKET=notify_socket` and checks the whole exchange.
fn readiness_over(listener: &UnixDatagram, notify_socket: &str) {
    let dir = Dir::new("notify", As::Root);
    let socket = dir.0.join("agentd.sock");
    let mut daemon = Daemon(
        serve(
            &dir,
            &[
                ("NOTIFY_SOCKET", notify_socket),
                ("WATCHDOG_USEC", "200000"),
            ],
        )
        .spawn()
        .unwrap(),
    );
    let ready = next(listener, Duration::from_secs(20)).expect("READY=1 within 20 s");
    // Ready means ready: a client is served the moment systemd would start the next unit.
    assert!(serves(&socket), "READY=1 came before the socket served");
    let mut lines = ready.lines();
    assert_eq!(lines.next(), Some("READY=1"), "{ready:?}");
    let status = lines.next().unwrap_or_default();
    assert!(
        status.starts_with("STATUS=listening on ") && status.contains(socket.to_str().unwrap()),
        "{ready:?}"
    );
    // Pings at half of WATCHDOG_USEC: 100 ms.
    let start = Instant::now();
    for _ in 0..3 {
        assert_eq!(
            next(listener, Duration::from_secs(5)).as_deref(),
            Some("WATCHDOG=1")
        );
    }
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(daemon.terminate(), 0);
    let mut rest = Vec::new();
    while let Some(m) = next(listener, Duration::from_millis(300)) {
        rest.push(m);
    }
    assert!(
        rest.iter().any(|m| m.starts_with("STOPPING=1\n")),
        "STOPPING=1 at SIGTERM: {rest:?}"
    );
    let last_stop = rest
        .iter()
        .rposition(|m| m.starts_with("STOPPING=1"))
        .unwrap();
    assert!(
        rest[last_stop + 1..].iter().all(|m| m != "WATCHDOG=1"),
        "no ping after STOPPING=1: {rest:?}"
    );
}

#[test]
fn ready_watchdog_and_stopping_reach_a_path_notify_socket() {
    let dir = Dir::new("notify-sock", As::Root);
    let path = dir.0.join("notify");
    let listener = UnixDatagram::bind(&path).unwrap();
    readiness_over(&listener, path.to_str().unwrap());
}

#[test]
fn ready_watchdog_and_stopping_reach_an_abstract_notify_socket() {
    // systemd itself uses an abstract name (`@/org/freedesktop/systemd1/notify/…`) in containers.
    let name = agentd_e2e::unique("agentd-e2e-notify");
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixDatagram::bind_addr(&addr).unwrap();
    readiness_over(&listener, &format!("@{name}"));
}

#[test]
fn a_watchdog_meant_for_another_process_is_not_pinged() {
    // WATCHDOG_PID names another process: its watchdog is not ours to ping.
    let name = agentd_e2e::unique("agentd-e2e-notify-pid");
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixDatagram::bind_addr(&addr).unwrap();
    let dir = Dir::new("notify-pid", As::Root);
    let mut daemon = Daemon(
        serve(
            &dir,
            &[
                ("NOTIFY_SOCKET", &format!("@{name}")),
                ("WATCHDOG_USEC", "100000"),
                ("WATCHDOG_PID", "1"),
            ],
        )
        .spawn()
        .unwrap(),
    );
    let ready = next(&listener, Duration::from_secs(20)).unwrap();
    assert!(ready.starts_with("READY=1"), "{ready}");
    assert_eq!(
        next(&listener, Duration::from_millis(500)),
        None,
        "no watchdog ping"
    );
    assert_eq!(daemon.terminate(), 0);
}

#[test]
fn socket_activation_through_systemd_socket_activate() {
    let Ok(tool) = which("systemd-socket-activate") else {
        eprintln!("skipped: systemd-socket-activate is not installed (apt install systemd)");
        return;
    };
    let dir = Dir::new("activate", As::Root);
    let socket = dir.0.join("activated.sock");
    let name = agentd_e2e::unique("agentd-e2e-activate");
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixDatagram::bind_addr(&addr).unwrap();
    // systemd-socket-activate binds the socket, and on the first connection execs agentd with
    // it as fd 3 and LISTEN_PID/LISTEN_FDS set, as systemd does for a .socket unit.
    let notify = format!("NOTIFY_SOCKET=@{name}");
    let mut daemon = Daemon(
        Command::new(tool)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .arg("-l")
            .arg(&socket)
            .args(["-E", &notify])
            .arg(binary("agentd"))
            .arg("serve")
            .arg("--socket")
            .arg(dir.0.join("ignored.sock"))
            .arg("--state-dir")
            .arg(dir.0.join("state"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    while !socket.exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(serves(&socket), "the first client is served by agentd");
    let ready = next(&listener, Duration::from_secs(10)).unwrap();
    assert!(
        ready.contains("STATUS=listening on the socket systemd passed"),
        "{ready}"
    );
    assert!(serves(&socket), "and the next one, on the same socket");
    assert!(
        !dir.0.join("ignored.sock").exists(),
        "--socket is ignored under activation"
    );
    assert_eq!(daemon.terminate(), 0);
}

#[test]
fn logs_carry_the_journal_priority_and_no_timestamp_when_stderr_is_the_journal() {
    // A NOTIFY_SOCKET that cannot be used is a warning: a log line to look at.
    for journal in [true, false] {
        let dir = Dir::new("journal", As::Root);
        let (reader, writer) = std::io::pipe().unwrap();
        let st = nix::sys::stat::fstat(&writer).unwrap();
        let stream = format!("{}:{}", st.st_dev, st.st_ino);
        let mut env = vec![("NOTIFY_SOCKET", "not/absolute")];
        if journal {
            env.push(("JOURNAL_STREAM", &stream));
        }
        let mut cmd = serve(&dir, &env);
        let mut daemon = Daemon(cmd.stderr(writer).spawn().unwrap());
        drop(cmd);
        let mut lines = BufReader::new(reader).lines();
        let warning = lines.next().unwrap().unwrap();
        let listening = lines.next().unwrap().unwrap();
        assert_eq!(daemon.terminate(), 0);
        assert!(
            listening.starts_with("agentd: listening on "),
            "{listening}"
        );
        let message = "NOTIFY_SOCKET=\"not/absolute\" is neither an absolute path nor an @abstract name; systemd will not be told when agentd is ready";
        if journal {
            assert_eq!(warning, format!("<4>{message}"));
        } else {
            assert!(
                warning.contains(" WARN ") || warning.starts_with("WARN "),
                "{warning}"
            );
            assert!(warning.ends_with(message), "{warning}");
        }
        assert!(
            !warning
                .chars()
                .take(12)
                .any(|c| c.is_ascii_digit() && c != '4'),
            "no timestamp: {warning}"
        );
    }
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .ok_or(())
}
