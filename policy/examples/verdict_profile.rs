//! A driver for counting a verdict's instructions, which (unlike its time) does not depend on
//! the load of the host:
//!
//! ```sh
//! cargo build --profile bench -p agentd-policy --example verdict_profile
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='verdict_profile::measured' \
//!     target/release/examples/verdict_profile compound 100
//! ```
//!
//! Only `measured` is counted (the policy is built and the thread's parser made before it);
//! divide by the count given. Inputs: `parse` (a bare tree-sitter parse of the compound command,
//! the baseline), `analysis` (parse and walk), `compound`, `allowed` (the same without the
//! substitution), `ls`, `wrappers`, `many` (200 commands) — the bench's rows.

use policy::{Context, Policy};
use std::hint::black_box;
use std::path::Path;

/// The bench's compound command (`benches/verdict.rs`).
const COMPOUND: &str = r#"cd src && grep -rn "fn main" . | sort | uniq -c > /dev/null; git status --short && cargo test -p policy -- --nocapture 2>&1 | tail -n 20 || echo "tests failed: $(date +%s)" >&2; ls -la target/release/"#;

/// The same without the substitution.
const COMPOUND_ALLOWED: &str = r#"cd src && grep -rn "fn main" . | sort | uniq -c > /dev/null; git status --short && cargo test -p policy -- --nocapture 2>&1 | tail -n 20 || echo "tests failed: see the log" >&2; ls -la target/release/"#;

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "compound".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let Ok(policy) = Policy::builtin() else {
        eprintln!("the built-in policy does not build");
        std::process::exit(1);
    };
    let mut parser = tree_sitter::Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        std::process::exit(1);
    }
    let ctx = Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    };
    let many = "ls -la; ".repeat(200);
    let text = match what.as_str() {
        "parse" | "analysis" | "compound" => COMPOUND,
        "allowed" => COMPOUND_ALLOWED,
        "ls" => "ls -la",
        "wrappers" => "timeout 5 env FOO=1 bash -c 'rm -rf /'",
        "many" => &many,
        other => {
            eprintln!("unknown input {other:?}");
            std::process::exit(2);
        }
    };
    // Warm-up: the thread's parser and the lazily built tables.
    black_box(policy.check_bash(text, &ctx));
    black_box(parser.parse(text, None));
    measured(&what, text, n, &policy, &ctx, &mut parser);
}

/// What callgrind counts: `n` runs of the chosen input.
#[inline(never)]
fn measured(
    what: &str,
    text: &str,
    n: usize,
    policy: &Policy,
    ctx: &Context<'_>,
    parser: &mut tree_sitter::Parser,
) {
    for _ in 0..n {
        match what {
            "parse" => {
                black_box(parser.parse(black_box(text), None));
            }
            "analysis" => {
                if let Some(specs) = policy.specs() {
                    black_box(policy::shell::analyze(black_box(text), specs));
                }
            }
            _ => {
                black_box(policy.check_bash(black_box(text), ctx));
            }
        }
    }
}
