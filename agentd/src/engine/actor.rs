//! A session's task: it owns the agent (and so its worker pool), takes operations from its
//! queue one at a time, runs at most one turn at once, and while a turn runs still takes
//! interrupts and approval replies. On shutdown a running turn is let finish its step within
//! the grace period, then interrupted; either way every started call gets a result, the log is
//! synced and closed, and the workers are killed.

use super::handle::{OpError, SessionHandle, Shared};
use super::shutdown::Shutdown;
use crate::agent::CompactError;
use crate::agent::interrupt::Interrupt;
use crate::agent::turn::{Agent, TurnOutcome};
use crate::engine::build::Built;
use protocol::control::Request;
use protocol::event::{ApprovalModeChanged, Event, ModelChanged};
use protocol::verdict::ApprovalMode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Operations queued before the session takes them; a full queue makes submitters wait.
const QUEUE: usize = 64;

/// The longest model name `set_model` takes, bytes.
const MAX_MODEL_NAME: usize = 256;

/// One operation for the session's task.
#[derive(Debug)]
pub(super) enum Op {
    /// A control-protocol request, and where to say whether it was taken.
    Request {
        /// What is asked.
        request: Request,
        /// Taken, or why not.
        reply: oneshot::Sender<Result<(), OpError>>,
        /// For a message: where the turn's outcome goes (in-process front ends).
        outcome: Option<oneshot::Sender<TurnOutcome>>,
    },
    /// End the task (a running turn is interrupted).
    Stop,
}

/// How the task ends its turns when asked to stop.
#[derive(Debug, Clone)]
pub struct Stopping {
    /// Triggered when the process stops (the daemon's SIGTERM).
    pub shutdown: Shutdown,
    /// How long a running turn may go on after `shutdown` before it is interrupted.
    pub grace: Duration,
}

impl Default for Stopping {
    fn default() -> Self {
        Self {
            shutdown: Shutdown::new(),
            grace: Duration::from_secs(10),
        }
    }
}

/// Starts the session's task on the current tokio runtime; its events go to `journal`, and
/// `broker` answers its asks when clients do.
pub fn start(
    built: Built,
    journal: Arc<super::journal::Journal>,
    broker: Option<Arc<super::approvals::Broker>>,
    stopping: Stopping,
) -> SessionHandle {
    let (tx, rx) = mpsc::channel(QUEUE);
    let shared = Arc::new(Shared {
        journal,
        broker,
        running: Default::default(),
        done: Shutdown::new(),
        mode: built.agent.dispatcher.mode.clone(),
        model: std::sync::Mutex::new(built.agent.model.clone()),
    });
    let task = tokio::spawn(run(built, rx, Arc::clone(&shared), stopping));
    // A bug that panics the task must not leave a session that looks alive and never answers:
    // its log is closed (what was written stays) and the handle reports it stopped.
    let watched = Arc::clone(&shared);
    tokio::spawn(async move {
        if let Err(e) = task.await {
            tracing::error!("session {} stopped: {e}", watched.journal.session());
            watched.journal.close();
            watched.done.trigger();
        }
    });
    SessionHandle::new(tx, shared)
}

async fn run(built: Built, mut ops: mpsc::Receiver<Op>, shared: Arc<Shared>, stopping: Stopping) {
    let Built { mut agent, tmp } = built;
    // Workers lock down while the first message is on its way.
    agent.dispatcher.workers.warm_up();
    loop {
        let op = tokio::select! {
            op = ops.recv() => op,
            () = stopping.shutdown.wait() => None,
        };
        let Some(Op::Request {
            request,
            reply,
            outcome,
        }) = op
        else {
            break;
        };
        let (interrupt, after_step) = (agent.interrupt.clone(), agent.stop_after_step.clone());
        // An interrupt that came while nothing ran (it raced the end of the last turn) is stale.
        interrupt.reset();
        let busy = Busy {
            interrupt,
            after_step,
            shared: &shared,
            stopping: &stopping,
        };
        let stop = match request {
            Request::SendMessage(message) => {
                let _ = reply.send(Ok(()));
                let (out, stop) = busy.during(agent.run_turn(&message.text), &mut ops).await;
                if let Some(tx) = outcome {
                    let _ = tx.send(out);
                }
                stop
            }
            Request::Compact(_) => {
                let (done, stop) = busy.during(agent.compact_now(), &mut ops).await;
                let _ = reply.send(done.map(drop).map_err(|e| compact_error(&shared, e)));
                stop
            }
            Request::SetApprovalMode(s) => {
                let _ = reply.send(set_mode(&agent, &shared, s.mode));
                false
            }
            Request::SetModel(s) => {
                let _ = reply.send(set_model(&mut agent, &shared, &s.model));
                false
            }
            other => {
                let _ = reply.send(answer(&shared, other));
                false
            }
        };
        if stop {
            break;
        }
    }
    // The pool's waiting workers are killed, reaped and their cgroups removed before their
    // temp dirs go; then the log is synced and closed, and subscribers' streams end.
    drop(agent);
    drop(tmp);
    shared.journal.close();
    shared.done.trigger();
}

