//! The grammar generator: text across bash's lexical grammar — every byte 0x01–0x7f and some
//! multi-byte UTF-8 in every quoting context, every parameter-expansion operator with operands
//! that hold substitutions and quotes, every here-document delimiter form, line continuations
//! with CR — run under real bash whatever the policy says (the sandbox holds it), and compared
//! with the policy's own reading: every simple command bash ran (its xtrace record, words after
//! expansion) must be one the analysis found, with the same words where the analysis says they
//! are static. A case where they differ is a *disagreement*, and every disagreement must lie
//! outside the grammar gate's subset (`policy::shell::gate::check` refuses it), so the policy
//! can never allow it. Cases the policy allows also go through the differential oracle.
#![allow(dead_code)] // shared by the differential test and the fuzz bench

use super::corpus::shown;
use super::fuzz::Rng;
use super::oracle;
use super::sandbox::{Harness, Observation};
use super::{Checked, TIMEOUT};
use policy::shell::{Finding, gate};
use policy::{Policy, Verdict};
use std::fmt::Write as _;

/// The default seed of the random part (GRAMMAR_SEED overrides).
pub const SEED: u64 = 0x6a_7a3e_0021;

/// One generated case.
#[derive(Debug, Clone)]
pub struct Case {
    /// The command text.
    pub text: String,
    /// The context and the piece placed in it, for the report.
    pub form: String,
}

/// Multi-byte UTF-8 pieces: letters, a symbol, an emoji, and characters some readers take for
/// blanks or line ends (NBSP, NEL, LINE SEPARATOR) or that reorder text (RLO).
const UTF8: &[&str] = &["é", "€", "😀", "\u{a0}", "\u{85}", "\u{2028}", "\u{202e}"];

/// Pieces that are syntax somewhere: substitutions, quotes, line ends, delimiters.
const TOKENS: &[&str] = &[
    "$(echo q)",
    "`echo q`",
    "${HOME}",
    "$HOME",
    "'",
    "\"",
    "\\",
    "#",
    "\r\n",
    "\\\r\n",
    "\\\n",
    "\n",
    ";echo q",
    "$'",
    "$\"",
    "EOF",
    "}",
    "{",
    "$((1))",
    "${u:-$(echo q)}",
    "\r#",
];

/// Contexts; `X` is where the piece goes. Each ends with a command after the context, so that a
/// reader that loses its place there misses a command bash runs.
const CONTEXTS: &[(&str, &str)] = &[
    ("unquoted", "printf '[%s]' aXb; echo z"),
    ("word-start", "printf '[%s]' Xb; echo z"),
    ("before-hash", "printf '[%s]' a X# echo q\necho z"),
    ("single", "printf '[%s]' 'aXb'; echo z"),
    ("double", "printf '[%s]' \"aXb\"; echo z"),
    ("ansi-c", "printf '[%s]' $'aXb'; echo z"),
    ("escaped", "printf '[%s]' a\\Xb; echo z"),
    ("escaped-double", "printf '[%s]' \"a\\Xb\"; echo z"),
    ("after-dollar", "printf '[%s]' a$Xb; echo z"),
    ("after-dollar-double", "printf '[%s]' \"a$Xb\"; echo z"),
    ("comment", "echo a #Xb; echo q\necho z"),
    ("heredoc", "cat <<EOF\naXb\nEOF\necho z"),
    ("heredoc-quoted", "cat <<'EOF'\naXb\nEOF\necho z"),
    (
        "heredoc-delimiter-line",
        "cat <<EOF\nEOFX\necho q\nEOF\necho z",
    ),
    (
        "operand-double",
        "printf '[%s]' \"${HOME#aXb}\" \"${u:-aXb}\"; echo z",
    ),
    (
        "operand-unquoted",
        "printf '[%s]' ${HOME%aXb} ${u-aXb} ${HOME/aXb/c}; echo z",
    ),
    (
        "substitution",
        "printf '[%s]' \"$(echo aXb)\" $(echo aXb); echo z",
    ),
    (
        "backquote",
        "printf '[%s]' \"`echo aXb`\" `echo aXb`; echo z",
    ),
    ("continuation", "printf '[%s]' a\\X\nb; echo z"),
];

/// Operators after `${name` (those the gate admits and those it does not).
const OPERATORS: &[&str] = &[
    ":-", "-", ":=", "=", ":?", "?", ":+", "+", "#", "##", "%", "%%", "/", "//", "/#", "/%", "^",
    "^^", ",", ",,", ":", "@Q", "@E", "@P", "@A", "@U", "@L", "@a",
];

