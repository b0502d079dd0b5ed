//! Every stop a provider reports is part of the turn's outcome (issue 20, finding 10): a
//! refusal, a content-filter stop, a blocked prompt, an answer cut by the output limit and a
//! malformed call each end `agent run` with an outcome of its own — in words, in the JSON and
//! in the exit status — instead of "done" with empty or cut text; a malformed or cut call is
//! answered with an error and the turn goes on, a bounded number of times. The real binary,
//! against the mock sending what each service sends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Reply, anthropic, gemini, openai};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::Value;

/// What `agent run --output-format json` answered.
struct Ran {
    code: i32,
    json: Value,
    stderr: String,
    requests: Vec<agentd_e2e::mock_llm::Recorded>,
}

/// `agent run` against a mock speaking `provider` that answers with `script`.
fn run(provider: &str, model: &str, script: Vec<Reply>, format: &str) -> Ran {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(script));
    let ws = Dir::new("repo", As::Root);
    std::fs::write(ws.0.join("notes.txt"), "hello\n").unwrap();
    let home = Dir::new("home", As::Root);
    let out = agent_against(As::Root, &home.0, &mock.url())
        .env("PROVIDER", provider)
        .env("MODEL", model)
        .args(["run", "-p", "summarise notes.txt", "--workspace"])
        .arg(&ws.0)
        .args(["--output-format", format, "--approval", "never"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Ran {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        requests: mock.requests(),
    }
}

fn assert_outcome(ran: &Ran, reason: &str, code: i32, said: &str) {
    let j = &ran.json;
    assert_eq!(j["finish_reason"], reason, "{j}\n{}", ran.stderr);
    assert_eq!(ran.code, code, "{j}");
    assert_eq!(j["exit_code"], code, "{j}");
    let message = j["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(said),
        "the provider's reason {said:?} is not in {message:?}"
    );
    assert!(j["outcome"].as_str().is_some_and(|o| !o.is_empty()), "{j}");
}

#[test]
fn an_openai_refusal_is_the_refused_outcome_with_its_words() {
    let ran = run(
        "openai",
        "gpt-4.1",
        vec![openai::refusal_reply("I can't help with that.")],
        "json",
    );
    assert_outcome(&ran, "refused", 4, "refusal");
    assert_eq!(ran.json["result"], "I can't help with that.");
}

#[test]
fn an_openai_content_filter_stop_is_the_filtered_outcome() {
    let ran = run(
        "openai",
        "gpt-4.1",
        vec![openai::filtered_reply("Here is how")],
        "json",
    );
    assert_outcome(&ran, "filtered", 5, "content_filter");
}

#[test]
fn gemini_safety_and_recitation_stops_and_a_blocked_prompt_are_filtered() {
    for (reply, said) in [
        (gemini::stopped("SAFETY", None), "SAFETY"),
        (gemini::stopped("RECITATION", None), "RECITATION"),
        (
            gemini::stopped("PROHIBITED_CONTENT", None),
            "PROHIBITED_CONTENT",
        ),
        (
            gemini::blocked("PROHIBITED_CONTENT"),
            "blockReason:PROHIBITED_CONTENT",
        ),
    ] {
        let ran = run(
            "gemini",
            "gemini-2.5-flash",
            vec![Reply::events(vec![reply])],
            "json",
        );
        assert_outcome(&ran, "filtered", 5, said);
    }
}

#[test]
fn an_anthropic_answer_cut_by_max_tokens_or_refused_is_not_done() {
    let ran = run(
        "anthropic",
        "claude-sonnet-4-5",
        vec![anthropic::stopped_reply("The notes say hel", "max_tokens")],
        "json",
    );
    assert_outcome(&ran, "output_limit", 3, "max_tokens");
    assert_eq!(ran.json["result"], "The notes say hel");
    let ran = run(
        "anthropic",
        "claude-sonnet-4-5",
        vec![anthropic::stopped_reply("", "refusal")],
        "text",
    );
    assert_eq!(ran.code, 4, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("refused") && ran.stderr.contains("declined"),
        "the text output does not say it in words: {}",
        ran.stderr
    );
}

/// A Gemini `MALFORMED_FUNCTION_CALL` carries no call to answer: the provider's words go back to
/// the model and the turn goes on; the next answer ends it `done`.
#[test]
fn a_malformed_gemini_call_is_fed_back_and_the_turn_goes_on() {
    let said = "Malformed function call: read_file{path: notes.txt";
    let ran = run(
        "gemini",
        "gemini-2.5-flash",
        vec![
            Reply::events(vec![gemini::stopped("MALFORMED_FUNCTION_CALL", Some(said))]),
            Reply::events(vec![gemini::chunk(
                vec![gemini::text("It says hello.")],
                Some("STOP"),
            )]),
        ],
        "json",
    );
    assert_eq!(
        ran.json["finish_reason"], "done",
        "{}\n{}",
        ran.json, ran.stderr
    );
    assert_eq!(ran.code, 0);
    assert_eq!(ran.requests.len(), 2);
    let second = ran.requests[1].body.to_string();
    assert!(
        second.contains("MALFORMED_FUNCTION_CALL") && second.contains("read_file{path: notes.txt"),
        "the model was not told what went wrong: {second}"
    );
}

/// Bounded: a model that keeps writing malformed calls ends the turn with that outcome.
#[test]
fn malformed_calls_past_the_bound_end_the_turn() {
    let malformed = || {
        Reply::events(vec![gemini::stopped(
            "MALFORMED_FUNCTION_CALL",
            Some("bad"),
        )])
    };
    let ran = run(
        "gemini",
        "gemini-2.5-flash",
        vec![malformed(), malformed(), malformed(), malformed()],
        "json",
    );
    assert_outcome(&ran, "malformed_call", 6, "MALFORMED_FUNCTION_CALL");
    assert_eq!(ran.requests.len(), 3, "two repairs, then the end");
}

/// Calls cut by the output limit are answered with an error and the turn goes on twice; the
/// third time ends it with the output-limit outcome.
#[test]
fn calls_cut_by_the_output_limit_are_repaired_twice_then_end_the_turn() {
    let cut = |id: &str| {
        Reply::stream(vec![
            openai::tool(0, Some(id), Some("read_file"), "{\"path\": \"notes"),
            openai::finish("length"),
        ])
    };
    let ran = run(
        "openai",
        "gpt-4.1",
        vec![
            cut("call_1"),
            cut("call_2"),
            cut("call_3"),
            openai::answer_reply("x"),
        ],
        "json",
    );
    assert_outcome(&ran, "output_limit", 3, "length");
    assert_eq!(ran.requests.len(), 3, "{}", ran.json);
    let calls = ran.json["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c["status"] == "error"), "{calls:?}");
    let last = ran.requests[2].body.to_string();
    assert!(
        last.contains("cut off by the output token limit"),
        "the cut call's error did not go back: {last}"
    );
}
