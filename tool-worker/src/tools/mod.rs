//! The tools. Each runs inside the locked-down worker and turns every failure into a result the
//! model can read: paths outside the sandbox fail in the kernel (Landlock), not in string checks.

pub mod bash;
pub mod edit;
pub mod files;
pub mod search;

use crate::channel::Channel;
use protocol::worker::{LockdownReport, SandboxSpec, ToolRequest, ToolResult};
use std::time::Instant;

/// What a non-bash tool produced.
#[derive(Debug)]
pub struct Outcome {
    /// The text for the model.
    pub content: String,
    /// Whether it failed.
    pub is_error: bool,
}

impl Outcome {
    /// A success.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }

    /// A failure the model can read.
    pub fn err(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

/// Runs one tool request.
pub fn run(
    tool: &ToolRequest,
    spec: &SandboxSpec,
    lockdown: LockdownReport,
    channel: &mut Channel,
) -> ToolResult {
    let start = Instant::now();
    let outcome = match tool {
        ToolRequest::Bash(b) => return bash::run(&b.command, spec, lockdown, channel),
        ToolRequest::ReadFile(r) => files::read_file(r),
        ToolRequest::WriteFile(w) => files::write_file(w),
        ToolRequest::ListDir(l) => files::list_dir(l),
        ToolRequest::Glob(g) => search::glob(g),
        ToolRequest::Grep(g) => search::grep(g),
        ToolRequest::StrReplace(s) => edit::str_replace(s),
    };
    let cap = usize::try_from(spec.limits.output_cap_bytes).unwrap_or(usize::MAX);
    let mut capped = crate::output::Capped::new(cap);
    capped.push(outcome.content.as_bytes());
    let bytes_seen = capped.total();
    let (content, truncated) = capped.finish();
    ToolResult {
        content,
        is_error: outcome.is_error,
        exit_code: None,
        timed_out: false,
        truncated,
        bytes_seen,
        duration_ms: start.elapsed().as_millis() as u64,
        lockdown,
    }
}

/// An I/O error in words, with the path, and the likely reason when it is the sandbox.
pub fn io_error(action: &str, path: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            format!(
                "cannot {action} {path}: permission denied (outside what the sandbox allows, or the file's own permissions)"
            )
        }
        std::io::ErrorKind::NotFound => {
            format!("cannot {action} {path}: no such file or directory")
        }
        _ => format!("cannot {action} {path}: {e}"),
    }
}
