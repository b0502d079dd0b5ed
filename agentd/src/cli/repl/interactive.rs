//! The REPL itself: read a line, send it or carry out its slash command, show the turn, answer
//! its approvals — the same code whichever [`SessionLink`] it drives.

use super::approval;
use super::editor::{Input, LineEditor};
use super::link::{Opened, SessionLink};
use super::render::{self, Renderer};
use super::slash::{self, Slash};
use super::style::{self, Palette, Tone};
use super::turn::{self, Pause};
use crate::inert::{inert, inert_line};
use anyhow::{Context as _, Result};
use protocol::event::{ApprovalRequested, Event};
use protocol::verdict::ApprovalDecision;
use std::path::PathBuf;
use tokio::signal::unix::{Signal, SignalKind};

/// A change to the running session a slash command asks for.
#[derive(Debug, Clone, Copy)]
enum Change<'a> {
    /// `/compact`.
    Compact,
    /// `/approval MODE`.
    Approval(protocol::verdict::ApprovalMode),
    /// `/model NAME`.
    Model(&'a str),
}

/// The prompt of the input line.
const PROMPT: &str = "› ";

/// How long the runtime's leftover tasks get once the session has stopped.
const SHUTDOWN: std::time::Duration = std::time::Duration::from_secs(3);

/// An interactive session on one link.
#[derive(Debug)]
pub struct Repl<L: SessionLink> {
    /// The session.
    link: L,
    /// What the terminal shows.
    render: Renderer,
    /// The input line.
    editor: LineEditor,
    /// Where the link's futures run.
    runtime: tokio::runtime::Runtime,
    /// Ctrl-C while a turn runs (at the prompt the editor takes it as a key).
    sigint: Signal,
    /// What a turn keeps between its pauses.
    carry: turn::Carry,
}

impl<L: SessionLink> Repl<L> {
    /// A REPL on `link`, its input history kept in `history`.
    pub fn new(
        link: L,
        runtime: tokio::runtime::Runtime,
        workspace: PathBuf,
        history: Option<PathBuf>,
    ) -> Result<Self> {
        // The editor first: it installs a SIGINT handler of its own for its lifetime, which the
        // runtime's (installed after it) chains to. From here on SIGINT no longer ends the
        // process: it interrupts the running turn.
        let editor = LineEditor::new(history).context("cannot set up the input line")?;
        let sigint = {
            let _entered = runtime.enter();
            tokio::signal::unix::signal(SignalKind::interrupt())
                .context("cannot watch for Ctrl-C")?
        };
        let palette = Palette {
            on: style::styled(),
        };
        Ok(Self {
            link,
            render: Renderer::new(palette, workspace),
            editor,
            runtime,
            sigint,
            carry: turn::Carry::default(),
        })
    }

    /// Reads and carries out lines until `/quit`, Ctrl-D, or Ctrl-C twice at an empty prompt.
    /// `opened`: how the first session was opened (its history is shown first); `first`: a
    /// message sent before the first prompt, as if typed (the demo's task).
    pub fn run(mut self, opened: Opened, first: Option<&str>) -> Result<i32> {
        self.banner(opened);
        if let Some(text) = first {
            let shown = self
                .render
                .palette
                .paint(Tone::Bold, &format!("{PROMPT}{text}"));
            self.render.line(&shown);
            self.turn(text);
        }
        let mut interrupted = false;
        loop {
            let line = match self.editor.read(PROMPT)? {
                Input::End => break,
                Input::Interrupted if interrupted => break,
                Input::Interrupted => {
                    interrupted = true;
                    self.render.note("(Ctrl-C again, or Ctrl-D, to leave)");
                    continue;
                }
                Input::Line(line) => line,
            };
            interrupted = false;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            self.editor.remember(line);
            match slash::parse(line) {
                slash::Line::Command(Slash::Quit) => break,
                slash::Line::Command(command) => {
                    self.slash(command);
                    self.notice();
                }
                slash::Line::Message(text) => self.turn(&text),
            }
        }
        if self.link.kept() {
            let line = format!(
                "session {} is kept: continue it here with `agent -c` (or `/resume {}`)",
                self.link.session(),
                self.link.session()
            );
            self.render.note(&line);
        }
        self.runtime.block_on(self.link.close());
        let Self { runtime, link, .. } = self;
        drop(link);
        // The session has stopped; a blocking task still running (a reader of a worker that
        // will never answer) must not keep the process from exiting.
        runtime.shutdown_timeout(SHUTDOWN);
        Ok(0)
    }

