//! `agentd serve` for the session suites: the real binary on a real socket, its model the
//! scripted mock LLM over HTTP on loopback, and a client in the `protocol` crate's terms.
#![allow(dead_code)] // each suite uses its own part of it

use agentd_e2e::{As, Dir, binary};
use protocol::control::*;
use protocol::event::{Event, EventEnvelope};
use protocol::ids::{RequestId, SessionId};
use protocol::io::{FrameReader, client_handshake, write_message};
use protocol::{Encoding, FrameDecoder};
use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::net::UnixStream;

/// How long any one event may take to come.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Where a daemon keeps things, kept across its restarts.
pub struct Place {
    /// The socket.
    pub socket: PathBuf,
    /// The state directory.
    pub state: Dir,
    /// Its config file.
    pub config: PathBuf,
    /// Its HOME (no `~/.agents/env` in it).
    pub home: Dir,
}

impl Place {
    /// A fresh place whose config file is `config`.
    pub fn new(config: &str) -> Self {
        let home = Dir::new("dsess-home", As::Root);
        let config_path = home.0.join("config.toml");
        std::fs::write(&config_path, config).unwrap();
        Place {
            socket: home.0.join("run/agentd.sock"),
            state: Dir::new("dsess-state", As::Root),
            config: config_path,
            home,
        }
    }

    /// The session's log.
    pub fn log(&self, id: &SessionId) -> PathBuf {
        self.state
            .0
            .join("sessions")
            .join(id.as_str())
            .join("log.jsonl")
    }
}

/// A running `agentd serve`; killed when dropped.
pub struct Daemon {
    pub child: Child,
}

