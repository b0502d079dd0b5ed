//! Modes: how a verdict becomes an action, given how much a human wants to be asked.

use protocol::verdict::{ApprovalMode, Verdict};

/// What the supervisor does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Run it.
    Run,
    /// Ask a human first (or, with no human to ask, refuse).
    Ask,
    /// Do not run it.
    Refuse,
}

/// The action for `verdict` in `mode`. Deny is refused in every mode but skip-permissions, which
/// performs no rule checks at all (the OS sandbox still applies).
pub fn action(verdict: Verdict, mode: ApprovalMode) -> Action {
    match (mode, verdict) {
        (ApprovalMode::SkipPermissions, _) => Action::Run,
        (_, Verdict::Deny) => Action::Refuse,
        (ApprovalMode::OnRisk, Verdict::Allow) | (ApprovalMode::Never, Verdict::Allow) => {
            Action::Run
        }
        (ApprovalMode::OnRisk, Verdict::Ask) | (ApprovalMode::Always, _) => Action::Ask,
        (ApprovalMode::Never, Verdict::Ask) => Action::Refuse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApprovalMode::*;

    #[test]
    fn the_whole_table() {
        let table = [
            (OnRisk, Verdict::Allow, Action::Run),
            (OnRisk, Verdict::Ask, Action::Ask),
            (OnRisk, Verdict::Deny, Action::Refuse),
            (Always, Verdict::Allow, Action::Ask),
            (Always, Verdict::Ask, Action::Ask),
            (Always, Verdict::Deny, Action::Refuse),
            (Never, Verdict::Allow, Action::Run),
            (Never, Verdict::Ask, Action::Refuse),
            (Never, Verdict::Deny, Action::Refuse),
            (SkipPermissions, Verdict::Allow, Action::Run),
            (SkipPermissions, Verdict::Ask, Action::Run),
            (SkipPermissions, Verdict::Deny, Action::Run),
        ];
        for (mode, verdict, want) in table {
            assert_eq!(action(verdict, mode), want, "{mode:?} {verdict:?}");
        }
    }

    #[test]
    fn deny_is_never_run_except_with_skip_permissions() {
        for mode in [OnRisk, Always, Never] {
            assert_eq!(action(Verdict::Deny, mode), Action::Refuse);
        }
    }
}
