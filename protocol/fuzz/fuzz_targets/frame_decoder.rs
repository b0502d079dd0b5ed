//! Feeds arbitrary bytes, split at an arbitrary point, to the frame decoder: it must never panic,
//! never hand out a frame over its limit, and frames it returns must re-encode to the bytes taken.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use protocol::frame::{FrameDecoder, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let decoder = FrameDecoder::new(1024);
    let cut = (split as usize).min(rest.len());
    let mut buf = BytesMut::from(&rest[..cut]);
    let mut consumed = 0usize;
    let step = |buf: &mut BytesMut, consumed: &mut usize| loop {
        match decoder.decode(buf) {
            Ok(Some(frame)) => {
                assert!(frame.len() <= decoder.max());
                let again = decoder.encode_to_vec(&frame).expect("a decoded frame re-encodes");
                assert_eq!(&again[..], &rest[*consumed..*consumed + HEADER_LEN + frame.len()]);
                *consumed += HEADER_LEN + frame.len();
            }
            Ok(None) | Err(_) => return,
        }
    };
    step(&mut buf, &mut consumed);
    buf.extend_from_slice(&rest[cut..]);
    step(&mut buf, &mut consumed);
    let _ = decoder.decode_eof(&mut buf);
});
