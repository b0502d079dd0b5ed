//! The permission layer: given a tool call, decide allow, ask or deny, with the rule that decided.
//! Pure: no I/O beyond parsing configuration text.

pub use protocol::verdict::{ApprovalMode, Verdict};
