//! Arbitrary payloads through every decoder a peer can reach: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::codec::decode;
use protocol::control::ClientMessage;
use protocol::worker::{FromWorker, ToWorker};
use protocol::Encoding;

fuzz_target!(|data: &[u8]| {
    let _ = protocol::handshake::parse_hello(data);
    for enc in [Encoding::Bincode, Encoding::Json] {
        let _ = decode::<ClientMessage>(enc, data);
    }
    let _ = decode::<ToWorker>(Encoding::Bincode, data);
    let _ = decode::<FromWorker>(Encoding::Bincode, data);
});
