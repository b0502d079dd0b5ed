//! The differential check against real bash (issue 10's acceptance): every command the policy
//! allows is run by `/bin/bash --noprofile --norc -c` — as an unprivileged user, Landlock-confined
//! to a scratch directory, with logging shims in place of programs and an xtrace of every simple
//! command — and everything it executed must be `allow` when rated alone.
//!
//! Commands come from the harmless corpus and from the fuzzer (tests/differential/fuzz.rs), whose
//! cases must also never be allowed when they hold a harmful fragment. The first tests check the
//! harness itself: that it sees what it claims to see. See docs/policy-testing.md.
//!
//! `cargo test -p agentd-policy --test differential -- --nocapture` (CASES=N, FUZZ_SEED=S).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

#[path = "differential/mod.rs"]
mod harness;

use harness::corpus::{self, HARMLESS, shown};
use harness::sandbox::{Harness, Observation, Sandbox};
use harness::{TIMEOUT, WORKERS, check_all, fuzz, grammar, oracle};
use policy::{Policy, Verdict};
use std::fmt::Write as _;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The tests take turns: each runs commands on every core there is.
static SERIAL: Mutex<()> = Mutex::new(());

/// A fresh harness (removed when dropped) and the turn to use it.
fn harness(workers: usize) -> (MutexGuard<'static, ()>, Harness) {
    let turn = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let h = Harness::new(workers).unwrap_or_else(|e| panic!("differential harness: {e}"));
    (turn, h)
}

fn policy() -> Policy {
    Policy::builtin().expect("the built-in policy builds")
}

fn observe(command: &str) -> Observation {
    observe_with(command, TIMEOUT)
}

fn observe_with(command: &str, timeout: Duration) -> Observation {
    observe_in(&mut harness(1).1, command, timeout)
}

fn observe_in(h: &mut Harness, command: &str, timeout: Duration) -> Observation {
    let sb: &mut Sandbox = &mut h.sandboxes[0];
    sb.run(command, timeout)
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"))
}

fn execs(obs: &Observation) -> Vec<String> {
    obs.execs
        .iter()
        .map(|e| {
            let mut s = e.name.clone();
            for a in &e.args {
                s.push(' ');
                s.push_str(a);
            }
            s
        })
        .collect()
}

fn traced(obs: &Observation) -> Vec<String> {
    obs.traced.iter().map(|t| t.words.join(" ")).collect()
}

// --- the harness sees what it claims to see -------------------------------------------------

#[test]
fn the_oracle_sees_programs_through_line_continuations_and_quoting() {
    let obs = observe("ls -la; r\\\nm -rf src; $'\\x72\\x6d' -f a");
    let ran = execs(&obs);
    assert!(ran.contains(&"ls -la".to_owned()), "{obs:#?}");
    assert!(ran.contains(&"rm -rf src".to_owned()), "{obs:#?}");
    assert!(ran.contains(&"rm -f a".to_owned()), "{obs:#?}");
    assert!(traced(&obs).contains(&"rm -rf src".to_owned()), "{obs:#?}");
    // rm is a shim: nothing was removed.
    assert!(obs.changed.is_empty(), "{obs:#?}");
}

#[test]
fn the_oracle_sees_builtins_and_code_run_by_subscripts() {
    let (_turn, mut h) = harness(1);
    let obs = observe_in(
        &mut h,
        "cd src; printf -v x %s 1; test -v 'a[$(id -u)]'; [[ 1 -eq 'b[$(id -g)]' ]]; (( y = 2 ))",
        TIMEOUT,
    );
    let t = traced(&obs);
    assert!(t.contains(&"cd src".to_owned()), "{t:?}");
    assert!(t.contains(&"printf -v x %s 1".to_owned()), "{t:?}");
    let ran = execs(&obs);
    assert!(ran.contains(&"id -u".to_owned()), "{ran:?}");
    assert!(ran.contains(&"id -g".to_owned()), "{ran:?}");
    // The commands after `cd src` ran in src.
    let id = obs.execs.iter().find(|e| e.name == "id").unwrap();
    assert!(id.cwd.ends_with("/ws/src"), "{id:?}");
    // Every traced line is rated, the arithmetic command too.
    let (items, problems) = oracle::items(&h.sandboxes[0], &obs);
    assert!(problems.is_empty(), "{problems:#?}");
    let rated = |needle: &str| {
        items
            .iter()
            .any(|i| matches!(i, oracle::Item::Bash("trace", t) if t.ends_with(needle)))
    };
    assert!(rated("printf -v x %s 1"), "{items:#?}");
    assert!(rated("((  y = 2  ))"), "{items:#?}");
}

