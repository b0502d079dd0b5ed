//! The differential oracle: everything a command was seen to execute must be `allow` when the
//! policy rates it alone.
//!
//! - each traced simple command, as bash printed it after expansion (so with bash's own reading
//!   of quotes, continuations, globs, `~`, subscripts), prefixed by `cd DIR &&` when it ran outside
//!   the workspace;
//! - each program a shim saw started, re-quoted from its argv, with the environment variables it
//!   received that the harness did not set written as `NAME=value` prefixes (so `export X=…; cmd`
//!   and `env X=… cmd` are rated as `X=… cmd`), in its directory the same way;
//! - each file created, changed or removed, rated as a file-tool write of that path.
//!
//! A refusal by the sandbox (Landlock: an exec outside the shims, a write outside the scratch
//! directory, a TCP connection) shows on standard error and is a failure: the command tried to
//! do something the harness cannot observe.
//!
//! Not rated: trace lines of `for`/`case`/`select` headers (they execute nothing themselves) and
//! calls of shell functions (their bodies are traced). Harness problems — a program with no shim,
//! a timeout, an unreadable trace, a command that switches the trace off — are failures too, so a
//! blind spot cannot pass silently.
#![allow(dead_code)] // shared by the differential test and the fuzz bench

use super::sandbox::{Observation, Sandbox};
use super::trace::quote;
use policy::{Access, Context, Policy, Verdict};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One thing that ran and was not allowed alone, or a reason the run cannot be trusted.
#[derive(Debug, Clone)]
pub struct Problem {
    /// `trace`, `exec`, `write` or `harness`.
    pub source: &'static str,
    /// What ran, as the command text that was rated (or what went wrong).
    pub ran: String,
    /// The policy's verdict and reason for it alone, if rated.
    pub verdict: Option<(Verdict, String)>,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.verdict {
            Some((v, reason)) => write!(
                f,
                "{:<7} ran `{}` -> {v}: {reason}",
                self.source,
                self.ran.replace('\n', "⏎")
            ),
            None => write!(f, "{:<7} {}", self.source, self.ran.replace('\n', "⏎")),
        }
    }
}

/// One thing to rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// Bash text for `check_bash`, and where it came from (`trace` or `exec`).
    Bash(&'static str, String),
    /// A path written, created or removed, for `check_path(Write)`.
    Write(PathBuf),
}

/// What must be rated for one observation, and the problems that make it untrustworthy.
pub fn items(sandbox: &Sandbox, obs: &Observation) -> (Vec<Item>, Vec<Problem>) {
    let ws = sandbox.workspace();
    let ws_text = ws.to_string_lossy();
    let mut items = Vec::new();
    let mut problems = Vec::new();
    let in_dir = |cwd: &str, text: String| {
        if cwd == ws_text {
            text
        } else {
            format!("cd {} && {text}", quote(cwd))
        }
    };
    for t in &obs.traced {
        if switches_trace_off(&t.words) {
            problems.push(Problem {
                source: "harness",
                ran: format!(
                    "`{}` switches the trace off: what follows is unobserved",
                    t.text
                ),
                verdict: None,
            });
        }
        let Some(name) = t.words.iter().find(|w| !is_assignment(w)) else {
            // Assignments alone: rated, they may set what later commands read.
            items.push(Item::Bash("trace", in_dir(&t.cwd, t.text.clone())));
            continue;
        };
        let name = name.as_str();
        // xargs alone has no input to be judged by: what it ran is observed by the shims of the
        // programs it started (an absolute path it runs is refused by the sandbox and reported).
        if matches!(name, "for" | "case" | "select" | "xargs") {
            continue;
        }
        // `((` is no keyword to compgen but is what xtrace prints for arithmetic commands.
        let known = sandbox.builtins.contains(name)
            || sandbox.has_shim(name)
            || name.contains('/')
            || name == "((";
        if !known {
            if obs.stderr.contains(&format!("{name}: command not found")) {
                problems.push(Problem {
                    source: "harness",
                    ran: format!(
                        "`{name}`: command not found (if it is a program, add a shim to SHIMS): `{}`",
                        t.text
                    ),
                    verdict: None,
                });
            }
            // Otherwise a shell function: its body is traced line by line.
            continue;
        }
        items.push(Item::Bash("trace", in_dir(&t.cwd, t.text.clone())));
    }
    for e in obs.execs.iter().filter(|e| e.name != "xargs") {
        let mut text = String::new();
        for (k, v) in &e.env {
            let _ = write!(text, "{k}={} ", quote(v));
        }
        text.push_str(&quote_name(&e.name));
        for a in &e.args {
            text.push(' ');
            text.push_str(&quote(a));
        }
        items.push(Item::Bash("exec", in_dir(&e.cwd, text)));
    }
    items.extend(obs.changed.iter().cloned().map(Item::Write));
    // The sandbox refused something (an exec outside the shims, a write outside the scratch
    // directory, a connection): the command tried to do more than the harness can observe.
    for line in obs.stderr.lines() {
        if line.contains("Permission denied") || line.contains("Operation not permitted") {
            problems.push(Problem {
                source: "blocked",
                ran: format!("the sandbox refused: {line}"),
                verdict: None,
            });
        }
    }
    for line in &obs.unparsed_trace {
        problems.push(Problem {
            source: "harness",
            ran: format!("unreadable trace output {line:?}"),
            verdict: None,
        });
    }
    if obs.timed_out {
        problems.push(Problem {
            source: "harness",
            ran: "timed out: what ran is only partly known".to_owned(),
            verdict: None,
        });
    }
    (items, problems)
}

