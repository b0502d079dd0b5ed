//! The permission layer of agentd: given a tool call, decide `allow`, `ask` or `deny`, and say which
//! rule decided. It answers "should we?"; the tool-worker's sandbox answers "can it?".
//!
//! Pure: no I/O beyond parsing configuration text, so it can be fuzzed and benchmarked alone.
//!
//! Layout: [`rules`] (the TOML model, validation, compiled glob sets) · `defaults.toml` (the built-in
//! rules, in config syntax) · [`specs`] (per-command option specs, as data, and a getopt that reads
//! command lines the way the programs do) · [`shell`] (bash text → every simple command it would
//! run, via tree-sitter-bash) · [`paths`] (lexical path resolution, globs and recursive reads
//! against protected patterns) · [`engine`] (rating, structured decisions, the remembered
//! approvals) · [`mode`] (verdict × approval mode → action).

pub mod engine;
pub mod mode;
pub mod paths;
pub mod rules;
pub mod shell;
pub mod specs;

pub use engine::{Access, ApprovalKey, Approvals, DEFAULTS_TOML, Decision, Part, Policy, Shell};
pub use mode::{Action, action};
pub use paths::Context;
pub use protocol::verdict::{ApprovalMode, Verdict};
pub use rules::PolicyError;
