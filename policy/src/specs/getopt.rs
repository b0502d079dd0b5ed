//! Reading a command line against its spec, the way the program's own parser would: GNU
//! getopt_long (clustered short options, `--long=value`, unique prefixes, options after operands,
//! `--`), POSIX-style parsers that stop at the first operand, Go's flag package, and `find`.

use super::{Args, Arity, Check, Opt, Role, Shape, Spec, Specs, Style, scripts};
use crate::shell::Word;

/// Why a command line does not fit its spec: it asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The word concerned.
    pub what: String,
    /// Why, in words.
    pub why: String,
}

impl Problem {
    pub(super) fn new(what: &str, why: impl Into<String>) -> Self {
        Self {
            what: crate::shell::excerpt_of(what),
            why: why.into(),
        }
    }
}

/// An option value or operand: the word and the part of its text that is the value.
#[derive(Debug, Clone, Copy)]
pub struct Arg<'w> {
    /// The value (all of the word, or what follows `=` or the option letter).
    pub text: &'w str,
    /// The word it came from (whether it is static, a glob, or only known at run time).
    pub word: &'w Word,
    /// What the program does with it: operands and the values of options whose role is not
    /// declared are `Read`.
    pub role: Role,
    /// For a module value, the names the program resolves to its own built-ins.
    pub builtins: &'w [String],
}

impl<'w> Arg<'w> {
    fn of(opt: &'w Opt, text: &'w str, word: &'w Word) -> Self {
        Self {
            text,
            word,
            role: opt.role,
            builtins: &opt.builtins,
        }
    }
}

/// A command line read against its spec.
#[derive(Debug, Clone)]
pub struct Parsed<'w> {
    /// The spec it was read against (a subcommand's, when there is one).
    pub spec: &'w Spec,
    /// Options given, by canonical name, with their values.
    pub options: Vec<(&'w str, Vec<Arg<'w>>)>,
    /// Operands, in order (the subcommand name excluded).
    pub operands: Vec<Arg<'w>>,
    /// For a wrapper: the index in the command line where the wrapped command starts.
    pub command_at: Option<usize>,
    /// For `find`: the `-exec`/`-execdir` commands, as ranges of the command line.
    pub exec: Vec<std::ops::Range<usize>>,
    /// Operands after `--` read by a `rest` spec whose operands are paths (`git diff -- F`).
    pub rest_paths: Vec<Arg<'w>>,
}

impl Parsed<'_> {
    /// Whether the option `name` (canonical) was given.
    pub fn has(&self, name: &str) -> bool {
        self.options.iter().any(|(o, _)| *o == name)
    }
}