#[test]
fn the_oracle_sees_what_wrappers_and_xargs_run() {
    let obs = observe(
        "echo -delete | xargs find . -name nothing; env --uns ls rm -rf src; timeout 5 cat a",
    );
    let ran = execs(&obs);
    assert!(
        ran.contains(&"xargs find . -name nothing".to_owned()),
        "{ran:?}"
    );
    assert!(
        ran.contains(&"find . -name nothing -delete".to_owned()),
        "{ran:?}"
    );
    assert!(ran.contains(&"rm -rf src".to_owned()), "{ran:?}");
    assert!(ran.contains(&"cat a".to_owned()), "{ran:?}");
}

#[test]
fn the_oracle_sees_the_directory_and_the_environment_a_program_gets() {
    let (_turn, mut h) = harness(1);
    let obs = observe_in(
        &mut h,
        "(cd ~ && cat .aws/credentials); export RUSTFLAGS=-Cx; cargo test; LANG=C sort a",
        TIMEOUT,
    );
    let cat = obs.execs.iter().find(|e| e.name == "cat").unwrap();
    assert!(cat.cwd.ends_with("/home"), "{cat:?}");
    let cargo = obs.execs.iter().find(|e| e.name == "cargo").unwrap();
    assert_eq!(
        cargo.env,
        vec![("RUSTFLAGS".to_owned(), "-Cx".to_owned())],
        "{cargo:?}"
    );
    let sort = obs.execs.iter().find(|e| e.name == "sort").unwrap();
    assert!(
        sort.env.contains(&("LANG".to_owned(), "C".to_owned())),
        "{sort:?}"
    );
    // The oracle rates `cat` in its directory and `cargo` with its environment.
    let (items, problems) = oracle::items(&h.sandboxes[0], &obs);
    assert!(problems.is_empty(), "{problems:#?}");
    let home = h.sandboxes[0].home();
    let cat = format!("cd {} && cat .aws/credentials", home.display());
    assert!(
        items.contains(&oracle::Item::Bash("exec", cat)),
        "{items:#?}"
    );
    let cargo = oracle::Item::Bash("exec", "RUSTFLAGS=-Cx cargo test".to_owned());
    assert!(items.contains(&cargo), "{items:#?}");
}

#[test]
fn the_sandbox_runs_unprivileged_confined_and_without_other_programs() {
    let escape = std::env::temp_dir().join("agentd-policy-diff-escape");
    let _ = std::fs::remove_file(&escape);
    let obs = observe(&format!(
        "echo \"uid=$UID\"; /usr/bin/id; echo pwned > {}; echo hi > out.txt; echo x > ~/.bashrc",
        escape.display()
    ));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert!(!obs.stdout.contains("uid=0\n"), "ran as root: {obs:#?}");
    }
    assert!(
        !escape.exists(),
        "a write outside the scratch directory succeeded"
    );
    // /usr/bin/id is not a shim and may not be executed; its trace line is still seen.
    assert!(
        obs.stderr.contains("/usr/bin/id: Permission denied"),
        "{obs:#?}"
    );
    assert!(traced(&obs).contains(&"/usr/bin/id".to_owned()), "{obs:#?}");
    let changed: Vec<String> = obs
        .changed
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        changed.iter().any(|p| p.ends_with("/ws/out.txt")),
        "{changed:?}"
    );
    assert!(
        changed.iter().any(|p| p.ends_with("/home/.bashrc")),
        "{changed:?}"
    );
}

#[test]
fn the_sandbox_has_no_network_and_a_timeout() {
    let obs = observe("cat < /dev/tcp/127.0.0.1/9 && echo connected");
    assert!(!obs.stdout.contains("connected"), "{obs:#?}");
    assert!(
        obs.stderr.contains("connect: Permission denied"),
        "{obs:#?}"
    );
    let start = Instant::now();
    let obs = observe_with(
        "sleep_forever() { while :; do :; done; }; sleep_forever & wait",
        Duration::from_secs(1),
    );
    assert!(obs.timed_out, "{obs:#?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "the timeout did not stop the group"
    );
}

