//! `agentd status`: asks a running daemon, over its socket, for its status and prints it.

use crate::server::listen;
use anyhow::Context as _;
use protocol::control::{ClientMessage, Request, ResponseBody, ServerMessage, StatusInfo};
use protocol::ids::RequestId;
use protocol::io::{FrameReader, client_handshake, write_message};
use protocol::{Encoding, FrameDecoder};
use std::path::PathBuf;

/// Arguments of `agentd status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The daemon's socket [default: /run/agentd/agentd.sock as root, else
    /// $XDG_RUNTIME_DIR/agentd/agentd.sock].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Print the answer as one JSON object (the `status` body of docs/protocol.md).
    #[arg(long)]
    pub json: bool,
}

/// Prints the status of the daemon at the socket; 0, or an error naming what failed.
pub fn run(args: StatusArgs) -> anyhow::Result<i32> {
    let socket = match args.socket {
        Some(path) => path,
        None => listen::defaults().map_err(anyhow::Error::msg)?.socket,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let status = runtime
        .block_on(ask(&socket))
        .with_context(|| format!("asking agentd at {}", socket.display()))?;
    if args.json {
        println!("{}", serde_json::to_string(&status)?);
    } else {
        print!("{}", shown(&status));
    }
    Ok(0)
}

async fn ask(socket: &std::path::Path) -> anyhow::Result<StatusInfo> {
    let stream = tokio::net::UnixStream::connect(socket).await?;
    let mut conn = FrameReader::new(stream, FrameDecoder::new(1 << 20));
    let encoding = Encoding::Json;
    client_handshake(&mut conn, encoding).await?;
    let decoder = conn.decoder();
    let message = ClientMessage {
        id: RequestId(1),
        request: Request::Status,
    };
    write_message(conn.get_mut(), decoder, encoding, &message).await?;
    match conn.read_message::<ServerMessage>(encoding).await? {
        ServerMessage::Response(r) => match r.body {
            ResponseBody::Status(s) => Ok(s),
            other => anyhow::bail!("agentd answered {other:?}"),
        },
        other => anyhow::bail!("agentd answered {other:?}"),
    }
}

/// One `name: value` line per field; the aggregate bounds the daemon names after its
/// containment get a line of their own.
fn shown(s: &StatusInfo) -> String {
    let (containment, aggregate) = match s.containment.split_once("; aggregate bounds: ") {
        Some((c, a)) => (c, format!("aggregate bounds: {a}\n")),
        None => (s.containment.as_str(), String::new()),
    };
    let abi = s
        .landlock_abi
        .map_or("none (no Landlock in this kernel)".to_owned(), |a| {
            a.to_string()
        });
    format!(
        "version: {}\nprotocol: {}\nuptime: {:.1} s\nsessions: {}\nworkers: {}\nlandlock ABI: {abi}\nseccomp: {}\ncontainment: {}\n{aggregate}",
        s.version,
        s.protocol,
        s.uptime_ms as f64 / 1000.0,
        s.sessions,
        s.workers,
        s.seccomp,
        containment
    )
}