/// Reads `argv` (name first) against the spec of `name`; `Ok` when every word fits.
pub fn check<'w>(specs: &'w Specs, name: &str, argv: &'w [Word]) -> Result<Parsed<'w>, Problem> {
    let spec = specs
        .get(name)
        .ok_or_else(|| Problem::new(name, format!("`{name}` has no spec")))?;
    let mut parsed = Parsed {
        spec,
        options: Vec::new(),
        operands: Vec::new(),
        command_at: None,
        exec: Vec::new(),
        rest_paths: Vec::new(),
    };
    let mut at = 1;
    let mut spec = spec;
    // Global options, then the subcommand, whose spec reads the rest; it may have subcommands
    // of its own (`git remote get-url`, `git stash show`).
    let mut first = true;
    while spec.subcommands {
        at = read(spec, argv, at, &mut parsed, true)?;
        while first
            && argv
                .get(at)
                .is_some_and(|w| w.text.starts_with('+') && !w.dynamic)
        {
            // `cargo +nightly test`: a toolchain, chosen by rustup.
            at += 1;
        }
        first = false;
        let Some(sub) = argv.get(at) else {
            if spec.bare_ok {
                parsed.spec = spec;
                return Ok(parsed);
            }
            return Err(Problem::new(
                &spec.name,
                format!("`{}` without a subcommand", spec.name),
            ));
        };
        if sub.may_differ() {
            return Err(Problem::new(
                &sub.text,
                "the subcommand is only known at run time",
            ));
        }
        let full = format!("{} {}", spec.name, sub.text);
        spec = specs.get(&full).ok_or_else(|| {
            Problem::new(
                &full,
                format!("`{full}` is not a subcommand the policy knows to be safe"),
            )
        })?;
        parsed.spec = spec;
        at += 1;
    }
    let end = read(spec, argv, at, &mut parsed, false)?;
    if end < argv.len() {
        // `--` and what follows, read by the `rest` spec.
        match &spec.rest {
            Some(rest) => {
                let mut inner = Parsed {
                    spec: rest,
                    options: Vec::new(),
                    operands: Vec::new(),
                    command_at: None,
                    exec: Vec::new(),
                    rest_paths: Vec::new(),
                };
                read(rest, argv, end + 1, &mut inner, false)?;
                parsed.options.extend(inner.options);
                let load = match rest.args {
                    Args::Paths => {
                        parsed.rest_paths = std::mem::take(&mut inner.operands);
                        None
                    }
                    Args::Text => None,
                    Args::Loads => Some(Shape::Path),
                    Args::Modules => Some(Shape::Module),
                };
                if let Some(shape) = load {
                    // What the script's runner loads (`npm test -- spec/x.js`): rated by role.
                    let values = inner
                        .operands
                        .into_iter()
                        .map(|a| Arg {
                            role: Role::Load(shape),
                            ..a
                        })
                        .collect();
                    parsed.options.push(("--", values));
                }
            }
            None => parsed.operands.extend(argv[end + 1..].iter().map(|w| Arg {
                text: &w.text,
                word: w,
                role: Role::Read,
                builtins: &[],
            })),
        }
    }
    validate(&parsed, argv)?;
    Ok(parsed)
}

/// Reads options and operands from `argv[at..]` into `parsed`. Returns where it stopped: the
/// length (all read), the index of a `--` left for the caller, or (with `stop_at_operand`, or for
/// a wrapper reaching its command) the index of the first word not read.
fn read<'w>(
    spec: &'w Spec,
    argv: &'w [Word],
    mut at: usize,
    parsed: &mut Parsed<'w>,
    stop_at_operand: bool,
) -> Result<usize, Problem> {
    // `test` and the C compilers' words are all read by their validators.
    let mut options_end = matches!(spec.check, Some(Check::Test | Check::Cc));
    while let Some(w) = argv.get(at) {
        if let Some(k) = spec.command_at
            && parsed.operands.len() == k
            && (options_end || !w.text.starts_with('-') || w.may_differ())
        {
            parsed.command_at = Some(at);
            return Ok(argv.len());
        }
        if !options_end && !w.may_differ() && w.text == "--" {
            if spec.rest.is_some() {
                return Ok(at);
            }
            options_end = true;
            at += 1;
            continue;
        }
        if options_end || !looks_like_option(w, spec) {
            if stop_at_operand {
                return Ok(at);
            }
            if w.may_be_option() && !options_end && !spec.safe_options {
                return Err(Problem::new(
                    &w.text,
                    "an argument only known at run time stands where an option could",
                ));
            }
            parsed.operands.push(Arg {
                text: &w.text,
                word: w,
                role: Role::Read,
                builtins: &[],
            });
            if spec.style == Style::Posix || spec.style == Style::Find {
                options_end = spec.style == Style::Posix;
            }
            at += 1;
            continue;
        }
        at = match spec.style {
            Style::Go | Style::Find => single_dash_long(spec, argv, at, parsed)?,
            Style::Gnu | Style::Posix if w.text.starts_with("--") => long(spec, argv, at, parsed)?,
            Style::Gnu | Style::Posix => short(spec, argv, at, parsed)?,
        };
    }
    Ok(at)
}

