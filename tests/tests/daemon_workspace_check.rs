//! Workspace sanity in the daemon: a `create_session` whose workspace is the daemon's home (or
//! holds its state) is refused by the daemon itself, naming the workspace and the config key a
//! client cannot set; the daemon's config can allow it, and the home's keys stay hidden.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use daemon::{Client, Daemon, Place};
use protocol::Encoding;
use protocol::control::*;
use protocol::event::Event;
use serde_json::json;

async fn create(c: &mut Client, ws: &std::path::Path) -> ResponseBody {
    let request = serde_json::from_value(json!({"type": "create_session", "workspace": ws,
        "model": null, "approval": "skip_permissions", "max_steps": null, "title": null}))
    .unwrap();
    c.ask(request).await
}

#[test]
fn the_daemon_refuses_a_home_or_its_state_as_a_workspace_and_its_config_alone_allows_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![]));
    let place = Place::new("");
    std::fs::create_dir_all(place.home.0.join(".agents")).unwrap();
    std::fs::write(
        place.home.0.join(".agents/env"),
        "API_KEY=sk-daemon-secret\n",
    )
    .unwrap();
    let _d = Daemon::start(&place, &mock.url());
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Json).await;
        for (ws, why) in [
            (&place.home.0, "the home directory"),
            (&place.state.0, "the daemon's session state"),
        ] {
            let shown = ws.canonicalize().unwrap();
            match create(&mut c, ws).await {
                ResponseBody::Error(e) => {
                    assert_eq!(e.code, ErrorCode::BadRequest, "{e:?}");
                    let named = format!("workspace {} is too broad", shown.display());
                    for part in [
                        named.as_str(),
                        why,
                        "allow_broad_workspace = true",
                        "a client cannot",
                    ] {
                        assert!(e.message.contains(part), "{part:?} in {}", e.message);
                    }
                }
                other => panic!("created in {}: {other:?}", ws.display()),
            }
        }
    });
    assert!(mock.requests().is_empty());
}

#[test]
fn a_daemon_configured_to_allow_a_home_hides_its_keys() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let place = Place::new("[sandbox]\nallow_broad_workspace = true\n");
    let home = place.home.0.clone();
    std::fs::create_dir_all(home.join(".agents")).unwrap();
    std::fs::write(home.join(".agents/env"), "API_KEY=sk-daemon-secret\n").unwrap();
    let command = format!(
        "cat {}/.agents/env; cat {}/config.toml; echo looked",
        home.display(),
        home.display()
    );
    let mock = rt.block_on(MockLlm::start(vec![bash("c1", &command), answer("ok")]));
    let _d = Daemon::start(&place, &mock.url());
    let content = rt.block_on(async {
        let mut c = Client::connect(&place.socket, Encoding::Json).await;
        let id = match create(&mut c, &home).await {
            ResponseBody::SessionCreated(info) => info.id,
            other => panic!("create_session: {other:?}"),
        };
        c.attach(&id, None).await;
        assert_eq!(c.send(&id, "look").await, ResponseBody::Ok);
        c.until_turn_finished()
            .await
            .into_iter()
            .find_map(|e| match e.event {
                Event::ToolCallFinished(f) => Some(f.content),
                _ => None,
            })
            .expect("the call finished")
    });
    assert!(content.contains("looked"), "{content}");
    assert!(!content.contains("sk-daemon-secret"), "{content}");
    assert!(
        !content.contains("allow_broad_workspace"),
        "the daemon's config file is hidden: {content}"
    );
}
