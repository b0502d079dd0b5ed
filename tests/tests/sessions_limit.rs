//! The per-user session limit of the daemon counts what the user can see and remove, its
//! refusal names the command, and `agent sessions rm` / `prune` free it: a daemon with
//! `max_sessions_per_uid = 2`, driven over its socket and by the real `agent sessions`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::answer_reply as answer;
use agentd_e2e::{As, command_as};
use daemon::{Client, Daemon, Place, code, workspace};
use protocol::Encoding;
use protocol::control::{ErrorCode, ResponseBody};
use protocol::ids::SessionId;
use std::path::Path;

/// `agent sessions --socket SOCKET ARGS`: exit code, stdout, stderr.
fn sessions(socket: &Path, args: &[&str]) -> (i32, String, String) {
    let out = command_as("agent", As::Root, &[])
        .arg("sessions")
        .args(args)
        .arg("--socket")
        .arg(socket)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A session with one finished turn (so it is kept on disk).
async fn used(client: &mut Client, ws: &Path) -> SessionId {
    let id = client.create(ws, "on_risk").await;
    client.attach(&id, None).await;
    assert_eq!(client.send(&id, "hello").await, ResponseBody::Ok);
    client.until_turn_finished().await;
    id
}

#[test]
fn at_the_limit_rm_and_prune_free_it_and_the_refusal_names_them() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        answer("one"),
        answer("two"),
        answer("three"),
    ]));
    let place = Place::new("[server]\nmax_sessions_per_uid = 2\n");
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Bincode).await;
        let a = used(&mut c, &ws.0).await;
        let b = used(&mut c, &ws.0).await;
        let refused = c.ask(create(&ws.0)).await;
        assert_eq!(code(&refused), Some(ErrorCode::Forbidden), "{refused:?}");
        let ResponseBody::Error(e) = &refused else {
            unreachable!()
        };
        assert!(e.message.contains("agent sessions rm"), "{}", e.message);

        // What counts is what `agent sessions` lists.
        let (status, listed, err) = sessions(&place.socket, &[]);
        assert_eq!(status, 0, "{err}");
        assert!(
            listed.contains(a.as_str()) && listed.contains(b.as_str()),
            "{listed}"
        );

        // rm frees one: its log goes, and a new session may be made.
        let (status, out, err) = sessions(&place.socket, &["rm", a.as_str()]);
        assert_eq!(status, 0, "{out}{err}");
        assert!(out.contains(&format!("removed {a}")), "{out}");
        assert!(!place.log(&a).exists(), "the log is gone");
        assert!(
            !summary(&place, &a).exists(),
            "and its summary in the index"
        );
        assert!(summary(&place, &b).exists(), "the other's stays");
        let c3 = used(&mut c, &ws.0).await;
        let refused = c.ask(create(&ws.0)).await;
        assert_eq!(
            code(&refused),
            Some(ErrorCode::Forbidden),
            "at the limit again"
        );

        // An unknown id is an error naming it, and the others go on.
        let (status, _, err) = sessions(&place.socket, &["rm", "s-nosuch"]);
        assert_eq!(status, 1);
        assert!(err.contains("s-nosuch"), "{err}");

        // prune takes the sessions older than the age given: here all of them.
        let (status, out, err) = sessions(&place.socket, &["prune", "--older-than", "0s"]);
        assert_eq!(status, 0, "{out}{err}");
        for id in [&b, &c3] {
            assert!(out.contains(&format!("removed {id}")), "{out}");
            assert!(!place.log(id).exists());
            assert!(!summary(&place, id).exists());
        }
        assert!(matches!(
            c.ask(create(&ws.0)).await,
            ResponseBody::SessionCreated(_)
        ));
        let (status, _, err) = sessions(&place.socket, &["prune"]);
        assert_eq!(status, 2, "prune says which: {err}");
        assert!(
            err.contains("--older-than") && err.contains("--empty"),
            "{err}"
        );
    });
}

fn create(ws: &Path) -> protocol::control::Request {
    serde_json::from_value(
        serde_json::json!({"type": "create_session", "workspace": ws,
        "model": null, "approval": "on_risk", "max_steps": 10, "title": null}),
    )
    .unwrap()
}

/// Session `id`'s summary in root's index (`docs/sessions.md`).
fn summary(place: &Place, id: &SessionId) -> std::path::PathBuf {
    place
        .state
        .0
        .join("index/0")
        .join(format!("{}.json", id.as_str()))
}
