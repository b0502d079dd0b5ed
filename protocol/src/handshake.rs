//! The handshake: the client's first frame is always JSON, whatever encoding it then wants, so that
//! any program can open a connection with nothing but a JSON library.
//!
//! ```text
//! client → {"hello": {"protocol": 1, "encoding": "bincode" | "json"}}
//! server → {"welcome": {"protocol": 1, "encoding": "…", "server": "agentd 0.1.0", "peer": {…}}}
//!       or {"error": {"code": "unsupported_version", "message": "…"}}   (then it closes)
//! ```

use crate::codec::Encoding;
use crate::control::{ErrorCode, ErrorFrame};
use serde::{Deserialize, Serialize};

/// The control protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The client's first frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// The only key.
    pub hello: HelloBody,
}

/// What the client asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelloBody {
    /// The protocol version it speaks.
    pub protocol: u32,
    /// The encoding it wants for every later frame (`bincode` or `json`); kept as text so an
    /// unknown one gets its own error.
    pub encoding: String,
}

impl Hello {
    /// The hello for `encoding` at this crate's protocol version.
    pub fn new(encoding: Encoding) -> Self {
        Self {
            hello: HelloBody {
                protocol: PROTOCOL_VERSION,
                encoding: encoding.as_str().to_owned(),
            },
        }
    }
}

/// The server's answer to a hello, always JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandshakeReply {
    /// Accepted; later frames use `encoding`.
    Welcome(Welcome),
    /// Refused; the server closes the connection after this frame.
    Error(ErrorFrame),
}

/// Payload of [`HandshakeReply::Welcome`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    /// The protocol version in use.
    pub protocol: u32,
    /// The encoding of every later frame, both ways.
    pub encoding: Encoding,
    /// The server's name and version.
    pub server: String,
    /// Who the server sees at the other end (from `SO_PEERCRED`).
    pub peer: PeerIdentity,
}

/// A peer's credentials as the kernel reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerIdentity {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
    /// Process id, when known.
    pub pid: Option<i32>,
}

/// Why a hello was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The first frame was not JSON at all (a wrong magic, or a hello sent in bincode).
    #[error(
        "the first frame must be a JSON hello, {{\"hello\": {{\"protocol\": 1, \"encoding\": \"json\"}}}}; got {len} bytes that are not JSON ({detail})"
    )]
    NotJson {
        /// Payload length.
        len: usize,
        /// The JSON parser's complaint.
        detail: String,
    },
    /// JSON, but not a hello.
    #[error(
        "the first frame must be a JSON hello, {{\"hello\": {{\"protocol\": 1, \"encoding\": \"json\"}}}}: {detail}"
    )]
    NotHello {
        /// What did not fit.
        detail: String,
    },
    /// A protocol version this server does not speak.
    #[error("protocol version {got} is not supported; this server speaks version {supported}")]
    UnsupportedVersion {
        /// Asked for.
        got: u32,
        /// Spoken here.
        supported: u32,
    },
    /// An encoding this server does not speak.
    #[error("encoding {got:?} is not supported; use \"bincode\" or \"json\"")]
    UnsupportedEncoding {
        /// Asked for.
        got: String,
    },
}

impl HandshakeError {
    /// The error code sent back to the client.
    pub fn code(&self) -> ErrorCode {
        match self {
            HandshakeError::NotJson { .. } | HandshakeError::NotHello { .. } => {
                ErrorCode::BadHandshake
            }
            HandshakeError::UnsupportedVersion { .. } => ErrorCode::UnsupportedVersion,
            HandshakeError::UnsupportedEncoding { .. } => ErrorCode::UnsupportedEncoding,
        }
    }

    /// The error frame sent back to the client.
    pub fn to_frame(&self) -> ErrorFrame {
        ErrorFrame::new(self.code(), self.to_string())
    }
}

/// Checks a client's first frame and returns the encoding it asked for.
pub fn parse_hello(payload: &[u8]) -> Result<Encoding, HandshakeError> {
    let value: serde_json::Value =
        serde_json::from_slice(payload).map_err(|e| HandshakeError::NotJson {
            len: payload.len(),
            detail: e.to_string(),
        })?;
    let hello: Hello = serde_json::from_value(value).map_err(|e| HandshakeError::NotHello {
        detail: e.to_string(),
    })?;
    if hello.hello.protocol != PROTOCOL_VERSION {
        return Err(HandshakeError::UnsupportedVersion {
            got: hello.hello.protocol,
            supported: PROTOCOL_VERSION,
        });
    }
    match hello.hello.encoding.as_str() {
        "bincode" => Ok(Encoding::Bincode),
        "json" => Ok(Encoding::Json),
        _ => Err(HandshakeError::UnsupportedEncoding {
            got: hello.hello.encoding,
        }),
    }
}
