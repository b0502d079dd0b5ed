//! What a verdict is made of: the parts of a call that did not simply pass (which part, which
//! rule, why), and what "allow always" remembers of them.

use protocol::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// Whether a file tool reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// `read_file`, `list_dir`, `glob`, `grep`, a `<` redirection, or a command's argument.
    Read,
    /// `write_file`, `str_replace`, or a `>` redirection.
    Write,
}

/// What "allow always" remembers of a part that asked: exactly that part, so a later call is
/// covered only where it asks for the same thing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalKey {
    /// A simple command, normalised (quotes removed, wrappers peeled, name reduced to its base
    /// name), and the rule that made it ask.
    Command {
        /// The command's words joined by spaces.
        line: String,
        /// The rule (or spec) that asked.
        rule: String,
    },
    /// A path, resolved (absolute), or a pattern of paths (a glob argument).
    Path {
        /// Read or write.
        access: Access,
        /// The absolute path or pattern.
        path: String,
    },
    /// A construct the policy cannot see through (a substitution whose value matters, an
    /// assignment, arithmetic), as written.
    Construct {
        /// The text.
        text: String,
        /// Why it asked.
        why: String,
    },
    /// A whole tool call (for approval modes that ask about calls the policy allows).
    Call {
        /// The tool.
        tool: String,
        /// Its arguments as given.
        detail: String,
    },
}

/// One part of a call that asked or was denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Its verdict (ask or deny).
    pub verdict: Verdict,
    /// The rule that decided, in words (`bash rule 80 "rm *" (built-in)`, `the spec of sort`,
    /// `read rule 3 "~/.ssh/**" (built-in)`, `the default`, `shell analysis`).
    pub rule: String,
    /// The part and why, in a sentence.
    pub why: String,
    /// What "allow always" would remember.
    pub key: ApprovalKey,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.why)
    }
}

/// A verdict and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The verdict: the strictest of the parts', allow when there are none.
    pub verdict: Verdict,
    /// The deciding part's reason, for display.
    pub reason: String,
    /// Every part that asked or was denied, in the order found.
    pub parts: Vec<Part>,
}

impl Decision {
    /// An allowed call, with why.
    pub fn allow(reason: impl Into<String>) -> Self {
        Self {
            verdict: Verdict::Allow,
            reason: reason.into(),
            parts: Vec::new(),
        }
    }

    /// The decision made of `parts`; `allowed` is the reason when there are none.
    pub fn of(parts: Vec<Part>, allowed: &str) -> Self {
        let deciding = parts
            .iter()
            .enumerate()
            .max_by_key(|(i, p)| (p.verdict, std::cmp::Reverse(*i)))
            .map(|(_, p)| p);
        match deciding {
            Some(p) => Self {
                verdict: p.verdict,
                reason: p.why.clone(),
                parts,
            },
            None => Self::allow(allowed),
        }
    }

    /// The parts that ask (not those denied).
    pub fn asking(&self) -> impl Iterator<Item = &Part> {
        self.parts.iter().filter(|p| p.verdict == Verdict::Ask)
    }
}

/// The parts a human allowed for the rest of a session. Session state: serialisable, so it is
/// kept with the session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approvals {
    keys: BTreeSet<ApprovalKey>,
}

impl Approvals {
    /// Nothing approved.
    pub fn new() -> Self {
        Self::default()
    }

    /// Remembers every part of `decision` that asked. Denied parts are never remembered (and a
    /// decision with one is never covered).
    pub fn remember(&mut self, decision: &Decision) {
        for part in decision.asking() {
            self.keys.insert(part.key.clone());
        }
    }

    /// Remembers one key (a whole call, in approval modes that ask about allowed calls).
    pub fn remember_key(&mut self, key: ApprovalKey) {
        self.keys.insert(key);
    }

    /// Whether `decision` asks only for what was approved already: its verdict is ask, and every
    /// part that asks is remembered.
    pub fn covers(&self, decision: &Decision) -> bool {
        decision.verdict == Verdict::Ask
            && !decision.parts.is_empty()
            && decision.parts.iter().all(|p| p.verdict == Verdict::Ask)
            && decision.asking().all(|p| self.keys.contains(&p.key))
    }

    /// Whether `key` was remembered.
    pub fn contains(&self, key: &ApprovalKey) -> bool {
        self.keys.contains(key)
    }

    /// How many keys are remembered.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The remembered keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &ApprovalKey> {
        self.keys.iter()
    }
}
