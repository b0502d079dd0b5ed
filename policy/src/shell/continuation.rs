//! Line continuations, joined the way bash joins them before it reads words.
//!
//! Bash removes a backslash-newline while reading input, everywhere except inside single quotes,
//! `$'…'`, comments and quoted here-documents, so `tr\⏎uncate` is the one word `truncate`.
//! tree-sitter-bash splits it into two, so the text is joined first. Where the join cannot be
//! certain (a here-document and a continuation in one command), the caller asks.

use std::borrow::Cow;

/// A quoting context on the way through the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// Unquoted text: top level, `$( )`, `( )` inside it.
    Code { parens: usize },
    /// Inside backquotes.
    Backquote,
    /// Inside `${ … }`.
    Param,
    /// Inside `"…"`.
    Double,
}

/// `text` with every backslash-newline bash would remove removed; `Err` when unsure.
pub fn join(text: &str) -> Result<Cow<'_, str>, &'static str> {
    if !text.contains("\\\n") {
        return Ok(Cow::Borrowed(text));
    }
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut stack = vec![Ctx::Code { parens: 0 }];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let ctx = stack.last().copied().unwrap_or(Ctx::Code { parens: 0 });
        // Backslash: a continuation is dropped; any other escape is copied whole.
        if c == b'\\' {
            match b.get(i + 1) {
                Some(b'\n') => i += 2,
                Some(&n) => {
                    out.extend_from_slice(&[c, n]);
                    i += 2;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
            continue;
        }
        if ctx == Ctx::Double {
            match c {
                b'"' => {
                    stack.pop();
                }
                b'`' => stack.push(Ctx::Backquote),
                b'$' if b.get(i + 1) == Some(&b'(') => {
                    stack.push(Ctx::Code { parens: 0 });
                    out.extend_from_slice(b"$(");
                    i += 2;
                    continue;
                }
                b'$' if b.get(i + 1) == Some(&b'{') => {
                    stack.push(Ctx::Param);
                    out.extend_from_slice(b"${");
                    i += 2;
                    continue;
                }
                _ => {}
            }
            out.push(c);
            i += 1;
            continue;
        }
        match c {
            b'\'' => {
                // Single quotes (or `$'…'` when a `$` came just before): copied verbatim.
                let ansi = out.last() == Some(&b'$');
                let end = quoted_end(b, i + 1, ansi).ok_or("an unterminated quote")?;
                out.extend_from_slice(&b[i..end]);
                i = end;
                continue;
            }
            b'"' => stack.push(Ctx::Double),
            b'`' if ctx == Ctx::Backquote => {
                stack.pop();
            }
            b'`' => stack.push(Ctx::Backquote),
            b'#' if starts_word(&out) && ctx != Ctx::Param => {
                // A comment runs to the newline; a backslash before that newline is text.
                let end = b[i..]
                    .iter()
                    .position(|&x| x == b'\n')
                    .map_or(b.len(), |p| i + p);
                out.extend_from_slice(&b[i..end]);
                i = end;
                continue;
            }
            b'<' if b.get(i + 1) == Some(&b'<') && b.get(i + 2) == Some(&b'<') => {
                out.extend_from_slice(b"<<<");
                i += 3;
                continue;
            }
            b'<' if b.get(i + 1) == Some(&b'<') => {
                return Err("a here-document and a line continuation in one command");
            }
            b'$' if b.get(i + 1) == Some(&b'(') => {
                stack.push(Ctx::Code { parens: 0 });
                out.extend_from_slice(b"$(");
                i += 2;
                continue;
            }
            b'$' if b.get(i + 1) == Some(&b'{') => {
                stack.push(Ctx::Param);
                out.extend_from_slice(b"${");
                i += 2;
                continue;
            }
            b'(' => {
                if let Some(Ctx::Code { parens }) = stack.last_mut() {
                    *parens += 1;
                }
            }
            b')' => {
                let depth = stack.len();
                match stack.last_mut() {
                    Some(Ctx::Code { parens }) if *parens > 0 => *parens -= 1,
                    Some(Ctx::Code { .. }) if depth > 1 => {
                        stack.pop();
                    }
                    _ => {}
                }
            }
            b'}' if ctx == Ctx::Param => {
                stack.pop();
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| "a continuation inside a multi-byte character")
}

/// The index just past the quote closing a `'…'` (or `$'…'`, where `\'` does not close) whose
/// body starts at `from`.
fn quoted_end(b: &[u8], from: usize, ansi: bool) -> Option<usize> {
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' if ansi => i += 2,
            b'\'' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Whether the next character starts a word (so `#` starts a comment).
fn starts_word(out: &[u8]) -> bool {
    out.last().is_none_or(|c| {
        matches!(
            c,
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> String {
        join(s)
            .map(|c| c.into_owned())
            .unwrap_or_else(|e| format!("ERR {e}"))
    }

    #[test]
    fn continuations_join_where_bash_joins_them() {
        assert_eq!(j("tr\\\nuncate -s 0 x"), "truncate -s 0 x");
        assert_eq!(j("find . -de\\\nlete"), "find . -delete");
        assert_eq!(j("sort --out\\\nput=x"), "sort --output=x");
        assert_eq!(j("echo \"a\\\nb\""), "echo \"ab\"");
        assert_eq!(j("echo $(r\\\nm x)"), "echo $(rm x)");
        assert_eq!(j("echo \"$(echo 'a\\\nb')\""), "echo \"$(echo 'a\\\nb')\"");
        assert_eq!(j("ls \\\\\nrm"), "ls \\\\\nrm");
    }

    #[test]
    fn quotes_and_comments_keep_them() {
        assert_eq!(j("echo 'a\\\nb'"), "echo 'a\\\nb'");
        assert_eq!(j("echo $'a\\\nb'"), "echo $'a\\\nb'");
        assert_eq!(j("ls # note \\\nrm x"), "ls # note \\\nrm x");
        assert_eq!(j("echo $# \\\nx"), "echo $# x");
        assert_eq!(j("echo ${#x}\\\ny"), "echo ${#x}y");
        assert_eq!(j("echo $'\\'' \\\nx"), "echo $'\\'' x");
    }

    #[test]
    fn here_documents_with_continuations_are_refused() {
        assert!(join("cat <<EOF\na\\\nb\nEOF").is_err());
        assert!(join("cat <<< x \\\ny").is_ok());
    }
}
