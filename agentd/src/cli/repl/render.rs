//! Events on the terminal: the assistant's text as it streams, each tool call on one line with
//! its verdict and then its status and duration, a running command's output live (its first
//! lines), a diff for edits, a spinner that carries the active todo. Everything the model or a
//! tool wrote goes through [`inert`] first.

use super::diff;
use super::style::{Palette, Tone};
use crate::approval_view;
use crate::inert::inert;
use protocol::event::{
    Event, ToolCall, ToolCallFinished, ToolCallStarted, ToolStatus, TurnFinished,
};
use protocol::session::{FinishReason, TodoItem, TodoStatus};
use protocol::verdict::Verdict;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

/// Lines of a call's output shown live; the rest is counted when it finishes.
const LIVE_LINES: usize = 8;
/// Characters of one shown line at most.
const LINE_CHARS: usize = 160;
/// The spinner's frames.
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// One call's output as it arrives.
#[derive(Debug, Default)]
struct Live {
    /// The tool.
    name: String,
    /// The part of the last line not yet ended.
    partial: String,
    /// Lines shown.
    shown: usize,
    /// Lines not shown.
    hidden: usize,
}

/// What the terminal shows, and what it needs to remember to show it.
#[derive(Debug)]
pub struct Renderer {
    /// Colours on or off.
    pub palette: Palette,
    /// The workspace (a `write_file` diff reads the file as it is now).
    workspace: PathBuf,
    /// Whether the cursor is at the start of a line.
    at_start: bool,
    /// The spinner's frame, while it is drawn.
    spinner: Option<usize>,
    /// Text deltas were shown since the last whole message (so its text is not shown again).
    streamed: bool,
    /// Running calls by id.
    live: HashMap<String, Live>,
    /// The todo list, as last changed.
    pub todos: Vec<TodoItem>,
    /// The message the user just sent: its `user_message` event is not echoed.
    pub sent: Option<String>,
}

impl Renderer {
    /// A renderer for a session working in `workspace`.
    pub fn new(palette: Palette, workspace: PathBuf) -> Self {
        Self {
            palette,
            workspace,
            at_start: true,
            spinner: None,
            streamed: false,
            live: HashMap::new(),
            todos: Vec::new(),
            sent: None,
        }
    }

    /// Writes `text` as it is (already inert and painted).
    fn put(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.clear_spinner();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.at_start = text.ends_with('\n');
    }

    /// Writes `line` on a line of its own.
    pub fn line(&mut self, line: &str) {
        if !self.at_start {
            self.put("\n");
        }
        self.put(&format!("{line}\n"));
    }

    /// A note of the REPL's own, dimmed.
    pub fn note(&mut self, text: &str) {
        let painted = self.palette.paint(Tone::Dim, text);
        self.line(&painted);
    }

    /// An error of the REPL's own.
    pub fn error(&mut self, text: &str) {
        let painted = self.palette.paint(Tone::Red, text);
        self.line(&painted);
    }

    /// Draws the next spinner frame, with the active todo's `active_form` (at a terminal only,
    /// and only on an empty line).
    pub fn tick(&mut self) {
        if !self.palette.on || !(self.at_start || self.spinner.is_some()) {
            return;
        }
        let frame = self.spinner.map_or(0, |f| (f + 1) % FRAMES.len());
        // A provider retrying says so, and why, rather than "working" (`cli::repl_status`).
        let doing = crate::cli::repl_status::current()
            .or_else(|| {
                self.todos
                    .iter()
                    .find(|t| t.status == TodoStatus::InProgress)
                    .map(|t| inert(&t.active_form).into_owned())
                    .filter(|t| !t.is_empty())
            })
            .unwrap_or_else(|| "working".into());
        // One line: a longer one would wrap, and `\r` would redraw only its last row.
        let room = crate::approval_view::columns(std::io::stdout()).saturating_sub(3);
        let doing: String = doing.chars().take(room.max(10)).collect();
        let text = format!(
            "\r{} {}\x1b[K",
            FRAMES[frame],
            self.palette.paint(Tone::Dim, &doing)
        );
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.spinner = Some(frame);
    }

