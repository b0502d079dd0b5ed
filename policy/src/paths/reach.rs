//! Whether a path argument could reach a protected path: a glob (`~/.ssh/id_*`) that could match
//! one, or a directory read recursively (`grep -r x ~`) that contains one.
//!
//! Both sides are lists of components. A protected pattern's components are literals, globs, or
//! `**` (any depth); an argument's are literals or bash globs (which, unlike the rules' globs,
//! never match a leading `.` unless written). The answer errs towards "could".

use globset::{Glob, GlobMatcher};
use std::path::Path;

/// One component of a protected pattern.
#[derive(Debug, Clone)]
pub enum RuleComp {
    /// A literal name.
    Lit(String),
    /// A glob within one component.
    Glob(GlobMatcher, String),
    /// `**`: any number of components.
    AnyDepth,
}

/// One component of an argument.
#[derive(Debug, Clone, Copy)]
pub enum ArgComp<'a> {
    /// A literal name.
    Lit(&'a str),
    /// A bash glob within one component.
    Glob(&'a str),
}

/// Splits a rule pattern (relative to its anchor) into components.
pub fn rule_components(pattern: &str) -> Vec<RuleComp> {
    pattern
        .split('/')
        .filter(|c| !c.is_empty())
        .map(|c| {
            if c == "**" {
                RuleComp::AnyDepth
            } else if c.contains(['*', '?', '[', '{']) {
                match Glob::new(c) {
                    Ok(g) => RuleComp::Glob(g.compile_matcher(), c.to_owned()),
                    // Not a valid glob: it can only be matched as written.
                    Err(_) => RuleComp::Lit(c.to_owned()),
                }
            } else {
                RuleComp::Lit(c.to_owned())
            }
        })
        .collect()
}

/// The literal components of an absolute path (the anchor of a rule).
pub fn anchor_components(path: &Path) -> Vec<RuleComp> {
    path.to_str().map(rule_components).unwrap_or_default()
}

/// Splits an absolute argument path into components; those at or after byte `glob_from` that
/// hold a glob character are globs.
pub fn arg_components(path: &str, glob_from: Option<usize>) -> Vec<ArgComp<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    for c in path.split('/') {
        let start = at;
        at += c.len() + 1;
        if c.is_empty() {
            continue;
        }
        let globbed =
            glob_from.is_some_and(|g| start + c.len() > g) && c.contains(['*', '?', '[', '{']);
        out.push(if globbed {
            ArgComp::Glob(c)
        } else {
            ArgComp::Lit(c)
        });
    }
    out
}

/// Whether the argument could name a path the rule matches (or, `recursive`, a directory holding
/// one). A rule that starts with `**` (a file name anywhere, like `.env`) is not counted for what
/// a recursive read contains: every directory could.
#[inline]
pub fn could_reach(
    arg: &[ArgComp<'_>],
    anchor: &[RuleComp],
    rule: &[RuleComp],
    recursive: bool,
) -> bool {
    // `reach`'s first step, before anything is set up for it: a literal first component of the
    // argument that differs from the rule's literal first one reaches nothing (most rules).
    if let (Some(ArgComp::Lit(a)), Some(RuleComp::Lit(r))) =
        (arg.first(), anchor.first().or(rule.first()))
        && a != r
    {
        return false;
    }
    let rule_last = rule.last().or(anchor.last());
    let rule = Chain(anchor, rule);
    let recursive = recursive && !(anchor.is_empty() && is_anywhere(rule.1));
    // Read as it is (not recursively), the argument's last component can only be matched by the
    // rule's last one when that is a literal (anything else would leave it unmatched): a name
    // anywhere (`/**/.env`) meets only arguments that end in it.
    if !recursive
        && let (Some(ArgComp::Lit(a)), Some(RuleComp::Lit(r))) = (arg.last(), rule_last)
        && a != r
    {
        return false;
    }
    let mut budget = 10_000u32;
    reach(arg, rule, 0, recursive, &mut budget)
}

/// A rule's components after its anchor's, without copying either.
#[derive(Debug, Clone, Copy)]
struct Chain<'a>(&'a [RuleComp], &'a [RuleComp]);

impl Chain<'_> {
    fn get(&self, i: usize) -> Option<&RuleComp> {
        match i.checked_sub(self.0.len()) {
            None => self.0.get(i),
            Some(j) => self.1.get(j),
        }
    }

    fn rest_is_any_depth(&self, from: usize) -> bool {
        (from..self.0.len() + self.1.len()).all(|i| matches!(self.get(i), Some(RuleComp::AnyDepth)))
    }
}

/// Whether a rule names a file anywhere (`/**/.env`) rather than under a fixed directory.
pub fn is_anywhere(rule: &[RuleComp]) -> bool {
    matches!(rule.first(), Some(RuleComp::AnyDepth))
}

