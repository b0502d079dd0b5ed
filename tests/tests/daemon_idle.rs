//! The daemon's idle timeout: a connection that makes no request with no session attached is
//! told (`idle`) and closed; a request starts the wait again, and an attached session's client
//! (which waits for its events) is never closed for it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use daemon::{Client, Daemon, Place, workspace};
use protocol::Encoding;
use protocol::control::{ErrorCode, Request, ResponseBody, ServerMessage};
use protocol::io::IoError;
use std::time::{Duration, Instant};

/// Idle connections are closed after this.
const IDLE: Duration = Duration::from_millis(400);

#[test]
fn an_idle_connection_is_closed_and_a_busy_or_attached_one_is_not() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![]));
    let place = Place::new(&format!(
        "[server]\nidle_timeout_ms = {}\n",
        IDLE.as_millis()
    ));
    let _d = Daemon::start(&place, &mock.url());
    let ws = workspace();
    rt.block_on(async {
        let mut silent = Client::connect(&place.socket, Encoding::Json).await;
        let mut busy = Client::connect(&place.socket, Encoding::Json).await;
        let mut attached = Client::connect(&place.socket, Encoding::Json).await;
        let session = attached.create(&ws.0, "on_risk").await;
        attached.attach(&session, None).await;

        // The busy one asks every IDLE/3 for three IDLEs: each request starts the wait again.
        let start = Instant::now();
        while start.elapsed() < IDLE * 3 {
            assert!(
                matches!(busy.ask(Request::Status).await, ResponseBody::Status(_)),
                "the busy client was closed after {:?}",
                start.elapsed()
            );
            tokio::time::sleep(IDLE / 3).await;
        }

        // The silent one was told why, then closed.
        match silent.frame_after_events().await {
            ServerMessage::Error(e) => {
                assert_eq!(e.code, ErrorCode::Idle, "{e:?}");
                assert!(e.message.contains("no session attached"), "{e:?}");
            }
            other => panic!("expected the idle error frame, got {other:?}"),
        }
        assert!(matches!(silent.read_raw().await, Err(IoError::Closed)));

        // The attached one, as silent for as long, still answers.
        assert!(matches!(
            attached.ask(Request::Status).await,
            ResponseBody::Status(_)
        ));
    });
}
