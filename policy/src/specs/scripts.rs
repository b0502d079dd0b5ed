//! Validators for what options cannot describe: sed scripts, awk and jq programs (which can
//! write files, run commands, or choose at run time the files they read), `date` operands,
//! `test -v` names, `set` options, `read` names.

use super::Spec;
use super::getopt::{Arg, Parsed, Problem};
use crate::shell::Word;

fn problem(what: &str, why: impl Into<String>) -> Problem {
    Problem {
        what: crate::shell::excerpt_of(what),
        why: why.into(),
    }
}

/// The script of a sed or awk command line: the values of `script_opts`, else the first operand.
fn script_of<'w>(parsed: &Parsed<'w>, script_opts: &[&str]) -> Result<Vec<Arg<'w>>, Problem> {
    let given: Vec<Arg<'w>> = parsed
        .options
        .iter()
        .filter(|(o, _)| script_opts.contains(o))
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    let script = if given.is_empty() {
        parsed.operands.first().copied().into_iter().collect()
    } else {
        given
    };
    if let Some(dynamic) = script.iter().find(|a| a.word.may_differ()) {
        return Err(problem(
            dynamic.text,
            "the script is only known at run time",
        ));
    }
    if script.is_empty() {
        return Err(problem(&parsed.spec.name, "no script"));
    }
    Ok(script)
}

/// A sed script that only prints: no `w`/`W` (write), `r`/`R` (read another file), `e` (run),
/// nor the `w` and `e` flags of `s`. GNU sed's `--sandbox` refuses those itself.
pub fn sed(parsed: &Parsed<'_>) -> Result<(), Problem> {
    if Spec::given(parsed, &["--sandbox".to_owned()]) {
        return Ok(());
    }
    let script: Vec<&str> = script_of(parsed, &["-e", "--expression"])?
        .iter()
        .map(|a| a.text)
        .collect();
    let joined = script.join("\n");
    SedReader::new(&joined)
        .all()
        .map_err(|why| problem(&joined, format!("the sed script {why}")))
}

struct SedReader<'s> {
    s: &'s [u8],
    i: usize,
}

impl<'s> SedReader<'s> {
    fn new(s: &'s str) -> Self {
        Self {
            s: s.as_bytes(),
            i: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(|b| b == b' ' || b == b'\t') {
            self.i += 1;
        }
    }

    /// Reads up to the unescaped `delim`, past it.
    fn delimited(&mut self, delim: u8) -> Result<(), &'static str> {
        while let Some(b) = self.peek() {
            self.i += 1;
            if b == b'\\' {
                self.i += 1;
            } else if b == delim {
                return Ok(());
            } else if b == b'\n' && delim != b'\n' {
                return Err("has an unterminated expression");
            }
        }
        Err("has an unterminated expression")
    }

