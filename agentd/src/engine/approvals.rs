//! Approvals answered by clients: a call the policy rated `ask` waits until one of the session's
//! clients answers (the first answer wins; a later one is told it came too late), or — when no
//! client is attached to answer — until a configurable wait has passed, and then it is denied,
//! saying so (`by: "timeout"`). "Allow always" is remembered for the session exactly as at a
//! terminal ([`crate::agent::approval::covered`]).

use crate::agent::approval::{covered, remember};
use policy::{Approvals, Decision};
use protocol::event::ToolCall;
use protocol::ids::ApprovalId;
use protocol::verdict::ApprovalDecision;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// The approvals of one session that clients answer.
#[derive(Debug)]
pub struct Broker {
    /// Asks waiting for an answer, by id; an entry leaves on its answer, timeout or interrupt.
    pending: Mutex<HashMap<ApprovalId, oneshot::Sender<ApprovalDecision>>>,
    /// What a client allowed always for the rest of the session.
    always: Mutex<Approvals>,
    /// Clients attached now (each attachment holds an [`Attached`] guard).
    attached: watch::Sender<usize>,
    /// How long an ask waits while no client is attached.
    wait: Duration,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No ask of that id is waiting: it was answered already, timed out, or never existed.
    #[error("approval {0} is not waiting for an answer (already answered, timed out, or unknown)")]
    NotPending(u64),
}

/// One attached client, counted while it lives.
#[derive(Debug)]
pub struct Attached {
    /// The broker that counts it.
    broker: Arc<Broker>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.broker
            .attached
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Removes an ask from the pending set however its wait ends (answer, timeout, or the turn's
/// future dropped by an interrupt).
struct Waiting<'a> {
    /// Whose pending set holds the ask.
    broker: &'a Broker,
    /// The ask.
    id: ApprovalId,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.broker.lock_pending().remove(&self.id);
    }
}

impl Broker {
    /// A broker whose asks are denied after `wait` with no client attached.
    pub fn new(wait: Duration) -> Arc<Self> {
        Arc::new(Self {
            pending: Mutex::new(HashMap::new()),
            always: Mutex::new(Approvals::new()),
            attached: watch::Sender::new(0),
            wait,
        })
    }

    fn lock_pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<ApprovalId, oneshot::Sender<ApprovalDecision>>> {
        // A panic while holding the lock leaves a consistent map behind: go on.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `approved` to what was allowed always (a resumed session's).
    pub fn restore(&self, approved: &Approvals) {
        if let Ok(mut a) = self.always.lock() {
            approved.keys().for_each(|k| a.remember_key(k.clone()));
        }
    }

    /// Counts one more client able to answer, until the guard is dropped.
    pub fn attach(self: &Arc<Self>) -> Attached {
        self.attached.send_modify(|n| *n += 1);
        Attached {
            broker: Arc::clone(self),
        }
    }

    /// Clients attached now.
    pub fn attached(&self) -> usize {
        *self.attached.borrow()
    }

    /// Asks waiting now.
    pub fn pending(&self) -> usize {
        self.lock_pending().len()
    }

    /// How long an ask waits with no client attached.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// A client's answer to ask `id`: the first one wins.
    pub fn answer(&self, id: ApprovalId, decision: ApprovalDecision) -> Result<(), AnswerError> {
        let sender = self
            .lock_pending()
            .remove(&id)
            .ok_or(AnswerError::NotPending(id.0))?;
        // The ask's future may have been dropped a moment ago (an interrupt): nothing waits then.
        let _ = sender.send(decision);
        Ok(())
    }

    /// The answer for ask `id` about `call` (rated `decision`), and who gave it: `session` (an
    /// earlier "allow always" covers it), `user` (a client), or `timeout` (no client was
    /// attached for the whole wait).
    pub async fn decide(
        &self,
        id: ApprovalId,
        call: &ToolCall,
        decision: &Decision,
    ) -> (ApprovalDecision, &'static str) {
        if self
            .always
            .lock()
            .is_ok_and(|a| covered(&a, call, decision))
        {
            return (ApprovalDecision::AllowOnce, "session");
        }
        let (tx, mut rx) = oneshot::channel();
        // Registered before the first await: the `approval_requested` event was emitted just
        // before this call, and no answer can be taken until the session's task is polled again.
        self.lock_pending().insert(id, tx);
        let _waiting = Waiting { broker: self, id };
        let mut attached = self.attached.subscribe();
        loop {
            let nobody = *attached.borrow_and_update() == 0;
            tokio::select! {
                answer = &mut rx => {
                    let Ok(answer) = answer else {
                        return (ApprovalDecision::Deny, "timeout");
                    };
                    if answer == ApprovalDecision::AllowAlways
                        && let Ok(mut a) = self.always.lock()
                    {
                        remember(&mut a, call, decision);
                    }
                    return (answer, "user");
                }
                changed = attached.changed() => {
                    if changed.is_err() {
                        return (ApprovalDecision::Deny, "timeout");
                    }
                }
                () = tokio::time::sleep(self.wait), if nobody => {
                    return (ApprovalDecision::Deny, "timeout");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ids::ToolCallId;

    fn call() -> ToolCall {
        ToolCall {
            id: ToolCallId::generated(0),
            name: "bash".into(),
            arguments: r#"{"command":"mkdir x"}"#.into(),
        }
    }

    fn asked() -> Decision {
        let p = policy::Policy::builtin().unwrap();
        let ctx = policy::Context {
            workspace: std::path::Path::new("/w"),
            home: None,
        };
        p.check_bash("mkdir x", &ctx)
    }

    #[tokio::test(start_paused = true)]
    async fn with_nobody_attached_an_ask_is_denied_after_the_wait() {
        let b = Broker::new(Duration::from_secs(30));
        let started = tokio::time::Instant::now();
        let (answer, by) = b.decide(ApprovalId(1), &call(), &asked()).await;
        assert_eq!((answer, by), (ApprovalDecision::Deny, "timeout"));
        assert!(started.elapsed() >= Duration::from_secs(30));
        assert_eq!(b.pending(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_attached_client_is_waited_for_and_the_first_answer_wins() {
        let b = Broker::new(Duration::from_secs(1));
        let client = b.attach();
        let asking = {
            let b = b.clone();
            tokio::spawn(async move { b.decide(ApprovalId(7), &call(), &asked()).await })
        };
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(b.pending(), 1, "still waiting: a client is attached");
        b.answer(ApprovalId(7), ApprovalDecision::AllowAlways)
            .unwrap();
        assert_eq!(
            b.answer(ApprovalId(7), ApprovalDecision::Deny),
            Err(AnswerError::NotPending(7))
        );
        assert_eq!(
            asking.await.unwrap(),
            (ApprovalDecision::AllowAlways, "user")
        );
        // Remembered: the same call is not asked again.
        assert_eq!(
            b.decide(ApprovalId(8), &call(), &asked()).await,
            (ApprovalDecision::AllowOnce, "session")
        );
        drop(client);
        assert_eq!(b.attached(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_leaving_starts_the_wait() {
        let b = Broker::new(Duration::from_secs(5));
        let client = b.attach();
        let asking = {
            let b = b.clone();
            tokio::spawn(async move { b.decide(ApprovalId(1), &call(), &asked()).await })
        };
        tokio::time::sleep(Duration::from_secs(100)).await;
        drop(client);
        let left = tokio::time::Instant::now();
        assert_eq!(asking.await.unwrap(), (ApprovalDecision::Deny, "timeout"));
        assert!(left.elapsed() >= Duration::from_secs(5));
    }
}
