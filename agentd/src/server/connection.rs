//! One client, from hello to close. Reading and writing are separate tasks joined by a bounded
//! queue: responses are queued without waiting, events wait a little for room, and a client that
//! stops reading is dropped when its queue stays full instead of stalling whoever produces for it.
//! A client that makes no request with no session attached for the idle timeout is told so and
//! closed: nothing else bounds how long a held connection costs the daemon.

use super::Server;
use super::admission::Refused;
use super::attach::Attachments;
use protocol::Encoding;
use protocol::control::{ClientMessage, ErrorCode, ErrorFrame, Response, ServerMessage};
use protocol::frame::{FrameDecoder, FrameError};
use protocol::handshake::PeerIdentity;
use protocol::io::{FrameReader, IoError, server_handshake, write_message};
use std::sync::Arc;
use tokio::net::UnixStream;
use tokio::net::unix::OwnedReadHalf;
use tokio::sync::{Notify, mpsc};

/// Who is at the other end, as the kernel says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// Their uid.
    pub uid: u32,
    /// Their primary gid.
    pub gid: u32,
    /// Their pid, when the kernel knows it.
    pub pid: Option<i32>,
}

fn server_name() -> String {
    format!("agentd {}", env!("CARGO_PKG_VERSION"))
}

/// Tells a client over a connection limit so, and closes.
pub async fn refuse(mut stream: UnixStream, server: &Server, refused: Refused) {
    let message = match refused {
        Refused::All => format!(
            "too many clients connected (the limit is {} beyond each user's first {}); try again later",
            server.limits.max_connections, server.limits.reserved_connections_per_uid
        ),
        Refused::Uid(uid) => format!(
            "too many connections from uid {uid} (the limit per user is {}); close one and try again",
            server.limits.max_connections_per_uid
        ),
    };
    let frame = ErrorFrame::new(ErrorCode::Forbidden, message);
    reject(
        &mut stream,
        FrameDecoder::new(server.limits.max_frame_bytes),
        frame,
    )
    .await;
}

/// Answers in the handshake's place with an error frame (in JSON, as the handshake is); the
/// caller then closes. The peer may be gone already: nothing more can be done then.
async fn reject(stream: &mut UnixStream, decoder: FrameDecoder, frame: ErrorFrame) {
    let reply = protocol::handshake::HandshakeReply::Error(frame);
    let _ = write_message(stream, decoder, Encoding::Json, &reply).await;
}

/// Serves one client until it leaves, breaks the protocol, or falls behind.
pub async fn run(stream: UnixStream, server: &Server) {
    let Ok(cred) = stream.peer_cred() else {
        return;
    };
    let peer = Peer {
        uid: cred.uid(),
        gid: cred.gid(),
        pid: cred.pid(),
    };
    let decoder = FrameDecoder::new(server.limits.max_frame_bytes);
    let mut reader = FrameReader::new(stream, decoder);
    let identity = PeerIdentity {
        uid: peer.uid,
        gid: peer.gid,
        pid: peer.pid,
    };
    let name = server_name();
    let hello = server_handshake(&mut reader, &name, identity);
    let encoding = match tokio::time::timeout(server.limits.handshake_timeout, hello).await {
        Ok(Ok(encoding)) => encoding,
        // A bad hello was answered with its error frame by the handshake itself.
        Ok(Err(_)) => return,
        Err(_) => {
            let frame = ErrorFrame::new(
                ErrorCode::BadHandshake,
                format!(
                    "no hello within {} s",
                    server.limits.handshake_timeout.as_secs_f64()
                ),
            );
            reject(reader.get_mut(), decoder, frame).await;
            return;
        }
    };
    let mut write_half = None;
    let reader = reader.map_inner(|stream| {
        let (read_half, w) = stream.into_split();
        write_half = Some(w);
        read_half
    });
    let Some(mut write_half) = write_half else {
        return;
    };
    let (out, mut queue) = mpsc::channel::<ServerMessage>(server.limits.outgoing_queue.max(1));
    let writer = tokio::spawn(async move {
        while let Some(message) = queue.recv().await {
            if write_message(&mut write_half, decoder, encoding, &message)
                .await
                .is_err()
            {
                return;
            }
        }
    });
    match requests(server, peer, reader, encoding, out).await {
        Ok(()) => {
            let _ = writer.await;
        }
        Err(FellBehind) => {
            tracing::info!("client uid {} fell behind; dropped", peer.uid);
            writer.abort();
        }
    }
}