    fn banner(&mut self, opened: Opened) {
        let title = self.render.palette.paint(Tone::Bold, "agent");
        let line = format!(
            "{title} · session {} · {} · {} · /help for commands",
            self.link.session(),
            inert(&self.link.model()),
            self.link.transport()
        );
        self.render.line(&line);
        if opened.missed {
            self.render
                .note("no earlier session in this directory: this is a new one");
        }
        if opened.replaying > 0 {
            self.render.note("continuing; its history:");
            let (link, render) = (&mut self.link, &mut self.render);
            self.runtime
                .block_on(turn::replay(link, render, opened.replaying));
            self.render.note("(end of history)");
        }
    }

    /// Sends `text` and shows the turn until it ends, prompting for its approvals. A refusal
    /// with a note interrupts the turn; the note is then sent as the next message.
    fn turn(&mut self, text: &str) {
        if !self.send(text) {
            return;
        }
        let mut note = None;
        loop {
            let pause = self.runtime.block_on(turn::drive(
                &mut self.link,
                &mut self.render,
                &mut self.sigint,
                &mut self.carry,
            ));
            match pause {
                Pause::Approval(ask) => note = self.approve(&ask).or(note),
                Pause::Finished(_) => match note.take() {
                    Some(text) => {
                        let shown = self
                            .render
                            .palette
                            .paint(Tone::Bold, &format!("{PROMPT}{text}"));
                        self.render.line(&shown);
                        if !self.send(&text) {
                            return;
                        }
                    }
                    None => return,
                },
                Pause::Stopped => {
                    // The daemon went away mid-turn: its turn was saved as interrupted.
                    match self.runtime.block_on(self.link.recover()) {
                        Ok(true) => self.notice(),
                        Ok(false) => self.render.error("the session stopped"),
                        Err(e) => self.render.error(&e.to_string()),
                    }
                    return;
                }
            }
        }
    }

    /// Gives the session the message `text`; whether it took it.
    fn send(&mut self, text: &str) -> bool {
        self.render.sent = Some(text.to_owned());
        let sent = self.runtime.block_on(self.link.send(text));
        self.notice();
        match sent {
            Ok(()) => true,
            Err(e) => {
                self.render.error(&e.to_string());
                false
            }
        }
    }

    /// Shows what the link has to say about itself (it connected again), if anything.
    fn notice(&mut self) {
        if let Some(notice) = self.link.notice() {
            self.render.note(&notice);
        }
    }

    /// Asks the user about `ask` and sends the answer; Ctrl-C denies and interrupts the turn. A
    /// refusal may come with a note for the model: the turn is interrupted, and the note is
    /// returned, to be sent as the next message (the approval reply itself carries no text).
    fn approve(&mut self, ask: &ApprovalRequested) -> Option<String> {
        let width = crate::approval_view::columns(std::io::stdout());
        let question = approval::question(ask, self.render.palette, width);
        self.render.line(&question);
        let (decision, interrupt) = loop {
            match self.editor.read(approval::PROMPT) {
                Ok(Input::Line(answer)) => match approval::parse(&answer) {
                    Some(decision) => break (decision, false),
                    None => self.render.note("answer y (once), a (always) or n (no)"),
                },
                Ok(Input::Interrupted) => break (ApprovalDecision::Deny, true),
                Ok(Input::End) | Err(_) => break (ApprovalDecision::Deny, false),
            }
        };
        let note = match (decision, interrupt) {
            (ApprovalDecision::Deny, false) => match self.editor.read(approval::NOTE_PROMPT) {
                Ok(Input::Line(note)) if !note.trim().is_empty() => Some(note.trim().to_owned()),
                _ => None,
            },
            _ => None,
        };
        if note.is_some() {
            // Once the refusal is the call's result, the turn is interrupted (see `Carry`).
            self.carry.interrupt_after = Some(ask.call.id.clone());
        }
        let link = &mut self.link;
        let result = self.runtime.block_on(async {
            link.approve(ask.approval, decision).await?;
            if interrupt {
                link.interrupt().await?;
            }
            Ok::<_, super::link::LinkError>(())
        });
        if let Err(e) = result {
            self.render.error(&e.to_string());
            return None;
        }
        note
    }

