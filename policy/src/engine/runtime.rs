//! Reads whose files are chosen at run time, by a pattern rather than by name: a git pathspec
//! (`git log -p -- '*.env'`, `:(glob)…`), and what `find`, `git ls-files`, `rg -l` or `grep -l`
//! select when another command reads the contents of what they print (`find . -name '.env*' |
//! xargs cat`, `find … -exec cat {} +`, `cat $(git ls-files '*.env')`).
//!
//! A read with no pattern at all (`git log -p`, `grep -r x .`, `find . | xargs cat`) is a
//! recursive read of the workspace, rated as such (docs/policy.md: a name anywhere is not
//! counted for what a directory might hold). A pattern *targets*: it asks when it holds the
//! fixed part of a protected name (`.env`, `id_rsa`), or could select one as such files are
//! usually named (`.env.local`, `.env.production`; see [`protected_names`]),
//! matched the way the program matches it — find's and git's `*` match a leading dot, git's
//! crosses `/` too.

use super::Policy;
use super::command::command_part;
use super::decision::Part;
use super::reads::{Cwds, How, Protected};
use crate::paths::Context;
use crate::paths::reach::{self, RuleComp};
use crate::shell::{CommandUse, Finding, Word};
use crate::specs::Parsed;
use globset::GlobBuilder;
use protocol::verdict::Verdict;

/// The git subcommands that show the contents of the files their pathspecs select.
const GIT_CONTENT: &[&str] = &[
    "git diff",
    "git log",
    "git show",
    "git whatchanged",
    "git grep",
    "git blame",
];

/// find's tests that select by name: (test, case-insensitive, matches the whole path).
const FIND_NAME_TESTS: &[(&str, bool, bool)] = &[
    ("-name", false, false),
    ("-iname", true, false),
    ("-lname", false, false),
    ("-ilname", true, false),
    ("-path", false, true),
    ("-ipath", true, true),
    ("-wholename", false, true),
    ("-iwholename", true, true),
];

impl Policy {
    /// A git command that shows contents: each pathspec that is a pattern or uses magic.
    pub(super) fn rate_pathspecs(&self, parsed: &Parsed<'_>, line: &str, parts: &mut Vec<Part>) {
        if !GIT_CONTENT.contains(&parsed.spec.name.as_str()) {
            return;
        }
        for a in parsed.operands.iter().chain(&parsed.rest_paths) {
            if let Some(why) = self.pathspec_problem(a.text) {
                let why = format!("`{line}`: the pathspec `{}` {why}", a.text);
                parts.push(command_part(
                    Verdict::Ask,
                    "reads chosen at run time".into(),
                    why,
                    line,
                ));
            }
        }
    }