/// Judges one observation of a command the policy allowed: every item must be `allow` alone.
pub fn judge(policy: &Policy, sandbox: &Sandbox, obs: &Observation) -> Vec<Problem> {
    let ws = sandbox.workspace();
    let home = sandbox.home();
    let ctx = Context {
        workspace: &ws,
        home: Some(&home),
    };
    let (items, mut problems) = items(sandbox, obs);
    for item in items {
        match item {
            Item::Bash(source, text) => {
                let d = policy.check_bash(&text, &ctx);
                if d.verdict != Verdict::Allow {
                    problems.push(Problem {
                        source,
                        ran: text,
                        verdict: Some((d.verdict, d.reason)),
                    });
                }
            }
            Item::Write(path) => {
                let d = policy.check_path(Access::Write, &path.to_string_lossy(), &ctx);
                if d.verdict != Verdict::Allow {
                    problems.push(Problem {
                        source: "write",
                        ran: format!("changed {}", shown_path(&path, &ws)),
                        verdict: Some((d.verdict, d.reason)),
                    });
                }
            }
        }
    }
    problems
}

/// A program name quoted so that bash cannot read it as a keyword (`time`) or an assignment.
fn quote_name(name: &str) -> String {
    if matches!(
        name,
        "time" | "!" | "[[" | "{" | "if" | "while" | "until" | "case" | "for"
    ) || name.contains('=')
    {
        format!("'{}'", name.replace('\'', r"'\''"))
    } else {
        quote(name)
    }
}

fn shown_path(path: &Path, ws: &Path) -> String {
    path.strip_prefix(ws)
        .map(|p| format!("workspace/{}", p.display()))
        .unwrap_or_else(|_| path.display().to_string())
}

/// `NAME=…` or `NAME[…]=…` or `NAME+=…`.
pub fn is_assignment(word: &str) -> bool {
    let Some((lhs, _)) = word.split_once('=') else {
        return false;
    };
    let lhs = lhs.strip_suffix('+').unwrap_or(lhs);
    let name = lhs.split_once('[').map_or(lhs, |(n, _)| n);
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `set +x`, `set +o xtrace`, or a change to the trace's own variables (`PS4`, `BASH_XTRACEFD`).
fn switches_trace_off(words: &[String]) -> bool {
    let trace_var = |w: &str| {
        let name = w.split_once('=').map_or(w, |(n, _)| n);
        name == "PS4" || name == "BASH_XTRACEFD"
    };
    let first = words.first().map_or("", String::as_str);
    let assigns = words.iter().any(|w| is_assignment(w) && trace_var(w));
    let declares = matches!(
        first,
        "unset" | "export" | "declare" | "typeset" | "readonly" | "local" | "read" | "printf"
    ) && words.iter().skip(1).any(|w| trace_var(w));
    let set_plus_x = first == "set"
        && words.iter().skip(1).enumerate().any(|(i, w)| {
            (w.starts_with('+') && !w.starts_with("+o") && w.contains('x'))
                || (w == "+o" && words.get(i + 2).is_some_and(|n| n == "xtrace"))
        });
    assigns || declares || set_plus_x
}