/// Operands for every operator.
const OPERANDS: &[&str] = &[
    "x",
    "a b",
    "*",
    "1:2",
    "$HOME",
    "${HOME}",
    "$(echo q)",
    "`echo q`",
    "'$(echo q)'",
    "\"$(echo q)\"",
    "\\$(echo q)",
    "$'\\x41'",
    "\\}",
    "}$(echo q)",
];

/// Here-document delimiters as written: plain, wholly quoted, and quoted in part.
const DELIMITERS: &[&str] = &[
    "EOF", "'EOF'", "\"EOF\"", "E\"O\"F", "E'O'F", "$'EOF'", "\\EOF", "E\\OF", "\"E\"OF", "'E'OF",
    "$\"EOF\"", "E$'O'F", "EOF\\", " EOF", "\tEOF",
];

/// Every piece placed alone: the bytes 0x01–0x7f, the UTF-8 pieces and the tokens.
fn pieces() -> Vec<String> {
    let mut out: Vec<String> = (1u8..=0x7f).map(|b| char::from(b).to_string()).collect();
    out.extend(UTF8.iter().map(|s| (*s).to_owned()));
    out.extend(TOKENS.iter().map(|s| (*s).to_owned()));
    out
}

/// The systematic cases (every piece in every context, every operator with every operand,
/// every delimiter form) and `random` seeded ones (up to three pieces in one context).
pub fn generate(seed: u64, random: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    let pieces = pieces();
    for (name, template) in CONTEXTS {
        for piece in &pieces {
            cases.push(Case {
                text: template.replace('X', piece),
                form: format!("{name}: {}", gate::escape(piece, 20)),
            });
        }
    }
    for op in OPERATORS {
        for operand in OPERANDS {
            let operand = if op.starts_with('@') { "" } else { *operand };
            cases.push(Case {
                text: format!(
                    "printf '[%s]' \"${{HOME{op}{operand}}}\" ${{u{op}{operand}}}; echo z"
                ),
                form: format!("operator {op}: {operand}"),
            });
            if op.starts_with('@') {
                break;
            }
        }
    }
    for delim in DELIMITERS {
        let bare: String = delim
            .chars()
            .filter(|c| !matches!(c, '\'' | '"' | '\\' | '$' | ' ' | '\t'))
            .collect();
        for op in ["<<", "<<-"] {
            for close in [delim.trim_start(), bare.as_str(), "\tEOF"] {
                cases.push(Case {
                    text: format!(
                        "cat {op}{delim}\nhi $(echo b) `echo c`\nEOF\necho q\n{close}\necho z"
                    ),
                    form: format!("here-document {op}{delim} closed by {close}"),
                });
            }
        }
    }
    let mut rng = Rng::new(seed);
    for _ in 0..random {
        let (name, template) = rng.pick(CONTEXTS);
        let mut piece = String::new();
        for _ in 0..1 + rng.below(3) {
            let p: &String = rng.pick(&pieces);
            piece.push_str(p);
        }
        cases.push(Case {
            text: template.replace('X', &piece),
            form: format!("{name}: {}", gate::escape(&piece, 30)),
        });
    }
    cases
}

/// Whether `word` from the analysis stands for exactly its text.
fn is_static(w: &policy::shell::Word) -> bool {
    !(w.dynamic || w.split || w.tilde || w.glob_at.is_some() || w.known_path)
}

