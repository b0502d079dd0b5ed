//! Paths as the shell resolves them: arguments read from every directory a `cd` in the command
//! may have moved to, `~` and `~user`, globs against the protected patterns they could match,
//! directories read recursively against the protected paths they contain; and redirections.

use super::Policy;
use super::decision::{Access, ApprovalKey, Part};
use super::safe::AllowRoots;
use crate::paths::reach::{self, RuleComp};
use crate::paths::{Context, Resolved, is_harmless_device, resolve_word};
use crate::rules::PathRules;
use crate::shell::{Finding, RedirectUse, Word, excerpt_of};
use protocol::verdict::Verdict;
use std::path::{Path, PathBuf};

/// A read rule stricter than allow, as components for [`reach::could_reach`].
#[derive(Debug, Clone)]
pub(super) struct Protected {
    anchor: Anchor,
    pub(super) comps: Vec<RuleComp>,
    action: Verdict,
    rule: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Anchor {
    Root,
    Home,
    Workspace,
}

/// The protected read rules of a policy.
pub(super) fn protected(read: &PathRules) -> Vec<Protected> {
    read.rules
        .iter()
        .filter(|r| r.action > Verdict::Allow)
        .map(|r| {
            let p = r.pattern.as_str();
            let (anchor, rest) = if let Some(rest) = p.strip_prefix('/') {
                (Anchor::Root, rest)
            } else if p == "~" {
                (Anchor::Home, "")
            } else if let Some(rest) = p.strip_prefix("~/") {
                (Anchor::Home, rest)
            } else {
                (Anchor::Workspace, p.strip_prefix("./").unwrap_or(p))
            };
            Protected {
                anchor,
                comps: reach::rule_components(rest),
                action: r.action,
                rule: r.to_string(),
            }
        })
        .collect()
}

/// How a command reads a path argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct How {
    /// It reads what the directory contains, at any depth.
    pub recursive: bool,
    /// It reads names and metadata only (`ls`, `stat`, `find`), not contents.
    pub names_only: bool,
}

/// The literal pieces of the read rules stricter than allow, when every such rule has one (of
/// at least three characters); `None` otherwise (then every path is matched in full). A path
/// holding none of them matches no stricter rule, so under a subtree an allow rule covers whole
/// ([`super::safe::AllowRoots`]) it is allowed.
pub(super) fn prefilter(read: &PathRules) -> Option<Prefilter> {
    let mut pieces = Vec::new();
    for rule in &read.rules {
        if rule.action == Verdict::Allow {
            continue;
        }
        let longest = rule
            .pattern
            .split(['/', '*', '?', '[', ']', '{', '}', ',', '~'])
            .max_by_key(|p| p.len())
            .filter(|p| p.len() >= 3)?;
        pieces.push(longest.to_owned());
    }
    let mut by_first: Vec<Vec<Box<str>>> = vec![Vec::new(); 256];
    for p in pieces {
        if let Some(&b) = p.as_bytes().first() {
            by_first[usize::from(b)].push(p.into_boxed_str());
        }
    }
    Some(Prefilter { by_first })
}

/// Literal pieces of the protected read rules, by first byte: one pass over a path finds
/// whether it holds any.
#[derive(Debug, Clone)]
pub(super) struct Prefilter {
    by_first: Vec<Vec<Box<str>>>,
}

impl Prefilter {
    /// Whether `text` contains one of the pieces (then the rules decide).
    pub(super) fn may_match(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        bytes.iter().enumerate().any(|(i, &b)| {
            self.by_first[usize::from(b)]
                .iter()
                .any(|p| bytes[i..].starts_with(p.as_bytes()))
        })
    }
}

/// The directories relative paths may be read from: the workspace and every `cd` target in the
/// command (a `cd` in a subshell ends with it, so all are kept), or unknown.
#[derive(Debug, Clone)]
pub(super) struct Cwds {
    dirs: Vec<PathBuf>,
    unknown: bool,
    /// Every directory lies under a subtree an allow rule covers whole and holds no piece of a
    /// protected read rule (see [`Prefilter`]).
    clean: bool,
    /// The components of the home and workspace rules are anchored at, split once per verdict
    /// when a glob or a recursive read needs them.
    anchors: std::cell::OnceCell<Anchors>,
    /// A command read the contents of paths another command printed (xargs's input, find's
    /// `{}`, `$(find …)`): what those commands select is then rated as a read of contents.
    pub(super) produced_read: std::cell::Cell<bool>,
}

