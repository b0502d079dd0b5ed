//! A root agentd and a workspace swapped after the session was made (a finding of the
//! session-7 review): another user creates a session on a directory of their own, then replaces
//! it — or a directory on its path — with a symlink to files they may not read. The session
//! is pinned to the directory it was made for (device and inode, taken with the owner's
//! rights): the next call is refused before any tool runs, nothing of the other files reaches
//! the model, and the daemon moves nothing of theirs aside. And `create_session` answers with
//! what the user could see: a path inside a directory closed to them is "permission denied",
//! whatever lies there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use agentd_e2e::{As, test_user};
use daemon::{Daemon, Place, as_user};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A directory under `/opt`, outside the directories every call hides (`/tmp`, `/home`, …),
/// where a swapped path leads straight to its target; owned by `who`, removed when dropped.
struct OptDir(std::path::PathBuf);

impl OptDir {
    fn new(label: &str, who: As) -> Self {
        let path = Path::new("/opt").join(format!(
            "agentd-e2e-{label}-{}-{}",
            std::process::id(),
            agentd_e2e::unique(label)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        agentd_e2e::give(&path, who);
        OptDir(path)
    }
}

impl Drop for OptDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Someone else's project: a secret the user may not read (its parent is closed to them) and
/// editor settings the daemon's protected-path check would move aside if it took them for new.
fn victim() -> (OptDir, std::path::PathBuf) {
    let home = OptDir::new("swap-victim", As::Root);
    std::fs::set_permissions(&home.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Named as the user's workspace is, so a directory swapped on its path can lead here.
    let project = home.0.join("ws");
    std::fs::create_dir_all(project.join(".vscode")).unwrap();
    std::fs::write(project.join("secret.txt"), "VICTIM-SECRET\n").unwrap();
    (home, project)
}

/// The `tool_call_finished` outputs among `frames`.
fn results(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f["event"]["type"] == "tool_call_finished")
        .map(|f| f["event"].to_string())
        .collect()
}

fn send(socket: &Path, session: &str, text: &str) -> Vec<Value> {
    as_user(
        socket,
        &[
            json!({"type": "attach_session", "session": session, "after_seq": null}),
            json!({"type": "send_message", "session": session, "text": text}),
        ],
    )
}

#[test]
fn a_workspace_swapped_for_a_symlink_after_creation_is_refused_and_nothing_of_the_target_is_touched()
 {
    if test_user().is_none() {
        eprintln!("skipped: needs root to create the test user");
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_1", "echo sane > sane.txt && cat sane.txt"),
        answer("first done"),
        bash("call_2", "pwd; cat secret.txt; ls -a"),
        answer("second done"),
        bash("call_3", "cat secret.txt"),
        answer("third done"),
    ]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (_victim_home, project) = victim();
    // The user's own directory, and the workspace in it.
    let base = OptDir::new("swap-base", As::User);
    let ws = base.0.join("ws");
    std::fs::create_dir(&ws).unwrap();
    agentd_e2e::give(&base.0, As::User);

    let created = as_user(
        &place.socket,
        &[
            json!({"type": "create_session", "workspace": ws, "model": null,
            "approval": "skip_permissions", "max_steps": null, "title": null}),
        ],
    );
    let session = created
        .iter()
        .find_map(|f| f["body"]["id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no session: {created:?}"));
    let first = send(&place.socket, &session, "first");
    assert!(
        results(&first).iter().any(|r| r.contains("sane")),
        "the session works in its own workspace: {first:?}"
    );

    // The workspace itself swapped for a symlink to the other project.
    std::fs::rename(&ws, base.0.join("ws.old")).unwrap();
    std::os::unix::fs::symlink(&project, &ws).unwrap();
    let second = send(&place.socket, &session, "second");
    let out = results(&second).join("\n");
    assert!(!out.contains("VICTIM-SECRET"), "{second:?}");
    assert!(
        out.contains("no longer the directory this session was made for"),
        "the call is refused, saying why: {second:?}"
    );

    // A directory on its path swapped instead: `base` becomes a link to the other user's home,
    // where `ws` is their project.
    std::fs::remove_file(&ws).unwrap();
    std::fs::rename(base.0.join("ws.old"), &ws).unwrap();
    let moved = base.0.with_extension("moved");
    std::fs::rename(&base.0, &moved).unwrap();
    std::os::unix::fs::symlink(project.parent().unwrap(), &base.0).unwrap();
    let third = send(&place.socket, &session, "third");
    let out = results(&third).join("\n");
    assert!(!out.contains("VICTIM-SECRET"), "{third:?}");
    assert!(
        project.join(".vscode").is_dir() && !project.join(".agentd-quarantine").exists(),
        "nothing of the other project was moved aside"
    );
    let _ = std::fs::remove_file(&base.0);
    let _ = std::fs::remove_dir_all(&moved);
}

#[test]
fn create_session_answers_only_what_the_user_could_see() {
    if test_user().is_none() {
        eprintln!("skipped: needs root to create the test user");
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (victim_home, project) = victim();
    std::fs::write(victim_home.0.join("notes.txt"), "x").unwrap();
    let mut answers = Vec::new();
    for asked in [
        project.clone(),
        victim_home.0.join("notes.txt"),
        victim_home.0.join("nothing-here"),
    ] {
        let frames = as_user(
            &place.socket,
            &[
                json!({"type": "create_session", "workspace": asked, "model": null,
                "approval": "skip_permissions", "max_steps": null, "title": null}),
            ],
        );
        let body = &frames.last().unwrap()["body"];
        assert_eq!(body["type"], "error", "{frames:?}");
        answers.push(body["message"].as_str().unwrap().to_owned());
    }
    for answer in &answers {
        assert!(answer.contains("Permission denied"), "{answers:?}");
        assert!(
            !answer.contains("not a directory")
                && !answer.contains("No such file")
                && !answer.contains("belongs to uid"),
            "{answers:?}"
        );
    }
}
