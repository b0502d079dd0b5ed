//! Rating one simple command: an explicit rule (the built-in denies, the config's rules) decides
//! when one matches; otherwise the command's option spec does (allow when every word fits it,
//! ask when one does not); a command with no spec gets the default. Version queries pass.

use super::Policy;
use super::decision::{ApprovalKey, Part};
use super::reads::{Cwds, How};
use crate::paths::Context;
use crate::shell::{CommandUse, Word, excerpt_of};
use crate::specs::{self, Args, Family, Parsed, Recursive, Spec, Style};
use protocol::verdict::Verdict;

fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

impl Policy {
    pub(super) fn rate_command(
        &self,
        c: &CommandUse,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
        line: &mut String,
    ) {
        let Some(name) = c.argv.first() else { return };
        c.line_into(line);
        let line = line.as_str();
        let by_path =
            (name.tilde || name.text.contains('/')).then_some("it runs a program by path");
        if let Some(rule) = self.bash.last_match(line) {
            let uncertain = c.argv[1..].iter().any(Word::is_uncertain).then_some(
                "an argument is only known at run time (an expansion, a substitution, or a glob that may expand to an option)",
            );
            let cap = c.cap.or(by_path).or(uncertain);
            let (verdict, why) = match (rule.action, cap) {
                (Verdict::Allow, Some(cap)) => {
                    (Verdict::Ask, format!("`{}`: {cap}", excerpt_of(line)))
                }
                (action, _) => (action, format!("`{}` matches {rule}", excerpt_of(line))),
            };
            if verdict > Verdict::Allow {
                parts.push(command_part(verdict, rule.to_string(), why, line));
            }
            if verdict < Verdict::Deny {
                self.rate_words_as_paths(c, line, ctx, cwds, parts);
            }
            return;
        }
        if let Some(cap) = c.cap.or(by_path) {
            let why = format!("`{}`: {cap}", excerpt_of(line));
            parts.push(command_part(
                Verdict::Ask,
                "shell analysis".into(),
                why,
                line,
            ));
            self.rate_words_as_paths(c, line, ctx, cwds, parts);
            return;
        }
        let base = base_name(&name.text);
        if let [_, arg] = c.argv.as_slice()
            && !arg.may_differ()
            && self
                .specs
                .as_ref()
                .is_some_and(|s| s.is_version_query(base, &arg.text))
        {
            return;
        }
        let spec = self
            .specs
            .as_ref()
            .and_then(|s| s.get(base).map(|spec| (s, spec)));
        let Some((specs, _)) = spec else {
            if c.transparent {
                return; // a shell running a payload rated on its own
            }
            if self.default > Verdict::Allow {
                let why = format!(
                    "`{}` matches no bash rule and no command spec; the default is {}",
                    excerpt_of(line),
                    self.default
                );
                parts.push(command_part(self.default, "the default".into(), why, line));
            }
            if self.default < Verdict::Deny {
                self.rate_words_as_paths(c, line, ctx, cwds, parts);
            }
            return;
        };
        match specs::check(specs, base, &c.argv) {
            Err(problem) => {
                let why = format!("`{}`: {}", excerpt_of(line), problem.why);
                let rule = format!("the spec of `{base}`");
                parts.push(command_part(Verdict::Ask, rule, why, line));
                self.rate_words_as_paths(c, line, ctx, cwds, parts);
            }
            Ok(parsed) => self.rate_fitting(c, &parsed, base, line, ctx, cwds, parts),
        }
    }

