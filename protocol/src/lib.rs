//! The wire protocol of agentd: the types both channels carry, how they are framed and encoded,
//! and the handshake. Everything here is pure data and pure functions, except [`io`], a thin
//! layer that moves frames over blocking or (feature `tokio`) async streams.
//!
//! Two channels speak it:
//! * **control** (client ⇄ agentd, a Unix stream socket): a JSON [`handshake`], then
//!   [`control::ClientMessage`] / [`control::ServerMessage`] frames in the chosen encoding;
//! * **worker** (agentd ⇄ one tool-worker, a socketpair): [`worker::ToWorker`] /
//!   [`worker::FromWorker`] frames, always bincode.
//!
//! Layout: [`frame`] (length prefix, pure decoder) · [`codec`] (bincode | JSON) ·
//! [`handshake`] · [`control`] · [`bounds`] (the limit of every string a client sends) ·
//! [`event`] · [`session`] · [`verdict`] · [`worker`] · [`ids`] · [`io`] · `wire_enum` (how one
//! enum gets a JSON-friendly and a bincode-friendly shape).
//!
//! The wire format is specified for implementers in other languages in `docs/protocol.md`.

mod wire_enum;

pub mod bounds;
pub mod codec;
pub mod control;
pub mod event;
pub mod frame;
pub mod handshake;
pub mod ids;
pub mod io;
pub mod session;
pub mod verdict;
pub mod worker;

pub use codec::{CodecError, Encoding};
pub use frame::{DEFAULT_MAX_FRAME, FrameDecoder, FrameError};
pub use handshake::PROTOCOL_VERSION;
pub use io::IoError;