/// Whether `w` is read as an option: it starts with `-` (not `-` alone), or (find) is an
/// operator; a word only known at run time counts only where the spec reads options.
fn looks_like_option(w: &Word, spec: &Spec) -> bool {
    if w.may_differ() {
        return false;
    }
    let t = w.text.as_str();
    match spec.style {
        Style::Find => (t.starts_with('-') && t.len() > 1) || matches!(t, "!" | "(" | ")" | ","),
        _ => t.starts_with('-') && t.len() > 1,
    }
}

fn refuse(opt: &Opt, written: &str) -> Result<(), Problem> {
    match &opt.asks {
        Some(why) if written == opt.name => Err(Problem::new(written, why.clone())),
        Some(why) => Err(Problem::new(
            written,
            format!("`{written}` is `{}`: {why}", opt.name),
        )),
        None => Ok(()),
    }
}

fn unknown(spec: &Spec, written: &str) -> Problem {
    Problem::new(
        written,
        format!(
            "`{written}` is not an option the spec of `{}` allows",
            spec.name
        ),
    )
}

/// `--name`, `--name=value`, `--name value`, with getopt_long's prefix rule.
fn long<'w>(
    spec: &'w Spec,
    argv: &'w [Word],
    at: usize,
    parsed: &mut Parsed<'w>,
) -> Result<usize, Problem> {
    let w = &argv[at];
    if let Some(opt) = spec.opts.get(w.text.as_str())
        && opt.arity == Arity::None
        && opt.asks.is_none()
    {
        // A whole word the spec lists as a flag (`--watchAll=false`).
        parsed.options.push((opt.name.as_str(), Vec::new()));
        return Ok(at + 1);
    }
    let (name, attached) = match w.text.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (w.text.as_str(), None),
    };
    let opt = match resolve_long(spec, name) {
        Ok(opt) => opt,
        Err(_) if spec.safe_options => {
            // Harmless whatever it is; a value it was given may still name a file.
            let values = match attached {
                Some(_) => vec![Arg {
                    text: &w.text[name.len() + 1..],
                    word: w,
                    role: Role::Read,
                    builtins: &[],
                }],
                None => Vec::new(),
            };
            parsed.options.push((name, values));
            return Ok(at + 1);
        }
        Err(problem) => return Err(problem),
    };
    refuse(opt, name)?;
    let value_at = name.len() + 1;
    take_values(
        opt,
        w,
        attached.map(|_| &w.text[value_at..]),
        argv,
        at,
        parsed,
        name,
    )
}

/// The option `name` names: exact, or (GNU) the one option it is a unique prefix of.
fn resolve_long<'w>(spec: &'w Spec, name: &str) -> Result<&'w Opt, Problem> {
    if let Some(opt) = spec.opts.get(name) {
        return Ok(opt);
    }
    if name.len() > 2 {
        let candidates: Vec<&String> = spec.longs.iter().filter(|l| l.starts_with(name)).collect();
        if let [only] = candidates.as_slice()
            && let Some(opt) = spec.opts.get(only.as_str())
        {
            if opt.asks.is_some() {
                // Certain enough to refuse: if the program knows more options, it is ambiguous.
                return Ok(opt);
            }
            if spec.abbrev {
                return Ok(opt);
            }
            return Err(Problem::new(
                name,
                format!(
                    "`{name}` abbreviates `{only}`; write it in full (the program may read it otherwise)"
                ),
            ));
        }
        if candidates
            .iter()
            .any(|c| spec.opts.get(c.as_str()).is_some_and(|o| o.asks.is_some()))
        {
            return Err(Problem::new(
                name,
                format!("`{name}` may abbreviate an option that asks"),
            ));
        }
    }
    Err(unknown(spec, name))
}