    /// Erases the spinner, if it is drawn.
    pub fn clear_spinner(&mut self) {
        if self.spinner.take().is_some() {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(self.palette.erase_line().as_bytes());
            let _ = out.flush();
        }
    }

    /// Shows one event.
    pub fn event(&mut self, event: &Event) {
        match event {
            Event::UserMessage(m) => {
                if self.sent.take().as_deref() != Some(m.text.as_str()) {
                    let shown = self
                        .palette
                        .paint(Tone::Bold, &format!("› {}", inert(&m.text)));
                    self.line(&shown);
                }
            }
            Event::AssistantTextDelta(d) => {
                self.streamed = true;
                self.put(&inert(&d.text));
            }
            Event::AssistantMessage(m) => {
                if !self.streamed {
                    self.put(&inert(&m.text));
                }
                self.streamed = false;
                if !self.at_start {
                    self.put("\n");
                }
            }
            Event::ToolCallStarted(s) => self.started(s),
            Event::ApprovalRequested(a) => {
                let shown = format!("? asked: {}", call_summary(&a.call));
                self.note(&shown);
            }
            Event::ApprovalResolved(r) if r.by == "session" => {
                self.note("  allowed: you said always for this session");
            }
            Event::ApprovalResolved(r) if r.by != "user" => {
                self.note(&format!("  answered {:?} ({})", r.decision, inert(&r.by)));
            }
            Event::ToolOutputDelta(d) => self.output(d.call_id.as_str(), &d.text),
            Event::ToolCallFinished(f) => self.finished(f),
            Event::TodoListChanged(t) => {
                self.todos = t.items.clone();
                let summary = todo_summary(&self.todos);
                self.note(&summary);
            }
            Event::ContextCompacted(c) => self.note(&format!(
                "(history compacted: {} messages summarised, ~{} → ~{} tokens)",
                c.messages_summarised, c.tokens_before, c.tokens_after
            )),
            Event::ApprovalModeChanged(c) => self.note(&format!(
                "(approval mode is now {})",
                super::slash::mode_name(c.mode)
            )),
            Event::ModelChanged(c) => {
                self.note(&format!("(model is now {})", inert(&c.model)));
            }
            Event::TurnFinished(t) => self.turn_finished(t),
            Event::Subagent(s) => self.subagent(s.call_id.as_str(), &s.event),
            Event::ApprovalResolved(_) | Event::TurnStarted(_) => {}
        }
    }

    /// A subagent's work: its calls, one line each, marked as its own; its text stays in its
    /// report, which the `task` call's result shows.
    fn subagent(&mut self, task: &str, event: &Event) {
        let tag = self
            .palette
            .paint(Tone::Dim, &format!("  ↳ [subagent {}]", inert(task)));
        match event {
            Event::ToolCallStarted(s) => {
                let line = format!("{tag} {} {}", inert(&s.call.name), summary_of(&s.call));
                self.line(&line);
            }
            Event::ToolCallFinished(f) => {
                let line = format!(
                    "{tag}   {} · {}",
                    status_word(f.status),
                    duration(f.duration_ms)
                );
                self.line(&line);
            }
            _ => {}
        }
    }

    fn started(&mut self, s: &ToolCallStarted) {
        let verdict = match s.verdict {
            Verdict::Allow => self.palette.paint(Tone::Green, "allow"),
            Verdict::Ask => self.palette.paint(Tone::Yellow, "ask"),
            Verdict::Deny => self.palette.paint(Tone::Red, "deny"),
        };
        let name = self
            .palette
            .paint(Tone::Cyan, &format!("● {}", inert(&s.call.name)));
        let mut line = format!("{name} {}  [{verdict}]", summary_of(&s.call));
        if s.verdict != Verdict::Allow {
            line.push_str(&format!(" {}", cut(&inert(&s.reason))));
        }
        self.line(&line);
        if let Some(diff) = diff::of_call(
            &s.call.name,
            &s.call.arguments,
            &self.workspace,
            self.palette,
        ) {
            self.line(&diff);
        }
        let live = Live {
            name: s.call.name.clone(),
            ..Live::default()
        };
        self.live.insert(s.call.id.as_str().to_owned(), live);
    }

