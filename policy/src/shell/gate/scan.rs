//! The gate's scanner: walks the text through bash's lexical contexts the way bash's reader
//! does (quotes, substitutions, parameter expansions, comments, here-documents), and stops at the
//! first thing the table (`table.rs`) does not admit. It decides nothing about what a command
//! does; it only says whether the text lies in the subset where the parser reads what bash reads.

mod heredoc;
mod param;

use super::table::{self, Context, Dollar};
use super::{Construct, Outside};

/// Deepest nesting of contexts followed (`$(` in `"` in `$(` …); deeper text is refused.
const MAX_DEPTH: usize = 100;

/// Where a code context ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// At the end of the text (or of the slice being scanned).
    Eof,
    /// At an unmatched `)`: `$( )`, `<( )`, `>( )`.
    Paren,
}

/// A here-document whose body starts after the next newline of the code that opened it.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// The delimiter word (quotes removed), as a range of the text.
    delim: (usize, usize),
    quoted: bool,
    strip_tabs: bool,
    /// Where its `<<` is, for messages.
    at: usize,
}

type Scanned = Result<(), Outside>;

/// The scanner's state.
#[derive(Debug)]
pub(super) struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    /// Where the slice being scanned ends (a backquoted body or a here-document body is scanned
    /// as its own slice, as bash reads it).
    end: usize,
    pending: Vec<Pending>,
    /// The code level whose newline starts the pending bodies.
    pending_level: usize,
    /// Levels of code entered so far (each gets a number).
    levels: usize,
    depth: usize,
    /// Enclosing substitutions (`$( )`, `<( )`, backquotes).
    subst: usize,
    /// Inside backquotes or a here-document body: no here-documents there.
    no_heredoc: bool,
}

fn outside(at: usize, construct: Construct) -> Outside {
    Outside { at, construct }
}

