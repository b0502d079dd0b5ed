//! Per-command option specs, as data: which options an auto-allowed command may take, with their
//! argument counts, and what its other arguments are.
//!
//! `data.toml` (embedded) lists every command the policy allows on its own. Each is parsed once into
//! a [`Spec`] ([`load`]); a command line is then read against it the way the program's own option
//! parser would ([`getopt`]), and scripts some commands take (sed, awk) are read by [`scripts`].
//! Anything a spec does not name asks: an unknown option, an abbreviation that is not certain, an
//! argument only known at run time where an option could be.

mod cc;
pub mod getopt;
mod git_config;
mod load;
pub mod scripts;

pub use getopt::{Arg, Parsed, Problem, check};
pub use load::{SpecError, Specs};

use rustc_hash::FxHashMap;

/// How many arguments an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// A flag.
    None,
    /// One, attached (`-n5`, `--lines=5`) or the next word.
    One,
    /// One, only attached (`-i.bak`, `--eof=x`): GNU's optional arguments.
    Optional,
    /// Two, the next two words (`jq --arg name value`).
    Two,
    /// One, attached or the next word; none when it is the last word (git's
    /// `PARSE_OPT_LASTARG_DEFAULT`: `git branch --merged` alone, `--contains HEAD`).
    NextUnlessLast,
}

/// One option a command knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// As written: `-o`, `--output`, or a single-dash long name (`-name`).
    pub name: String,
    /// Its arguments.
    pub arity: Arity,
    /// Why it asks, if it does (it runs a program, evaluates code, contacts the network, or
    /// does what no path check can bound); `None` = its role decides.
    pub asks: Option<String>,
    /// What its value does, when it has one.
    pub role: Role,
    /// For a module value: names the program resolves to its own built-ins before it looks for
    /// a module (`eslint -f json`, `mocha -R spec`), which load nothing.
    pub builtins: Vec<String>,
}

/// What an option's value is to the program: the data declares a role for every option (a flag's
/// is `Read`, and unused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Text, or a path it reads: rated as a read (text names a workspace file, which passes).
    Read,
    /// A path it writes: allowed only where the write rules allow (inside the workspace).
    Write(Shape),
    /// A path (or module) it loads code or configuration from: allowed only inside the
    /// workspace, where it is the project's code.
    Load(Shape),
}

/// How a written or loaded path sits in an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The whole value is the path (`--cache-location=PATH`).
    Path,
    /// `KIND` alone, or `KIND` then `sep` then the path (`--print=KIND=PATH`,
    /// `--cov-report=TYPE:PATH`).
    After(char),
    /// A module name or a path: a name is looked up where the policy cannot see (node's
    /// `node_modules` up the tree, Python's `sys.path`), so only a path (`./x`, `/x`) can be
    /// shown to be inside the workspace (`mocha -r`, `unittest NAME`).
    Module,
    /// A pytest plugin: a module name, or `no:NAME`, which unloads one (`-p no:cacheprovider`).
    Plugin,
    /// `NAME` or `NAME=VALUE`, a property any part of the program may read (`mvn -DskipTests`):
    /// only the names listed as built-ins pass.
    Property,
}

/// What a command's non-option arguments are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Args {
    /// Files or directories it reads: each is rated against the read rules.
    Paths,
    /// Text (patterns, formats, names): never rated as paths.
    Text,
    /// Modules or test names it imports and runs (`python -m unittest NAME`): each is loaded,
    /// as a [`Shape::Module`] value is.
    Modules,
    /// Directories or files it loads code from (`unittest discover DIR`).
    Loads,
}

/// Which rule family a command belongs to (what it does when allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Reads files and prints.
    Read,
    /// Queries a version, a path or a setting.
    Query,
    /// A read-only git subcommand.
    Git,
    /// Builds, tests or lints: runs the project's own code (build scripts, tests, configs).
    Build,
    /// Runs another command (`env`, `timeout`, `xargs`, …), which is rated by its own spec.
    Wrapper,
}

