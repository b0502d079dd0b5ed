//! The policy and its evaluation: every part of a call is rated — each simple command against
//! the rules and its option spec, each path it reads or writes, each construct the analysis cannot
//! see through — and the decision lists the parts that asked or were denied; the strictest wins.
//!
//! Layout: [`decision`] (decisions, parts, approval keys and the remembered set) · `command`
//! (a simple command: rules, spec, version queries) · `reads` (paths: arguments, globs,
//! recursion, `cd`, redirections) · `safe` (the subtrees the read rules allow whole: reads are
//! allowed by allowlist).

mod command;
pub mod decision;
mod options;
mod reads;
mod runtime;
mod safe;

pub use decision::{Access, ApprovalKey, Approvals, Decision, Part};

use crate::paths::Context;
use crate::rules::{self, BashRules, PathRules, PolicyError, RawRules, RuleList};
use crate::shell::{self, Finding, excerpt_of};
use crate::specs::Specs;
use protocol::verdict::Verdict;
use protocol::worker::ToolRequest;
use reads::{Cwds, Prefilter, Protected};
use safe::AllowRoots;

/// The built-in defaults, in config syntax.
pub const DEFAULTS_TOML: &str = include_str!("../defaults.toml");

/// Which shell runs bash calls: what the analysis reads the text as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// `/bin/bash --noprofile --norc -c` (the tool-worker's shell).
    Bash,
    /// A POSIX shell (dash): every construct bash reads differently asks.
    Posix,
}

/// A built, validated policy. Evaluating it cannot fail.
#[derive(Debug, Clone)]
pub struct Policy {
    default: Verdict,
    network: Verdict,
    /// What a command of the build family (it runs the project's code) gets when its spec fits.
    project_code: Verdict,
    bash: BashRules,
    read: PathRules,
    write: PathRules,
    /// The option specs, unless the config replaced the built-in defaults.
    specs: Option<Specs>,
    /// Read rules stricter than allow, as components, for globs and recursive reads.
    protected: Vec<Protected>,
    /// The names the name-anywhere read rules protect, as such files are usually named: what
    /// a pattern that selects files at run time (`find -name`, a git pathspec) is tried on.
    protected_names: Vec<String>,
    /// The fixed part of those names (`.env`, `id_rsa`), lower-case: a pattern holding one
    /// names a protected file whatever suffix it asks for (`*.env.qa`).
    protected_stems: Vec<String>,
    /// A literal piece of every read rule stricter than allow: a path containing none of them
    /// is allowed by the catch-all `/**` rule without asking the glob sets (most arguments).
    read_prefilter: Option<Prefilter>,
    /// The subtrees the read rules allow whole: a read outside all of them that no rule allows
    /// gets the default (reads are allowed by allowlist).
    allow_roots: AllowRoots,
    shell: Shell,
}

impl Policy {
    /// The built-in policy alone.
    pub fn builtin() -> Result<Self, PolicyError> {
        Self::build(None)
    }

    /// The built-in policy extended (or replaced) by the `[policy]` section of a config file.
    /// Other sections of the file are ignored here.
    pub fn from_config(text: &str, file: &str) -> Result<Self, PolicyError> {
        Self::build(Some((text, file)))
    }

    /// The same policy, for commands run by `shell`.
    pub fn for_shell(mut self, shell: Shell) -> Self {
        self.shell = shell;
        self
    }

    fn build(config: Option<(&str, &str)>) -> Result<Self, PolicyError> {
        let mut raw = RawRules::default();
        rules::load_into(&mut raw, DEFAULTS_TOML, "<built-in>", true)?;
        if let Some((text, file)) = config {
            rules::load_into(&mut raw, text, file, false)?;
        }
        let default = raw.default.unwrap_or(Verdict::Ask);
        let read = rules::compile_paths(RuleList::Read, raw.read)?;
        let specs = if raw.no_specs {
            None
        } else {
            Some(Specs::builtin().map_err(|e| PolicyError::Value {
                file: "<built-in>".into(),
                line: 0,
                key: "specs",
                message: e.to_string(),
            })?)
        };
        let protected = reads::protected(&read);
        let protected_names = runtime::protected_names(&protected);
        let protected_stems = runtime::protected_stems(&protected);
        let read_prefilter = reads::prefilter(&read);
        let allow_roots = AllowRoots::of(&read);
        Ok(Self {
            default,
            network: raw.network.unwrap_or(Verdict::Deny),
            project_code: raw.project_code.unwrap_or(Verdict::Allow),
            bash: rules::compile_bash(raw.bash)?,
            read,
            write: rules::compile_paths(RuleList::Write, raw.write)?,
            specs,
            protected,
            protected_names,
            protected_stems,
            read_prefilter,
            allow_roots,
            shell: Shell::Bash,
        })
    }

