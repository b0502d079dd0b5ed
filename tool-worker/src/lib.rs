//! The tool-worker: a fresh, single-threaded process per tool call. It locks itself down
//! ([`lockdown`]), tells the supervisor what it achieved, only then reads its one request, runs
//! exactly one tool ([`tools`]) and exits.
//!
//! Layout: [`lockdown`] (the ordered steps: `process` · `contain` · `limits` · `identity` · `caps` ·
//! `landlock` · `seccomp`) · [`tools`] (`bash` · `files` · `edit` · `search`) · [`output`] (head and
//! tail capping) · [`channel`] (the socketpair on fd 0) · [`zygote`] (forks the workers of a
//! supervisor, saving an exec per call).

pub mod channel;
pub mod lockdown;
pub mod output;
pub mod tools;
pub mod zygote;

use channel::Channel;
use protocol::worker::{FromWorker, ToWorker, WorkerFailure, WorkerStep};

/// Exit code when the worker could not lock down or serve its request.
pub const EXIT_FAILED: i32 = 3;

/// The worker's whole life; returns the process exit code. `args` are the process arguments:
/// `tool-worker [--parent PID] [--zygote]` (see [`zygote`]).
pub fn run(args: impl Iterator<Item = String>) -> i32 {
    run_warm(args, lockdown::warm::Warm::default())
}

/// [`run`], with what a zygote prepared ahead for every worker it forks.
pub fn run_warm(args: impl Iterator<Item = String>, warm: lockdown::warm::Warm) -> i32 {
    let args: Vec<String> = args.collect();
    let parent = args
        .iter()
        .position(|a| a == "--parent")
        .and_then(|i| args.get(i + 1))
        .and_then(|p| p.parse().ok());
    if args.iter().any(|a| a == zygote::ZYGOTE_ARG) {
        return zygote::serve(parent);
    }
    let mut channel = Channel::from_stdin();
    let failed = |channel: &mut Channel, failure: WorkerFailure| {
        // The supervisor may be gone; exiting is all that is left either way.
        let _ = channel.send(&FromWorker::Failed(failure));
        EXIT_FAILED
    };
    if let Err(f) = lockdown::prepare(parent, &warm.keep()) {
        return failed(&mut channel, f);
    }
    let spec = match channel.recv() {
        Ok(ToWorker::Spec(spec)) => spec,
        Ok(other) => {
            let message = format!(
                "expected the sandbox spec first, got `{}`",
                other.variant_name()
            );
            return failed(
                &mut channel,
                WorkerFailure {
                    step: WorkerStep::ReadSpec,
                    message,
                },
            );
        }
        Err(e) => {
            return failed(
                &mut channel,
                WorkerFailure {
                    step: WorkerStep::ReadSpec,
                    message: e.to_string(),
                },
            );
        }
    };
    let report = match lockdown::lock_down(&spec, warm) {
        Ok(report) => report,
        Err(f) => return failed(&mut channel, f),
    };
    if channel.send(&FromWorker::Ready(report.clone())).is_err() {
        return EXIT_FAILED;
    }
    let mut spec = spec;
    let tool = match channel.recv() {
        Ok(ToWorker::Run(run)) => {
            // A call may shorten the timeout it was locked down with, never lengthen it.
            if let Some(ms) = run.timeout_ms {
                spec.limits.timeout_ms = spec.limits.timeout_ms.min(ms);
            }
            run.tool
        }
        Ok(other) => {
            let message = format!("expected a tool request, got `{}`", other.variant_name());
            return failed(
                &mut channel,
                WorkerFailure {
                    step: WorkerStep::ReadRequest,
                    message,
                },
            );
        }
        Err(e) => {
            return failed(
                &mut channel,
                WorkerFailure {
                    step: WorkerStep::ReadRequest,
                    message: e.to_string(),
                },
            );
        }
    };
    let result = tools::run(&tool, &spec, report, &mut channel);
    match channel.send(&FromWorker::Result(result)) {
        Ok(()) => 0,
        Err(_) => EXIT_FAILED,
    }
}
