//! One turn on the terminal: the session's events shown as they come, a spinner while nothing
//! comes, Ctrl-C (SIGINT: the terminal is in its ordinary mode while a turn runs) turned into an
//! `interrupt` — until the turn ends or asks for an approval, which the REPL then prompts for.

use super::link::SessionLink;
use super::render::Renderer;
use protocol::event::{ApprovalRequested, Event, EventEnvelope};
use protocol::ids::ToolCallId;
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

/// What the REPL keeps between the pauses of a turn.
#[derive(Debug, Default)]
pub struct Carry {
    /// An event read ahead while looking past an ask, shown first next time.
    pub held: Option<EventEnvelope>,
    /// A refused call after whose result the turn is interrupted (a refusal with a note): not
    /// before, or the interrupt would answer the call as interrupted instead of refused.
    pub interrupt_after: Option<ToolCallId>,
}

/// Shows the running turn's events until it asks for approval or ends; Ctrl-C interrupts it.
pub async fn drive<L: SessionLink>(
    link: &mut L,
    render: &mut Renderer,
    sigint: &mut Signal,
    carry: &mut Carry,
) -> Pause {
    let held = &mut carry.held;
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
                    carry.interrupt_after = None;
                    return Pause::Finished(t.reason);
                }
                Event::ToolCallFinished(ref f)
                    if carry.interrupt_after.as_ref() == Some(&f.call_id) =>
                {
                    render.event(&envelope.event);
                    carry.interrupt_after = None;
                    if let Err(e) = link.interrupt().await {
                        render.error(&format!("cannot interrupt: {e}"));
                    }
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

/// Shows the session's events until one that `done` matches (the event a compaction or a
/// change of mode or model ends with), a few seconds at most: it is on its way when the
/// request was answered.
pub async fn settle<L: SessionLink>(
    link: &mut L,
    render: &mut Renderer,
    done: impl Fn(&Event) -> bool,
) {
    while let Ok(Some(envelope)) =
        tokio::time::timeout(Duration::from_secs(5), link.next_event()).await
    {
        render.event(&envelope.event);
        if done(&envelope.event) {
            return;
        }
    }
}
