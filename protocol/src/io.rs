//! Frame and message I/O over byte streams: blocking (`std::io`, for the single-threaded
//! tool-worker) and async (tokio, behind the `tokio` feature, for agentd and its clients). Both sit
//! on the pure [`FrameDecoder`]; neither knows what the frames mean beyond the codec.

use crate::codec::{self, CodecError, Encoding};
use crate::control::ErrorFrame;
use crate::frame::{FrameDecoder, FrameError};
use crate::handshake::HandshakeError;
use bytes::{Bytes, BytesMut};
use serde::{Serialize, de::DeserializeOwned};

/// Why reading or writing a message failed.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The stream failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// A frame was refused.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// A payload did not decode.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// The hello was refused (server side).
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
    /// The server refused our hello (client side).
    #[error("the server refused the handshake: {} ({:?})", .0.message, .0.code)]
    Rejected(ErrorFrame),
    /// The peer closed the stream where a message was required.
    #[error("the peer closed the connection")]
    Closed,
}

/// Reads frames from a stream, keeping the bytes that arrived past the current frame.
#[derive(Debug)]
pub struct FrameReader<R> {
    /// The stream.
    inner: R,
    /// Bytes read but not yet framed.
    buf: BytesMut,
    /// The size limit in force.
    decoder: FrameDecoder,
}

/// How much to ask the stream for at a time.
const READ_CHUNK: usize = 64 * 1024;

