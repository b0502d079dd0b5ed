//! The input line: `rustyline` for editing (Emacs keys, ↑/↓ history, Ctrl-R search), with the
//! history kept in the user's state directory.
//!
//! Why rustyline rather than reedline: the REPL reads one line at a time and otherwise prints
//! the session's events itself; rustyline's blocking `readline` fits that exactly, leaves the
//! terminal in its ordinary mode between lines (so Ctrl-C during a turn is a plain SIGINT), and
//! reads plain lines when stdin is not a terminal. reedline is built for a full-screen,
//! always-in-raw-mode shell (nushell) and brings crossterm and its event loop with it.

use rustyline::error::ReadlineError;
use rustyline::history::{FileHistory, History as _};
use std::path::PathBuf;

/// What reading a line gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// A line (without its newline).
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D, or the end of stdin.
    End,
}

/// The line editor and where its history is kept.
#[derive(Debug)]
pub struct LineEditor {
    /// The editor.
    editor: rustyline::Editor<(), FileHistory>,
    /// The history file (none without a state directory).
    history: Option<PathBuf>,
}

impl LineEditor {
    /// An editor whose history is kept in `history` (loaded now, if it exists).
    pub fn new(history: Option<PathBuf>) -> Result<Self, ReadlineError> {
        let config = rustyline::Config::builder()
            .auto_add_history(false)
            .max_history_size(2000)?
            .history_ignore_dups(true)?
            .build();
        let mut editor = rustyline::Editor::with_config(config)?;
        if let Some(path) = &history {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            // A first run has no history yet: not an error.
            let _ = editor.load_history(path);
        }
        Ok(Self { editor, history })
    }

    /// Reads one line after `prompt`.
    pub fn read(&mut self, prompt: &str) -> Result<Input, ReadlineError> {
        match self.editor.readline(prompt) {
            Ok(line) => Ok(Input::Line(line)),
            Err(ReadlineError::Interrupted) => Ok(Input::Interrupted),
            Err(ReadlineError::Eof) => Ok(Input::End),
            Err(e) => Err(e),
        }
    }

    /// Adds `line` to the history, and to the history file.
    pub fn remember(&mut self, line: &str) {
        if self.editor.add_history_entry(line).unwrap_or(false)
            && let Some(path) = &self.history
            && let Err(e) = self.editor.history_mut().append(path)
        {
            tracing::warn!("cannot write the history file {}: {e}", path.display());
        }
    }
}
