//! What the worker test files share: the built worker binary and a scratch tree with a workspace
//! and a temp root, removed when dropped.

use protocol::worker::SandboxSpec;
use std::path::PathBuf;

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

/// The tool-worker binary built beside the tests.
pub fn worker() -> PathBuf {
    agentd::worker::locate_worker().expect("the tool-worker binary is built beside the tests")
}
