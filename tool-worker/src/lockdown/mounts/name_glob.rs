//! Compiled matchers for the glob components of protected-path patterns (`*.code-workspace`,
//! the `*` of `.git/worktrees/*/hooks`), kept for the life of the process.
//!
//! Every call scans the writable roots for protected paths three times (the worker as it locks
//! down; the supervisor as a pooled worker is taken and after the call), and `globset` compiles
//! a glob into a regex, whose DFA costs tens of microseconds to build: compiled at every scan,
//! the default list's globs were a quarter of the supervisor's CPU per call. The patterns come
//! from configuration, so the set is small; it is bounded all the same, past which a glob is
//! compiled for its one use. The zygote compiles the default list's globs before it forks, so
//! its workers start with them.

use globset::{Glob, GlobMatcher};
use std::path::{Component, Path};
use std::sync::Mutex;

/// Most distinct globs kept.
const MAX_KEPT: usize = 64;

/// Compiled globs by their text, up to a bound.
struct Kept {
    matchers: Vec<(String, GlobMatcher)>,
    max: usize,
}

impl Kept {
    fn matcher(&mut self, name: &str) -> Option<GlobMatcher> {
        if let Some((_, m)) = self.matchers.iter().find(|(n, _)| n == name) {
            return Some(m.clone());
        }
        let compiled = Glob::new(name).ok()?.compile_matcher();
        if self.matchers.len() < self.max {
            self.matchers.push((name.to_owned(), compiled.clone()));
        }
        Some(compiled)
    }

    #[cfg(test)]
    fn holds(&self, name: &str) -> bool {
        self.matchers.iter().any(|(n, _)| n == name)
    }
}

static KEPT: Mutex<Kept> = Mutex::new(Kept {
    matchers: Vec::new(),
    max: MAX_KEPT,
});

/// Whether a path component is a glob rather than a literal name.
pub fn is_glob(name: &str) -> bool {
    name.contains(['*', '?', '['])
}

/// The matcher of one glob component; `None` if it is not a valid glob.
pub fn matcher(name: &str) -> Option<GlobMatcher> {
    // A panic while holding the lock leaves a consistent list behind; keep using it.
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).matcher(name)
}

/// Compiles the glob components of `patterns` ahead of their first scan.
pub fn prepare<'a>(patterns: impl IntoIterator<Item = &'a str>) {
    for pattern in patterns {
        for component in Path::new(pattern).components() {
            if let Component::Normal(name) = component
                && let Some(name) = name.to_str()
                && is_glob(name)
                && name != "**"
            {
                let _ = matcher(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(max: usize) -> Kept {
        Kept {
            matchers: Vec::new(),
            max,
        }
    }

    #[test]
    fn a_kept_matcher_matches_as_a_fresh_one_does() {
        let mut kept = kept(4);
        for _ in 0..2 {
            let m = kept.matcher("*.code-workspace").expect("a valid glob");
            assert!(m.is_match("team.code-workspace"));
            assert!(!m.is_match("team.code-workspace.bak"));
            assert!(!m.is_match("code-workspace"));
        }
        assert_eq!(kept.matchers.len(), 1, "compiled once, kept once");
    }

    #[test]
    fn an_invalid_glob_matches_nothing_and_is_not_kept() {
        let mut kept = kept(4);
        assert!(kept.matcher("[unclosed").is_none());
        assert!(kept.matchers.is_empty());
    }

    #[test]
    fn past_the_bound_globs_still_match_but_are_not_kept() {
        let mut kept = kept(2);
        for i in 0..5 {
            let m = kept.matcher(&format!("bound-{i}-*")).expect("a valid glob");
            assert!(m.is_match(format!("bound-{i}-x")));
            assert!(!m.is_match(format!("bound-{i}")));
        }
        assert_eq!(kept.matchers.len(), 2);
        assert!(kept.holds("bound-0-*") && !kept.holds("bound-4-*"));
    }

    #[test]
    fn prepare_keeps_the_glob_components_only() {
        prepare([".git/worktrees/*/prepared-?", "literal/prepared"]);
        let kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        assert!(kept.holds("prepared-?"));
        assert!(!kept.holds("prepared") && !kept.holds("literal"));
    }
}
