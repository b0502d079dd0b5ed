//! Bash's xtrace (`PS4` = `+\x1e${PWD@Q}\x1f`, on `BASH_XTRACEFD`) read back into the simple
//! commands it ran, and bash's own quoting undone and redone.

/// One simple command bash traced.
#[derive(Debug, Clone)]
pub struct Traced {
    /// The directory it ran in.
    pub cwd: String,
    /// Its words as bash printed them (bash's own quoting): valid bash for the same command.
    pub text: String,
    /// Its words after quote removal.
    pub words: Vec<String>,
}

/// Splits bash's trace into records `+…\x1e'cwd'\x1fwords\n`; a word may hold a quoted newline.
pub fn parse_trace(bytes: &[u8]) -> (Vec<Traced>, Vec<String>) {
    let mut records = Vec::new();
    let mut unparsed = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i] == b'+' {
            i += 1;
        }
        if i == start || bytes.get(i) != Some(&0x1e) {
            let end = bytes[i..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(bytes.len(), |p| i + p);
            unparsed.push(String::from_utf8_lossy(&bytes[start..end]).into_owned());
            i = end + 1;
            continue;
        }
        i += 1;
        let Some(sep) = bytes[i..].iter().position(|b| *b == 0x1f) else {
            unparsed.push(String::from_utf8_lossy(&bytes[start..]).into_owned());
            break;
        };
        let (cwd_words, _, _) = split_words(&bytes[i..i + sep]);
        let cwd = cwd_words.into_iter().next().unwrap_or_default();
        i += sep + 1;
        let (words, used, _) = split_words(&bytes[i..]);
        let text = String::from_utf8_lossy(&bytes[i..i + used]).into_owned();
        i += used + 1;
        records.push(Traced { cwd, text, words });
    }
    (records, unparsed)
}

/// Reads shell words (as xtrace prints them: bare, `'…'`, `$'…'`, `"…"`, `\x`) up to an unquoted
/// newline or the end. Returns the words, the bytes used (newline excluded), and whether it ended
/// on a newline.
pub fn split_words(b: &[u8]) -> (Vec<String>, usize, bool) {
    let mut words = Vec::new();
    let mut word: Vec<u8> = Vec::new();
    let mut in_word = false;
    let mut i = 0;
    let finish = |word: &mut Vec<u8>, words: &mut Vec<String>, in_word: &mut bool| {
        if *in_word {
            words.push(String::from_utf8_lossy(word).into_owned());
            word.clear();
            *in_word = false;
        }
    };
    while i < b.len() {
        match b[i] {
            b'\n' => {
                finish(&mut word, &mut words, &mut in_word);
                return (words, i, true);
            }
            b' ' | b'\t' => {
                finish(&mut word, &mut words, &mut in_word);
                i += 1;
            }
            b'\'' => {
                in_word = true;
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    word.push(b[i]);
                    i += 1;
                }
                i += 1;
            }
            b'$' if b.get(i + 1) == Some(&b'\'') => {
                in_word = true;
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                        let (decoded, used) = ansi_c_escape(&b[i..]);
                        word.extend_from_slice(&decoded);
                        i += used;
                    } else {
                        word.push(b[i]);
                        i += 1;
                    }
                }
                i += 1;
            }
            b'"' => {
                in_word = true;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && matches!(b.get(i + 1), Some(b'"' | b'\\' | b'$' | b'`')) {
                        i += 1;
                    }
                    word.push(b[i]);
                    i += 1;
                }
                i += 1;
            }
            b'\\' if i + 1 < b.len() => {
                in_word = true;
                word.push(b[i + 1]);
                i += 2;
            }
            c => {
                in_word = true;
                word.push(c);
                i += 1;
            }
        }
    }
    finish(&mut word, &mut words, &mut in_word);
    (words, b.len(), false)
}

/// One ANSI-C escape after the backslash: the bytes it stands for and how many it used.
fn ansi_c_escape(b: &[u8]) -> (Vec<u8>, usize) {
    let simple = |c: u8| vec![c];
    match b[0] {
        b'a' => (simple(7), 1),
        b'b' => (simple(8), 1),
        b'e' | b'E' => (simple(27), 1),
        b'f' => (simple(12), 1),
        b'n' => (simple(b'\n'), 1),
        b'r' => (simple(b'\r'), 1),
        b't' => (simple(b'\t'), 1),
        b'v' => (simple(11), 1),
        b'0'..=b'7' => {
            let n = b
                .iter()
                .take(3)
                .take_while(|c| (b'0'..=b'7').contains(*c))
                .count();
            let v = b[..n]
                .iter()
                .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
            (simple((v & 0xff) as u8), n)
        }
        b'x' => {
            let n = b[1..]
                .iter()
                .take(2)
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            let text = std::str::from_utf8(&b[1..1 + n]).unwrap_or("0");
            (simple(u8::from_str_radix(text, 16).unwrap_or(0)), 1 + n)
        }
        c => (simple(c), 1),
    }
}

/// `s` quoted for bash so that it reads back as exactly one word with that text.
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_./,:=@%+^-".contains(&c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
