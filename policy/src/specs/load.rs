//! Reading `data.toml` into [`Spec`]s: once, at policy build; every mistake in the data is an error
//! naming the command and the token.

use super::{Args, Arity, Check, Family, Opt, Recursive, Role, Shape, Spec, Style};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::collections::HashMap;

/// The built-in specs, in their data syntax.
pub const DATA_TOML: &str = include_str!("data.toml");

/// Why the spec data could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The TOML did not parse or did not fit the schema.
    #[error("specs: {0}")]
    Syntax(String),
    /// A command's entry is wrong.
    #[error("specs: {command}: {message}")]
    Entry {
        /// The command.
        command: String,
        /// What was wrong.
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    command: HashMap<String, RawSpec>,
    versions: HashMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    same_as: Option<String>,
    family: Option<String>,
    style: Option<String>,
    #[serde(default)]
    abbrev: bool,
    #[serde(default)]
    safe_options: bool,
    #[serde(default)]
    options: String,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    writes: String,
    #[serde(default)]
    loads: String,
    #[serde(default)]
    network: String,
    /// Which version of the program the options were read from (`--help`, man page, docs).
    #[cfg_attr(not(test), allow(dead_code))] // documentation; a test checks every spec has one
    audited: Option<String>,
    #[serde(default)]
    numeric: bool,
    args: Option<String>,
    first_text_unless: Option<Vec<String>>,
    max_args: Option<usize>,
    #[serde(default)]
    min_args: usize,
    values: Option<Vec<String>>,
    #[serde(default)]
    subcommands: bool,
    #[serde(default)]
    bare_ok: bool,
    rest: Option<String>,
    requires: Option<Vec<String>>,
    check: Option<String>,
    recursive: Option<Vec<String>>,
    #[serde(default)]
    names_only: bool,
    operands_with: Option<Vec<String>>,
    command_at: Option<usize>,
    network_unless: Option<Vec<String>>,
    modules_with: Option<Vec<String>>,
}

/// Every spec, by command name (`ls`, `git status`), and the version queries. The maps' keys are
/// the data's own names, looked up several times per command: hashed with Fx, not SipHash.
#[derive(Debug, Clone)]
pub struct Specs {
    by_name: FxHashMap<String, Spec>,
    /// Program → the arguments that only print its version (`node -v`).
    versions: FxHashMap<String, Vec<String>>,
    /// Programs with a subcommand that runs a command (`bundle` for `bundle exec`): looked up
    /// first, so that other commands do not pay for building the name `"{base} {sub}"`.
    wrapping_subcommands: Vec<String>,
}

impl Specs {
    /// The built-in specs.
    pub fn builtin() -> Result<Self, SpecError> {
        Self::parse(DATA_TOML)
    }

    /// No specs at all (the config replaced the built-in defaults).
    pub fn empty() -> Self {
        Self {
            by_name: FxHashMap::default(),
            versions: FxHashMap::default(),
            wrapping_subcommands: Vec::new(),
        }
    }

