//! The one shutdown value: triggered once (SIGTERM in the daemon), seen by everything that was
//! handed a clone — the accept loop, every connection, every session's task. A session's worker
//! pool goes with its session: the task that owns the pool drops it when it sees the token.

use std::sync::Arc;
use tokio::sync::watch;

/// A shared "we are stopping" flag that can be awaited.
#[derive(Debug, Clone)]
pub struct Shutdown {
    /// `true` once triggered; a `watch` so that late waiters see it at once.
    tx: Arc<watch::Sender<bool>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    /// A token not yet triggered.
    pub fn new() -> Self {
        Self {
            tx: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Triggers it; every waiter, present and future, resolves.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    /// Whether it was triggered.
    pub fn is_triggered(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once it is triggered (at once if it was).
    pub async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail while we borrow it.
        let _ = rx.wait_for(|stopped| *stopped).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_before_and_after_the_trigger_both_resolve() {
        let s = Shutdown::new();
        let early = tokio::spawn({
            let s = s.clone();
            async move { s.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(!s.is_triggered());
        s.trigger();
        tokio::time::timeout(std::time::Duration::from_secs(1), early)
            .await
            .unwrap()
            .unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(1), s.wait())
            .await
            .unwrap();
    }
}
