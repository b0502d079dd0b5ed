//! The grammar gate: the policy allows a command only if its text lies in a subset of bash where
//! the parser's reading is bash's.
//!
//! The parser (tree-sitter-bash) is a good bash grammar, not bash. Where the two differ — a CR
//! that bash reads as a word character and the parser as a line end, a here-document delimiter
//! quoted mid-word, a substitution in a `${…}` operand — a command can run what the policy never
//! saw. Listing those differences is never finished, so the gate turns it around: [`table`] lists
//! what the subset admits (bytes per lexical context, `$` forms, here-document forms,
//! parameter-expansion operators and their operands), each with its reason; [`check`] walks the
//! text through bash's contexts and names the first thing no entry admits. The analysis then
//! records an `ask` for it (never a deny, never an allow); the text is still parsed and rated, so
//! a deny found in it stays a deny. The differential check against real bash
//! (`tests/differential*`) generates text across bash's lexical grammar and requires every
//! disagreement it finds to lie outside the subset.

mod scan;
pub mod table;
#[cfg(test)]
mod tests;

use table::Context;

/// Something outside the subset, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outside {
    /// Byte offset in the text checked.
    pub at: usize,
    /// What it is.
    pub construct: Construct,
}

/// A construct outside the subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Construct {
    /// A byte the context does not admit.
    Byte(Context),
    /// A NUL byte: bash's `-c` string ends there.
    Nul,
    /// A `$` followed by something no `$` form admits.
    Dollar,
    /// `${!…}` or an operator not in the table (`@`, …).
    ParamOperator,
    /// A parameter name bash would not read as one.
    ParamName,
    /// A subscript other than digits, `@` or `*`.
    ParamSubscript,
    /// An operand holding a substitution, a quote, a backslash or a backquote.
    ParamOperand,
    /// `$(( ))` holding more than numbers, names and operators.
    Arithmetic,
    /// `((` at the start of a command that is not plain arithmetic.
    DoubleParen,
    /// A backslash or a quote inside backquotes.
    BackquoteQuoting,
    /// A comment inside a substitution.
    CommentInSubstitution,
    /// `case` inside a substitution (its `)` closes the substitution for some readers).
    CaseInSubstitution,
    /// A here-document delimiter that is neither a plain word nor one wholly quoted.
    HeredocDelimiter,
    /// A here-document with no delimiter line.
    HeredocUnterminated,
    /// A newline inside quotes or a substitution before a pending here-document's body.
    HeredocLineInside,
    /// A here-document inside backquotes or inside another body.
    HeredocNested,
    /// A backquote in an unquoted here-document body.
    HeredocBackquote,
    /// A backslash-newline in a here-document body.
    HeredocContinuation,
    /// A quote or substitution that never closes.
    Unterminated(&'static str),
    /// A `#` inside a word of digits or after `)`: the parser reads `1#x` as a number in base 1.
    HashAfterNumber,
    /// A backslash before a tab: bash reads one word, the parser two.
    EscapedTab,
    /// A body line that starts with the delimiter but is longer (`EOF'`).
    HeredocDelimiterPrefix,
    /// A backslash at the very end.
    TrailingBackslash,
    /// Contexts nested too deep to follow.
    TooDeep,
}

