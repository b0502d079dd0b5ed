//! What the permission layer decided and what a human answered. Shared by the policy engine, the
//! supervisor and every client, so it lives with the wire types.

use serde::{Deserialize, Serialize};

/// The policy's answer for one tool call. Ordered so that "the strictest wins" is `max()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Runs without asking.
    Allow,
    /// Runs only if a human (or the mode) says yes.
    Ask,
    /// Never runs, whatever the mode or approval (except with skip-permissions).
    Deny,
}

impl Verdict {
    /// The lower-case name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a human is kept in the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Ask when the verdict is ask (the default).
    #[default]
    OnRisk,
    /// Ask for every call, even allowed ones.
    Always,
    /// Never ask: ask becomes deny. For unattended runs.
    Never,
    /// No rule checks at all; the OS sandbox still applies. Only by explicit request.
    SkipPermissions,
}

/// A human's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call.
    AllowOnce,
    /// Run this call and, for the rest of the session, calls matching the same rule.
    AllowAlways,
    /// Do not run it; the model is told the user refused.
    Deny,
}
