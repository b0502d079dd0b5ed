//! `agentd serve` end to end: the real binary on a real socket, clients in both encodings, and
//! clients that break the protocol, stall or flood — none of which may affect another client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::{As, Dir, binary, binary_for, command_for, test_user};
use protocol::control::*;
use protocol::ids::RequestId;
use protocol::io::{FrameReader, IoError, client_handshake, write_message};
use protocol::{Encoding, FrameDecoder};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;

struct Daemon {
    child: Child,
    socket: PathBuf,
    state: Dir,
    _dir: Dir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn daemon(server_section: &str) -> Daemon {
    let dir = Dir::new("daemon", As::Root);
    let state = Dir::new("daemon-state", As::Root);
    let socket = dir.0.join("run/agentd.sock");
    let config = dir.0.join("config.toml");
    std::fs::write(&config, format!("[server]\n{server_section}\n")).unwrap();
    let child = Command::new(binary("agentd"))
        .arg("serve")
        .arg("--socket")
        .arg(&socket)
        .arg("--state-dir")
        .arg(&state.0)
        .arg("--config")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no socket at {}",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Daemon {
        child,
        socket,
        state,
        _dir: dir,
    }
}

async fn client(socket: &Path, encoding: Encoding) -> FrameReader<UnixStream> {
    let stream = UnixStream::connect(socket).await.unwrap();
    let mut reader = FrameReader::new(stream, FrameDecoder::new(1 << 24));
    let welcome = client_handshake(&mut reader, encoding).await.unwrap();
    assert_eq!(welcome.encoding, encoding);
    assert_eq!(welcome.peer.uid, 0, "the server saw who we are");
    reader
}

async fn ask(
    c: &mut FrameReader<UnixStream>,
    encoding: Encoding,
    id: u64,
    request: Request,
) -> ResponseBody {
    let decoder = c.decoder();
    let message = ClientMessage {
        id: RequestId(id),
        request,
    };
    write_message(c.get_mut(), decoder, encoding, &message)
        .await
        .unwrap();
    match c.read_message::<ServerMessage>(encoding).await.unwrap() {
        ServerMessage::Response(r) => {
            assert_eq!(r.id, RequestId(id));
            r.body
        }
        other => panic!("not a response: {other:?}"),
    }
}

/// What the server sends before it closes: its error frame, then the end of the stream.
async fn closed_with(c: &mut FrameReader<UnixStream>, encoding: Encoding) -> ErrorFrame {
    let frame = match c.read_message::<ServerMessage>(encoding).await {
        Ok(ServerMessage::Error(e)) => e,
        other => panic!("expected an error frame, got {other:?}"),
    };
    assert!(
        matches!(c.read_frame().await, Ok(None) | Err(IoError::Io(_))),
        "then closed"
    );
    frame
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

#[test]
fn clients_in_both_encodings_get_status_and_the_socket_is_private() {
    let d = daemon("");
    let mode = std::fs::metadata(&d.socket).unwrap().permissions().mode() & 0o777;
    assert!(mode == 0o600 || mode == 0o660, "socket mode {mode:o}");
    runtime().block_on(async {
        for encoding in [Encoding::Json, Encoding::Bincode] {
            let mut c = client(&d.socket, encoding).await;
            match ask(&mut c, encoding, 7, Request::Status).await {
                ResponseBody::Status(s) => {
                    assert_eq!(s.protocol, 1);
                    assert_eq!(s.version, env!("CARGO_PKG_VERSION"));
                }
                other => panic!("{other:?}"),
            }
            let body = ask(
                &mut c,
                encoding,
                8,
                Request::ListSessions(ListSessions { all_users: false }),
            )
            .await;
            assert_eq!(
                body,
                ResponseBody::Sessions(SessionList { sessions: vec![] })
            );
        }
    });
    // A second daemon on a live socket refuses, naming it.
    let out = Command::new(binary("agentd"))
        .args(["serve", "--socket"])
        .arg(&d.socket)
        .arg("--state-dir")
        .arg(&d.state.0)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("already listening") && err.contains(&d.socket.display().to_string()),
        "{err}"
    );
}