/// A validator for arguments options cannot describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// A sed script: no `w`, `e`, `r` commands or flags.
    Sed,
    /// An awk program: no `system`, pipes, `getline`, output redirection, `ARGV`/`ARGC`.
    Awk,
    /// A jq program: no `import`/`include` and nothing that reads modules or names files.
    Jq,
    /// `date`: an operand must be a `+FORMAT` (any other sets the clock).
    Date,
    /// `test` / `[`: `-v` / `-R` names must be plain (a subscript is evaluated as code).
    Test,
    /// `set`: only shell options that do not change what later commands run or see.
    Set,
    /// `read`: every name a plain variable that no program reads.
    Read,
    /// `find`: predicates and actions.
    Find,
    /// `ps`: no BSD `e` (every process's environment beside its command).
    Ps,
    /// `git config`: reading a key, not setting one.
    GitConfig,
    /// A C compiler in check mode: `-fsyntax-only`, and only options that neither write, link,
    /// nor load plugins or programs.
    Cc,
}

/// When a command reads directories recursively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recursive {
    /// Never.
    Never,
    /// Always (`rg`, `find`, `du`, `tree`).
    Always,
    /// When one of these options is given (`grep -r`, `ls -R`, `diff -r`).
    With(Vec<String>),
}

/// How a command's options are parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// GNU getopt_long: clustered short options, `--long[=value]`, options anywhere (permuted)
    /// unless after `--`.
    Gnu,
    /// Like GNU, but options end at the first operand (bash builtins, POSIX getopt, git's
    /// global options, cargo before its subcommand).
    Posix,
    /// Go's flag package (and other single-dash long parsers): `-name`, `--name`, `-name=value`
    /// or `-name value`; no clustering; options may follow packages (`go test`).
    Go,
    /// `find`: paths first, then single-dash predicates with fixed argument counts.
    Find,
}

/// One command's spec.
#[derive(Debug, Clone)]
pub struct Spec {
    /// `ls`, or `git status` for a subcommand.
    pub name: String,
    /// What it does.
    pub family: Family,
    /// How options are parsed.
    pub style: Style,
    /// Whether a unique prefix of a long option is that option (GNU getopt_long). Only for
    /// commands whose `long` list is the program's complete list: a prefix of an allowed option
    /// might otherwise be the exact name of one we do not know.
    pub abbrev: bool,
    /// Every option the real program has is harmless (not only those listed), so a word only
    /// known at run time may stand where an option could.
    pub safe_options: bool,
    /// Options by name (`-o`, `--output`, `-name`). Keys are the spec's own (trusted) names, so a
    /// fast hash (Fx) serves; SipHash was a tenth of reading a command line.
    pub opts: FxHashMap<String, Opt>,
    /// Long option names, sorted: for prefix resolution.
    pub longs: Vec<String>,
    /// `-NUM` is accepted (`head -20`).
    pub numeric: bool,
    /// What its operands are.
    pub args: Args,
    /// The first operand is text (a pattern, a script) unless one of these options was given.
    pub first_text_unless: Option<Vec<String>>,
    /// Fewest operands it needs (`git stash` alone pushes a stash; `git stash list` lists).
    pub min_args: usize,
    /// Most operands it may take (`uniq IN OUT` writes OUT).
    pub max_args: Option<usize>,
    /// The only operand values it accepts (`make` targets), if restricted.
    pub values: Option<Vec<String>>,
    /// It has subcommands (`git`, `cargo`): the first operand names the spec of the rest.
    pub subcommands: bool,
    /// The subcommand is optional: without one the command is allowed as it is (`git` needs one).
    pub bare_ok: bool,
    /// One of these options must be given (check mode: `tsc --noEmit`, `cargo fmt --check`).
    pub requires: Option<Vec<String>>,
    /// How the words after `--` are read, if not as operands.
    pub rest: Option<Box<Spec>>,
    /// A validator.
    pub check: Option<Check>,
    /// It reads names and metadata only, not contents (`ls`, `stat`, `find`, `tree`).
    pub names_only: bool,
    /// Operands are allowed past `max_args` when one of these is given (`git tag -l PATTERN`).
    pub operands_with: Option<Vec<String>>,
    /// When it recurses into directories.
    pub recursive: Recursive,
    /// For wrappers: the operand (0-based) where the wrapped command starts.
    pub command_at: Option<usize>,
    /// It may download what it runs (`npx`) unless one of these options is given: where tool
    /// calls have the network, it then asks.
    pub network_unless: Option<Vec<String>>,
    /// Its operands are module names, not paths, when one of these is given (`pytest --pyargs`).
    pub modules_with: Option<Vec<String>>,
}

impl Spec {
    /// Whether `name` (a canonical option name) was given in `parsed`.
    pub fn given(parsed: &Parsed<'_>, names: &[String]) -> bool {
        parsed
            .options
            .iter()
            .any(|(o, _)| names.iter().any(|n| n == o))
    }
}
