//! A session's approval mode, changeable while it runs (`set_approval_mode`, the REPL's
//! `/approval`): the session and its subagents share one cell, and each call reads the mode once,
//! when it is rated — a call already asking keeps the mode it was asked under.

use protocol::verdict::ApprovalMode;
use std::sync::{Arc, RwLock};

/// A shared, changeable approval mode.
#[derive(Debug, Clone, Default)]
pub struct ModeCell(Arc<RwLock<ApprovalMode>>);

impl ModeCell {
    /// A cell holding `mode`.
    pub fn new(mode: ApprovalMode) -> Self {
        Self(Arc::new(RwLock::new(mode)))
    }

    /// The mode now.
    pub fn get(&self) -> ApprovalMode {
        *self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Changes the mode for every holder of this cell.
    pub fn set(&self, mode: ApprovalMode) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = mode;
    }
}
