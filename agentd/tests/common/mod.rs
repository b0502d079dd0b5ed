//! What the worker test files share: the built worker binary and a scratch tree with a workspace
//! and a temp root, removed when dropped.

use protocol::worker::SandboxSpec;
use std::path::{Path, PathBuf};

/// `$TMPDIR/agentd-{label}-{pid}` with `ws/` (the workspace) and `tmp/` (the temp root).
pub struct Dirs {
    pub root: PathBuf,
    pub ws: PathBuf,
    pub tmp: PathBuf,
}

impl Dirs {
    pub fn new(label: &str) -> Self {
        let root = std::env::temp_dir().join(format!("agentd-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (ws, tmp) = (root.join("ws"), root.join("tmp"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        Self { root, ws, tmp }
    }

    /// The default sandbox over these directories, with a 10 s timeout.
    pub fn spec(&self) -> SandboxSpec {
        let mut spec = agentd::worker::default_sandbox(self.ws.clone(), self.tmp.clone(), None);
        spec.limits.timeout_ms = 10_000;
        spec
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The tool-worker to run: `$AGENTD_TOOL_WORKER`, else the `tool-worker` binary in the target
/// directory (`cargo build --bins`). Test binaries are neither `agent` nor `agentd`, so they
/// cannot host the worker themselves, and the supervisor looks for none beside them.
pub fn worker() -> PathBuf {
    if let Some(path) = std::env::var_os("AGENTD_TOOL_WORKER") {
        return PathBuf::from(path);
    }
    // target/debug/deps/worker_tools-… → target/debug/tool-worker
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("tool-worker");
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build --bins` first",
        path.display()
    );
    path
}