/// The first simple command bash ran that the analysis did not find, with the same words where
/// they are static; `None` when every one was found.
pub fn disagreement(policy: &Policy, text: &str, obs: &Observation) -> Option<String> {
    let specs = policy.specs()?;
    let analysis = policy::shell::analyze(text, specs);
    let found: Vec<&Vec<policy::shell::Word>> = analysis
        .findings
        .iter()
        .filter_map(|f| match f {
            Finding::Command(c) => Some(&c.argv),
            _ => None,
        })
        .collect();
    for t in &obs.traced {
        let Some(name) = t.words.first() else {
            continue;
        };
        if oracle::is_assignment(name) {
            continue;
        }
        let matched = found.iter().any(|argv| {
            let same_name = argv.first().is_some_and(|w| {
                !is_static(w) || w.text.rsplit('/').next() == name.rsplit('/').next()
            });
            same_name
                && (argv.iter().any(|w| !is_static(w))
                    || argv
                        .iter()
                        .map(|w| w.text.as_str())
                        .eq(t.words.iter().map(String::as_str)))
        });
        if !matched {
            let seen: Vec<String> = found
                .iter()
                .map(|argv| {
                    argv.iter()
                        .map(|w| gate::escape(&w.text, 40))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            return Some(format!(
                "bash ran `{}`; the policy found [{}]",
                gate::escape(&t.words.join(" "), 80),
                seen.join("; ")
            ));
        }
    }
    None
}

/// What a grammar run found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Cases run.
    pub cases: usize,
    /// Cases the gate refused.
    pub outside: usize,
    /// Cases allowed.
    pub allowed: usize,
    /// Disagreements (case, what differed, refused by the gate).
    pub disagreements: Vec<(Case, String, bool)>,
    /// Allowed cases that ran something not allowed alone.
    pub failed: Vec<Checked>,
}

/// Runs every case under bash and compares.
pub fn run(policy: &Policy, harness: &mut Harness, cases: &[Case]) -> Outcome {
    let ctx = super::corpus::ctx();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for sb in harness.sandboxes.iter_mut() {
            let (next, results, ctx) = (&next, &results, &ctx);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    let gated = gate::check(&case.text).is_err();
                    let allowed = policy.check_bash(&case.text, ctx).verdict == Verdict::Allow;
                    let (differs, problems) = match sb.run(&case.text, TIMEOUT) {
                        Ok(obs) => (
                            disagreement(policy, &case.text, &obs),
                            if allowed {
                                oracle::judge(policy, sb, &obs)
                            } else {
                                Vec::new()
                            },
                        ),
                        Err(e) => (Some(format!("could not run: {e}")), Vec::new()),
                    };
                    if let Ok(mut r) = results.lock() {
                        r.push((i, gated, allowed, differs, problems));
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|r| r.0);
    let mut out = Outcome {
        cases: cases.len(),
        ..Outcome::default()
    };
    for (i, gated, allowed, differs, problems) in results {
        out.outside += usize::from(gated);
        out.allowed += usize::from(allowed);
        if let Some(d) = differs {
            out.disagreements.push((cases[i].clone(), d, gated));
        }
        if !problems.is_empty() {
            out.failed.push(Checked {
                command: cases[i].text.clone(),
                problems,
            });
        }
    }
    out
}

impl Outcome {
    /// Every disagreement lies outside the subset, and every allowed case ran only what is
    /// allowed alone.
    pub fn passed(&self) -> bool {
        self.disagreements.iter().all(|d| d.2) && self.failed.is_empty()
    }

    /// A summary, the disagreements inside the subset (failures), and a sample of those outside.
    pub fn report(&self, elapsed: std::time::Duration) -> String {
        let inside: Vec<_> = self.disagreements.iter().filter(|d| !d.2).collect();
        let mut out = format!(
            "grammar: {} cases run under bash, {} outside the gate's subset, {} allowed; {} disagreements with the policy's reading, {} of them inside the subset; {} allowed cases ran something not allowed alone; {:.1} s\n",
            self.cases,
            self.outside,
            self.allowed,
            self.disagreements.len(),
            inside.len(),
            self.failed.len(),
            elapsed.as_secs_f64()
        );
        if !inside.is_empty() {
            let _ = writeln!(
                out,
                "disagreements INSIDE the subset (the gate must refuse these):"
            );
            for (case, d, _) in inside.iter().take(60) {
                let _ = writeln!(
                    out,
                    "  [{}] {}\n      {d}",
                    case.form,
                    gate::escape(&case.text, 200)
                );
            }
        }
        for c in self.failed.iter().take(20) {
            let _ = writeln!(
                out,
                "  allowed, ran what is not allowed alone: {}",
                shown(&c.command)
            );
            for p in &c.problems {
                let _ = writeln!(out, "      {p}");
            }
        }
        let _ = writeln!(out, "a sample of the disagreements outside the subset:");
        let mut seen = std::collections::BTreeSet::new();
        for (case, d, _) in self.disagreements.iter().filter(|d| d.2) {
            let context = case.form.split(':').next().unwrap_or("");
            if seen.insert(context.to_owned()) {
                let _ = writeln!(
                    out,
                    "  [{}] {}\n      {d}",
                    case.form,
                    gate::escape(&case.text, 120)
                );
            }
        }
        out
    }
}
