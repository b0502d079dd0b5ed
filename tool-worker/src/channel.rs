//! The worker's end of its socketpair: fd 0, framed bincode.

use protocol::Encoding;
use protocol::frame::FrameDecoder;
use protocol::io::{FrameReader, IoError, write_message_blocking};
use protocol::worker::{FromWorker, ToWorker};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;

/// The channel to the supervisor.
#[derive(Debug)]
pub struct Channel {
    /// Reads frames; also the stream written to.
    stream: FrameReader<UnixStream>,
}

impl Channel {
    /// The channel on fd 0, where the supervisor put it.
    pub fn from_stdin() -> Self {
        // SAFETY: fd 0 is the socketpair end the supervisor passed as our stdin; nothing else in
        // this process owns it, and it stays open for the process's life.
        let stream = unsafe { UnixStream::from_raw_fd(0) };
        Self {
            stream: FrameReader::new(stream, FrameDecoder::default()),
        }
    }

    /// Receives the next message.
    pub fn recv(&mut self) -> Result<ToWorker, IoError> {
        self.stream.read_message_blocking(Encoding::Bincode)
    }

    /// Sends a message.
    pub fn send(&mut self, message: &FromWorker) -> Result<(), IoError> {
        write_message_blocking(
            self.stream.get_mut(),
            FrameDecoder::default(),
            Encoding::Bincode,
            message,
        )
    }
}