/// A cluster of short options: `-la`, `-n5`, `-uo F`.
fn short<'w>(
    spec: &'w Spec,
    argv: &'w [Word],
    at: usize,
    parsed: &mut Parsed<'w>,
) -> Result<usize, Problem> {
    let w = &argv[at];
    let letters = &w.text[1..];
    if spec.numeric && letters.bytes().all(|b| b.is_ascii_digit()) {
        parsed.options.push(("-NUM", Vec::new()));
        return Ok(at + 1);
    }
    let mut key = String::with_capacity(5);
    for (pos, c) in letters.char_indices() {
        key.clear();
        key.push('-');
        key.push(c);
        let Some(opt) = spec.opts.get(&key) else {
            if spec.safe_options {
                // Harmless whatever it is; recorded by its letter.
                parsed
                    .options
                    .push((&letters[pos..pos + c.len_utf8()], Vec::new()));
                continue;
            }
            return Err(unknown(spec, &key));
        };
        let name = key.as_str();
        refuse(opt, name)?;
        if opt.arity == Arity::None {
            parsed.options.push((opt.name.as_str(), Vec::new()));
            continue;
        }
        let rest_at = 1 + pos + c.len_utf8();
        let rest = &w.text[rest_at..];
        let attached = (!rest.is_empty() || opt.arity == Arity::Optional).then_some(rest);
        return take_values(opt, w, attached, argv, at, parsed, name);
    }
    Ok(at + 1)
}

/// `-name value`, `-name=value`, `--name`: Go's flags and find's predicates.
fn single_dash_long<'w>(
    spec: &'w Spec,
    argv: &'w [Word],
    at: usize,
    parsed: &mut Parsed<'w>,
) -> Result<usize, Problem> {
    let w = &argv[at];
    let t = w.text.as_str();
    if spec.style == Style::Find && matches!(t, "-exec" | "-execdir") {
        let start = at + 1;
        let mut end = start;
        while argv
            .get(end)
            .is_some_and(|e| e.text != ";" && e.text != "+")
        {
            end += 1;
        }
        if end == start || end >= argv.len() {
            return Err(Problem::new(
                t,
                format!("`{t}` without a command ended by `;` or `+`"),
            ));
        }
        parsed.exec.push(start..end);
        parsed.options.push((t, Vec::new()));
        return Ok(end + 1);
    }
    let (name, attached) = match (spec.style, t.split_once('=')) {
        (Style::Go, Some((n, _))) => (n, Some(&t[n.len() + 1..])),
        _ => (t, None),
    };
    let key = match spec.style {
        Style::Go if !spec.opts.contains_key(name) => format!("-{}", name.trim_start_matches('-')),
        _ => name.to_owned(),
    };
    let Some(opt) = spec.opts.get(&key) else {
        // `-Dname=value`, `-Iinclude`: a declared one-letter option with its value attached
        // (commons-cli and compilers read them so).
        let letter = t.get(..2).filter(|_| t.len() > 2 && !t.starts_with("--"));
        if spec.style == Style::Go
            && let Some(opt) = letter.and_then(|l| spec.opts.get(l))
            && opt.arity == Arity::One
        {
            refuse(opt, &opt.name)?;
            return take_values(opt, w, Some(&t[2..]), argv, at, parsed, &opt.name);
        }
        return Err(unknown(spec, name));
    };
    refuse(opt, name)?;
    if opt.arity == Arity::None {
        // Go accepts `-v=true` for booleans.
        parsed.options.push((opt.name.as_str(), Vec::new()));
        return Ok(at + 1);
    }
    take_values(opt, w, attached, argv, at, parsed, &key)
}

