//! The in-process link: the supervisor hosted in this process, a session on the engine built as
//! `agent run` builds one, with its asks answered by clients (this REPL) through the engine's
//! approval broker — the daemon's way, so the REPL answers them with `approval_reply` either way.

use super::link::{LinkError, Listed, Opened, SessionLink, Start};
use crate::agent::approval::Approver;
use crate::agent::turn::Limits;
use crate::engine::approvals::Broker;
use crate::engine::build::{self, Base, Plan};
use crate::engine::journal::Journal;
use crate::engine::{SessionHandle, Stopping, Subscription};
use crate::settings::ProviderSettings;
use crate::store::Store;
use crate::store::log::Record;
use protocol::control::{ApprovalReply, Request};
use protocol::event::EventEnvelope;
use protocol::ids::{ApprovalId, SessionId};
use protocol::verdict::{ApprovalDecision, ApprovalMode};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What every in-process session of this REPL is built from.
#[derive(Debug)]
pub struct Recipe {
    /// The config file and its policy.
    pub base: Base,
    /// Which model.
    pub settings: ProviderSettings,
    /// The approval mode.
    pub mode: ApprovalMode,
    /// Where sessions are kept (`None`: not kept).
    pub store: Option<Store>,
    /// The workspace, canonical.
    pub workspace: PathBuf,
    /// Each turn's limits.
    pub limits: Limits,
    /// The user's home (`~` in rules, `AGENTS.md`, skills).
    pub home: Option<PathBuf>,
}

/// A session on the engine in this process.
#[derive(Debug)]
pub struct LocalLink {
    /// How sessions are made.
    recipe: Recipe,
    /// The session.
    handle: SessionHandle,
    /// Its events, as an attached client (asks wait for this REPL's answer).
    events: Subscription,
}

/// How long an ask waits with nobody attached (never the case here: the REPL is attached while
/// the session lives).
const APPROVAL_WAIT: Duration = Duration::from_secs(600);

impl LocalLink {
    /// Opens the first session (inside the tokio runtime); says whether `Start::Last` found
    /// none and started a new one.
    pub fn open(recipe: Recipe, first: &Start) -> Result<(Self, Opened), LinkError> {
        let last = match first {
            Start::Last => last_here(&recipe),
            Start::New => None,
        };
        let (handle, events) = start(&recipe, last.as_deref())?;
        let opened = Opened {
            missed: *first == Start::Last && last.is_none(),
            replaying: events.replaying(),
        };
        Ok((
            Self {
                recipe,
                handle,
                events,
            },
            opened,
        ))
    }
}

/// The session `agent -c` continues ([`super::link::newest_here`]), from the recipe's store.
fn last_here(recipe: &Recipe) -> Option<String> {
    let (sessions, _) = recipe.store.as_ref()?.list();
    super::link::newest_here(
        sessions.iter().map(|s| super::link::Candidate {
            id: &s.id,
            workspace: &s.workspace,
            owner_uid: s.owner_uid,
            last_activity_unix_ms: s.last_activity_unix_ms,
            has_events: s.last_seq > 0,
        }),
        &recipe.workspace,
        nix::unistd::geteuid().as_raw(),
    )
}

/// Builds and starts a session: a new one, or stored session `resumed` again.
fn start(
    recipe: &Recipe,
    resumed: Option<&str>,
) -> Result<(SessionHandle, Subscription), LinkError> {
    let session = |e: &dyn std::fmt::Display| LinkError::Session(e.to_string());
    let provider = recipe
        .base
        .provider(&recipe.settings)
        .map_err(|e| session(&e))?;
    let plan = Plan {
        workspace: recipe.workspace.clone(),
        provider,
        model: recipe.settings.model.clone(),
        mode: recipe.mode,
        approver: Approver::Nobody,
        limits: recipe.limits.clone(),
        ready_workers: 1,
        home: recipe.home.clone(),
        run_as: None,
        tmp_parent: std::env::temp_dir(),
        read_only: false,
    };
    let prepared = build::prepare(&recipe.base, plan).map_err(|e| session(&e))?;
    let (journal, records): (_, Option<Vec<Record>>) = match resumed {
        Some(id) => {
            let reopened = crate::cli::run_session::reopen(recipe.store.as_ref(), id)
                .map_err(|e| session(&format!("{e:#}")))?;
            if reopened.workspace != recipe.workspace {
                return Err(LinkError::Refused(format!(
                    "session {id} works in {}: resume it there",
                    reopened.workspace.display()
                )));
            }
            let journal = Journal::new(reopened.id, Some(reopened.log));
            (journal, Some(reopened.records))
        }
        None => {
            let pending = crate::cli::run_session::pending(
                recipe.store.as_ref(),
                &recipe.workspace,
                &recipe.settings.model,
            )
            .map_err(|e| session(&e))?;
            let journal = match pending {
                Some(p) => Journal::pending(p),
                None => Journal::new(crate::cli::run::session_id(), None),
            };
            (journal, None)
        }
    };
    let journal = Arc::new(journal);
    let broker = Broker::new(APPROVAL_WAIT);
    let built = build::build(
        &recipe.base,
        prepared.with_approver(Approver::Clients(Arc::clone(&broker))),
        &journal,
        records.as_deref(),
    )
    .map_err(|e| session(&e))?;
    let handle = crate::engine::start(built, journal, Some(broker), Stopping::default());
    let events = handle.attach(None).map_err(|e| session(&e))?;
    Ok((handle, events))
}