    /// Specs from data text.
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        let raw: RawFile = toml::from_str(text).map_err(|e| SpecError::Syntax(e.to_string()))?;
        let mut by_name =
            FxHashMap::with_capacity_and_hasher(raw.command.len(), Default::default());
        for (name, spec) in &raw.command {
            let source = match &spec.same_as {
                Some(other) => raw.command.get(other).ok_or_else(|| SpecError::Entry {
                    command: name.clone(),
                    message: format!("same_as names {other:?}, which has no entry"),
                })?,
                None => spec,
            };
            by_name.insert(name.clone(), compile(name, source, &raw.command)?);
        }
        let versions = raw
            .versions
            .into_iter()
            .map(|(program, flags)| {
                (
                    program,
                    flags.split_whitespace().map(str::to_owned).collect(),
                )
            })
            .collect();
        let mut wrapping_subcommands: Vec<String> = by_name
            .values()
            .filter(|s| s.command_at.is_some())
            .filter_map(|s| s.name.split_once(' ').map(|(base, _)| base.to_owned()))
            .collect();
        wrapping_subcommands.sort_unstable();
        wrapping_subcommands.dedup();
        Ok(Self {
            by_name,
            versions,
            wrapping_subcommands,
        })
    }

    /// The spec of `name` (a program's base name, or `git status`).
    pub fn get(&self, name: &str) -> Option<&Spec> {
        self.by_name.get(name)
    }

    /// Whether `program` has a subcommand that runs a command (`bundle exec`).
    pub fn has_wrapping_subcommand(&self, program: &str) -> bool {
        self.wrapping_subcommands.iter().any(|p| p == program)
    }

    /// Whether `program arg` only prints a version.
    pub fn is_version_query(&self, program: &str, arg: &str) -> bool {
        self.versions
            .get(program)
            .is_some_and(|flags| flags.iter().any(|f| f == arg))
    }

    /// Every spec's name, sorted (for documentation and tests).
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

fn compile(name: &str, raw: &RawSpec, all: &HashMap<String, RawSpec>) -> Result<Spec, SpecError> {
    let err = |message: String| SpecError::Entry {
        command: name.to_owned(),
        message,
    };
    let family = match raw.family.as_deref().unwrap_or("read") {
        "read" => Family::Read,
        "query" => Family::Query,
        "git" => Family::Git,
        "build" => Family::Build,
        "wrapper" => Family::Wrapper,
        other => return Err(err(format!("unknown family {other:?}"))),
    };
    let style = match raw.style.as_deref().unwrap_or("gnu") {
        "gnu" => Style::Gnu,
        "posix" => Style::Posix,
        "go" => Style::Go,
        "find" => Style::Find,
        other => return Err(err(format!("unknown style {other:?}"))),
    };
    let mut opts = FxHashMap::default();
    for token in raw.options.split_whitespace() {
        let opt = parse_token(token, None, style).map_err(&err)?;
        opts.insert(opt.name.clone(), opt);
    }
    for (list, role) in [
        (&raw.writes, Role::Write(Shape::Path)),
        (&raw.loads, Role::Load(Shape::Path)),
    ] {
        for token in list.split_whitespace() {
            let opt = parse_role_token(token, role, style).map_err(&err)?;
            opts.insert(opt.name.clone(), opt);
        }
    }
    for token in raw.network.split_whitespace() {
        let opt = parse_token(token, Some("contacts the network"), style).map_err(&err)?;
        opts.insert(opt.name.clone(), opt);
    }
    for entry in &raw.ask {
        let (tokens, reason) = entry
            .split_once(" : ")
            .ok_or_else(|| err(format!("ask entry {entry:?} has no \" : reason\"")))?;
        for token in tokens.split_whitespace() {
            let opt = parse_token(token, Some(reason.trim()), style).map_err(&err)?;
            opts.insert(opt.name.clone(), opt);
        }
    }
    let mut longs: Vec<String> = opts
        .keys()
        // A whole word listed as a flag (`--watchAll=false`) is not a name to abbreviate.
        .filter(|k| k.starts_with("--") && !k.contains('='))
        .cloned()
        .collect();
    longs.sort_unstable();
    let args = match raw.args.as_deref().unwrap_or("paths") {
        "paths" => Args::Paths,
        "text" => Args::Text,
        "modules" => Args::Modules,
        "loads" => Args::Loads,
        other => return Err(err(format!("unknown args {other:?}"))),
    };
    let check = match raw.check.as_deref() {
        None => None,
        Some("sed") => Some(Check::Sed),
        Some("awk") => Some(Check::Awk),
        Some("jq") => Some(Check::Jq),
        Some("date") => Some(Check::Date),
        Some("ps") => Some(Check::Ps),
        Some("test") => Some(Check::Test),
        Some("set") => Some(Check::Set),
        Some("read") => Some(Check::Read),
        Some("find") => Some(Check::Find),
        Some("cc") => Some(Check::Cc),
        Some("git-config") => Some(Check::GitConfig),
        Some(other) => return Err(err(format!("unknown check {other:?}"))),
    };
    let recursive = match &raw.recursive {
        None => Recursive::Never,
        Some(list) if list.iter().any(|o| o == "always") => Recursive::Always,
        Some(list) => Recursive::With(list.clone()),
    };
    let rest = match &raw.rest {
        None => None,
        Some(table) => {
            let raw_rest = all
                .get(table)
                .ok_or_else(|| err(format!("rest names {table:?}, which has no entry")))?;
            Some(Box::new(compile(table, raw_rest, all)?))
        }
    };
    Ok(Spec {
        name: name.to_owned(),
        family: if raw.command_at.is_some() {
            Family::Wrapper
        } else {
            family
        },
        style,
        abbrev: raw.abbrev,
        safe_options: raw.safe_options,
        opts,
        longs,
        numeric: raw.numeric,
        args,
        first_text_unless: raw.first_text_unless.clone(),
        max_args: raw.max_args,
        min_args: raw.min_args,
        values: raw.values.clone(),
        subcommands: raw.subcommands,
        bare_ok: raw.bare_ok,
        requires: raw.requires.clone(),
        rest,
        check,
        names_only: raw.names_only,
        operands_with: raw.operands_with.clone(),
        recursive,
        command_at: raw.command_at,
        network_unless: raw.network_unless.clone(),
        modules_with: raw.modules_with.clone(),
    })
}

