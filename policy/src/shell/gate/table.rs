//! What the grammar gate admits, as data: one entry per lexical context, per `$` form, per
//! here-document delimiter form and per parameter-expansion operator, each with the reason it is
//! admitted. Whatever no entry admits is outside the subset and asks. The scanner (`scan.rs`)
//! only walks bash's contexts and looks things up here; docs/policy.md ("The grammar gate")
//! describes the same table in words.

/// A class of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `0x20`–`0x7e`.
    Printable,
    /// `0x09`.
    Tab,
    /// `0x0a`.
    Newline,
    /// A byte of a multi-byte UTF-8 character (`0x80`–`0xff`; the text is valid UTF-8).
    Utf8,
    /// Any byte but NUL.
    AnyButNul,
}

impl Class {
    fn holds(self, b: u8) -> bool {
        match self {
            Class::Printable => (0x20..=0x7e).contains(&b),
            Class::Tab => b == b'\t',
            Class::Newline => b == b'\n',
            Class::Utf8 => b >= 0x80,
            Class::AnyButNul => b != 0,
        }
    }
}

/// A lexical context of bash, as the scanner walks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Unquoted text: words, operators, blanks (top level, `$( )`, `( )`, backquotes).
    Unquoted,
    /// A comment, from `#` to the end of the line.
    Comment,
    /// Inside `'…'`.
    SingleQuoted,
    /// Inside `"…"` (and `$"…"`).
    DoubleQuoted,
    /// Inside `$'…'`.
    AnsiC,
    /// The body of a here-document.
    HeredocBody,
    /// The operand of a `${name OP operand}` operator.
    Operand,
    /// Inside `$(( ))` or `(( ))`.
    Arithmetic,
}

impl Context {
    /// How a reason names the context.
    pub fn name(self) -> &'static str {
        match self {
            Context::Unquoted => "unquoted text",
            Context::Comment => "a comment",
            Context::SingleQuoted => "single quotes",
            Context::DoubleQuoted => "double quotes",
            Context::AnsiC => "$'…'",
            Context::HeredocBody => "a here-document body",
            Context::Operand => "the operand of a ${…} operator",
            Context::Arithmetic => "arithmetic",
        }
    }
}

/// The bytes one context admits.
#[derive(Debug)]
pub struct Bytes {
    pub context: Context,
    pub admits: &'static [Class],
    pub why: &'static str,
}

const TEXT: &[Class] = &[Class::Printable, Class::Tab, Class::Newline, Class::Utf8];

/// Which bytes may stand where. Everything outside single quotes is printable ASCII, tab,
/// newline and UTF-8 text: bash's lexer gives meaning only to ASCII bytes, and the only blanks it
/// knows are space, tab and newline, so a CR, VT or FF is a word character to bash (`␍#` is a
/// word, not a comment) that a parser may read otherwise. Non-ASCII bytes are word characters to
/// bash in every locale the worker runs (its environment is clean: the C locale), and the parser
/// is shown `a` in their place (`parse.rs`), which is also a word character.
pub const BYTES: &[Bytes] = &[
    Bytes {
        context: Context::Unquoted,
        admits: TEXT,
        why: "space, tab and newline are bash's only blanks; any other control byte is a word character to bash",
    },
    Bytes {
        context: Context::Comment,
        admits: &[Class::Printable, Class::Tab, Class::Utf8],
        why: "a comment ends at the newline; a CR in it would be the parser's line end, not bash's",
    },
    Bytes {
        context: Context::SingleQuoted,
        admits: &[Class::AnyButNul],
        why: "bash copies every byte up to the closing quote; nothing inside has a meaning (a NUL ends bash's -c string)",
    },
    Bytes {
        context: Context::DoubleQuoted,
        admits: TEXT,
        why: "bash reads `$`, backquote and backslash here; other bytes are text, control bytes are not needed",
    },
    Bytes {
        context: Context::AnsiC,
        admits: TEXT,
        why: "escapes (`\\r`, `\\x0b`) write any byte; raw control bytes are not needed",
    },
    Bytes {
        context: Context::HeredocBody,
        admits: TEXT,
        why: "bash ends a body at a line equal to the delimiter; a CR would make `EOF␍` a line the parser may end on",
    },
    Bytes {
        context: Context::Operand,
        admits: &[Class::Printable, Class::Utf8],
        why: "operands are short patterns and words; the printable characters left are checked one by one",
    },
    Bytes {
        context: Context::Arithmetic,
        admits: &[Class::Printable, Class::Tab],
        why: "numbers, names and operators; the printable characters left are checked one by one",
    },
];

/// Whether `context` admits byte `b`.
pub fn admits(context: Context, b: u8) -> bool {
    BYTES
        .iter()
        .find(|e| e.context == context)
        .is_some_and(|e| e.admits.iter().any(|c| c.holds(b)))
}

/// What may follow a `$`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dollar {
    /// `$name`: a letter or `_`, then letters, digits and `_`.
    Name,
    /// `$0`–`$9`: one digit.
    Digit,
    /// `$@ $* $# $? $- $$ $!`.
    Special,
    /// `${…}`, read by the parameter-expansion entries.
    Brace,
    /// `$( )`: a command substitution.
    Substitution,
    /// `$(( ))`: arithmetic.
    Arithmetic,
    /// `$'…'`, unquoted only.
    AnsiC,
    /// `$"…"`, unquoted only.
    Translated,
    /// A literal `$`: before a blank, a newline, the end, or (in double quotes) the closing quote.
    Literal,
}

/// One `$` form admitted.
#[derive(Debug)]
pub struct DollarForm {
    pub form: Dollar,
    /// Also inside double quotes and here-document bodies (else unquoted only).
    pub quoted: bool,
    pub why: &'static str,
}

