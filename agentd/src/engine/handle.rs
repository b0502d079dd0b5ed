//! The handle every front end holds on a session: it submits operations (the control
//! protocol's requests) to the session's task and subscribes to its events after a sequence
//! number. `agent run` holds one in-process; the daemon holds one per loaded session and hands
//! subscriptions to its clients.

use super::actor::Op;
use super::approvals::{AnswerError, Broker};
use super::journal::{Journal, JournalError};
use super::shutdown::Shutdown;
use crate::agent::turn::TurnOutcome;
use protocol::control::{Compact, ErrorCode, Request, SendMessage, SetApprovalMode, SetModel};
use protocol::event::EventEnvelope;
use protocol::ids::{Seq, SessionId};
use protocol::session::SessionState;
use protocol::verdict::ApprovalMode;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{mpsc, oneshot};

/// Why an operation was not carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    /// A turn is running; one at a time.
    #[error("a turn is already running in session {0}: interrupt it or wait for it to finish")]
    Busy(String),
    /// An approval reply that found nothing to answer.
    #[error(transparent)]
    Approval(#[from] AnswerError),
    /// This session's asks are not answered by clients.
    #[error("session {0} does not take approval replies from clients")]
    NoClients(String),
    /// A request that is not an operation on a running session.
    #[error("{0} is not an operation on a session")]
    NotAnOp(&'static str),
    /// The session's task has ended.
    #[error("session {0} has stopped")]
    Stopped(String),
    /// A well-formed operation that cannot be carried out as asked (nothing to compact, a mode
    /// a running session cannot switch to, an empty model name); the message says why.
    #[error("{0}")]
    Refused(String),
    /// An operation the session's interrupt stopped before it was done.
    #[error("{0}")]
    Interrupted(String),
    /// An operation that failed inside (the summary call of a compaction).
    #[error("{0}")]
    Failed(String),
}

impl OpError {
    /// The control protocol's code for it.
    pub fn code(&self) -> ErrorCode {
        match self {
            OpError::Busy(_) | OpError::Approval(_) | OpError::Interrupted(_) => {
                ErrorCode::Conflict
            }
            OpError::NoClients(_) | OpError::NotAnOp(_) | OpError::Refused(_) => {
                ErrorCode::BadRequest
            }
            OpError::Stopped(_) => ErrorCode::NotFound,
            OpError::Failed(_) => ErrorCode::Internal,
        }
    }
}

/// What the handle and the session's task share.
#[derive(Debug)]
pub(super) struct Shared {
    /// Its events.
    pub journal: Arc<Journal>,
    /// Its client approvals, when clients answer its asks.
    pub broker: Option<Arc<Broker>>,
    /// Whether a turn is running.
    pub running: AtomicBool,
    /// Triggered once the task has ended: the agent and its workers dropped, the log closed.
    pub done: Shutdown,
    /// Its approval mode: the dispatcher's own cell, read here for front ends.
    pub mode: crate::agent::mode_cell::ModeCell,
    /// Its model now; written by the task when it switches.
    pub model: std::sync::Mutex<String>,
}

impl Shared {
    /// Its model now, locked.
    pub fn model(&self) -> std::sync::MutexGuard<'_, String> {
        // A panic while holding the lock leaves a whole string behind: go on.
        self.model.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A session's handle. Cloning it gives another handle on the same session.
#[derive(Debug, Clone)]
pub struct SessionHandle {
    /// The session's operation queue.
    ops: mpsc::Sender<Op>,
    /// What the handle and the task share.
    shared: Arc<Shared>,
}

/// A stream of a session's events: the replayed ones first, then live ones, each once, in
/// sequence. It ends when the session stops.
#[derive(Debug)]
pub struct Subscription {
    /// The events from the log after the seq asked for, still to hand out.
    replay: VecDeque<EventEnvelope>,
    /// Live events, fed by the journal after the replay was taken.
    live: mpsc::UnboundedReceiver<EventEnvelope>,
    /// The seq the subscriber said it has: nothing up to it is handed on (a client that names a
    /// seq the session has not reached yet gets only what comes after it).
    floor: u64,
    /// Counts this subscriber as someone who can answer asks, while it lives.
    _attached: Option<super::approvals::Attached>,
}

impl Subscription {
    /// Events replayed before the live ones, still to come.
    pub fn replaying(&self) -> usize {
        self.replay.len()
    }

    /// The next event; `None` once the session has stopped.
    pub async fn next(&mut self) -> Option<EventEnvelope> {
        if let Some(e) = self.replay.pop_front() {
            return Some(e);
        }
        loop {
            let e = self.live.recv().await?;
            if e.seq.0 > self.floor {
                return Some(e);
            }
        }
    }
}

impl SessionHandle {
    pub(super) fn new(ops: mpsc::Sender<Op>, shared: Arc<Shared>) -> Self {
        Self { ops, shared }
    }

    /// The session.
    pub fn id(&self) -> &SessionId {
        self.shared.journal.session()
    }

    fn stopped_error(&self) -> OpError {
        OpError::Stopped(self.id().as_str().to_owned())
    }

    /// Submits `request` (`send_message`, `interrupt`, `approval_reply`, `compact`,
    /// `set_approval_mode`, `set_model`) and waits until the session took it: a message starts a
    /// turn, whose progress arrives as events; a compaction is answered once it is done.
    pub async fn submit(&self, request: Request) -> Result<(), OpError> {
        self.submit_with(request, None).await
    }

    async fn submit_with(
        &self,
        request: Request,
        outcome: Option<oneshot::Sender<TurnOutcome>>,
    ) -> Result<(), OpError> {
        let (reply, answer) = oneshot::channel();
        let op = Op::Request {
            request,
            reply,
            outcome,
        };
        self.ops.send(op).await.map_err(|_| self.stopped_error())?;
        answer.await.map_err(|_| self.stopped_error())?
    }

    /// Runs one turn for `text` and returns how it ended (for in-process front ends).
    pub async fn run_turn(&self, text: &str) -> Result<TurnOutcome, OpError> {
        let (tx, rx) = oneshot::channel();
        let request = Request::SendMessage(SendMessage {
            session: self.id().clone(),
            text: text.to_owned(),
        });
        self.submit_with(request, Some(tx)).await?;
        rx.await.map_err(|_| self.stopped_error())
    }

    /// Interrupts the running turn, if one runs.
    pub async fn interrupt(&self) -> Result<(), OpError> {
        let request = Request::Interrupt(protocol::control::Interrupt {
            session: self.id().clone(),
        });
        self.submit(request).await
    }

    /// Compacts the session's history now: answers once the summary is in (its
    /// `context_compacted` event first), or why not.
    pub async fn compact(&self) -> Result<(), OpError> {
        let session = self.id().clone();
        self.submit(Request::Compact(Compact { session })).await
    }

    /// Changes the approval mode from the next call on.
    pub async fn set_approval_mode(&self, mode: ApprovalMode) -> Result<(), OpError> {
        let session = self.id().clone();
        self.submit(Request::SetApprovalMode(SetApprovalMode { session, mode }))
            .await
    }

    /// Switches the model (same provider) from the next request on.
    pub async fn set_model(&self, model: &str) -> Result<(), OpError> {
        let session = self.id().clone();
        let model = model.to_owned();
        self.submit(Request::SetModel(SetModel { session, model }))
            .await
    }

    /// Its approval mode now.
    pub fn approval_mode(&self) -> ApprovalMode {
        self.shared.mode.get()
    }

    /// Its model now.
    pub fn model(&self) -> String {
        self.shared.model().clone()
    }

    /// Its events after `after` (all with `None`), then live ones.
    pub fn subscribe(&self, after: Option<Seq>) -> Result<Subscription, JournalError> {
        let (replay, live) = self.shared.journal.subscribe(after)?;
        Ok(Subscription {
            replay: replay.into(),
            live,
            floor: after.map_or(0, |s| s.0),
            _attached: None,
        })
    }

    /// [`SessionHandle::subscribe`] for a client that answers asks: while the subscription
    /// lives, an ask waits for an answer instead of being denied after the no-client wait.
    pub fn attach(&self, after: Option<Seq>) -> Result<Subscription, JournalError> {
        let mut subscription = self.subscribe(after)?;
        subscription._attached = self.shared.broker.as_ref().map(Broker::attach);
        Ok(subscription)
    }

    /// Where it stands.
    pub fn state(&self) -> SessionState {
        if self.shared.done.is_triggered() {
            SessionState::Stopped
        } else if !self.shared.running.load(Ordering::SeqCst) {
            SessionState::Idle
        } else if self.shared.broker.as_ref().is_some_and(|b| b.pending() > 0) {
            SessionState::WaitingApproval
        } else {
            SessionState::Running
        }
    }

    /// The newest sequence number.
    pub fn last_seq(&self) -> Seq {
        self.shared.journal.last_seq()
    }

    /// Whether the session has had no message yet, and so is not kept (false once stopped).
    pub fn is_pending(&self) -> bool {
        self.shared.journal.is_pending()
    }

    /// How many clients watch the session now.
    pub fn watchers(&self) -> usize {
        self.shared.journal.subscribers()
    }

    /// Stops the session's task (a running turn is interrupted first) and waits until its
    /// workers are gone and its log is closed.
    pub async fn stop(&self) {
        let _ = self.ops.send(Op::Stop).await;
        self.stopped().await;
    }

    /// Whether the session's task has ended.
    pub fn is_stopped(&self) -> bool {
        self.shared.done.is_triggered()
    }

    /// Resolves once the session's task has ended.
    pub async fn stopped(&self) {
        self.shared.done.wait().await;
    }
}
