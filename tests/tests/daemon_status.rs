//! `agentd status` against a running daemon: its version, uptime, sessions, the workers it holds
//! (a session's warm one, and the one running a call), this kernel's Landlock ABI and seccomp
//! state — each checked against what the test finds out for itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::binary;
use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use daemon::{Client, Daemon, Place, wait_for, workspace};
use protocol::Encoding;
use protocol::control::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const CONFIG: &str = "[policy]\nbash = [{ pattern = \"sleep *\", action = \"allow\" }]\n";

fn status(socket: &Path) -> Value {
    let out = Command::new(binary("agentd"))
        .args(["status", "--json", "--socket"])
        .arg(socket)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The kernel's Landlock ABI, asked directly (`landlock_create_ruleset` with the VERSION flag).
fn landlock_abi() -> Option<u64> {
    // SAFETY: with a null attribute pointer, size 0 and LANDLOCK_CREATE_RULESET_VERSION, the
    // call only returns the ABI version (or -1); it reads and writes no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    u64::try_from(v).ok().filter(|v| *v > 0)
}

#[test]
fn status_reports_version_uptime_sessions_workers_landlock_and_seccomp() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_1", "sleep 3"),
        answer("slept"),
    ]));
    let place = Place::new(CONFIG);
    let _d = Daemon::start(&place, &mock.url());

    let first = status(&place.socket);
    assert_eq!(first["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(first["protocol"], 1);
    assert_eq!(first["sessions"], 0);
    assert_eq!(first["workers"], 0);
    assert_eq!(first["landlock_abi"].as_u64(), landlock_abi());
    let actions = std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail").unwrap();
    assert_eq!(
        first["seccomp"],
        format!(
            "filters available ({}); agentd itself: not filtered",
            actions.trim()
        )
    );
    assert!(!first["containment"].as_str().unwrap().is_empty());
    std::thread::sleep(std::time::Duration::from_millis(50));
    let later = status(&place.socket);
    assert!(later["uptime_ms"].as_u64() > first["uptime_ms"].as_u64());

    // A session: one worker kept ready; during a call, that one runs it and another is readied.
    let ws = workspace();
    let mut c = rt.block_on(Client::connect(&place.socket, Encoding::Json));
    let id = rt.block_on(c.create(&ws.0, "on_risk"));
    wait_for("the session's ready worker", || {
        let s = status(&place.socket);
        s["sessions"] == 1 && s["workers"] == 1
    });
    rt.block_on(async {
        c.attach(&id, None).await;
        assert_eq!(c.send(&id, "sleep").await, ResponseBody::Ok);
    });
    wait_for("the running call's worker and the next ready one", || {
        status(&place.socket)["workers"] == 2
    });
    rt.block_on(c.until_turn_finished());
    wait_for("back to the ready one", || {
        status(&place.socket)["workers"] == 1
    });
    let deleted = rt.block_on(c.ask(Request::DeleteSession(DeleteSession {
        session: id.clone(),
    })));
    assert_eq!(deleted, ResponseBody::Ok);
    wait_for("no session, no worker", || {
        let s = status(&place.socket);
        s["sessions"] == 0 && s["workers"] == 0
    });

    // The same, for people.
    let out = Command::new(binary("agentd"))
        .args(["status", "--socket"])
        .arg(&place.socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "version: ",
        "uptime: ",
        "sessions: 0",
        "workers: 0",
        "landlock ABI: ",
        "seccomp: filters available",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
}

#[test]
fn status_names_the_aggregate_bounds_of_its_config() {
    let mock = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(MockLlm::start(vec![]));
    let place = Place::new(&format!(
        "{CONFIG}[aggregate]\nsession_memory = \"1G\"\nsession_max_processes = 321\n"
    ));
    let _d = Daemon::start(&place, &mock.url());
    let containment = status(&place.socket)["containment"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = Command::new(binary("agentd"))
        .args(["status", "--socket"])
        .arg(&place.socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("aggregate bounds: "))
        .unwrap_or_else(|| panic!("no aggregate line in {text}"));
    if nix::unistd::geteuid().is_root() {
        assert!(
            line.contains("per session: memory 1.0 GiB, 321 processes"),
            "{line}"
        );
        assert!(line.contains("per user: memory"), "{line}");
    } else {
        assert!(line.contains("none across calls"), "{line}");
    }
    assert!(containment.contains(line.trim_start_matches("aggregate bounds: ")));
}
