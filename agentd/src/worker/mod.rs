//! Running tool calls in tool-workers: one fresh, locked-down process per call.
//!
//! [`spawn`] starts a worker and speaks the worker protocol with it; [`cgroup`] bounds a call's
//! processes and memory where the kernel offers a usable controller; [`env`] builds the tool's
//! environment from an allowlist.

pub mod cgroup;
pub mod env;
pub mod spawn;

pub use spawn::{WorkerError, locate_worker, run_tool};