#[test]
fn the_oracle_flags_what_it_cannot_observe() {
    let p = policy();
    let (_turn, mut h) = harness(1);
    let obs = observe_in(&mut h, "set +x; ls; notashimmedprogram", TIMEOUT);
    let problems = oracle::judge(&p, &h.sandboxes[0], &obs);
    let shown: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert!(
        shown.iter().any(|s| s.contains("switches the trace off")),
        "{shown:#?}"
    );
    let obs = observe_in(&mut h, "echo PS4; PS4=x; ls", TIMEOUT);
    let problems = oracle::judge(&p, &h.sandboxes[0], &obs);
    let off: Vec<String> = problems
        .iter()
        .map(|p| p.to_string())
        .filter(|s| s.contains("switches the trace off"))
        .collect();
    assert!(off.len() == 1 && off[0].contains("PS4=x"), "{off:#?}");
    let obs = observe_in(&mut h, "notashimmedprogram --flag", TIMEOUT);
    let problems = oracle::judge(&p, &h.sandboxes[0], &obs);
    let shown: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert!(
        shown.iter().any(|s| s.contains("command not found")),
        "{shown:#?}"
    );
}

// --- the acceptance checks -----------------------------------------------------------------

fn report(checked: &[harness::Checked]) -> (usize, String) {
    let mut out = String::new();
    let mut failed = 0;
    for c in checked.iter().filter(|c| !c.problems.is_empty()) {
        failed += 1;
        let _ = writeln!(out, "  {}", shown(&c.command));
        for p in &c.problems {
            let _ = writeln!(out, "      {p}");
        }
    }
    (failed, out)
}

#[test]
fn every_allowed_harmless_command_runs_only_what_the_policy_allows() {
    let p = policy();
    let c = corpus::parse(HARMLESS, "family").expect("agent-harmless.txt is well-formed");
    let allowed: Vec<String> = c
        .bash()
        .filter(|e| p.check_bash(&e.text, &corpus::ctx()).verdict == Verdict::Allow)
        .map(|e| e.text.clone())
        .collect();
    assert!(
        allowed.len() >= 100,
        "only {} harmless commands allowed to run",
        allowed.len()
    );
    let start = Instant::now();
    let checked = {
        let (_turn, mut h) = harness(WORKERS);
        check_all(&p, &mut h, &allowed)
    };
    let (failed, out) = report(&checked);
    let summary = format!(
        "differential, harmless corpus: ran {} allowed commands in {:.1} s; {failed} executed something not allowed alone\n{out}",
        checked.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(failed == 0, "{summary}");
    eprintln!("{summary}");
}

#[test]
fn fuzzed_compositions_are_never_allowed_with_a_harmful_part_and_run_only_what_is_allowed() {
    let cases_n: usize = std::env::var("CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(fuzz::SEED);
    let p = policy();
    let start = Instant::now();
    let outcome = {
        let (_turn, mut h) = harness(WORKERS);
        fuzz::run(&p, &mut h, seed, cases_n)
    };
    let text = outcome.report(start.elapsed());
    assert!(outcome.passed(), "{text}");
    eprintln!("{text}");
}

#[test]
fn bash_and_the_policy_read_alike_everywhere_the_grammar_gate_admits() {
    let random: usize = std::env::var("GRAMMAR_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let seed: u64 = std::env::var("GRAMMAR_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(grammar::SEED);
    let p = policy();
    let cases = grammar::generate(seed, random);
    let start = Instant::now();
    let outcome = {
        let (_turn, mut h) = harness(WORKERS);
        grammar::run(&p, &mut h, &cases)
    };
    let text = outcome.report(start.elapsed());
    assert!(outcome.passed(), "{text}");
    // The generator must keep reaching the corners where readers differ: the classes
    // (CR comments, mid-word quoted delimiters, substitutions in operands, …) are among them.
    assert!(
        outcome.disagreements.len() >= 20,
        "the generator found too few disagreements to be reaching bash's corners\n{text}"
    );
    eprintln!("{text}");
}
