//! The daemon link: a session in a running `agentd serve`, driven over its control socket
//! (`docs/protocol.md`) with the `protocol` crate's framing, bincode codec and handshake
//! ([`Client`]: a reader task splits what the daemon sends into responses, one request in
//! flight at a time, and the attached session's events).
//!
//! When the daemon goes away (restarted, upgraded), the link connects again — waiting up to
//! [`RECONNECT_WAIT`] for it to be back — resumes the session from its log and attaches after
//! the last event it saw, so nothing is shown twice; the request that found the connection gone
//! is then sent again. A session that never had a message was never written, so it cannot be
//! resumed: a new one takes its place. Either way the REPL is told in one line ([`notice`]).
//!
//! [`notice`]: SessionLink::notice

use super::link::{LinkError, Listed, Opened, SessionLink, Start};
use crate::cli::client::{Client, ClientError, unexpected};
use protocol::control::*;
use protocol::event::EventEnvelope;
use protocol::ids::Seq;
use protocol::ids::{ApprovalId, SessionId};
use protocol::session::SessionInfo;
use protocol::verdict::{ApprovalDecision, ApprovalMode};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a lost daemon is waited for, connecting again every [`RECONNECT_EVERY`].
pub const RECONNECT_WAIT: Duration = Duration::from_secs(15);
/// How often a lost daemon is tried again.
const RECONNECT_EVERY: Duration = Duration::from_millis(200);

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
    /// The connection.
    client: Client,
    /// The session.
    session: SessionInfo,
    /// The socket, for the banner.
    socket: PathBuf,
    /// The workspace (`-c` looks for its newest session).
    workspace: PathBuf,
    /// How a new session is asked for (`/new`, `/delete` of the open one).
    create: CreateSession,
    /// The newest event seen of the session: attached again after it, after a reconnect.
    seen: Option<Seq>,
    /// What the REPL should say: the link connected again.
    notice: Option<String>,
}

impl From<ClientError> for LinkError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Refused(m) => LinkError::Refused(m),
            ClientError::Connection(m) => LinkError::Connection(m),
        }
    }
}

impl RemoteLink {
    /// Connects, shakes hands, and opens the first session: a new one, or with `Start::Last`
    /// the newest of this workspace.
    pub async fn open(connect: Connect<'_>, first: &Start) -> Result<(Self, Opened), LinkError> {
        let client = Client::connect(connect.socket).await?;
        let mut link = Self {
            client,
            // Replaced below by the session opened.
            session: placeholder(connect.workspace),
            socket: connect.socket.to_path_buf(),
            workspace: connect.workspace.to_path_buf(),
            create: CreateSession {
                workspace: connect.workspace.to_path_buf(),
                model: connect.model,
                approval: connect.approval,
                max_steps: connect.max_steps,
                title: None,
                read_only: false,
            },
            seen: None,
            notice: None,
        };
        let last = match first {
            Start::Last => link.newest_here().await?,
            Start::New => None,
        };
        let replaying = match &last {
            Some(id) => link.switch(id).await?,
            None => link.create().await?,
        };
        let opened = Opened {
            missed: *first == Start::Last && last.is_none(),
            replaying,
        };
        Ok((link, opened))
    }

    /// A new session, attached (the daemon keeps it from its first message on).
    async fn create(&mut self) -> Result<usize, LinkError> {
        let create = Request::CreateSession(self.create.clone());
        let info = match self.ask(create).await? {
            ResponseBody::SessionCreated(info) => info,
            other => return Err(unexpected(&other).into()),
        };
        self.attach(&info.id).await
    }

    /// Sends `request` and waits for its response; an error response is an error. When the
    /// connection is gone, connects again and sends it once more.
    async fn ask(&mut self, request: Request) -> Result<ResponseBody, LinkError> {
        match self.client.ask(request.clone()).await {
            Err(ClientError::Connection(_)) => {
                self.reconnect().await?;
                Ok(self.client.ask(request).await?)
            }
            answer => Ok(answer?),
        }
    }

    /// Sends the request `make` builds for the open session; when the connection is gone,
    /// connects again ([`RemoteLink::reconnect`]) and sends it once more, for the session then
    /// open.
    async fn ask_session(
        &mut self,
        make: impl Fn(SessionId) -> Request,
    ) -> Result<ResponseBody, LinkError> {
        match self.client.ask(make(self.session.id.clone())).await {
            Err(ClientError::Connection(_)) => {
                self.reconnect().await?;
                Ok(self.client.ask(make(self.session.id.clone())).await?)
            }
            answer => Ok(answer?),
        }
    }