fn reach(
    arg: &[ArgComp<'_>],
    rule: Chain<'_>,
    at: usize,
    recursive: bool,
    budget: &mut u32,
) -> bool {
    if *budget == 0 {
        return true; // too much to decide: say it could
    }
    *budget -= 1;
    match (arg.first(), rule.get(at)) {
        (None, None) => true,
        (None, Some(_)) => recursive || rule.rest_is_any_depth(at),
        (Some(_), None) => false,
        (Some(_), Some(RuleComp::AnyDepth)) => {
            reach(arg, rule, at + 1, recursive, budget)
                || reach(&arg[1..], rule, at, recursive, budget)
        }
        (Some(a), Some(r)) => {
            comp_overlaps(*a, r) && reach(&arg[1..], rule, at + 1, recursive, budget)
        }
    }
}

/// Whether one argument component and one rule component could name the same file.
fn comp_overlaps(a: ArgComp<'_>, r: &RuleComp) -> bool {
    match (a, r) {
        (ArgComp::Lit(a), RuleComp::Lit(r)) => a == r,
        (ArgComp::Lit(a), RuleComp::Glob(g, _)) => g.is_match(a),
        (ArgComp::Glob(g), r) if g.contains('{') => match expand_braces(g) {
            Some(alternatives) => alternatives.iter().any(|a| {
                let a = if a.contains(['*', '?', '[']) {
                    ArgComp::Glob(a)
                } else {
                    ArgComp::Lit(a)
                };
                comp_overlaps(a, r)
            }),
            None => true,
        },
        (ArgComp::Glob(g), RuleComp::Lit(r)) => bash_glob_matches(g, r),
        (ArgComp::Glob(g), RuleComp::Glob(_, r)) => {
            // Two patterns: they could meet, unless the rule wants a dot file the glob cannot name.
            !r.starts_with('.') || g.starts_with('.')
        }
        (_, RuleComp::AnyDepth) => true,
    }
}

/// `pre{a,b}post` → `prea`, `prebpost`… (one level; `None` for nested or unbalanced braces).
fn expand_braces(glob: &str) -> Option<Vec<String>> {
    let open = glob.find('{')?;
    let close = open + glob[open..].find('}')?;
    let inner = &glob[open + 1..close];
    let (pre, post) = (&glob[..open], &glob[close + 1..]);
    if inner.contains('{') || post.contains(['{', '}']) {
        return None;
    }
    Some(
        inner
            .split(',')
            .map(|alt| format!("{pre}{alt}{post}"))
            .collect(),
    )
}

/// Whether a bash glob component matches `name` (a leading `.` must be matched literally).
fn bash_glob_matches(glob: &str, name: &str) -> bool {
    if name.starts_with('.') && !glob.starts_with('.') {
        return false;
    }
    match Glob::new(glob) {
        Ok(g) => g.compile_matcher().is_match(name),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reaches(arg: &str, glob_from: Option<usize>, rule: &str, recursive: bool) -> bool {
        could_reach(
            &arg_components(arg, glob_from),
            &[],
            &rule_components(rule),
            recursive,
        )
    }

    #[test]
    fn globs_meet_the_patterns_they_could_match() {
        assert!(reaches(
            "/home/dev/.ssh/id_*",
            Some(15),
            "/home/dev/.ssh/**",
            false
        ));
        assert!(reaches(
            "/home/dev/.a*/credentials",
            Some(10),
            "/home/dev/.aws/**",
            false
        ));
        assert!(reaches("/w/p/*", Some(5), "/**/id_rsa", false));
        assert!(!reaches("/w/p/*.md", Some(5), "/**/id_rsa", false));
        assert!(
            !reaches("/w/p/*", Some(5), "/**/.env", false),
            "* skips dot files"
        );
        assert!(reaches("/w/p/.*", Some(5), "/**/.env", false));
        assert!(!reaches(
            "/w/p/src/*.rs",
            Some(9),
            "/home/dev/.ssh/**",
            false
        ));
        assert!(reaches("/etc/sha*", Some(5), "/etc/shadow*", false));
        assert!(
            reaches("/w/p/{x,.env}", Some(5), "/**/.env", false),
            "braces name dot files"
        );
        assert!(!reaches("/w/p/{src,tests}", Some(5), "/**/.env.*", false));
        assert!(!reaches("/w/p/src/{a,b}.rs", Some(9), "/**/id_rsa", false));
    }

    #[test]
    fn recursive_reads_reach_what_their_directory_contains() {
        assert!(reaches("/home/dev", None, "/home/dev/.ssh/**", true));
        assert!(reaches("/", None, "/home/dev/.ssh/**", true));
        assert!(!reaches("/home/dev", None, "/home/dev/.ssh/**", false));
        assert!(!reaches("/w/project", None, "/home/dev/.ssh/**", true));
        assert!(
            !reaches("/w/project", None, "/**/.env", true),
            "anywhere-names are not counted"
        );
        assert!(reaches("/home/dev/.ssh", None, "/home/dev/.ssh/**", false));
    }

    #[test]
    fn the_shortcuts_answer_as_the_search_does() {
        // First components differ: nothing below reaches the rule.
        assert!(!reaches("/work/p", None, "/home/dev/.ssh/**", true));
        assert!(reaches("/home", None, "/home/dev/.ssh/**", true));
        // A name anywhere: only an argument ending in it, or a glob that could.
        assert!(!reaches("/w/p/src", None, "/**/.env", false));
        assert!(reaches("/w/p/src/.env", None, "/**/.env", false));
        assert!(reaches("/.env", None, "/**/.env", false));
        assert!(reaches("/w/p/.e*", Some(5), "/**/.env", false));
        // A rule ending in `**` or a glob keeps the search.
        assert!(reaches(
            "/home/dev/.ssh/id_rsa",
            None,
            "/home/dev/.ssh/**",
            false
        ));
        assert!(reaches("/etc/shadow-", None, "/etc/shadow*", false));
        assert!(!reaches("/etc/passwd", None, "/etc/shadow*", false));
    }
}
