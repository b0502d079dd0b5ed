//! Each request, answered for the peer that asked: what it may see and drive is checked by
//! [`Sessions`], what its connection is attached to lives in [`Attachments`].

use super::Server;
use super::attach::Attachments;
use super::connection::Peer;
use super::sessions::{Refusal, info_of};
use crate::engine::Subscription;
use protocol::bounds::{Bounded, TooLong};
use protocol::control::*;
use protocol::ids::SessionId;

/// The answer to one request, and the events to forward after it when it attached.
#[derive(Debug)]
pub struct Answer {
    /// What the client is told.
    pub body: ResponseBody,
    /// For an attach: the session and its events, forwarded once the response is queued.
    pub then: Option<(SessionId, Subscription)>,
}

impl From<Result<ResponseBody, Refusal>> for Answer {
    fn from(result: Result<ResponseBody, Refusal>) -> Self {
        Answer {
            body: result.unwrap_or_else(ResponseBody::Error),
            then: None,
        }
    }
}

/// Answers `request` from `peer`, whose connection holds `attachments`. Every request passes
/// [`Bounded`] first, here, the one place requests enter the daemon: a string over its limit
/// (`protocol::bounds`) is `bad_request` naming the field and the limit, and nothing of it is
/// kept.
pub async fn handle(
    server: &Server,
    peer: Peer,
    request: Request,
    attachments: &mut Attachments,
) -> Answer {
    if let Err(too_long) = request.check_bounds() {
        return Answer::from(Err(too_long_refusal(&too_long)));
    }
    let sessions = &server.sessions;
    let ok = |r: Result<(), Refusal>| r.map(|()| ResponseBody::Ok);
    match request {
        Request::Status => Ok(ResponseBody::Status(StatusInfo {
            version: env!("CARGO_PKG_VERSION").into(),
            protocol: protocol::PROTOCOL_VERSION,
            uptime_ms: server.uptime_ms(),
            sessions: u32::try_from(sessions.loaded_count()).unwrap_or(u32::MAX),
            landlock_abi: tool_worker::lockdown::landlock::kernel_abi(),
            containment: crate::worker::cgroup::Layout::detect().describe().into(),
            workers: u32::try_from(crate::worker::process::live()).unwrap_or(u32::MAX),
            seccomp: super::kernel::seccomp(),
        })),
        Request::ListSessions(l) => sessions
            .list(peer, l.all_users)
            .await
            .map(|sessions| ResponseBody::Sessions(SessionList { sessions })),
        Request::CreateSession(c) => sessions.create(peer, c).map(ResponseBody::SessionCreated),
        Request::ResumeSession(r) => ok(sessions.resume(peer, &r.session)),
        Request::DeleteSession(d) => {
            attachments.detach(&d.session).await;
            ok(sessions.delete(peer, &d.session).await)
        }
        Request::AttachSession(a) => return attach(server, peer, a, attachments),
        Request::DetachSession(d) => match attachments.detach(&d.session).await {
            true => {
                sessions.forget_if_unused(&d.session).await;
                Ok(ResponseBody::Ok)
            }
            false => Err(ErrorFrame::new(
                ErrorCode::NotFound,
                format!("this connection is not attached to session {}", d.session),
            )),
        },
        Request::SendMessage(SendMessage { ref session, .. })
        | Request::Interrupt(Interrupt { ref session })
        | Request::ApprovalReply(ApprovalReply { ref session, .. })
        | Request::Compact(Compact { ref session })
        | Request::SetApprovalMode(SetApprovalMode { ref session, .. })
        | Request::SetModel(SetModel { ref session, .. }) => {
            let session = session.clone();
            drive(server, peer, &session, request).await
        }
    }
    .into()
}

/// The answer to a request with a string over its limit.
fn too_long_refusal(e: &TooLong) -> Refusal {
    let hint = match e.field {
        "send_message.text" => ": put long text in a file of the workspace and name it",
        _ => "",
    };
    ErrorFrame::new(ErrorCode::BadRequest, format!("{e}{hint}"))
}

/// A message, an interrupt, an approval reply, a compaction or a change of mode or model, for a
/// loaded session of the peer's (anyone else's is not found).
async fn drive(
    server: &Server,
    peer: Peer,
    session: &SessionId,
    request: Request,
) -> Result<ResponseBody, Refusal> {
    let calls_the_model = matches!(request, Request::SendMessage(_) | Request::Compact(_));
    if calls_the_model && server.shutdown.is_triggered() {
        return Err(ErrorFrame::new(
            ErrorCode::ShuttingDown,
            "agentd is shutting down: connect again once it is back",
        ));
    }
    let loaded = server.sessions.get(peer, session)?;
    // A message is bounded, but not how many: a client whose turns all fail at once (a
    // provider that refuses) grew a root-owned log by 400 MB in twenty seconds, and the
    // daemon's memory with it (the history is held, and a resume reads the log whole).
    let (log_bytes, max) = (
        server.sessions.log_bytes(session),
        server.limits.max_session_log_bytes,
    );
    if calls_the_model && log_bytes > max {
        return Err(ErrorFrame::new(
            ErrorCode::Conflict,
            format!(
                "this session's log holds {log_bytes} bytes, past the {max} a session may grow to (max_session_log_bytes): start a new session; this one can still be listed and read"
            ),
        ));
    }
    loaded
        .handle
        .submit(request)
        .await
        .map(|()| ResponseBody::Ok)
        .map_err(|e| ErrorFrame::new(e.code(), e.to_string()))
}

/// Attaches the connection to a loaded session of the peer's, replaying after `after_seq`.
fn attach(server: &Server, peer: Peer, a: AttachSession, attachments: &mut Attachments) -> Answer {
    let attached = server.sessions.get(peer, &a.session).and_then(|loaded| {
        let events = loaded
            .handle
            .attach(a.after_seq)
            .map_err(|e| ErrorFrame::new(ErrorCode::NotFound, e.to_string()))?;
        let body = ResponseBody::Attached(Attached {
            session: info_of(&loaded),
            replaying: events.replaying() as u64,
        });
        Ok((body, events))
    });
    match attached {
        Ok((body, events)) => {
            // Any earlier attachment of this connection to it stops before the replay starts.
            attachments.abort(&a.session);
            Answer {
                body,
                then: Some((a.session, events)),
            }
        }
        Err(refusal) => Answer {
            body: ResponseBody::Error(refusal),
            then: None,
        },
    }
}