    /// Connects again (the daemon restarted), and resumes and attaches the open session after
    /// the last event seen; one never written is replaced by a new one. Sets the notice.
    async fn reconnect(&mut self) -> Result<(), LinkError> {
        let deadline = tokio::time::Instant::now() + RECONNECT_WAIT;
        self.client = loop {
            match Client::connect(&self.socket).await {
                Ok(client) => break client,
                Err(_) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(RECONNECT_EVERY).await;
                }
                Err(e) => {
                    return Err(LinkError::Connection(format!(
                        "agentd at {} is not answering ({e}); the session is kept: send again once agentd is back, or leave and continue it with `agent -c`",
                        self.socket.display()
                    )));
                }
            }
        };
        let old = self.session.id.clone();
        let resume = Request::ResumeSession(ResumeSession {
            session: old.clone(),
        });
        match self.client.ask(resume).await {
            Ok(_) => {
                let attach = AttachSession {
                    session: old.clone(),
                    after_seq: self.seen,
                };
                match self.client.ask(Request::AttachSession(attach)).await? {
                    ResponseBody::Attached(a) => self.session = a.session,
                    other => return Err(unexpected(&other).into()),
                }
                self.notice = Some(format!(
                    "agentd restarted: connected again, session {old} goes on"
                ));
            }
            Err(ClientError::Refused(_)) => {
                let create = Request::CreateSession(self.create.clone());
                let info = match self.client.ask(create).await? {
                    ResponseBody::SessionCreated(info) => info,
                    other => return Err(unexpected(&other).into()),
                };
                let attach = AttachSession {
                    session: info.id.clone(),
                    after_seq: None,
                };
                match self.client.ask(Request::AttachSession(attach)).await? {
                    ResponseBody::Attached(a) => self.session = a.session,
                    other => return Err(unexpected(&other).into()),
                }
                self.seen = None;
                self.notice = Some(format!(
                    "agentd restarted: session {old} had no message and was not kept; this is a new one, {}",
                    self.session.id
                ));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
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
                self.seen = None;
                Ok(usize::try_from(a.replaying).unwrap_or(usize::MAX))
            }
            other => Err(unexpected(&other).into()),
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
        Ok(self.client.list(false).await?)
    }

    /// The session `agent -c` continues: [`super::link::newest_here`] of this user's.
    async fn newest_here(&mut self) -> Result<Option<String>, LinkError> {
        let list = self.list().await?;
        Ok(super::link::newest_here(
            list.iter().map(|s| super::link::Candidate {
                id: s.id.as_str(),
                workspace: &s.workspace,
                owner_uid: s.owner_uid,
                last_activity_unix_ms: s.last_activity_unix_ms,
                has_events: s.last_seq.0 > 0,
            }),
            &self.workspace,
            nix::unistd::geteuid().as_raw(),
        ))
    }
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
        last_activity_unix_ms: 0,
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
        let text = text.to_owned();
        self.ask_session(|session| {
            Request::SendMessage(SendMessage {
                session,
                text: text.clone(),
            })
        })
        .await
        .map(drop)
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
        self.ask_session(|session| Request::Compact(Compact { session }))
            .await
            .map(drop)
    }

    async fn set_approval(&mut self, mode: ApprovalMode) -> Result<(), LinkError> {
        self.ask_session(|session| Request::SetApprovalMode(SetApprovalMode { session, mode }))
            .await?;
        self.session.approval = mode;
        Ok(())
    }

    async fn set_model(&mut self, model: &str) -> Result<(), LinkError> {
        self.ask_session(|session| {
            Request::SetModel(SetModel {
                session,
                model: model.to_owned(),
            })
        })
        .await?;
        self.session.model = model.trim().to_owned();
        Ok(())
    }

    async fn next_event(&mut self) -> Option<EventEnvelope> {
        loop {
            let e = self.client.events.recv().await?;
            // A late event of a session this connection left is not this one's.
            if e.session == self.session.id {
                self.seen = Some(e.seq);
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

    fn kept(&self) -> bool {
        // Events seen: its history, or this REPL's turns (a session is written at its first
        // message, and the daemon keeps every session it wrote).
        self.seen.is_some()
    }

    async fn recover(&mut self) -> Result<bool, LinkError> {
        self.reconnect().await.map(|()| true)
    }

    fn notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    async fn renew(&mut self, delete_old: bool) -> Result<(), LinkError> {
        let old = self.session.id.clone();
        self.create().await?;
        // Deleting detaches too; a session left with no message and nobody else watching is
        // forgotten by the daemon either way.
        let request = match delete_old {
            true => Request::DeleteSession(DeleteSession { session: old }),
            false => Request::DetachSession(DetachSession { session: old }),
        };
        self.ask(request).await.map(drop)
    }

    async fn delete(&mut self, id: &str) -> Result<(), LinkError> {
        let session = SessionId::new(id).map_err(|e| LinkError::Refused(format!("{id:?}: {e}")))?;
        self.ask(Request::DeleteSession(DeleteSession { session }))
            .await
            .map(drop)
    }

    async fn close(&mut self) {
        // Not connecting again to leave: a daemon that is gone has left the session already.
        let session = self.session.id.clone();
        let _ = self
            .client
            .ask(Request::DetachSession(DetachSession { session }))
            .await;
    }
}
