//! The git part of each request's reminder (layer 3): the branch and the files changed since the
//! last step, read by [`git_state::PROBE`] in a sandboxed worker from the session's pool — never
//! by git in the supervisor — and only after a step that ran a tool able to write. A workspace
//! with no `.git` at its root (checked with one `lstat` per step) runs no probe at all.

use super::turn::Agent;
use crate::context::git_state::{self, GitState};
use protocol::worker::{BashRequest, ToolRequest};

/// How long the probe may take, milliseconds: a status of a large repository, not a build.
const PROBE_TIMEOUT_MS: u64 = 10_000;

/// What the session knows of the workspace's git state.
#[derive(Debug, Default)]
pub struct GitWatch {
    /// The state at the probe before the last one.
    before: Option<GitState>,
    /// The state at the last probe.
    now: Option<GitState>,
    /// Whether the workspace may have changed since the last probe.
    stale: bool,
}

impl GitWatch {
    /// A watch that probes before the first request.
    pub fn new() -> Self {
        Self {
            stale: true,
            ..Self::default()
        }
    }

    /// After a step that called `tools`: whether the next request needs a new probe.
    pub fn step_ran<'a>(&mut self, tools: impl Iterator<Item = &'a str>) {
        self.stale |= git_state::needs_probe(tools);
    }

    /// The reminder for the next request, `None` outside a work tree.
    pub fn reminder(&self) -> Option<String> {
        git_state::reminder(self.before.as_ref(), self.now.as_ref()?)
    }
}

impl Agent {
    /// Brings the git state up to date for the next request: a probe when a step may have
    /// changed the workspace, else "nothing changed since the last step".
    pub(super) async fn refresh_git(&mut self) {
        let workspace = &self.dispatcher.workers.sandbox().workspace;
        let is_repo = std::fs::symlink_metadata(workspace.join(".git")).is_ok();
        let watch = &mut self.git;
        if !is_repo {
            *watch = GitWatch {
                stale: true,
                ..GitWatch::default()
            };
            return;
        }
        if !std::mem::take(&mut watch.stale) {
            watch.before.clone_from(&watch.now);
            return;
        }
        let probe = ToolRequest::Bash(BashRequest {
            command: git_state::PROBE.to_owned(),
        });
        match self
            .dispatcher
            .workers
            .run(probe, Some(PROBE_TIMEOUT_MS), |_| {})
            .await
        {
            Ok(result) if !result.timed_out => {
                let state = GitState::parse(&result.content);
                let watch = &mut self.git;
                watch.before = watch.now.take();
                watch.now = Some(state);
            }
            Ok(_) => tracing::debug!("the git probe timed out; the reminder keeps the last state"),
            Err(e) => tracing::debug!(error = %e, "the git probe could not run"),
        }
    }
}