    /// Whether tools may use the network.
    pub fn network(&self) -> Verdict {
        self.network
    }

    /// The verdict when no rule matches.
    pub fn default_verdict(&self) -> Verdict {
        self.default
    }

    /// The option specs in force (none when the config replaced the built-in defaults).
    pub fn specs(&self) -> Option<&Specs> {
        self.specs.as_ref()
    }

    /// Rates a tool request.
    pub fn check_tool(&self, tool: &ToolRequest, ctx: &Context<'_>) -> Decision {
        let here = || ".".to_owned();
        match tool {
            ToolRequest::Bash(b) => self.check_bash(&b.command, ctx),
            ToolRequest::ReadFile(r) => self.check_path(Access::Read, &r.path, ctx),
            // Listing names is not reading contents: only a rule that names the path asks.
            ToolRequest::ListDir(r) => {
                self.check_read(&r.path.clone().unwrap_or_else(here), ctx, true, false)
            }
            ToolRequest::Glob(r) => {
                self.check_read(&r.path.clone().unwrap_or_else(here), ctx, true, false)
            }
            // grep reads every file under its path.
            ToolRequest::Grep(r) => {
                self.check_read(&r.path.clone().unwrap_or_else(here), ctx, false, true)
            }
            ToolRequest::WriteFile(r) => self.check_path(Access::Write, &r.path, ctx),
            ToolRequest::StrReplace(r) => self.check_path(Access::Write, &r.path, ctx),
        }
    }

    /// Rates a file tool's read of `path`: of names only (`list_dir`, `glob`: only a rule that
    /// names the path asks, not the allowlist's default), or of what a directory holds at any
    /// depth (`grep`).
    fn check_read(&self, path: &str, ctx: &Context<'_>, names_only: bool, tree: bool) -> Decision {
        let abs = crate::paths::resolve(path, ctx);
        let (verdict, rule) = self.verdict_of(Access::Read, &abs, ctx);
        let mut parts = Vec::new();
        if verdict > Verdict::Allow && !(names_only && rule.is_none()) {
            let (rule, why) = self.explain(Access::Read, &abs, rule);
            parts.push(Part {
                verdict,
                rule,
                why,
                key: ApprovalKey::Path {
                    access: Access::Read,
                    path: abs.display().to_string(),
                },
            });
        }
        if tree {
            self.rate_tree(&abs, ctx, &mut parts);
        }
        if parts.is_empty() {
            return Decision::allow(format!("reading {} is allowed", abs.display()));
        }
        Decision::of(parts, "")
    }

    /// Rates a file access by path.
    pub fn check_path(&self, access: Access, path: &str, ctx: &Context<'_>) -> Decision {
        let abs = crate::paths::resolve(path, ctx);
        let (verdict, rule, why) = self.rate_abs(access, &abs, ctx);
        let part = Part {
            verdict,
            rule,
            why,
            key: ApprovalKey::Path {
                access,
                path: abs.display().to_string(),
            },
        };
        if verdict == Verdict::Allow {
            return Decision::allow(part.why);
        }
        Decision::of(vec![part], "")
    }

    /// Rates a bash command: every simple command, path, redirection and unresolved part it
    /// contains. The decision lists every part that asked or was denied.
    pub fn check_bash(&self, command: &str, ctx: &Context<'_>) -> Decision {
        let analysis = match &self.specs {
            Some(specs) => shell::analyze_as(command, specs, self.shell == Shell::Posix),
            None => shell::analyze_as(command, &Specs::empty(), self.shell == Shell::Posix),
        };
        let cwds = Cwds::of(&analysis.findings, ctx).with_prefilter(
            self.read_prefilter.as_ref(),
            &self.allow_roots,
            ctx,
        );
        let mut parts = Vec::new();
        let mut line = String::new();
        for finding in &analysis.findings {
            if parts.len() > 200 {
                break;
            }
            match finding {
                Finding::Command(c) => self.rate_command(c, ctx, &cwds, &mut parts, &mut line),
                Finding::Redirect(r) => self.rate_redirect(r, ctx, &cwds, &mut parts),
                Finding::Unresolved { what, why } => parts.push(Part {
                    verdict: Verdict::Ask,
                    rule: "shell analysis".into(),
                    why: format!("`{}`: {why}", excerpt_of(what)),
                    key: ApprovalKey::Construct {
                        text: what.clone(),
                        why: why.to_string(),
                    },
                }),
            }
        }
        if cwds.produced_read.get() {
            self.rate_producers(&analysis.findings, ctx, &cwds, &mut parts);
        }
        Decision::of(parts, "every part is allowed")
    }