/// The components of the anchors of protected rules: home (if known) and workspace.
#[derive(Debug, Clone)]
struct Anchors {
    home: Option<Vec<RuleComp>>,
    workspace: Vec<RuleComp>,
}

impl Cwds {
    pub(super) fn of(findings: &[Finding], ctx: &Context<'_>) -> Self {
        let mut cwds = Self {
            dirs: vec![ctx.workspace.to_path_buf()],
            unknown: false,
            clean: false,
            anchors: std::cell::OnceCell::new(),
            produced_read: std::cell::Cell::new(false),
        };
        for f in findings {
            let Finding::Command(c) = f else { continue };
            let Some(name) = c.argv.first() else { continue };
            if !matches!(name.text.as_str(), "cd" | "pushd" | "popd") {
                continue;
            }
            if c.in_loop {
                cwds.unknown = true;
                continue;
            }
            let target = c.argv[1..]
                .iter()
                .find(|w| w.may_differ() || !w.text.starts_with('-') || w.text == "-");
            match target {
                _ if name.text == "popd" => {}
                None => match ctx.home {
                    Some(home) => cwds.add(home.to_path_buf()),
                    None => cwds.unknown = true,
                },
                Some(w) if w.text == "-" && !w.may_differ() => {}
                Some(w) if w.may_differ() => cwds.unknown = true,
                Some(w) => {
                    let mut found = Vec::new();
                    for dir in &cwds.dirs {
                        match resolve_word(&w.text, w.tilde, dir, ctx) {
                            Resolved::Path(p) => found.push(p),
                            Resolved::OtherHome | Resolved::NoHome | Resolved::DirVariable => {
                                cwds.unknown = true
                            }
                        }
                    }
                    for p in found {
                        cwds.add(p);
                    }
                }
            }
        }
        cwds
    }

    /// Notes whether every directory is under an allowed subtree and free of protected pieces.
    pub(super) fn with_prefilter(
        mut self,
        prefilter: Option<&Prefilter>,
        roots: &AllowRoots,
        ctx: &Context<'_>,
    ) -> Self {
        self.clean = prefilter.is_some_and(|p| {
            self.dirs.iter().all(|d| {
                d.to_str().is_some_and(|t| !p.may_match(t)) && roots.covering(d, ctx).is_some()
            })
        });
        self
    }

    fn anchors(&self, ctx: &Context<'_>) -> &Anchors {
        self.anchors.get_or_init(|| Anchors {
            home: ctx.home.map(reach::anchor_components),
            workspace: reach::anchor_components(ctx.workspace),
        })
    }

    /// Every directory the command may run in; `None` when one is only known at run time.
    pub(super) fn known(&self) -> Option<&[PathBuf]> {
        (!self.unknown).then_some(self.dirs.as_slice())
    }

    fn add(&mut self, dir: PathBuf) {
        if self.dirs.len() < 32 && !self.dirs.contains(&dir) {
            self.dirs.push(dir);
        }
    }
}

/// The words brace expansion makes of `text` (every `{a,b}` group, nested ones too); `None` past
/// 64 words or for braces that do not balance.
fn expand_braces(text: &str) -> Option<Vec<String>> {
    let bytes = text.as_bytes();
    let Some(open) = bytes.iter().position(|&b| b == b'{') else {
        return Some(vec![text.to_owned()]);
    };
    // The matching close, and the top-level commas in between.
    let (mut depth, mut close, mut commas) = (0usize, None, Vec::new());
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            b',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let close = close?;
    let (pre, post) = (&text[..open], &text[close + 1..]);
    if commas.is_empty() {
        // `{x}` or `{1..3}`: a sequence or a literal; leave ranges to the glob check.
        let rest = expand_braces(post)?;
        return Some(
            rest.into_iter()
                .map(|r| format!("{pre}{}{r}", &text[open..=close]))
                .collect(),
        );
    }
    let mut bounds = vec![open];
    bounds.extend(&commas);
    bounds.push(close);
    let mut out = Vec::new();
    for pair in bounds.windows(2) {
        let alt = &text[pair[0] + 1..pair[1]];
        for word in expand_braces(&format!("{pre}{alt}{post}"))? {
            out.push(word);
            if out.len() > 64 {
                return None;
            }
        }
    }
    Some(out)
}

