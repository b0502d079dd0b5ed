//! Rules: the TOML model, validation, and compiled rule sets.
//!
//! A policy is built once, from the built-in defaults and an optional config file; building is
//! where every error happens (a bad glob, an unknown key, a wrong verdict), each naming the file,
//! the line and the rule. Matching a built policy cannot fail.
//!
//! Layout: this file (the model, loading, compiling) · [`starts`] (the literal starts of the bash
//! globs, which let most command lines skip the glob set).

mod starts;

use globset::{Candidate, Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use protocol::verdict::Verdict;
use serde::Deserialize;
use starts::Starts;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;

/// Why a policy could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The TOML did not parse or did not fit the schema (unknown key, wrong type, bad verdict).
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// The config file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was wrong.
        message: String,
    },
    /// A rule is well-formed TOML but not a valid rule.
    #[error("{file}:{line}: {list} rule {index} ({pattern:?}): {message}")]
    Rule {
        /// The config file.
        file: String,
        /// 1-based line of the rule.
        line: usize,
        /// `bash`, `read` or `write`.
        list: &'static str,
        /// 1-based position of the rule in its list.
        index: usize,
        /// The rule's pattern or path.
        pattern: String,
        /// What was wrong.
        message: String,
    },
    /// A value outside a rule list is invalid.
    #[error("{file}:{line}: {key}: {message}")]
    Value {
        /// The config file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The key.
        key: &'static str,
        /// What was wrong.
        message: String,
    },
}

/// The `[policy]` section of a config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Verdict when no rule matches.
    pub default: Option<Verdict>,
    /// `extend` (the built-in rules first, then these) or `replace` (only these).
    pub defaults: Option<Spanned<String>>,
    /// Whether tools may use the network: `allow` or `deny`.
    pub network: Option<Spanned<Verdict>>,
    /// Builds, tests and linters run the project's own code: `allow` (the default; the sandbox
    /// holds that code) or `ask`.
    pub project_code: Option<Spanned<Verdict>>,
    /// Rules for bash commands.
    #[serde(default)]
    pub bash: Vec<Spanned<BashRuleConfig>>,
    /// Rules for file tools that read.
    #[serde(default)]
    pub read: Vec<Spanned<PathRuleConfig>>,
    /// Rules for file tools that write.
    #[serde(default)]
    pub write: Vec<Spanned<PathRuleConfig>>,
}

/// One bash rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashRuleConfig {
    /// A glob over the normalised command line.
    pub pattern: String,
    /// What a match means.
    pub action: Verdict,
}

/// One path rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathRuleConfig {
    /// A glob: absolute (`/…`), home-relative (`~/…`) or workspace-relative.
    pub path: String,
    /// What a match means.
    pub action: Verdict,
    /// Why the rule is there, shown with the verdict it decides (the built-in read rules say
    /// why each place is safe to read, or holds secrets).
    #[serde(default)]
    pub why: Option<String>,
}

/// A whole config file as far as the policy is concerned: the `[policy]` table, other tables
/// untouched (the daemon's config loader checks those).
#[derive(Debug, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    policy: Option<PolicyConfig>,
    #[serde(flatten)]
    _rest: toml::Table,
}

/// Where a rule came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The built-in defaults.
    BuiltIn,
    /// A config file, at a line.
    File {
        /// The file's name as given.
        file: Arc<str>,
        /// 1-based line.
        line: usize,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::BuiltIn => f.write_str("built-in"),
            Origin::File { file, line } => write!(f, "{file}:{line}"),
        }
    }
}

/// Which list a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleList {
    /// Bash commands.
    Bash,
    /// File reads.
    Read,
    /// File writes.
    Write,
}

impl RuleList {
    /// The list's name in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleList::Bash => "bash",
            RuleList::Read => "read",
            RuleList::Write => "write",
        }
    }
}

/// One compiled rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Its list.
    pub list: RuleList,
    /// 1-based position in the merged list.
    pub index: usize,
    /// The pattern as written.
    pub pattern: String,
    /// Its verdict.
    pub action: Verdict,
    /// Where it came from.
    pub origin: Origin,
    /// Why the rule is there, if it says.
    pub why: Option<String>,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} rule {} {:?} ({})",
            self.list.as_str(),
            self.index,
            self.pattern,
            self.origin
        )
    }
}

/// Compiled bash rules: one glob set, the last match wins.
#[derive(Debug, Clone)]
pub struct BashRules {
    /// The rules in order.
    pub rules: Vec<Rule>,
    /// Every glob of every rule.
    set: GlobSet,
    /// For each glob in `set`, the index of its rule in `rules`.
    owner: Vec<usize>,
    /// The literal start of every glob, by first byte; `None` when a glob starts with a
    /// metacharacter (then every line is matched against the set).
    starts: Option<Starts>,
}

