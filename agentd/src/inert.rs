//! Text from the model or a tool, made inert for a terminal.
//!
//! Tool output and model text are the adversary's words. Printed raw, their control sequences act
//! on the user's terminal: OSC 52 writes the clipboard, cursor movement and `\r` overwrite the
//! line that showed what ran, a title sequence or a bidi override makes a command read as
//! something else. [`inert`] shows every such character escaped, visibly, so what the user reads
//! is what was there. Newline and tab are kept: they are what makes output readable, and they
//! cannot move the cursor anywhere a line break could not.
//!
//! Where the text must be read exactly — what an approval asks about — [`exact`] goes further,
//! by construction rather than by list: every character that is not printable and visible
//! (Unicode letters, marks, numbers, punctuation, symbols and the ASCII space, none of them
//! default-ignorable) is escaped, a newline shows as `⏎`. It is the same escaping code as
//! [`inert`] with a stricter test.
//!
//! Only for text printed to a person. JSON output keeps the exact text: serde escapes the C0
//! controls there, and [`json`] escapes the rest (DEL, C1, bidi) as `\uXXXX`, which decodes to
//! the very same string.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is shown escaped: C0 controls but `\n` and `\t`, DEL, C1 controls (U+0080–U+009F;
/// U+009B is CSI on some terminals), bidi embeddings and overrides (U+202A–U+202E), isolates
/// (U+2066–U+2069) and marks (U+200E, U+200F, U+061C), and the characters that show as nothing
/// and so can hide text or make two strings that look alike differ: the zero-width space, word
/// joiner and invisible operators (U+200B, U+2060–U+2064), the byte-order mark (U+FEFF), the line
/// and paragraph separators (U+2028, U+2029) and the tag characters (U+E0000–U+E007F). The
/// zero-width joiner and non-joiner stay: scripts and emoji sequences need them.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{200b}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
        | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{2028}' | '\u{2029}'
        | '\u{e0000}'..='\u{e007f}')
}

/// `text` with every [`is_unsafe`] character written as an escape: `\x1b` for ASCII controls,
/// `\u{9b}` for the others. Borrows when there is nothing to escape.
pub fn inert(text: &str) -> Cow<'_, str> {
    escaped(text, is_unsafe)
}

/// Like [`inert`], for text shown inside one line of ours (a path in a report, a workspace in a
/// list): newline and tab are escaped too (the Unicode line and paragraph separators always
/// are), so a file name cannot end our line and forge the next one.
pub fn inert_line(text: &str) -> Cow<'_, str> {
    escaped(text, |c| is_unsafe(c) || matches!(c, '\n' | '\t'))
}

/// The mark [`exact`] shows for a newline.
pub const NEWLINE: char = '⏎';

/// Whether `c` is a printable, visible character: the ASCII space, or one whose Unicode general
/// category is a letter, mark, number, punctuation or symbol and that is not default-ignorable
/// (those show as nothing: the variation selectors, the Hangul fillers, the combining grapheme
/// joiner). Everything else — controls, format characters (zero-width, bidi, tags), separators
/// and spaces other than U+0020 (a no-break space looks like a space and is not one to the
/// shell), private use, surrogates, unassigned code points — is not.
pub fn is_visible(c: char) -> bool {
    use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup};
    use icu_properties::{CodePointMapData, CodePointSetData};
    if c.is_ascii() {
        return c == ' ' || c.is_ascii_graphic();
    }
    let category = CodePointMapData::<GeneralCategory>::new().get(c);
    let shown = [
        GeneralCategoryGroup::Letter,
        GeneralCategoryGroup::Mark,
        GeneralCategoryGroup::Number,
        GeneralCategoryGroup::Punctuation,
        GeneralCategoryGroup::Symbol,
    ]
    .iter()
    .any(|group| group.contains(category));
    shown && !CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
}

/// `text` for an approval, where what the person reads must be exactly what runs: every
/// character that is not [`is_visible`] escaped like [`inert`] does (`\x1b`, `\u{200b}`), a
/// newline shown as [`NEWLINE`] — and [`NEWLINE`] itself, when the text has it, escaped
/// (`\u{23ce}`), so that the mark always means a real newline. The result is one line.
pub fn exact(text: &str) -> Cow<'_, str> {
    escaped_marking(text, |c| !is_visible(c) || c == NEWLINE, Some(NEWLINE))
}

fn escaped(text: &str, unsafe_char: impl Fn(char) -> bool) -> Cow<'_, str> {
    escaped_marking(text, unsafe_char, None)
}

