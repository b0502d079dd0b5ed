//! What the daemon keeps of a client's strings, and how it lists sessions: every string a
//! request carries is bounded (`protocol::bounds`), and `list_sessions` answers from the asking
//! uid's index (`<state>/index/<uid>/`), never from logs — so another user's sessions, however
//! many or broken, cost a listing nothing — and that index survives a restart, a `kill -9`, and
//! a summary torn or left stale by one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::answer_reply as answer;
use daemon::{Client, Daemon, Place, as_user, workspace};
use protocol::Encoding;
use protocol::control::*;
use protocol::ids::SessionId;
use protocol::session::{SessionInfo, SessionState};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

async fn list(c: &mut Client) -> Vec<SessionInfo> {
    match c
        .ask(Request::ListSessions(ListSessions { all_users: false }))
        .await
    {
        ResponseBody::Sessions(l) => l.sessions,
        other => panic!("list_sessions: {other:?}"),
    }
}

fn create(workspace: &std::path::Path, model: Option<String>, title: Option<String>) -> Request {
    Request::CreateSession(CreateSession {
        workspace: workspace.to_path_buf(),
        model,
        approval: protocol::verdict::ApprovalMode::OnRisk,
        max_steps: None,
        title,
        read_only: false,
    })
}

/// The message of an error answer with code `bad_request`.
fn bad_request(body: &ResponseBody) -> &str {
    match body {
        ResponseBody::Error(e) if e.code == ErrorCode::BadRequest => &e.message,
        other => panic!("expected bad_request, got {other:?}"),
    }
}

// A 15 MB title or a 4 MB model name was stored whole, in the log's header and in memory,
// and sent back in every listing.
#[test]
fn strings_over_their_limit_are_refused_naming_the_field_and_nothing_is_kept() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Json).await;
        let huge_title = "t".repeat(15 << 20);
        let body = c.ask(create(&ws.0, None, Some(huge_title))).await;
        let m = bad_request(&body);
        assert!(
            m.contains("create_session.title") && m.contains("256"),
            "{m}"
        );
        let body = c.ask(create(&ws.0, Some("m".repeat(4 << 20)), None)).await;
        let m = bad_request(&body);
        assert!(
            m.contains("create_session.model") && m.contains("256"),
            "{m}"
        );
        let deep = PathBuf::from(format!("/{}", "d/".repeat(2100)));
        let body = c.ask(create(&deep, None, None)).await;
        let m = bad_request(&body);
        assert!(
            m.contains("create_session.workspace") && m.contains("4096"),
            "{m}"
        );
        let sessions = place.state.0.join("sessions");
        assert_eq!(
            std::fs::read_dir(&sessions).unwrap().count(),
            0,
            "none kept"
        );
        // At the limits it is taken, on the same connection: the daemon went on.
        let body = c
            .ask(create(&ws.0, Some("m".repeat(256)), Some("t".repeat(256))))
            .await;
        let ResponseBody::SessionCreated(info) = body else {
            panic!("{body:?}")
        };
        let set = Request::SetModel(SetModel {
            session: info.id.clone(),
            model: "m".repeat(257),
        });
        let m = c.ask(set).await;
        assert!(bad_request(&m).contains("set_model.model"), "{m:?}");
        // Listed on one line, cut as every title is.
        let title = format!("{}…", "t".repeat(59));
        assert_eq!(list(&mut c).await[0].title.as_deref(), Some(title.as_str()));
    });
}