impl BashRules {
    /// The last rule whose pattern matches `line`.
    pub fn last_match(&self, line: &str) -> Option<&Rule> {
        if self.starts.as_ref().is_some_and(|s| !s.may_match(line)) {
            return None;
        }
        // Most commands match no rule: answer that without collecting matches.
        if !self.set.is_match(line) {
            return None;
        }
        let idx = self
            .set
            .matches(line)
            .into_iter()
            .map(|g| self.owner[g])
            .max()?;
        self.rules.get(idx)
    }
}

/// Which root a path rule is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Absolute,
    Home,
    Workspace,
}

/// Compiled path rules: one glob set per anchor, the last match (over all three) wins.
#[derive(Debug, Clone)]
pub struct PathRules {
    /// The rules in order.
    pub rules: Vec<Rule>,
    sets: [(GlobSet, Vec<usize>); 3],
}

impl PathRules {
    /// The last rule matching `abs`, given its forms relative to home and workspace (when inside).
    pub fn last_match(
        &self,
        abs: &Path,
        in_home: Option<&Path>,
        in_workspace: Option<&Path>,
    ) -> Option<&Rule> {
        let candidates = [Some(abs), in_home, in_workspace];
        let mut best: Option<usize> = None;
        let mut hits = Vec::new();
        for ((set, owner), path) in self.sets.iter().zip(candidates) {
            if let Some(path) = path
                && !set.is_empty()
            {
                set.matches_candidate_into(&Candidate::new(path), &mut hits);
                best = best.max(hits.iter().map(|&g| owner[g]).max());
            }
        }
        self.rules.get(best?)
    }
}

/// Rules gathered from one or more sources, before compiling.
#[derive(Debug, Default)]
pub(crate) struct RawRules {
    pub default: Option<Verdict>,
    pub network: Option<Verdict>,
    pub project_code: Option<Verdict>,
    /// The built-in option specs were dropped (`defaults = "replace"`).
    pub no_specs: bool,
    pub bash: Vec<(BashRuleConfig, Origin)>,
    pub read: Vec<(PathRuleConfig, Origin)>,
    pub write: Vec<(PathRuleConfig, Origin)>,
}

/// 1-based line and column of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Parses the `[policy]` section of `text` (a config file named `file`) and merges it into `raw`.
pub(crate) fn load_into(
    raw: &mut RawRules,
    text: &str,
    file: &str,
    origin_builtin: bool,
) -> Result<(), PolicyError> {
    let parsed: ConfigFile = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        PolicyError::Syntax {
            file: file.to_owned(),
            line,
            column,
            message: e.message().to_owned(),
        }
    })?;
    let Some(config) = parsed.policy else {
        return Ok(());
    };
    let file_arc: Arc<str> = Arc::from(file);
    let origin = |offset: usize| {
        if origin_builtin {
            Origin::BuiltIn
        } else {
            Origin::File {
                file: file_arc.clone(),
                line: line_col(text, offset).0,
            }
        }
    };
    if let Some(mode) = &config.defaults {
        match mode.get_ref().as_str() {
            "extend" => {}
            "replace" => {
                raw.no_specs = !origin_builtin;
                raw.bash.clear();
                raw.read.clear();
                raw.write.clear();
            }
            other => {
                return Err(PolicyError::Value {
                    file: file.to_owned(),
                    line: line_col(text, mode.span().start).0,
                    key: "policy.defaults",
                    message: format!("{other:?} is not a choice; use \"extend\" or \"replace\""),
                });
            }
        }
    }
    if let Some(default) = config.default {
        raw.default = Some(default);
    }
    if let Some(network) = &config.network {
        if *network.get_ref() == Verdict::Ask {
            return Err(PolicyError::Value {
                file: file.to_owned(),
                line: line_col(text, network.span().start).0,
                key: "policy.network",
                message: "\"ask\" is not supported for network; use \"allow\" or \"deny\"".into(),
            });
        }
        raw.network = Some(*network.get_ref());
    }
    if let Some(project) = &config.project_code {
        if *project.get_ref() == Verdict::Deny {
            return Err(PolicyError::Value {
                file: file.to_owned(),
                line: line_col(text, project.span().start).0,
                key: "policy.project_code",
                message: "\"deny\" is not supported for project_code; use \"allow\" or \"ask\" (deny build commands with bash rules)".into(),
            });
        }
        raw.project_code = Some(*project.get_ref());
    }
    for rule in config.bash {
        let at = rule.span().start;
        raw.bash.push((rule.into_inner(), origin(at)));
    }
    for rule in config.read {
        let at = rule.span().start;
        raw.read.push((rule.into_inner(), origin(at)));
    }
    for rule in config.write {
        let at = rule.span().start;
        raw.write.push((rule.into_inner(), origin(at)));
    }
    Ok(())
}

