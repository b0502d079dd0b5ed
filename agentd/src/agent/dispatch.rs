//! Dispatching one tool call: arguments → policy → approval → a fresh worker. Every failure is a
//! result the model reads; nothing here ends the session. The tools a session offers follow the
//! session ([`Dispatcher::offered`]): a read-only session or a subagent is not offered the tools
//! that write, and refuses them if called anyway.

use super::approval::Approver;
use super::subagent::{self, Role};
use super::tools;
use crate::worker::WorkerPool;
use policy::{Action, Context};
use protocol::event::{ApprovalRequested, ApprovalResolved};
use protocol::event::{
    Event, ToolCall, ToolCallFinished, ToolCallStarted, ToolOutputDelta, ToolStatus,
};
use protocol::ids::ApprovalId;
use protocol::verdict::ApprovalDecision;
use protocol::verdict::{ApprovalMode, Verdict};
use protocol::worker::ToolRequest;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where events go.
pub type Emit = Arc<dyn Fn(Event) + Send + Sync>;

/// How a call ended, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// How it ended.
    pub status: ToolStatus,
    /// What the model receives.
    pub content: String,
    /// The command's exit code, for bash.
    pub exit_code: Option<i32>,
    /// Whether output was cut.
    pub truncated: bool,
}

/// Everything needed to dispatch calls of one session.
#[derive(Debug)]
pub struct Dispatcher {
    /// The policy (replaceable while the session runs).
    pub policy: super::policy_cell::PolicyCell,
    /// The approval mode, changeable while the session runs (shared with its subagents).
    pub mode: super::mode_cell::ModeCell,
    /// The workers calls run in, and the sandbox every call gets (`tmp_dir` is the session's;
    /// each call gets a directory in it).
    pub workers: WorkerPool,
    /// The user's home, for `~` in policy rules.
    pub home: Option<PathBuf>,
    /// Who answers `ask` (a subagent's asks go to its parent's).
    pub approver: Arc<Approver>,
    /// Approval ids handed out (shared with the session's subagents: ids are the session's).
    pub approvals: Arc<AtomicU64>,
    /// The tools the session answers itself (todos, skills).
    pub session: super::session_tools::SessionTools,
    /// A session of its own (offering `task` when it may start subagents), or a subagent.
    pub role: Role,
}

impl Dispatcher {
    /// The tools offered to the model in this session: the workers' tools its sandbox can use
    /// (no tool that only writes in a read-only one), the session's own, and `task` where
    /// subagents may start — less what a subagent is not offered.
    pub fn offered(&self) -> Vec<crate::providers::model::ToolSpec> {
        let mut offered = tools::offered(self.workers.sandbox().profile);
        offered.extend(self.session.specs());
        if self.role.subagents().is_some() {
            offered.push(subagent::spec().clone());
        }
        offered.retain(|t| self.not_offered(&t.name).is_none());
        offered
    }

