//! The loop of one turn: call the model, run the tools it asks for (concurrently, each in its own
//! worker, results back in call order), feed the results back, until it stops asking — or a limit
//! ends the turn with its reason.

use super::dispatch::{Dispatcher, Emit};
use crate::providers::Provider;
use crate::providers::model::{Message, ModelRequest, Role};
use protocol::event::ToolStatus;
use protocol::event::{
    AssistantMessage, AssistantTextDelta, Event, ToolCall, TurnFinished, TurnStarted, UserMessage,
};
use protocol::session::{FinishReason, TokenUsage};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Limits of a turn.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Model calls per turn.
    pub max_steps: u32,
    /// Wall-clock limit.
    pub timeout: Option<Duration>,
    /// Tokens (input + output, summed over the turn's calls).
    pub token_budget: Option<u64>,
    /// Tool calls run at once.
    pub max_parallel: usize,
    /// The model's context window and how the history is fitted to it.
    pub window: crate::context::fit::Window,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_steps: 50,
            timeout: None,
            token_budget: None,
            max_parallel: 8,
            window: crate::context::fit::Window::per_model(),
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// Why.
    pub reason: FinishReason,
    /// Tokens used.
    pub usage: TokenUsage,
    /// The limit or error, in words, when not done.
    pub message: Option<String>,
    /// The model's last text.
    pub final_text: String,
    /// Every tool call and how it ended.
    pub tool_calls: Vec<(ToolCall, ToolStatus)>,
    /// What the turn changed in the writable roots, from the supervisor's own walk; `None`
    /// when it ran no tool that can write, and for a subagent.
    pub changes: Option<protocol::event::WorkspaceChanges>,
}

/// One agent session: its conversation and what it needs to go on.
pub struct Agent {
    /// The model.
    pub provider: Provider,
    /// The model's name.
    pub model: String,
    /// Tool dispatch.
    pub dispatcher: Arc<Dispatcher>,
    /// Limits of each turn.
    pub limits: Limits,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Where events go.
    pub emit: Emit,
    /// Turns so far.
    turns: u64,
    /// Input tokens the provider reported for the last request, and how many messages it held.
    pub(super) reported: Option<(u64, usize)>,
    /// Stops the running turn when triggered.
    pub interrupt: super::interrupt::Interrupt,
    /// Ends the running turn at its next step boundary when triggered (the daemon shutting down
    /// lets the step in flight finish); never re-armed.
    pub stop_after_step: super::interrupt::Interrupt,
    /// The workspace's git state, for the reminder.
    pub(super) git: super::git_reminder::GitWatch,
    /// What each turn changed, for the user's review (the session's own turns; a subagent's
    /// changes are its parent's turn's).
    review: Option<crate::review::Watch>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.model)
            .field("messages", &self.messages.len())
            .finish()
    }
}

impl Agent {
    /// A new session: its system prompt from the workspace and the user's `AGENTS.md` and
    /// skills (read now), and, when it may start subagents, theirs.
    pub fn new(
        provider: Provider,
        model: String,
        dispatcher: Arc<Dispatcher>,
        limits: Limits,
        emit: Emit,
    ) -> Self {
        let workspace = &dispatcher.workers.sandbox().workspace;
        let home = dispatcher.home.as_deref();
        let (instructions, skipped) = crate::context::instructions::load(home, workspace);
        let (skills, bad_skills) = crate::context::skills::load(home, workspace);
        for s in skipped.iter().chain(&bad_skills) {
            tracing::warn!("{s}");
        }
        let subagents = dispatcher.role.subagents();
        let system = crate::context::prompt::system_prompt(
            workspace,
            &instructions,
            &skills,
            subagents.is_some(),
        );
        if let Some(subagents) = subagents {
            subagents.set_system(crate::context::prompt::subagent_prompt(
                workspace,
                &instructions,
            ));
        }
        dispatcher.session.set_skills(skills);
        let mut agent = Self::with_system(provider, model, dispatcher, limits, emit, system);
        agent.review = Some(crate::review::Watch::new(
            agent.dispatcher.workers.sandbox(),
        ));
        if let Some(subagents) = agent.dispatcher.role.subagents() {
            subagents.set_stop_after_step(agent.stop_after_step.clone());
        }
        agent
    }

