//! The store against what a crash, a second process and a bad file do to it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use super::list::Status;
use super::log::{LOG_FILE, SessionLog};
use super::read;
use super::{Store, StoreError};
use protocol::event::*;
use protocol::session::{FinishReason, TokenUsage};
use std::io::Write;
use std::path::PathBuf;

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn store(label: &str) -> (Tmp, Store) {
    let dir = std::env::temp_dir().join(format!("agentd-store-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&dir).unwrap();
    (Tmp(dir), store)
}

fn user(text: &str) -> Event {
    Event::UserMessage(UserMessage { text: text.into() })
}

fn started(turn: u64) -> Event {
    Event::TurnStarted(TurnStarted { turn })
}

fn finished(reason: FinishReason) -> Event {
    Event::TurnFinished(TurnFinished {
        reason,
        usage: TokenUsage::default(),
        message: None,
        changes: None,
    })
}

fn new_session(store: &Store) -> SessionLog {
    SessionLog::create(store, std::path::Path::new("/w/proj"), "m", 1000)
        .unwrap()
        .0
}

#[test]
fn events_come_back_in_order_and_a_reopened_log_goes_on_numbering() {
    let (_t, store) = store("order");
    let mut log = new_session(&store);
    let id = log.id().clone();
    for e in [
        user("fix the parser"),
        started(1),
        finished(FinishReason::Done),
    ] {
        log.append(&e).unwrap();
    }
    log.sync().unwrap();
    drop(log);
    let (mut log, loaded) = SessionLog::reopen(&store, &id).unwrap();
    let seqs: Vec<u64> = loaded.records.iter().map(|r| r.seq.0).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(loaded.records[0].event, user("fix the parser"));
    assert_eq!(loaded.header.workspace, PathBuf::from("/w/proj"));
    assert_eq!(log.append(&user("again")).unwrap().0, 4);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(store.dir_of(&id).join(LOG_FILE))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "the log is private");
}

#[test]
fn a_torn_last_line_is_reported_cut_off_and_nothing_before_it_is_lost() {
    let (_t, store) = store("torn");
    let mut log = new_session(&store);
    let id = log.id().clone();
    log.append(&user("one")).unwrap();
    log.append(&started(1)).unwrap();
    drop(log);
    let path = store.dir_of(&id).join(LOG_FILE);
    // What a crash in the middle of a write leaves.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(br#"{"seq":3,"unix_ms":1,"event":{"type":"assistant_mes"#)
        .unwrap();
    drop(f);

    let loaded = read::load(&path).unwrap();
    assert_eq!(loaded.records.len(), 2, "both complete records are kept");
    let warnings = loaded.warnings(&path);
    assert!(
        warnings[0].contains(&format!("{}:4:", path.display())),
        "{warnings:?}"
    );

    let (mut log, _) = SessionLog::reopen(&store, &id).unwrap();
    assert_eq!(log.append(&finished(FinishReason::Done)).unwrap().0, 3);
    drop(log);
    let loaded = read::load(&path).unwrap();
    assert!(
        loaded.torn.is_none(),
        "the torn bytes were cut before appending"
    );
    assert_eq!(loaded.records.len(), 3);
}

#[test]
fn a_bad_line_in_the_middle_or_another_version_is_an_error_naming_file_and_line() {
    let (_t, store) = store("corrupt");
    let mut log = new_session(&store);
    let id = log.id().clone();
    log.append(&user("one")).unwrap();
    drop(log);
    let path = store.dir_of(&id).join(LOG_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, "garbage");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = read::load(&path).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { line: 2, .. }), "{e}");
    assert!(
        e.to_string().starts_with(&format!("{}:2:", path.display())),
        "{e}"
    );

    let skipped = text.replacen(r#""seq":1"#, r#""seq":7"#, 1);
    std::fs::write(&path, skipped).unwrap();
    let e = read::load(&path).unwrap_err().to_string();
    assert!(e.contains(":2: sequence number 7 where 1 was due"), "{e}");

    let future = text.replacen(r#""agentd_session":1"#, r#""agentd_session":2"#, 1);
    std::fs::write(&path, future).unwrap();
    let e = read::load(&path).unwrap_err();
    assert!(matches!(e, StoreError::Version { found: 2, .. }), "{e}");
    assert!(
        e.to_string()
            .contains(":1: this session log has format version 2"),
        "{e}"
    );
}

#[test]
fn one_writer_per_session_and_delete_takes_the_spill_with_it() {
    let (_t, store) = store("lock");
    let log = new_session(&store);
    let id = log.id().clone();
    let spill = log.spill_dir().unwrap();
    std::fs::write(spill.join("out-1.txt"), "big").unwrap();
    let e = SessionLog::reopen(&store, &id).unwrap_err();
    assert!(matches!(e, StoreError::InUse { .. }), "{e}");
    assert!(
        store.delete(&id).is_err(),
        "a session being written is not deleted"
    );
    drop(log);
    store.delete(&id).unwrap();
    assert!(!store.dir_of(&id).exists() && !spill.exists());
    let e = SessionLog::reopen(&store, &id).unwrap_err();
    assert!(matches!(e, StoreError::NotFound { .. }), "{e}");
}

#[test]
fn the_listing_has_title_status_and_survives_a_bad_log() {
    let (_t, store) = store("list");
    let mut done = new_session(&store);
    done.append(&user(
        "make   the\ntests pass, and then a very long explanation follows here",
    ))
    .unwrap();
    done.append(&started(1)).unwrap();
    done.append(&finished(FinishReason::Done)).unwrap();
    let done_id = done.id().as_str().to_owned();
    drop(done);
    let mut cut = new_session(&store);
    cut.append(&user("refactor")).unwrap();
    cut.append(&started(1)).unwrap();
    let cut_id = cut.id().as_str().to_owned();
    drop(cut);
    let mut running = new_session(&store);
    running.append(&user("running")).unwrap();
    let running_id = running.id().as_str().to_owned();
    let bad = store.root().join("s-bad");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join(LOG_FILE), "not json\n").unwrap();

    let (sessions, errors) = store.list();
    let status = |id: &str| sessions.iter().find(|s| s.id == id).map(|s| s.status);
    assert_eq!(status(&done_id), Some(Status::Finished(FinishReason::Done)));
    assert_eq!(status(&cut_id), Some(Status::Cut));
    assert_eq!(status(&running_id), Some(Status::Running));
    let done = sessions.iter().find(|s| s.id == done_id).unwrap();
    assert_eq!(
        done.title.as_deref(),
        Some("make the tests pass, and then a very long explanation follo…")
    );
    assert_eq!(done.last_seq, 3);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].to_string().contains("s-bad"), "{}", errors[0]);
    drop(running);
}

#[test]
fn a_reader_beside_a_writer_sees_only_whole_records() {
    let (_t, store) = store("readers");
    let mut log = new_session(&store);
    let path = store.dir_of(log.id()).join(LOG_FILE);
    for i in 0..200 {
        log.append(&user(&format!("message {i}"))).unwrap();
        if i % 20 == 0 {
            let loaded = read::load(&path).unwrap();
            assert_eq!(loaded.records.len(), i + 1);
            assert!(loaded.torn.is_none());
        }
    }
}
