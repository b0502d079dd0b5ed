//! The supervisor side of agentd: sessions, the agent loop, providers, the policy engine and the
//! workers it spawns — and the command-line front ends that drive them.
//!
//! Layout so far: [`cli`] (subcommands of the `agent` and `agentd` binaries) · [`engine`] (the
//! one session engine every front end drives) · [`agent`] (the turn loop, dispatch, approvals) ·
//! [`server`] (the daemon's socket) · [`store`] (session logs) · [`providers`] (model
//! providers: the internal model, retries, the wire formats) · [`worker`] (spawning
//! tool-workers, their cgroups and environment) · [`workspace_check`] (a workspace that holds
//! what the sandbox hides is refused, for every front end).

pub mod agent;
pub mod cli;
pub mod config;
pub mod context;
pub mod demo;
pub mod engine;
pub mod inert;
pub mod providers;
pub mod server;
pub mod settings;
pub mod store;
pub mod worker;
pub mod workspace_check;
