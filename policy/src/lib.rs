//! The permission layer of agentd: given a tool call, decide `allow`, `ask` or `deny`, and say which
//! rule decided. It answers "should we?"; the tool-worker's sandbox answers "can it?".
//!
//! Pure: no I/O beyond parsing configuration text, so it can be fuzzed and benchmarked alone.
//!
//! Layout: [`rules`] (the TOML model, validation, compiled glob sets) · `defaults.toml` (the built-in
//! rules, in config syntax) · [`shell`] (bash text → every simple command it would run, via
//! tree-sitter-bash) · [`paths`] (lexical path resolution) · [`engine`] (rating, strictest wins) ·
//! [`mode`] (verdict × approval mode → action).

pub mod engine;
pub mod mode;
pub mod paths;
pub mod rules;
pub mod shell;

pub use engine::{Access, DEFAULTS_TOML, Decision, Policy};
pub use mode::{Action, action};
pub use paths::Context;
pub use protocol::verdict::{ApprovalMode, Verdict};
pub use rules::PolicyError;
