//! Subagents: the `task` tool. A call starts a child loop — a fresh conversation under its own
//! system prompt, the session's model, its own step limit — that works on the prompt it was
//! given and answers with a report. Only that report (or, when it stopped early, why and its
//! last words) becomes the call's result: the child's transcript never enters the parent's
//! history. Its events reach the session tagged with the call ([`Event::Subagent`]), so
//! clients can show its work; its approvals are the session's own, untagged, so they reach the
//! user exactly as the parent's do.
//!
//! A child is read-only twice over: its dispatcher does not offer, and refuses, the tools that
//! write (`write_file`, `str_replace`) and the session's own `write_todos` and `task` (depth 1);
//! and its calls run in the sandbox's read-only profile, so a command the policy lets through
//! still cannot change the workspace. Everything else — the policy, the approval mode and who
//! answers asks, the spill folder — is the parent's.
//!
//! Several `task` calls of one message run concurrently, as every call does (`turn.rs`). An
//! interrupt of the parent's turn drops the children with their calls (their workers killed);
//! each dropped child says so in a tagged `turn_finished`, and its call's result carries the
//! last thing it wrote.

use super::dispatch::{Dispatcher, Emit, Outcome};
use super::interrupt::{INTERRUPTED_CALL, Interrupt};
use super::session_tools::SessionTools;
use super::turn::{Agent, Limits, TurnOutcome};
use crate::providers::Provider;
use crate::providers::model::ToolSpec;
use crate::worker::WorkerPool;
use protocol::event::{Event, SubagentEvent, ToolCall, ToolStatus, TurnFinished};
use protocol::ids::ToolCallId;
use protocol::session::{FinishReason, TokenUsage};
use protocol::worker::SandboxProfile;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// The tool's name.
pub const TOOL: &str = "task";

/// A subagent's step limit when `[agent] subagent_max_steps` does not set one.
pub const DEFAULT_MAX_STEPS: u32 = 20;

/// The tools a subagent is not offered, and refuses: those that write, the todo list (the
/// parent's plan is the parent's) and `task` itself (subagents go one level deep).
pub const NOT_FOR_SUBAGENTS: [&str; 4] = ["write_file", "str_replace", "write_todos", TOOL];

/// Why a `task` call is allowed without a policy question: it runs nothing itself.
pub const WHY_ALLOWED: &str = "a subagent: it runs nothing itself; each of its calls is checked on its own and runs read-only";

/// Where a session stands towards subagents.
#[derive(Debug)]
pub enum Role {
    /// A session of its own; it offers `task` when it has [`Subagents`] to start.
    Main(Option<Box<Subagents>>),
    /// A subagent: read-only tools, no todo list, no `task`.
    Subagent,
}

impl Default for Role {
    fn default() -> Self {
        Role::Main(None)
    }
}

impl Role {
    /// The subagents this session may start, if any.
    pub fn subagents(&self) -> Option<&Subagents> {
        match self {
            Role::Main(s) => s.as_deref(),
            Role::Subagent => None,
        }
    }
}

/// What a `task` call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// A few words, shown to the user and in the result.
    pub description: String,
    /// The whole task: the child sees nothing else of the session.
    pub prompt: String,
}

/// The `task` tool's declaration.
pub fn spec() -> &'static ToolSpec {
    static SPEC: OnceLock<ToolSpec> = OnceLock::new();
    SPEC.get_or_init(|| ToolSpec {
        name: TOOL.into(),
        description: "Start a subagent: a helper with a fresh context that investigates one \
            question (reads files, searches, runs read-only commands) and answers with a report. \
            It cannot change files. Only its final report comes back to you, so ask for what you \
            need in it (paths, line numbers, the facts found). Several task calls in one message \
            run at the same time."
            .into(),
        parameters: json!({
            "type": "object", "additionalProperties": false, "required": ["description", "prompt"],
            "properties": {
                "description": {"type": "string", "minLength": 1, "maxLength": 200,
                                "description": "a few words saying what the subagent does, shown to the user"},
                "prompt": {"type": "string", "minLength": 1,
                           "description": "the whole task: the subagent sees nothing of this conversation"}
            }
        }),
    })
}

