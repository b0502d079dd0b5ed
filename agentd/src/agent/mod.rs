//! The agent: the tools it offers ([`tools`]), how one call is dispatched ([`dispatch`]), who
//! approves risky calls ([`approval`]), the loop of one turn ([`turn`]) and the child loops of
//! `task` calls ([`subagent`]).

pub mod approval;
pub mod dispatch;
mod fitting;
pub mod git_reminder;
pub mod interrupt;
pub mod mode_cell;
pub mod outcome;
pub mod owner_files;
pub mod policy_cell;
mod repair;
pub mod resume;
pub mod session_tools;
pub mod spill;
pub mod subagent;
pub use fitting::CompactError;
pub use repair::MAX_REPAIRS;
pub mod tools;
pub mod turn;
