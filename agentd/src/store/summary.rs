//! A session's summary: what a listing shows of it, folded from its log one record at a time.
//! Pure: the index ([`super::index`]) keeps one per session on disk, the log's writer keeps one
//! in memory and folds each record it appends.
//!
//! A summary says how much of the log it covers (`covered_bytes`, always the end of a whole
//! line): the log only grows by whole lines after it (a torn last line is cut off before the next
//! record is written, and is never covered), so a summary of the first N bytes stays true, and a
//! reader that finds the log longer folds only the lines after N.

use super::log::{Header, Record};
use protocol::event::Event;
use protocol::ids::SessionId;
use protocol::session::FinishReason;
use protocol::verdict::ApprovalMode;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The format of a summary file; another one is rebuilt from the log.
pub const SUMMARY_VERSION: u32 = 1;

/// Longest title, in characters.
const TITLE_CHARS: usize = 60;

/// One session, as its listing shows it, and how much of its log that covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// [`SUMMARY_VERSION`].
    pub summary: u32,
    /// The session.
    pub id: SessionId,
    /// Who owns it.
    pub owner_uid: u32,
    /// The directory it works in.
    pub workspace: PathBuf,
    /// Its model: the one it was created with, or the one it was last switched to.
    pub model: String,
    /// Its approval mode: from its header, or the one it was last switched to.
    pub approval: Option<ApprovalMode>,
    /// The title it was created with, on one line and cut.
    pub title: Option<String>,
    /// Its first user message, on one line and cut.
    pub first_message: Option<String>,
    /// When it was created, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// When its newest record was written (its creation, before any).
    pub last_activity_unix_ms: u64,
    /// How its newest turn stands, if it had one.
    pub last_turn: Option<LastTurn>,
    /// Its newest sequence number (0 before any record).
    pub last_seq: u64,
    /// The length of the log this summarises: the end of its last whole line.
    pub covered_bytes: u64,
}

/// How a session's newest turn stands, as its log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LastTurn {
    /// It ended, for this reason.
    Finished(FinishReason),
    /// It started and its end was never written.
    Cut,
}

impl Entry {
    /// The summary of a log that holds only `header`, a line of `header_bytes` (newline
    /// included).
    pub fn new(header: &Header, header_bytes: u64) -> Self {
        Entry {
            summary: SUMMARY_VERSION,
            id: header.id.clone(),
            owner_uid: header.owner_uid,
            workspace: header.workspace.clone(),
            model: header.model.clone(),
            approval: header.options.approval,
            title: header.options.title.as_deref().map(cut),
            first_message: None,
            created_unix_ms: header.created_unix_ms,
            last_activity_unix_ms: header.created_unix_ms,
            last_turn: None,
            last_seq: 0,
            covered_bytes: header_bytes,
        }
    }

    /// Takes in `record`, the whole line of `line_bytes` (newline included) after what this
    /// covers. Refused (and nothing changed) when it is not the next record.
    pub fn fold(&mut self, record: &Record, line_bytes: u64) -> Result<(), String> {
        let want = self.last_seq + 1;
        if record.seq.0 != want {
            return Err(format!(
                "sequence number {} where {want} was due",
                record.seq.0
            ));
        }
        match &record.event {
            Event::UserMessage(m) if self.first_message.is_none() => {
                self.first_message = Some(cut(&m.text));
            }
            Event::TurnStarted(_) => self.last_turn = Some(LastTurn::Cut),
            Event::TurnFinished(f) => self.last_turn = Some(LastTurn::Finished(f.reason)),
            Event::ApprovalModeChanged(c) => self.approval = Some(c.mode),
            Event::ModelChanged(c) => self.model.clone_from(&c.model),
            _ => {}
        }
        self.last_seq = want;
        self.last_activity_unix_ms = record.unix_ms;
        self.covered_bytes += line_bytes;
        Ok(())
    }

    /// The title a listing shows: the one it was created with, else its first message.
    pub fn shown_title(&self) -> Option<String> {
        self.title.clone().or_else(|| self.first_message.clone())
    }
}

/// `text` on one line, cut to [`TITLE_CHARS`].
pub fn cut(text: &str) -> String {
    // Bounded work whatever the text: a title of old logs could be megabytes.
    let mut words = text.split_whitespace();
    let mut one_line = String::new();
    for word in words.by_ref() {
        if !one_line.is_empty() {
            one_line.push(' ');
        }
        one_line.push_str(word);
        if one_line.chars().count() > TITLE_CHARS {
            break;
        }
    }
    if one_line.chars().count() <= TITLE_CHARS {
        one_line
    } else {
        let mut t: String = one_line.chars().take(TITLE_CHARS - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::store::log::Options;
    use protocol::event::*;
    use protocol::ids::Seq;
    use protocol::session::TokenUsage;

    fn header() -> Header {
        Header {
            agentd_session: 1,
            id: SessionId::new("s-1").unwrap(),
            workspace: "/w".into(),
            model: "m1".into(),
            owner_uid: 7,
            created_unix_ms: 100,
            options: Options::default(),
        }
    }

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq: Seq(seq),
            unix_ms: 100 + seq,
            event,
        }
    }

    #[test]
    fn folding_tracks_title_turns_switches_and_coverage() {
        let mut e = Entry::new(&header(), 50);
        let events = [
            Event::UserMessage(UserMessage {
                text: "fix   the\nparser".into(),
            }),
            Event::TurnStarted(TurnStarted { turn: 1 }),
            Event::ModelChanged(ModelChanged { model: "m2".into() }),
            Event::UserMessage(UserMessage {
                text: "later".into(),
            }),
        ];
        for (i, ev) in events.into_iter().enumerate() {
            e.fold(&record(i as u64 + 1, ev), 10).unwrap();
        }
        assert_eq!(e.shown_title().as_deref(), Some("fix the parser"));
        assert_eq!(e.last_turn, Some(LastTurn::Cut));
        assert_eq!(
            (e.model.as_str(), e.last_seq, e.covered_bytes),
            ("m2", 4, 90)
        );
        assert_eq!(e.last_activity_unix_ms, 104);
        let finished = Event::TurnFinished(TurnFinished {
            reason: FinishReason::Done,
            usage: TokenUsage::default(),
            message: None,
            changes: None,
        });
        assert!(e.fold(&record(6, finished.clone()), 10).is_err(), "a gap");
        assert_eq!(e.last_seq, 4, "unchanged");
        e.fold(&record(5, finished), 10).unwrap();
        assert_eq!(e.last_turn, Some(LastTurn::Finished(FinishReason::Done)));
    }

    #[test]
    fn a_huge_title_is_cut_without_joining_all_of_it() {
        let t = cut(&"word ".repeat(1_000_000));
        assert_eq!(t.chars().count(), TITLE_CHARS);
        assert!(t.ends_with('…'));
    }
}
