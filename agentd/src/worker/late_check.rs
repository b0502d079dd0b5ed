//! The protected-path check of a call whose processes had not ended when the supervisor stopped
//! waiting for them (an interrupted call's killed worker not reaped within its bound, a killed
//! call's processes stuck in the kernel): it must not run before they have — a rename queued
//! behind a slow unlink, in uninterruptible sleep, lands whenever that ends, after a check made
//! meanwhile. So it runs on a thread of its own once the worker, their PID namespace's init, has
//! ended (its pidfd becomes readable only after every process of its namespace is gone), and a
//! supervisor about to exit waits for it ([`settled`]).

use super::cgroup::CallGroup;
use super::protect::Baseline;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use protocol::worker::SandboxSpec;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Checks waiting for their call's processes to end.
static PENDING: Mutex<usize> = Mutex::new(0);
static DONE: Condvar = Condvar::new();

fn pending() -> std::sync::MutexGuard<'static, usize> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Checks `spec`'s protected paths against `baseline` once the worker `pidfd` names has ended
/// (its `group`, if any, removed first); the notes are logged. The note for the call's result.
pub fn after_exit(
    pidfd: OwnedFd,
    baseline: Arc<Baseline>,
    spec: SandboxSpec,
    group: Option<CallGroup>,
) -> String {
    *pending() += 1;
    let spawned = std::thread::Builder::new()
        .name("agentd-late-check".into())
        .spawn(move || {
            loop {
                let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, PollTimeout::NONE) {
                    Err(nix::Error::EINTR) => continue,
                    _ => break,
                }
            }
            drop(group);
            for note in baseline.check(&spec) {
                tracing::warn!("after the call's processes ended: {note}");
            }
            *pending() -= 1;
            DONE.notify_all();
        });
    if spawned.is_err() {
        *pending() -= 1;
        tracing::warn!(
            "cannot start the thread that checks a call's workspace once its processes end"
        );
        return "this call's processes had not ended, and agentd could not wait for them: review the workspace's git hooks and config before you run git there".into();
    }
    "this call's processes had not ended when agentd stopped waiting for them; its workspace is checked once they have (and agentd waits for that before it exits)".into()
}

/// Waits until no check is pending, at most `within`; whether none is.
pub fn settled(within: Duration) -> bool {
    let start = Instant::now();
    let mut n = pending();
    while *n > 0 {
        let left = within.saturating_sub(start.elapsed());
        if left.is_zero() {
            return false;
        }
        n = DONE
            .wait_timeout(n, left)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0);
    }
    true
}

/// Whether a check is pending.
pub fn any() -> bool {
    *pending() > 0
}

/// Before the process exits: waits for the checks still pending (at most two minutes), saying
/// so on stderr, as `who`; a check that did not run is said too, with what to review.
pub fn wait_before_exit(who: &str) {
    if !any() {
        return;
    }
    eprintln!(
        "{who}: waiting for the processes of a call that was ended to go, to check the workspace after them"
    );
    if !settled(Duration::from_secs(120)) {
        eprintln!(
            "{who}: they have not gone; the workspace was not checked after them: review its git hooks and config (.git/hooks, .git/config, .git/commondir) and editor settings before you run git or open it"
        );
    }
}
