//! A connection to a running daemon: the handshake, one request at a time and its response, and
//! the events of the sessions it attaches to, apart. The REPL's daemon link and `agent sessions`
//! speak through it.

use protocol::control::*;
use protocol::event::EventEnvelope;
use protocol::ids::RequestId;
use protocol::io::{FrameReader, client_handshake, write_message};
use protocol::{Encoding, FrameDecoder};
use std::path::Path;
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;

/// The one encoding a Rust client speaks.
const ENCODING: Encoding = Encoding::Bincode;

/// Why a request got no answer it could use.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The daemon answered with an error; its message says why.
    #[error("{0}")]
    Refused(String),
    /// The connection failed, or the daemon answered nonsense.
    #[error("the connection to agentd failed: {0}")]
    Connection(String),
}

fn lost(e: impl std::fmt::Display) -> ClientError {
    ClientError::Connection(e.to_string())
}

/// A connection to the daemon.
#[derive(Debug)]
pub struct Client {
    /// Our half of the socket for requests.
    writer: OwnedWriteHalf,
    /// The frame size limit.
    decoder: FrameDecoder,
    /// The id of the next request.
    next_id: u64,
    /// Responses, in the order they came.
    responses: mpsc::UnboundedReceiver<Response>,
    /// The attached sessions' events.
    pub events: mpsc::UnboundedReceiver<EventEnvelope>,
}

impl Client {
    /// Connects to the daemon at `socket` and shakes hands (inside a tokio runtime: a reader
    /// task splits what the daemon sends into responses and events).
    pub async fn connect(socket: &Path) -> Result<Self, ClientError> {
        let stream = UnixStream::connect(socket).await.map_err(lost)?;
        let mut conn = FrameReader::new(
            stream,
            FrameDecoder::new(protocol::frame::DEFAULT_MAX_FRAME),
        );
        client_handshake(&mut conn, ENCODING).await.map_err(lost)?;
        let decoder = conn.decoder();
        let mut writer = None;
        let reader = conn.map_inner(|s| {
            let (r, w) = s.into_split();
            writer = Some(w);
            r
        });
        let writer = writer.ok_or_else(|| lost("the socket could not be split"))?;
        let (responses_tx, responses) = mpsc::unbounded_channel();
        let (events_tx, events) = mpsc::unbounded_channel();
        tokio::spawn(read(reader, responses_tx, events_tx));
        Ok(Self {
            writer,
            decoder,
            next_id: 1,
            responses,
            events,
        })
    }

    /// Sends `request` and waits for its response; an error response is an error.
    pub async fn ask(&mut self, request: Request) -> Result<ResponseBody, ClientError> {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        let message = ClientMessage { id, request };
        write_message(&mut self.writer, self.decoder, ENCODING, &message)
            .await
            .map_err(lost)?;
        loop {
            let response = self
                .responses
                .recv()
                .await
                .ok_or_else(|| lost("agentd closed the connection"))?;
            if response.id != id {
                continue;
            }
            return match response.body {
                ResponseBody::Error(e) => Err(ClientError::Refused(e.message)),
                body => Ok(body),
            };
        }
    }

    /// This user's sessions (everyone's with `all_users`, for an admin), oldest first.
    pub async fn list(
        &mut self,
        all_users: bool,
    ) -> Result<Vec<protocol::session::SessionInfo>, ClientError> {
        match self
            .ask(Request::ListSessions(ListSessions { all_users }))
            .await?
        {
            ResponseBody::Sessions(list) => Ok(list.sessions),
            other => Err(unexpected(&other)),
        }
    }
}

/// The error for a response of the wrong kind.
pub fn unexpected(body: &ResponseBody) -> ClientError {
    ClientError::Connection(format!("unexpected response: {}", body.variant_name()))
}

/// Reads what the daemon sends until the connection ends: responses and events apart.
async fn read(
    mut reader: FrameReader<tokio::net::unix::OwnedReadHalf>,
    responses: mpsc::UnboundedSender<Response>,
    events: mpsc::UnboundedSender<EventEnvelope>,
) {
    loop {
        match reader.read_message::<ServerMessage>(ENCODING).await {
            Ok(ServerMessage::Response(r)) => {
                let _ = responses.send(r);
            }
            Ok(ServerMessage::Event(e)) => {
                let _ = events.send(e);
            }
            Ok(ServerMessage::Error(e)) => {
                tracing::debug!("agentd: {} ({:?})", e.message, e.code);
                return;
            }
            Err(e) => {
                tracing::debug!("the connection to agentd ended: {e}");
                return;
            }
        }
    }
}
