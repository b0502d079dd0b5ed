//! `agentd serve`: the control socket. Accepts clients, learns who each is from the socket
//! (`SO_PEERCRED`), shakes hands in the encoding it asks for (`docs/protocol.md`), and answers
//! its requests — each connection a task of its own, bounded so that no client, however broken
//! or slow, affects another.
//!
//! * [`listen`]: where the socket is, its permissions, socket activation;
//! * [`connection`]: one client: handshake deadline, frames, the bounded outgoing queue;
//! * [`sessions`]: the requests about sessions, for the peer that asked.
//!
//! Why tokio's `UnixListener` and not `interprocess`: the daemon is Linux-only and needs what
//! only a Unix socket has — `SO_PEERCRED`, a descriptor passed by systemd, file permissions on the
//! socket — which tokio gives directly; a portability layer over named pipes would add nothing.

pub mod connection;
pub mod listen;
pub mod notify;
pub mod sessions;

use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::UnixListener;
use tokio::sync::Semaphore;

/// The bounds every connection lives within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Clients connected at once; one more gets an error frame and is closed.
    pub max_connections: usize,
    /// Largest frame payload accepted, bytes.
    pub max_frame_bytes: usize,
    /// How long a client has to send its hello.
    pub handshake_timeout: Duration,
    /// Frames queued for one client; a client that lets more pile up (it stopped reading) is
    /// dropped, so it never holds up a session or the daemon.
    pub outgoing_queue: usize,
    /// Sessions one uid may have.
    pub max_sessions_per_uid: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 256,
            max_frame_bytes: protocol::frame::DEFAULT_MAX_FRAME,
            handshake_timeout: Duration::from_secs(5),
            outgoing_queue: 1024,
            max_sessions_per_uid: 32,
        }
    }
}

/// What the connections share.
#[derive(Debug)]
pub struct Server {
    /// The bounds.
    pub limits: Limits,
    /// The sessions.
    pub sessions: sessions::Sessions,
    started: Instant,
    slots: Arc<Semaphore>,
}

impl Server {
    /// A server with these limits over these sessions.
    pub fn new(limits: Limits, sessions: sessions::Sessions) -> Self {
        Self {
            limits,
            sessions,
            started: Instant::now(),
            slots: Arc::new(Semaphore::new(limits.max_connections)),
        }
    }

    /// Milliseconds since the server was made.
    pub fn uptime_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Accepts clients until `shutdown` resolves; each runs in a task of its own.
pub async fn serve(
    listener: UnixListener,
    server: Arc<Server>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or the like: wait a moment rather than spin.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let permit = server.slots.clone().try_acquire_owned();
        let server = server.clone();
        tokio::spawn(async move {
            match permit {
                Ok(_permit) => connection::run(stream, &server).await,
                Err(_) => connection::refuse(stream, &server).await,
            }
        });
    }
}