impl<'a> Scan<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self {
            b: text.as_bytes(),
            i: 0,
            end: text.len(),
            pending: Vec::new(),
            pending_level: 0,
            levels: 0,
            depth: 0,
            subst: 0,
            no_heredoc: false,
        }
    }

    /// Scans the whole text.
    pub(super) fn run(mut self) -> Scanned {
        if let Some(at) = self.b.iter().position(|&c| c == 0) {
            return Err(outside(at, Construct::Nul));
        }
        self.code(End::Eof)?;
        match self.pending.first() {
            Some(p) => Err(outside(p.at, Construct::HeredocUnterminated)),
            None => Ok(()),
        }
    }

    fn peek(&self) -> Option<u8> {
        (self.i < self.end).then(|| self.b[self.i])
    }

    fn at(&self, k: usize) -> Option<u8> {
        (self.i + k < self.end).then(|| self.b[self.i + k])
    }

    fn starts(&self, s: &[u8]) -> bool {
        self.b
            .get(self.i..self.end)
            .is_some_and(|r| r.starts_with(s))
    }

    /// Checks the byte at `i` against `context` and steps over it.
    fn byte(&mut self, context: Context) -> Scanned {
        let c = self.b[self.i];
        if !table::admits(context, c) {
            return Err(outside(self.i, Construct::Byte(context)));
        }
        self.i += 1;
        Ok(())
    }

    /// A newline outside the code that opened pending here-documents: bash starts their bodies
    /// only at a newline of that code, a parser may start them at any.
    fn newline_elsewhere(&self) -> Scanned {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(outside(self.i, Construct::HeredocLineInside))
        }
    }

    fn enter(&mut self) -> Result<usize, Outside> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(outside(self.i, Construct::TooDeep));
        }
        self.levels += 1;
        Ok(self.levels)
    }

    /// Unquoted code until `end`.
    fn code(&mut self, end: End) -> Scanned {
        let level = self.enter()?;
        let start = self.i;
        let mut parens = 0usize;
        let mut word_start = true;
        // Where the current word began (for a `#` inside it).
        let mut word_begin = self.i;
        loop {
            let Some(c) = self.peek() else {
                if end == End::Paren {
                    return Err(outside(start, Construct::Unterminated("$( … )")));
                }
                if parens > 0 {
                    return Err(outside(start, Construct::Unterminated("( … )")));
                }
                break;
            };
            let mut next_word_start = false;
            if word_start {
                word_begin = self.i;
            }
            match c {
                b'\n' => {
                    if !self.pending.is_empty() && self.pending_level != level {
                        return Err(outside(self.i, Construct::HeredocLineInside));
                    }
                    self.i += 1;
                    self.bodies()?;
                    next_word_start = true;
                }
                b' ' | b'\t' | b';' | b'&' | b'|' | b'>' => {
                    self.i += 1;
                    if c == b'>' && self.peek() == Some(b'(') {
                        self.i += 1;
                        self.nested_code()?;
                    }
                    next_word_start = true;
                }
                b'<' => {
                    if self.starts(b"<<<") {
                        self.i += 3;
                    } else if self.starts(b"<<") {
                        self.heredoc(level)?;
                    } else if self.at(1) == Some(b'(') {
                        self.i += 2;
                        self.nested_code()?;
                    } else {
                        self.i += 1;
                    }
                    next_word_start = true;
                }
                b'(' => {
                    if word_start && self.at(1) == Some(b'(') {
                        self.i += 2;
                        self.arithmetic(Construct::DoubleParen)?;
                    } else {
                        self.i += 1;
                        parens += 1;
                    }
                    next_word_start = true;
                }
                b')' => {
                    if parens > 0 {
                        parens -= 1;
                    } else if end == End::Paren {
                        if !self.pending.is_empty() && self.pending_level == level {
                            return Err(outside(self.i, Construct::HeredocUnterminated));
                        }
                        self.i += 1;
                        self.depth -= 1;
                        return Ok(());
                    }
                    // At the top level an unmatched `)` ends a `case` pattern.
                    self.i += 1;
                    next_word_start = true;
                }
                b'#' if !word_start && self.after_number_or_paren(word_begin) => {
                    return Err(outside(self.i, Construct::HashAfterNumber));
                }
                b'#' if word_start => {
                    if self.subst > 0 {
                        return Err(outside(self.i, Construct::CommentInSubstitution));
                    }
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.byte(Context::Comment)?;
                    }
                }
                b'\\' => match self.at(1) {
                    None => return Err(outside(self.i, Construct::TrailingBackslash)),
                    // A line continuation: bash removes it before reading words.
                    Some(b'\n') => {
                        self.i += 2;
                        next_word_start = word_start;
                    }
                    Some(b'\t') => return Err(outside(self.i, Construct::EscapedTab)),
                    Some(_) => {
                        self.i += 1;
                        self.byte(Context::Unquoted)?;
                    }
                },
                b'\'' => {
                    self.i += 1;
                    self.single()?;
                }
                b'"' => {
                    self.i += 1;
                    self.double()?;
                }
                b'`' => self.backquote()?,
                b'$' => self.dollar(false)?,
                _ => {
                    if word_start && self.subst > 0 && self.keyword(b"case") {
                        return Err(outside(self.i, Construct::CaseInSubstitution));
                    }
                    self.byte(Context::Unquoted)?;
                }
            }
            word_start = next_word_start;
        }
        self.depth -= 1;
        Ok(())
    }

    /// Whether the word from `begin` to `i` is all digits (the parser reads `1#x` as a number in
    /// base 1) or ends a substitution or arithmetic (`$((1))#`).
    fn after_number_or_paren(&self, begin: usize) -> bool {
        let word = &self.b[begin.min(self.i)..self.i];
        word.last() == Some(&b')') || (!word.is_empty() && word.iter().all(u8::is_ascii_digit))
    }

    /// Whether the word at `i` is `word` alone.
    fn keyword(&self, word: &[u8]) -> bool {
        self.starts(word)
            && self
                .at(word.len())
                .is_none_or(|c| matches!(c, b' ' | b'\t' | b'\n' | b';'))
    }

    /// `$( )`, `<( )`, `>( )` after their opening bracket.
    fn nested_code(&mut self) -> Scanned {
        self.subst += 1;
        self.code(End::Paren)?;
        self.subst -= 1;
        Ok(())
    }

    fn single(&mut self) -> Scanned {
        let start = self.i - 1;
        loop {
            match self.peek() {
                None => return Err(outside(start, Construct::Unterminated("'…'"))),
                Some(b'\'') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\n') => {
                    self.newline_elsewhere()?;
                    self.i += 1;
                }
                Some(_) => self.byte(Context::SingleQuoted)?,
            }
        }
    }

    fn ansi_c(&mut self) -> Scanned {
        let start = self.i - 2;
        loop {
            match self.peek() {
                None => return Err(outside(start, Construct::Unterminated("$'…'"))),
                Some(b'\'') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') if self.at(1).is_some() => {
                    self.i += 1;
                    if self.peek() == Some(b'\n') {
                        self.newline_elsewhere()?;
                    }
                    self.byte(Context::AnsiC)?;
                }
                Some(b'\n') => {
                    self.newline_elsewhere()?;
                    self.i += 1;
                }
                Some(_) => self.byte(Context::AnsiC)?,
            }
        }
    }

    fn double(&mut self) -> Scanned {
        self.enter()?;
        let start = self.i - 1;
        loop {
            match self.peek() {
                None => return Err(outside(start, Construct::Unterminated("\"…\""))),
                Some(b'"') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                Some(b'\\') => match self.at(1) {
                    None => return Err(outside(self.i, Construct::TrailingBackslash)),
                    Some(b'\n') => {
                        self.newline_elsewhere()?;
                        self.i += 2;
                    }
                    Some(_) => {
                        self.i += 1;
                        self.byte(Context::DoubleQuoted)?;
                    }
                },
                Some(b'\n') => {
                    self.newline_elsewhere()?;
                    self.i += 1;
                }
                Some(b'`') => self.backquote()?,
                Some(b'$') => self.dollar(true)?,
                Some(_) => self.byte(Context::DoubleQuoted)?,
            }
        }
    }

    /// `` `…` ``: bash takes the text up to the next unescaped backquote as the body, whatever
    /// quotes it holds, and parses it afterwards. With no backslash and no quote in the body,
    /// every reader finds the same end; the body is then scanned as code of its own.
    fn backquote(&mut self) -> Scanned {
        let start = self.i;
        let body = start + 1;
        let Some(len) = self.b[body..self.end].iter().position(|&c| c == b'`') else {
            return Err(outside(start, Construct::Unterminated("`…`")));
        };
        let close = body + len;
        if let Some(k) = self.b[body..close]
            .iter()
            .position(|c| matches!(c, b'\\' | b'\'' | b'"'))
        {
            return Err(outside(body + k, Construct::BackquoteQuoting));
        }
        if self.b[body..close].contains(&b'\n') {
            self.i = body;
            self.newline_elsewhere()?;
        }
        let saved = (self.end, self.no_heredoc);
        self.i = body;
        self.end = close;
        self.no_heredoc = true;
        self.subst += 1;
        let scanned = self.code(End::Eof);
        self.subst -= 1;
        (self.end, self.no_heredoc) = saved;
        scanned?;
        self.i = close + 1;
        Ok(())
    }

    /// A `$` at `i`, unquoted or in double quotes or a here-document body (`quoted`).
    fn dollar(&mut self, quoted: bool) -> Scanned {
        let at = self.i;
        let next = self.at(1);
        let form = match next {
            Some(b'{') => Dollar::Brace,
            Some(b'(') if self.at(2) == Some(b'(') => Dollar::Arithmetic,
            Some(b'(') => Dollar::Substitution,
            Some(b'\'') => Dollar::AnsiC,
            Some(b'"') if quoted => Dollar::Literal,
            Some(b'"') => Dollar::Translated,
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => Dollar::Name,
            Some(c) if c.is_ascii_digit() => Dollar::Digit,
            Some(b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!') => Dollar::Special,
            None | Some(b' ' | b'\t' | b'\n') => Dollar::Literal,
            Some(_) => return Err(outside(at, Construct::Dollar)),
        };
        if !table::admits_dollar(form, quoted) {
            return Err(outside(at, Construct::Dollar));
        }
        match form {
            Dollar::Brace => {
                self.i += 2;
                self.param()
            }
            Dollar::Arithmetic => {
                self.i += 3;
                self.arithmetic(Construct::Arithmetic)
            }
            Dollar::Substitution => {
                self.i += 2;
                self.nested_code()
            }
            Dollar::AnsiC => {
                self.i += 2;
                self.ansi_c()
            }
            Dollar::Translated => {
                self.i += 2;
                self.double()
            }
            Dollar::Name => {
                self.i += 1;
                self.name();
                Ok(())
            }
            Dollar::Digit | Dollar::Special => {
                self.i += 2;
                Ok(())
            }
            Dollar::Literal => {
                self.i += 1;
                Ok(())
            }
        }
    }

    /// Steps over `[A-Za-z0-9_]*`.
    fn name(&mut self) -> usize {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.i += 1;
        }
        self.i - start
    }
}