/// The task a call asks for, or a message the model can act on.
pub fn parse(arguments: &str) -> Result<Task, String> {
    static VALIDATOR: OnceLock<Result<jsonschema::Validator, String>> = OnceLock::new();
    let validator = VALIDATOR
        .get_or_init(|| jsonschema::validator_for(&spec().parameters).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| format!("internal error: the schema of `{TOOL}` does not compile: {e}"))?;
    let args = super::tools::check_args(TOOL, validator, arguments)?;
    let field = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Ok(Task {
        description: field("description"),
        prompt: field("prompt"),
    })
}

/// What a session needs to start subagents, and what its running ones leave behind.
#[derive(Debug)]
pub struct Subagents {
    /// The session's model: a subagent uses the same provider and model.
    provider: Provider,
    /// The model's name; switched with the session's (`set_model`).
    model: Mutex<String>,
    /// The limits of a subagent's turn: its own step limit; its time is what is left of the
    /// parent's turn when it starts.
    limits: Limits,
    /// The worker binary, for each subagent's read-only pool.
    worker: PathBuf,
    /// The subagents' system prompt, written with the parent's (the same `AGENTS.md`).
    system: OnceLock<String>,
    /// The parent's "stop after this step" (the daemon shutting down): a subagent stops at its
    /// own next step boundary too, and reports what it has.
    stop_after_step: OnceLock<Interrupt>,
    /// The newest text of each running subagent, by its `task` call: what the call's result
    /// carries if the parent's turn is interrupted meanwhile.
    findings: Arc<Mutex<HashMap<String, String>>>,
    /// Tokens the subagents used and the parent's loop has not counted yet.
    usage: Mutex<TokenUsage>,
}

impl Subagents {
    /// Subagents on `provider`'s `model` with `limits` (whose `timeout` is replaced by what is
    /// left of the parent's turn), their calls run by `worker`.
    pub fn new(provider: Provider, model: String, limits: Limits, worker: PathBuf) -> Self {
        Self {
            provider,
            model: Mutex::new(model),
            limits,
            worker,
            system: OnceLock::new(),
            stop_after_step: OnceLock::new(),
            findings: Arc::default(),
            usage: Mutex::default(),
        }
    }

    /// Switches the model the next subagents talk to (the session's was switched).
    pub fn set_model(&self, model: &str) {
        model.clone_into(&mut lock(&self.model));
    }

    /// Sets the subagents' system prompt (once, when the parent's is written).
    pub fn set_system(&self, prompt: String) {
        let _ = self.system.set(prompt);
    }

    /// Sets the parent's "stop after this step" switch (once).
    pub fn set_stop_after_step(&self, stop: Interrupt) {
        let _ = self.stop_after_step.set(stop);
    }

    /// The tokens subagents used since the last call: the parent's turn counts them as its own.
    pub fn take_usage(&self) -> TokenUsage {
        std::mem::take(&mut *lock(&self.usage))
    }

    /// The result of a `task` call the parent's interrupt dropped: it says so, with the last
    /// thing the subagent wrote, if anything.
    pub fn interrupted_result(&self, call: &ToolCallId) -> String {
        match lock(&self.findings).remove(call.as_str()) {
            Some(text) => format!(
                "{INTERRUPTED_CALL}\nThe subagent's partial findings (its last message):\n{text}"
            ),
            None => INTERRUPTED_CALL.to_owned(),
        }
    }

