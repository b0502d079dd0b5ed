//! Verdict time, printed as a table against baselines measured in the same run.
//!
//! `cargo bench -p agentd-policy` — goal: median verdict for a 200-character compound command
//! under 50 µs. Baselines: splitting the text on whitespace (the cheapest thing anyone could do)
//! and a bare tree-sitter parse (the floor of any real-grammar analysis).

use policy::{Access, Context, Policy};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

/// A realistic 200-character compound command (the table prints its length) with pipes, substitution, quoting and redirects.
const COMPOUND: &str = r#"cd src && grep -rn "fn main" . | sort | uniq -c > /dev/null; git status --short && cargo test -p policy -- --nocapture 2>&1 | tail -n 20 || echo "tests failed: $(date +%s)" >&2; ls -la target/release/"#;

/// The same command without the substitution. Every part of both is rated (an approval must
/// cover each); this row shows what the substitution's inner command costs.
const COMPOUND_ALLOWED: &str = r#"cd src && grep -rn "fn main" . | sort | uniq -c > /dev/null; git status --short && cargo test -p policy -- --nocapture 2>&1 | tail -n 20 || echo "tests failed: see the log" >&2; ls -la target/release/"#;

const BASELINE_SPLIT: &str = "baseline: split_whitespace";
const BASELINE_PARSE: &str = "baseline: tree-sitter parse only";
const COMPOUND_ROW: &str = "check_bash: compound command";
const ALLOWED_ROW: &str = "check_bash: same, every part allowed";

fn measure(iterations: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    for _ in 0..iterations / 10 {
        f();
    }
    let mut samples: Vec<Duration> = (0..iterations)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    samples.sort();
    let median = samples[samples.len() / 2];
    let p99 = samples[(samples.len() * 99) / 100];
    (median, p99)
}

fn main() {
    let Ok(policy) = Policy::builtin() else {
        eprintln!("the built-in policy does not build");
        std::process::exit(1);
    };
    let ctx = Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    };
    let mut parser = tree_sitter::Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        std::process::exit(1);
    }
    let Ok(specs) = policy::specs::Specs::builtin() else {
        eprintln!("the built-in specs do not load");
        std::process::exit(1);
    };
    let many = "ls -la; ".repeat(200);
    let rows: Vec<(&str, usize, (Duration, Duration))> = vec![
        (
            BASELINE_SPLIT,
            COMPOUND.len(),
            measure(20_000, || {
                black_box(black_box(COMPOUND).split_whitespace().count());
            }),
        ),
        (
            BASELINE_PARSE,
            COMPOUND.len(),
            measure(5_000, || {
                black_box(parser.parse(black_box(COMPOUND), None));
            }),
        ),
        (
            "analysis (parse + walk): compound",
            COMPOUND.len(),
            measure(5_000, || {
                black_box(policy::shell::analyze(black_box(COMPOUND), &specs));
            }),
        ),
        (
            COMPOUND_ROW,
            COMPOUND.len(),
            measure(5_000, || {
                black_box(policy.check_bash(black_box(COMPOUND), &ctx));
            }),
        ),
        (
            ALLOWED_ROW,
            COMPOUND_ALLOWED.len(),
            measure(5_000, || {
                black_box(policy.check_bash(black_box(COMPOUND_ALLOWED), &ctx));
            }),
        ),
        (
            "check_bash: `ls -la`",
            6,
            measure(20_000, || {
                black_box(policy.check_bash(black_box("ls -la"), &ctx));
            }),
        ),
        (
            "check_bash: `rm -rf /` behind wrappers",
            40,
            measure(20_000, || {
                black_box(
                    policy.check_bash(black_box("timeout 5 env FOO=1 bash -c 'rm -rf /'"), &ctx),
                );
            }),
        ),
        (
            "check_bash: 200 commands",
            many.len(),
            measure(200, || {
                black_box(policy.check_bash(black_box(&many), &ctx));
            }),
        ),
        (
            "check_path: read ~/.ssh/id_rsa",
            13,
            measure(20_000, || {
                black_box(policy.check_path(Access::Read, black_box("~/.ssh/id_rsa"), &ctx));
            }),
        ),
    ];
    println!(
        "{:<42} {:>6} {:>12} {:>12}",
        "case", "bytes", "median", "p99"
    );
    for (name, bytes, (median, p99)) in &rows {
        println!("{name:<42} {bytes:>6} {:>12.2?} {:>12.2?}", median, p99);
    }
    println!();
    let median = |name: &str| {
        rows.iter()
            .find(|r| r.0 == name)
            .map_or(Duration::ZERO, |r| r.2.0)
    };
    for row in [COMPOUND_ROW, ALLOWED_ROW] {
        let compound = median(row);
        println!(
            "{row}: {compound:.2?} median (goal < 50µs: {}); {:.1}x a bare tree-sitter parse",
            if compound < Duration::from_micros(50) {
                "met"
            } else {
                "NOT met"
            },
            compound.as_secs_f64() / median(BASELINE_PARSE).as_secs_f64()
        );
    }
}
