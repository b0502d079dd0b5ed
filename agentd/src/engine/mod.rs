//! The one session engine: every front end — `agent run`, the daemon's clients, the benchmark —
//! drives a session the same way, through a [`SessionHandle`]. A session is a task of its own
//! (an actor) with a queue of operations in front of it and a stream of events out of it; the
//! operations are the control protocol's requests and the events its events, in-process too.
//! Events are numbered and kept by the store before anyone sees them.
//!
//! * [`build`]: the config file and policy, loaded once ([`build::Base`]); a session's model,
//!   sandbox, worker pool, dispatcher and agent assembled from them ([`build::prepare`],
//!   [`build::build`]);
//! * [`actor`]: the session's task — the op queue, one turn at a time, interrupts and approval
//!   replies while it runs, and the shutdown that lets a running step finish;
//! * [`handle`]: what front ends hold — submit an op, run a turn, subscribe after a seq;
//! * [`journal`]: events numbered, persisted, then broadcast; replay after a seq;
//! * [`approvals`]: asks answered by clients (first answer wins; no client: deny after a wait);
//! * [`shutdown`]: the one value that stops everything, threaded from the server through the
//!   sessions to their worker pools.

pub mod actor;
pub mod approvals;
pub mod build;
pub mod handle;
pub mod journal;
pub mod shutdown;

pub use actor::{Stopping, start};
pub use handle::{OpError, SessionHandle, Subscription};
pub use shutdown::Shutdown;