    /// Runs `task` (the arguments of `call`) in a child loop of `parent`; its events go to
    /// `emit` tagged with the call. Boxed: the child's calls are dispatched by this same code.
    pub fn run<'a>(
        &'a self,
        parent: &'a Dispatcher,
        call: &'a ToolCall,
        task: Task,
        deadline: Option<Instant>,
        emit: &'a Emit,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        Box::pin(async move {
            let limits = Limits {
                timeout: deadline.map(|d| d.saturating_duration_since(Instant::now())),
                ..self.limits.clone()
            };
            let system = self.system.get().cloned().unwrap_or_else(|| {
                crate::context::prompt::subagent_prompt(&parent.workers.sandbox().workspace, &[])
            });
            let mut child = Agent::with_system(
                self.provider.clone(),
                lock(&self.model).clone(),
                Arc::new(self.dispatcher_for(parent)),
                limits,
                self.tagged(emit, &call.id),
                system,
            );
            if let Some(stop) = self.stop_after_step.get() {
                child.stop_after_step = stop.clone();
            }
            let mut running = Running {
                call: call.id.clone(),
                emit: emit.clone(),
                done: false,
            };
            let out = child.run_turn(&task.prompt).await;
            running.done = true;
            lock(&self.usage).add(out.usage);
            let last = lock(&self.findings).remove(call.id.as_str());
            let (status, content) = report(&task, &out, last);
            let (content, cut) =
                super::spill::fit(content, call.id.as_str(), parent.session.spill_dir());
            Outcome {
                status,
                content,
                exit_code: None,
                truncated: cut,
            }
        })
    }

    /// The child's dispatcher: the parent's policy, mode, approvals, skills and spill folder; a
    /// pool of its own whose workers run in the read-only profile, in the session's cgroup.
    fn dispatcher_for(&self, parent: &Dispatcher) -> Dispatcher {
        let mut sandbox = parent.workers.sandbox().clone();
        sandbox.profile = SandboxProfile::ReadOnly;
        let session = SessionTools::default();
        session.set_skills(parent.session.skills().to_vec());
        if let Some(dir) = parent.session.spill_dir() {
            session.set_spill_dir(dir.to_owned());
        }
        Dispatcher {
            policy: parent.policy.clone(),
            mode: parent.mode.clone(),
            workers: WorkerPool::in_group(self.worker.clone(), sandbox, 0, parent.workers.group()),
            home: parent.home.clone(),
            approver: Arc::clone(&parent.approver),
            approvals: Arc::clone(&parent.approvals),
            session,
            role: Role::Subagent,
        }
    }

    /// `emit` for the child of call `id`: its events tagged, but for its approvals, which are
    /// the session's; its newest text kept as its findings so far.
    fn tagged(&self, emit: &Emit, id: &ToolCallId) -> Emit {
        let (emit, id, findings) = (emit.clone(), id.clone(), Arc::clone(&self.findings));
        Arc::new(move |event: Event| match event {
            Event::ApprovalRequested(_) | Event::ApprovalResolved(_) => emit(event),
            event => {
                if let Event::AssistantMessage(m) = &event
                    && !m.text.trim().is_empty()
                {
                    lock(&findings).insert(id.as_str().to_owned(), m.text.clone());
                }
                emit(Event::Subagent(SubagentEvent {
                    call_id: id.clone(),
                    event: Box::new(event),
                }))
            }
        })
    }
}

/// A child loop while it runs: dropped before it ended (the parent's turn was interrupted and
/// dropped it with its calls), it says so in a tagged `turn_finished`.
struct Running {
    /// The `task` call.
    call: ToolCallId,
    /// The parent's events.
    emit: Emit,
    /// It ended by itself.
    done: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.done {
            (self.emit)(Event::Subagent(SubagentEvent {
                call_id: self.call.clone(),
                event: Box::new(Event::TurnFinished(TurnFinished {
                    reason: FinishReason::Interrupted,
                    usage: TokenUsage::default(),
                    message: Some("the parent's turn was interrupted".into()),
                    changes: None,
                })),
            }));
        }
    }
}