/// `-x` flag, `-x=` one argument, `-x?` optional attached argument, `-x==` two arguments; the same
/// with `--long`, and single-dash long names (`-name=`) in the go and find styles.
fn parse_token(token: &str, asks: Option<&str>, style: Style) -> Result<Opt, String> {
    let (name, arity) = if let Some(n) = token.strip_suffix("=?") {
        (n, Arity::NextUnlessLast)
    } else if let Some(n) = token.strip_suffix("==") {
        (n, Arity::Two)
    } else if let Some(n) = token.strip_suffix('=') {
        (n, Arity::One)
    } else if let Some(n) = token.strip_suffix('?') {
        (n, Arity::Optional)
    } else {
        (token, Arity::None)
    };
    let body = name.trim_start_matches('-');
    let dashes = name.len() - body.len();
    let valid = !body.is_empty()
        && match dashes {
            1 => body.chars().count() == 1 || matches!(style, Style::Go | Style::Find),
            2 => true,
            _ => false,
        };
    if !(valid || name.starts_with('+') || matches!(name, "!" | "(" | ")" | ",")) {
        return Err(format!(
            "option token {token:?} is not -x, --long or a single-dash long name"
        ));
    }
    Ok(Opt {
        name: name.to_owned(),
        arity,
        asks: asks.map(str::to_owned),
        role: Role::Read,
        builtins: Vec::new(),
    })
}

