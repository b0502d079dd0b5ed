//! Quote removal: what bash would pass as one argument, from the syntax node of one word.
//!
//! `r''m`, `"rm"`, `r\m` and `$'\x72\x6d'` all become `rm`. A word whose value depends on the run
//! (a parameter expansion, a command substitution, an arithmetic expansion, an unquoted glob or
//! brace pattern) is marked `dynamic`: its text is then only a description, never a basis for allow.

use super::nodes::{self, Children, Kind};
use tree_sitter::Node;

/// One word after quote removal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    /// The value bash would produce, when static; the source text otherwise.
    pub text: String,
    /// The value is only known at run time (parameter expansion, substitution, arithmetic).
    pub dynamic: bool,
    /// Where an unquoted glob or brace pattern starts in `text`, if the word has one: the word may
    /// become several words (file names), all starting with `text[..glob_at]`.
    pub glob_at: Option<usize>,
    /// An unquoted leading `~` (the value starts with the home directory).
    pub tilde: bool,
    /// Unquoted expansion or pattern: the word may become zero or several words.
    pub split: bool,
    /// The value is a path the policy has already rated (find's `{}` under a rated root, the
    /// input of `xargs` from a command that prints such paths).
    pub known_path: bool,
    /// With `known_path`: the path never starts with `-` (find prints paths under its roots).
    pub dashless: bool,
}

impl Word {
    /// A word with exactly this value.
    pub fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// A value only known at run time, described by `what`.
    pub fn unknown(what: impl Into<String>) -> Self {
        Self {
            text: what.into(),
            dynamic: true,
            split: true,
            ..Self::default()
        }
    }

    /// Whether the value may differ from `text` at run time in a way that matters for rating:
    /// an expansion or substitution, or a glob that could expand to an option (a file named
    /// `--pre=evil` matches `*`) because nothing fixed and option-free comes before it.
    pub fn is_uncertain(&self) -> bool {
        self.dynamic
            || self
                .glob_at
                .is_some_and(|at| at == 0 || self.text.starts_with('-'))
    }

    /// Whether the word holds an unquoted glob or brace pattern at all.
    pub fn has_glob(&self) -> bool {
        self.glob_at.is_some()
    }

    /// Whether the value bash passes may differ from `text` (an expansion, a pattern) — except
    /// a pattern after a fixed `--name=`, which is that option with a value that may differ.
    pub fn may_differ(&self) -> bool {
        self.dynamic || (self.glob_at.is_some() && !self.is_fixed_long_option())
    }

    /// `--include=*.py`: the option is fixed, only its value is a pattern.
    fn is_fixed_long_option(&self) -> bool {
        self.glob_at.is_some_and(|at| {
            let fixed = &self.text[..at.min(self.text.len())];
            fixed.starts_with("--") && fixed.contains('=')
        })
    }

    /// Whether the value could be (or become) a word starting with `-`.
    pub fn may_be_option(&self) -> bool {
        if self.dynamic {
            return !(self.known_path && self.dashless);
        }
        match self.glob_at {
            Some(0) => true,
            Some(_) => self.text.starts_with('-') && !self.is_fixed_long_option(),
            None => false,
        }
    }

    /// Whether the word may become zero or several words (unquoted expansion or pattern).
    pub fn may_split(&self) -> bool {
        self.split || self.glob_at.is_some()
    }
}

/// Loop variables whose values are known: `for f in *.py; do … "$f" …; done`.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The bindings seen so far, innermost last.
    pub bindings: Vec<Binding>,
}

/// One loop variable bound to a pattern of values, within the loop's body.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The variable.
    pub name: String,
    /// Its values as one word: a literal, a glob, or a brace alternation of literals.
    pub value: Word,
    /// The byte range of the body in which the binding holds.
    pub body: std::ops::Range<usize>,
}

impl Scope {
    fn lookup(&self, name: &str, at: usize) -> Option<&Word> {
        self.bindings
            .iter()
            .rev()
            .find(|b| b.name == name && b.body.contains(&at))
            .map(|b| &b.value)
    }
}