impl Construct {
    /// What the construct is and why it is outside the subset, for a reason.
    pub fn describe(self) -> String {
        let s = match self {
            Construct::Byte(context) => {
                return format!(
                    "a byte {} does not admit: the grammar gate admits only printable ASCII, tab, newline and UTF-8 text outside single quotes ({})",
                    context.name(),
                    table::BYTES
                        .iter()
                        .find(|b| b.context == context)
                        .map_or("", |b| b.why)
                );
            }
            Construct::Nul => "a NUL byte: bash's command text ends there",
            Construct::Dollar => {
                "a `$` form the grammar gate does not admit (a name, a digit, `@*#?-$!`, `{`, `(`, or a literal `$` before a blank)"
            }
            Construct::ParamOperator => {
                "a ${…} operator the grammar gate does not admit (indirection `${!…}` and transformations `${…@…}` evaluate values)"
            }
            Construct::ParamName => "a ${…} parameter that is not a name, digits or `@*#?-$`",
            Construct::ParamSubscript => "a ${…} subscript other than digits, `@` or `*`",
            Construct::ParamOperand => {
                "a substitution, quote, backslash or backquote in the operand of a ${…} operator: bash expands the operand, so a substitution there runs (only letters, digits, glob characters and $NAME are admitted)"
            }
            Construct::Arithmetic => {
                "arithmetic holding more than numbers, names and operators (write `$( (` for a subshell)"
            }
            Construct::DoubleParen => {
                "`((` that is not plain arithmetic: bash and the parser may disagree on whether it is a nested subshell (write `( (`)"
            }
            Construct::BackquoteQuoting => {
                "a backslash or a quote inside backquotes: bash ends the backquotes at the next backquote whatever quotes it is in (use $( ))"
            }
            Construct::CommentInSubstitution => {
                "a comment inside a substitution: where it ends differs between readers"
            }
            Construct::CaseInSubstitution => {
                "`case` inside a substitution: its pattern's `)` can end the substitution for some readers"
            }
            Construct::HeredocDelimiter => {
                "a here-document delimiter that is neither a plain word nor one wholly in quotes (`E\"O\"F`, `$'EOF'`, `\\EOF`): bash removes the quotes and ends the body at the bare word"
            }
            Construct::HeredocUnterminated => "a here-document with no delimiter line",
            Construct::HeredocLineInside => {
                "a newline inside quotes or a substitution before a here-document's body: bash starts the body only after the command's own newline"
            }
            Construct::HeredocNested => "a here-document inside backquotes or another body",
            Construct::HeredocBackquote => {
                "a backquote in an unquoted here-document body: bash runs it (use $( ) or quote the delimiter)"
            }
            Construct::HeredocContinuation => {
                "a backslash at the end of a here-document line: in an unquoted body bash joins the lines, which can move the delimiter line, and the policy does not follow either kind"
            }
            Construct::Unterminated(what) => {
                return format!("{what} that never closes");
            }
            Construct::TrailingBackslash => "a backslash at the end of the text",
            Construct::HashAfterNumber => {
                "a `#` inside a word of digits or after `)`: bash reads it as text, the parser as a number in base N (`2#101`)"
            }
            Construct::EscapedTab => {
                "a backslash before a tab: bash reads one word, the parser two (quote the tab)"
            }
            Construct::HeredocDelimiterPrefix => {
                "a here-document line that starts with the delimiter word but is longer: the parser may end the body there"
            }
            Construct::TooDeep => "quotes and substitutions nested too deep to follow",
        };
        s.to_owned()
    }
}

/// Whether `text` lies in the subset; the first construct outside it otherwise.
pub fn check(text: &str) -> Result<(), Outside> {
    scan::Scan::new(text).run()
}

/// The reason an approval screen shows for `outside` in `text`: the construct, its byte offset
/// and the text from there, escaped so that no control byte hides or rewrites it.
pub fn explain(text: &str, outside: &Outside) -> (String, String) {
    let mut from = outside.at.min(text.len());
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let what = escape(&text[from..], 60);
    let why = format!(
        "outside the grammar gate's subset at byte {}: {}",
        outside.at,
        outside.construct.describe()
    );
    (what, why)
}

/// `text` with control bytes, DEL and invisible or bidirectional characters written as escapes
/// (`\r`, `\x0b`, `\u{202e}`), cut after `max` characters.
pub fn escape(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0b}' => out.push_str("\\v"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || invisible(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Characters that show as nothing or reorder what follows.
fn invisible(c: char) -> bool {
    matches!(c as u32, 0xa0 | 0xad | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x2069 | 0xfeff)
}
