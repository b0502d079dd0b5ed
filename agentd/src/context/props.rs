//! Properties over random sessions: whatever fitting and compaction do, every request stays well
//! formed — pairs whole and in order, the conversation opening with the user, no two messages of
//! the same side in a row (Anthropic's and Gemini's alternation).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use super::compact::{SUMMARY_HEADING, apply};
use super::fit::{CLEARED, Window, clear_stale, compaction_cut, estimate_all};
use super::sample::{assert_sendable, build, session};
use crate::providers::model::Role;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn fitting_and_compaction_keep_every_request_sendable(
        turns in session(),
        window_tokens in 500u64..20_000,
        keep in 0usize..10,
    ) {
        let history = build(&turns);
        assert_sendable(&history);

        let mut cleared = history.clone();
        clear_stale(&mut cleared, keep);
        assert_sendable(&cleared);
        if keep > 0 {
            let newest = cleared.iter().rposition(|m| !m.tool_calls.is_empty()).unwrap_or(0);
            prop_assert!(
                cleared[newest..].iter().all(|m| !m.content.starts_with(CLEARED)),
                "the newest step's results are never cleared"
            );
        }
        let old = history.iter().position(|m| m.role == Role::Tool && m.content.len() > 100);
        let steps_after = |i: usize| history[i..].iter().filter(|m| !m.tool_calls.is_empty()).count();
        if let Some(i) = old.filter(|&i| steps_after(i) >= (2 * keep).max(1)) {
            prop_assert!(cleared[i].content.starts_with(CLEARED), "a result 2 × keep steps old is cleared");
        }

        let window = Window::new(window_tokens);
        if let Some(cut) = compaction_cut(&cleared, &window) {
            let compacted = apply(&cleared, cut, "Goal: fix it. State: half done.");
            assert_sendable(&compacted);
            prop_assert!(compacted[1].content.starts_with(SUMMARY_HEADING));
            prop_assert_eq!(&compacted.last(), &cleared.last(), "the newest message is kept");
            prop_assert!(estimate_all(&compacted) <= estimate_all(&cleared) + 40);
        }
    }
}
