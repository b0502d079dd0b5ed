//! The policy and its evaluation: rate every finding of a command, or a file tool's path; the
//! strictest verdict wins and its reason names the rule and the part that decided.

use crate::paths::{Context, is_harmless_device, resolve};
use crate::rules::{self, BashRules, PathRules, PolicyError, RawRules, RuleList};
use crate::shell::{self, CommandUse, Finding, RedirectUse, excerpt_of};
use protocol::verdict::Verdict;
use protocol::worker::ToolRequest;

/// The built-in defaults, in config syntax.
pub const DEFAULTS_TOML: &str = include_str!("defaults.toml");

/// A verdict and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The verdict.
    pub verdict: Verdict,
    /// The rule that decided and what it matched, in words.
    pub reason: String,
}

/// Whether a file tool reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `read_file`, `list_dir`, `glob`, `grep`, or a `<` redirection.
    Read,
    /// `write_file`, `str_replace`, or a `>` redirection.
    Write,
}

/// A built, validated policy. Evaluating it cannot fail.
#[derive(Debug, Clone)]
pub struct Policy {
    default: Verdict,
    network: Verdict,
    bash: BashRules,
    read: PathRules,
    write: PathRules,
    /// The strictest verdict a read can get (its rules' actions and the default): as high as an
    /// argument naming a protected path can raise a command.
    max_read: Verdict,
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

