//! `agentd serve`: the control socket. Accepts clients, learns who each is from the socket
//! (`SO_PEERCRED`), shakes hands in the encoding it asks for (`docs/protocol.md`), and answers
//! its requests — each connection a task of its own, bounded so that no client, however broken
//! or slow, affects another.
//!
//! * [`listen`]: where the socket is, its permissions, socket activation;
//! * [`admission`]: who is let in: the connection limits, each uid's reserve;
//! * [`connection`]: one client: handshake deadline, frames, the bounded outgoing queue;
//! * [`requests`]: each request, answered for the peer that asked;
//! * [`sessions`]: the daemon's sessions (loaded on the engine, kept in the store) and who may
//!   see and drive them; [`factory`]: how a daemon session is built;
//! * [`attach`]: a connection's attachments, forwarding each session's events to it;
//! * [`kernel`]: what `status` reports of this kernel's seccomp;
//! * [`privileges`]: the capabilities a root agentd keeps, and the dropping of the rest.
//!
//! Shutdown (SIGTERM) is one [`Shutdown`] value: the accept loop stops, the sessions let their
//! running steps finish within the grace period and close their logs and pools, then every
//! connection is told (`shutting_down`) and closed.
//!
//! Why tokio's `UnixListener` and not `interprocess`: the daemon is Linux-only and needs what
//! only a Unix socket has — `SO_PEERCRED`, a descriptor passed by systemd, file permissions on the
//! socket — which tokio gives directly; a portability layer over named pipes would add nothing.

pub mod admission;
pub mod attach;
pub mod connection;
pub mod factory;
pub mod kernel;
pub mod listen;
pub mod notify;
pub mod privileges;
pub mod requests;
pub mod sessions;

use crate::engine::Shutdown;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::UnixListener;

/// The bounds every connection lives within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Clients connected at once beyond each uid's reserved ones; one more gets an error frame
    /// and is closed ([`admission`]).
    pub max_connections: usize,
    /// Clients one uid may have connected at once, so that one user cannot take every slot
    /// and shut the others out.
    pub max_connections_per_uid: usize,
    /// Clients each uid may have connected whatever the others hold: a few users holding every
    /// shared slot cannot shut out another, root included.
    pub reserved_connections_per_uid: usize,
    /// Largest frame payload accepted, bytes.
    pub max_frame_bytes: usize,
    /// How long a client has to send its hello.
    pub handshake_timeout: Duration,
    /// How long a connection may go without a request while no session is attached before it
    /// is closed: a held connection costs the daemon a task and its buffers.
    pub idle_timeout: Duration,
    /// Frames queued for one client; a client that lets more pile up (it stopped reading) is
    /// dropped, so it never holds up a session or the daemon.
    pub outgoing_queue: usize,
    /// Sessions one uid may have.
    pub max_sessions_per_uid: usize,
    /// How long a session's ask waits while no client is attached before it is denied.
    pub approval_wait: Duration,
    /// How long running turns may go on after SIGTERM before they are interrupted.
    pub shutdown_grace: Duration,
    /// The largest session log a new turn is started on, bytes.
    pub max_session_log_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 256,
            max_connections_per_uid: 64,
            reserved_connections_per_uid: 4,
            max_frame_bytes: protocol::frame::DEFAULT_MAX_FRAME,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(300),
            outgoing_queue: 1024,
            max_sessions_per_uid: 32,
            approval_wait: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
            max_session_log_bytes: 256 << 20,
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
    /// Triggered on SIGTERM: stop accepting, no new turns, sessions wind down.
    pub shutdown: Shutdown,
    /// Triggered once the sessions have stopped: connections say so and close.
    goodbye: Shutdown,
    started: Instant,
    /// The connections open, per uid and in all.
    admission: Arc<admission::Admission>,
}

impl Server {
    /// A server with these limits over these sessions, stopped by `shutdown` (the sessions'
    /// own token, so that one trigger reaches everything).
    pub fn new(limits: Limits, sessions: sessions::Sessions, shutdown: Shutdown) -> Self {
        Self {
            limits,
            sessions,
            shutdown,
            goodbye: Shutdown::new(),
            started: Instant::now(),
            admission: admission::Admission::new(admission::Limits {
                max_connections: limits.max_connections,
                max_per_uid: limits.max_connections_per_uid,
                reserved_per_uid: limits.reserved_connections_per_uid,
            }),
        }
    }

    /// Milliseconds since the server was made.
    pub fn uptime_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Accepts clients until the server's shutdown is triggered; each runs in a task of its own.
/// Then winds down: the sessions stop (running steps finish within the grace period, logs are
/// synced and closed, workers killed), every client is told and closed, and it returns.
pub async fn serve(listener: UnixListener, server: Arc<Server>) {
    loop {
        let accepted = tokio::select! {
            () = server.shutdown.wait() => break,
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
        // Admitted here, in the order clients came; an unknown peer is simply closed.
        let Ok(uid) = stream.peer_cred().map(|c| c.uid()) else {
            continue;
        };
        let admitted = server.admission.admit(uid);
        let server = server.clone();
        tokio::spawn(async move {
            let _ticket = match admitted {
                Ok(ticket) => ticket,
                Err(refused) => return connection::refuse(stream, &server, refused).await,
            };
            connection::run(stream, &server).await;
        });
    }
    drop(listener);
    server.sessions.stop_all().await;
    server.goodbye.trigger();
    // Every connection holds its ticket until it has said goodbye and closed.
    let closed = server.admission.all_closed();
    if tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .is_err()
    {
        tracing::warn!("some clients were still connected at exit");
    }
}
