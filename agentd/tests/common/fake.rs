//! Fake tool-workers that speak the real protocol: frames encoded here (the real bincode framing)
//! and played back by a shell script, which may then hang, flood, fork or die. Included by the
//! test files that need it with `#[path = "common/fake.rs"] mod fake;`.
#![allow(dead_code)] // each test file uses a part

use protocol::Encoding;
use protocol::frame::FrameDecoder;
use protocol::io::encode_message;
use protocol::worker::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One message as one frame, as a worker sends it.
pub fn frame(message: &FromWorker) -> Vec<u8> {
    encode_message(FrameDecoder::new(usize::MAX), Encoding::Bincode, message).unwrap()
}

/// What an honest worker on this machine reports for the default sandbox.
pub fn honest_report() -> LockdownReport {
    LockdownReport {
        landlock_abi: Some(7),
        landlock: LandlockStatus::FullyEnforced,
        seccomp: true,
        no_new_privs: true,
        capabilities_cleared: true,
        containment: "pid namespace".into(),
        mount_namespace: true,
        ipc_namespace: true,
        protected: vec![],
        protected_ids: vec![],
        uid: nix::unistd::getuid().as_raw(),
        gid: nix::unistd::getgid().as_raw(),
        warnings: vec![],
    }
}

pub fn ready(report: LockdownReport) -> Vec<u8> {
    frame(&FromWorker::Ready(report))
}

pub fn output(text: &str) -> Vec<u8> {
    frame(&FromWorker::Output(OutputChunk { text: text.into() }))
}

pub fn result(content: &str) -> Vec<u8> {
    frame(&FromWorker::Result(ToolResult {
        content: content.into(),
        is_error: false,
        exit_code: Some(0),
        timed_out: false,
        truncated: false,
        bytes_seen: content.len() as u64,
        duration_ms: 1,
        lockdown: honest_report(),
    }))
}

/// Writes `bytes` to `dir/name` and returns the path, for a script to `cat`.
pub fn data(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A worker script at `dir/name`: it waits for the first bytes of the supervisor's spec (so it is
/// in the call's cgroup by then), writes `frames` to its socket, then runs `then` (shell text).
pub fn worker(dir: &Path, name: &str, frames: &[u8], then: &str) -> PathBuf {
    let frames = data(dir, &format!("{name}.frames"), frames);
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ndd bs=4 count=1 >/dev/null 2>&1\ncat '{}' >&0\n{then}\n",
            frames.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// No process runs a command line containing `pattern` any more (after a moment to die).
pub fn none_runs(pattern: &str) -> bool {
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .all(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| {
                    !String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(pattern)
                })
                .unwrap_or(true)
        })
}
