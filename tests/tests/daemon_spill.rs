//! A big output in a root daemon's session of another user: spilled to the session's folder in
//! the root-only state directory, paged back with `read_file` by that user's worker — and kept
//! from every other uid, which can neither list the sessions nor open the spilled file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply, bash_reply, call_reply};
use agentd_e2e::{As, Dir, test_user};
use daemon::{Daemon, Place, as_user};
use serde_json::{Value, json};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

const CONFIG: &str = "[policy]\nbash = [{ pattern = \"seq *\", action = \"allow\" }]\n";

/// Where the marker of a cut output says the whole of it is.
fn spilled_path(result: &str) -> Option<String> {
    let (_, rest) = result.split_once(" lines) is in ")?;
    Some(rest.split_once(": page through")?.0.to_owned())
}

/// The model: a big output, then a page from the middle of it (the part the model was not
/// given), then the answer.
fn model(body: &Value) -> agentd_e2e::mock_llm::Reply {
    let results: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    match results.as_slice() {
        [] => bash_reply("call_1", "seq 1 20000"),
        [first] => match first["content"].as_str().and_then(spilled_path) {
            Some(path) => call_reply(
                "call_2",
                "read_file",
                json!({"path": path, "offset": 9000, "limit": 5}),
            ),
            None => answer_reply("the output was not spilled"),
        },
        _ => answer_reply("read it"),
    }
}

/// Runs `args` as uid and gid 65534 (nobody), no groups; whether it succeeded.
fn as_nobody(args: &[&str]) -> bool {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(args)
        .output()
        .unwrap()
        .status
        .success()
}

fn finished(frames: &[Value], call: &str) -> Value {
    frames
        .iter()
        .find(|f| f["event"]["type"] == "tool_call_finished" && f["event"]["call_id"] == call)
        .unwrap_or_else(|| panic!("no result for {call}: {frames:?}"))["event"]
        .clone()
}

#[test]
fn another_users_spilled_output_is_paged_back_by_its_workers_and_hidden_from_other_uids() {
    let Some(user) = test_user() else {
        eprintln!("skipped: needs root to create the test user");
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::responding(model));
    let place = Place::new(CONFIG);
    let _d = Daemon::start(&place, &mock.url());
    std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let ws = Dir::new("dspill-ws", As::User);

    let frames = as_user(
        &place.socket,
        &[
            json!({"type": "create_session", "workspace": ws.0, "model": null,
                "approval": "on_risk", "max_steps": null, "title": null}),
            json!({"type": "attach_session", "session": "$SESSION", "after_seq": null}),
            json!({"type": "send_message", "session": "$SESSION", "text": "count"}),
        ],
    );
    let first = finished(&frames, "call_1");
    let path = PathBuf::from(
        spilled_path(first["content"].as_str().unwrap()).expect("the big output was spilled"),
    );
    let page = finished(&frames, "call_2");
    assert_eq!(page["status"], "ok", "{page}");
    let text = page["content"].as_str().unwrap();
    assert!(
        text.contains("9002") && !text.contains("9010"),
        "the page from the middle: {text}"
    );
    assert_eq!(
        frames.last().unwrap()["event"]["reason"],
        "done",
        "{frames:?}"
    );

    // The file and its folder are the owner's alone; the log stays root's.
    let file = std::fs::metadata(&path).unwrap();
    assert_eq!((file.uid(), file.mode() & 0o777), (user.uid, 0o600));
    let folder = std::fs::metadata(path.parent().unwrap()).unwrap();
    assert_eq!((folder.uid(), folder.mode() & 0o777), (user.uid, 0o700));
    let session_dir = path.parent().unwrap().parent().unwrap();
    let log = std::fs::metadata(session_dir.join("log.jsonl")).unwrap();
    assert_eq!((log.uid(), log.mode() & 0o777), (0, 0o600));

    // Another uid: cannot list the sessions, enter the session, or read the spilled output.
    let sessions = place.state.0.join("sessions");
    assert!(as_nobody(&["true"]), "setpriv works");
    assert!(as_nobody(&["stat", &sessions.display().to_string()]));
    for attempt in [
        vec!["ls", sessions.to_str().unwrap()],
        vec!["ls", session_dir.to_str().unwrap()],
        vec!["cat", path.to_str().unwrap()],
        vec!["cat", session_dir.join("log.jsonl").to_str().unwrap()],
    ] {
        assert!(!as_nobody(&attempt), "nobody could {attempt:?}");
    }
    assert_unreadable_to_the_owner(session_dir);
}

/// The owner reaches their spill folder, and nothing else of the session's.
fn assert_unreadable_to_the_owner(session_dir: &Path) {
    let out = agentd_e2e::command_for("cat", As::User)
        .arg(session_dir.join("log.jsonl"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "the owner read the log");
    let out = agentd_e2e::command_for("ls", As::User)
        .arg(session_dir)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "the owner listed the session directory"
    );
}
