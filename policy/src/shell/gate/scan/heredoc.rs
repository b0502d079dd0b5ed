//! Here-documents: the delimiter forms the table admits, and the bodies read line by line as
//! bash reads them.

use super::super::Construct;
use super::super::table::{self, Context, Delimiter};
use super::{Pending, Scan, Scanned, outside};

impl Scan<'_> {
    /// `<<` or `<<-` and its delimiter word, at `i`.
    pub(super) fn heredoc(&mut self, level: usize) -> Scanned {
        let at = self.i;
        if self.no_heredoc {
            return Err(outside(at, Construct::HeredocNested));
        }
        self.i += 2;
        let strip_tabs = self.peek() == Some(b'-');
        if strip_tabs {
            self.i += 1;
        }
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
        let word = self.i;
        let quote = self.peek().filter(|&q| q == b'\'' || q == b'"');
        if quote.is_some() {
            self.i += 1;
        }
        let name_start = self.i;
        let len = self.name();
        let name_end = self.i;
        if quote.is_some() {
            if self.peek() != quote {
                return Err(outside(word, Construct::HeredocDelimiter));
            }
            self.i += 1;
        }
        let ends_word = self.peek().is_none_or(|c| {
            matches!(
                c,
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
            )
        });
        let form = if quote.is_some() {
            Delimiter::Quoted
        } else {
            Delimiter::Plain
        };
        if len == 0 || !ends_word || !table::admits_delimiter(form) {
            return Err(outside(word, Construct::HeredocDelimiter));
        }
        if !self.pending.is_empty() && self.pending_level != level {
            return Err(outside(at, Construct::HeredocLineInside));
        }
        self.pending.push(Pending {
            delim: (name_start, name_end),
            quoted: quote.is_some(),
            strip_tabs,
            at,
        });
        self.pending_level = level;
        Ok(())
    }

    /// The bodies of the pending here-documents, from `i` (just after a newline), in order.
    pub(super) fn bodies(&mut self) -> Scanned {
        for p in std::mem::take(&mut self.pending) {
            let delim = &self.b[p.delim.0..p.delim.1];
            let body = self.i;
            let mut line = body;
            let body_end = loop {
                if line >= self.end {
                    return Err(outside(p.at, Construct::HeredocUnterminated));
                }
                let eol = self.b[line..self.end]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(self.end, |k| line + k);
                let mut text = &self.b[line..eol];
                if p.strip_tabs {
                    while let [b'\t', rest @ ..] = text {
                        text = rest;
                    }
                }
                if text == delim {
                    self.i = (eol + 1).min(self.end);
                    break line;
                }
                if text.starts_with(delim) {
                    return Err(outside(line, Construct::HeredocDelimiterPrefix));
                }
                line = eol + 1;
            };
            if p.quoted {
                for k in body..body_end {
                    if !table::admits(Context::HeredocBody, self.b[k]) {
                        return Err(outside(k, Construct::Byte(Context::HeredocBody)));
                    }
                    if self.b[k] == b'\\' && self.b.get(k + 1) == Some(&b'\n') {
                        return Err(outside(k, Construct::HeredocContinuation));
                    }
                }
            } else {
                self.unquoted_body(body, body_end)?;
            }
        }
        Ok(())
    }

    /// An unquoted here-document body: bash expands `$…` and backquotes in it, and joins
    /// continuations; the scanner takes `$` forms as in double quotes and refuses the rest.
    fn unquoted_body(&mut self, body: usize, body_end: usize) -> Scanned {
        let saved = (self.i, self.end, self.no_heredoc);
        self.i = body;
        self.end = body_end;
        self.no_heredoc = true;
        let scanned = (|| {
            while let Some(c) = self.peek() {
                match c {
                    b'\\' => match self.at(1) {
                        Some(b'\n') => return Err(outside(self.i, Construct::HeredocContinuation)),
                        Some(b'$' | b'`' | b'\\') => self.i += 2,
                        _ => self.i += 1,
                    },
                    b'`' => return Err(outside(self.i, Construct::HeredocBackquote)),
                    b'$' => self.dollar(true)?,
                    _ => self.byte(Context::HeredocBody)?,
                }
            }
            Ok(())
        })();
        (self.i, self.end, self.no_heredoc) = saved;
        scanned
    }
}
