//! A session's task: it owns the agent (and so its worker pool), takes operations from its
//! queue one at a time, runs at most one turn at once, and while a turn runs still takes
//! interrupts and approval replies. On shutdown a running turn is let finish its step within
//! the grace period, then interrupted; either way every started call gets a result, the log is
//! synced and closed, and the workers are killed.

use super::handle::{OpError, SessionHandle, Shared};
use super::shutdown::Shutdown;
use crate::agent::turn::{Agent, TurnOutcome};
use crate::engine::build::Built;
use protocol::control::Request;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Operations queued before the session takes them; a full queue makes submitters wait.
const QUEUE: usize = 64;

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
        let Request::SendMessage(message) = request else {
            let _ = reply.send(answer(&shared, request));
            continue;
        };
        let _ = reply.send(Ok(()));
        shared.running.store(true, Ordering::SeqCst);
        let (out, stop) = turn(&mut agent, &message.text, &mut ops, &shared, &stopping).await;
        shared.running.store(false, Ordering::SeqCst);
        if let Some(tx) = outcome {
            let _ = tx.send(out);
        }
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

/// Runs one turn while taking operations; returns its outcome and whether the task should end.
async fn turn(
    agent: &mut Agent,
    text: &str,
    ops: &mut mpsc::Receiver<Op>,
    shared: &Shared,
    stopping: &Stopping,
) -> (TurnOutcome, bool) {
    let interrupt = agent.interrupt.clone();
    let after_step = agent.stop_after_step.clone();
    // An interrupt that came while no turn ran (it raced the end of the last one) is stale.
    interrupt.reset();
    let turn = agent.run_turn(text);
    tokio::pin!(turn);
    let grace = tokio::time::sleep(Duration::from_secs(365 * 86_400));
    tokio::pin!(grace);
    // Draining: shutdown came, the turn may finish its step; forced: the grace ran out.
    let (mut draining, mut forced, mut stop, mut open) = (false, false, false, true);
    loop {
        tokio::select! {
            out = &mut turn => return (out, stop),
            op = ops.recv(), if open => match op {
                None => open = false,
                Some(Op::Stop) => {
                    stop = true;
                    interrupt.trigger();
                }
                Some(Op::Request { request: Request::SendMessage(_), reply, .. }) => {
                    let busy = OpError::Busy(shared.journal.session().as_str().to_owned());
                    let _ = reply.send(Err(busy));
                }
                Some(Op::Request { request: Request::Interrupt(_), reply, .. }) => {
                    interrupt.trigger();
                    let _ = reply.send(Ok(()));
                }
                Some(Op::Request { request, reply, .. }) => {
                    let _ = reply.send(answer(shared, request));
                }
            },
            () = stopping.shutdown.wait(), if !draining => {
                draining = true;
                stop = true;
                after_step.trigger();
                grace.as_mut().reset(tokio::time::Instant::now() + stopping.grace);
            }
            () = &mut grace, if draining && !forced => {
                tracing::warn!(
                    "session {}: the turn did not end within the shutdown grace period; interrupted",
                    shared.journal.session()
                );
                interrupt.trigger();
                forced = true;
            }
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
