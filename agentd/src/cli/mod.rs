//! Subcommands of the `agentd` binary, each a function from parsed arguments to an exit code, so
//! the binary stays a thin shell over them.

pub mod policy_check;
pub mod run;
pub mod sandbox;
