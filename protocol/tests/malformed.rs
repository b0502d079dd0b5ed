//! Bad input of every kind becomes a typed error that says what was wrong — never a panic, never an
//! allocation of a size the peer claimed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod common;

use bytes::BytesMut;
use protocol::Encoding;
use protocol::codec::{CodecError, decode, encode};
use protocol::control::{ClientMessage, ErrorCode, ServerMessage};
use protocol::frame::{DEFAULT_MAX_FRAME, FrameDecoder, FrameError};
use protocol::handshake::{HandshakeError, parse_hello};
use protocol::io::{FrameReader, IoError};
use protocol::worker::{FromWorker, ToWorker};

#[test]
fn garbage_payload_is_a_codec_error_naming_the_message_type() {
    let err = decode::<ClientMessage>(Encoding::Json, b"{\"id\": 1, \"request\": ").unwrap_err();
    assert!(
        matches!(
            err,
            CodecError::Json {
                what: "ClientMessage",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("line 1"), "names the place: {err}");
    let err = decode::<ClientMessage>(Encoding::Bincode, &[0xff; 16]).unwrap_err();
    assert!(
        matches!(
            err,
            CodecError::BincodeDecode {
                what: "ClientMessage",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_valid_frame_of_the_wrong_kind_is_refused_with_the_variant_named() {
    // A server message sent to the server: well-formed JSON, wrong direction.
    let wrong = encode(Encoding::Json, &common::server_messages()[1]).unwrap();
    let err = decode::<ClientMessage>(Encoding::Json, &wrong).unwrap_err();
    assert!(
        err.to_string().contains("missing field `id`") || err.to_string().contains("unknown"),
        "{err}"
    );
    let err = decode::<ClientMessage>(
        Encoding::Json,
        br#"{"id": 1, "request": {"type": "tool_output_delta"}}"#,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("unknown variant `tool_output_delta`"),
        "{err}"
    );
    // A worker's message fed back to a worker.
    let wrong = encode(
        Encoding::Bincode,
        &FromWorker::Failed(protocol::worker::WorkerFailure {
            step: protocol::worker::WorkerStep::Tool,
            message: String::new(),
        }),
    )
    .unwrap();
    assert!(decode::<ToWorker>(Encoding::Bincode, &wrong).is_err());
}

#[test]
fn trailing_bytes_after_a_bincode_message_are_refused() {
    let mut bytes = encode(Encoding::Bincode, &common::to_worker()[1]).unwrap();
    bytes.extend_from_slice(&[0, 0, 0]);
    let err = decode::<ToWorker>(Encoding::Bincode, &bytes).unwrap_err();
    assert!(
        matches!(err, CodecError::TrailingBytes { extra: 3, .. }),
        "{err}"
    );
}

#[test]
fn a_bad_id_inside_a_message_is_refused() {
    let err = decode::<ClientMessage>(
        Encoding::Json,
        br#"{"id": 1, "request": {"type": "interrupt", "session": "../../etc"}}"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("session id contains '.'"), "{err}");
}

#[test]
fn a_bincode_length_prefix_claiming_gigabytes_does_not_allocate_them() {
    // SendMessage with a text whose varint length claims u64::MAX bytes.
    let mut bytes = encode(Encoding::Bincode, &common::requests()[6]).unwrap();
    bytes.truncate(bytes.len() - "make the tests pass".len() - 1);
    bytes.extend_from_slice(&[253, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    assert!(decode::<protocol::control::Request>(Encoding::Bincode, &bytes).is_err());
}

#[test]
fn handshake_in_the_wrong_encoding_is_not_json() {
    let bincode_hello = encode(
        Encoding::Bincode,
        &protocol::handshake::Hello::new(Encoding::Json),
    )
    .unwrap();
    let err = parse_hello(&bincode_hello).unwrap_err();
    assert!(matches!(err, HandshakeError::NotJson { .. }), "{err}");
    assert_eq!(err.code(), ErrorCode::BadHandshake);
    assert!(err.to_string().contains("must be a JSON hello"), "{err}");
}

#[test]
fn handshake_wrong_magic_version_and_encoding_each_have_their_error() {
    assert!(matches!(
        parse_hello(b"GET / HTTP/1.1\r\n"),
        Err(HandshakeError::NotJson { .. })
    ));
    assert!(matches!(
        parse_hello(br#"{"helo": {"protocol": 1, "encoding": "json"}}"#),
        Err(HandshakeError::NotHello { .. })
    ));
    assert!(matches!(
        parse_hello(br#"[1, 2]"#),
        Err(HandshakeError::NotHello { .. })
    ));
    let err = parse_hello(br#"{"hello": {"protocol": 2, "encoding": "json"}}"#).unwrap_err();
    assert_eq!(
        err,
        HandshakeError::UnsupportedVersion {
            got: 2,
            supported: 1
        }
    );
    assert_eq!(err.code(), ErrorCode::UnsupportedVersion);
    let err = parse_hello(br#"{"hello": {"protocol": 1, "encoding": "msgpack"}}"#).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UnsupportedEncoding);
    assert!(err.to_string().contains("\"msgpack\""), "{err}");
    assert_eq!(
        parse_hello(br#"{"hello": {"protocol": 1, "encoding": "bincode"}}"#),
        Ok(Encoding::Bincode)
    );
}

#[test]
fn a_truncated_frame_on_a_stream_is_an_error_and_a_clean_end_is_not() {
    let framed = FrameDecoder::default()
        .encode_to_vec(b"{\"id\":1}")
        .unwrap();
    let mut reader = FrameReader::new(&framed[..framed.len() - 2], FrameDecoder::default());
    let err = reader.read_frame_blocking().unwrap_err();
    assert!(
        matches!(
            err,
            IoError::Frame(FrameError::Truncated { have: 10, need: 12 })
        ),
        "{err}"
    );
    let mut reader = FrameReader::new(&framed[..], FrameDecoder::default());
    assert!(reader.read_frame_blocking().unwrap().is_some());
    assert!(reader.read_frame_blocking().unwrap().is_none());
    assert!(matches!(
        reader.read_message_blocking::<ServerMessage>(Encoding::Json),
        Err(IoError::Closed)
    ));
}

#[test]
fn a_frame_of_sixteen_mib_plus_one_is_refused_before_allocation() {
    let header = ((DEFAULT_MAX_FRAME + 1) as u32).to_be_bytes();
    let mut buf = BytesMut::from(&header[..]);
    let before = buf.capacity();
    let err = FrameDecoder::default().decode(&mut buf).unwrap_err();
    assert_eq!(
        err,
        FrameError::TooLarge {
            len: DEFAULT_MAX_FRAME as u64 + 1,
            max: DEFAULT_MAX_FRAME
        }
    );
    assert_eq!(buf.capacity(), before);
    // The same through a stream reader: the refusal comes from the 4 header bytes alone.
    let mut reader = FrameReader::new(&header[..], FrameDecoder::default());
    assert!(matches!(
        reader.read_frame_blocking(),
        Err(IoError::Frame(FrameError::TooLarge { .. }))
    ));
}
