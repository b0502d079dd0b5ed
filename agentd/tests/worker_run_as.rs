//! A root supervisor's worker drops to the session owner (`spec.run_as`): the tool runs as that
//! uid and gid, with every capability set empty, and the supervisor checks the report says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use protocol::worker::*;
use std::os::unix::fs::PermissionsExt;

mod common;
use common::{Dirs, worker};

#[tokio::test]
async fn a_root_supervisors_worker_runs_the_tool_as_the_session_owner() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: only a root supervisor changes the worker's identity");
        return;
    }
    let f = Dirs::new("run-as");
    // nobody:nogroup owns the workspace; the scratch root must be traversable to reach it.
    std::fs::set_permissions(&f.root, std::fs::Permissions::from_mode(0o755)).unwrap();
    nix::unistd::chown(&f.ws, Some(65534.into()), Some(65534.into())).unwrap();
    let mut spec = f.spec();
    spec.run_as = Some(RunAs {
        uid: 65534,
        gid: 65534,
        groups: vec![],
    });
    let tool = ToolRequest::Bash(BashRequest {
        command: "id -u; id -g; grep -E '^Cap(Eff|Prm|Bnd|Inh|Amb):' /proc/self/status; touch mine && stat -c %u mine".into(),
    });
    let r = agentd::worker::run_tool(&worker(), &spec, tool, |_| {})
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    let lines: Vec<&str> = r.content.lines().collect();
    assert_eq!(&lines[..2], ["65534", "65534"], "{r:?}");
    for cap in &lines[2..7] {
        assert!(cap.ends_with("0000000000000000"), "{cap}: {r:?}");
    }
    assert_eq!(lines[7], "65534", "the file the tool made is the owner's");
    assert_eq!((r.lockdown.uid, r.lockdown.gid), (65534, 65534));
    assert!(r.lockdown.capabilities_cleared);
}