/// The `$` forms admitted, each with where and why. Anything else after a `$` (`$/`, `$[`,
/// `$'` inside double quotes, `$` before a non-ASCII character) asks.
pub const DOLLARS: &[DollarForm] = &[
    DollarForm {
        form: Dollar::Name,
        quoted: true,
        why: "a variable: its value is data, never parsed again",
    },
    DollarForm {
        form: Dollar::Digit,
        quoted: true,
        why: "a positional parameter",
    },
    DollarForm {
        form: Dollar::Special,
        quoted: true,
        why: "a special parameter",
    },
    DollarForm {
        form: Dollar::Brace,
        quoted: true,
        why: "a parameter expansion whose operator and operand are admitted below",
    },
    DollarForm {
        form: Dollar::Substitution,
        quoted: true,
        why: "a command substitution: its text is checked and rated like the rest",
    },
    DollarForm {
        form: Dollar::Arithmetic,
        quoted: true,
        why: "numbers, names and operators only (the policy rates names itself)",
    },
    DollarForm {
        form: Dollar::AnsiC,
        quoted: false,
        why: "`$'…'` is decoded by the policy as bash decodes it; inside double quotes or a here-document bash reads it as the text `$'`",
    },
    DollarForm {
        form: Dollar::Translated,
        quoted: false,
        why: "`$\"…\"` is a double-quoted string (the worker has no message catalogue)",
    },
    DollarForm {
        form: Dollar::Literal,
        quoted: true,
        why: "a `$` before a blank, a newline, the end, or a closing double quote is the character `$` in bash",
    },
];

/// Whether `form` is admitted, `quoted` or not.
pub fn admits_dollar(form: Dollar, quoted: bool) -> bool {
    DOLLARS
        .iter()
        .any(|d| d.form == form && (d.quoted || !quoted))
}

/// A here-document delimiter form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delimiter {
    /// `<<EOF`: letters, digits and `_`; the body is expanded.
    Plain,
    /// `<<'EOF'` or `<<"EOF"`: the whole word in one pair of quotes; the body is text.
    Quoted,
}

/// The here-document forms admitted (both with `<<` and `<<-`). Also refused: a here-document
/// inside backquotes or another body, one whose body would start after a newline inside quotes
/// or a substitution, a backquote or a line continuation in an unquoted body, and a body with no
/// delimiter line.
pub const DELIMITERS: &[(Delimiter, &str)] = &[
    (
        Delimiter::Plain,
        "a word of letters, digits and `_` is its own delimiter line, for bash and the parser alike",
    ),
    (
        Delimiter::Quoted,
        "the same word wholly in one pair of quotes: the delimiter line is the word, the body is not expanded; \
         quotes in the middle (`E\"O\"F`, `$'EOF'`, `\\EOF`) are removed by bash but not by every parser",
    ),
];

/// Whether `form` is admitted.
pub fn admits_delimiter(form: Delimiter) -> bool {
    DELIMITERS.iter().any(|(d, _)| *d == form)
}

/// What an operator's operand may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// A word or pattern: letters, digits, `_ . / : = + , @ % ~ ^ * ? ! # -`, space and UTF-8,
    /// and `$name` / `${name}`: no substitution, quote, backslash or backquote, and no `[` `]`
    /// (the differential check found the parser losing the rest of the command after `${x#a]b}`).
    Word,
    /// A substring offset (and length): digits, spaces and `-`.
    Offset,
}

/// One parameter-expansion operator admitted.
#[derive(Debug)]
pub struct Operator {
    pub op: &'static str,
    pub operand: Operand,
    pub why: &'static str,
}

const DEFAULT: &str = "default, assign, error or alternative value: the operand is a word, expanded only by the admitted forms";
const PATTERN: &str =
    "a pattern removed, replaced or case-converted: the operand is a glob, never run";

/// The operators admitted after `${name`, longest first (the scanner takes the first that
/// matches, as bash does: `${x:-1}` is a default, `${x: -1}` an offset). Not admitted: `@`
/// (transformations; `@P` runs a prompt's substitutions) and `!` before the name (indirection).
pub const OPERATORS: &[Operator] = &[
    Operator {
        op: ":-",
        operand: Operand::Word,
        why: DEFAULT,
    },
    Operator {
        op: ":=",
        operand: Operand::Word,
        why: DEFAULT,
    },
    Operator {
        op: ":?",
        operand: Operand::Word,
        why: DEFAULT,
    },
    Operator {
        op: ":+",
        operand: Operand::Word,
        why: DEFAULT,
    },
    Operator {
        op: "##",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: "%%",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: "//",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: "/#",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: "/%",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: "^^",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: ",,",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: "-",
        operand: Operand::Word,
        why: DEFAULT,
    },
    Operator {
        op: "=",
        operand: Operand::Word,
        why: DEFAULT,
    },
    Operator {
        op: "?",
        operand: Operand::Word,
        why: DEFAULT,
    },
    Operator {
        op: "+",
        operand: Operand::Word,
        why: DEFAULT,
    },
    Operator {
        op: "#",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: "%",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: "/",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: "^",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: ",",
        operand: Operand::Word,
        why: PATTERN,
    },
    Operator {
        op: ":",
        operand: Operand::Offset,
        why: "a substring: digits only (an offset with names is arithmetic, which the policy rates itself)",
    },
];

/// The characters an operand of [`Operand::Word`] may hold besides `$name` and UTF-8.
pub fn operand_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" _./:=+,@%~^*?!#-".contains(&b)
}

/// The characters of `(( ))` and `$(( ))` besides `$name` (`;` for `for (( ; ; ))`).
pub fn arithmetic_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" \t_+-*/%<>=!&|^~?:,();".contains(&b)
}