impl SessionLink for LocalLink {
    fn session(&self) -> &SessionId {
        self.handle.id()
    }

    fn model(&self) -> String {
        self.handle.model()
    }

    fn approval(&self) -> ApprovalMode {
        self.handle.approval_mode()
    }

    fn transport(&self) -> String {
        "in-process".into()
    }

    async fn send(&mut self, text: &str) -> Result<(), LinkError> {
        let request = Request::SendMessage(protocol::control::SendMessage {
            session: self.handle.id().clone(),
            text: text.to_owned(),
        });
        self.handle
            .submit(request)
            .await
            .map_err(|e| LinkError::Refused(e.to_string()))
    }

    async fn interrupt(&mut self) -> Result<(), LinkError> {
        self.handle
            .interrupt()
            .await
            .map_err(|e| LinkError::Refused(e.to_string()))
    }

    async fn approve(
        &mut self,
        approval: ApprovalId,
        decision: ApprovalDecision,
    ) -> Result<(), LinkError> {
        let request = Request::ApprovalReply(ApprovalReply {
            session: self.handle.id().clone(),
            approval,
            decision,
        });
        self.handle
            .submit(request)
            .await
            .map_err(|e| LinkError::Refused(e.to_string()))
    }

    async fn compact(&mut self) -> Result<(), LinkError> {
        self.handle.compact().await.map_err(refused)
    }

    async fn set_approval(&mut self, mode: ApprovalMode) -> Result<(), LinkError> {
        self.handle.set_approval_mode(mode).await.map_err(refused)
    }

    async fn set_model(&mut self, model: &str) -> Result<(), LinkError> {
        self.handle.set_model(model).await.map_err(refused)
    }

    async fn next_event(&mut self) -> Option<EventEnvelope> {
        self.events.next().await
    }

    async fn sessions(&mut self) -> Result<Vec<Listed>, LinkError> {
        let Some(store) = &self.recipe.store else {
            return Err(LinkError::Refused(
                "this session is not kept (no state directory), so there are no sessions to list"
                    .into(),
            ));
        };
        let (sessions, errors) = store.list();
        for e in errors {
            tracing::warn!("{e}");
        }
        Ok(sessions
            .into_iter()
            .map(|s| Listed {
                id: s.id,
                workspace: s.workspace,
                state: s.status.to_string(),
                title: s.title,
            })
            .collect())
    }

    async fn resume(&mut self, id: &str) -> Result<usize, LinkError> {
        if id == self.handle.id().as_str() {
            return Err(LinkError::Refused(format!("session {id} is the one open")));
        }
        // The stored session is reopened (its log locked) before the open one stops, so a
        // session that cannot be resumed leaves the open one as it was.
        let (handle, events) = start(&self.recipe, Some(id))?;
        self.handle.stop().await;
        let replaying = events.replaying();
        (self.handle, self.events) = (handle, events);
        Ok(replaying)
    }

    fn kept(&self) -> bool {
        self.recipe.store.is_some() && !self.handle.is_pending()
    }

    async fn recover(&mut self) -> Result<bool, LinkError> {
        Ok(false)
    }

    async fn renew(&mut self, delete_old: bool) -> Result<(), LinkError> {
        let (handle, events) = start(&self.recipe, None)?;
        // One never given a message was never written: nothing to delete (it goes as it stops).
        let written = !self.handle.is_pending();
        self.handle.stop().await;
        let old = std::mem::replace(&mut self.handle, handle);
        self.events = events;
        match (&self.recipe.store, delete_old && written) {
            (Some(store), true) => store
                .delete(old.id())
                .map_err(|e| LinkError::Refused(e.to_string())),
            _ => Ok(()),
        }
    }

    async fn delete(&mut self, id: &str) -> Result<(), LinkError> {
        let Some(store) = &self.recipe.store else {
            return Err(LinkError::Refused(
                "sessions are not kept here (no state directory): there is none to delete".into(),
            ));
        };
        let mut source = crate::cli::sessions::source::Source::Store(store.clone());
        source.remove(id).await.map_err(LinkError::Refused)
    }

    async fn close(&mut self) {
        self.handle.stop().await;
    }
}

fn refused(e: crate::engine::OpError) -> LinkError {
    LinkError::Refused(e.to_string())
}
