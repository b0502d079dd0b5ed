//! Commands that run other commands. Wrappers with a spec (`env`, `timeout`, `nice`, `nohup`,
//! `stdbuf`, `setsid`, `ionice`, `time`, `command`, `builtin`, `exec`, `xargs`, `npx`) are read
//! with it, so the command they run starts exactly where the program would start it; `find -exec`,
//! shells with `-c`, `eval` and `python -m` are read by code here. Wrappers without a spec (`sudo`,
//! `doas`, `watch`, `busybox`) are still looked through, so what they run is found (and denied).
//! Each is recorded as written and the command inside is found too.

use super::parse::analyze_text;
use super::{CommandUse, Finding, MAX_DEPTH, Walk, Word};
use crate::specs::{self, Parsed};
use tree_sitter::Node;

/// What a pipeline feeds a command on standard input, when it is known to be paths the policy
/// rated: `find ROOT …` prints paths under ROOT (never starting with `-`); `git ls-files`,
/// `rg --files`/`-l`, `grep -l` print paths they read (that may start with `-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producer {
    /// Paths under rated roots, never starting with `-`.
    Find,
    /// Paths the producer read, possibly starting with `-`.
    Paths,
}

/// Records `argv` and, when it wraps another command, that command too.
pub(super) fn expand_command(argv: Vec<Word>, walk: &mut Walk<'_>) {
    if walk.depth > MAX_DEPTH {
        walk.out.push(Finding::unresolved(
            &joined(&argv),
            "commands nested too deeply to follow",
        ));
        return;
    }
    let Some(name) = argv.first() else { return };
    if name.may_differ() {
        let cap = Some("its command name is only known at run time");
        walk.out.push(command(argv, false, cap, walk));
        return;
    }
    let base = name.text.rsplit('/').next().unwrap_or(&name.text);
    match base {
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" => shell(argv, walk),
        "eval" => eval(argv, walk),
        "source" | "." => {
            let cap = Some("it runs the commands of a script file");
            walk.out.push(command(argv, false, cap, walk));
        }
        "find" => find(argv, walk),
        "xargs" => xargs(argv, walk),
        "env" => env(argv, walk),
        "watch" => watch(argv, walk),
        "sudo" | "doas" | "busybox" | "chroot" | "unshare" | "nsenter" | "flock" | "strace"
        | "ltrace" | "firejail" | "proot" | "chrt" | "taskset" | "prlimit" => fallback(argv, walk),
        _ if is_python(base) => python(argv, walk),
        _ if walk.specs.get(base).is_some_and(|s| s.command_at.is_some()) => {
            let base = base.to_owned();
            wrapper(argv, &base, walk);
        }
        _ if let Some(sub) = wrapper_subcommand(base, &argv, walk) => {
            // `bundle exec rspec`: a subcommand that runs a command, read as one wrapper.
            let mut rated = vec![Word::literal(sub.clone())];
            rated.extend(argv.into_iter().skip(2));
            wrapper(rated, &sub, walk);
        }
        _ => walk.out.push(command(argv, false, None, walk)),
    }
}

/// `"{base} {sub}"` when the command's first argument names a subcommand whose spec is a wrapper.
fn wrapper_subcommand(base: &str, argv: &[Word], walk: &Walk<'_>) -> Option<String> {
    if !walk.specs.has_wrapping_subcommand(base) {
        return None;
    }
    let sub = argv.get(1).filter(|w| !w.may_differ())?;
    let name = format!("{base} {}", sub.text);
    walk.specs
        .get(&name)
        .is_some_and(|s| s.command_at.is_some())
        .then_some(name)
}

fn command(
    argv: Vec<Word>,
    transparent: bool,
    cap: Option<&'static str>,
    walk: &Walk<'_>,
) -> Finding {
    Finding::Command(CommandUse {
        argv,
        transparent,
        cap,
        in_loop: walk.in_loop,
    })
}

