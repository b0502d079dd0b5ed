//! Reading the corpus files `tests/data/agent-harmless.txt` and `tests/data/adversarial.txt`.
//!
//! Format (both files): one entry per line, verbatim; `⏎` stands for a newline inside an entry;
//! blank lines and `#` lines are comments; `## family: NAME | …` (harmless) or `## class: NAME | …`
//! (adversarial) starts a group. In the adversarial file `@write_file PATH` and `@str_replace PATH`
//! are file-tool writes instead of bash commands.
#![allow(dead_code)] // shared by several test crates, each using part of it

use policy::{Context, Verdict};
use std::path::Path;

/// The harmless corpus.
pub const HARMLESS: &str = include_str!("../data/agent-harmless.txt");
/// The adversarial corpus.
pub const ADVERSARIAL: &str = include_str!("../data/adversarial.txt");

/// What an entry asks the policy to rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A bash command.
    Bash,
    /// A `write_file` to a path.
    WriteFile,
    /// A `str_replace` on a path.
    StrReplace,
}

/// One corpus entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The family or class it belongs to.
    pub group: String,
    /// Its line in the file (1-based).
    pub line: usize,
    /// What it is.
    pub kind: Kind,
    /// The command (newlines restored) or the path.
    pub text: String,
}

/// A family or class header.
#[derive(Debug, Clone)]
pub struct Group {
    /// Its name.
    pub name: String,
    /// The rest of its header line (attacks, source).
    pub about: String,
}

/// A parsed corpus.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The groups, in file order.
    pub groups: Vec<Group>,
    /// The entries, in file order.
    pub entries: Vec<Entry>,
}

/// Parses a corpus whose groups start with `## {header}: NAME | …`.
pub fn parse(text: &str, header: &str) -> Result<Corpus, String> {
    let prefix = format!("## {header}:");
    let mut groups: Vec<Group> = Vec::new();
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(rest) = line.strip_prefix(&prefix) {
            let (name, about) = rest.split_once('|').unwrap_or((rest, ""));
            let name = name.trim().to_owned();
            if name.is_empty() || groups.iter().any(|g| g.name == name) {
                return Err(format!(
                    "line {n}: empty or repeated {header} name {name:?}"
                ));
            }
            groups.push(Group {
                name,
                about: about.trim().to_owned(),
            });
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(group) = groups.last() else {
            return Err(format!("line {n}: entry before any `{prefix}` header"));
        };
        let (kind, body) = if let Some(p) = line.strip_prefix("@write_file ") {
            (Kind::WriteFile, p)
        } else if let Some(p) = line.strip_prefix("@str_replace ") {
            (Kind::StrReplace, p)
        } else if line.starts_with('@') {
            return Err(format!("line {n}: unknown directive {line:?}"));
        } else {
            (Kind::Bash, line)
        };
        entries.push(Entry {
            group: group.name.clone(),
            line: n,
            kind,
            text: body.replace('⏎', "\n"),
        });
    }
    Ok(Corpus { groups, entries })
}

impl Corpus {
    /// The bash commands.
    pub fn bash(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.kind == Kind::Bash)
    }
}

/// A command as one printable line: newlines shown as `⏎`.
pub fn shown(command: &str) -> String {
    command.replace('\n', "⏎")
}

/// The context every corpus is rated in (the same as the project's other tables).
pub fn ctx() -> Context<'static> {
    Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    }
}

/// `allow` / `ask` / `deny` as text.
pub fn verdict_name(v: Verdict) -> String {
    v.to_string()
}
