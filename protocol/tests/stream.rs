//! The async handshake and framing over a real Unix socketpair.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod common;

use protocol::Encoding;
use protocol::control::{ClientMessage, ErrorCode, Request, ServerMessage};
use protocol::frame::FrameDecoder;
use protocol::handshake::{HandshakeReply, PeerIdentity};
use protocol::ids::RequestId;
use protocol::io::{FrameReader, IoError, client_handshake, server_handshake, write_message};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;

const PEER: PeerIdentity = PeerIdentity {
    uid: 1000,
    gid: 1000,
    pid: Some(42),
};

#[tokio::test]
async fn handshake_then_messages_in_the_chosen_encoding() {
    for encoding in [Encoding::Bincode, Encoding::Json] {
        let (a, b) = UnixStream::pair().unwrap();
        let server = tokio::spawn(async move {
            let mut s = FrameReader::new(b, FrameDecoder::default());
            let enc = server_handshake(&mut s, "agentd test", PEER).await.unwrap();
            let msg: ClientMessage = s.read_message(enc).await.unwrap();
            let reply = ServerMessage::Response(protocol::control::Response {
                id: msg.id,
                body: protocol::control::ResponseBody::Ok,
            });
            write_message(s.get_mut(), FrameDecoder::default(), enc, &reply)
                .await
                .unwrap();
            enc
        });
        let mut c = FrameReader::new(a, FrameDecoder::default());
        let welcome = client_handshake(&mut c, encoding).await.unwrap();
        assert_eq!(welcome.encoding, encoding);
        assert_eq!(welcome.peer, PEER);
        let msg = ClientMessage {
            id: RequestId(5),
            request: Request::Status,
        };
        write_message(c.get_mut(), FrameDecoder::default(), encoding, &msg)
            .await
            .unwrap();
        let reply: ServerMessage = c.read_message(encoding).await.unwrap();
        assert!(matches!(reply, ServerMessage::Response(r) if r.id == RequestId(5)));
        assert_eq!(server.await.unwrap(), encoding);
    }
}

#[tokio::test]
async fn a_bad_hello_gets_an_error_frame_before_the_server_gives_up() {
    let (a, b) = UnixStream::pair().unwrap();
    let server = tokio::spawn(async move {
        let mut s = FrameReader::new(b, FrameDecoder::default());
        server_handshake(&mut s, "agentd test", PEER).await
    });
    let mut c = FrameReader::new(a, FrameDecoder::default());
    let hello = br#"{"hello": {"protocol": 9, "encoding": "json"}}"#;
    let framed = FrameDecoder::default().encode_to_vec(hello).unwrap();
    c.get_mut().write_all(&framed).await.unwrap();
    let reply: HandshakeReply = c.read_message(Encoding::Json).await.unwrap();
    match reply {
        HandshakeReply::Error(e) => {
            assert_eq!(e.code, ErrorCode::UnsupportedVersion);
            assert!(e.message.contains("version 9"), "{}", e.message);
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(matches!(server.await.unwrap(), Err(IoError::Handshake(_))));
}

#[tokio::test]
async fn an_oversized_hello_is_refused_with_frame_too_large() {
    let (a, b) = UnixStream::pair().unwrap();
    let server = tokio::spawn(async move {
        let mut s = FrameReader::new(b, FrameDecoder::new(1024));
        server_handshake(&mut s, "agentd test", PEER).await
    });
    let mut c = FrameReader::new(a, FrameDecoder::default());
    c.get_mut()
        .write_all(&u32::MAX.to_be_bytes())
        .await
        .unwrap();
    let reply: HandshakeReply = c.read_message(Encoding::Json).await.unwrap();
    assert!(matches!(reply, HandshakeReply::Error(e) if e.code == ErrorCode::FrameTooLarge));
    assert!(server.await.unwrap().is_err());
}

#[tokio::test]
async fn a_stream_cut_inside_a_frame_is_truncated_not_a_hang() {
    let (a, b) = UnixStream::pair().unwrap();
    let mut reader = FrameReader::new(b, FrameDecoder::default());
    let mut writer = a;
    writer.write_all(&[0, 0, 0, 10, b'{']).await.unwrap();
    drop(writer);
    let err = reader.read_frame().await.unwrap_err();
    assert!(
        matches!(
            err,
            IoError::Frame(protocol::FrameError::Truncated { have: 5, need: 14 })
        ),
        "{err}"
    );
}