    /// A command whose words fit its spec: wrappers must wrap something; the build family may be
    /// set to ask; what it reads is rated.
    #[allow(clippy::too_many_arguments)]
    fn rate_fitting(
        &self,
        c: &CommandUse,
        parsed: &Parsed<'_>,
        base: &str,
        line: &str,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
        let spec = parsed.spec;
        if let Some(unless) = &spec.network_unless
            && self.network == Verdict::Allow
            && !Spec::given(parsed, unless)
        {
            // Without the network (the default) the worker cannot download: only what is
            // installed runs. With it, a name not installed is fetched and run.
            let why = format!(
                "`{}` may download and run a package from the network (tool calls have the \
                 network here); {} runs only what is installed",
                excerpt_of(line),
                unless.join(" or ")
            );
            parts.push(command_part(
                Verdict::Ask,
                format!("the spec of `{base}`"),
                why,
                line,
            ));
        }
        if spec.command_at.is_some() {
            let lookup = base == "command" && (parsed.has("-v") || parsed.has("-V"));
            if parsed.command_at.is_none() && !lookup && !c.transparent {
                let why = format!(
                    "`{}`: the wrapper is given no command to run",
                    excerpt_of(line)
                );
                parts.push(command_part(
                    Verdict::Ask,
                    format!("the spec of `{base}`"),
                    why,
                    line,
                ));
            }
            self.rate_option_values(parsed, line, ctx, cwds, parts);
            return;
        }
        if spec.family == Family::Build {
            self.rate_project_dirs(line, ctx, cwds, parts);
        }
        if spec.family == Family::Build && self.project_code > Verdict::Allow {
            let why = format!(
                "`{}` runs the project's own code, and project_code is {}",
                excerpt_of(line),
                self.project_code
            );
            parts.push(command_part(
                self.project_code,
                "policy.project_code".into(),
                why,
                line,
            ));
        }
        let recursive = match &spec.recursive {
            Recursive::Never => false,
            Recursive::Always => true,
            // A word that may become an option may become the one that recurses (`ls {-R,~}`).
            Recursive::With(opts) => {
                Spec::given(parsed, opts) || parsed.operands.iter().any(|a| a.word.may_be_option())
            }
        };
        if spec.args == Args::Paths {
            // The pattern or script comes first; a pattern bash may expand into file names does not.
            let skip_first = spec
                .first_text_unless
                .as_ref()
                .is_some_and(|unless| !Spec::given(parsed, unless))
                && parsed.operands.first().is_some_and(|a| !a.word.may_split());
            let operands = parsed.operands.iter().skip(usize::from(skip_first));
            let how = How {
                recursive,
                names_only: spec.names_only,
            };
            let mut any = false;
            for a in operands {
                any = true;
                self.rate_arg(a.text, a.word, how, line, ctx, cwds, parts);
                // `git show REV:PATH` reads PATH as it was at REV.
                if spec.family == Family::Git
                    && let Some((_, path)) = a.text.split_once(':')
                    && !path.is_empty()
                {
                    self.rate_arg(path, a.word, how, line, ctx, cwds, parts);
                }
            }
            if recursive && !any && spec.style != Style::Go {
                self.rate_arg(".", &Word::literal("."), how, line, ctx, cwds, parts);
            }
        } else if spec.family == Family::Git {
            // `git cat-file -p REV:PATH` too: the object is PATH as it was at REV.
            let how = How {
                recursive: false,
                names_only: false,
            };
            for a in &parsed.operands {
                if let Some((_, path)) = a.text.split_once(':')
                    && !path.is_empty()
                {
                    self.rate_arg(path, a.word, how, line, ctx, cwds, parts);
                }
            }
        }
        // Pathspecs after `--` (`git diff -- .env` shows that file).
        let how = How {
            recursive: false,
            names_only: false,
        };
        for a in &parsed.rest_paths {
            self.rate_arg(a.text, a.word, how, line, ctx, cwds, parts);
        }
        if spec.family == Family::Git {
            self.rate_pathspecs(parsed, line, parts);
        }
        self.rate_option_values(parsed, line, ctx, cwds, parts);
    }

    /// For commands without a spec (or allowed by a rule): every static argument that does not
    /// start with `-` (and the value of `--name=value`) is rated as a path it may read.
    fn rate_words_as_paths(
        &self,
        c: &CommandUse,
        line: &str,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
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
            self.rate_arg(value, arg, How::default(), line, ctx, cwds, parts);
        }
    }
}

pub(super) fn command_part(verdict: Verdict, rule: String, why: String, line: &str) -> Part {
    Part {
        verdict,
        key: ApprovalKey::Command {
            line: line.to_owned(),
            rule: rule.clone(),
        },
        rule,
        why,
    }
}