    fn build(config: Option<(&str, &str)>) -> Result<Self, PolicyError> {
        let mut raw = RawRules::default();
        rules::load_into(&mut raw, DEFAULTS_TOML, "<built-in>", true)?;
        if let Some((text, file)) = config {
            rules::load_into(&mut raw, text, file, false)?;
        }
        let default = raw.default.unwrap_or(Verdict::Ask);
        let read = rules::compile_paths(RuleList::Read, raw.read)?;
        let max_read = read
            .rules
            .iter()
            .map(|r| r.action)
            .fold(default, Verdict::max);
        Ok(Self {
            default,
            network: raw.network.unwrap_or(Verdict::Deny),
            bash: rules::compile_bash(raw.bash)?,
            read,
            write: rules::compile_paths(RuleList::Write, raw.write)?,
            max_read,
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

    /// Rates a tool request.
    pub fn check_tool(&self, tool: &ToolRequest, ctx: &Context<'_>) -> Decision {
        let here = || ".".to_owned();
        match tool {
            ToolRequest::Bash(b) => self.check_bash(&b.command, ctx),
            ToolRequest::ReadFile(r) => self.check_path(Access::Read, &r.path, ctx),
            ToolRequest::ListDir(r) => {
                self.check_path(Access::Read, &r.path.clone().unwrap_or_else(here), ctx)
            }
            ToolRequest::Glob(r) => {
                self.check_path(Access::Read, &r.path.clone().unwrap_or_else(here), ctx)
            }
            ToolRequest::Grep(r) => {
                self.check_path(Access::Read, &r.path.clone().unwrap_or_else(here), ctx)
            }
            ToolRequest::WriteFile(r) => self.check_path(Access::Write, &r.path, ctx),
            ToolRequest::StrReplace(r) => self.check_path(Access::Write, &r.path, ctx),
        }
    }

    /// Rates a file access by path.
    pub fn check_path(&self, access: Access, path: &str, ctx: &Context<'_>) -> Decision {
        self.rate_path(access, path, ctx, Explain::Yes)
    }

    /// Rates a bash command: every simple command, redirection and unresolved part it contains.
    ///
    /// First every finding is rated by its own rule alone. Arguments that name a protected path
    /// (`cat ~/.ssh/id_rsa`) can raise a command at most to `max_read`, so they are rated only when
    /// the strictest verdict so far is below that. Reasons are written once, by the same code, for
    /// the finding that decided (the first with the strictest verdict).
    pub fn check_bash(&self, command: &str, ctx: &Context<'_>) -> Decision {
        let analysis = shell::analyze(command);
        let strictest = |args: Args| {
            let mut best: Option<(Verdict, &Finding)> = None;
            for finding in &analysis.findings {
                let Some(d) = self.rate(finding, ctx, Explain::No, args) else {
                    continue;
                };
                if best.is_none_or(|(verdict, _)| d.verdict > verdict) {
                    best = Some((d.verdict, finding));
                    if d.verdict == Verdict::Deny {
                        break;
                    }
                }
            }
            best
        };
        let mut best = strictest(Args::Skip);
        if best.is_none_or(|(verdict, _)| verdict < self.max_read) {
            best = strictest(Args::Rate);
        }
        best.and_then(|(_, finding)| self.rate(finding, ctx, Explain::Yes, Args::Rate))
            .unwrap_or_else(|| Decision {
                verdict: Verdict::Allow,
                reason: "the command runs nothing".into(),
            })
    }

    fn rate(
        &self,
        finding: &Finding,
        ctx: &Context<'_>,
        ex: Explain,
        args: Args,
    ) -> Option<Decision> {
        match finding {
            Finding::Command(c) => self.rate_command(c, ctx, ex, args),
            Finding::Redirect(r) => Some(self.rate_redirect(r, ctx, ex)),
            Finding::Unresolved { what, why } => Some(Decision {
                verdict: Verdict::Ask,
                reason: ex.say(|| format!("`{}`: {why}", excerpt_of(what))),
            }),
        }
    }

    fn rate_path(&self, access: Access, path: &str, ctx: &Context<'_>, ex: Explain) -> Decision {
        let abs = resolve(path, ctx);
        let in_home = ctx.home.and_then(|h| abs.strip_prefix(h).ok());
        let in_ws = abs.strip_prefix(ctx.workspace).ok();
        let (rules, verb) = match access {
            Access::Read => (&self.read, "reading"),
            Access::Write => (&self.write, "writing"),
        };
        match rules.last_match(&abs, in_home, in_ws) {
            Some(rule) => Decision {
                verdict: rule.action,
                reason: ex.say(|| format!("{verb} {} matches {rule}", abs.display())),
            },
            None => Decision {
                verdict: self.default,
                reason: ex.say(|| {
                    format!(
                        "{verb} {} matches no {} rule; the default is {}",
                        abs.display(),
                        rules_name(access),
                        self.default
                    )
                }),
            },
        }
    }

    fn rate_command(
        &self,
        c: &CommandUse,
        ctx: &Context<'_>,
        ex: Explain,
        args: Args,
    ) -> Option<Decision> {
        let line = c.line();
        let rule = self.bash.last_match(&line);
        let mut decision = match rule {
            Some(rule) => Some(Decision {
                verdict: rule.action,
                reason: ex.say(|| format!("`{}` matches {rule}", excerpt_of(&line))),
            }),
            // A wrapper's own line counts only where a rule names it; the command inside is rated too.
            None if c.transparent => None,
            None => Some(Decision {
                verdict: self.default,
                reason: ex.say(|| {
                    format!(
                        "`{}` matches no bash rule; the default is {}",
                        excerpt_of(&line),
                        self.default
                    )
                }),
            }),
        };
        let verdict = |d: &Option<Decision>| d.as_ref().map_or(Verdict::Allow, |d| d.verdict);
        if let Some(cap) = c.cap
            && (verdict(&decision) < Verdict::Ask
                || (rule.is_none() && verdict(&decision) == Verdict::Ask))
        {
            decision = Some(Decision {
                verdict: Verdict::Ask,
                reason: ex.say(|| format!("`{}`: {cap}", excerpt_of(&line))),
            });
        }
        // Arguments that name a protected file (`cat ~/.ssh/id_rsa`) raise the verdict.
        if args == Args::Skip || verdict(&decision) >= self.max_read {
            return decision;
        }
        for arg in c
            .argv
            .iter()
            .skip(1)
            .filter(|w| !w.dynamic && !w.has_glob())
        {
            let value = match arg.text.split_once('=') {
                Some((key, value)) if key.starts_with("--") => value,
                _ => arg.text.as_str(),
            };
            if value.is_empty() || value.starts_with('-') {
                continue;
            }
            let read = self.rate_path(Access::Read, value, ctx, ex);
            if read.verdict > verdict(&decision) {
                decision = Some(Decision {
                    verdict: read.verdict,
                    reason: ex.say(|| {
                        format!(
                            "`{}` names a protected path: {}",
                            excerpt_of(&line),
                            read.reason
                        )
                    }),
                });
            }
        }
        decision
    }

    fn rate_redirect(&self, r: &RedirectUse, ctx: &Context<'_>, ex: Explain) -> Decision {
        let target = &r.target;
        let op = if r.write { ">" } else { "<" };
        if target.dynamic || target.has_glob() {
            return Decision {
                verdict: Verdict::Ask,
                reason: ex.say(|| {
                    format!(
                        "`{op} {}`: the redirection target is only known at run time",
                        excerpt_of(&target.text)
                    )
                }),
            };
        }
        if is_harmless_device(&target.text) {
            return Decision {
                verdict: Verdict::Allow,
                reason: ex.say(|| format!("`{op} {}` opens no file", target.text)),
            };
        }
        let path = &target.text;
        if r.write {
            let d = self.rate_path(Access::Write, path, ctx, ex);
            if d.verdict >= Verdict::Ask {
                return Decision {
                    verdict: d.verdict,
                    reason: ex.say(|| format!("`> {}`: {}", excerpt_of(path), d.reason)),
                };
            }
            // Writing files from bash asks even where the write_file tool would not: the policy
            // cannot see what else the command does to it.
            Decision {
                verdict: Verdict::Ask,
                reason: ex.say(|| {
                    format!(
                        "`> {}`: bash redirects to a file ask (use write_file to write files)",
                        excerpt_of(path)
                    )
                }),
            }
        } else {
            let d = self.rate_path(Access::Read, path, ctx, ex);
            Decision {
                verdict: d.verdict,
                reason: ex.say(|| format!("`< {}`: {}", excerpt_of(path), d.reason)),
            }
        }
    }
}

/// Whether a command's arguments are rated as paths it may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Args {
    Rate,
    Skip,
}

/// Whether to write the reason of a decision: only the deciding finding's reason is ever shown,
/// and formatting one for every part of a compound command was most of the rating time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Explain {
    Yes,
    No,
}

impl Explain {
    fn say(self, reason: impl FnOnce() -> String) -> String {
        match self {
            Explain::Yes => reason(),
            Explain::No => String::new(),
        }
    }
}

fn rules_name(access: Access) -> &'static str {
    match access {
        Access::Read => "read",
        Access::Write => "write",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The verdict with every argument of every command rated as a path: what `check_bash` must
    /// agree with, though it skips arguments that cannot change the verdict.
    fn exhaustive(policy: &Policy, command: &str, ctx: &Context<'_>) -> Verdict {
        shell::analyze(command)
            .findings
            .iter()
            .filter_map(|f| policy.rate(f, ctx, Explain::No, Args::Rate))
            .map(|d| d.verdict)
            .max()
            .unwrap_or(Verdict::Allow)
    }

    #[test]
    fn skipping_arguments_never_changes_a_verdict() {
        let ctx = Context {
            workspace: Path::new("/work/project"),
            home: Some(Path::new("/home/dev")),
        };
        let denying = "[policy]\nread = [{ path = \"**/*.key\", action = \"deny\" }, \
                       { path = \"~/.ssh/**\", action = \"deny\" }]\n";
        let policies = [
            Policy::builtin().unwrap(),
            Policy::from_config(denying, "test.toml").unwrap(),
        ];
        let table = include_str!("../tests/data/cases.txt");
        let extra = [
            "echo $(date); cat a.key",
            "cat a.key; echo $(date)",
            "ls > out; cat ~/.ssh/id_rsa",
            "sudo ls; cat x.key",
        ];
        let commands = table
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                l.split_once(char::is_whitespace)
                    .map_or("", |(_, c)| c.trim_start())
            })
            .map(|c| c.replace('⏎', "\n"))
            .chain(extra.iter().map(|c| c.to_string()));
        let mut checked = 0;
        for command in commands {
            for policy in &policies {
                let got = policy.check_bash(&command, &ctx).verdict;
                assert_eq!(got, exhaustive(policy, &command, &ctx), "{command}");
                checked += 1;
            }
        }
        assert!(checked > 900, "only {checked} checks");
    }
}