    /// Why a git pathspec could select a protected file, if it could.
    fn pathspec_problem(&self, spec: &str) -> Option<&'static str> {
        let mut pattern = spec;
        if let Some(rest) = spec.strip_prefix(':') {
            if let Some(long) = rest.strip_prefix('(') {
                let (magic, _) = long.split_once(')')?;
                if magic.split(',').all(|m| m.trim() == "exclude") {
                    return None; // only takes paths away
                }
                return Some("uses pathspec magic (`:(…)`), which the policy does not read");
            }
            let magic_len = rest
                .bytes()
                .take_while(|b| matches!(b, b'!' | b'^' | b'/'))
                .count();
            let magic = &rest[..magic_len];
            if magic.contains('/') {
                return Some(
                    "starts from the top of the repository (`:/`), past the directories rated",
                );
            }
            if !magic.is_empty() {
                return None; // `:!x`, `:^x`: an exclusion only takes paths away
            }
            pattern = rest.strip_prefix(':').unwrap_or(rest);
        }
        if !has_wildcard(pattern) {
            return None; // a path, rated as one where it is read
        }
        self.pattern_selects(pattern, true, true).then_some(
            "is a pattern that could select a protected file (git's `*` matches dot files and crosses `/`)",
        )
    }

    /// Whether `pattern` could select a protected name: matched against the base name only, or
    /// (`whole_path`) against paths under its fixed directory.
    fn pattern_selects(&self, pattern: &str, icase: bool, whole_path: bool) -> bool {
        if !has_wildcard(pattern) {
            return self.name_is_protected(pattern.rsplit('/').next().unwrap_or(pattern));
        }
        let lower = pattern.to_ascii_lowercase();
        if self
            .protected_stems
            .iter()
            .any(|s| lower.contains(s.as_str()))
        {
            return true;
        }
        let Ok(glob) = GlobBuilder::new(pattern)
            .literal_separator(false)
            .case_insensitive(icase)
            .backslash_escape(true)
            .build()
        else {
            return true; // not a pattern we can read: it could
        };
        let matcher = glob.compile_matcher();
        let fixed = pattern
            .find(['*', '?', '['])
            .map_or(pattern, |at| &pattern[..at]);
        let dir = fixed.rfind('/').map_or("", |at| &fixed[..=at]);
        self.protected_names.iter().any(|name| {
            if !whole_path {
                return matcher.is_match(name.as_str());
            }
            [
                name.clone(),
                format!("{dir}{name}"),
                format!("{dir}a/{name}"),
                format!("./{name}"),
                format!("./a/{name}"),
            ]
            .iter()
            .any(|c| matcher.is_match(c.as_str()))
        })
    }

    /// A command read the contents of paths another printed: what each command that prints
    /// paths selects is rated as a read of contents — its roots recursively (`find ~ | xargs
    /// cat` reads the home), its name patterns against the protected names.
    pub(super) fn rate_producers(
        &self,
        findings: &[Finding],
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
        let mut line = String::new();
        for f in findings {
            let Finding::Command(c) = f else { continue };
            let Some(name) = c.argv.first() else { continue };
            c.line_into(&mut line);
            let base = name.text.rsplit('/').next().unwrap_or(&name.text);
            let selects = match base {
                "find" => self.find_selects(c, &line, ctx, cwds, parts),
                "git" => git_pathspecs(c)
                    .into_iter()
                    .find(|p| self.pathspec_problem(p).is_some()),
                "rg" => option_values(c, &["-g", "--glob", "--iglob"])
                    .into_iter()
                    .filter(|p| !p.starts_with('!'))
                    .find(|p| self.pattern_selects(p, true, p.contains('/'))),
                "grep" | "egrep" | "fgrep" => option_values(c, &["--include"])
                    .into_iter()
                    .find(|p| self.pattern_selects(p, false, false)),
                _ => None,
            };
            if let Some(pattern) = selects {
                let why = format!(
                    "`{line}` selects files by `{pattern}`, which could select a protected file, and another command reads what it prints"
                );
                parts.push(command_part(
                    Verdict::Ask,
                    "reads chosen at run time".into(),
                    why,
                    &line,
                ));
            }
        }
    }

    /// find's roots rated as recursive reads of contents; the first name test that could
    /// select a protected name.
    fn find_selects<'c>(
        &self,
        c: &'c CommandUse,
        line: &str,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) -> Option<&'c str> {
        let how = How {
            recursive: true,
            names_only: false,
        };
        let roots: Vec<&Word> = c.argv[1..]
            .iter()
            .take_while(|w| {
                w.may_differ() || !(w.text.starts_with('-') || matches!(w.text.as_str(), "!" | "("))
            })
            .collect();
        if roots.is_empty() {
            self.rate_arg(".", &Word::literal("."), how, line, ctx, cwds, parts);
        }
        for w in roots {
            self.rate_arg(&w.text, w, how, line, ctx, cwds, parts);
        }
        c.argv.windows(2).find_map(|pair| {
            let test = pair[0].text.as_str();
            let value = pair[1].text.as_str();
            if matches!(test, "-regex" | "-iregex") {
                return Some(value); // a regular expression could select anything
            }
            let &(_, icase, whole) = FIND_NAME_TESTS.iter().find(|(t, _, _)| *t == test)?;
            (pair[1].may_differ() || self.pattern_selects(value, icase, whole)).then_some(value)
        })
    }
}