    /// A running call's output: whole lines, the first [`LIVE_LINES`] of them.
    fn output(&mut self, id: &str, text: &str) {
        let Some(mut live) = self.live.remove(id) else {
            return;
        };
        live.partial.push_str(text);
        while let Some(end) = live.partial.find('\n') {
            let line: String = live.partial.drain(..=end).collect();
            self.live_line(&mut live, line.trim_end_matches('\n'));
        }
        self.live.insert(id.to_owned(), live);
    }

    fn live_line(&mut self, live: &mut Live, line: &str) {
        if live.shown < LIVE_LINES {
            live.shown += 1;
            let shown = self
                .palette
                .paint(Tone::Dim, &format!("  │ {}", cut(&inert(line))));
            self.line(&shown);
        } else {
            live.hidden += 1;
        }
    }

    fn finished(&mut self, f: &ToolCallFinished) {
        let mut live = self.live.remove(f.call_id.as_str()).unwrap_or_default();
        if !live.partial.is_empty() {
            let rest = std::mem::take(&mut live.partial);
            self.live_line(&mut live, &rest);
        }
        // A command that printed nothing live (it finished before streaming) shows its result.
        if live.name == "bash" && live.shown == 0 && f.status == ToolStatus::Ok {
            for line in f.content.lines() {
                self.live_line(&mut live, line);
            }
        }
        if live.hidden > 0 {
            let more = self
                .palette
                .paint(Tone::Dim, &format!("  │ … {} more lines", live.hidden));
            self.line(&more);
        }
        let status = match f.status {
            ToolStatus::Ok => self.palette.paint(Tone::Green, "ok"),
            other => self.palette.paint(Tone::Red, status_word(other)),
        };
        let mut line = format!("  └ {status} · {}", duration(f.duration_ms));
        if let Some(code) = f.exit_code.filter(|c| *c != 0) {
            line.push_str(&format!(" · exit {code}"));
        }
        if f.status != ToolStatus::Ok
            && let Some(first) = f.content.lines().find(|l| !l.trim().is_empty())
        {
            line.push_str(&format!(" · {}", cut(&inert(first))));
        }
        self.line(&line);
    }

    fn turn_finished(&mut self, t: &TurnFinished) {
        self.live.clear();
        self.streamed = false;
        // What the turn changed, from the supervisor's own walk: what git says can be hidden.
        if let Some(changes) = &t.changes {
            for (i, line) in crate::review::show::lines(changes).iter().enumerate() {
                let tone = if i == 0 { Tone::Bold } else { Tone::Dim };
                let painted = self.palette.paint(tone, line);
                self.line(&painted);
            }
        }
        let usage = usage_words(&t.usage);
        if t.reason == FinishReason::Done {
            self.note(&usage);
            return;
        }
        let mut text = format!("turn ended: {}", reason_word(t.reason));
        if let Some(m) = &t.message {
            text.push_str(&format!(" — {}", cut(&inert(m))));
        }
        let painted = self.palette.paint(Tone::Yellow, &text);
        self.line(&painted);
        self.note(&usage);
    }
}

/// The call in a few words, on one line: what it acts on ([`exact_of`]), cut.
pub fn summary_of(call: &ToolCall) -> String {
    cut(&exact_of(call))
}

/// What the call acts on ([`approval_view::subject`]: the command, the path, the arguments),
/// whole and on one line: [`crate::inert::exact`], so a newline in a command shows as `⏎`
/// instead of drawing lines of the model's choosing above the approval prompt.
pub fn exact_of(call: &ToolCall) -> String {
    crate::inert::exact(approval_view::subject(call).trim()).into_owned()
}

/// The call as one line: its tool and [`summary_of`] it.
pub fn call_summary(call: &ToolCall) -> String {
    format!("{} {}", inert(&call.name), summary_of(call))
}