/// `text` with each `unsafe_char` escaped, a newline shown as `newline` when one is given.
fn escaped_marking(
    text: &str,
    unsafe_char: impl Fn(char) -> bool,
    newline: Option<char>,
) -> Cow<'_, str> {
    let Some(first) = text.find(&unsafe_char) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if let (Some(mark), '\n') = (newline, c) {
            out.push(mark);
        } else if c.is_ascii() {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// Serialized JSON with every [`is_unsafe`] character that serde left raw (DEL, C1, bidi)
/// written as a `\uXXXX` escape. The value it decodes to is unchanged: outside strings JSON is
/// ASCII without controls, so these characters can only be inside strings, where the escape
/// means the same character.
pub fn json(text: &str) -> Cow<'_, str> {
    let Some(first) = text.find(is_unsafe) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if is_unsafe(c) {
            // Past the BMP (the tag characters) JSON spells a character as its UTF-16 pair.
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_what_serde_leaves_raw_and_decodes_to_the_same_value() {
        let value = serde_json::json!({"text": "a\x1b[2K\u{7f}\u{9b}1A\u{202e}b\u{2066}\n\u{e0041}\u{feff}", "n": 1});
        let serialized = value.to_string();
        assert!(
            serialized.contains('\u{9b}'),
            "serde leaves C1 raw: {serialized:?}"
        );
        let shown = json(&serialized);
        assert!(!shown.chars().any(is_unsafe), "{shown:?}");
        assert!(
            shown.contains("\\u009b") && shown.contains("\\u202e"),
            "{shown}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap_or_default();
        assert_eq!(back, value, "the same value, byte for byte");
    }

    #[test]
    fn plain_text_newlines_and_tabs_pass_untouched_and_borrowed() {
        let text = "ok: 1 test passed\n\tindented — ünïcödé 漢字 🙂\n";
        assert!(matches!(inert(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn terminal_controls_are_shown_escaped() {
        let cases = [
            ("\x1b]52;c;aGk=\x07", r"\x1b]52;c;aGk=\x07"),
            ("safe\r\x1b[2Kevil", r"safe\x0d\x1b[2Kevil"),
            ("\x1b[1A\x1b[2K", r"\x1b[1A\x1b[2K"),
            ("a\x08b\x7f\0", r"a\x08b\x7f\x00"),
            ("\u{9b}31m", r"\u{9b}31m"),
            ("\u{85}", r"\u{85}"),
            ("ls \u{202e}txt.exe", r"ls \u{202e}txt.exe"),
            ("\u{2066}x\u{2069}", r"\u{2066}x\u{2069}"),
            ("vt\x0bff\x0c", r"vt\x0bff\x0c"),
        ];
        for (raw, shown) in cases {
            assert_eq!(inert(raw), shown, "{raw:?}");
            assert!(!inert(raw).chars().any(is_unsafe), "{raw:?}");
        }
    }

    #[test]
    fn the_edges_of_each_range_are_right() {
        for c in [
            '\0',
            '\x08',
            '\x0b',
            '\x1f',
            '\x7f',
            '\u{80}',
            '\u{9f}',
            '\u{202a}',
            '\u{202e}',
            '\u{2066}',
            '\u{2069}',
            '\u{200b}',
            '\u{2060}',
            '\u{2064}',
            '\u{feff}',
            '\u{2028}',
            '\u{2029}',
            '\u{e0000}',
            '\u{e007f}',
            '\u{061c}',
            '\u{200f}',
        ] {
            assert!(is_unsafe(c), "{c:?}");
        }
        for c in [
            '\n',
            '\t',
            ' ',
            '~',
            '\u{a0}',
            '\u{202f}',
            '\u{2065}',
            '\u{206a}',
            'é',
            '\u{200c}',
            '\u{200d}',
            '\u{2027}',
            '\u{e0080}',
            '\u{fefe}',
        ] {
            assert!(!is_unsafe(c), "{c:?}");
        }
    }

    #[test]
    fn a_line_keeps_its_text_on_one_line() {
        assert_eq!(inert_line("/w/A\nlockdown: ok"), "/w/A\\x0alockdown: ok");
        assert_eq!(inert_line("a\tb\u{2028}c"), "a\\x09b\\u{2028}c");
        assert_eq!(inert_line("plain/path"), "plain/path");
        assert_eq!(inert("a\nb\tc"), "a\nb\tc", "inert keeps newline and tab");
    }
}
