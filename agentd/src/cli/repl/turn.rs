//! One turn on the terminal: the session's events shown as they come, a spinner while nothing
//! comes, Ctrl-C (SIGINT: the terminal is in its ordinary mode while a turn runs) turned into an
//! `interrupt` — until the turn ends or asks for an approval, which the REPL then prompts for.

use super::link::SessionLink;
use super::render::Renderer;
use protocol::event::{ApprovalRequested, Event, EventEnvelope};
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
    Event(Option<EventEnvelope>),
    Interrupt,
    Tick,
}

/// How long an ask may take to be answered by the session itself: the engine announces every
/// ask, also one that an earlier "always" covers, and answers that one at once (`by: session`).
const SETTLE: Duration = Duration::from_millis(200);

/// Shows the running turn's events until it asks for approval or ends; Ctrl-C interrupts it.
/// `held` is an event read ahead while looking past an ask; it is shown first next time.
pub async fn drive<L: SessionLink>(
    link: &mut L,
    render: &mut Renderer,
    sigint: &mut Signal,
    held: &mut Option<EventEnvelope>,
) -> Pause {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let next = match held.take() {
            Some(event) => Next::Event(Some(event)),
            None => tokio::select! {
                event = link.next_event() => Next::Event(event),
                _ = sigint.recv() => Next::Interrupt,
                _ = tick.tick() => Next::Tick,
            },
        };
        match next {
            Next::Event(None) => {
                render.clear_spinner();
                return Pause::Stopped;
            }
            Next::Event(Some(envelope)) => match envelope.event {
                Event::ApprovalRequested(ask) => {
                    if answered_at_once(link, render, &ask, held).await {
                        continue;
                    }
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

/// Whether the session answered `ask` itself right after announcing it (an earlier "always"
/// covers it): then there is nothing to prompt for. Another event read meanwhile is `held`.
async fn answered_at_once<L: SessionLink>(
    link: &mut L,
    render: &mut Renderer,
    ask: &ApprovalRequested,
    held: &mut Option<EventEnvelope>,
) -> bool {
    let Ok(Some(next)) = tokio::time::timeout(SETTLE, link.next_event()).await else {
        return false;
    };
    if let Event::ApprovalResolved(r) = &next.event
        && r.approval == ask.approval
    {
        render.event(&next.event);
        return true;
    }
    *held = Some(next);
    false
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
