//! The daemon link: a session in a running `agentd serve`, driven over its control socket
//! (`docs/protocol.md`) with the `protocol` crate's framing, bincode codec and handshake. A
//! reader task splits what the daemon sends into responses (one request is in flight at a time)
//! and the attached session's events.

use super::link::{LinkError, Listed, Opened, SessionLink, Start};
use protocol::control::*;
use protocol::event::EventEnvelope;
use protocol::ids::{ApprovalId, RequestId, SessionId};
use protocol::io::{FrameReader, client_handshake, write_message};
use protocol::session::SessionInfo;
use protocol::verdict::{ApprovalDecision, ApprovalMode};
use protocol::{Encoding, FrameDecoder};
use std::path::{Path, PathBuf};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;

/// Where and how to open the first session.
#[derive(Debug)]
pub struct Connect<'a> {
    /// The daemon's socket.
    pub socket: &'a Path,
    /// The workspace, canonical.
    pub workspace: &'a Path,
    /// The model for a new session (the daemon's default when `None`).
    pub model: Option<String>,
    /// The approval mode of a new session.
    pub approval: ApprovalMode,
    /// Steps per turn of a new session.
    pub max_steps: Option<u32>,
}

/// A session in the daemon.
#[derive(Debug)]
pub struct RemoteLink {
    /// Our half of the socket for requests.
    writer: OwnedWriteHalf,
    /// The frame size limit.
    decoder: FrameDecoder,
    /// The id of the next request.
    next_id: u64,
    /// Responses, in the order they came.
    responses: mpsc::UnboundedReceiver<Response>,
    /// The attached session's events.
    events: mpsc::UnboundedReceiver<EventEnvelope>,
    /// The session.
    session: SessionInfo,
    /// The socket, for the banner.
    socket: PathBuf,
    /// The workspace (`-c` looks for its newest session).
    workspace: PathBuf,
}

/// The one encoding a Rust client speaks.
const ENCODING: Encoding = Encoding::Bincode;

fn lost(e: impl std::fmt::Display) -> LinkError {
    LinkError::Connection(e.to_string())
}

impl RemoteLink {
    /// Connects, shakes hands, and opens the first session: a new one, or with `Start::Last`
    /// the newest of this workspace.
    pub async fn open(connect: Connect<'_>, first: &Start) -> Result<(Self, Opened), LinkError> {
        let stream = UnixStream::connect(connect.socket).await.map_err(lost)?;
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
        let mut link = Self {
            writer,
            decoder,
            next_id: 1,
            responses,
            events,
            // Replaced below by the session opened.
            session: placeholder(connect.workspace),
            socket: connect.socket.to_path_buf(),
            workspace: connect.workspace.to_path_buf(),
        };
        let last = match first {
            Start::Last => link.newest_here().await?,
            Start::New => None,
        };
        let replaying = match &last {
            Some(id) => link.switch(id).await?,
            None => {
                let create = CreateSession {
                    workspace: connect.workspace.to_path_buf(),
                    model: connect.model,
                    approval: connect.approval,
                    max_steps: connect.max_steps,
                    title: None,
                    read_only: false,
                };
                let info = match link.ask(Request::CreateSession(create)).await? {
                    ResponseBody::SessionCreated(info) => info,
                    other => return Err(unexpected(&other)),
                };
                link.attach(&info.id).await?
            }
        };
        let opened = Opened {
            missed: *first == Start::Last && last.is_none(),
            replaying,
        };
        Ok((link, opened))
    }

    /// Sends `request` and waits for its response; an error response is an error.
    async fn ask(&mut self, request: Request) -> Result<ResponseBody, LinkError> {
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
                ResponseBody::Error(e) => Err(LinkError::Refused(e.message)),
                body => Ok(body),
            };
        }
    }

    /// Attaches to session `id` from its first event; returns how many are history.
    async fn attach(&mut self, id: &SessionId) -> Result<usize, LinkError> {
        let attach = AttachSession {
            session: id.clone(),
            after_seq: None,
        };
        match self.ask(Request::AttachSession(attach)).await? {
            ResponseBody::Attached(a) => {
                self.session = a.session;
                Ok(usize::try_from(a.replaying).unwrap_or(usize::MAX))
            }
            other => Err(unexpected(&other)),
        }
    }

    /// Loads stored session `id` in the daemon (if it is not loaded) and attaches to it;
    /// returns how many of its events are history.
    async fn switch(&mut self, id: &str) -> Result<usize, LinkError> {
        let id = SessionId::new(id).map_err(|e| LinkError::Refused(format!("{id:?}: {e}")))?;
        let resume = ResumeSession {
            session: id.clone(),
        };
        self.ask(Request::ResumeSession(resume)).await?;
        self.attach(&id).await
    }

    /// This user's sessions, oldest first, as the daemon lists them.
    async fn list(&mut self) -> Result<Vec<SessionInfo>, LinkError> {
        match self
            .ask(Request::ListSessions(ListSessions { all_users: false }))
            .await?
        {
            ResponseBody::Sessions(list) => Ok(list.sessions),
            other => Err(unexpected(&other)),
        }
    }

    /// The newest session of this workspace.
    async fn newest_here(&mut self) -> Result<Option<String>, LinkError> {
        let workspace = self.workspace.clone();
        Ok(self
            .list()
            .await?
            .into_iter()
            .filter(|s| s.workspace == workspace)
            .max_by_key(|s| (s.created_unix_ms, s.last_seq.0))
            .map(|s| s.id.as_str().to_owned()))
    }
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
                tracing::warn!("agentd: {} ({:?})", e.message, e.code);
                return;
            }
            Err(e) => {
                tracing::debug!("the connection to agentd ended: {e}");
                return;
            }
        }
    }
}

