//! The supervisor side of agentd: sessions, the agent loop, providers, the policy engine and the
//! workers it spawns — and the command-line front ends that drive them.
//!
//! Layout so far: [`cli`] (subcommands of the `agent` and `agentd` binaries) · [`engine`] (the
//! one session engine every front end drives) · [`agent`] (the turn loop, dispatch, approvals) ·
//! [`server`] (the daemon's socket) · [`store`] (session logs) · [`providers`] (model
//! providers: the internal model, retries, the wire formats) · [`worker`] (spawning
//! tool-workers, their cgroups and environment) · [`inert`] (model text made harmless for a
//! terminal) · [`approval_view`] (what an approval prompt shows) · [`workspace_file`] (the
//! client's reads of files the model may have made) · [`random`] (unguessable names) ·
//! [`workspace_check`] (a workspace that holds what the sandbox hides is refused, for every
//! front end) · [`review`] (what a turn changed, from the supervisor's own walk of the writable
//! roots, for the user to review).

pub mod agent;
pub mod approval_view;
pub mod cli;
pub mod config;
pub mod context;
pub mod demo;
pub mod engine;
pub mod inert;
pub mod providers;
pub mod random;
pub mod review;
pub mod server;
pub mod settings;
pub mod store;
pub mod worker;
pub mod workspace_check;
pub mod workspace_file;