/// The file names the name-anywhere read rules (`/**/.env`, `/**/.env.*`, `/**/id_rsa`)
/// protect, as such files are usually named: a literal name as it is; a glob with its `*` and
/// `?` filled in by common suffixes (`.env.local`, `.env.production`, …). A pattern that selects
/// files at run time is tried against them (see `runtime`).
pub(super) fn protected_names(protected: &[Protected]) -> Vec<String> {
    const FILLS: &[&str] = &[
        "local",
        "production",
        "prod",
        "development",
        "dev",
        "test",
        "staging",
        "secret",
        "1",
    ];
    let mut out = Vec::new();
    for p in protected.iter().filter(|p| reach::is_anywhere(&p.comps)) {
        match p.comps.last() {
            Some(RuleComp::Lit(name)) => out.push(name.clone()),
            Some(RuleComp::Glob(_, glob)) => {
                for fill in FILLS {
                    out.push(glob.replace('*', fill).replace('?', "1"));
                }
            }
            _ => {}
        }
    }
    out
}

/// The fixed part of each name the name-anywhere read rules protect (`.env` of `.env` and
/// `.env.*`, `id_rsa`): a pattern that holds one names it, whatever suffix it asks for.
pub(super) fn protected_stems(protected: &[Protected]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in protected.iter().filter(|p| reach::is_anywhere(&p.comps)) {
        let stem = match p.comps.last() {
            Some(RuleComp::Lit(name)) => name.as_str(),
            Some(RuleComp::Glob(_, glob)) => {
                let fixed = glob
                    .find(['*', '?', '['])
                    .map_or(glob.as_str(), |at| &glob[..at]);
                fixed.trim_end_matches('.')
            }
            _ => continue,
        };
        let stem = stem.to_ascii_lowercase();
        if stem.len() >= 3 && !out.contains(&stem) {
            out.push(stem);
        }
    }
    out
}

impl Policy {
    /// Whether a file named `name` is protected wherever it is (`.env`, `.env.prod`, `id_rsa`).
    pub(super) fn name_is_protected(&self, name: &str) -> bool {
        self.protected
            .iter()
            .filter(|p| reach::is_anywhere(&p.comps))
            .any(|p| match p.comps.last() {
                Some(RuleComp::Lit(n)) => n == name,
                Some(RuleComp::Glob(g, _)) => g.is_match(name),
                _ => false,
            })
    }
}

/// Whether a pattern holds a wildcard of fnmatch.
fn has_wildcard(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// The pathspecs of `git ls-files` / `git diff --name-only`: the words after the subcommand that
/// are not options.
fn git_pathspecs(c: &CommandUse) -> Vec<&str> {
    let words: Vec<&str> = c.argv.iter().map(|w| w.text.as_str()).collect();
    let Some(at) = words
        .iter()
        .position(|w| matches!(*w, "ls-files" | "diff" | "grep"))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut after_dashes = false;
    for w in &words[at + 1..] {
        if *w == "--" {
            after_dashes = true;
        } else if after_dashes || !w.starts_with('-') {
            out.push(*w);
        }
    }
    out
}

/// The values of the options `names` (`-g X`, `-gX`, `--glob X`, `--glob=X`).
fn option_values<'c>(c: &'c CommandUse, names: &[&str]) -> Vec<&'c str> {
    let mut out = Vec::new();
    let words = &c.argv;
    for (i, w) in words.iter().enumerate() {
        let t = w.text.as_str();
        for n in names {
            if t == *n {
                if let Some(v) = words.get(i + 1) {
                    out.push(v.text.as_str());
                }
            } else if let Some(v) = t.strip_prefix(n) {
                if let Some(v) = v.strip_prefix('=') {
                    out.push(v);
                } else if !n.starts_with("--") && !v.is_empty() {
                    out.push(v);
                }
            }
        }
    }
    out
}
