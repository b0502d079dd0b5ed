//! File tools in a real, locked-down worker never hang on a FIFO: `read_file` and `str_replace`
//! of one return an error at once (not after the call's timeout), while the same tools on a
//! regular file beside it work.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::worker::run_tool;
use protocol::worker::*;
use std::time::{Duration, Instant};

mod common;
use common::{Dirs, worker};

#[tokio::test]
async fn reading_or_editing_a_fifo_fails_at_once() {
    let dirs = Dirs::new("worker-fifo");
    nix::unistd::mkfifo(
        &dirs.ws.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o666),
    )
    .unwrap();
    std::fs::write(dirs.ws.join("plain.txt"), "old text\n").unwrap();
    let spec = dirs.spec(); // a 10 s timeout: a blocked read would take that long and more
    let read = |path: &str| {
        ToolRequest::ReadFile(ReadFileRequest {
            path: path.into(),
            offset: None,
            limit: None,
        })
    };
    let edit = |path: &str| {
        ToolRequest::StrReplace(StrReplaceRequest {
            path: path.into(),
            old: "old".into(),
            new: "new".into(),
            replace_all: false,
        })
    };
    for tool in [read("pipe"), edit("pipe")] {
        let start = Instant::now();
        let result = run_tool(&worker(), &spec, tool, |_| {}).await.unwrap();
        assert!(result.is_error, "{}", result.content);
        assert!(result.content.contains("a FIFO"), "{}", result.content);
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
    }
    // Sanity: the same tools on a regular file in the same workspace.
    let result = run_tool(&worker(), &spec, edit("plain.txt"), |_| {})
        .await
        .unwrap();
    assert!(!result.is_error, "{}", result.content);
    let result = run_tool(&worker(), &spec, read("plain.txt"), |_| {})
        .await
        .unwrap();
    assert!(result.content.contains("new text"), "{}", result.content);
}