    /// The verdict for an absolute path by the `access` rules, and the rule that decided (none:
    /// the default).
    fn verdict_of(
        &self,
        access: Access,
        abs: &std::path::Path,
        ctx: &Context<'_>,
    ) -> (Verdict, Option<&rules::Rule>) {
        // A path under a subtree an allow rule covers whole, holding no piece of a stricter rule:
        // no stricter rule can match it, so the last match allows.
        if access == Access::Read
            && let Some(pieces) = &self.read_prefilter
            && let Some(text) = abs.to_str()
            && !pieces.may_match(text)
            && let Some(root) = self.allow_roots.covering(abs, ctx)
        {
            return (Verdict::Allow, self.read.rules.get(root));
        }
        let in_home = ctx.home.and_then(|h| abs.strip_prefix(h).ok());
        let in_ws = abs.strip_prefix(ctx.workspace).ok();
        let rules = match access {
            Access::Read => &self.read,
            Access::Write => &self.write,
        };
        match rules.last_match(abs, in_home, in_ws) {
            Some(rule) => (rule.action, Some(rule)),
            None => (self.default, None),
        }
    }

    /// The verdict, rule and reason for an absolute path by the `access` rules. The words are
    /// only written by callers that keep them (reasons were most of a verdict's time).
    fn rate_abs(
        &self,
        access: Access,
        abs: &std::path::Path,
        ctx: &Context<'_>,
    ) -> (Verdict, String, String) {
        let (verdict, rule) = self.verdict_of(access, abs, ctx);
        let (rule_name, why) = self.explain(access, abs, rule);
        (verdict, rule_name, why)
    }

    /// The rule's name and the reason for `abs` under it.
    fn explain(
        &self,
        access: Access,
        abs: &std::path::Path,
        rule: Option<&rules::Rule>,
    ) -> (String, String) {
        let (verb, list) = match access {
            Access::Read => ("reading", "read"),
            Access::Write => ("writing", "write"),
        };
        match rule {
            Some(rule) => (
                rule.to_string(),
                match &rule.why {
                    Some(why) => format!("{verb} {} matches {rule}: {why}", abs.display()),
                    None => format!("{verb} {} matches {rule}", abs.display()),
                },
            ),
            None if access == Access::Read => (
                "the default".into(),
                format!(
                    "reading {} is outside the known-safe read paths (the workspace, system \
                     trees, toolchains, the read rules that allow); the default is {}",
                    abs.display(),
                    self.default
                ),
            ),
            None => (
                "the default".into(),
                format!(
                    "{verb} {} matches no {list} rule; the default is {}",
                    abs.display(),
                    self.default
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn ctx() -> Context<'static> {
        Context {
            workspace: Path::new("/work/project"),
            home: Some(Path::new("/home/dev")),
        }
    }

    #[test]
    fn a_decision_lists_every_part_that_asked() {
        let p = Policy::builtin().unwrap();
        let d = p.check_bash("mkdir y && python3 evil.py; cat ~/.ssh/id_rsa", &ctx());
        assert_eq!(d.verdict, Verdict::Ask);
        assert_eq!(d.parts.len(), 3, "{:#?}", d.parts);
        let d = p.check_bash("ls && git status", &ctx());
        assert!(d.parts.is_empty(), "{:#?}", d.parts);
    }

    #[test]
    fn approvals_cover_exactly_what_was_approved() {
        let p = Policy::builtin().unwrap();
        let mut approved = Approvals::new();
        approved.remember(&p.check_bash("mkdir x", &ctx()));
        assert!(approved.covers(&p.check_bash("mkdir x", &ctx())));
        assert!(approved.covers(&p.check_bash("ls && mkdir x", &ctx())));
        assert!(!approved.covers(&p.check_bash("mkdir y", &ctx())));
        assert!(!approved.covers(&p.check_bash("mkdir x && python3 evil.py", &ctx())));
        assert!(!approved.covers(&p.check_bash("mkdir x; rm -rf /", &ctx())));
        let json = serde_json::to_string(&approved).unwrap();
        let back: Approvals = serde_json::from_str(&json).unwrap();
        assert_eq!(back, approved);
    }
}