    /// A new session under the system prompt `system` (a subagent's).
    pub fn with_system(
        provider: Provider,
        model: String,
        dispatcher: Arc<Dispatcher>,
        limits: Limits,
        emit: Emit,
        system: String,
    ) -> Self {
        let limits = Limits {
            window: limits.window.for_model(&model),
            ..limits
        };
        Self {
            provider,
            model,
            dispatcher,
            limits,
            messages: vec![Message::text(Role::System, system)],
            emit,
            turns: 0,
            reported: None,
            interrupt: super::interrupt::Interrupt::default(),
            stop_after_step: super::interrupt::Interrupt::default(),
            git: super::git_reminder::GitWatch::new(),
            review: None,
        }
    }

    /// Goes on from a stored session: its conversation (after this run's system prompt) and the
    /// number of turns it holds ([`super::resume::conversation`]).
    pub fn resume_from(&mut self, messages: Vec<Message>, turns: u64) {
        self.messages = messages;
        self.turns = turns;
        self.reported = None;
    }

    /// Switches the model (same provider) for the next requests, its subagents' too; the
    /// window counts tokens as the new model does.
    pub fn set_model(&mut self, model: &str) {
        model.clone_into(&mut self.model);
        self.limits.window = self.limits.window.for_model(model);
        // The reported count was the old model's tokenizer's.
        self.reported = None;
        if let Some(subagents) = self.dispatcher.role.subagents() {
            subagents.set_model(model);
        }
    }

    /// The system prompt this session was started with.
    pub fn system_message(&self) -> Option<&Message> {
        self.messages.first().filter(|m| m.role == Role::System)
    }

    /// Runs one turn for `user_text`; its `turn_finished` event carries what it changed.
    pub async fn run_turn(&mut self, user_text: &str) -> TurnOutcome {
        self.turns += 1;
        let emit = self.emit.clone();
        emit(Event::UserMessage(UserMessage {
            text: user_text.to_owned(),
        }));
        emit(Event::TurnStarted(TurnStarted { turn: self.turns }));
        self.messages.push(Message::text(Role::User, user_text));
        let mut out = self.steps().await;
        if let Some(review) = &mut self.review {
            out.changes = review.end_of_turn().await;
        }
        emit(Event::TurnFinished(TurnFinished {
            reason: out.reason,
            usage: out.usage,
            message: out.message.clone(),
            changes: out.changes.clone(),
        }));
        out
    }