/// Quote-removes one word node (`word`, `string`, `raw_string`, `ansi_c_string`, `concatenation`,
/// expansions, substitutions, …).
pub fn word_of(node: Node<'_>, src: &str, scope: &Scope) -> Word {
    // Quote removal only shortens the text (a description of an expansion is at most 120 bytes
    // more): one allocation, not one per growth step.
    let mut out = Word::literal(String::with_capacity(node.byte_range().len()));
    let kind = nodes::kind(node);
    append_kind(node, kind, src, scope, &mut out, true, false);
    if kind == Kind::CommandSubstitution
        && let Some(producer) = node
            .named_child(0)
            .filter(|_| node.named_child_count() == 1)
            .and_then(|c| super::wrappers::producer_of(c, src))
    {
        // `$(git ls-files '*.rs')`: paths the policy rates where they are listed.
        out.known_path = true;
        out.dashless = producer == super::wrappers::Producer::Find;
    }
    if out.glob_at.is_none() && has_braces(text(node, src)) {
        // `{a,b}` / `{1..3}`: brace expansion makes several words (a lone `{}` is literal).
        out.glob_at = Some(out.text.find('{').unwrap_or(0));
        out.split = true;
    }
    out
}

/// The words of a simple command whose text holds nothing bash would expand, quote, split or
/// assign: ASCII letters, digits and `_ . / : , + % @ -`, separated by blanks. Each word is then
/// its text as written, which is what quote removal of the parser's word nodes gives (there is
/// no quote, backslash, `$`, glob or brace character, `~`, `=`, `#` or non-ASCII byte to act
/// on), and every child of such a command is its name or an argument. `None` for other text.
pub(crate) fn plain_words(text: &str) -> Option<Vec<Word>> {
    let plain = |b: u8| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'_' | b'.' | b'/' | b':' | b',' | b'+' | b'%' | b'@' | b'-'
            )
    };
    if !text.bytes().all(|b| plain(b) || b == b' ' || b == b'\t') {
        return None;
    }
    let words: Vec<Word> = text
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .map(Word::literal)
        .collect();
    (!words.is_empty()).then_some(words)
}

/// Whether `raw` may hold a brace expansion: a `{`, then a `,` or `..`, then a `}`.
fn has_braces(raw: &str) -> bool {
    let Some(open) = raw.find('{') else {
        return false;
    };
    let rest = &raw[open + 1..];
    let Some(close) = rest.rfind('}') else {
        return false;
    };
    let inner = &rest[..close];
    inner.contains(',') || inner.contains("..")
}

fn text<'a>(node: Node<'_>, src: &'a str) -> &'a str {
    src.get(node.byte_range()).unwrap_or("")
}

/// The variable a `$name` / `${name}` node expands, if it is that simple.
fn simple_variable<'a>(node: Node<'_>, src: &'a str) -> Option<&'a str> {
    let t = text(node, src);
    let name = t
        .strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| t.strip_prefix('$'))?;
    crate::specs::scripts::is_identifier(name).then_some(name)
}

fn append(node: Node<'_>, src: &str, scope: &Scope, out: &mut Word, first: bool, quoted: bool) {
    append_kind(node, nodes::kind(node), src, scope, out, first, quoted);
}