    /// Why `name` is not offered in this session (and refused when called anyway), if it is
    /// not.
    fn not_offered(&self, name: &str) -> Option<&'static str> {
        if matches!(self.role, Role::Subagent) && subagent::NOT_FOR_SUBAGENTS.contains(&name) {
            return Some(if name == subagent::TOOL {
                "it is not offered to a subagent: subagents cannot start subagents. Do the work yourself and report it."
            } else {
                "it is not offered to a subagent, which is read-only (its workers cannot write). Report what you found instead."
            });
        }
        (self.workers.sandbox().profile == protocol::worker::SandboxProfile::ReadOnly
            && super::tools::WRITERS.contains(&name))
        .then_some(
            "this session is read-only (its workers cannot write). Report what you found instead.",
        )
    }

    /// The result of `call` when the turn's interrupt dropped it before it finished.
    pub fn interrupted_result(&self, call: &ToolCall) -> String {
        match self.role.subagents() {
            Some(s) if call.name == subagent::TOOL => s.interrupted_result(&call.id),
            _ => super::interrupt::INTERRUPTED_CALL.to_owned(),
        }
    }

    /// Tokens this session's subagents used since the last call.
    pub fn take_subagent_usage(&self) -> protocol::session::TokenUsage {
        self.role
            .subagents()
            .map(subagent::Subagents::take_usage)
            .unwrap_or_default()
    }

    /// Whether `request` is a `read_file` of a file in this session's spill folder (a plain
    /// file name in it, nothing that leaves it).
    fn reads_own_spill(&self, request: &ToolRequest) -> bool {
        let (ToolRequest::ReadFile(r), Some(dir)) = (request, self.session.spill_dir()) else {
            return false;
        };
        let path = std::path::Path::new(&r.path);
        path.parent() == Some(dir)
            && path
                .file_name()
                .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
    }

    /// Runs `call` through policy, approval and a worker; `deadline` caps the tool's time.
    /// `cut_off` says the output token limit ended the model's message while it was writing this
    /// call (its last): its arguments may be incomplete even when they parse (`{}`), so it is not
    /// run, and its result says why.
    pub async fn dispatch(
        &self,
        call: &ToolCall,
        cut_off: bool,
        deadline: Option<Instant>,
        emit: &Emit,
    ) -> Outcome {
        let start = Instant::now();
        let outcome = self.decide_and_run(call, cut_off, deadline, emit).await;
        emit(Event::ToolCallFinished(ToolCallFinished {
            call_id: call.id.clone(),
            status: outcome.status,
            content: outcome.content.clone(),
            exit_code: outcome.exit_code,
            truncated: outcome.truncated,
            duration_ms: start.elapsed().as_millis() as u64,
        }));
        outcome
    }

    async fn decide_and_run(
        &self,
        call: &ToolCall,
        cut_off: bool,
        deadline: Option<Instant>,
        emit: &Emit,
    ) -> Outcome {
        if let Some(why) = self.not_offered(&call.name) {
            emit(started(call, Verdict::Deny, "not offered in this session"));
            let message = format!("`{}` is not offered in this session: {why}", call.name);
            return refuse(ToolStatus::Denied, message);
        }
        if !cut_off && self.session.answers(&call.name) {
            emit(started(
                call,
                Verdict::Allow,
                "a session tool: it touches only the session's own state",
            ));
            // A skill's body is read again now: with the owner's rights, as at the start.
            let run_as = self.workers.sandbox().run_as.as_ref();
            let handled = super::owner_files::as_owner(run_as, || self.session.handle(call, emit));
            if let Some(outcome) = handled {
                return outcome;
            }
        }
        if let Some(subagents) = self.role.subagents()
            && call.name == subagent::TOOL
        {
            let task = match (cut_off, subagent::parse(&call.arguments)) {
                (false, Ok(task)) => task,
                (true, _) => {
                    emit(started(
                        call,
                        Verdict::Deny,
                        "the output limit cut the call off",
                    ));
                    return refuse(ToolStatus::Error, tools::CUT_OFF.to_owned());
                }
                (false, Err(message)) => {
                    emit(started(call, Verdict::Deny, "the call is malformed"));
                    return refuse(ToolStatus::Error, message);
                }
            };
            emit(started(call, Verdict::Allow, subagent::WHY_ALLOWED));
            return subagents.run(self, call, task, deadline, emit).await;
        }
        self.check_and_run(call, cut_off, deadline, emit).await
    }

    /// A worker's tool call: its request, the policy, an approval if one is needed, the worker.
    async fn check_and_run(
        &self,
        call: &ToolCall,
        cut_off: bool,
        deadline: Option<Instant>,
        emit: &Emit,
    ) -> Outcome {
        let request = match self.request_for(call, cut_off, emit) {
            Ok(request) => request,
            Err(refused) => return refused,
        };
        // Read once: the call is rated and acted on under one mode.
        let mode = self.mode.get();
        let decision = self.decide(&request, mode);
        emit(started(call, decision.verdict, &decision.reason));
        if let Some(refused) = self.gate(call, &decision, mode, emit).await {
            return refused;
        }
        self.run_in_worker(call, request, deadline, emit).await
    }

    /// The worker request of `call`, or the refusal of a call that names no tool of this
    /// session or whose arguments do not make one.
    fn request_for(
        &self,
        call: &ToolCall,
        cut_off: bool,
        emit: &Emit,
    ) -> Result<ToolRequest, Outcome> {
        if !cut_off && tools::specs().iter().all(|t| t.name != call.name) {
            // Named with the tools this session offers, not every tool there is.
            let names: Vec<String> = self.offered().into_iter().map(|t| t.name).collect();
            emit(started(call, Verdict::Deny, "the call is malformed"));
            let message = format!(
                "There is no tool named `{}`. The tools are: {}.",
                call.name,
                names.join(", ")
            );
            return Err(refuse(ToolStatus::Error, message));
        }
        request_of(call, cut_off).map_err(|(why, message)| {
            emit(started(call, Verdict::Deny, why));
            refuse(ToolStatus::Error, message)
        })
    }

    /// The policy's rating of `request` under `mode`.
    fn decide(&self, request: &ToolRequest, mode: ApprovalMode) -> policy::Decision {
        let ctx = Context {
            workspace: &self.workers.sandbox().workspace,
            home: self.home.as_deref(),
        };
        match mode {
            ApprovalMode::SkipPermissions => {
                policy::Decision::allow("permissions skipped by --dangerously-skip-permissions")
            }
            _ if self.reads_own_spill(request) => {
                policy::Decision::allow("reading this session's own spilled output")
            }
            _ => self.policy.current().check_tool(request, &ctx),
        }
    }

    /// Acts on `decision` under `mode`: `None` if the call may run (asking first where it
    /// says ask), else the refusal the model gets.
    async fn gate(
        &self,
        call: &ToolCall,
        decision: &policy::Decision,
        mode: ApprovalMode,
        emit: &Emit,
    ) -> Option<Outcome> {
        let refusal = match policy::action(decision.verdict, mode) {
            Action::Run => return None,
            Action::Refuse if decision.verdict == Verdict::Deny => format!(
                "Blocked by policy: {}. Do not retry this; find another way or ask the user.",
                decision.reason
            ),
            Action::Refuse => format!(
                "Refused: this call needs approval ({}) and approval mode `never` refuses instead of asking.",
                decision.reason
            ),
            // No one to ask in this session: ask is treated as deny, and the model is told so.
            Action::Ask if !self.approver.can_ask() => format!(
                "Refused: this call needs approval ({}) but there is no one to ask in this session.",
                decision.reason
            ),
            Action::Ask => {
                let approval = ApprovalId(self.approvals.fetch_add(1, Ordering::Relaxed) + 1);
                emit(Event::ApprovalRequested(ApprovalRequested {
                    approval,
                    call: call.clone(),
                    reason: decision.reason.clone(),
                }));
                let (answer, by) = self
                    .approver
                    .decide(approval, call, decision)
                    .await
                    .unwrap_or((ApprovalDecision::Deny, "timeout"));
                emit(Event::ApprovalResolved(ApprovalResolved {
                    approval,
                    decision: answer,
                    by: by.to_owned(),
                }));
                if answer != ApprovalDecision::Deny {
                    return None;
                }
                denied(&decision.reason, by)
            }
        };
        Some(refuse(ToolStatus::Denied, refusal))
    }

    /// Runs an allowed call's `request` in a worker; `deadline` caps its time.
    async fn run_in_worker(
        &self,
        call: &ToolCall,
        request: ToolRequest,
        deadline: Option<Instant>,
        emit: &Emit,
    ) -> Outcome {
        let timeout_ms = deadline.map(|deadline| {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1));
            left.as_millis() as u64
        });
        let id = call.id.clone();
        let on_output = |text: &str| {
            emit(Event::ToolOutputDelta(ToolOutputDelta {
                call_id: id.clone(),
                text: text.to_owned(),
            }))
        };
        let result = self.workers.run(request, timeout_ms, on_output).await;
        match result {
            Ok(r) => {
                let (mut content, cut) =
                    super::spill::fit(r.content, call.id.as_str(), self.session.spill_dir());
                if let Some(code) = r.exit_code.filter(|c| *c != 0 && !r.timed_out) {
                    content.push_str(&format!("\n[exit code {code}]"));
                }
                let status = if r.timed_out {
                    ToolStatus::TimedOut
                } else if r.is_error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                };
                Outcome {
                    status,
                    content,
                    exit_code: r.exit_code,
                    truncated: r.truncated || cut,
                }
            }
            Err(e) => refuse(ToolStatus::Crashed, format!("The tool could not run: {e}")),
        }
    }
}