    /// Carries out a slash command.
    fn slash(&mut self, command: Slash) {
        match command {
            Slash::Help => {
                for line in slash::HELP.lines() {
                    self.render.line(line);
                }
                if let Some(log) = crate::cli::log_file::path() {
                    let line = format!("logs: {}", inert_line(&log.display().to_string()));
                    self.render.line(&line);
                }
            }
            Slash::Todos => {
                for line in render::todo_list(&self.render.todos) {
                    self.render.line(&line);
                }
            }
            Slash::Sessions => self.sessions(),
            Slash::Resume(Some(id)) => self.resume(&id),
            Slash::Resume(None) => self
                .render
                .error("/resume needs a session id (see /sessions)"),
            Slash::Model(None) => {
                let line = format!("model: {}", inert(&self.link.model()));
                self.render.line(&line);
            }
            Slash::Model(Some(name)) => self.change(Change::Model(&name)),
            Slash::Approval(None) => {
                let line = format!("approval mode: {}", slash::mode_name(self.link.approval()));
                self.render.line(&line);
            }
            Slash::Approval(Some(name)) => self.set_approval(&name),
            Slash::Compact => self.compact(),
            Slash::New => self.renew(false),
            Slash::Delete(ids) if ids.is_empty() => self.renew(true),
            Slash::Delete(ids) => self.delete(&ids),
            Slash::Quit => {}
            Slash::Unknown(what) => {
                let line = format!(
                    "unknown command {}: /help lists them (to send it as a message, start it with //)",
                    inert(&what)
                );
                self.render.error(&line);
            }
        }
    }

    /// Compacts the history now and shows the `context_compacted` it ends with.
    fn compact(&mut self) {
        self.render
            .note("compacting the history (one model call to summarise it)…");
        self.change(Change::Compact);
    }

    /// Changes the approval mode to the one `name` names; an unknown one is refused here.
    fn set_approval(&mut self, name: &str) {
        match slash::mode(name) {
            Ok(mode) => self.change(Change::Approval(mode)),
            Err(why) => self.render.error(&why),
        }
    }

    /// Asks the session for `change` and shows its events up to the one the change ends with
    /// (`context_compacted`, `approval_mode_changed`, `model_changed`), or why it was refused.
    fn change(&mut self, change: Change<'_>) {
        let (link, render) = (&mut self.link, &mut self.render);
        let done = self.runtime.block_on(async {
            let ends: fn(&Event) -> bool = match change {
                Change::Compact => {
                    link.compact().await?;
                    |e| matches!(e, Event::ContextCompacted(_))
                }
                Change::Approval(mode) => {
                    link.set_approval(mode).await?;
                    |e| matches!(e, Event::ApprovalModeChanged(_))
                }
                Change::Model(name) => {
                    link.set_model(name).await?;
                    |e| matches!(e, Event::ModelChanged(_))
                }
            };
            turn::settle(link, render, ends).await;
            Ok::<_, super::link::LinkError>(())
        });
        if let Err(e) = done {
            self.render.error(&e.to_string());
        }
    }

    fn sessions(&mut self) {
        match self.runtime.block_on(self.link.sessions()) {
            Ok(list) if list.is_empty() => self.render.note("no sessions"),
            Ok(list) => {
                for s in list {
                    let here = if s.id == self.link.session().as_str() {
                        "*"
                    } else {
                        " "
                    };
                    let line = format!(
                        "{here} {}  {:<12}  {}  {}",
                        s.id,
                        s.state,
                        inert_line(&s.workspace.display().to_string()),
                        inert_line(s.title.as_deref().unwrap_or("")),
                    );
                    self.render.line(&line);
                }
            }
            Err(e) => self.render.error(&e.to_string()),
        }
    }

    /// Goes on in a new session here (`/new`); with `delete_old` the one left is deleted
    /// (`/delete` alone).
    fn renew(&mut self, delete_old: bool) {
        let old = self.link.session().clone();
        match self.runtime.block_on(self.link.renew(delete_old)) {
            Ok(()) => {
                let what = if delete_old { "deleted" } else { "left" };
                let line = format!(
                    "{what} session {old}; this is a new one: {}",
                    self.link.session()
                );
                self.render.note(&line);
            }
            Err(e) => self.render.error(&e.to_string()),
        }
    }

    /// Deletes the sessions `ids` (the open one: as `/delete` alone).
    fn delete(&mut self, ids: &[String]) {
        for id in ids {
            if id == self.link.session().as_str() {
                self.renew(true);
                continue;
            }
            match self.runtime.block_on(self.link.delete(id)) {
                Ok(()) => self.render.note(&format!("deleted session {}", inert(id))),
                Err(e) => self.render.error(&format!("{}: {e}", inert(id))),
            }
        }
    }

    fn resume(&mut self, id: &str) {
        let link = &mut self.link;
        let render = &mut self.render;
        let resumed = self.runtime.block_on(async {
            let count = link.resume(id).await?;
            render.note(&format!("resumed session {id}; its history:"));
            turn::replay(link, render, count).await;
            Ok::<_, super::link::LinkError>(())
        });
        match resumed {
            Ok(()) => self.render.note("(end of history)"),
            Err(e) => self.render.error(&e.to_string()),
        }
    }
}
