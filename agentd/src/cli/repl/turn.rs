//! One turn on the terminal: the session's events shown as they come, a spinner while nothing
//! comes, Ctrl-C (SIGINT: the terminal is in its ordinary mode while a turn runs) turned into an
//! `interrupt` — until the turn ends or asks for an approval, which the REPL then prompts for.

use super::link::SessionLink;
use super::render::Renderer;
use protocol::event::{ApprovalRequested, Event};
use protocol::session::FinishReason;
use std::time::Duration;
use tokio::signal::unix::Signal;

/// How often the spinner moves.
const TICK: Duration = Duration::from_millis(120);

/// Why driving a turn paused.
#[derive(Debug)]
pub enum Pause {
    /// A call waits for the user's answer.
    Approval(ApprovalRequested),
    /// The turn ended, for this reason.
    Finished(FinishReason),
    /// The session stopped (its task ended, or the daemon went away).
    Stopped,
}

/// What came first.
enum Next {
    Event(Option<protocol::event::EventEnvelope>),
    Interrupt,
    Tick,
}

/// Shows the running turn's events until it asks for approval or ends; Ctrl-C interrupts it.
pub async fn drive<L: SessionLink>(
    link: &mut L,
    render: &mut Renderer,
    sigint: &mut Signal,
) -> Pause {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let next = tokio::select! {
            event = link.next_event() => Next::Event(event),
            _ = sigint.recv() => Next::Interrupt,
            _ = tick.tick() => Next::Tick,
        };
        match next {
            Next::Event(None) => {
                render.clear_spinner();
                return Pause::Stopped;
            }
            Next::Event(Some(envelope)) => match envelope.event {
                Event::ApprovalRequested(ask) => {
                    render.clear_spinner();
                    return Pause::Approval(ask);
                }
                Event::TurnFinished(ref t) => {
                    render.event(&envelope.event);
                    return Pause::Finished(t.reason);
                }
                ref event => render.event(event),
            },
            Next::Interrupt => {
                render.note("^C — interrupting the turn…");
                if let Err(e) = link.interrupt().await {
                    render.error(&format!("cannot interrupt: {e}"));
                }
            }
            Next::Tick => render.tick(),
        }
    }
}

/// Shows `count` events that are history (a resumed session's), without prompting for any.
pub async fn replay<L: SessionLink>(link: &mut L, render: &mut Renderer, count: usize) {
    for _ in 0..count {
        let Ok(Some(envelope)) =
            tokio::time::timeout(Duration::from_secs(10), link.next_event()).await
        else {
            return;
        };
        render.event(&envelope.event);
    }
}