// `list_sessions` and the per-user count of `create_session` read every user's logs: another
// user's many long sessions made a listing take seconds — and a log that blocks its reader (here
// a FIFO in its place) held every other user's `create_session` for good.
#[test]
fn another_users_logs_are_never_opened_for_my_list_or_create() {
    if agentd_e2e::test_user().is_none() {
        eprintln!("skipped: needs root to create the test user");
        return;
    }
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![answer("a"), answer("b"), answer("c")]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    open_to_all(&rt, &place);
    let theirs = agentd_e2e::Dir::new("didx-theirs", agentd_e2e::As::User);
    let create = json!({"type": "create_session", "workspace": theirs.0, "model": null,
        "approval": "on_risk", "max_steps": null, "title": "theirs"});
    // Each given a message: a session is written (and so has a log) from its first one.
    let attach = json!({"type": "attach_session", "session": "$SESSION", "after_seq": null});
    let send = json!({"type": "send_message", "session": "$SESSION", "text": "hi"});
    let one = [create, attach, send];
    let frames = as_user(&place.socket, &[one.clone(), one.clone(), one].concat());
    let ids: Vec<SessionId> = frames
        .iter()
        .filter_map(|f| f["body"]["id"].as_str())
        .map(|id| SessionId::new(id).unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{frames:?}");
    for id in &ids {
        let log = place.log(id);
        std::fs::remove_file(&log).unwrap();
        nix::unistd::mkfifo(&log, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    }
    let ws = workspace();
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Bincode).await;
        // Each answers within the client's patience: nothing waits on their logs.
        let mine = c.create(&ws.0, "on_risk").await;
        let listed = list(&mut c).await;
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0].id, mine);
    });
}

/// Lets every user connect, once the daemon has finished setting its socket up (it answers).
fn open_to_all(rt: &tokio::runtime::Runtime, place: &Place) {
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Json).await;
        c.ask(Request::Status).await;
    });
    std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
}

/// Session `id`'s summary in root's index.
fn summary(place: &Place, id: &SessionId) -> PathBuf {
    place
        .state
        .0
        .join("index/0")
        .join(format!("{}.json", id.as_str()))
}

// The index is a cache of the logs, checked against them: torn by a crash mid-write it is
// rebuilt, left behind by one (older than its log) it is caught up, and a restart finds it.
#[test]
fn the_index_survives_restarts_a_kill9_and_a_torn_or_stale_summary() {
    let rt = runtime();
    let mock = rt.block_on(MockLlm::start(vec![answer("one"), answer("two")]));
    let place = Place::new("");
    let ws = workspace();
    let d = Daemon::start(&place, &mock.url());
    let (id, before) = rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Bincode).await;
        let id = c.create(&ws.0, "on_risk").await;
        c.attach(&id, None).await;
        assert_eq!(c.send(&id, "first").await, ResponseBody::Ok);
        c.until_turn_finished().await;
        (id.clone(), list(&mut c).await)
    });
    assert_eq!(before.len(), 1);
    let seq = before[0].last_seq;
    assert!(seq.0 >= 3, "{before:?}");
    d.kill9();

    // Torn mid-write, with the temp file of a rename that never happened beside it.
    let path = summary(&place, &id);
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    let stray = path.with_file_name(format!(".{}.00112233aabbccdd.tmp", id.as_str()));
    std::fs::write(&stray, b"{").unwrap();
    let d = Daemon::start(&place, &mock.url());
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Bincode).await;
        let after = list(&mut c).await;
        assert_eq!(after.len(), 1, "{after:?}");
        assert_eq!((&after[0].id, after[0].last_seq), (&id, seq));
        assert_eq!(after[0].title.as_deref(), Some("e2e"));
        assert_eq!(after[0].state, SessionState::Stopped);
        // Resumed, a second turn; then killed.
        c.resume(&id).await;
        c.attach(&id, Some(seq.0)).await;
        assert_eq!(c.send(&id, "second").await, ResponseBody::Ok);
        c.until_turn_finished().await;
    });
    assert!(!stray.exists(), "the stray temp file was removed at start");
    d.kill9();

    // The summary from before the second turn: what a kill -9 between the log's sync and the
    // summary's rename leaves.
    std::fs::write(&path, &whole).unwrap();
    let _d = Daemon::start(&place, &mock.url());
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Bincode).await;
        let after = list(&mut c).await;
        assert_eq!(after.len(), 1, "{after:?}");
        assert!(after[0].last_seq.0 >= seq.0 + 3, "caught up: {after:?}");
        let log_lines = std::fs::read_to_string(place.log(&id))
            .unwrap()
            .lines()
            .count();
        assert_eq!(
            after[0].last_seq.0 as usize,
            log_lines - 1,
            "every record counted"
        );
    });
}