    fn address(&mut self) -> Result<(), &'static str> {
        match self.peek() {
            Some(b'/') => {
                self.i += 1;
                self.delimited(b'/')?;
            }
            Some(b'\\') => {
                self.i += 1;
                let d = self.peek().ok_or("ends in an address")?;
                self.i += 1;
                self.delimited(d)?;
            }
            Some(b'$') => self.i += 1,
            Some(b) if b.is_ascii_digit() || b == b'+' || b == b'~' => {
                self.i += 1;
                while self.peek().is_some_and(|b| b.is_ascii_digit() || b == b'~') {
                    self.i += 1;
                }
            }
            _ => return Ok(()),
        }
        while self.peek().is_some_and(|b| b == b'I' || b == b'M') {
            self.i += 1;
        }
        Ok(())
    }

    fn skip_line(&mut self) {
        while let Some(b) = self.peek() {
            self.i += 1;
            if b == b'\\' {
                self.i += 1;
            } else if b == b'\n' {
                return;
            }
        }
    }

    fn label(&mut self) {
        while self.peek().is_some_and(|b| b != b';' && b != b'\n') {
            self.i += 1;
        }
    }

    fn all(mut self) -> Result<(), &'static str> {
        loop {
            while self
                .peek()
                .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b';'))
            {
                self.i += 1;
            }
            let Some(_) = self.peek() else { return Ok(()) };
            self.address()?;
            self.skip_blanks();
            if self.peek() == Some(b',') {
                self.i += 1;
                self.skip_blanks();
                self.address()?;
            }
            self.skip_blanks();
            while self.peek() == Some(b'!') {
                self.i += 1;
                self.skip_blanks();
            }
            let cmd = self.peek().ok_or("ends after an address")?;
            self.i += 1;
            self.command(cmd)?;
        }
    }

    fn command(&mut self, cmd: u8) -> Result<(), &'static str> {
        match cmd {
            b'{' | b'}' | b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'n' | b'N' | b'p'
            | b'P' | b'x' | b'z' | b'F' => Ok(()),
            b'l' | b'q' | b'Q' | b'L' => {
                self.skip_blanks();
                while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    self.i += 1;
                }
                Ok(())
            }
            b'#' | b'a' | b'i' | b'c' => {
                self.skip_line();
                Ok(())
            }
            b':' | b'b' | b't' | b'T' => {
                self.label();
                Ok(())
            }
            b's' => self.substitute(),
            b'y' => {
                let d = self.peek().ok_or("ends in y")?;
                self.i += 1;
                self.delimited(d)?;
                self.delimited(d)
            }
            b'w' | b'W' => Err("writes a file (w)"),
            b'r' | b'R' => Err("reads another file into the output (r)"),
            b'e' => Err("runs a command (e)"),
            _ => Err("has a command the policy does not know"),
        }
    }

    fn substitute(&mut self) -> Result<(), &'static str> {
        let d = self.peek().ok_or("ends in s")?;
        if d == b'\n' || d == b'\\' {
            return Err("has an s command with an odd delimiter");
        }
        self.i += 1;
        self.delimited(d)?;
        self.delimited(d)?;
        while let Some(f) = self.peek() {
            match f {
                b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9' => self.i += 1,
                b'w' => return Err("writes a file (s///w)"),
                b'e' => return Err("runs the pattern space as a command (s///e)"),
                b';' | b'\n' | b' ' | b'\t' | b'}' => return Ok(()),
                _ => return Err("has an s flag the policy does not know"),
            }
        }
        Ok(())
    }
}

/// An awk program that only computes and prints to standard output. Conservative: any mention of
/// `system`, `getline`, a pipe, `@` (gawk's `@load`/`@include`) asks, and so does `>` wherever
/// the program prints (output redirection); `>` as a comparison in a program that never prints
/// is fine.
pub fn awk(parsed: &Parsed<'_>) -> Result<(), Problem> {
    let script = script_of(parsed, &[])?;
    let Some(program) = script.first().map(|a| a.text) else {
        return Err(problem("awk", "no program"));
    };
    if let Some((_, values)) = parsed.options.iter().find(|(o, _)| *o == "-v")
        && let Some(v) = values.iter().find(|v| names_awk_input(v.text))
    {
        return Err(problem(
            v.text,
            "assigns ARGV, ARGC or SYMTAB: the files awk reads are chosen at run time",
        ));
    }
    let bad = if names_awk_input(program) {
        Some(
            "names ARGV, ARGC or SYMTAB, through which it can choose the files it reads at run time",
        )
    } else if program.contains("system") {
        Some("calls system()")
    } else if program.contains("getline") {
        Some("uses getline (which can run a command)")
    } else if program.contains('|') {
        Some("has a pipe (which runs a command)")
    } else if program.contains('@') {
        Some("loads an extension or includes a file")
    } else if print_redirects(program) {
        Some("may redirect its output to a file")
    } else {
        None
    };
    match bad {
        Some(why) => Err(problem(program, format!("the awk program {why}"))),
        None => Ok(()),
    }
}

/// Whether awk text mentions the variables that name the files it reads: `ARGV` and `ARGC`
/// (assigning `ARGV[1]` makes awk open that file next) and gawk's `SYMTAB`, which reaches them
/// by name. Any mention asks, reads included: telling a read from a write (`split(s, ARGV)`,
/// `sub(/x/, "y", ARGV[1])`, `ARGV[1]++`) is not worth the risk.
fn names_awk_input(text: &str) -> bool {
    identifiers(text).any(|id| matches!(id, "ARGV" | "ARGC" | "SYMTAB"))
}

