//! `agent run --output-format text` for people: the model's text as it streams, a line per
//! tool call and its result, a `str_replace`'s edit as a diff (coloured only when stderr is a
//! terminal and `NO_COLOR` is unset), what the turn changed, and at the end the session and how to go on
//! with it. Where it goes keeps pipes clean: with stdout a terminal, the model's text is written
//! there as it comes; otherwise everything but the final answer goes to stderr, and stdout gets
//! the final answer alone. A resumed session's earlier events are shown between two rules, so
//! its old calls do not read as new ones.
//!
//! Everything the model or a tool wrote is made [`inert`] (it reaches a terminal).

use crate::agent::turn::TurnOutcome;
use crate::inert::{self, inert};
use protocol::event::Event;
use protocol::ids::SessionId;
use std::io::{IsTerminal, Write};

/// Where the model's streamed text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// Standard output (a terminal): the final answer is not printed again at the end.
    Stdout,
    /// Standard error (stdout is a pipe or a file: it gets the final answer alone).
    Stderr,
}

/// The text view of one run's events.
#[derive(Debug)]
pub struct Live {
    /// The session.
    session: SessionId,
    /// Where the model's text goes.
    stream: Stream,
    /// Events of the session's history still to come before this run's (a resume).
    history: usize,
    /// The model's current message has been streamed in pieces (its whole text need not be
    /// printed again when it ends).
    streamed: bool,
    /// The last thing written ended its line.
    at_line_start: bool,
}

impl Live {
    /// The view of a run on `session` whose first `history` events are a resumed session's
    /// earlier ones.
    pub fn new(session: SessionId, history: usize) -> Self {
        let stream = match std::io::stdout().is_terminal() {
            true => Stream::Stdout,
            false => Stream::Stderr,
        };
        let live = Self {
            session,
            stream,
            history,
            streamed: false,
            at_line_start: true,
        };
        if history > 0 {
            eprintln!("── earlier in session {} ──", live.session);
        }
        live
    }

    /// Shows `event`.
    pub fn event(&mut self, event: &Event) {
        let old = self.history > 0;
        // History goes to stderr whatever stdout is: stdout is for this run.
        let stream = if old { Stream::Stderr } else { self.stream };
        match event {
            Event::AssistantTextDelta(d) => {
                self.streamed = true;
                self.write(stream, &inert(&d.text));
            }
            Event::AssistantMessage(m) => {
                if !self.streamed {
                    self.write(stream, &inert(&m.text));
                }
                self.streamed = false;
                self.end_line(stream);
            }
            other => {
                self.end_line(stream);
                describe(other);
            }
        }
        if old {
            self.history -= 1;
            if self.history == 0 {
                self.end_line(Stream::Stderr);
                eprintln!("── this run ──");
            }
        }
    }

    /// Whether the final answer was written to stdout already, as it streamed.
    pub fn answered_on_stdout(&self) -> bool {
        self.stream == Stream::Stdout
    }

    fn write(&mut self, stream: Stream, text: &str) {
        if text.is_empty() {
            return;
        }
        let _ = match stream {
            Stream::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes()).and_then(|()| out.flush())
            }
            Stream::Stderr => std::io::stderr().lock().write_all(text.as_bytes()),
        };
        self.at_line_start = text.ends_with('\n');
    }

    fn end_line(&mut self, stream: Stream) {
        if !self.at_line_start {
            self.write(stream, "\n");
        }
    }
}

/// The final answer, on stdout, unless it streamed there already.
pub fn answer(outcome: &TurnOutcome, live: Option<&Live>) {
    if !live.is_some_and(Live::answered_on_stdout) {
        println!("{}", inert(&outcome.final_text));
    }
}

/// The last lines, on stderr: the session, the tokens, and how to go on.
pub fn footer(outcome: &TurnOutcome, session: &SessionId, kept: bool) {
    let usage = outcome.usage;
    eprintln!(
        "session {session} · {} tokens in, {} out",
        usage.input_tokens, usage.output_tokens
    );
    if kept {
        eprintln!("continue it with: agent run --resume {session} -p '…'  (or `agent -c` here)");
    }
}

/// The diff a `str_replace` call makes, from its arguments alone. (A `write_file`'s would be
/// against the file as it is when this line is drawn, which the call may already have changed:
/// the turn's list of changed files covers it.)
fn edit_diff(name: &str, arguments: &str) -> Option<String> {
    if name != "str_replace" {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let text = |key: &str| args.get(key).and_then(|v| v.as_str());
    let on = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let palette = super::repl::style::Palette { on };
    Some(super::repl::diff::render(
        text("old")?,
        text("new")?,
        palette,
    ))
}

/// A tool call, its result, a subagent's calls, what the turn changed: a line each, on stderr.
fn describe(event: &Event) {
    match event {
        // One line each, whatever the model put in them (inert::exact: `⏎` for a newline).
        Event::ToolCallStarted(s) => {
            eprintln!(
                "→ {} {} [{}: {}]",
                inert::exact(&s.call.name),
                inert::exact(&s.call.arguments),
                s.verdict,
                inert::exact(&s.reason)
            );
            if let Some(diff) = edit_diff(&s.call.name, &s.call.arguments) {
                eprintln!("{diff}");
            }
        }
        Event::ToolCallFinished(f) => {
            let first = f.content.lines().next().unwrap_or_default();
            let first: String = first.chars().take(100).collect();
            eprintln!("  {:?} ({} ms) {}", f.status, f.duration_ms, inert(&first));
        }
        // A subagent's calls, marked as its own.
        Event::Subagent(s)
            if matches!(
                *s.event,
                Event::ToolCallStarted(_) | Event::ToolCallFinished(_)
            ) =>
        {
            eprint!("  [subagent {}] ", inert(s.call_id.as_str()));
            describe(&s.event);
        }
        // What the turn changed, from the supervisor's own walk (each path made inert).
        Event::TurnFinished(t) => {
            for line in t.changes.iter().flat_map(crate::review::show::lines) {
                eprintln!("{line}");
            }
        }
        _ => {}
    }
}