fn append_kind(
    node: Node<'_>,
    kind: Kind,
    src: &str,
    scope: &Scope,
    out: &mut Word,
    first: bool,
    quoted: bool,
) {
    match kind {
        Kind::Word | Kind::Number | Kind::CommandName if node.named_child_count() == 0 => {
            let Some(raw) = src.get(node.byte_range()) else {
                // Not on a character boundary of the original text: do not guess its value.
                out.dynamic = true;
                return;
            };
            if first && raw.starts_with('~') {
                out.tilde = true;
            }
            if let Some(at) = raw.find(['*', '?', '['])
                && out.glob_at.is_none()
            {
                // Unquoted glob or brace pattern: the words it becomes depend on the files there.
                let mut prefix = String::new();
                unescape_unquoted(&raw[..at], &mut prefix);
                out.glob_at = Some(out.text.len() + prefix.len());
                out.split = true;
            }
            unescape_unquoted(raw, &mut out.text);
        }
        Kind::RawString => {
            let raw = text(node, src);
            out.text.push_str(
                raw.strip_prefix('\'')
                    .and_then(|r| r.strip_suffix('\''))
                    .unwrap_or(raw),
            );
        }
        Kind::AnsiCString => {
            let raw = text(node, src);
            let body = raw
                .strip_prefix("$'")
                .and_then(|r| r.strip_suffix('\''))
                .unwrap_or(raw);
            decode_ansi_c(body, &mut out.text);
        }
        Kind::String | Kind::TranslatedString => append_double_quoted(node, src, scope, out),
        // A command name is most often one word: read it without a cursor.
        Kind::CommandName
            if let Some(child) = node.child(0).filter(|_| node.child_count() == 1) =>
        {
            append(child, src, scope, out, first, quoted);
        }
        Kind::Concatenation | Kind::CommandName => {
            for (i, child) in Children::of(node).enumerate() {
                append(child, src, scope, out, first && i == 0, quoted);
            }
        }
        Kind::StringContent => unescape_double_quoted(text(node, src), &mut out.text),
        // A `$` with no name after it (`-run=^$`, the word's end) is the character `$` to bash
        // (the grammar gate admits it only there).
        _ if node.child_count() == 0 && text(node, src) == "$" => out.text.push('$'),
        // `<(cmd)` becomes a path like /dev/fd/63: not an option, not a file anyone named.
        Kind::ProcessSubstitution => out.text.push_str("/dev/fd/63"),
        Kind::SimpleExpansion | Kind::Expansion
            if quoted
                && let Some(value) = simple_variable(node, src)
                    .and_then(|name| scope.lookup(name, node.start_byte())) =>
        {
            if let Some(at) = value.glob_at
                && out.glob_at.is_none()
            {
                out.glob_at = Some(out.text.len() + at);
            }
            out.dynamic |= value.dynamic;
            out.text.push_str(&value.text);
        }
        _ => {
            // simple_expansion, expansion, command_substitution, arithmetic_expansion,
            // brace_expression, and anything unforeseen.
            out.dynamic = true;
            if !quoted {
                out.split = true;
            }
            if kind == Kind::BraceExpression && out.glob_at.is_none() {
                out.glob_at = Some(out.text.len());
            }
            // Only a description from here on: keep it short, so nested substitutions do not
            // make every enclosing command carry the whole input.
            out.text
                .push_str(&super::parse::excerpt_of(text(node, src)));
        }
    }
}

/// The pieces of a `"…"` string, including any text between child nodes.
fn append_double_quoted(node: Node<'_>, src: &str, scope: &Scope, out: &mut Word) {
    let range = node.byte_range();
    let raw = text(node, src);
    let (open, close) = if raw.starts_with("$\"") {
        (2, 1)
    } else {
        (1, 1)
    };
    let (start, end) = (
        range.start + open,
        range.end.saturating_sub(close).max(range.start + open),
    );
    if !node.has_error() && !raw.contains(['$', '`', '\\']) {
        // Without `$` or a backquote the only named children are `string_content`, which tile
        // the text between the quotes with the gaps; without a backslash nothing is unescaped.
        out.text.push_str(src.get(start..end).unwrap_or(""));
        return;
    }
    let mut at = start;
    for child in Children::of(node).filter(|c| c.is_named()) {
        if nodes::kind(child) == Kind::String {
            // translated_string wraps a string node.
            append_double_quoted(child, src, scope, out);
            at = child.end_byte();
            continue;
        }
        if child.start_byte() > at {
            unescape_double_quoted(src.get(at..child.start_byte()).unwrap_or(""), &mut out.text);
        }
        append(child, src, scope, out, false, true);
        at = child.end_byte();
    }
    if end > at {
        unescape_double_quoted(src.get(at..end).unwrap_or(""), &mut out.text);
    }
}

