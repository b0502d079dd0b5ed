//! Whatever fitting and compaction do to a session's history, the request each provider adapter
//! builds from it is one the real API accepts — judged by the mock LLM's strict check, which
//! answers what the real APIs answer (pairing, order, adjacency, roles, schema keys).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::context::compact::apply;
use agentd::context::fit::{Window, clear_stale, compaction_cut};
use agentd::context::sample::{build, session};
use agentd::providers::model::{Message, ModelRequest};
use agentd::providers::{anthropic, gemini, openai};
use agentd_e2e::mock_llm::refusal;
use proptest::prelude::*;

fn accepted_by_every_provider(messages: &[Message]) {
    let request = ModelRequest {
        model: "m".into(),
        messages: messages.to_vec(),
        tools: agentd::agent::tools::specs().to_vec(),
        max_tokens: Some(1024),
        reminder: None,
    };
    for (path, body) in [
        ("/v1/chat/completions", openai::request_body(&request, true)),
        ("/v1/messages", anthropic::request_body(&request, true)),
        (
            "/v1beta/models/m:streamGenerateContent",
            gemini::request_body(&request),
        ),
    ] {
        if let Some(answer) = refusal(path, &body) {
            panic!("{path} would answer 400: {answer}\n{body:#}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn fitted_and_compacted_histories_are_accepted_by_every_provider(
        turns in session(),
        window_tokens in 500u64..20_000,
        keep in 0usize..10,
    ) {
        let mut history = build(&turns);
        accepted_by_every_provider(&history);
        clear_stale(&mut history, keep);
        accepted_by_every_provider(&history);
        if let Some(cut) = compaction_cut(&history, &Window::new(window_tokens)) {
            accepted_by_every_provider(&apply(&history, cut, "Goal: fix the parser. State: one test fails."));
        }
    }
}

/// The check above is alive: a history with a call and no result is refused by every provider.
#[test]
fn a_call_without_its_result_is_refused_by_every_provider() {
    use agentd::context::sample::Step;
    let mut history = build(&[(
        10,
        vec![Step::Calls {
            results: vec![5, 5],
            reversed: false,
        }],
    )]);
    let result = history
        .iter()
        .position(|m| m.tool_result_for.is_some())
        .unwrap();
    history.remove(result);
    let request = ModelRequest {
        model: "m".into(),
        messages: history,
        tools: vec![],
        max_tokens: None,
        reminder: None,
    };
    for (path, body) in [
        ("/v1/chat/completions", openai::request_body(&request, true)),
        ("/v1/messages", anthropic::request_body(&request, true)),
        (
            "/v1beta/models/m:streamGenerateContent",
            gemini::request_body(&request),
        ),
    ] {
        assert!(
            refusal(path, &body).is_some(),
            "{path} accepted a call without its result"
        );
    }
}
