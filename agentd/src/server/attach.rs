//! One connection's attachments: for each session it is attached to, a task that forwards the
//! session's events (the replay, then live ones) into the connection's outgoing queue. A client
//! that leaves its queue full for longer than [`EVENT_STALL`] is dropped: it never holds up the
//! session, which does not wait for anyone.

use crate::engine::Subscription;
use protocol::control::ServerMessage;
use protocol::ids::SessionId;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

/// How long one event may wait for room in a client's full queue before the client is dropped.
pub const EVENT_STALL: Duration = Duration::from_secs(5);

/// The sessions one connection is attached to.
#[derive(Debug)]
pub struct Attachments {
    /// The forwarding task of each session.
    tasks: HashMap<SessionId, JoinHandle<()>>,
    /// The connection's outgoing queue.
    out: mpsc::Sender<ServerMessage>,
    /// Told when a forwarder found the client too slow: the connection then ends.
    dropped: Arc<Notify>,
}

impl Attachments {
    /// No attachments yet, for the connection whose queue is `out`; `dropped` is notified when
    /// the client falls behind.
    pub fn new(out: mpsc::Sender<ServerMessage>, dropped: Arc<Notify>) -> Self {
        Self {
            tasks: HashMap::new(),
            out,
            dropped,
        }
    }

    /// Forwards `events` of session `id` from now on (a previous attachment to it is replaced).
    pub fn start(&mut self, id: SessionId, mut events: Subscription) {
        let (out, dropped) = (self.out.clone(), Arc::clone(&self.dropped));
        let task = tokio::spawn(async move {
            while let Some(envelope) = events.next().await {
                let message = ServerMessage::Event(envelope);
                if out.send_timeout(message, EVENT_STALL).await.is_err() {
                    dropped.notify_one();
                    return;
                }
            }
        });
        if let Some(old) = self.tasks.insert(id, task) {
            old.abort();
        }
    }

    /// Waits (at most `within`) until every forwarder has handed on its session's last event:
    /// once the sessions have stopped their streams end, and the client should see those events
    /// before anything said after them.
    pub async fn finish(&mut self, within: Duration) {
        let tasks: Vec<JoinHandle<()>> = self.tasks.drain().map(|(_, t)| t).collect();
        let all = futures_util::future::join_all(tasks);
        if tokio::time::timeout(within, all).await.is_err() {
            tracing::warn!("a client's last events could not all be forwarded in time");
        }
    }

    /// Whether a session is attached whose events may still come (a deleted session's
    /// forwarder has ended).
    pub fn attached(&self) -> bool {
        self.tasks.values().any(|t| !t.is_finished())
    }

    /// Stops forwarding session `id`; whether it was attached. Returns once the forwarder is
    /// gone, its subscription with it: the session no longer counts this client as watching.
    pub async fn detach(&mut self, id: &SessionId) -> bool {
        let Some(task) = self.tasks.remove(id) else {
            return false;
        };
        task.abort();
        let _ = task.await;
        true
    }

    /// Stops forwarding session `id` now, without waiting for its forwarder to go.
    pub fn abort(&mut self, id: &SessionId) {
        if let Some(task) = self.tasks.remove(id) {
            task.abort();
        }
    }

    /// Stops forwarding every session (as [`Attachments::detach`]); returns which they were.
    pub async fn leave_all(&mut self) -> Vec<SessionId> {
        let ids: Vec<SessionId> = self.tasks.keys().cloned().collect();
        for id in &ids {
            self.detach(id).await;
        }
        ids
    }
}

impl Drop for Attachments {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.abort();
        }
    }
}
