//! The index against what other users' sessions, a crash mid-write and old stores do to it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use super::Store;
use super::log::{LOG_FILE, SessionLog};
use super::read;
use protocol::event::*;
use protocol::ids::SessionId;
use std::path::{Path, PathBuf};

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn store(label: &str) -> (Tmp, Store) {
    let dir = std::env::temp_dir().join(format!("agentd-index-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&dir).unwrap();
    (Tmp(dir), store)
}

fn user(text: &str) -> Event {
    Event::UserMessage(UserMessage { text: text.into() })
}

/// A session of `uid` with `messages` user messages, synced.
fn session(store: &Store, uid: u32, messages: usize) -> SessionId {
    let mut log = SessionLog::create(store, Path::new("/w"), "m", uid)
        .unwrap()
        .0;
    for i in 0..messages {
        log.append(&user(&format!("message {i} {}", "x".repeat(1000))))
            .unwrap();
    }
    log.sync().unwrap();
    log.id().clone()
}

#[test]
fn a_listing_opens_no_log_of_another_user_however_many_and_broken() {
    let (_t, store) = store("others");
    let theirs: Vec<SessionId> = (0..5).map(|_| session(&store, 1000, 200)).collect();
    let mine = session(&store, 2000, 3);
    // Their logs turn to garbage: a listing that read them would report each one.
    for id in &theirs {
        std::fs::write(store.dir_of(id).join(LOG_FILE), "garbage\n").unwrap();
    }
    read::opened();
    let (listed, errors) = store.list_of(2000);
    let opened = read::opened();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].id.as_str(), listed[0].last_seq),
        (mine.as_str(), 3)
    );
    for id in &theirs {
        let dir = store.dir_of(id);
        assert!(
            !opened.iter().any(|p| p.starts_with(&dir)),
            "opened {opened:?}"
        );
    }
    // Counting and ownership come from the index too.
    assert_eq!(store.count_of(2000), 1);
    assert_eq!(store.count_of(1000), 5);
    assert!(!store.is_owner(2000, &theirs[0]) && store.is_owner(2000, &mine));
    assert!(read::opened().is_empty(), "{:?}", read::opened());
}

#[test]
fn a_stale_summary_is_caught_up_and_a_torn_one_rebuilt_from_the_log() {
    let (_t, store) = store("crash");
    let mut log = SessionLog::create(&store, Path::new("/w"), "m", 7)
        .unwrap()
        .0;
    let id = log.id().clone();
    log.append(&user("first")).unwrap();
    log.sync().unwrap();
    let entry = store.entry_path(7, &id);
    let old = std::fs::read(&entry).unwrap();
    for i in 0..3 {
        log.append(&user(&format!("more {i}"))).unwrap();
    }
    log.sync().unwrap();
    drop(log);
    // kill -9 after the log's sync and before the summary's rename: the summary before.
    std::fs::write(&entry, &old).unwrap();
    read::opened();
    let (listed, errors) = store.list_of(7);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        listed[0].last_seq, 4,
        "the lines after the summary are folded in"
    );
    assert_eq!(listed[0].title.as_deref(), Some("first"));
    assert_eq!(
        read::opened().len(),
        2,
        "its own log: the tail, and the lock probe"
    );
    // ...and the caught-up summary is kept: the next listing reads no log contents.
    let caught_up: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
    assert_eq!(caught_up["last_seq"], 4);

    // A torn summary (a power cut: it is not synced), and a stray temp file of a rename that
    // never happened.
    std::fs::write(&entry, &old[..old.len() / 2]).unwrap();
    let stray = entry.with_file_name(format!(".{id}.0123456789abcdef.tmp"));
    std::fs::write(&stray, "{").unwrap();
    let (listed, errors) = store.list_of(7);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].last_seq, 4, "rebuilt from the log");
    assert!(store.reconcile().is_empty());
    assert!(!stray.exists(), "the stray temp file is removed");

    // A summary lost altogether: back at the next reconcile (the daemon's start).
    std::fs::remove_file(&entry).unwrap();
    assert!(store.list_of(7).0.is_empty());
    assert!(store.reconcile().is_empty());
    assert_eq!(store.list_of(7).0[0].last_seq, 4);

    // A summary whose log was deleted (a crash between the two) is dropped.
    store.delete(&id).unwrap();
    assert!(!entry.exists(), "delete takes the summary");
    std::fs::write(&entry, &old).unwrap();
    assert!(store.list_of(7).0.is_empty());
    assert!(!entry.exists());
}

#[test]
fn ids_are_random_and_sessions_with_old_ids_still_list_and_resume() {
    let (_t, store) = store("ids");
    let a = session(&store, 7, 0);
    let b = session(&store, 7, 0);
    for id in [&a, &b] {
        let hex = id.as_str().strip_prefix("s-").unwrap();
        assert_eq!(hex.len(), 32, "{id}");
        assert!(hex.bytes().all(|c| c.is_ascii_hexdigit()), "{id}");
        assert!(
            !id.as_str().contains(&std::process::id().to_string()),
            "{id}"
        );
    }
    assert_ne!(a, b);
    assert_ne!(
        a.as_str()[2..18],
        b.as_str()[2..18],
        "the random parts differ"
    );

    // A session written before ids were random, and before the index: its directory, its log
    // naming it, no summary.
    let old = SessionId::new("s-1796000000000-4242-0").unwrap();
    std::fs::rename(store.dir_of(&b), store.dir_of(&old)).unwrap();
    store.remove_entry(7, &b);
    let log = store.dir_of(&old).join(LOG_FILE);
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replacen(b.as_str(), old.as_str(), 1)).unwrap();
    assert!(store.reconcile().is_empty());
    let (listed, _) = store.list_of(7);
    assert!(listed.iter().any(|s| s.id == old.as_str()), "{listed:?}");
    let (mut resumed, loaded) = SessionLog::reopen(&store, &old).unwrap();
    assert_eq!(loaded.header.id, old);
    assert_eq!(resumed.append(&user("again")).unwrap().0, 1);
    resumed.sync().unwrap();
    drop(resumed);
    let (listed, _) = store.list_of(7);
    let s = listed.iter().find(|s| s.id == old.as_str()).unwrap();
    assert_eq!((s.last_seq, s.title.as_deref()), (1, Some("again")));
}