impl<R> FrameReader<R> {
    /// Wraps `inner`, accepting frames up to `decoder.max()` bytes.
    pub fn new(inner: R, decoder: FrameDecoder) -> Self {
        Self {
            inner,
            buf: BytesMut::new(),
            decoder,
        }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The wrapped stream, mutably (for writing on the same socket).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The size limit in force.
    pub fn decoder(&self) -> FrameDecoder {
        self.decoder
    }

    /// Reads from `f(stream)` instead, keeping the bytes already buffered — a client may send
    /// its first request right behind its hello (a server splits the stream after the handshake).
    pub fn map_inner<S>(self, f: impl FnOnce(R) -> S) -> FrameReader<S> {
        FrameReader {
            inner: f(self.inner),
            buf: self.buf,
            decoder: self.decoder,
        }
    }
}

impl<R: std::io::Read> FrameReader<R> {
    /// Reads one frame, blocking; `Ok(None)` on a clean end of stream between frames.
    pub fn read_frame_blocking(&mut self) -> Result<Option<Bytes>, IoError> {
        let mut chunk = vec![0u8; READ_CHUNK];
        loop {
            if let Some(frame) = self.decoder.decode(&mut self.buf)? {
                return Ok(Some(frame));
            }
            let n = match self.inner.read(&mut chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if n == 0 {
                return Ok(self.decoder.decode_eof(&mut self.buf)?);
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Reads and decodes one message, blocking; the end of stream is [`IoError::Closed`].
    pub fn read_message_blocking<T: DeserializeOwned>(
        &mut self,
        encoding: Encoding,
    ) -> Result<T, IoError> {
        let frame = self.read_frame_blocking()?.ok_or(IoError::Closed)?;
        Ok(codec::decode(encoding, &frame)?)
    }
}

/// Encodes `value` and frames it.
pub fn encode_message<T: Serialize>(
    decoder: FrameDecoder,
    encoding: Encoding,
    value: &T,
) -> Result<Vec<u8>, IoError> {
    let payload = codec::encode(encoding, value)?;
    Ok(decoder.encode_to_vec(&payload)?)
}

/// Writes one message as one frame, blocking.
pub fn write_message_blocking<W: std::io::Write, T: Serialize>(
    writer: &mut W,
    decoder: FrameDecoder,
    encoding: Encoding,
    value: &T,
) -> Result<(), IoError> {
    let bytes = encode_message(decoder, encoding, value)?;
    writer.write_all(&bytes)?;
    writer.flush()?;
    Ok(())
}

#[cfg(feature = "tokio")]
mod async_io {
    use super::*;
    use crate::handshake::{self, HandshakeReply, Hello, PROTOCOL_VERSION, PeerIdentity, Welcome};
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    impl<R: AsyncRead + Unpin> FrameReader<R> {
        /// Reads one frame; `Ok(None)` on a clean end of stream between frames. Cancel-safe: a
        /// frame half-read when the future is dropped stays buffered for the next call.
        pub async fn read_frame(&mut self) -> Result<Option<Bytes>, IoError> {
            loop {
                if let Some(frame) = self.decoder.decode(&mut self.buf)? {
                    return Ok(Some(frame));
                }
                self.buf
                    .reserve(READ_CHUNK.min(self.decoder.max() + crate::frame::HEADER_LEN));
                if self.inner.read_buf(&mut self.buf).await? == 0 {
                    return Ok(self.decoder.decode_eof(&mut self.buf)?);
                }
            }
        }

        /// Reads and decodes one message; the end of stream is [`IoError::Closed`].
        pub async fn read_message<T: DeserializeOwned>(
            &mut self,
            encoding: Encoding,
        ) -> Result<T, IoError> {
            let frame = self.read_frame().await?.ok_or(IoError::Closed)?;
            Ok(codec::decode(encoding, &frame)?)
        }
    }

    /// Writes one message as one frame.
    pub async fn write_message<W: AsyncWrite + Unpin, T: Serialize>(
        writer: &mut W,
        decoder: FrameDecoder,
        encoding: Encoding,
        value: &T,
    ) -> Result<(), IoError> {
        let bytes = encode_message(decoder, encoding, value)?;
        writer.write_all(&bytes).await?;
        writer.flush().await?;
        Ok(())
    }

    /// Client side: sends the hello and waits for the welcome.
    pub async fn client_handshake<S: AsyncRead + AsyncWrite + Unpin>(
        stream: &mut FrameReader<S>,
        encoding: Encoding,
    ) -> Result<Welcome, IoError> {
        let decoder = stream.decoder();
        write_message(
            stream.get_mut(),
            decoder,
            Encoding::Json,
            &Hello::new(encoding),
        )
        .await?;
        match stream
            .read_message::<HandshakeReply>(Encoding::Json)
            .await?
        {
            HandshakeReply::Welcome(welcome) => Ok(welcome),
            HandshakeReply::Error(frame) => Err(IoError::Rejected(frame)),
        }
    }

    /// Server side: reads the hello and answers it. On a bad hello the error frame is sent before
    /// the error is returned; the caller then closes the connection.
    pub async fn server_handshake<S: AsyncRead + AsyncWrite + Unpin>(
        stream: &mut FrameReader<S>,
        server: &str,
        peer: PeerIdentity,
    ) -> Result<Encoding, IoError> {
        let decoder = stream.decoder();
        let outcome = match stream.read_frame().await {
            Ok(Some(frame)) => handshake::parse_hello(&frame).map_err(IoError::from),
            Ok(None) => return Err(IoError::Closed),
            Err(e) => Err(e),
        };
        let reply = match &outcome {
            Ok(encoding) => HandshakeReply::Welcome(Welcome {
                protocol: PROTOCOL_VERSION,
                encoding: *encoding,
                server: server.to_owned(),
                peer,
            }),
            Err(IoError::Handshake(e)) => HandshakeReply::Error(e.to_frame()),
            Err(IoError::Frame(e @ FrameError::TooLarge { .. })) => HandshakeReply::Error(
                ErrorFrame::new(crate::control::ErrorCode::FrameTooLarge, e.to_string()),
            ),
            Err(e) => HandshakeReply::Error(ErrorFrame::new(
                crate::control::ErrorCode::BadHandshake,
                e.to_string(),
            )),
        };
        // The peer may already be gone; the handshake's own outcome is what matters.
        let _ = write_message(stream.get_mut(), decoder, Encoding::Json, &reply).await;
        outcome
    }
}

#[cfg(feature = "tokio")]
pub use async_io::{client_handshake, server_handshake, write_message};
