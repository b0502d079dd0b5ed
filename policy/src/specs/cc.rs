//! A C or C++ compiler in check mode (`gcc -fsyntax-only`): it parses and type-checks, writes
//! nothing and links nothing. Its option set is too large to list, so words are read here by
//! form: a few families of options that only change how the source is read or what is warned
//! about pass; anything that writes (`-o`, `-M*`, `-save-temps`), links (`-l`, `-L`, `-Wl,`),
//! passes options on (`-Wa,`, `-Wp,`, `-X*`), or loads code or programs (`-fplugin`, `-B`,
//! `-specs`, `-wrapper`, `@file`) asks. The read rules rate every other word as a path.
//! Read from gcc 12.2.0's `--help=common` and the manual's option summary.

use super::Parsed;
use super::getopt::Problem;

/// Whole words that pass.
const EXACT: &[&str] = &[
    "-fsyntax-only",
    "-pedantic",
    "-pedantic-errors",
    "-w",
    "-ansi",
    "-pthread",
    "-x",
    "-I",
    "-D",
    "-U",
    "-include",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-nostdinc",
    "-nostdinc++",
    "-fPIC",
    "-fpic",
    "-fPIE",
    "-fpie",
    "-fexceptions",
    "-frtti",
    "-fopenmp",
    "-fpermissive",
    "-fsigned-char",
    "-funsigned-char",
    "-fcolor-diagnostics",
    "-fms-extensions",
    "-fcoroutines",
    "-fconcepts",
];

/// Prefixes of words that pass (the value attached).
const PREFIXES: &[&str] = &[
    "-std=",
    "-O",
    "-g",
    "-m",
    "-I",
    "-D",
    "-U",
    "-fno-",
    "-fdiagnostics-",
    "-fmessage-length=",
    "-ferror-limit=",
];

/// `-W…`: warnings, except the three that pass options to other programs.
fn is_warning(word: &str) -> bool {
    word.starts_with("-W") && !["-Wl,", "-Wa,", "-Wp,"].iter().any(|p| word.starts_with(p))
}

/// Every word of a compiler line in check mode.
pub(super) fn check(parsed: &Parsed<'_>) -> Result<(), Problem> {
    let mut syntax_only = false;
    for a in &parsed.operands {
        let w = a.text;
        if a.word.may_be_option() && a.word.may_differ() {
            return Err(Problem::new(
                w,
                "an argument only known at run time stands where an option could",
            ));
        }
        if w.starts_with('@') {
            return Err(Problem::new(
                w,
                format!("`{w}` reads more options from a file the policy cannot see"),
            ));
        }
        if !w.starts_with('-') || w == "-" {
            continue; // a source file, or an option's value: rated as a read
        }
        syntax_only |= w == "-fsyntax-only";
        // `-mllvm` passes options on to LLVM.
        let fits =
            (EXACT.contains(&w) || PREFIXES.iter().any(|p| w.starts_with(p)) || is_warning(w))
                && !w.starts_with("-mllvm");
        if !fits {
            return Err(Problem::new(
                w,
                format!(
                    "`{w}` is not an option a compiler in check mode is allowed (it may write, \
                     link, or load plugins and programs)"
                ),
            ));
        }
    }
    if !syntax_only {
        return Err(Problem::new(
            &parsed.spec.name,
            format!(
                "`{}` runs in check mode only with -fsyntax-only (otherwise it writes and links)",
                parsed.spec.name
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_pass_but_not_the_ones_that_pass_options_on() {
        assert!(is_warning("-Wall"));
        assert!(is_warning("-Wno-unused"));
        assert!(!is_warning("-Wl,-rpath,/tmp"));
        assert!(!is_warning("-Wp,-MD,/tmp/x"));
    }
}
