//! Identifiers as validating newtypes: a value of these types is well-formed by construction, and
//! deserialising one checks it (`serde(try_from)`), so a malformed id never gets past the codec.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a string is not a valid identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The string was empty.
    #[error("{kind} is empty")]
    Empty {
        /// Which kind of id.
        kind: &'static str,
    },
    /// The string was longer than the kind allows.
    #[error("{kind} is {len} bytes long; the limit is {max}")]
    TooLong {
        /// Which kind of id.
        kind: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The string holds a character the kind does not allow.
    #[error("{kind} contains {found:?}; allowed are {allowed}")]
    BadChar {
        /// Which kind of id.
        kind: &'static str,
        /// The first offending character.
        found: char,
        /// A description of the allowed set.
        allowed: &'static str,
    },
}

/// The conversions every validated string id has: from `String` through its `new` (which is how
/// serde reads it), back into `String` (how serde writes it), and `Display` as the text itself.
macro_rules! string_id_conversions {
    ($id:ident) => {
        impl TryFrom<String> for $id {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl From<$id> for String {
            fn from(id: $id) -> String {
                id.0
            }
        }

        impl fmt::Display for $id {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

/// A session's id: 1 to 64 characters of `[A-Za-z0-9_-]`, so it is safe as a file name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// The longest session id accepted.
    pub const MAX_LEN: usize = 64;

    /// Validates `s` as a session id.
    pub fn new(s: impl Into<String>) -> Result<Self, IdError> {
        let s = s.into();
        const KIND: &str = "session id";
        if s.is_empty() {
            return Err(IdError::Empty { kind: KIND });
        }
        if s.len() > Self::MAX_LEN {
            return Err(IdError::TooLong {
                kind: KIND,
                len: s.len(),
                max: Self::MAX_LEN,
            });
        }
        if let Some(found) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(IdError::BadChar {
                kind: KIND,
                found,
                allowed: "ASCII letters, digits, '-' and '_'",
            });
        }
        Ok(Self(s))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The length of the random part of a new id, bytes (128 bits).
    pub const RANDOM_BYTES: usize = 16;

    /// A new id from [`SessionId::RANDOM_BYTES`] bytes of a CSPRNG: `s-` and 32 lowercase hex
    /// digits. An id is the only thing that names a session on the socket and on disk, so it must
    /// not be guessable (ids were `s-<unix ms>-<pid>-<n>`: whoever saw one could name the next).
    /// Always valid (34 characters of `[a-z0-9-]`). Ids made before keep their old shape and stay
    /// valid: the newtype checks the character set and the length, not the shape.
    pub fn from_random(bytes: [u8; Self::RANDOM_BYTES]) -> Self {
        use std::fmt::Write;
        let mut s = String::with_capacity(2 + 2 * Self::RANDOM_BYTES);
        s.push_str("s-");
        for b in bytes {
            let _ = write!(s, "{b:02x}");
        }
        Self(s)
    }
}

string_id_conversions!(SessionId);

/// A tool call's id, as the model provider assigned it (`call_…`, `toolu_…`) or as the supervisor
/// made it up when the provider gave none: 1 to 256 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ToolCallId(String);

impl ToolCallId {
    /// The longest tool call id accepted.
    pub const MAX_LEN: usize = 256;

    /// Validates `s` as a tool call id.
    pub fn new(s: impl Into<String>) -> Result<Self, IdError> {
        let s = s.into();
        const KIND: &str = "tool call id";
        if s.is_empty() {
            return Err(IdError::Empty { kind: KIND });
        }
        if s.len() > Self::MAX_LEN {
            return Err(IdError::TooLong {
                kind: KIND,
                len: s.len(),
                max: Self::MAX_LEN,
            });
        }
        if let Some(found) = s.chars().find(|c| c.is_control()) {
            return Err(IdError::BadChar {
                kind: KIND,
                found,
                allowed: "any non-control character",
            });
        }
        Ok(Self(s))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// An id made up for the call at `index` when the provider gave none: `call_<index>`, which is
    /// always valid (short, ASCII, no control characters).
    pub fn generated(index: u64) -> Self {
        Self(format!("call_{index}"))
    }
}

string_id_conversions!(ToolCallId);

/// A request's id, chosen by the client; the response to it carries the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub u64);

/// A pending approval's id, unique within its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ApprovalId(pub u64);

/// An event's sequence number within its session: 1 for the first event, then +1 per event, so a
/// client that re-attaches can ask for everything after the last one it saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Seq(pub u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_id_accepts_safe_names_and_rejects_the_rest() {
        assert!(SessionId::new("s-20261129-abc_DEF").is_ok());
        // The shape ids had before they were random: still valid, so old sessions resume.
        assert!(SessionId::new("s-1796000000000-4242-0").is_ok());
        let new = SessionId::from_random([0xab; SessionId::RANDOM_BYTES]);
        assert_eq!(new.as_str(), format!("s-{}", "ab".repeat(16)));
        assert_eq!(SessionId::new(new.as_str()), Ok(new));
        assert!(matches!(SessionId::new(""), Err(IdError::Empty { .. })));
        assert!(matches!(
            SessionId::new("../etc"),
            Err(IdError::BadChar { found: '.', .. })
        ));
        assert!(matches!(
            SessionId::new("a".repeat(65)),
            Err(IdError::TooLong { len: 65, .. })
        ));
    }

    #[test]
    fn deserialising_checks_the_id() {
        let err = serde_json::from_str::<SessionId>("\"a/b\"").unwrap_err();
        assert!(err.to_string().contains("session id contains '/'"), "{err}");
        let err = serde_json::from_str::<ToolCallId>("\"a\\nb\"").unwrap_err();
        assert!(
            err.to_string().contains("tool call id contains '\\n'"),
            "{err}"
        );
    }
}
