//! Verdict time, printed as a table against baselines measured in the same run.
//!
//! `cargo bench -p agentd-policy` — goal: median verdict for a 200-character compound command
//! under 50 µs. Baselines: splitting the text on whitespace (the cheapest thing anyone could do)
//! and a bare tree-sitter parse (the floor of any real-grammar analysis: every verdict parses).
//!
//! The host is shared, so its load changes while the bench runs. The rows are measured in turns
//! (ten rounds, each running every row for a tenth of its samples), so a busy moment slows every
//! row alike and the ratio to the parse stays meaningful even when the absolute times do not.
//! For a figure that does not depend on the load, count instructions: see docs/policy.md, Cost.

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

/// How many turns the rows take.
const ROUNDS: usize = 10;

/// One row: what it measures and the samples taken so far.
struct Row<'a> {
    name: &'static str,
    bytes: usize,
    iterations: usize,
    run: Box<dyn FnMut() + 'a>,
    samples: Vec<Duration>,
}

impl<'a> Row<'a> {
    fn new(name: &'static str, bytes: usize, iterations: usize, run: impl FnMut() + 'a) -> Self {
        Self {
            name,
            bytes,
            iterations,
            run: Box::new(run),
            samples: Vec::with_capacity(iterations),
        }
    }

    /// Runs this row's share of one round.
    fn turn(&mut self) {
        for _ in 0..self.iterations / ROUNDS {
            let start = Instant::now();
            (self.run)();
            self.samples.push(start.elapsed());
        }
    }

    fn median(&self) -> Duration {
        let mut sorted = self.samples.clone();
        sorted.sort();
        sorted.get(sorted.len() / 2).copied().unwrap_or_default()
    }

    fn p99(&self) -> Duration {
        let mut sorted = self.samples.clone();
        sorted.sort();
        sorted
            .get((sorted.len() * 99) / 100)
            .copied()
            .unwrap_or_default()
    }
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
    let (policy, ctx, specs, many) = (&policy, &ctx, &specs, &many);
    let mut rows = vec![
        Row::new(BASELINE_SPLIT, COMPOUND.len(), 20_000, || {
            black_box(black_box(COMPOUND).split_whitespace().count());
        }),
        Row::new(BASELINE_PARSE, COMPOUND.len(), 5_000, move || {
            black_box(parser.parse(black_box(COMPOUND), None));
        }),
        Row::new(
            "analysis (parse + walk): compound",
            COMPOUND.len(),
            5_000,
            || {
                black_box(policy::shell::analyze(black_box(COMPOUND), specs));
            },
        ),
        Row::new(COMPOUND_ROW, COMPOUND.len(), 5_000, || {
            black_box(policy.check_bash(black_box(COMPOUND), ctx));
        }),
        Row::new(ALLOWED_ROW, COMPOUND_ALLOWED.len(), 5_000, || {
            black_box(policy.check_bash(black_box(COMPOUND_ALLOWED), ctx));
        }),
        Row::new("check_bash: `ls -la`", 6, 20_000, || {
            black_box(policy.check_bash(black_box("ls -la"), ctx));
        }),
        Row::new("check_bash: `rm -rf /` behind wrappers", 40, 20_000, || {
            black_box(policy.check_bash(black_box("timeout 5 env FOO=1 bash -c 'rm -rf /'"), ctx));
        }),
        Row::new("check_bash: 200 commands", many.len(), 200, || {
            black_box(policy.check_bash(black_box(many), ctx));
        }),
        Row::new("check_path: read ~/.ssh/id_rsa", 13, 20_000, || {
            black_box(policy.check_path(Access::Read, black_box("~/.ssh/id_rsa"), ctx));
        }),
    ];
    // Warm-up: the thread's parser, the lazily built tables, the caches.
    for row in &mut rows {
        for _ in 0..row.iterations / 10 {
            (row.run)();
        }
    }
    for _ in 0..ROUNDS {
        for row in &mut rows {
            row.turn();
        }
    }
    let parse = rows
        .iter()
        .find(|r| r.name == BASELINE_PARSE)
        .map_or(Duration::ZERO, Row::median);
    println!(
        "{:<42} {:>6} {:>12} {:>12} {:>9}",
        "case", "bytes", "median", "p99", "÷ parse"
    );
    for row in &rows {
        println!(
            "{:<42} {:>6} {:>12.2?} {:>12.2?} {:>8.2}x",
            row.name,
            row.bytes,
            row.median(),
            row.p99(),
            row.median().as_secs_f64() / parse.as_secs_f64()
        );
    }
    println!();
    for name in [COMPOUND_ROW, ALLOWED_ROW] {
        let median = rows
            .iter()
            .find(|r| r.name == name)
            .map_or(Duration::ZERO, Row::median);
        println!(
            "{name}: {median:.2?} median (goal < 50µs: {}); {:.2}x a bare tree-sitter parse, \
             {:.2?} beyond it",
            if median < Duration::from_micros(50) {
                "met"
            } else {
                "NOT met"
            },
            median.as_secs_f64() / parse.as_secs_f64(),
            median.saturating_sub(parse),
        );
    }
}