/// `text` cut to [`LINE_CHARS`] characters.
fn cut(text: &str) -> String {
    if text.chars().count() <= LINE_CHARS {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(LINE_CHARS).collect();
    short.push('…');
    short
}

fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn status_word(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Ok => "ok",
        ToolStatus::Error => "error",
        ToolStatus::Denied => "denied",
        ToolStatus::TimedOut => "timed out",
        ToolStatus::Crashed => "crashed",
    }
}

/// A turn's tokens in words: in and out, then how many were read from and written to the
/// cache and how many were reasoning, when there were any.
fn usage_words(u: &protocol::session::TokenUsage) -> String {
    let mut words = format!("({} tokens in, {} out", u.input_tokens, u.output_tokens);
    let mut of_them = Vec::new();
    if u.cache_read_tokens > 0 || u.cache_write_tokens > 0 {
        of_them.push(format!(
            "{} read from the cache, {} written to it",
            u.cache_read_tokens, u.cache_write_tokens
        ));
    }
    if u.reasoning_tokens > 0 {
        of_them.push(format!("{} reasoning", u.reasoning_tokens));
    }
    if !of_them.is_empty() {
        words.push_str("; ");
        words.push_str(&of_them.join(", "));
    }
    words.push(')');
    words
}

/// The stop reason as the protocol names it.
pub fn reason_word(reason: FinishReason) -> &'static str {
    reason.as_str()
}

/// The todo list in one line: how many are done, and what is being done.
fn todo_summary(todos: &[TodoItem]) -> String {
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Done)
        .count();
    let now = todos
        .iter()
        .find(|t| t.status == TodoStatus::InProgress)
        .map(|t| format!("; now: {}", inert(&t.content)))
        .unwrap_or_default();
    format!("  todos: {done}/{} done{now}", todos.len())
}

/// The todo list, one item a line, for `/todos`.
pub fn todo_list(todos: &[TodoItem]) -> Vec<String> {
    if todos.is_empty() {
        return vec!["no todos yet".into()];
    }
    todos
        .iter()
        .map(|t| {
            let mark = match t.status {
                TodoStatus::Done => "[x]",
                TodoStatus::InProgress => "[>]",
                TodoStatus::Pending => "[ ]",
            };
            format!("{mark} {}", inert(&t.content))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ids::ToolCallId;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: ToolCallId::generated(0),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn a_call_is_summarised_by_what_it_acts_on_and_stays_inert() {
        assert_eq!(
            summary_of(&call("bash", r#"{"command": "mkdir newdir"}"#)),
            "mkdir newdir"
        );
        assert_eq!(
            summary_of(&call("read_file", r#"{"path": "a.py"}"#)),
            "a.py"
        );
        assert_eq!(
            summary_of(&call("grep", r#"{"pattern": "fn", "path": "src"}"#)),
            "fn src"
        );
        assert_eq!(summary_of(&call("x", "{broken")), "{broken");
        assert_eq!(
            summary_of(&call("bash", r#"{"command": "echo \u001b[2J"}"#)),
            r"echo \x1b[2J"
        );
        assert_eq!(
            summary_of(&call("bash", r#"{"command": "ls\n\n? approve bash ls"}"#)),
            "ls⏎⏎? approve bash ls",
            "one line, whatever the command holds"
        );
        let long = format!(r#"{{"command": "{}"}}"#, "a".repeat(500));
        assert_eq!(
            summary_of(&call("bash", &long)).chars().count(),
            LINE_CHARS + 1
        );
    }

    #[test]
    fn the_todo_list_shows_each_item_with_its_state() {
        let item = |content: &str, status| TodoItem {
            content: content.into(),
            active_form: String::new(),
            status,
        };
        let todos = [
            item("Read", TodoStatus::Done),
            item("Fix", TodoStatus::InProgress),
            item("Test", TodoStatus::Pending),
        ];
        assert_eq!(todo_list(&todos), ["[x] Read", "[>] Fix", "[ ] Test"]);
        assert_eq!(todo_summary(&todos), "  todos: 1/3 done; now: Fix");
        assert_eq!(todo_list(&[]), ["no todos yet"]);
    }
}