    /// The steps of a turn, until the model stops asking for tools or a limit ends it.
    async fn steps(&mut self) -> TurnOutcome {
        let start = Instant::now();
        let deadline = self.limits.timeout.map(|t| start + t);
        let mut out = TurnOutcome {
            reason: FinishReason::MaxSteps,
            usage: TokenUsage::default(),
            message: None,
            final_text: String::new(),
            tool_calls: vec![],
            changes: None,
        };
        let mut repairs = super::repair::Repairs::default();
        for _step in 0..self.limits.max_steps {
            if self.stop_after_step.is_set() {
                let message = "agentd is shutting down: the turn stopped after its last whole step; resume the session to go on".to_owned();
                return self.finish(out, FinishReason::Interrupted, Some(message));
            }
            // Right after the compaction an overflow forced, the step is asked again as it is:
            // the window the provider named may put the summary itself past the threshold.
            if !std::mem::take(&mut repairs.just_compacted) {
                let mut usage = out.usage;
                let fitted = self.fit_context(&mut usage).await;
                out.usage = usage;
                if let Err(message) = fitted {
                    return self.finish(out, FinishReason::Error, Some(message));
                }
            }
            self.refresh_git().await;
            let response = match self.ask_model(deadline, &mut out).await {
                Ok(response) => response,
                Err(Ended::TimedOut) => return self.timed_out(out),
                Err(Ended::Interrupted) => return self.interrupted(out),
                Err(Ended::Failed(message)) => {
                    return self.finish(out, FinishReason::Error, Some(message));
                }
                Err(Ended::Overflow { message, window }) => {
                    match self
                        .overflowed(&mut repairs, &mut out, message, window)
                        .await
                    {
                        None => continue,
                        Some(end) => {
                            return self.finish(out, FinishReason::ContextOverflow, Some(end));
                        }
                    }
                }
            };
            if response.tool_calls.is_empty() {
                match self.answered(&mut repairs, &response) {
                    None => continue,
                    Some((reason, message)) => return self.finish(out, reason, message),
                }
            }
            let cut = response.hit_output_limit();
            self.git
                .step_ran(response.tool_calls.iter().map(|c| c.name.as_str()));
            if let Some(review) = &mut self.review {
                let names = response.tool_calls.iter().map(|c| c.name.as_str());
                review.before_step(names).await;
            }
            let stopped = self.run_calls(&response, deadline, &mut out).await;
            if stopped {
                return self.interrupted(out);
            }
            if let Some(message) = cut.then(|| repairs.cut(&response)).flatten() {
                return self.finish(out, FinishReason::OutputLimit, Some(message));
            }
            if let Some(budget) = self.limits.token_budget
                && out.usage.total() >= budget
            {
                let message = format!("{} tokens used of a budget of {budget}", out.usage.total());
                return self.finish(out, FinishReason::TokenBudget, Some(message));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return self.timed_out(out);
            }
        }
        let steps = self.limits.max_steps;
        self.finish(
            out,
            FinishReason::MaxSteps,
            Some(format!("stopped after {steps} steps")),
        )
    }