/// Records `opt` with its values: `attached` (from the same word) or the next words.
fn take_values<'w>(
    opt: &'w Opt,
    w: &'w Word,
    attached: Option<&'w str>,
    argv: &'w [Word],
    at: usize,
    parsed: &mut Parsed<'w>,
    written: &str,
) -> Result<usize, Problem> {
    let canonical = opt.name.as_str();
    match (opt.arity, attached) {
        (Arity::None, Some(_)) => Err(Problem::new(written, format!("`{written}` takes no value"))),
        (Arity::None, None) | (Arity::Optional, None) => {
            parsed.options.push((canonical, Vec::new()));
            Ok(at + 1)
        }
        (Arity::NextUnlessLast, None) if at + 1 >= argv.len() => {
            parsed.options.push((canonical, Vec::new()));
            Ok(at + 1)
        }
        (Arity::Optional | Arity::One | Arity::NextUnlessLast, Some(v)) => {
            parsed.options.push((canonical, vec![Arg::of(opt, v, w)]));
            Ok(at + 1)
        }
        (Arity::One | Arity::NextUnlessLast, None) => {
            let v = argv
                .get(at + 1)
                .ok_or_else(|| Problem::new(written, format!("`{written}` needs a value")))?;
            parsed
                .options
                .push((canonical, vec![Arg::of(opt, &v.text, v)]));
            Ok(at + 2)
        }
        (Arity::Two, attached) => {
            let mut values = Vec::new();
            let mut next = at + 1;
            if let Some(v) = attached {
                values.push(Arg::of(opt, v, w));
            }
            while values.len() < 2 {
                let v = argv.get(next).ok_or_else(|| {
                    Problem::new(written, format!("`{written}` needs two values"))
                })?;
                values.push(Arg::of(opt, &v.text, v));
                next += 1;
            }
            parsed.options.push((canonical, values));
            Ok(next)
        }
    }
}

/// Operand counts and values, and the spec's validator.
fn validate(parsed: &Parsed<'_>, argv: &[Word]) -> Result<(), Problem> {
    let spec = parsed.spec;
    if let Some(required) = &spec.requires
        && !Spec::given(parsed, required)
    {
        return Err(Problem::new(
            &spec.name,
            format!(
                "`{}` runs in check mode only with one of {}",
                spec.name,
                required.join(", ")
            ),
        ));
    }
    if spec.min_args > parsed.operands.len() {
        return Err(Problem::new(
            &spec.name,
            format!("`{}` needs one of its listed operands here", spec.name),
        ));
    }
    let listing = spec
        .operands_with
        .as_ref()
        .is_some_and(|opts| Spec::given(parsed, opts));
    if let Some(max) = spec.max_args.filter(|_| !listing) {
        if parsed.operands.len() > max {
            return Err(Problem::new(
                parsed.operands[max].text,
                format!(
                    "`{}` takes at most {max} operand(s) here; more would be written to",
                    spec.name
                ),
            ));
        }
        if parsed.operands.iter().any(|a| a.word.may_split()) {
            return Err(Problem::new(
                parsed.operands.last().map_or("", |a| a.text),
                "an operand may expand to several words, past the operands it may take",
            ));
        }
    }
    if let Some(values) = &spec.values {
        for a in &parsed.operands {
            if a.word.may_differ() || !values.iter().any(|v| v == a.text) {
                return Err(Problem::new(
                    a.text,
                    format!(
                        "`{}` is not an operand `{}` allows here ({})",
                        a.text,
                        spec.name,
                        values.join(", ")
                    ),
                ));
            }
        }
    }
    match spec.check {
        Some(Check::Sed) => scripts::sed(parsed),
        Some(Check::Awk) => scripts::awk(parsed),
        Some(Check::Jq) => scripts::jq(parsed),
        Some(Check::Date) => scripts::date(parsed),
        Some(Check::Ps) => scripts::ps(parsed),
        Some(Check::Test) => scripts::test(parsed),
        Some(Check::Set) => scripts::set(argv),
        Some(Check::Read) => scripts::read(parsed),
        Some(Check::Cc) => super::cc::check(parsed),
        Some(Check::GitConfig) => super::git_config::check(parsed),
        Some(Check::Find) | None => Ok(()),
    }
}
