//! A tool call whose arguments are not JSON is a tool result, not the end of the turn, in every
//! wire format, streamed or not: the agent loop (in process, over real HTTP to the strict mock)
//! hands it to dispatch, which answers it with an error; the next request carries that answer in
//! a history the provider accepts; and when the output limit cut the message, the answer says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::agent::approval::Approver;
use agentd::agent::dispatch::{Dispatcher, Emit};
use agentd::agent::turn::{Agent, Limits};
use agentd::providers::Provider;
use agentd::providers::anthropic::AnthropicClient;
use agentd::providers::gemini::GeminiClient;
use agentd::providers::openai::OpenAiClient;
use agentd_e2e::mock_llm::{MockLlm, Recorded, Reply, anthropic, gemini, openai};
use protocol::event::ToolStatus;
use protocol::session::FinishReason;
use protocol::verdict::ApprovalMode;
use serde_json::{Value, json};
use std::sync::Arc;

/// The arguments a model cut off mid-call writes.
const BROKEN: &str = "{\"command\": \"cargo te";

#[derive(Debug, Clone, Copy)]
enum Format {
    OpenAi,
    Anthropic,
    Gemini,
}

impl Format {
    /// A reply with one call to `bash` whose arguments are [`BROKEN`]; `cut` ends it at the output
    /// limit (each format's own stop reason), else as a normal tool-call stop.
    fn broken_call(self, stream: bool, cut: bool) -> Reply {
        match (self, stream) {
            (Format::OpenAi, true) => Reply::stream(vec![
                openai::tool(0, Some("call_b"), Some("bash"), BROKEN),
                openai::finish(if cut { "length" } else { "tool_calls" }),
            ]),
            (Format::OpenAi, false) => {
                let mut v = openai::completion(None, &[("call_b", "bash", BROKEN)]);
                v["choices"][0]["finish_reason"] = json!(if cut { "length" } else { "tool_calls" });
                Reply::ok(v)
            }
            (Format::Anthropic, true) => Reply::events(vec![
                anthropic::start(10),
                anthropic::tool_block(0, "toolu_b", "bash"),
                anthropic::input(0, BROKEN),
                anthropic::stop_block(0),
                anthropic::delta(if cut { "max_tokens" } else { "tool_use" }, 8),
                anthropic::stop(),
            ]),
            // A whole Anthropic message always has an object `input` (the API parses it); what
            // can come whole is a call cut at the limit, answered as cut off.
            (Format::Anthropic, false) => {
                let mut v = anthropic::message("", &[("toolu_b", "bash", json!({}))]);
                v["stop_reason"] = json!(if cut { "max_tokens" } else { "tool_use" });
                Reply::ok(v)
            }
            // Gemini sends `args` as an object; gateways in front of it may pass a string.
            (Format::Gemini, _) => {
                let part = json!({"functionCall": {"name": "bash", "args": BROKEN}});
                let v = gemini::chunk(vec![part], Some(if cut { "MAX_TOKENS" } else { "STOP" }));
                if stream {
                    Reply::events(vec![v])
                } else {
                    Reply::ok(v)
                }
            }
        }
    }

    fn answer(self, stream: bool) -> Reply {
        match (self, stream) {
            (Format::OpenAi, true) => {
                Reply::stream(vec![openai::text("Sorry."), openai::finish("stop")])
            }
            (Format::OpenAi, false) => Reply::ok(openai::completion(Some("Sorry."), &[])),
            (Format::Anthropic, true) => Reply::events(vec![
                anthropic::start(10),
                anthropic::text_block(0),
                anthropic::text(0, "Sorry."),
                anthropic::stop_block(0),
                anthropic::delta("end_turn", 2),
                anthropic::stop(),
            ]),
            (Format::Anthropic, false) => Reply::ok(anthropic::message("Sorry.", &[])),
            (Format::Gemini, true) => Reply::events(vec![gemini::chunk(
                vec![gemini::text("Sorry.")],
                Some("STOP"),
            )]),
            (Format::Gemini, false) => {
                Reply::ok(gemini::chunk(vec![gemini::text("Sorry.")], Some("STOP")))
            }
        }
    }

    fn provider(self, mock: &MockLlm, stream: bool) -> Provider {
        let mut p = match self {
            Format::OpenAi => Provider::OpenAi(OpenAiClient::new(&mock.url(), None).unwrap()),
            Format::Anthropic => {
                Provider::Anthropic(AnthropicClient::new(&mock.url(), None).unwrap())
            }
            Format::Gemini => Provider::Gemini(GeminiClient::new(&mock.url(), None).unwrap()),
        };
        match &mut p {
            Provider::OpenAi(c) => c.stream = stream,
            Provider::Anthropic(c) => c.stream = stream,
            Provider::Gemini(c) => c.stream = stream,
        }
        p.transport_mut().retry.max_tries = 1;
        p
    }