/// Unquoted text: a backslash quotes the next character; backslash-newline disappears.
fn unescape_unquoted(raw: &str, out: &mut String) {
    if !raw.contains('\\') {
        out.push_str(raw); // most words: nothing to remove
        return;
    }
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            _ => out.push(c),
        }
    }
}

/// Inside double quotes, a backslash only quotes `$`, `` ` ``, `"`, `\` and newline.
fn unescape_double_quoted(raw: &str, out: &mut String) {
    if !raw.contains('\\') {
        out.push_str(raw);
        return;
    }
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
}

/// The escapes of `$'…'`, as bash decodes them.
pub fn decode_ansi_c(body: &str, out: &mut String) {
    let bytes = body.as_bytes();
    let mut decoded: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'\\' || i + 1 >= bytes.len() {
            decoded.push(b);
            i += 1;
            continue;
        }
        let e = bytes[i + 1];
        i += 2;
        let simple = match e {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'e' | b'E' => Some(0x1b),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            b'\\' => Some(b'\\'),
            b'\'' => Some(b'\''),
            b'"' => Some(b'"'),
            b'?' => Some(b'?'),
            _ => None,
        };
        if let Some(v) = simple {
            decoded.push(v);
            continue;
        }
        match e {
            b'x' => {
                let (v, used) = parse_radix(&bytes[i..], 16, 2);
                if used == 0 {
                    decoded.extend_from_slice(b"\\x");
                } else {
                    decoded.push(v as u8);
                }
                i += used;
            }
            b'0'..=b'7' => {
                let (v, used) = parse_radix(&bytes[i - 1..], 8, 3);
                decoded.push((v & 0xff) as u8);
                i += used - 1;
            }
            b'u' | b'U' => {
                let max = if e == b'u' { 4 } else { 8 };
                let (v, used) = parse_radix(&bytes[i..], 16, max);
                match char::from_u32(v).filter(|_| used > 0) {
                    Some(c) => decoded.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                    None => {
                        decoded.push(b'\\');
                        decoded.push(e);
                    }
                }
                i += used;
            }
            b'c' if i < bytes.len() => {
                decoded.push(bytes[i] & 0x1f);
                i += 1;
            }
            _ => {
                decoded.push(b'\\');
                decoded.push(e);
            }
        }
    }
    out.push_str(&String::from_utf8_lossy(&decoded));
}

/// Reads up to `max` digits of `radix`; returns the value and how many bytes were used.
fn parse_radix(bytes: &[u8], radix: u32, max: usize) -> (u32, usize) {
    let mut value: u32 = 0;
    let mut used = 0;
    for &b in bytes.iter().take(max) {
        match (b as char).to_digit(radix) {
            Some(d) => {
                value = value.wrapping_mul(radix).wrapping_add(d);
                used += 1;
            }
            None => break,
        }
    }
    (value, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_c_escapes_decode_as_bash_does() {
        let cases = [
            (r"\x72\x6d", "rm"),
            (r"\162\155", "rm"),
            (r"a\tb\n", "a\tb\n"),
            (r"\u0072m", "rm"),
            (r"\'q\'", "'q'"),
            (r"\q", r"\q"),
            (r"\x", r"\x"),
            (r"\cA", "\u{1}"),
        ];
        for (body, want) in cases {
            let mut out = String::new();
            decode_ansi_c(body, &mut out);
            assert_eq!(out, want, "$'{body}'");
        }
    }

    #[test]
    fn backslashes_follow_the_quoting_context() {
        let mut out = String::new();
        unescape_unquoted(r"r\m\ x\", &mut out);
        assert_eq!(out, "rm x");
        let mut out = String::new();
        unescape_double_quoted(r#"a\"b\$c\d"#, &mut out);
        assert_eq!(out, r#"a"b$c\d"#);
    }
}