#[test]
fn garbage_oversized_and_silent_clients_are_dropped_and_others_go_on() {
    let d = daemon("handshake_timeout_ms = 300\nmax_frame_bytes = 4096");
    runtime().block_on(async {
        let mut good = client(&d.socket, Encoding::Json).await;

        // Not a hello.
        let mut bad = UnixStream::connect(&d.socket).await.unwrap();
        bad.write_all(b"\x00\x00\x00\x05hello").await.unwrap();
        let mut bad = FrameReader::new(bad, FrameDecoder::new(1 << 20));
        let reply = bad.read_message::<protocol::handshake::HandshakeReply>(Encoding::Json).await.unwrap();
        assert!(matches!(reply, protocol::handshake::HandshakeReply::Error(ref e) if e.code == ErrorCode::BadHandshake), "{reply:?}");

        // Garbage after a good handshake.
        let mut garbage = client(&d.socket, Encoding::Json).await;
        garbage.get_mut().write_all(b"\x00\x00\x00\x03{{{").await.unwrap();
        assert_eq!(closed_with(&mut garbage, Encoding::Json).await.code, ErrorCode::BadFrame);

        // A frame over the limit, refused on its header.
        let mut big = client(&d.socket, Encoding::Bincode).await;
        big.get_mut().write_all(&100_000u32.to_be_bytes()).await.unwrap();
        assert_eq!(closed_with(&mut big, Encoding::Bincode).await.code, ErrorCode::FrameTooLarge);

        // Nothing at all: dropped after the handshake deadline.
        let silent = UnixStream::connect(&d.socket).await.unwrap();
        let mut silent = FrameReader::new(silent, FrameDecoder::new(1 << 20));
        let started = Instant::now();
        let reply = silent.read_message::<protocol::handshake::HandshakeReply>(Encoding::Json).await.unwrap();
        assert!(matches!(reply, protocol::handshake::HandshakeReply::Error(ref e) if e.message.contains("no hello")), "{reply:?}");
        assert!(started.elapsed() < Duration::from_secs(3));

        assert!(matches!(ask(&mut good, Encoding::Json, 1, Request::Status).await, ResponseBody::Status(_)));
    });
}

/// The error frame a connection gets in place of a welcome.
async fn refused(socket: &Path) -> ErrorFrame {
    let stream = UnixStream::connect(socket).await.unwrap();
    let mut reader = FrameReader::new(stream, FrameDecoder::new(1 << 20));
    match reader
        .read_message::<protocol::handshake::HandshakeReply>(Encoding::Json)
        .await
        .unwrap()
    {
        protocol::handshake::HandshakeReply::Error(e) => e,
        other => panic!("{other:?}"),
    }
}

