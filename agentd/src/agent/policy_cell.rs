//! The policy a session's calls are checked against, replaceable while sessions run: the daemon
//! swaps it when its configuration is reloaded (SIGHUP), and the next call of every session
//! built from that configuration is checked against the new one. A call in flight keeps the
//! policy it was checked against.

use policy::Policy;
use std::sync::{Arc, RwLock};

/// A shared, replaceable policy.
#[derive(Debug, Clone)]
pub struct PolicyCell(Arc<RwLock<Arc<Policy>>>);

impl PolicyCell {
    /// A cell holding `policy`.
    pub fn new(policy: Policy) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(policy))))
    }

    /// The policy now.
    pub fn current(&self) -> Arc<Policy> {
        let held = self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(&held)
    }

    /// Replaces the policy for every holder of this cell.
    pub fn replace(&self, policy: Arc<Policy>) {
        let mut held = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *held = policy;
    }
}
