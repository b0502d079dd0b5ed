//! Commands that run other commands: wrappers (`env`, `sudo`, `timeout`, `nice`, `nohup`,
//! `command`, `builtin`, `exec`, `time`, `stdbuf`, `setsid`, `ionice`, `xargs`, `watch`), `find -exec`,
//! shells with `-c`, and `eval`. Each is recorded as written and the command inside is found too.

use super::parse::{analyze_text, is_dangerous_variable};
use super::{CommandUse, Finding, MAX_DEPTH, Word};

/// How a wrapper's own options are read: which take a value (as the next word when not attached).
struct Options {
    /// Short options that take a value (`-n 5`, `-n5`).
    short_with_value: &'static str,
    /// Long options that take a value (`--signal SIG`, `--signal=SIG`).
    long_with_value: &'static [&'static str],
}

/// Records `argv` and, when it wraps another command, that command too.
pub(super) fn expand_command(argv: Vec<Word>, depth: usize, out: &mut Vec<Finding>) {
    if depth > MAX_DEPTH {
        out.push(Finding::Unresolved {
            what: joined(&argv),
            why: "commands nested too deeply to follow",
        });
        return;
    }
    let Some(name) = argv.first() else { return };
    if name.dynamic || name.has_glob() {
        out.push(command(
            argv,
            false,
            Some("its command name is only known at run time"),
        ));
        return;
    }
    let cap = if argv.iter().skip(1).any(Word::is_uncertain) {
        Some(
            "an argument is only known at run time (an expansion, a substitution, or a glob that may expand to an option)",
        )
    } else if name.tilde || name.text.contains('/') {
        Some("it runs a program by path")
    } else {
        None
    };
    let base = name
        .text
        .rsplit('/')
        .next()
        .unwrap_or(&name.text)
        .to_owned();
    let rest = &argv[1..];
    let inner: Inner = match base.as_str() {
        "env" => env(rest, depth, out),
        "sudo" | "doas" => after_options(
            rest,
            &Options {
                short_with_value: "ugpCDhrtUT",
                long_with_value: &[
                    "--user",
                    "--group",
                    "--prompt",
                    "--close-from",
                    "--chdir",
                    "--host",
                    "--role",
                    "--type",
                    "--other-user",
                    "--command-timeout",
                ],
            },
        ),
        "timeout" => after_options(
            rest,
            &Options {
                short_with_value: "sk",
                long_with_value: &["--signal", "--kill-after"],
            },
        )
        .and_then(|r| r.get(1..)),
        "nice" => nice(rest),
        "busybox" => rest
            .first()
            .is_some_and(|w| !w.text.starts_with('-'))
            .then_some(rest),
        "nohup" | "builtin" => after_options(
            rest,
            &Options {
                short_with_value: "",
                long_with_value: &[],
            },
        ),
        "command" => {
            if rest
                .first()
                .is_some_and(|w| w.text.starts_with('-') && w.text.contains(['v', 'V']))
            {
                None // `command -v x` only looks x up.
            } else {
                after_options(
                    rest,
                    &Options {
                        short_with_value: "",
                        long_with_value: &[],
                    },
                )
            }
        }
        "exec" => after_options(
            rest,
            &Options {
                short_with_value: "a",
                long_with_value: &[],
            },
        ),
        "time" => after_options(
            rest,
            &Options {
                short_with_value: "fo",
                long_with_value: &["--format", "--output"],
            },
        ),
        "stdbuf" => after_options(
            rest,
            &Options {
                short_with_value: "ioe",
                long_with_value: &["--input", "--output", "--error"],
            },
        ),
        "setsid" => after_options(
            rest,
            &Options {
                short_with_value: "",
                long_with_value: &[],
            },
        ),
        "ionice" => after_options(
            rest,
            &Options {
                short_with_value: "cnpPu",
                long_with_value: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
            },
        ),
        "xargs" => xargs(rest),
        "watch" => return watch(argv, cap, depth, out),
        "find" => return find(argv, cap, depth, out),
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" => {
            return shell(argv, cap, depth, out);
        }
        "eval" => {
            let payload = joined(rest);
            let dynamic = rest.iter().any(Word::is_uncertain);
            out.push(command(
                argv,
                false,
                Some("eval runs text assembled at run time"),
            ));
            if dynamic {
                out.push(Finding::Unresolved {
                    what: payload,
                    why: "eval of text only known at run time",
                });
            } else {
                analyze_text(&payload, depth + 1, out);
            }
            return;
        }
        "source" | "." => {
            out.push(command(
                argv,
                false,
                Some("it runs the commands of a script file"),
            ));
            return;
        }
        _ => None,
    };
    match inner {
        Some(inner) if !inner.is_empty() => {
            let inner = inner.to_vec();
            out.push(command(argv, true, cap));
            expand_command(inner, depth + 1, out);
        }
        _ => out.push(command(argv, false, cap)),
    }
}

/// The wrapped command, if there is one.
type Inner<'a> = Option<&'a [Word]>;

fn command(argv: Vec<Word>, transparent: bool, cap: Option<&'static str>) -> Finding {
    Finding::Command(CommandUse {
        argv,
        transparent,
        cap,
    })
}