#[test]
fn one_uid_cannot_take_every_connection_slot() {
    let d = daemon("max_connections = 10\nmax_connections_per_uid = 2");
    runtime().block_on(async {
        let first = client(&d.socket, Encoding::Json).await;
        let mut second = client(&d.socket, Encoding::Json).await;
        let e = refused(&d.socket).await;
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(
            e.message.contains("too many connections from uid 0")
                && e.message.contains("per user is 2"),
            "{e:?}"
        );
        // Those it holds still work, and one closed gives its slot back.
        assert!(matches!(
            ask(&mut second, Encoding::Json, 1, Request::Status).await,
            ResponseBody::Status(_)
        ));
        drop(first);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let stream = UnixStream::connect(&d.socket).await.unwrap();
            let mut reader = FrameReader::new(stream, FrameDecoder::new(1 << 24));
            if client_handshake(&mut reader, Encoding::Json).await.is_ok() {
                break;
            }
            assert!(Instant::now() < deadline, "the slot never came back");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}

#[test]
fn the_connection_limit_and_a_client_that_stops_reading_affect_no_one_else() {
    // No reserve: the three are the whole limit, whoever holds them.
    let d = daemon("max_connections = 3\nreserved_connections_per_uid = 0\noutgoing_queue = 4");
    runtime().block_on(async {
        let mut good = client(&d.socket, Encoding::Json).await;
        let second = client(&d.socket, Encoding::Json).await;
        let third = client(&d.socket, Encoding::Json).await;
        // One over the limit.
        let fourth = UnixStream::connect(&d.socket).await.unwrap();
        let mut fourth = FrameReader::new(fourth, FrameDecoder::new(1 << 20));
        match fourth
            .read_message::<protocol::handshake::HandshakeReply>(Encoding::Json)
            .await
            .unwrap()
        {
            protocol::handshake::HandshakeReply::Error(e) => {
                assert_eq!(e.code, ErrorCode::Forbidden);
                assert!(e.message.contains("too many clients"), "{e:?}");
            }
            other => panic!("{other:?}"),
        }
        drop((second, third));
        tokio::time::sleep(Duration::from_millis(100)).await;

        // A client that sends requests as fast as it can and never reads a response.
        let mut flood = client(&d.socket, Encoding::Json).await;
        let decoder = flood.decoder();
        let request = protocol::io::encode_message(
            decoder,
            Encoding::Json,
            &ClientMessage {
                id: RequestId(1),
                request: Request::Status,
            },
        )
        .unwrap();
        let burst: Vec<u8> = request
            .iter()
            .copied()
            .cycle()
            .take(request.len() * 50_000)
            .collect();
        let writer = tokio::spawn(async move {
            let _ = flood.get_mut().write_all(&burst).await;
            flood
        });
        // The flooding client is dropped: its writes end in an error once the server closes.
        let done = tokio::time::timeout(Duration::from_secs(20), writer).await;
        assert!(done.is_ok(), "the flooding client was never dropped");
        let started = Instant::now();
        assert!(matches!(
            ask(&mut good, Encoding::Json, 2, Request::Status).await,
            ResponseBody::Status(_)
        ));
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the others were not held up"
        );
    });
}

/// A client as uid `uid` (the test user's, or any: the kernel needs no account) that opens
/// `count` connections, prints the handshake's answer on each as a JSON line, and holds them
/// until its stdin closes.
fn holder(socket: &Path, uid: u32, gid: u32, count: usize) -> Child {
    let script = r#"
import json, socket, struct, sys
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
    b = json.dumps({"hello": {"protocol": 1, "encoding": "json"}}).encode()
    s.sendall(struct.pack(">I", len(b)) + b)
    n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
    print(s.recv(n, socket.MSG_WAITALL).decode(), flush=True)
    held.append(s)
sys.stdin.read()
"#;
    Command::new("setpriv")
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={gid}"))
        .arg("--clear-groups")
        .args(["/usr/bin/python3", "-c", script])
        .arg(socket)
        .arg(count.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The first `n` lines `child` prints, as JSON.
fn answers(child: &mut Child, n: usize) -> Vec<serde_json::Value> {
    use std::io::BufRead;
    let out = std::io::BufReader::new(child.stdout.as_mut().unwrap());
    out.lines()
        .take(n)
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect()
}

#[test]
fn uids_filling_the_shared_slots_cannot_lock_out_another_uid() {
    let Some(user) = test_user() else {
        eprintln!("skipped: needs root to create the test user");
        return;
    };
    let d = daemon(
        "max_connections = 4\nmax_connections_per_uid = 16\nreserved_connections_per_uid = 2",
    );
    std::fs::set_permissions(
        d.socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    runtime().block_on(async {
        // Root and the test user each hold their reserve (2) and half the shared slots (4).
        let mut mine = Vec::new();
        for _ in 0..4 {
            mine.push(client(&d.socket, Encoding::Json).await);
        }
        let mut theirs = holder(&d.socket, user.uid, user.gid, 4);
        let welcomed = answers(&mut theirs, 4);
        assert!(
            welcomed
                .iter()
                .all(|w| w["welcome"]["peer"]["uid"] == user.uid),
            "{welcomed:?}"
        );
        let e = refused(&d.socket).await;
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(e.message.contains("too many clients"), "{e:?}");

        // A uid holding nothing still gets in, up to its reserve; then the full pool holds.
        let other = 3_999_999_000 + std::process::id() % 1000;
        let mut newcomer = holder(&d.socket, other, other, 3);
        drop(newcomer.stdin.take());
        let lines = answers(&mut newcomer, 3);
        assert!(newcomer.wait().unwrap().success());
        assert_eq!(lines[0]["welcome"]["peer"]["uid"], other, "{lines:?}");
        assert_eq!(lines[1]["welcome"]["peer"]["uid"], other, "{lines:?}");
        assert_eq!(lines[2]["error"]["code"], "forbidden", "{lines:?}");

        // The others' connections still work.
        assert!(matches!(
            ask(&mut mine[0], Encoding::Json, 1, Request::Status).await,
            ResponseBody::Status(_)
        ));
        drop(theirs.stdin.take());
        theirs.wait().unwrap();
    });
}

#[test]
fn a_user_sees_and_deletes_only_their_own_sessions() {
    let Some(user) = test_user() else {
        eprintln!("skipped: needs root to create the test user");
        return;
    };
    let d = daemon("");
    let store = agentd::store::Store::open(&d.state.0).unwrap();
    let (root_log, root_header) =
        agentd::store::log::SessionLog::create(&store, Path::new("/root/p"), "m", 0).unwrap();
    let (user_log, user_header) =
        agentd::store::log::SessionLog::create(&store, Path::new("/home/u/p"), "m", user.uid)
            .unwrap();
    drop((root_log, user_log));
    // Let the test user reach the socket (its own mode is tested above).
    std::fs::set_permissions(
        d.socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o666)).unwrap();

    // A client in another language, as another user: Python speaking the JSON encoding.
    let script = r#"
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
def send(o):
    b = json.dumps(o).encode(); s.sendall(struct.pack(">I", len(b)) + b)
def recv():
    n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
    return json.loads(s.recv(n, socket.MSG_WAITALL))
send({"hello": {"protocol": 1, "encoding": "json"}}); print(json.dumps(recv()))
for i, req in enumerate([{"type": "list_sessions", "all_users": False},
                         {"type": "list_sessions", "all_users": True},
                         {"type": "delete_session", "session": sys.argv[2]},
                         {"type": "delete_session", "session": sys.argv[3]}]):
    send({"id": i, "request": req}); print(json.dumps(recv()))
"#;
    let out = command_for("/usr/bin/python3", As::User)
        .arg("-c")
        .arg(script)
        .arg(&d.socket)
        .arg(root_header.id.as_str())
        .arg(user_header.id.as_str())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        5,
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        lines[0]["welcome"]["peer"]["uid"], user.uid,
        "SO_PEERCRED, not a claim"
    );
    let listed = lines[1]["body"]["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "only their own: {text}");
    assert_eq!(listed[0]["id"], user_header.id.as_str());
    assert_eq!(lines[2]["body"]["code"], "forbidden");
    assert_eq!(
        lines[3]["body"]["code"], "not_found",
        "root's session is not theirs: {text}"
    );
    assert_eq!(lines[4]["body"]["type"], "ok");
    assert!(
        store.dir_of(&root_header.id).exists(),
        "root's session is untouched"
    );
    assert!(
        !store.dir_of(&user_header.id).exists(),
        "their own is deleted"
    );
}

#[test]
fn the_daemon_is_not_dumpable_so_its_own_uid_cannot_read_or_trace_it() {
    if test_user().is_none() {
        eprintln!("skipped: needs root to create the test user");
        return;
    }
    let place = Dir::new("dump-place", As::User);
    let socket = place.0.join("agentd.sock");
    let mut daemon = command_for(binary_for("agentd", As::User), As::User)
        .arg("serve")
        .arg("--socket")
        .arg(&socket)
        .arg("--state-dir")
        .arg(place.0.join("state"))
        .env("HOME", &place.0)
        .env("AGENTD_SECRET_FOR_TEST", "sk-in-the-daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "agentd never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The same uid reads another of its processes' environment (sanity), never the daemon's,
    // and cannot attach to it with ptrace.
    let probe = r#"
import ctypes, os, subprocess, sys
pid = int(sys.argv[1])
import time
other = subprocess.Popen(["sleep", "30"], env={"MARK": "readable"})
# Until the child has exec'd, /proc/PID/environ is still this process's environment.
seen = False
for _ in range(200):
    seen = b"readable" in open(f"/proc/{other.pid}/environ", "rb").read()
    if seen:
        break
    time.sleep(0.01)
print("sanity", seen)
other.kill()
try:
    open(f"/proc/{pid}/environ", "rb").read(); print("environ read")
except PermissionError:
    print("environ refused")
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH = 16
rc = libc.ptrace(PTRACE_ATTACH, pid, None, None)
print("ptrace", "refused" if rc != 0 else "attached")
"#;
    let out = command_for("/usr/bin/python3", As::User)
        .arg("-c")
        .arg(probe)
        .arg(daemon.id().to_string())
        .output()
        .unwrap();
    let _ = daemon.kill();
    let _ = daemon.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("sanity True"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("environ refused"), "{text}");
    assert!(text.contains("ptrace refused"), "{text}");
}
