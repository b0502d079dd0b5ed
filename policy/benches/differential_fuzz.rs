//! The long run of the differential fuzzer (tests/differential/fuzz.rs): the same two properties
//! as the test `fuzzed_compositions_…` in tests/differential.rs, over many more cases.
//!
//! `CASES=20000 FUZZ_SEED=7 cargo bench -p agentd-policy --bench differential_fuzz`
//! (defaults: 20 000 cases, the test's seed). Prints the grouped report and a closing
//! `N passed, N failed` line; exits 1 when a property failed. Needs root (to create the
//! unprivileged user) or an unprivileged user, and Landlock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a harness binary: a panic is the failure report

#[path = "../tests/differential/mod.rs"]
mod harness;

use harness::sandbox::Harness;
use harness::{WORKERS, fuzz};
use std::time::Instant;

fn main() {
    let cases: usize = std::env::var("CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(fuzz::SEED);
    let policy = policy::Policy::builtin().expect("the built-in policy builds");
    let mut h = Harness::new(WORKERS).unwrap_or_else(|e| panic!("differential harness: {e}"));
    let start = Instant::now();
    let outcome = fuzz::run(&policy, &mut h, seed, cases);
    println!("{}", outcome.report(start.elapsed()));
    let failed = outcome.allowed_harmful.len()
        + outcome
            .checked
            .iter()
            .filter(|c| !c.problems.is_empty())
            .count();
    println!(
        "{} passed, {failed} failed",
        outcome.cases - failed.min(outcome.cases)
    );
    if !outcome.passed() {
        std::process::exit(1);
    }
}