/// A client that let its outgoing queue fill up.
struct FellBehind;

/// Answers `peer`'s requests, and forwards the events of the sessions it attaches to, until it
/// leaves, breaks the protocol, falls behind, or the daemon says goodbye.
async fn requests(
    server: &Server,
    peer: Peer,
    reader: FrameReader<OwnedReadHalf>,
    encoding: Encoding,
    out: mpsc::Sender<ServerMessage>,
) -> Result<(), FellBehind> {
    let dropped = Arc::new(Notify::new());
    let mut attachments = Attachments::new(out.clone(), Arc::clone(&dropped));
    let ended = answer(
        server,
        peer,
        reader,
        encoding,
        &out,
        &dropped,
        &mut attachments,
    )
    .await;
    // A session never given a message is on no disk: once the last client attached to it
    // has left, it goes (one created and never attached stays until deleted or agentd stops).
    for id in attachments.leave_all().await {
        server.sessions.forget_if_unused(&id).await;
    }
    ended
}

/// [`requests`]' loop: until the peer leaves, breaks the protocol, falls behind, or goodbye.
async fn answer(
    server: &Server,
    peer: Peer,
    mut reader: FrameReader<OwnedReadHalf>,
    encoding: Encoding,
    out: &mpsc::Sender<ServerMessage>,
    dropped: &Notify,
    attachments: &mut Attachments,
) -> Result<(), FellBehind> {
    loop {
        let idle = idle_for(server.limits.idle_timeout, attachments.attached());
        let read = tokio::select! {
            read = reader.read_message::<ClientMessage>(encoding) => read,
            () = dropped.notified() => return Err(FellBehind),
            () = idle => {
                let frame = ErrorFrame::new(
                    ErrorCode::Idle,
                    format!(
                        "no request and no session attached for {} s: closed; connect again",
                        server.limits.idle_timeout.as_secs_f64()
                    ),
                );
                let _ = out.try_send(ServerMessage::Error(frame));
                return Ok(());
            }
            () = server.goodbye.wait() => {
                // The sessions have stopped: their last events go out before the goodbye.
                attachments.finish(super::attach::EVENT_STALL).await;
                let frame = ErrorFrame::new(
                    ErrorCode::ShuttingDown,
                    "agentd is shutting down; every session is saved: resume it once agentd is back",
                );
                let _ = out.try_send(ServerMessage::Error(frame));
                return Ok(());
            }
        };
        let message = match read {
            Ok(message) => message,
            Err(IoError::Closed) => return Ok(()),
            Err(e) => {
                if let Some(frame) = frame_error(&e) {
                    let _ = out.try_send(ServerMessage::Error(frame));
                }
                return Ok(());
            }
        };
        let answer = super::requests::handle(server, peer, message.request, attachments).await;
        let response = Response {
            id: message.id,
            body: answer.body,
        };
        out.try_send(ServerMessage::Response(response))
            .map_err(|_| FellBehind)?;
        if let Some((session, events)) = answer.then {
            attachments.start(session, events);
        }
    }
}

/// Ends after `timeout`, or never while a session is `attached` (its events are what the
/// client waits for). Made afresh for each request: any request starts it again.
async fn idle_for(timeout: std::time::Duration, attached: bool) {
    if attached {
        std::future::pending::<()>().await;
    }
    tokio::time::sleep(timeout).await;
}

/// The error frame for what broke the connection, if the peer can still be told.
fn frame_error(e: &IoError) -> Option<ErrorFrame> {
    match e {
        IoError::Frame(f @ FrameError::TooLarge { .. }) => {
            Some(ErrorFrame::new(ErrorCode::FrameTooLarge, f.to_string()))
        }
        IoError::Codec(c) => Some(ErrorFrame::new(ErrorCode::BadFrame, c.to_string())),
        IoError::Frame(f) => Some(ErrorFrame::new(ErrorCode::BadFrame, f.to_string())),
        _ => None,
    }
}
