//! A session's events on their way out: numbered and kept by the store, then handed to every
//! subscriber — in that order, under one lock, so that a subscriber who joins (registering under
//! that lock, then replaying the log after seq N up to where it joined) and then receives live
//! events sees every event exactly once.

use crate::store::StoreError;
use crate::store::log::SessionLog;
use crate::store::pending::PendingLog;
use protocol::event::{Event, EventEnvelope};
use protocol::ids::{Seq, SessionId};
use std::sync::Mutex;
use tokio::sync::mpsc;

/// The events of one session: its log (if it is kept) and who is listening.
#[derive(Debug)]
pub struct Journal {
    /// The session the events belong to.
    session: SessionId,
    /// The log and the subscribers, under one lock: appending and broadcasting one event, and
    /// joining (replay + registration), are each atomic with respect to the other.
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The session's log; `None` when the session is not kept (no state directory), not yet
    /// written (`pending`), or closed.
    log: Option<SessionLog>,
    /// The log to write at the session's first user message, until then.
    pending: Option<PendingLog>,
    /// The events before that message, numbered from 1, kept to be written first then (and to
    /// replay to a client that attaches before).
    early: Vec<EventEnvelope>,
    /// Sequence numbers handed out when there is no log.
    counted: u64,
    /// Live subscribers. Unbounded, because the session must never wait for a reader: each
    /// reader (a client's forwarder, `agent run`'s renderer) drains into its own bounded queue
    /// and is dropped when that fills, which ends its subscription.
    subscribers: Vec<mpsc::UnboundedSender<EventEnvelope>>,
    /// The session has stopped: no more events, no new subscribers.
    closed: bool,
}

/// Why a subscription could not be made.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The session stopped; its log is on disk.
    #[error("session {0} has stopped")]
    Closed(String),
    /// The log could not be read back for the replay.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Journal {
    /// The journal of `session`, kept in `log` when there is one.
    pub fn new(session: SessionId, log: Option<SessionLog>) -> Self {
        Self {
            session,
            inner: Mutex::new(Inner {
                log,
                pending: None,
                early: Vec::new(),
                counted: 0,
                subscribers: Vec::new(),
                closed: false,
            }),
        }
    }

    /// The journal of a session written to `pending`'s log at its first user message: until
    /// then it is on no disk (see [`PendingLog`]).
    pub fn pending(pending: PendingLog) -> Self {
        let journal = Self::new(pending.id().clone(), None);
        journal.lock().pending = Some(pending);
        journal
    }

    /// Whether the session waits for its first message to be written (it is on no disk yet).
    pub fn is_pending(&self) -> bool {
        self.lock().pending.is_some()
    }

    /// Clients still subscribed (those whose stream was dropped are not counted).
    pub fn subscribers(&self) -> usize {
        let mut inner = self.lock();
        inner.subscribers.retain(|s| !s.is_closed());
        inner.subscribers.len()
    }

    /// The session.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the log and the list consistent: go on.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Numbers `event`, appends it to the log (synced at the end of each step: the model's
    /// message, a tool's result, a compaction, the turn's end), then hands it to every
    /// subscriber. A log that cannot be written is reported once per event and the session goes
    /// on unrecorded.
    pub fn emit(&self, event: Event) -> Seq {
        let mut inner = self.lock();
        if inner.closed {
            return inner.last_seq();
        }
        if matches!(event, Event::UserMessage(_)) {
            inner.write_pending();
        }
        let seq = match &mut inner.log {
            Some(log) => append(log, &event),
            None => {
                inner.counted += 1;
                Seq(inner.counted)
            }
        };
        let envelope = EventEnvelope {
            session: self.session.clone(),
            seq,
            event,
        };
        if inner.pending.is_some() {
            inner.early.push(envelope.clone());
        }
        inner
            .subscribers
            .retain(|s| s.send(envelope.clone()).is_ok());
        seq
    }

    /// The newest sequence number.
    pub fn last_seq(&self) -> Seq {
        self.lock().last_seq()
    }

    /// The folder of the session's spilled outputs, if it is kept.
    pub fn spill_dir(&self) -> Result<Option<std::path::PathBuf>, StoreError> {
        let inner = self.lock();
        match (&inner.log, &inner.pending) {
            (Some(log), _) => log.spill_dir().map(Some),
            (None, Some(pending)) => pending.spill_dir().map(Some),
            (None, None) => Ok(None),
        }
    }

    /// Joins: the events after `after` (all with `None`) as kept in the log, then every live one.
    /// A session that is not kept replays nothing.
    ///
    /// Under the lock it only registers and notes the newest seq `L`; the log is read after the
    /// lock is released, keeping the records up to `L` (all on disk already: each was written
    /// before its number was handed out) — so a long replay never holds the session back, and
    /// the live stream starts exactly after `L`.
    pub fn subscribe(
        &self,
        after: Option<Seq>,
    ) -> Result<(Vec<EventEnvelope>, mpsc::UnboundedReceiver<EventEnvelope>), JournalError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (path, upto, early) = {
            let mut inner = self.lock();
            if inner.closed {
                return Err(JournalError::Closed(self.session.as_str().to_owned()));
            }
            inner.subscribers.push(tx);
            let path = inner.log.as_ref().map(|l| l.path().to_path_buf());
            // Before its first message a session's events are in memory only: taken here.
            let early: Vec<EventEnvelope> = inner
                .early
                .iter()
                .filter(|e| e.seq.0 > after.map_or(0, |s| s.0))
                .cloned()
                .collect();
            (path, inner.last_seq().0, early)
        };
        let after = after.map_or(0, |s| s.0);
        let replay = match path {
            // A line being appended right now is unterminated and read as torn: it is past `L`.
            Some(path) if after < upto => crate::store::read::load(&path)?
                .records
                .into_iter()
                .filter(|r| r.seq.0 > after && r.seq.0 <= upto)
                .map(|r| EventEnvelope {
                    session: self.session.clone(),
                    seq: r.seq,
                    event: r.event,
                })
                .collect(),
            _ => early,
        };
        Ok((replay, rx))
    }

    /// Stops the journal: the log is synced and closed (its lock released), or a session never
    /// written leaves nothing, and every subscriber's stream ends.
    pub fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        inner.subscribers.clear();
        // Never given a message: its held directory goes (see `PendingLog`).
        inner.pending = None;
        inner.early.clear();
        if let Some(mut log) = inner.log.take()
            && let Err(e) = log.sync()
        {
            tracing::error!("the session log could not be synced: {e}");
        }
    }
}