/// Where a path word leads from every possible working directory; `Err` with why when the
/// policy cannot say.
pub(super) fn places(
    text: &str,
    cwds: &Cwds,
    ctx: &Context<'_>,
) -> Result<Vec<PathBuf>, &'static str> {
    let tilde = text.starts_with('~');
    if !tilde && !text.starts_with('/') && cwds.unknown {
        return Err("is relative to a directory only known at run time");
    }
    let mut out = Vec::new();
    for dir in &cwds.dirs {
        match resolve_word(text, tilde, dir, ctx) {
            Resolved::Path(p) => {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            Resolved::OtherHome => return Err("is in another user's home"),
            Resolved::NoHome => return Err("is in a home the policy does not know"),
            Resolved::DirVariable => {
                return Err(
                    "starts with `~+` or `~-`, which bash expands to $PWD or $OLDPWD, variables \
                     only known at run time",
                );
            }
        }
        if tilde || text.starts_with('/') {
            break;
        }
    }
    Ok(out)
}

impl Policy {
    /// Rates `text` (from `word`) as a path the command reads; `recursive` when the command reads
    /// what a directory contains.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn rate_arg(
        &self,
        text: &str,
        word: &Word,
        how: How,
        line: &str,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
        let recursive = how.recursive;
        // Most arguments: a plain relative path without `..` whose text and whose directories
        // hold no piece of a protected rule, from directories under an allowed subtree. Pieces
        // never hold a `/`, so joining cannot make one: allowed without building the path.
        if !word.dynamic
            && !word.has_glob()
            && !recursive
            && cwds.clean
            && !cwds.unknown
            && !text.starts_with(['/', '~'])
            && !text.split('/').any(|c| c == "..")
            && self
                .read_prefilter
                .as_ref()
                .is_some_and(|p| !p.may_match(text))
        {
            return;
        }
        if word.dynamic {
            if !word.known_path {
                parts.push(Part {
                    verdict: Verdict::Ask,
                    rule: "shell analysis".into(),
                    why: format!(
                        "`{}` reads a path only known at run time (`{}`)",
                        excerpt_of(line),
                        excerpt_of(text)
                    ),
                    key: ApprovalKey::Construct {
                        text: line.to_owned(),
                        why: "a path only known at run time".into(),
                    },
                });
            } else if !how.names_only {
                cwds.produced_read.set(true);
            }
            return;
        }
        if word.has_glob() && text.contains('{') {
            // Brace expansion comes first, and each alternative is tilde-expanded on its own:
            // `{x,~/.ssh/id_rsa}` reads the key.
            match expand_braces(text) {
                Some(alternatives) if alternatives.len() > 1 || alternatives[0] != text => {
                    for alt in &alternatives {
                        self.rate_arg(alt, word, how, line, ctx, cwds, parts);
                    }
                    return;
                }
                Some(_) => {}
                None => {
                    parts.push(Part {
                        verdict: Verdict::Ask,
                        rule: "shell analysis".into(),
                        why: format!(
                            "`{}`: `{}` has braces the policy does not expand",
                            excerpt_of(line),
                            excerpt_of(text)
                        ),
                        key: ApprovalKey::Construct {
                            text: format!("{line} / {text}"),
                            why: "braces the policy does not expand".into(),
                        },
                    });
                    return;
                }
            }
        }
        let paths = match places(text, cwds, ctx) {
            Ok(paths) => paths,
            Err(why) => {
                parts.push(Part {
                    verdict: Verdict::Ask,
                    rule: "shell analysis".into(),
                    why: format!("`{}`: `{}` {why}", excerpt_of(line), excerpt_of(text)),
                    key: ApprovalKey::Construct {
                        text: format!("{line} / {text}"),
                        why: why.into(),
                    },
                });
                return;
            }
        };
        let glob = word.has_glob();
        for abs in paths {
            let (verdict, decided) = self.verdict_of(Access::Read, &abs, ctx);
            // Names and metadata (`ls ~`, `stat /srv/x`) are not what the allowlist keeps: only
            // a rule that names the path makes listing it ask.
            let listed = how.names_only && decided.is_none();
            if verdict > Verdict::Allow && !listed {
                let (rule, why) = self.explain(Access::Read, &abs, decided);
                let names = if decided.is_some() {
                    " names a protected path"
                } else {
                    ""
                };
                parts.push(Part {
                    verdict,
                    rule,
                    why: format!("`{}`{names}: {why}", excerpt_of(line)),
                    key: ApprovalKey::Path {
                        access: Access::Read,
                        path: abs.display().to_string(),
                    },
                });
            }
            if glob || recursive {
                self.rate_reach(&abs, glob, how, line, cwds.anchors(ctx), parts);
                self.rate_reach_unlisted(&abs, glob, how, line, ctx, parts);
            }
        }
    }

    /// What a file tool that reads a directory recursively (`grep`) could reach under `abs`:
    /// protected paths, and paths outside the allowed subtrees.
    pub(super) fn rate_tree(&self, abs: &Path, ctx: &Context<'_>, parts: &mut Vec<Part>) {
        let how = How {
            recursive: true,
            names_only: false,
        };
        let cwds = Cwds::of(&[], ctx);
        let line = abs.display().to_string();
        self.rate_reach(abs, false, how, &line, cwds.anchors(ctx), parts);
        self.rate_reach_unlisted(abs, false, how, &line, ctx, parts);
    }

    /// A glob or a recursive read: every protected rule it could reach.
    fn rate_reach(
        &self,
        abs: &Path,
        glob: bool,
        how: How,
        line: &str,
        anchors: &Anchors,
        parts: &mut Vec<Part>,
    ) {
        let recursive = how.recursive;
        let Some(abs_text) = abs.to_str() else { return };
        let arg = reach::arg_components(abs_text, glob.then_some(0));
        let mut worst: Option<&Protected> = None;
        for p in &self.protected {
            let anchor: &[RuleComp] = match p.anchor {
                Anchor::Root => &[],
                Anchor::Home => match &anchors.home {
                    Some(h) => h,
                    None => continue,
                },
                Anchor::Workspace => &anchors.workspace,
            };
            if how.names_only && reach::is_anywhere(&p.comps) {
                // Listing names (ls, stat, find) reads no file a name-anywhere rule protects.
                continue;
            }
            if worst.is_none_or(|w| p.action > w.action)
                && reach::could_reach(&arg, anchor, &p.comps, recursive)
            {
                worst = Some(p);
            }
        }
        if let Some(p) = worst {
            let how = if recursive {
                "reads a directory that holds"
            } else {
                "is a pattern that could match"
            };
            parts.push(Part {
                verdict: p.action,
                rule: p.rule.clone(),
                why: format!(
                    "`{}`: `{abs_text}` {how} a protected path ({})",
                    excerpt_of(line),
                    p.rule
                ),
                key: ApprovalKey::Path {
                    access: Access::Read,
                    path: if recursive {
                        format!("{abs_text}/**")
                    } else {
                        abs_text.to_owned()
                    },
                },
            });
        }
    }

    pub(super) fn rate_redirect(
        &self,
        r: &RedirectUse,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
        let target = &r.target;
        let op = if r.write { ">" } else { "<" };
        let access = if r.write { Access::Write } else { Access::Read };
        if target.may_differ() {
            parts.push(Part {
                verdict: Verdict::Ask,
                rule: "shell analysis".into(),
                why: format!(
                    "`{op} {}`: the redirection target is only known at run time",
                    excerpt_of(&target.text)
                ),
                key: ApprovalKey::Construct {
                    text: format!("{op} {}", target.text),
                    why: "a redirection target only known at run time".into(),
                },
            });
            return;
        }
        if is_harmless_device(&target.text) {
            return;
        }
        let paths = match places(&target.text, cwds, ctx) {
            Ok(paths) => paths,
            Err(why) => {
                parts.push(Part {
                    verdict: Verdict::Ask,
                    rule: "shell analysis".into(),
                    why: format!("`{op} {}`: the target {why}", excerpt_of(&target.text)),
                    key: ApprovalKey::Construct {
                        text: format!("{op} {}", target.text),
                        why: why.into(),
                    },
                });
                return;
            }
        };
        for abs in paths {
            let (verdict, rule, why) = self.rate_abs(access, &abs, ctx);
            let key = ApprovalKey::Path {
                access,
                path: abs.display().to_string(),
            };
            let why = format!("`{op} {}`: {why}", excerpt_of(&target.text));
            if verdict > Verdict::Allow {
                parts.push(Part {
                    verdict,
                    rule,
                    why,
                    key,
                });
            } else if r.write {
                // Writing files from bash asks even where the write_file tool would not: the
                // policy cannot see what else the command does to it.
                parts.push(Part {
                    verdict: Verdict::Ask,
                    rule: "bash redirections".into(),
                    why: format!(
                        "`> {}`: bash redirects to a file ask (use write_file to write files)",
                        excerpt_of(&target.text)
                    ),
                    key,
                });
            }
        }
    }
}