fn joined(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Skips the wrapper's options (and `--`) and returns the command that follows.
fn after_options<'a>(words: &'a [Word], opts: &Options) -> Inner<'a> {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            return words.get(i + 1..);
        }
        if let Some(long) = t.strip_prefix("--") {
            let takes_value = opts
                .long_with_value
                .iter()
                .any(|o| o.trim_start_matches("--") == long);
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            // A cluster like `-kn5`: a value-taking letter consumes the rest, or the next word.
            let letters = &t[1..];
            let mut takes_next = false;
            for (pos, c) in letters.char_indices() {
                if opts.short_with_value.contains(c) {
                    takes_next = pos + c.len_utf8() == letters.len();
                    break;
                }
            }
            i += if takes_next { 2 } else { 1 };
            continue;
        }
        return words.get(i..);
    }
    None
}

fn env<'a>(words: &'a [Word], depth: usize, out: &mut Vec<Finding>) -> Inner<'a> {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        match t {
            "-S" | "--split-string" => {
                // `env -S 'cmd args'`: the string is split into a command line.
                if let Some(payload) = words.get(i + 1) {
                    analyze_text(&payload.text, depth + 1, out);
                }
                return None;
            }
            _ if t.starts_with("--split-string=") || (t.starts_with("-S") && t.len() > 2) => {
                let payload = t
                    .trim_start_matches("--split-string=")
                    .trim_start_matches("-S");
                analyze_text(payload, depth + 1, out);
                return None;
            }
            "-u" | "--unset" | "-C" | "--chdir" => i += 2,
            "--" => i += 1,
            _ if t.starts_with('-') && t.len() > 1 => i += 1,
            _ if t.contains('=') => {
                let name = t.split('=').next().unwrap_or("");
                if is_dangerous_variable(name) {
                    out.push(Finding::Unresolved {
                        what: t.to_owned(),
                        why: "it sets a variable that changes which programs run or how they behave",
                    });
                }
                i += 1;
            }
            _ => return words.get(i..),
        }
    }
    None
}

fn nice(words: &[Word]) -> Inner<'_> {
    // `nice -10 cmd` (old style) as well as `nice -n 10 cmd` and `--adjustment=10`.
    match words.first() {
        Some(w)
            if w.text.len() > 1
                && w.text.starts_with('-')
                && w.text[1..].chars().all(|c| c.is_ascii_digit()) =>
        {
            words.get(1..)
        }
        _ => after_options(
            words,
            &Options {
                short_with_value: "n",
                long_with_value: &["--adjustment"],
            },
        ),
    }
}

fn xargs(words: &[Word]) -> Inner<'_> {
    after_options(
        words,
        &Options {
            short_with_value: "adEeIiLlnPs",
            long_with_value: &[
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
        },
    )
}

/// `watch [opts] cmd args…` joins its arguments and hands them to `sh -c` (unless `-x`).
fn watch(argv: Vec<Word>, cap: Option<&'static str>, depth: usize, out: &mut Vec<Finding>) {
    let rest = &argv[1..];
    let exec_form = rest
        .iter()
        .take_while(|w| w.text.starts_with('-'))
        .any(|w| w.text == "-x" || w.text == "--exec");
    let inner = after_options(
        rest,
        &Options {
            short_with_value: "nq",
            long_with_value: &["--interval", "--equexit"],
        },
    )
    .map(<[Word]>::to_vec);
    out.push(command(argv, inner.is_some(), cap));
    match inner {
        Some(inner) if exec_form => expand_command(inner, depth + 1, out),
        Some(inner) if inner.iter().any(Word::is_uncertain) => out.push(Finding::Unresolved {
            what: joined(&inner),
            why: "watch runs text only known at run time",
        }),
        Some(inner) => analyze_text(&joined(&inner), depth + 1, out),
        None => {}
    }
}

/// `find … -exec cmd … ;` (also `-execdir`, `-ok`, `-okdir`): the command after the action.
fn find(argv: Vec<Word>, cap: Option<&'static str>, depth: usize, out: &mut Vec<Finding>) {
    let mut inners = Vec::new();
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
            inners.push(argv[start..end].to_vec());
            i = end;
        }
        i += 1;
    }
    out.push(command(argv, false, cap));
    for inner in inners {
        expand_command(inner, depth + 1, out);
    }
}

/// `sh -c 'payload' [name args…]`: the payload is parsed like any command text. A shell without
/// `-c` reads a script file or standard input, which cannot be seen: it stays as written (ask).
fn shell(argv: Vec<Word>, cap: Option<&'static str>, depth: usize, out: &mut Vec<Finding>) {
    let mut i = 1;
    let mut has_c = false;
    let mut odd_option = false;
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if t == "--" || !t.starts_with(['-', '+']) || t.len() < 2 {
            break;
        }
        if t == "-o" || t == "+o" {
            i += 2;
            continue;
        }
        if t.starts_with("--") {
            odd_option = true;
        } else {
            for c in t[1..].chars() {
                match c {
                    'c' => has_c = true,
                    'e' | 'u' | 'x' | 'v' | 'f' | 'n' | 'h' | 'B' | 'C' | 'a' | 'b' | 'm' | 'T'
                    | 'E' | 'H' | 'P' | 'k' | 't' => {}
                    _ => odd_option = true, // -l (login: runs profiles), -i, -s, -r, …
                }
            }
        }
        i += 1;
    }
    let payload = if has_c { argv.get(i).cloned() } else { None };
    let cap = cap.or(odd_option.then_some("the shell is started with options that run other code"));
    match payload {
        Some(payload) if !payload.is_uncertain() && !payload.has_glob() => {
            out.push(command(argv, cap.is_none(), cap));
            analyze_text(&payload.text, depth + 1, out);
        }
        Some(payload) => {
            out.push(command(argv, false, cap));
            out.push(Finding::Unresolved {
                what: payload.text,
                why: "the shell runs text only known at run time",
            });
        }
        None => out.push(command(argv, false, cap)),
    }
}
