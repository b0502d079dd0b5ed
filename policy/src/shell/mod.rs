//! Shell analysis: from command text to every simple command it would run.
//!
//! The text is parsed with tree-sitter-bash, a real bash grammar that never gives up on bad input
//! (it marks what it could not parse with `ERROR` nodes, which we treat as "cannot resolve", i.e.
//! ask at best). From the tree we collect [`Finding`]s: each simple command with its words after
//! quote removal ([`words`]), each redirection target, and each thing we cannot fully resolve. Wrappers
//! (`env`, `sudo`, `timeout`, `xargs`, `find -exec`, …) and `sh -c` / `eval` payloads are unwrapped
//! into further findings ([`wrappers`]). Rating the findings against rules is the engine's job.
//!
//! Before parsing, the text must lie in the subset of bash the parser reads as bash does, or the
//! analysis records an ask ([`gate`]). Line continuations are joined the way bash joins them ([`continuation`]);
//! bash's corners that evaluate code in values are found by [`bashisms`]; environment prefixes
//! pass only by allowlist ([`env`]).

mod bashisms;
mod continuation;
pub mod env;
pub mod gate;
mod nodes;
mod parse;
pub(crate) use parse::excerpt_of;
pub use parse::{PARSE_BUDGET, parse_counting};
pub mod words;
pub(crate) mod wrappers;

use crate::specs::Specs;
pub use words::Word;

/// Longest command text analysed; anything longer is "ask" without parsing.
pub const MAX_COMMAND_LEN: usize = 10_000;

/// How deep `sh -c`, `eval` and wrappers may nest before we stop and ask.
pub const MAX_DEPTH: usize = 8;

/// Deepest bracket nesting parsed; real commands stay far below it, and refusing deeper text
/// before parsing bounds the time a verdict can take.
pub const MAX_NESTING: usize = 64;

/// Most command separators (`;`, `|`, `&`, newline) parsed; real commands have a handful.
pub const MAX_SEPARATORS: usize = 256;

/// Most findings collected; past it the command is "ask" as a whole.
pub const MAX_FINDINGS: usize = 1000;

/// Something the command would do, to be rated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A simple command it would run.
    Command(CommandUse),
    /// A file a redirection would open.
    Redirect(RedirectUse),
    /// A part that cannot be fully resolved statically.
    Unresolved {
        /// The text concerned.
        what: String,
        /// Why it cannot be resolved.
        why: std::borrow::Cow<'static, str>,
    },
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandUse {
    /// Its words after quote removal, name first.
    pub argv: Vec<Word>,
    /// A wrapper (`env`, `timeout`, `sh -c`, …) that runs another command found separately: its own
    /// line counts only where a rule names it explicitly, never by the default verdict.
    pub transparent: bool,
    /// Why this command can never be allowed silently, if so.
    pub cap: Option<&'static str>,
    /// It runs inside a loop or a function body (a `cd` there may apply to commands written
    /// before it).
    pub in_loop: bool,
}

impl Finding {
    /// A part that cannot be resolved, quoting (the start of) `what`.
    pub fn unresolved(what: &str, why: &'static str) -> Self {
        Finding::Unresolved {
            what: parse::excerpt_of(what),
            why: why.into(),
        }
    }
}

impl CommandUse {
    /// The words joined by spaces: what rules match against (the name reduced to its base name).
    pub fn line(&self) -> String {
        let mut line = String::new();
        self.line_into(&mut line);
        line
    }

    /// [`line`](Self::line), written into `line` (cleared first): one buffer serves every
    /// command of a verdict.
    pub fn line_into(&self, line: &mut String) {
        line.clear();
        line.reserve(self.argv.iter().map(|w| w.text.len() + 1).sum());
        for (i, w) in self.argv.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            if i == 0 {
                line.push_str(w.text.rsplit('/').next().unwrap_or(&w.text));
            } else {
                line.push_str(&w.text);
            }
        }
    }
}

/// One redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectUse {
    /// The file.
    pub target: Word,
    /// Opened for writing (`>`, `>>`, `&>`, `>|`, `<>`), else for reading (`<`).
    pub write: bool,
}

/// Everything found in one command text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// What it would do.
    pub findings: Vec<Finding>,
}

/// The state of one analysis: the specs wrappers are read with, where the walk is, what it found.
#[derive(Debug)]
pub(crate) struct Walk<'a> {
    /// Option specs (for wrappers' own options).
    pub specs: &'a Specs,
    /// `sh -c` / `eval` / wrapper levels above.
    pub depth: usize,
    /// What was found so far.
    pub out: Vec<Finding>,
    /// Loop variables with known values.
    pub scope: words::Scope,
    /// The shell is POSIX, not bash: bash-only constructs ask.
    pub posix: bool,
    /// The command being expanded runs in a loop or function.
    pub in_loop: bool,
    /// What the command being expanded reads on standard input, if it is known to be paths.
    pub stdin_paths: Option<wrappers::Producer>,
}

/// Analyses command text as bash reads it. Never fails: what cannot be analysed becomes an
/// `Unresolved` finding.
pub fn analyze(text: &str, specs: &Specs) -> Analysis {
    analyze_as(text, specs, false)
}

/// Analyses command text; with `posix`, for a shell that is not bash (every bash-only construct
/// asks).
pub fn analyze_as(text: &str, specs: &Specs, posix: bool) -> Analysis {
    let mut walk = Walk {
        specs,
        depth: 0,
        // A compound command holds a dozen parts or two: no regrowing on the way.
        out: Vec::with_capacity(16),
        scope: words::Scope::default(),
        posix,
        in_loop: false,
        stdin_paths: None,
    };
    if text.len() > MAX_COMMAND_LEN {
        walk.out.push(Finding::Unresolved {
            what: format!("{} bytes of command text", text.len()),
            why: "the command is longer than 10000 characters".into(),
        });
    } else if let Some(why) = too_complex(text) {
        walk.out.push(Finding::unresolved(text, why));
    } else {
        parse::analyze_text(text, &mut walk);
    }
    Analysis { findings: walk.out }
}

/// Why `text` is refused before parsing, if it is: bracket nesting deeper than [`MAX_NESTING`] or
/// more than [`MAX_SEPARATORS`] separators. One pass, ignoring quoting, so it may over-count but
/// never under-count; this bounds the time any verdict takes.
fn too_complex(text: &str) -> Option<&'static str> {
    let (mut depth, mut separators) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some("brackets nest more than 64 levels deep");
                }
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            b';' | b'|' | b'&' | b'\n' => {
                separators += 1;
                if separators > MAX_SEPARATORS {
                    return Some("the command has more than 256 separators (; | & newline)");
                }
            }
            _ => {}
        }
    }
    None
}