fn unexpected(body: &ResponseBody) -> LinkError {
    LinkError::Connection(format!("unexpected response: {}", body.variant_name()))
}

/// A stand-in until the first session is attached.
fn placeholder(workspace: &Path) -> SessionInfo {
    SessionInfo {
        id: crate::cli::run::session_id(),
        owner_uid: 0,
        workspace: workspace.to_path_buf(),
        model: String::new(),
        state: protocol::session::SessionState::Idle,
        created_unix_ms: 0,
        last_seq: protocol::ids::Seq(0),
        title: None,
        approval: ApprovalMode::OnRisk,
    }
}

impl SessionLink for RemoteLink {
    fn session(&self) -> &SessionId {
        &self.session.id
    }

    fn model(&self) -> String {
        self.session.model.clone()
    }

    fn approval(&self) -> ApprovalMode {
        self.session.approval
    }

    fn transport(&self) -> String {
        format!("agentd at {}", self.socket.display())
    }

    async fn send(&mut self, text: &str) -> Result<(), LinkError> {
        let send = SendMessage {
            session: self.session.id.clone(),
            text: text.to_owned(),
        };
        self.ask(Request::SendMessage(send)).await.map(drop)
    }

    async fn interrupt(&mut self) -> Result<(), LinkError> {
        let session = self.session.id.clone();
        self.ask(Request::Interrupt(Interrupt { session }))
            .await
            .map(drop)
    }

    async fn approve(
        &mut self,
        approval: ApprovalId,
        decision: ApprovalDecision,
    ) -> Result<(), LinkError> {
        let reply = ApprovalReply {
            session: self.session.id.clone(),
            approval,
            decision,
        };
        self.ask(Request::ApprovalReply(reply)).await.map(drop)
    }

    async fn compact(&mut self) -> Result<(), LinkError> {
        let session = self.session.id.clone();
        self.ask(Request::Compact(Compact { session }))
            .await
            .map(drop)
    }

    async fn set_approval(&mut self, mode: ApprovalMode) -> Result<(), LinkError> {
        let session = self.session.id.clone();
        self.ask(Request::SetApprovalMode(SetApprovalMode { session, mode }))
            .await?;
        self.session.approval = mode;
        Ok(())
    }

    async fn set_model(&mut self, model: &str) -> Result<(), LinkError> {
        let session = self.session.id.clone();
        let set = SetModel {
            session,
            model: model.to_owned(),
        };
        self.ask(Request::SetModel(set)).await?;
        self.session.model = model.trim().to_owned();
        Ok(())
    }

    async fn next_event(&mut self) -> Option<EventEnvelope> {
        loop {
            let e = self.events.recv().await?;
            // A late event of a session this connection left is not this one's.
            if e.session == self.session.id {
                return Some(e);
            }
        }
    }

    async fn sessions(&mut self) -> Result<Vec<Listed>, LinkError> {
        let mut list = self.list().await?;
        list.reverse();
        Ok(list
            .into_iter()
            .map(|s| Listed {
                id: s.id.as_str().to_owned(),
                workspace: s.workspace,
                state: format!("{:?}", s.state).to_lowercase(),
                title: s.title,
            })
            .collect())
    }

    async fn resume(&mut self, id: &str) -> Result<usize, LinkError> {
        if id == self.session.id.as_str() {
            return Err(LinkError::Refused(format!("session {id} is the one open")));
        }
        let previous = self.session.id.clone();
        let count = self.switch(id).await?;
        // Leaving the old session: it goes on in the daemon, without this client.
        let detach = DetachSession { session: previous };
        if let Err(e) = self.ask(Request::DetachSession(detach)).await {
            tracing::warn!("could not detach from the previous session: {e}");
        }
        Ok(count)
    }

    async fn close(&mut self) {
        let session = self.session.id.clone();
        let _ = self
            .ask(Request::DetachSession(DetachSession { session }))
            .await;
    }
}