fn joined(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Records the wrapper and expands what it runs (`inner`, from index `at`).
fn wrap(argv: Vec<Word>, at: Option<usize>, walk: &mut Walk<'_>) {
    match at.filter(|&i| i < argv.len()) {
        Some(i) => {
            let inner = argv[i..].to_vec();
            walk.out.push(command(argv, true, None, walk));
            walk.depth += 1;
            expand_command(inner, walk);
            walk.depth -= 1;
        }
        None => walk.out.push(command(argv, false, None, walk)),
    }
}

/// Where the wrapped command starts, read with the wrapper's spec; if the wrapper's own options
/// do not fit it (the engine will say why), a guess that skips anything option-like, so that a
/// command behind it is still found.
fn command_start(argv: &[Word], base: &str, walk: &Walk<'_>) -> (Option<usize>, bool) {
    match specs::check(walk.specs, base, argv) {
        Ok(parsed) => (parsed.command_at, true),
        Err(_) => (
            argv.iter()
                .skip(1)
                .position(|w| !w.text.starts_with('-') && !w.text.contains('='))
                .map(|p| p + 1),
            false,
        ),
    }
}

fn wrapper(argv: Vec<Word>, base: &str, walk: &mut Walk<'_>) {
    let parsed = specs::check(walk.specs, base, &argv).ok();
    if base == "command"
        && parsed
            .as_ref()
            .is_some_and(|p| Parsed::has(p, "-v") || Parsed::has(p, "-V"))
    {
        // `command -v rg` only looks a name up.
        walk.out.push(command(argv, false, None, walk));
        return;
    }
    let (at, _) = command_start(&argv, base, walk);
    wrap(argv, at, walk);
}

/// `env [opts] [NAME=value…] cmd`: assignments by allowlist, then the command. `env -S 'cmd
/// args'` splits its string into a command line (asked by its spec; the line is found too).
fn env(argv: Vec<Word>, walk: &mut Walk<'_>) {
    if let Some(payload) = split_string(&argv) {
        walk.out.push(command(argv.clone(), false, None, walk));
        walk.depth += 1;
        analyze_text(&payload, walk);
        walk.depth -= 1;
        return;
    }
    let (start, _) = command_start(&argv, "env", walk);
    let Some(mut i) = start else {
        walk.out.push(command(argv, false, None, walk));
        return;
    };
    while let Some(w) = argv.get(i) {
        let Some((name, value)) = w.text.split_once('=') else {
            break;
        };
        if !crate::specs::scripts::is_identifier(name) {
            break;
        }
        if w.may_differ() || !super::env::is_allowed_with(name, value) {
            walk.out.push(Finding::unresolved(
                &w.text,
                "env sets a variable for the command; only LANG, LC_*, TZ, NO_COLOR, TERM, RUST_BACKTRACE and a few others cannot change what runs",
            ));
        }
        i += 1;
    }
    wrap(argv, Some(i), walk);
}

/// The string of `env -S STRING` / `--split-string=STRING` (also attached, `-SSTRING`).
fn split_string(argv: &[Word]) -> Option<String> {
    for (i, w) in argv.iter().enumerate().skip(1) {
        let t = w.text.as_str();
        if !t.starts_with('-') {
            return None;
        }
        if t == "-S" || t == "--split-string" || "--split-string".starts_with(t) && t.len() > 8 {
            return argv.get(i + 1).map(|p| p.text.clone());
        }
        if let Some(p) = t.strip_prefix("--split-string=") {
            return Some(p.to_owned());
        }
        if let Some(p) = t.strip_prefix("-S").filter(|p| !p.is_empty()) {
            return Some(p.to_owned());
        }
    }
    None
}

/// The words that start with `-` or hold `=` are taken for options; the first other word is the
/// command. For wrappers the policy has no spec for: what they run is found, and they ask (or are
/// denied by a rule) on their own line.
fn fallback(argv: Vec<Word>, walk: &mut Walk<'_>) {
    let at = argv
        .iter()
        .skip(1)
        .position(|w| !w.text.starts_with('-') && !w.text.contains('='))
        .map(|p| p + 1);
    match at {
        Some(i) => {
            let inner = argv[i..].to_vec();
            walk.out.push(command(argv, false, None, walk));
            walk.depth += 1;
            expand_command(inner, walk);
            walk.depth -= 1;
        }
        None => walk.out.push(command(argv, false, None, walk)),
    }
}

fn is_python(base: &str) -> bool {
    base == "python"
        || base.strip_prefix("python3").is_some_and(|v| {
            v.is_empty()
                || v.strip_prefix('.')
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// `python[3] [-B] [-u] -m MODULE args…` is rated as `python -m MODULE args…` (its spec, e.g.
/// pytest's); anything else is python itself (no spec: ask).
fn python(argv: Vec<Word>, walk: &mut Walk<'_>) {
    let mut i = 1;
    while argv
        .get(i)
        .is_some_and(|w| !w.may_differ() && matches!(w.text.as_str(), "-B" | "-u" | "-q"))
    {
        i += 1;
    }
    let module = match (argv.get(i), argv.get(i + 1)) {
        (Some(m), Some(module)) if m.text == "-m" && !m.may_differ() && !module.may_differ() => {
            module.text.clone()
        }
        _ => {
            walk.out.push(command(argv, false, None, walk));
            return;
        }
    };
    let mut name = format!("python -m {module}");
    if walk.specs.get(&name).is_none() {
        walk.out.push(command(argv, false, None, walk));
        return;
    }
    // A module's own subcommand right after it (`python -m unittest discover`).
    let mut skip = i + 2;
    if let Some(sub) = argv.get(skip).filter(|w| !w.may_differ()) {
        let full = format!("{name} {}", sub.text);
        if walk.specs.get(&full).is_some() {
            name = full;
            skip += 1;
        }
    }
    let mut rated = vec![Word::literal(name)];
    rated.extend(argv.into_iter().skip(skip));
    walk.out.push(command(rated, false, None, walk));
}

/// The replace string of `xargs -I R` / `-i[R]` / `--replace[=R]`.
fn replace_string(parsed: &Parsed<'_>) -> Option<String> {
    parsed.options.iter().find_map(|(o, v)| match *o {
        "-I" | "-i" | "--replace" => Some(v.first().map_or("{}", |a| a.text).to_owned()),
        _ => None,
    })
}

/// `xargs [opts] cmd args…`: its input becomes more arguments of cmd (or, with `-I R`, replaces
/// R). The command is rated with a word that may be anything standing for the input; a word that
/// only contains R (pasted into a longer word, such as a shell script) asks.
fn xargs(argv: Vec<Word>, walk: &mut Walk<'_>) {
    let parsed = specs::check(walk.specs, "xargs", &argv);
    let (at, replace) = match &parsed {
        Ok(p) => (p.command_at, replace_string(p)),
        Err(_) => (command_start(&argv, "xargs", walk).0, None),
    };
    drop(parsed);
    let Some(at) = at.filter(|&i| i < argv.len()) else {
        walk.out.push(command(argv, false, None, walk));
        return;
    };
    let input = Word {
        text: "<input of xargs>".into(),
        dynamic: true,
        split: true,
        known_path: walk.stdin_paths.is_some(),
        dashless: walk.stdin_paths == Some(Producer::Find),
        ..Word::default()
    };
    let mut inner: Vec<Word> = argv[at..].to_vec();
    let runs_shell = inner.first().is_some_and(|w| {
        let base = w.text.rsplit('/').next().unwrap_or(&w.text);
        matches!(
            base,
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" | "eval"
        )
    });
    if runs_shell {
        walk.out.push(Finding::unresolved(
            &joined(&inner),
            "xargs hands its input to a shell",
        ));
    }
    match replace {
        Some(r) => {
            for w in &mut inner {
                if w.text == r {
                    *w = input.clone();
                } else if w.text.contains(&r) {
                    walk.out.push(Finding::unresolved(
                        &w.text,
                        "xargs pastes its input into this word (into code, or into an option)",
                    ));
                    *w = Word::unknown(w.text.clone());
                }
            }
        }
        None => inner.push(input),
    }
    walk.out.push(command(argv, true, None, walk));
    walk.depth += 1;
    expand_command(inner, walk);
    walk.depth -= 1;
}

/// `watch [opts] cmd args…` joins its arguments and hands them to `sh -c` (unless `-x`).
fn watch(argv: Vec<Word>, walk: &mut Walk<'_>) {
    let exec_form = argv
        .iter()
        .skip(1)
        .take_while(|w| w.text.starts_with('-'))
        .any(|w| w.text == "-x" || w.text == "--exec");
    let mut i = 1;
    while let Some(w) = argv.get(i) {
        if !w.text.starts_with('-') {
            break;
        }
        i += if matches!(w.text.as_str(), "-n" | "--interval" | "-q" | "--equexit") {
            2
        } else {
            1
        };
    }
    let inner = argv
        .get(i..)
        .filter(|r| !r.is_empty())
        .map(<[Word]>::to_vec);
    walk.out.push(command(argv, false, None, walk));
    walk.depth += 1;
    match inner {
        Some(inner) if exec_form => expand_command(inner, walk),
        Some(inner) if inner.iter().any(Word::is_uncertain) => walk.out.push(Finding::unresolved(
            &joined(&inner),
            "watch runs text only known at run time",
        )),
        Some(inner) => analyze_text(&joined(&inner), walk),
        None => {}
    }
    walk.depth -= 1;
}

/// `find … -exec cmd … ;` (also `-execdir`): the command after the action, with `{}` standing for
/// a path under a root find searches (rated with find itself). `{}` inside a longer word (a shell
/// script) asks: the file name becomes code. `-ok`/`-okdir` ask in find's spec, and their
/// commands are found too.
fn find(argv: Vec<Word>, walk: &mut Walk<'_>) {
    let ranges: Vec<std::ops::Range<usize>> = match specs::check(walk.specs, "find", &argv) {
        Ok(parsed) => parsed.exec.clone(),
        Err(_) => exec_ranges(&argv),
    };
    let name = Word {
        text: "<a path find found>".into(),
        dynamic: true,
        known_path: true,
        dashless: true,
        ..Word::default()
    };
    let mut inners = Vec::new();
    for range in ranges {
        let mut inner = argv[range].to_vec();
        for w in &mut inner {
            if w.text == "{}" {
                *w = name.clone();
            } else if w.text.contains("{}") {
                walk.out.push(Finding::unresolved(
                    &w.text,
                    "find pastes file names into this word (into code, or into an option)",
                ));
                *w = Word::unknown(w.text.clone());
            }
        }
        inners.push(inner);
    }
    walk.out.push(command(argv, false, None, walk));
    walk.depth += 1;
    for inner in inners {
        expand_command(inner, walk);
    }
    walk.depth -= 1;
}

/// Every `-exec`/`-execdir`/`-ok`/`-okdir` command of a find line, by scanning.
fn exec_ranges(argv: &[Word]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        if matches!(
            argv[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let start = i + 1;
            let mut end = start;
            while end < argv.len() && argv[end].text != ";" && argv[end].text != "+" {
                end += 1;
            }
            out.push(start..end);
            i = end;
        }
        i += 1;
    }
    out
}

fn eval(argv: Vec<Word>, walk: &mut Walk<'_>) {
    let rest = &argv[1..];
    let payload = joined(rest);
    let dynamic = rest.iter().any(Word::is_uncertain);
    walk.out.push(command(
        argv,
        false,
        Some("eval runs text assembled at run time"),
        walk,
    ));
    if dynamic {
        walk.out.push(Finding::unresolved(
            &payload,
            "eval of text only known at run time",
        ));
    } else {
        walk.depth += 1;
        analyze_text(&payload, walk);
        walk.depth -= 1;
    }
}

/// `sh -c 'payload' [name args…]`: the payload is parsed like any command text. A shell without
/// `-c` reads a script file or standard input, which cannot be seen: it stays as written (ask).
fn shell(argv: Vec<Word>, walk: &mut Walk<'_>) {
    let mut i = 1;
    let mut has_c = false;
    let mut odd_option = false;
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if w.may_differ() {
            odd_option = true;
            break;
        }
        if t == "--" || !t.starts_with(['-', '+']) || t.len() < 2 {
            break;
        }
        if t == "-o" || t == "+o" {
            let harmless = argv.get(i + 1).is_some_and(|n| {
                matches!(
                    n.text.as_str(),
                    "pipefail" | "errexit" | "nounset" | "xtrace"
                )
            });
            odd_option |= !harmless;
            i += 2;
            continue;
        }
        if t.starts_with("--") {
            odd_option = true;
        } else {
            for c in t[1..].chars() {
                match c {
                    'c' => has_c = true,
                    'e' | 'u' | 'x' | 'v' | 'f' | 'n' | 'h' | 'B' | 'C' | 'b' | 'm' | 'T' | 'E'
                    | 'H' | 'P' => {}
                    _ => odd_option = true, // -l (login: runs profiles), -i, -s, -a, -k, …
                }
            }
        }
        i += 1;
    }
    let payload = if has_c { argv.get(i).cloned() } else { None };
    let cap = odd_option.then_some("the shell is started with options that run other code");
    match payload {
        Some(payload) if !payload.may_differ() => {
            walk.out.push(command(argv, cap.is_none(), cap, walk));
            walk.depth += 1;
            analyze_text(&payload.text, walk);
            walk.depth -= 1;
        }
        Some(payload) => {
            walk.out.push(command(argv, false, cap, walk));
            walk.out.push(Finding::unresolved(
                &payload.text,
                "the shell runs text only known at run time",
            ));
        }
        None => walk.out.push(command(argv, false, cap, walk)),
    }
}

/// Whether the command at `node` reads paths on standard input from the command before it in a
/// pipeline, and which kind.
pub(super) fn reads_paths_from(node: Node<'_>, src: &str) -> Option<Producer> {
    if node.parent()?.kind() != "pipeline" {
        return None;
    }
    let prev = node.prev_named_sibling()?;
    producer_of(prev, src)
}

/// Whether `node` is a command that prints only paths it read (and which kind): `find` without
/// actions that print anything else, `git ls-files`, `git diff --name-only`, `rg --files`/`-l`,
/// `grep -l`. Its words must all be known.
pub(super) fn producer_of(node: Node<'_>, src: &str) -> Option<Producer> {
    if node.kind() != "command" {
        return None;
    }
    let scope = super::words::Scope::default();
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "command_name" | "word" | "string" | "raw_string" | "concatenation" | "number" => {
                let w = super::words::word_of(child, src, &scope);
                if w.dynamic {
                    return None;
                }
                words.push(w.text);
            }
            "comment" => {}
            _ => return None,
        }
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let has = |w: &str| words.contains(&w);
    match words.as_slice() {
        ["find", rest @ ..] => {
            let prints_other = rest.iter().any(|w| {
                ["-printf", "-fprint", "-ls", "-fls", "-exec", "-ok"]
                    .iter()
                    .any(|p| w.starts_with(p))
            });
            let roots_plain = rest
                .iter()
                .take_while(|w| !w.starts_with('-') && !matches!(**w, "!" | "(" | ")"))
                .all(|w| !w.is_empty());
            (!prints_other && roots_plain).then_some(Producer::Find)
        }
        ["git", "ls-files", rest @ ..] if !rest.iter().any(|w| w.starts_with("--format")) => {
            Some(Producer::Paths)
        }
        ["git", "diff", ..] if has("--name-only") => Some(Producer::Paths),
        ["rg", ..] if has("--files") || has("-l") || has("--files-with-matches") => {
            Some(Producer::Paths)
        }
        ["grep", rest @ ..]
            if rest
                .iter()
                .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('l'))
                || has("--files-with-matches") =>
        {
            Some(Producer::Paths)
        }
        _ => None,
    }
}