/// The identifiers (`[A-Za-z_][A-Za-z0-9_]*`) in `text`, with a leading `$` kept (jq's
/// `$__loc__`), strings and comments included.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let start = at;
            let dollar = bytes[at] == b'$';
            let first = if dollar { at + 1 } else { at };
            if bytes
                .get(first)
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
                && (start == 0 || !is_ident_byte(bytes[start - 1]))
            {
                let mut end = first + 1;
                while end < bytes.len() && is_ident_byte(bytes[end]) {
                    end += 1;
                }
                at = end;
                return text.get(start..end);
            }
            at += 1;
        }
        None
    })
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A jq program that reads only its input: no `import`/`include` (modules and data files from
/// any directory, `{search: "…"}` included), no `modulemeta` (reads a module), and none of the
/// names that tell where the program and its modules live (`input_filename`, `$__loc__`,
/// `get_search_list`, `get_prog_origin`, `get_jq_origin`). Conservative: a mention anywhere,
/// in a string or as a field name too, asks.
pub fn jq(parsed: &Parsed<'_>) -> Result<(), Problem> {
    if parsed.has("-f") || parsed.has("--from-file") {
        return Ok(()); // the option asks on its own
    }
    let script = script_of(parsed, &[])?;
    let Some(program) = script.first().map(|a| a.text) else {
        return Err(problem("jq", "no program"));
    };
    let bad = identifiers(program).find(|id| {
        matches!(
            *id,
            "import"
                | "include"
                | "modulemeta"
                | "input_filename"
                | "$__loc__"
                | "get_search_list"
                | "get_prog_origin"
                | "get_jq_origin"
        )
    });
    match bad {
        Some(id) => Err(problem(
            program,
            format!(
                "the jq program uses `{id}`, which can read modules or data files from anywhere, or tell where files are"
            ),
        )),
        None => Ok(()),
    }
}

/// Whether a `print`/`printf` statement holds a `>` (output redirection) before it ends.
fn print_redirects(program: &str) -> bool {
    let mut at = 0;
    while let Some(pos) = program[at..].find("print") {
        let start = at + pos;
        let rest = &program[start..];
        let end = rest.find([';', '}', '\n']).unwrap_or(rest.len());
        if rest[..end].contains('>') {
            return true;
        }
        at = start + 5;
    }
    false
}

/// `date [+FORMAT]`: an operand not starting with `+` sets the clock.
pub fn date(parsed: &Parsed<'_>) -> Result<(), Problem> {
    match parsed
        .operands
        .iter()
        .find(|a| a.word.may_differ() || !a.text.starts_with('+'))
    {
        Some(a) => Err(problem(
            a.text,
            "a date operand other than +FORMAT sets the clock",
        )),
        None => Ok(()),
    }
}

/// `ps`: a BSD option word (letters without a dash, `ps auxe`) holding `e` shows each process's
/// environment after its command — the secrets other programs were started with.
pub fn ps(parsed: &Parsed<'_>) -> Result<(), Problem> {
    match parsed.operands.iter().find(|a| {
        a.word.may_differ()
            || (a.text.chars().all(|c| c.is_ascii_alphabetic()) && a.text.contains('e'))
    }) {
        Some(a) => Err(problem(
            a.text,
            "BSD `e` shows the environment of every process listed",
        )),
        None => Ok(()),
    }
}

/// Whether `name` is a plain shell variable name.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `test -v NAME` / `-R NAME`: bash evaluates a subscript in NAME (`a[$(cmd)]`) as arithmetic.
pub fn test(parsed: &Parsed<'_>) -> Result<(), Problem> {
    let ops = &parsed.operands;
    for (i, a) in ops.iter().enumerate() {
        if !a.word.may_differ() && (a.text == "-v" || a.text == "-R") {
            match ops.get(i + 1) {
                Some(n) if !n.word.may_differ() && is_identifier(n.text) => {}
                Some(n) => {
                    return Err(problem(
                        n.text,
                        "`test -v` evaluates a subscript in the name as code",
                    ));
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// `set`: `-e -u -x -v -f -C -b -n` and `-o` names that only change error handling or tracing.
/// `-a` (export every assignment), `-k`, `-o posix` and the rest ask.
pub fn set(argv: &[Word]) -> Result<(), Problem> {
    const NAMES: &[&str] = &[
        "errexit",
        "nounset",
        "pipefail",
        "xtrace",
        "verbose",
        "noglob",
        "noclobber",
        "notify",
        "noexec",
        "errtrace",
        "functrace",
    ];
    let mut i = 1;
    while let Some(w) = argv.get(i) {
        if w.may_differ() {
            return Err(problem(&w.text, "a `set` argument only known at run time"));
        }
        let t = w.text.as_str();
        if t == "--" || t == "-" {
            return Ok(()); // positional parameters follow: text
        }
        let Some(letters) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) else {
            return Ok(()); // `set a b`: positional parameters
        };
        if let Some(flags) = letters.strip_suffix('o') {
            if let Some(c) = flags.chars().find(|c| !"euxvfCbnET".contains(*c)) {
                return Err(problem(
                    t,
                    format!("`set -{c}` changes how later commands run or what they see"),
                ));
            }
            match argv.get(i + 1) {
                Some(n) if !n.may_differ() && NAMES.contains(&n.text.as_str()) => i += 2,
                Some(n) => {
                    return Err(problem(
                        &n.text,
                        "a shell option that changes how later commands run",
                    ));
                }
                None => i += 1,
            }
            continue;
        }
        if let Some(c) = letters.chars().find(|c| !"euxvfCbnET".contains(*c)) {
            return Err(problem(
                t,
                format!("`set -{c}` changes how later commands run or what they see"),
            ));
        }
        i += 1;
    }
    Ok(())
}

/// Whether assigning `name` is harmless: the allowlisted environment names, or a lower-case name
/// without `_`, which no program we know reads from its environment (configuration variables are
/// upper-case or contain `_`: `http_proxy`, `npm_config_*`).
pub fn is_harmless_variable(name: &str) -> bool {
    crate::shell::env::is_allowed(name)
        || (name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
}

/// `read NAME…`: names must be plain and harmless (`read PATH` would change what runs next; a
/// subscript in a name is evaluated as code).
pub fn read(parsed: &Parsed<'_>) -> Result<(), Problem> {
    let names = parsed.operands.iter().copied().chain(
        parsed
            .options
            .iter()
            .filter(|(o, _)| *o == "-a")
            .flat_map(|(_, v)| v.iter().copied()),
    );
    for a in names {
        if a.word.may_differ() || !is_identifier(a.text) || !is_harmless_variable(a.text) {
            return Err(problem(
                a.text,
                "`read` into a variable that is not a plain lower-case name",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sed_ok(script: &str) -> bool {
        SedReader::new(script).all().is_ok()
    }

    #[test]
    fn sed_scripts_that_only_print_pass() {
        for s in [
            "1,40p",
            "-n",
            "s/a/b/g",
            "/x/d",
            "$!N;P;D",
            "s|/usr|/opt|2",
            "1~2p",
            "/re/I,+3p",
            "y/abc/xyz/",
            ":a;N;ba",
            "10q",
            "s/\\//x/",
            "/a/{p;d}",
            "a hello",
            "=",
            "$=",
        ] {
            if s != "-n" {
                assert!(sed_ok(s), "{s}");
            }
        }
    }

    #[test]
    fn sed_scripts_that_write_read_or_run_fail() {
        for s in [
            "w out",
            "1w out",
            "s/a/b/w out",
            "s/a/b/e",
            "e id",
            "r /etc/passwd",
            "R x",
            "W x",
            "s/a/b/gw x",
            "p;w x",
            "/x/!e",
            "1,2{w x\n}",
            "s/a/b",
            "s/a/b/x",
            "\\%a%w x",
            "s/[/]/x/w f",
            "1,$ e",
        ] {
            assert!(!sed_ok(s), "{s}");
        }
    }

    #[test]
    fn identifiers_in_programs() {
        let ids: Vec<_> = super::identifiers("ARGV[1]=\"x\"; $__loc__ .a_b+x2 9z").collect();
        assert_eq!(ids, ["ARGV", "x", "$__loc__", "a_b", "x2"]);
        assert!(super::names_awk_input("BEGIN{ARGC=2}"));
        assert!(!super::names_awk_input("{print MYARGV}"));
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("a_1"));
        assert!(!is_identifier("a[1]"));
        assert!(!is_identifier("1a"));
        assert!(is_harmless_variable("line"));
        assert!(!is_harmless_variable("PATH"));
        assert!(!is_harmless_variable("http_proxy"));
        assert!(is_harmless_variable("LANG"));
    }
}