/// A call that did not run, and why.
fn refuse(status: ToolStatus, content: String) -> Outcome {
    Outcome {
        status,
        content,
        exit_code: None,
        truncated: false,
    }
}

/// The call's request, or why it has none: the reason for the `tool_call_started` event and the
/// result the model reads.
fn request_of(call: &ToolCall, cut_off: bool) -> Result<ToolRequest, (&'static str, String)> {
    let parsed = tools::to_request(&call.name, &call.arguments);
    if cut_off {
        let problem = parsed.err().map(|m| format!(" {m}")).unwrap_or_default();
        return Err((
            "the output limit cut the call off",
            format!("{}{problem}", tools::CUT_OFF),
        ));
    }
    parsed.map_err(|m| ("the call is malformed", m))
}

/// What the model reads when an ask was denied, by the user or because no one answered.
fn denied(reason: &str, by: &str) -> String {
    if by == "timeout" {
        format!(
            "Refused: this call needs approval ({reason}) and no one answered in time (no client was attached to this session). Do not retry it now; say what you wanted to do so the user can allow it."
        )
    } else {
        format!(
            "Denied by the user ({reason}). Do not retry it; ask the user what they want instead."
        )
    }
}

fn started(call: &ToolCall, verdict: Verdict, reason: &str) -> Event {
    Event::ToolCallStarted(ToolCallStarted {
        call: call.clone(),
        verdict,
        reason: reason.to_owned(),
    })
}
