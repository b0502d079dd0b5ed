//! Interrupting a turn: a handle any front end can trigger (Ctrl-C in `agent run`, a client's
//! `interrupt` in the daemon); the loop checks it around every await that can take long.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Notify;

/// What a call that was running or waiting when the turn was interrupted is answered with.
pub const INTERRUPTED_CALL: &str =
    "[interrupted: the user stopped the turn before this call finished; its process was killed]";

/// A shared "stop the turn" switch.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    inner: Arc<(AtomicBool, Notify)>,
}

impl Interrupt {
    /// Asks the running turn (or the next one to start) to stop.
    pub fn trigger(&self) {
        self.inner.0.store(true, Ordering::SeqCst);
        self.inner.1.notify_waiters();
    }

    /// Whether it was triggered.
    pub fn is_set(&self) -> bool {
        self.inner.0.load(Ordering::SeqCst)
    }

    /// Arms it again for the next turn.
    pub fn reset(&self) {
        self.inner.0.store(false, Ordering::SeqCst);
    }

    /// Resolves once it is triggered.
    pub async fn triggered(&self) {
        loop {
            let notified = self.inner.1.notified();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}

/// Runs `futures` concurrently until all are done or `interrupt` is triggered; returns each one's
/// output in order (`None` for those still running when it was), and whether it was. The
/// futures still running are dropped before this returns, which kills their workers, waits for
/// them and checks the protected paths their calls may have created (the drop of a call's
/// worker does, and streams the notes as the call's output): a front end that exits right after
/// the interrupt leaves nothing a call planted unchecked.
pub async fn run_all<F: std::future::Future>(
    futures: impl IntoIterator<Item = F>,
    interrupt: &Interrupt,
) -> (Vec<Option<F::Output>>, bool) {
    use futures_util::StreamExt;
    use futures_util::stream::FuturesUnordered;
    let mut running: FuturesUnordered<_> = futures
        .into_iter()
        .enumerate()
        .map(|(i, f)| async move { (i, f.await) })
        .collect();
    let mut done: Vec<Option<F::Output>> = (0..running.len()).map(|_| None).collect();
    loop {
        tokio::select! {
            next = running.next() => match next {
                Some((i, output)) => done[i] = Some(output),
                None => return (done, false),
            },
            () = interrupt.triggered() => return (done, true),
        }
    }
}