/// The call's status and result for a child's outcome: its report when it finished; else why
/// it stopped and its last words (`last`: its newest non-empty text).
fn report(task: &Task, out: &TurnOutcome, last: Option<String>) -> (ToolStatus, String) {
    let what = &task.description;
    if out.reason == FinishReason::Done {
        let text = if out.final_text.trim().is_empty() {
            "(it finished without writing a report)"
        } else {
            out.final_text.as_str()
        };
        return (ToolStatus::Ok, format!("[subagent report: {what}]\n{text}"));
    }
    let why = match out.reason {
        FinishReason::MaxSteps => "it reached its step limit".to_owned(),
        FinishReason::Timeout => "the turn's time ran out".to_owned(),
        FinishReason::TokenBudget => "the token budget ran out".to_owned(),
        FinishReason::Interrupted => "the session is stopping".to_owned(),
        FinishReason::OutputLimit => "its output limit cut it off".to_owned(),
        FinishReason::Refused => "the model declined".to_owned(),
        FinishReason::Filtered => "the provider's content filter stopped it".to_owned(),
        FinishReason::MalformedCall => "it kept writing malformed tool calls".to_owned(),
        FinishReason::ContextOverflow => "its history no longer fit the context window".to_owned(),
        FinishReason::Error | FinishReason::Done => "an error".to_owned(),
    };
    let detail = out
        .message
        .as_deref()
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    let findings = last.unwrap_or_else(|| "(none: it wrote nothing before it stopped)".into());
    (
        ToolStatus::Error,
        format!(
            "[subagent stopped before finishing: {what}; {why}{detail}]\nIts partial findings (its last message):\n{findings}"
        ),
    )
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves a whole value behind; keep using it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(reason: FinishReason, text: &str, message: Option<&str>) -> TurnOutcome {
        TurnOutcome {
            reason,
            usage: TokenUsage::default(),
            message: message.map(str::to_owned),
            final_text: text.into(),
            tool_calls: vec![],
            changes: None,
        }
    }

    #[test]
    fn the_arguments_are_checked_like_any_tools() {
        assert_eq!(
            parse(r#"{"description": "d", "prompt": "p"}"#),
            Ok(Task {
                description: "d".into(),
                prompt: "p".into()
            })
        );
        let e = parse(r#"{"description": "d"}"#).unwrap_err();
        assert!(e.contains("prompt") && e.contains("required"), "{e}");
        let e = parse(r#"{"description": "d", "prompt": ""}"#).unwrap_err();
        assert!(e.contains("`prompt`"), "{e}");
        let e = parse(r#"{"description": "d", "prompt": "p", "tools": []}"#).unwrap_err();
        assert!(e.contains("tools"), "{e}");
        let e = parse("{\"prompt\": ").unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
    }

    #[test]
    fn the_result_is_the_report_or_why_it_stopped_with_its_last_words() {
        let task = Task {
            description: "find the parser".into(),
            prompt: "…".into(),
        };
        let (status, text) = report(
            &task,
            &outcome(FinishReason::Done, "src/parse.rs:12", None),
            Some("src/parse.rs:12".into()),
        );
        assert_eq!(status, ToolStatus::Ok);
        assert_eq!(text, "[subagent report: find the parser]\nsrc/parse.rs:12");
        let (status, text) = report(
            &task,
            &outcome(FinishReason::MaxSteps, "", Some("stopped after 3 steps")),
            Some("looked at src/".into()),
        );
        assert_eq!(status, ToolStatus::Error);
        assert!(
            text.starts_with("[subagent stopped before finishing: find the parser; it reached its step limit (stopped after 3 steps)]")
                && text.ends_with("\nlooked at src/"),
            "{text}"
        );
        let (_, text) = report(
            &task,
            &outcome(FinishReason::Error, "", Some("HTTP 500")),
            None,
        );
        assert!(
            text.contains("an error (HTTP 500)") && text.contains("(none:"),
            "{text}"
        );
    }

    #[test]
    fn a_subagent_is_offered_no_tool_that_writes_and_no_task() {
        for name in ["write_file", "str_replace", "write_todos", "task"] {
            assert!(NOT_FOR_SUBAGENTS.contains(&name), "{name}");
        }
        assert!(
            super::super::tools::WRITERS
                .iter()
                .all(|w| NOT_FOR_SUBAGENTS.contains(w))
        );
    }
}
