//! Support for the differential check against real bash (`tests/differential.rs`) and its long
//! fuzz run (`benches/differential_fuzz.rs`): the corpora, the sandboxed runner, the oracle and
//! the fuzzer. See `docs/policy-testing.md`.
#![allow(dead_code)] // each including crate uses part of it

pub mod confine;
pub mod corpus;
pub mod fixtures;
pub mod fuzz;
pub mod grammar;
pub mod oracle;
pub mod sandbox;
pub mod snapshot;
pub mod trace;

use policy::Policy;
use std::time::Duration;

/// Time one command may take before its process group is killed.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Threads running commands: the machine has 2 cores shared with others.
pub const WORKERS: usize = 2;

/// The outcome of running one allowed command.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The command.
    pub command: String,
    /// What was wrong, if anything.
    pub problems: Vec<oracle::Problem>,
}

/// Runs each command in a sandbox (spread over the harness's threads) and judges what it ran.
pub fn check_all(
    policy: &Policy,
    harness: &mut sandbox::Harness,
    commands: &[String],
) -> Vec<Checked> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for sb in harness.sandboxes.iter_mut() {
            let (next, results) = (&next, &results);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(command) = commands.get(i) else {
                        break;
                    };
                    let problems = match sb.run(command, TIMEOUT) {
                        Ok(obs) => oracle::judge(policy, sb, &obs),
                        Err(e) => vec![oracle::Problem {
                            source: "harness",
                            ran: format!("could not run: {e}"),
                            verdict: None,
                        }],
                    };
                    if let Ok(mut r) = results.lock() {
                        r.push((
                            i,
                            Checked {
                                command: command.clone(),
                                problems,
                            },
                        ));
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, c)| c).collect()
}