    /// The call as the next request replays it, and the result sent for it.
    fn replayed(self, req: &Recorded) -> (Value, String) {
        let b = &req.body;
        let text = |v: &Value| {
            v.as_str()
                .unwrap_or_else(|| panic!("not text: {v}"))
                .to_owned()
        };
        match self {
            Format::OpenAi => {
                let m = b["messages"].as_array().unwrap();
                assert_eq!(m[3]["tool_call_id"], m[2]["tool_calls"][0]["id"]);
                (
                    m[2]["tool_calls"][0]["function"]["arguments"].clone(),
                    text(&m[3]["content"]),
                )
            }
            Format::Anthropic => {
                let m = b["messages"].as_array().unwrap();
                assert_eq!(m[2]["content"][0]["tool_use_id"], m[1]["content"][0]["id"]);
                (
                    m[1]["content"][0]["input"].clone(),
                    text(&m[2]["content"][0]["content"]),
                )
            }
            Format::Gemini => {
                let c = b["contents"].as_array().unwrap();
                let response = &c[2]["parts"][0]["functionResponse"];
                assert_eq!(response["name"], "bash");
                (
                    c[1]["parts"][0]["functionCall"]["args"].clone(),
                    text(&response["response"]["content"]),
                )
            }
        }
    }
}

fn dispatcher() -> Arc<Dispatcher> {
    let tmp = std::env::temp_dir();
    let sandbox = agentd::worker::default_sandbox(tmp.clone(), tmp, None);
    Arc::new(Dispatcher {
        policy: agentd::agent::policy_cell::PolicyCell::new(policy::Policy::builtin().unwrap()),
        mode: agentd::agent::mode_cell::ModeCell::new(ApprovalMode::OnRisk),
        // No worker may run: a malformed call never reaches one.
        workers: agentd::worker::WorkerPool::new("/nonexistent/tool-worker".into(), sandbox, 0),
        home: None,
        approver: Approver::Nobody.into(),
        approvals: Default::default(),
        session: Default::default(),
        role: Default::default(),
    })
}

async fn case(format: Format, stream: bool, cut: bool) {
    let label = format!("{format:?}, stream {stream}, cut {cut}");
    let mock = MockLlm::start(vec![format.broken_call(stream, cut), format.answer(stream)]).await;
    let emit: Emit = Arc::new(|_| {});
    let mut agent = Agent::new(
        format.provider(&mock, stream),
        "mock-model".into(),
        dispatcher(),
        Limits::default(),
        emit,
    );
    let out = agent.run_turn("run the tests").await;
    assert_eq!(out.reason, FinishReason::Done, "{label}: {:?}", out.message);
    assert_eq!(out.final_text, "Sorry.", "{label}");
    assert_eq!(out.tool_calls.len(), 1, "{label}");
    assert_eq!(out.tool_calls[0].1, ToolStatus::Error, "{label}");
    let reqs = mock.requests();
    assert_eq!(
        reqs.len(),
        2,
        "{label}: the strict mock took the next request"
    );
    let (args, result) = format.replayed(&reqs[1]);
    match format {
        // OpenAI keeps `arguments` a string: the model sees what it wrote.
        Format::OpenAi => assert_eq!(args, json!(BROKEN), "{label}"),
        Format::Anthropic | Format::Gemini => assert_eq!(args, json!({}), "{label}: an object"),
    }
    let whole_anthropic = matches!((format, stream), (Format::Anthropic, false));
    assert_eq!(
        result.contains("The arguments of `bash` are not valid JSON"),
        !whole_anthropic,
        "{label}: {result}"
    );
    assert_eq!(
        result.starts_with("Your message was cut off by the output token limit"),
        cut,
        "{label}: {result}"
    );
}

#[tokio::test]
async fn openai() {
    for (stream, cut) in [(true, false), (true, true), (false, false), (false, true)] {
        case(Format::OpenAi, stream, cut).await;
    }
}

#[tokio::test]
async fn anthropic() {
    for (stream, cut) in [(true, false), (true, true), (false, false), (false, true)] {
        case(Format::Anthropic, stream, cut).await;
    }
}

#[tokio::test]
async fn gemini() {
    for (stream, cut) in [(true, false), (true, true), (false, false), (false, true)] {
        case(Format::Gemini, stream, cut).await;
    }
}