impl Drop for Daemon {
    /// SIGTERM, as systemd stops it, so that it removes what it made (the sessions' temp
    /// roots under /tmp); SIGKILL if it has not exited within a few seconds.
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        if nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).is_ok() {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// Starts `agentd serve` in `place`, its model the mock at `model_url`; returns once it
    /// answers on its socket.
    pub fn start(place: &Place, model_url: &str) -> Self {
        let child = Command::new(binary("agentd"))
            .arg("serve")
            .arg("--socket")
            .arg(&place.socket)
            .arg("--state-dir")
            .arg(&place.state.0)
            .arg("--config")
            .arg(&place.config)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &place.home.0)
            .env("PROVIDER", "openai")
            .env("BASE_URL", model_url)
            .env("API_KEY", "sk-e2e")
            .env("MODEL", "mock-model")
            .env("AGENTD_TOOL_WORKER", binary("tool-worker"))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while std::os::unix::net::UnixStream::connect(&place.socket).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "agentd never listened on {}",
                place.socket.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Daemon { child }
    }

    /// `kill -9`, and reaped.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        assert_eq!(status.signal(), Some(9));
    }

    /// SIGTERM; returns its exit code once it has exited (at most `within`).
    pub fn sigterm(mut self, within: Duration) -> Option<i32> {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                start.elapsed() < within,
                "agentd did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A client: its requests, and the events that came while it waited for their answers.
pub struct Client {
    conn: FrameReader<UnixStream>,
    encoding: Encoding,
    next_id: u64,
    events: VecDeque<EventEnvelope>,
}

impl Client {
    /// Connects and shakes hands in `encoding`.
    pub async fn connect(socket: &Path, encoding: Encoding) -> Self {
        let stream = UnixStream::connect(socket).await.unwrap();
        let mut conn = FrameReader::new(stream, FrameDecoder::new(1 << 24));
        client_handshake(&mut conn, encoding).await.unwrap();
        Client {
            conn,
            encoding,
            next_id: 1,
            events: VecDeque::new(),
        }
    }

    async fn read(&mut self) -> ServerMessage {
        tokio::time::timeout(
            PATIENCE,
            self.conn.read_message::<ServerMessage>(self.encoding),
        )
        .await
        .expect("agentd sent nothing in time")
        .unwrap()
    }

    /// The next frame, or why there is none (`IoError::Closed`: the daemon closed the
    /// connection).
    pub async fn read_raw(&mut self) -> Result<ServerMessage, protocol::io::IoError> {
        tokio::time::timeout(
            PATIENCE,
            self.conn.read_message::<ServerMessage>(self.encoding),
        )
        .await
        .expect("agentd sent nothing in time")
    }

    /// Sends `request` and returns its answer; events that come first are kept for later.
    pub async fn ask(&mut self, request: Request) -> ResponseBody {
        let id = self.next_id;
        self.next_id += 1;
        let decoder = self.conn.decoder();
        let message = ClientMessage {
            id: RequestId(id),
            request,
        };
        write_message(self.conn.get_mut(), decoder, self.encoding, &message)
            .await
            .unwrap();
        loop {
            match self.read().await {
                ServerMessage::Response(r) => {
                    assert_eq!(r.id, RequestId(id));
                    return r.body;
                }
                ServerMessage::Event(e) => self.events.push_back(e),
                ServerMessage::Error(e) => panic!("error frame: {e:?}"),
            }
        }
    }

    /// The next event.
    pub async fn event(&mut self) -> EventEnvelope {
        if let Some(e) = self.events.pop_front() {
            return e;
        }
        match self.read().await {
            ServerMessage::Event(e) => e,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    /// The next frame that is not an event (the daemon's goodbye).
    pub async fn frame_after_events(&mut self) -> ServerMessage {
        loop {
            match self.read().await {
                ServerMessage::Event(e) => self.events.push_back(e),
                other => return other,
            }
        }
    }

    /// Events up to and including the next `turn_finished`.
    pub async fn until_turn_finished(&mut self) -> Vec<EventEnvelope> {
        let mut seen = Vec::new();
        loop {
            let e = self.event().await;
            let end = matches!(e.event, Event::TurnFinished(_));
            seen.push(e);
            if end {
                return seen;
            }
        }
    }

    /// Creates a session in `workspace` with `approval`; returns its id.
    pub async fn create(&mut self, workspace: &Path, approval: &str) -> SessionId {
        let request = serde_json::from_value(serde_json::json!({"type": "create_session",
            "workspace": workspace, "model": null, "approval": approval, "max_steps": 10,
            "title": "e2e"}))
        .unwrap();
        match self.ask(request).await {
            ResponseBody::SessionCreated(info) => info.id,
            other => panic!("create_session: {other:?}"),
        }
    }

    /// Attaches to `session`, replaying after `after`; returns how many events are replayed.
    pub async fn attach(&mut self, session: &SessionId, after: Option<u64>) -> u64 {
        let request = Request::AttachSession(AttachSession {
            session: session.clone(),
            after_seq: after.map(protocol::ids::Seq),
        });
        match self.ask(request).await {
            ResponseBody::Attached(a) => a.replaying,
            other => panic!("attach_session: {other:?}"),
        }
    }

    /// Loads the stored `session` again (`resume_session`), which must be taken.
    pub async fn resume(&mut self, session: &SessionId) {
        let request = Request::ResumeSession(ResumeSession {
            session: session.clone(),
        });
        assert_eq!(self.ask(request).await, ResponseBody::Ok, "resume_session");
    }

    /// Sends `text` to `session`; the answer.
    pub async fn send(&mut self, session: &SessionId, text: &str) -> ResponseBody {
        self.ask(Request::SendMessage(SendMessage {
            session: session.clone(),
            text: text.into(),
        }))
        .await
    }
}

/// The error code of `body`, if it is an error.
pub fn code(body: &ResponseBody) -> Option<ErrorCode> {
    match body {
        ResponseBody::Error(e) => Some(e.code),
        _ => None,
    }
}

/// A workspace with one file in it.
pub fn workspace() -> Dir {
    let ws = Dir::new("dsess-ws", As::Root);
    std::fs::write(ws.0.join("notes.txt"), "hello\n").unwrap();
    ws
}

/// Waits until `check` holds (at most [`PATIENCE`]).
pub fn wait_for(what: &str, check: impl Fn() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < PATIENCE, "never: {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A JSON client run as the test user (`python3` under `setpriv`), so the daemon sees its uid.
/// Sends each of `requests` in turn and returns every frame it got, in order. In a request,
/// the string `"$SESSION"` stands for the id of the last session created; after a
/// `send_message`, frames are read up to that turn's `turn_finished` (attach first).
pub fn as_user(socket: &Path, requests: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let script = r#"
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
def send(o):
    b = json.dumps(o).encode(); s.sendall(struct.pack(">I", len(b)) + b)
def recv():
    n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
    m = json.loads(s.recv(n, socket.MSG_WAITALL)); print(json.dumps(m), flush=True); return m
send({"hello": {"protocol": 1, "encoding": "json"}}); recv()
session = None
for i, req in enumerate(json.loads(sys.argv[2])):
    req = json.loads(json.dumps(req).replace('"$SESSION"', json.dumps(session)))
    send({"id": i, "request": req})
    while True:
        m = recv()
        if m.get("type") == "response": break
    if m["body"].get("type") == "session_created": session = m["body"]["id"]
    if req["type"] == "send_message" and m["body"].get("type") != "error":
        while True:
            m = recv()
            if m.get("type") == "event" and m["event"]["type"] == "turn_finished": break
"#;
    let out = agentd_e2e::command_for("/usr/bin/python3", As::User)
        .arg("-c")
        .arg(script)
        .arg(socket)
        .arg(serde_json::Value::from(requests.to_vec()).to_string())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the user's client failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