impl Inner {
    /// Writes the pending log, if there is one, with the events before the first message: they
    /// keep their numbers (the log numbers from 1 as they were). A log that cannot be written
    /// is reported and the session goes on unrecorded.
    fn write_pending(&mut self) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let early = std::mem::take(&mut self.early);
        match pending.create() {
            Ok(mut log) => {
                for e in &early {
                    append(&mut log, &e.event);
                }
                self.log = Some(log);
            }
            Err(e) => tracing::error!("the session is not being recorded: {e}"),
        }
    }

    fn last_seq(&self) -> Seq {
        match &self.log {
            Some(log) => log.last_seq(),
            None => Seq(self.counted),
        }
    }
}

/// Appends `event` to `log`, syncing at a step's end; returns its number.
fn append(log: &mut SessionLog, event: &Event) -> Seq {
    let seq = match log.append(event) {
        Ok(seq) => seq,
        Err(e) => {
            tracing::error!("the session is not being recorded: {e}");
            return log.last_seq();
        }
    };
    let step_end = matches!(
        event,
        Event::AssistantMessage(_)
            | Event::ToolCallFinished(_)
            | Event::ContextCompacted(_)
            | Event::ApprovalModeChanged(_)
            | Event::ModelChanged(_)
            | Event::TurnFinished(_)
    );
    if step_end && let Err(e) = log.sync() {
        tracing::error!("the session log could not be synced: {e}");
    }
    seq
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use protocol::event::{TurnStarted, UserMessage};

    fn user(text: &str) -> Event {
        Event::UserMessage(UserMessage { text: text.into() })
    }

    #[test]
    fn a_subscriber_gets_the_replay_after_n_then_live_events_once_each() {
        let dir = std::env::temp_dir().join(format!("agentd-journal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let (log, header) = SessionLog::create(&store, std::path::Path::new("/w"), "m", 0).unwrap();
        let journal = Journal::new(header.id.clone(), Some(log));
        for t in ["a", "b", "c"] {
            journal.emit(user(t));
        }
        let (replay, mut live) = journal.subscribe(Some(Seq(1))).unwrap();
        let seqs: Vec<u64> = replay.iter().map(|e| e.seq.0).collect();
        assert_eq!(seqs, vec![2, 3]);
        journal.emit(Event::TurnStarted(TurnStarted { turn: 1 }));
        let next = live.try_recv().unwrap();
        assert_eq!(next.seq, Seq(4));
        assert!(live.try_recv().is_err(), "nothing twice");
        let (all, _) = journal.subscribe(None).unwrap();
        assert_eq!(all.len(), 4);
        journal.close();
        assert!(matches!(
            live.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
        assert!(journal.subscribe(None).is_err(), "closed");
        // The lock went with the log: the session can be reopened.
        SessionLog::reopen(&store, &header.id).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn joining_while_events_are_appended_misses_none_and_sees_none_twice() {
        let dir = std::env::temp_dir().join(format!("agentd-journal-race-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let (log, header) = SessionLog::create(&store, std::path::Path::new("/w"), "m", 0).unwrap();
        let journal = std::sync::Arc::new(Journal::new(header.id.clone(), Some(log)));
        const N: u64 = 20_000;
        let writer = {
            let journal = journal.clone();
            std::thread::spawn(move || {
                for i in 0..N {
                    journal.emit(user(&format!("event {i}")));
                }
            })
        };
        // Join several times while the writer runs, each from another point.
        let mut joins = Vec::new();
        const AFTER: [u64; 8] = [0, 1, 5, 10, 50, 100, 500, 1000];
        for (i, after) in AFTER.into_iter().enumerate() {
            // Each join while the writer is well under way.
            while journal.last_seq().0 < 200 * (i as u64 + 1) && !writer.is_finished() {
                std::thread::yield_now();
            }
            joins.push(journal.subscribe(Some(Seq(after))).unwrap());
        }
        writer.join().unwrap();
        for (i, (replay, mut live)) in joins.into_iter().enumerate() {
            let after = AFTER[i];
            let mut seqs: Vec<u64> = replay.iter().map(|e| e.seq.0).collect();
            while let Ok(e) = live.try_recv() {
                // What a subscription hands on (it skips what the subscriber said it has).
                if e.seq.0 > after {
                    seqs.push(e.seq.0);
                }
            }
            let want: Vec<u64> = (after + 1..=N).collect();
            assert_eq!(seqs, want, "join {i} after {after}: a gap or a repeat");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_pending_session_is_written_at_its_first_message_with_the_events_before() {
        let dir =
            std::env::temp_dir().join(format!("agentd-journal-pending-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let pending = PendingLog::new(
            &store,
            std::path::Path::new("/w"),
            "m",
            0,
            Default::default(),
        )
        .unwrap();
        let journal = Journal::pending(pending);
        let id = journal.session().clone();
        journal.emit(Event::TurnStarted(TurnStarted { turn: 0 }));
        assert!(journal.is_pending());
        let log = store.dir_of(&id).join(crate::store::log::LOG_FILE);
        assert!(!log.exists(), "no log before a message");
        assert!(store.list_of(0).0.is_empty(), "nothing listed");
        let (early, _live) = journal.subscribe(None).unwrap();
        assert_eq!(
            early.len(),
            1,
            "a client attaching now sees the early event"
        );
        assert_eq!(journal.emit(user("hello")), Seq(2));
        assert!(!journal.is_pending());
        journal.close();
        let (_, loaded) = SessionLog::reopen(&store, &id).unwrap();
        let seqs: Vec<u64> = loaded.records.iter().map(|r| r.seq.0).collect();
        assert_eq!(seqs, vec![1, 2], "the early event first, with its number");
        let (listed, _) = store.list_of(0);
        assert_eq!(listed.len(), 1, "listed once written");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_pending_session_never_given_a_message_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("agentd-journal-empty-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let pending = PendingLog::new(
            &store,
            std::path::Path::new("/w"),
            "m",
            0,
            Default::default(),
        )
        .unwrap();
        let journal = Journal::pending(pending);
        journal.emit(Event::TurnStarted(TurnStarted { turn: 0 }));
        assert!(
            journal.spill_dir().unwrap().is_some(),
            "its spill folder, for its sandbox"
        );
        journal.close();
        assert_eq!(
            std::fs::read_dir(store.root()).unwrap().count(),
            0,
            "its folder went"
        );
        assert_eq!(store.count_of(0), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_a_log_events_are_still_numbered() {
        let journal = Journal::new(SessionId::new("s-1").unwrap(), None);
        let (_, mut live) = journal.subscribe(None).unwrap();
        assert_eq!(journal.emit(user("x")), Seq(1));
        assert_eq!(journal.emit(user("y")), Seq(2));
        assert_eq!(live.try_recv().unwrap().seq, Seq(1));
    }
}