/// What the task needs while something runs (a turn, a compaction): its switches and where
/// it reports.
struct Busy<'a> {
    /// Stops what runs.
    interrupt: Interrupt,
    /// Ends a turn at its next step boundary (the shutdown).
    after_step: Interrupt,
    /// What the handle and the task share.
    shared: &'a Shared,
    /// How the task ends when asked to stop.
    stopping: &'a Stopping,
}

impl Busy<'_> {
    /// Runs `work` (which watches the interrupt) while taking operations: another message, a
    /// compaction or a change of mode or model is busy; interrupts and approval replies are
    /// carried out. Returns its outcome and whether the task should end.
    async fn during<T>(
        &self,
        work: impl Future<Output = T>,
        ops: &mut mpsc::Receiver<Op>,
    ) -> (T, bool) {
        self.shared.running.store(true, Ordering::SeqCst);
        tokio::pin!(work);
        let grace = tokio::time::sleep(Duration::from_secs(365 * 86_400));
        tokio::pin!(grace);
        // Draining: shutdown came, the turn may finish its step; forced: the grace ran out.
        let (mut draining, mut forced, mut stop, mut open) = (false, false, false, true);
        let out = loop {
            tokio::select! {
                out = &mut work => break out,
                op = ops.recv(), if open => match op {
                    None => open = false,
                    Some(Op::Stop) => {
                        stop = true;
                        self.interrupt.trigger();
                    }
                    Some(Op::Request { request, reply, .. }) => {
                        let _ = reply.send(self.while_running(request));
                    }
                },
                () = self.stopping.shutdown.wait(), if !draining => {
                    draining = true;
                    stop = true;
                    self.after_step.trigger();
                    grace.as_mut().reset(tokio::time::Instant::now() + self.stopping.grace);
                }
                () = &mut grace, if draining && !forced => {
                    tracing::warn!(
                        "session {}: the turn did not end within the shutdown grace period; interrupted",
                        self.shared.journal.session()
                    );
                    self.interrupt.trigger();
                    forced = true;
                }
            }
        };
        self.shared.running.store(false, Ordering::SeqCst);
        (out, stop)
    }

    /// The answer to `request` while a turn or a compaction runs.
    fn while_running(&self, request: Request) -> Result<(), OpError> {
        match request {
            Request::SendMessage(_)
            | Request::Compact(_)
            | Request::SetApprovalMode(_)
            | Request::SetModel(_) => Err(OpError::Busy(
                self.shared.journal.session().as_str().to_owned(),
            )),
            Request::Interrupt(_) => {
                self.interrupt.trigger();
                Ok(())
            }
            other => answer(self.shared, other),
        }
    }
}

/// Changes the session's approval mode, and says so in its log.
fn set_mode(agent: &Agent, shared: &Shared, mode: ApprovalMode) -> Result<(), OpError> {
    if mode == ApprovalMode::SkipPermissions {
        return Err(OpError::Refused(
            "skip_permissions is chosen only when a session starts (--dangerously-skip-permissions); a running session can switch to on_risk, always or never".into(),
        ));
    }
    agent.dispatcher.mode.set(mode);
    shared
        .journal
        .emit(Event::ApprovalModeChanged(ApprovalModeChanged { mode }));
    Ok(())
}

/// Switches the session's model, and says so in its log.
fn set_model(agent: &mut Agent, shared: &Shared, model: &str) -> Result<(), OpError> {
    let model = model.trim();
    if model.is_empty() || model.len() > MAX_MODEL_NAME || model.chars().any(char::is_control) {
        return Err(OpError::Refused(format!(
            "a model name is 1 to {MAX_MODEL_NAME} characters without control characters"
        )));
    }
    agent.set_model(model);
    model.clone_into(&mut shared.model());
    shared.journal.emit(Event::ModelChanged(ModelChanged {
        model: model.to_owned(),
    }));
    Ok(())
}

/// The error of a compaction the user asked for.
fn compact_error(shared: &Shared, e: CompactError) -> OpError {
    match e {
        CompactError::Nothing(_) => OpError::Refused(e.to_string()),
        CompactError::Interrupted => OpError::Interrupted(e.to_string()),
        CompactError::Failed(_) | CompactError::Refused(_) => {
            tracing::warn!("session {}: {e}", shared.journal.session());
            OpError::Failed(e.to_string())
        }
    }
}

/// An approval reply, an interrupt with no turn running (it raced the turn's end: nothing to
/// stop), or a request that is no operation on a session.
fn answer(shared: &Shared, request: Request) -> Result<(), OpError> {
    let session = || shared.journal.session().as_str().to_owned();
    match request {
        Request::ApprovalReply(r) => match &shared.broker {
            Some(broker) => Ok(broker.answer(r.approval, r.decision)?),
            None => Err(OpError::NoClients(session())),
        },
        Request::Interrupt(_) => Ok(()),
        other => Err(OpError::NotAnOp(other.variant_name())),
    }
}
