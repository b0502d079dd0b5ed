//! Supervisor overhead per agent step: an agent turn against an instant mock model whose every
//! reply is one tool call the policy denies (so no worker runs), against the same HTTP round trip
//! made directly — both measured in this run. Overhead = step − round trip: the loop, dispatch,
//! argument validation, the policy check, events and the growing conversation. The turn runs
//! as `agent run`'s does, on the session engine (its task, its op queue, its journal), and a step
//! is timed as a front end sees it: when its event arrives through a subscription.
//!
//! `cargo bench -p agentd-e2e --bench agent_step`. Goal: under 1 ms median.

use agentd::agent::dispatch::{Dispatcher, Emit};
use agentd::agent::turn::{Agent, Limits};
use agentd::engine::build::Built;
use agentd::engine::journal::Journal;
use agentd::providers::Provider;
use agentd::providers::model::{Message, ModelRequest};
use agentd::settings::{ProviderKind, ProviderSettings};
use agentd::store::log::Record;
use agentd::worker::tmp::{Owner, PrivateDir};
use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use protocol::event::Event;
use protocol::ids::SessionId;
use protocol::verdict::ApprovalMode;
use std::sync::Arc;
use std::time::{Duration, Instant};

const STEPS: usize = 200;

fn denied_call() -> Reply {
    Reply::stream(vec![
        openai::tool(
            0,
            Some("call_x"),
            Some("bash"),
            r#"{"command": "rm -rf build"}"#,
        ),
        openai::finish("tool_calls"),
        openai::usage(10, 5),
    ])
}

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() * 99 / 100])
}

fn main() {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        std::process::exit(1)
    };
    rt.block_on(async {
        // Agent steps: the same replies, through the loop.
        let mut script: Vec<Reply> = (0..STEPS).map(|_| denied_call()).collect();
        script.push(Reply::stream(vec![openai::text("done"), openai::finish("stop")]));
        let mock = MockLlm::start(script).await;
        let settings = ProviderSettings { kind: ProviderKind::OpenAi, base_url: mock.url(), api_key: None, model: "m".into() };
        let Ok(provider) = Provider::from_settings(&settings) else { std::process::exit(1) };
        let Ok(policy) = policy::Policy::builtin() else { std::process::exit(1) };
        let tmp = std::env::temp_dir();
        let sandbox = agentd::worker::default_sandbox(tmp.clone(), tmp.clone(), None);
        let dispatcher = Arc::new(Dispatcher {
            policy: agentd::agent::policy_cell::PolicyCell::new(policy),
            mode: agentd::agent::mode_cell::ModeCell::new(ApprovalMode::OnRisk),
            workers: agentd::worker::WorkerPool::new("/nonexistent/tool-worker".into(), sandbox, 0),
            home: None,
            approver: agentd::agent::approval::Approver::Nobody.into(),
            approvals: Default::default(),
            session: Default::default(),
            role: Default::default(),
        });
        // The session as `agent run` makes it (not kept on disk: the bench times the supervisor,
        // not fsync), run by the engine.
        let Ok(session) = SessionId::new("s-bench") else { std::process::exit(1) };
        let journal = Arc::new(Journal::new(session, None));
        let emit: Emit = { let j = journal.clone(); Arc::new(move |e: Event| { j.emit(e); }) };
        let limits = Limits { max_steps: STEPS as u32 + 1, ..Limits::default() };
        let agent = Agent::new(provider, "m".into(), dispatcher, limits, emit);
        let Some(system) = agent.system_message().cloned() else { std::process::exit(1) };
        let Ok(tmp) = PrivateDir::create(&std::env::temp_dir(), "agentd-bench-", Owner::current()) else { std::process::exit(1) };
        let handle = agentd::engine::start(Built { agent, tmp }, journal, None, Default::default());
        let Ok(mut events) = handle.subscribe(None) else { std::process::exit(1) };
        // Each step's end as the front end sees it, and every event (to rebuild the requests).
        let seen = tokio::spawn(async move {
            let (mut marks, mut records) = (Vec::new(), Vec::new());
            while let Some(e) = events.next().await {
                if matches!(e.event, Event::TurnStarted(_) | Event::ToolCallFinished(_)) {
                    marks.push(Instant::now());
                }
                let end = matches!(e.event, Event::TurnFinished(_));
                records.push(Record { seq: e.seq, unix_ms: 0, event: e.event });
                if end {
                    break;
                }
            }
            (marks, records)
        });
        let Ok(outcome) = handle.run_turn("go").await else { std::process::exit(1) };
        if outcome.tool_calls.len() != STEPS {
            eprintln!("expected {STEPS} denied calls, got {}", outcome.tool_calls.len());
            std::process::exit(1);
        }
        let Ok((marks, records)) = seen.await else { std::process::exit(1) };
        handle.stop().await;
        let (messages, _) = agentd::agent::resume::conversation(system, &records);
        let steps: Vec<Duration> = marks.windows(2).map(|w| w[1] - w[0]).collect();

        // Baseline: the very same requests (prefixes of the agent's own conversation), sent
        // directly, so payload growth is in both series and only the supervisor's work differs.
        let mock = MockLlm::start((0..STEPS).map(|_| denied_call()).collect()).await;
        let settings = ProviderSettings { kind: ProviderKind::OpenAi, base_url: mock.url(), api_key: None, model: "m".into() };
        let Ok(provider) = Provider::from_settings(&settings) else { std::process::exit(1) };
        let tools = agentd::agent::tools::specs().to_vec();
        let mut baseline = Vec::with_capacity(STEPS);
        for i in 0..STEPS {
            let messages: Vec<Message> = messages[..2 + 2 * i].to_vec();
            let request = ModelRequest { model: "m".into(), messages, tools: tools.clone(), max_tokens: None, reminder: None };
            let start = Instant::now();
            if provider.complete(&request, &mut |_| {}).await.is_err() {
                std::process::exit(1);
            }
            baseline.push(start.elapsed());
        }

        // Step i and baseline request i carry the same payload: their difference is step i's overhead.
        let paired: Vec<Duration> = steps.iter().zip(&baseline).map(|(s, b)| s.saturating_sub(*b)).collect();
        let (o_med, o_p99) = percentiles(paired);
        let (b_med, b_p99) = percentiles(baseline);
        let (s_med, s_p99) = percentiles(steps);
        let overhead = o_med;
        println!("{:<52} {:>10} {:>10}", format!("{STEPS} steps each"), "median", "p99");
        println!("{:<52} {:>10.2?} {:>10.2?}", "baseline: the same requests sent directly", b_med, b_p99);
        println!("{:<52} {:>10.2?} {:>10.2?}", "agent step: round trip + loop + dispatch + policy", s_med, s_p99);
        println!("{:<52} {:>10.2?} {:>10.2?}", "supervisor overhead (step − same request), paired", o_med, o_p99);
        println!(
            "\nsupervisor overhead per step: {overhead:.2?} median (goal < 1 ms: {}); the conversation grew to {} messages",
            if overhead < Duration::from_millis(1) { "met" } else { "NOT met" },
            messages.len()
        );
    });
}
