//! The requests, answered for the peer that asked: a uid sees and drives only its own sessions;
//! root, or a member of the configured admin group, may list everyone's. A session that exists
//! but is not yours is "not found", so its id tells you nothing.
//!
//! Sessions are listed and deleted from the store. Creating, attaching to and driving sessions
//! needs the session engine in the daemon, which is not built yet: those requests are answered
//! with an error that says so.

use super::Server;
use super::connection::Peer;
use crate::store::Store;
use crate::store::list::Summary;
use protocol::control::*;
use protocol::ids::SessionId;
use protocol::session::{SessionInfo, SessionState};

/// The daemon's sessions, and who may see them.
#[derive(Debug)]
pub struct Sessions {
    store: Store,
    admin_gid: Option<u32>,
}

fn error(code: ErrorCode, message: impl Into<String>) -> ResponseBody {
    ResponseBody::Error(ErrorFrame::new(code, message))
}

impl Sessions {
    /// The sessions of `store`; members of `admin_gid` (by their primary group, as
    /// `SO_PEERCRED` reports it) may list every user's.
    pub fn new(store: Store, admin_gid: Option<u32>) -> Self {
        Self { store, admin_gid }
    }

    /// Answers one request from `peer`.
    pub async fn handle(&self, peer: Peer, message: ClientMessage, server: &Server) -> Response {
        let body = match message.request {
            Request::Status => ResponseBody::Status(StatusInfo {
                version: env!("CARGO_PKG_VERSION").into(),
                protocol: protocol::PROTOCOL_VERSION,
                uptime_ms: server.uptime_ms(),
                sessions: 0,
                landlock_abi: tool_worker::lockdown::landlock::kernel_abi(),
                containment: crate::worker::cgroup::Layout::detect().describe().into(),
            }),
            Request::ListSessions(l) => self.list(peer, l.all_users),
            Request::DeleteSession(d) => self.delete(peer, &d.session),
            Request::CreateSession(_)
            | Request::AttachSession(_)
            | Request::DetachSession(_)
            | Request::ResumeSession(_)
            | Request::SendMessage(_)
            | Request::Interrupt(_)
            | Request::ApprovalReply(_) => error(
                ErrorCode::BadRequest,
                "this agentd does not run sessions yet: run them with `agent run`; the daemon lists and deletes them",
            ),
        };
        Response {
            id: message.id,
            body,
        }
    }

    fn is_admin(&self, peer: Peer) -> bool {
        peer.uid == 0 || self.admin_gid.is_some_and(|g| g == peer.gid)
    }

    fn list(&self, peer: Peer, all_users: bool) -> ResponseBody {
        if all_users && !self.is_admin(peer) {
            return error(
                ErrorCode::Forbidden,
                "only root or the admin group may list every user's sessions",
            );
        }
        let (found, errors) = self.store.list();
        for e in errors {
            tracing::warn!("{e}");
        }
        let mut sessions: Vec<SessionInfo> = found
            .iter()
            .filter(|s| all_users || s.owner_uid == peer.uid)
            .filter_map(info)
            .collect();
        sessions.sort_by_key(|s| s.created_unix_ms);
        ResponseBody::Sessions(SessionList { sessions })
    }

    fn delete(&self, peer: Peer, id: &SessionId) -> ResponseBody {
        let not_found = || error(ErrorCode::NotFound, format!("no session {}", id.as_str()));
        let (found, _) = self.store.list();
        let Some(session) = found.iter().find(|s| s.id == id.as_str()) else {
            return not_found();
        };
        if session.owner_uid != peer.uid && !self.is_admin(peer) {
            return not_found();
        }
        match self.store.delete(id) {
            Ok(()) => ResponseBody::Ok,
            Err(crate::store::StoreError::InUse { .. }) => error(
                ErrorCode::Conflict,
                format!("session {} is running; stop it first", id.as_str()),
            ),
            Err(e) => error(ErrorCode::Internal, e.to_string()),
        }
    }
}

fn info(s: &Summary) -> Option<SessionInfo> {
    Some(SessionInfo {
        id: SessionId::new(s.id.clone()).ok()?,
        owner_uid: s.owner_uid,
        workspace: s.workspace.clone(),
        model: s.model.clone(),
        state: SessionState::Stopped,
        created_unix_ms: s.created_unix_ms,
        last_seq: protocol::ids::Seq(s.last_seq),
        title: s.title.clone(),
    })
}
