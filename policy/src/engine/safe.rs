//! Reads by allowlist: the subtrees the read rules allow whole (`/usr/**`, `~/.rustup/
//! toolchains/**`, the workspace's `**`), so that a read outside every one of them — a credential
//! file no rule names — gets the default verdict (`ask`) instead of being allowed because no
//! protected pattern matched it.
//!
//! The exact verdict of a path is always the rules' (last match wins); the roots answer two
//! quicker questions: "is this plain path allowed without asking the glob sets?" (with the
//! protected pieces of [`super::reads::Prefilter`]) and "could this glob or recursive read reach a
//! path no allow rule covers?".

use super::Policy;
use super::decision::{Access, ApprovalKey, Part};
use super::reads::{Anchor, How};
use crate::paths::Context;
use crate::paths::reach::{self, ArgComp};
use crate::rules::PathRules;
use crate::shell::excerpt_of;
use protocol::verdict::Verdict;
use std::path::{Path, PathBuf};

/// One read rule of the form `PREFIX/**` (or `**`) whose prefix has no glob character: every
/// path under `PREFIX` matches it.
#[derive(Debug, Clone)]
struct Root {
    anchor: Anchor,
    /// The prefix relative to the anchor (empty: the anchor itself).
    prefix: PathBuf,
    /// The rule's index in the read rules.
    rule: usize,
}

/// The subtrees the read rules allow whole.
#[derive(Debug, Clone, Default)]
pub(super) struct AllowRoots {
    roots: Vec<Root>,
}

impl AllowRoots {
    /// The allow rules of `read` that cover a whole subtree.
    pub(super) fn of(read: &PathRules) -> Self {
        let roots = read
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.action == Verdict::Allow)
            .filter_map(|(i, r)| {
                let p = r.pattern.as_str();
                let (anchor, rest) = if let Some(rest) = p.strip_prefix('/') {
                    (Anchor::Root, rest)
                } else if let Some(rest) = p.strip_prefix("~/") {
                    (Anchor::Home, rest)
                } else if p.starts_with('~') {
                    return None;
                } else {
                    (Anchor::Workspace, p.strip_prefix("./").unwrap_or(p))
                };
                let prefix = if rest == "**" {
                    ""
                } else {
                    rest.strip_suffix("/**")?
                };
                if prefix.contains(['*', '?', '[', ']', '{', '}', '\\']) {
                    return None;
                }
                let prefix = PathBuf::from(prefix);
                // `a/../b/**` is not what it reads as; such a rule only counts as written.
                if prefix
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
                {
                    return None;
                }
                Some(Root {
                    anchor,
                    prefix,
                    rule: i,
                })
            })
            .collect();
        Self { roots }
    }

    /// The index of an allow rule whose whole subtree holds `abs` (absolute, folded), if any.
    pub(super) fn covering(&self, abs: &Path, ctx: &Context<'_>) -> Option<usize> {
        self.roots.iter().rev().find_map(|r| {
            let rel = match r.anchor {
                Anchor::Root => abs.strip_prefix("/").ok()?,
                Anchor::Home => abs.strip_prefix(ctx.home?).ok()?,
                Anchor::Workspace => abs.strip_prefix(ctx.workspace).ok()?,
            };
            rel.starts_with(&r.prefix).then_some(r.rule)
        })
    }
}

impl Policy {
    /// A glob or a recursive read (`cat ~/.c*/token`, `grep -r x /`): when what it could reach
    /// is not all under a subtree an allow rule covers whole, it could read a path no rule
    /// allows, which gets the default. Reads of names (`ls -R ~`) are not counted: the allowlist
    /// keeps contents.
    pub(super) fn rate_reach_unlisted(
        &self,
        abs: &Path,
        glob: bool,
        how: How,
        line: &str,
        ctx: &Context<'_>,
        parts: &mut Vec<Part>,
    ) {
        if self.default == Verdict::Allow || how.names_only {
            return;
        }
        let Some(abs_text) = abs.to_str() else { return };
        // What it reaches lies under its components up to the first glob.
        let mut fixed = PathBuf::from("/");
        for comp in reach::arg_components(abs_text, glob.then_some(0)) {
            match comp {
                ArgComp::Lit(c) => fixed.push(c),
                ArgComp::Glob(_) => break,
            }
        }
        if self.allow_roots.covering(&fixed, ctx).is_some() {
            return;
        }
        let what = if how.recursive {
            "reads a directory that holds"
        } else {
            "is a pattern that could match"
        };
        parts.push(Part {
            verdict: self.default,
            rule: "the default".into(),
            why: format!(
                "`{}`: `{abs_text}` {what} paths outside the known-safe read paths (the \
                 workspace, system trees, toolchains, the read rules that allow); the default is {}",
                excerpt_of(line),
                self.default
            ),
            key: ApprovalKey::Path {
                access: Access::Read,
                path: if how.recursive {
                    format!("{abs_text}/**")
                } else {
                    abs_text.to_owned()
                },
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{self, RawRules, RuleList};

    fn roots(toml: &str) -> (AllowRoots, PathRules) {
        let mut raw = RawRules::default();
        rules::load_into(&mut raw, toml, "t.toml", false).unwrap();
        let read = rules::compile_paths(RuleList::Read, raw.read).unwrap();
        (AllowRoots::of(&read), read)
    }

    #[test]
    fn only_literal_subtrees_are_roots() {
        let (r, _) = roots(
            r#"[policy]
read = [
  { path = "**", action = "allow" },
  { path = "/usr/**", action = "allow" },
  { path = "~/.cargo/registry/src/**", action = "allow" },
  { path = "/etc/hosts", action = "allow" },
  { path = "/lib*/**", action = "allow" },
  { path = "/opt/../home/**", action = "allow" },
  { path = "/srv/**", action = "ask" },
]"#,
        );
        let ctx = Context {
            workspace: Path::new("/w/p"),
            home: Some(Path::new("/home/u")),
        };
        let at = |p: &str| r.covering(Path::new(p), &ctx);
        assert_eq!(at("/w/p/src/lib.rs"), Some(0));
        assert_eq!(at("/w/p"), Some(0));
        assert_eq!(at("/w/other"), None);
        assert_eq!(at("/usr/include/stdio.h"), Some(1));
        assert_eq!(at("/usr"), Some(1));
        assert_eq!(at("/usrx/y"), None);
        assert_eq!(at("/home/u/.cargo/registry/src/x/lib.rs"), Some(2));
        assert_eq!(at("/home/u/.cargo/credentials.toml"), None);
        assert_eq!(at("/etc/hosts"), None, "an exact rule is no subtree");
        assert_eq!(at("/lib64/x"), None, "a glob prefix is not a root");
        assert_eq!(at("/home/u/x"), None, "a prefix with `..` is not a root");
        assert_eq!(at("/srv/x"), None, "an ask rule is not a root");
    }
}