fn rule_error(
    origin: &Origin,
    list: RuleList,
    index: usize,
    pattern: &str,
    message: String,
) -> PolicyError {
    let (file, line) = match origin {
        Origin::BuiltIn => ("<built-in>".to_owned(), 0),
        Origin::File { file, line } => (file.to_string(), *line),
    };
    PolicyError::Rule {
        file,
        line,
        list: list.as_str(),
        index,
        pattern: pattern.to_owned(),
        message,
    }
}

/// Compiles bash rules. A pattern ending in ` *` also matches the bare command.
pub(crate) fn compile_bash(raw: Vec<(BashRuleConfig, Origin)>) -> Result<BashRules, PolicyError> {
    let mut builder = GlobSetBuilder::new();
    let mut owner = Vec::new();
    let mut globs = Vec::new();
    let mut rules = Vec::with_capacity(raw.len());
    for (i, (rule, origin)) in raw.into_iter().enumerate() {
        let index = i + 1;
        let pattern = rule.pattern.trim();
        if pattern.is_empty() {
            return Err(rule_error(
                &origin,
                RuleList::Bash,
                index,
                &rule.pattern,
                "the pattern is empty".into(),
            ));
        }
        let mut variants = vec![pattern.to_owned()];
        if let Some(bare) = pattern.strip_suffix(" *") {
            variants.push(bare.to_owned());
        }
        for v in variants {
            let glob = Glob::new(&v).map_err(|e| {
                rule_error(
                    &origin,
                    RuleList::Bash,
                    index,
                    &rule.pattern,
                    format!("invalid glob: {}", e.kind()),
                )
            })?;
            builder.add(glob);
            owner.push(i);
            globs.push(v);
        }
        rules.push(Rule {
            list: RuleList::Bash,
            index,
            pattern: pattern.to_owned(),
            action: rule.action,
            origin,
            why: None,
        });
    }
    let set = builder.build().map_err(|e| PolicyError::Value {
        file: "<policy>".into(),
        line: 0,
        key: "policy.bash",
        message: e.to_string(),
    })?;
    let starts = Starts::of(globs.iter().map(String::as_str));
    Ok(BashRules {
        rules,
        set,
        owner,
        starts,
    })
}

/// Compiles path rules for one list.
pub(crate) fn compile_paths(
    list: RuleList,
    raw: Vec<(PathRuleConfig, Origin)>,
) -> Result<PathRules, PolicyError> {
    let mut builders = [
        GlobSetBuilder::new(),
        GlobSetBuilder::new(),
        GlobSetBuilder::new(),
    ];
    let mut owners: [Vec<usize>; 3] = Default::default();
    let mut rules = Vec::with_capacity(raw.len());
    for (i, (rule, origin)) in raw.into_iter().enumerate() {
        let index = i + 1;
        let path = rule.path.trim();
        let (anchor, pattern) = if path.starts_with('/') {
            (Anchor::Absolute, path)
        } else if path == "~" {
            (Anchor::Home, "")
        } else if let Some(rest) = path.strip_prefix("~/") {
            (Anchor::Home, rest)
        } else if path.starts_with('~') {
            return Err(rule_error(
                &origin,
                list,
                index,
                &rule.path,
                "only \"~/\" (your own home) is supported, not \"~user\"".into(),
            ));
        } else {
            (Anchor::Workspace, path.strip_prefix("./").unwrap_or(path))
        };
        if path.is_empty() {
            return Err(rule_error(
                &origin,
                list,
                index,
                &rule.path,
                "the path is empty".into(),
            ));
        }
        // `dir/**` covers `dir` itself too: a rule for a directory's contents is meant for it.
        let mut variants = vec![pattern];
        if let Some(dir) = pattern.strip_suffix("/**").filter(|d| !d.is_empty()) {
            variants.push(dir);
        }
        let slot = anchor as usize;
        for v in variants {
            let glob = GlobBuilder::new(v)
                .literal_separator(true)
                .build()
                .map_err(|e| {
                    rule_error(
                        &origin,
                        list,
                        index,
                        &rule.path,
                        format!("invalid glob: {}", e.kind()),
                    )
                })?;
            builders[slot].add(glob);
            owners[slot].push(i);
        }
        rules.push(Rule {
            list,
            index,
            pattern: path.to_owned(),
            action: rule.action,
            origin,
            why: rule.why,
        });
    }
    let build = |builder: GlobSetBuilder, owner: Vec<usize>| {
        builder
            .build()
            .map(|set| (set, owner))
            .map_err(|e| PolicyError::Value {
                file: "<policy>".into(),
                line: 0,
                key: "policy paths",
                message: e.to_string(),
            })
    };
    let [abs, home, ws] = builders;
    let [o_abs, o_home, o_ws] = owners;
    let sets = [build(abs, o_abs)?, build(home, o_home)?, build(ws, o_ws)?];
    Ok(PathRules { rules, sets })
}
