//! Running tool calls in tool-workers: one fresh, locked-down process per call.
//!
//! [`spawn`] starts a worker and speaks the worker protocol with it, trusting it with nothing
//! ([`verify`] checks its binary and its lockdown report, [`caps`] bounds what it sends and
//! [`spawn`] ends a call at its deadline); [`pool`] keeps workers locked down ahead of their call; [`cgroup`] bounds a call's
//! processes and memory where the kernel offers a usable controller, [`aggregate`] those of a
//! session's calls together and of a user's sessions; [`env`] builds the tool's
//! environment from an allowlist; [`tmp`] makes the private temp dirs calls get.

pub mod aggregate;
pub mod caps;
pub mod cgroup;
pub mod env;
pub mod fresh_repo;
pub mod git_entries;
pub mod git_in_progress;
pub mod git_objects;
pub mod git_view;
pub mod late_check;
pub mod loosened;
pub mod pool;
pub mod process;
pub mod protect;
pub mod repos;
pub mod spawn;
pub mod tmp;
pub mod verify;
pub mod zygote;

pub use pool::WorkerPool;
pub use spawn::{
    ProtectedCheck, ReadyWorker, WorkerError, locate_worker, run_tool, start, start_with,
};

use protocol::worker::{ResourceLimits, SandboxProfile, SandboxSpec};
use std::path::{Path, PathBuf};

/// The default sandbox: `workspace-write`, no network, default limits, no extra paths, no
/// identity change, Landlock required, and the allowlisted tool environment (`TMPDIR` = `tmp_dir`).
/// Callers change the fields their flags or policy decide.
pub fn default_sandbox(workspace: PathBuf, tmp_dir: PathBuf, home: Option<&Path>) -> SandboxSpec {
    let env = env::tool_env(home, &tmp_dir, &[]);
    SandboxSpec {
        workspace,
        tmp_dir,
        profile: SandboxProfile::WorkspaceWrite,
        network: false,
        read_paths: vec![],
        write_paths: vec![],
        limits: ResourceLimits::default(),
        run_as: None,
        env,
        require_landlock: true,
        protected_paths: protocol::worker::DEFAULT_PROTECTED_PATHS
            .iter()
            .map(|p| (*p).to_owned())
            .collect(),
        workspace_identity: None,
        repositories: vec![],
        hidden_inside: Vec::new(),
    }
}
