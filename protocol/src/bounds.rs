//! How large each string a client sends may be. The frame limit (16 MiB) bounds a request, not
//! what the daemon keeps of it: a title or a model name is stored in a log the client's disk
//! quota does not count, held in the daemon's memory and sent back in every listing, so a 15 MB
//! title once cost 55 MB of RSS and 15 MB of root-owned disk per session. Each field therefore has
//! its own limit, a const beside its type ([`crate::control`]); [`Bounded`] checks them all.
//!
//! By construction, not by list: [`Request`]'s implementation matches every variant without a
//! catch-all arm, and each payload destructures its struct without `..`, so a new variant or a new
//! field does not compile until someone decides its bound.

use crate::control::*;
use std::path::Path;

/// A field longer than its limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} is {len} bytes; the limit is {max}")]
pub struct TooLong {
    /// The field, as `request.field` (`create_session.title`).
    pub field: &'static str,
    /// Its length, bytes.
    pub len: usize,
    /// Its limit, bytes.
    pub max: usize,
}

/// A value whose strings are all within their limits.
pub trait Bounded {
    /// The first field over its limit, if any.
    fn check_bounds(&self) -> Result<(), TooLong>;
}

/// `len` against `max` for `field`.
fn within(field: &'static str, len: usize, max: usize) -> Result<(), TooLong> {
    if len > max {
        return Err(TooLong { field, len, max });
    }
    Ok(())
}

fn text(field: &'static str, s: &str, max: usize) -> Result<(), TooLong> {
    within(field, s.len(), max)
}

fn path(field: &'static str, p: &Path, max: usize) -> Result<(), TooLong> {
    within(field, p.as_os_str().len(), max)
}

impl Bounded for Request {
    fn check_bounds(&self) -> Result<(), TooLong> {
        // Session ids, approval ids and sequence numbers are bounded by their types (an id is at
        // most `SessionId::MAX_LEN` bytes, checked as it is decoded); the strings are checked by
        // each payload.
        match self {
            Request::CreateSession(r) => r.check_bounds(),
            Request::ListSessions(ListSessions { all_users: _ }) => Ok(()),
            Request::AttachSession(AttachSession {
                session: _,
                after_seq: _,
            }) => Ok(()),
            Request::DetachSession(DetachSession { session: _ }) => Ok(()),
            Request::ResumeSession(ResumeSession { session: _ }) => Ok(()),
            Request::DeleteSession(DeleteSession { session: _ }) => Ok(()),
            Request::SendMessage(r) => r.check_bounds(),
            Request::Interrupt(Interrupt { session: _ }) => Ok(()),
            Request::ApprovalReply(ApprovalReply {
                session: _,
                approval: _,
                decision: _,
            }) => Ok(()),
            Request::Status => Ok(()),
            Request::Compact(Compact { session: _ }) => Ok(()),
            Request::SetApprovalMode(SetApprovalMode {
                session: _,
                mode: _,
            }) => Ok(()),
            Request::SetModel(r) => r.check_bounds(),
        }
    }
}

impl Bounded for CreateSession {
    fn check_bounds(&self) -> Result<(), TooLong> {
        let CreateSession {
            workspace,
            model,
            approval: _,
            max_steps: _,
            title,
            read_only: _,
        } = self;
        path(
            "create_session.workspace",
            workspace,
            CreateSession::MAX_WORKSPACE_BYTES,
        )?;
        if let Some(model) = model {
            text("create_session.model", model, MAX_MODEL_BYTES)?;
        }
        if let Some(title) = title {
            text(
                "create_session.title",
                title,
                CreateSession::MAX_TITLE_BYTES,
            )?;
        }
        Ok(())
    }
}

impl Bounded for SendMessage {
    fn check_bounds(&self) -> Result<(), TooLong> {
        let SendMessage {
            session: _,
            text: t,
        } = self;
        text("send_message.text", t, SendMessage::MAX_TEXT_BYTES)
    }
}

impl Bounded for SetModel {
    fn check_bounds(&self) -> Result<(), TooLong> {
        let SetModel { session: _, model } = self;
        text("set_model.model", model, MAX_MODEL_BYTES)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ids::SessionId;
    use crate::verdict::ApprovalMode;

    fn create(workspace: usize, model: usize, title: usize) -> Request {
        Request::CreateSession(CreateSession {
            workspace: format!("/{}", "w".repeat(workspace - 1)).into(),
            model: Some("m".repeat(model)),
            approval: ApprovalMode::OnRisk,
            max_steps: None,
            title: Some("t".repeat(title)),
            read_only: false,
        })
    }

    #[test]
    fn each_string_is_refused_one_byte_past_its_limit_naming_the_field() {
        let session = SessionId::new("s-1").unwrap();
        let message = |n: usize| {
            Request::SendMessage(SendMessage {
                session: session.clone(),
                text: "x".repeat(n),
            })
        };
        let set_model = |n: usize| {
            Request::SetModel(SetModel {
                session: session.clone(),
                model: "m".repeat(n),
            })
        };
        let (w, m, t) = (
            CreateSession::MAX_WORKSPACE_BYTES,
            MAX_MODEL_BYTES,
            CreateSession::MAX_TITLE_BYTES,
        );
        let cases: [(Request, Request, &str, usize); 5] = [
            (
                create(w, m, t),
                create(w + 1, m, t),
                "create_session.workspace",
                w,
            ),
            (
                create(w, m, t),
                create(w, m + 1, t),
                "create_session.model",
                m,
            ),
            (
                create(w, m, t),
                create(w, m, t + 1),
                "create_session.title",
                t,
            ),
            (
                message(SendMessage::MAX_TEXT_BYTES),
                message(SendMessage::MAX_TEXT_BYTES + 1),
                "send_message.text",
                SendMessage::MAX_TEXT_BYTES,
            ),
            (set_model(m), set_model(m + 1), "set_model.model", m),
        ];
        for (at_limit, past, field, max) in cases {
            assert_eq!(at_limit.check_bounds(), Ok(()), "{field} at its limit");
            assert_eq!(
                past.check_bounds(),
                Err(TooLong {
                    field,
                    len: max + 1,
                    max
                })
            );
        }
    }

    #[test]
    fn the_message_says_field_length_and_limit() {
        let e = create(10, 10, 300).check_bounds().unwrap_err();
        assert_eq!(
            e.to_string(),
            "create_session.title is 300 bytes; the limit is 256"
        );
    }
}