    /// One request to the model, its text streamed as it comes, bounded by `deadline` and the
    /// interrupt; its usage, final text and message recorded in `out` and the history.
    async fn ask_model(
        &mut self,
        deadline: Option<Instant>,
        out: &mut TurnOutcome,
    ) -> Result<crate::providers::model::ModelResponse, Ended> {
        let request = self.request();
        let e = self.emit.clone();
        let mut on_text = move |t: &str| {
            e(Event::AssistantTextDelta(AssistantTextDelta {
                text: t.to_owned(),
            }))
        };
        let call = self.provider.complete(&request, &mut on_text);
        let limit = deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        });
        let interrupt = self.interrupt.clone();
        let response = tokio::select! {
            r = tokio::time::timeout(limit, call) => r.map_err(|_| Ended::TimedOut)?,
            () = interrupt.triggered() => return Err(Ended::Interrupted),
        };
        let response = response.map_err(|e| match e.error {
            crate::providers::ProviderError::ContextOverflow { window, .. } => Ended::Overflow {
                message: e.to_string(),
                window,
            },
            _ => Ended::Failed(e.to_string()),
        })?;
        out.usage.add(response.usage);
        if response.usage.input_tokens > 0 {
            self.reported = Some((response.usage.input_tokens, request.messages.len()));
        }
        out.final_text = response.text.clone();
        (self.emit)(Event::AssistantMessage(AssistantMessage {
            text: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
            opaque: response
                .opaque
                .iter()
                .filter_map(|o| serde_json::to_string(o).ok())
                .collect(),
        }));
        // With its provider-opaque fields: the provider checks they come back unchanged.
        self.messages.push(Message::assistant(&response));
        Ok(response)
    }

    /// The next request: the history, the reminders (the todo list, the git branch and what
    /// changed) for this request only, which the adapters put at its very end (the history does
    /// not keep them), and the tools on offer.
    fn request(&self) -> ModelRequest {
        let todos = crate::context::todos::reminder(&self.dispatcher.session.todos());
        let reminders: Vec<String> = todos.into_iter().chain(self.git.reminder()).collect();
        ModelRequest {
            model: self.model.clone(),
            messages: self.messages.clone(),
            tools: self.dispatcher.offered(),
            max_tokens: None,
            reminder: (!reminders.is_empty()).then(|| reminders.concat()),
        }
    }

    /// Runs the calls of `response` concurrently (at most `max_parallel` at once) and appends
    /// their results in call order; every call gets one, whatever happens. Returns whether the
    /// turn was interrupted meanwhile (the calls still running were dropped, their workers
    /// killed, and answered as interrupted).
    async fn run_calls(
        &mut self,
        response: &crate::providers::model::ModelResponse,
        deadline: Option<Instant>,
        out: &mut TurnOutcome,
    ) -> bool {
        let emit = self.emit.clone();
        let gate = Arc::new(Semaphore::new(self.limits.max_parallel.max(1)));
        // The output limit ended the message while its last call was being written.
        let cut = response
            .hit_output_limit()
            .then(|| response.tool_calls.len().saturating_sub(1));
        let runs = response.tool_calls.iter().enumerate().map(|(i, call)| {
            let (gate, dispatcher, emit) = (gate.clone(), self.dispatcher.clone(), emit.clone());
            async move {
                let _permit = gate.acquire_owned().await;
                dispatcher
                    .dispatch(call, cut == Some(i), deadline, &emit)
                    .await
            }
        });
        let (outcomes, stopped) = super::interrupt::run_all(runs, &self.interrupt).await;
        // What subagents started by these calls used is this turn's too.
        out.usage.add(self.dispatcher.take_subagent_usage());
        for (call, outcome) in response.tool_calls.iter().zip(outcomes) {
            let outcome =
                outcome.unwrap_or_else(|| interrupted_call(call, &self.dispatcher, &emit));
            let failed = outcome.status != ToolStatus::Ok;
            self.messages
                .push(Message::tool_outcome(call, outcome.content, failed));
            out.tool_calls.push((call.clone(), outcome.status));
        }
        stopped
    }

    /// Ends the turn because it was interrupted; the switch is armed again for the next turn.
    fn interrupted(&self, out: TurnOutcome) -> TurnOutcome {
        self.interrupt.reset();
        let message = "interrupted by the user".to_owned();
        self.finish(out, FinishReason::Interrupted, Some(message))
    }

    /// Ends the turn at its wall-clock limit.
    fn timed_out(&self, out: TurnOutcome) -> TurnOutcome {
        let message = format!(
            "the turn ran past its {:?} limit",
            self.limits.timeout.unwrap_or_default()
        );
        self.finish(out, FinishReason::Timeout, Some(message))
    }

    /// The turn's outcome with why it ended; [`Agent::run_turn`] reports it.
    fn finish(
        &self,
        mut out: TurnOutcome,
        reason: FinishReason,
        message: Option<String>,
    ) -> TurnOutcome {
        out.reason = reason;
        out.message = message;
        out
    }
}

/// Why a step's request to the model did not answer.
enum Ended {
    TimedOut,
    Interrupted,
    Failed(String),
    /// The provider said the history is over the model's context window (and named it).
    Overflow {
        message: String,
        window: Option<u64>,
    },
}

/// The result of a call the interrupt stopped before it finished (its worker went with its
/// future), with its `tool_call_finished` event.
fn interrupted_call(
    call: &ToolCall,
    dispatcher: &Dispatcher,
    emit: &super::dispatch::Emit,
) -> super::dispatch::Outcome {
    let outcome = super::dispatch::Outcome {
        status: ToolStatus::Error,
        content: dispatcher.interrupted_result(call),
        exit_code: None,
        truncated: false,
    };
    emit(Event::ToolCallFinished(protocol::event::ToolCallFinished {
        call_id: call.id.clone(),
        status: outcome.status,
        content: outcome.content.clone(),
        exit_code: None,
        truncated: false,
        duration_ms: 0,
    }));
    outcome
}