/// A `writes` or `loads` token: `-o=` or `-o?` (the value is the path), `--print=KIND=PATH` or
/// `--cov-report=TYPE:PATH` (the path follows the separator, when there is one), `-r=MODULE` (a
/// module name or a path; `-f=MODULE(json,stylish)` with the names the program resolves to its
/// own built-ins), `-p=PLUGIN` (a pytest plugin: a module, or `no:NAME`).
fn parse_role_token(token: &str, role: Role, style: Style) -> Result<Opt, String> {
    let cut = token
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '=' || c == '?')
        .map(|(i, _)| i)
        .ok_or_else(|| format!("{token:?} takes no value, so it cannot write or load a path"))?;
    let (head, template) = token.split_at(cut + 1);
    let (template, builtins) = match template.split_once('(') {
        Some((t, names)) => {
            let names = names
                .strip_suffix(')')
                .ok_or_else(|| format!("{token:?}: unclosed list of built-in names"))?;
            (t, names.split(',').map(str::to_owned).collect())
        }
        None => (template, Vec::new()),
    };
    let shape = match template {
        "" | "PATH" => Shape::Path,
        "MODULE" => Shape::Module,
        "PLUGIN" => Shape::Plugin,
        "PROPERTY" => Shape::Property,
        t => match t.strip_suffix("PATH").and_then(|k| k.chars().last()) {
            Some(sep @ ('=' | ':')) => Shape::After(sep),
            _ => return Err(format!("{token:?}: unknown value template {t:?}")),
        },
    };
    let mut opt = parse_token(head, None, style)?;
    opt.builtins = builtins;
    opt.role = match role {
        Role::Write(_) => Role::Write(shape),
        Role::Load(_) => Role::Load(shape),
        Role::Read => Role::Read,
    };
    Ok(opt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_data_loads() {
        let specs = Specs::builtin();
        assert!(specs.is_ok(), "{specs:?}");
    }

    /// Every program's spec says which version's option list it was read from; aliases
    /// (`same_as`) and the tables of words after `--` or of pathspecs follow their owner's.
    #[test]
    fn every_spec_names_the_version_it_was_audited_against() {
        let raw: RawFile = toml::from_str(DATA_TOML).unwrap();
        let mut missing: Vec<&String> = raw
            .command
            .iter()
            .filter(|(name, spec)| {
                spec.same_as.is_none()
                    && spec.audited.is_none()
                    && !name.ends_with(" --")
                    && name.as_str() != "git paths"
            })
            .map(|(name, _)| name)
            .collect();
        missing.sort();
        assert!(missing.is_empty(), "specs without `audited`: {missing:?}");
    }

    #[test]
    fn tokens_carry_their_argument_counts() {
        let t = |s| parse_token(s, None, Style::Gnu).map(|o| (o.name, o.arity));
        assert_eq!(t("-o="), Ok(("-o".into(), Arity::One)));
        assert_eq!(t("--eof?"), Ok(("--eof".into(), Arity::Optional)));
        assert_eq!(t("--arg=="), Ok(("--arg".into(), Arity::Two)));
        assert_eq!(
            t("--merged=?"),
            Ok(("--merged".into(), Arity::NextUnlessLast))
        );
        assert_eq!(t("-v"), Ok(("-v".into(), Arity::None)));
        assert!(
            t("-name=").is_err(),
            "single-dash long names only in go/find style"
        );
        assert!(t("---x").is_err());
    }

    #[test]
    fn role_tokens_carry_where_the_path_is() {
        let t = |s| parse_role_token(s, Role::Write(Shape::Path), Style::Gnu).map(|o| o.role);
        assert_eq!(t("-o="), Ok(Role::Write(Shape::Path)));
        assert_eq!(t("--print=KIND=PATH"), Ok(Role::Write(Shape::After('='))));
        assert_eq!(
            t("--cov-report=TYPE:PATH"),
            Ok(Role::Write(Shape::After(':')))
        );
        assert_eq!(t("-r=MODULE"), Ok(Role::Write(Shape::Module)));
        assert_eq!(t("-f=MODULE(json,tap)"), Ok(Role::Write(Shape::Module)));
        let f = parse_role_token("-f=MODULE(json,tap)", Role::Load(Shape::Path), Style::Gnu);
        assert_eq!(
            f.map(|o| o.builtins),
            Ok(vec!["json".to_owned(), "tap".to_owned()])
        );
        assert!(t("--cache").is_err(), "a flag has no path to write");
        assert!(t("-o=WHATEVER").is_err());
    }

    #[test]
    fn a_bad_entry_is_named() {
        let e = Specs::parse("[versions]\n[command.x]\noptions = \"-ab\"\n").unwrap_err();
        assert!(e.to_string().contains("x:"), "{e}");
        let e = Specs::parse("[versions]\n[command.y]\nask = [\"-o\"]\n").unwrap_err();
        assert!(e.to_string().contains("reason"), "{e}");
    }
}
