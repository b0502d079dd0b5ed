//! Length-prefixed framing: a `u32` big-endian payload length, then the payload.
//!
//! The decoder is pure: it looks at a byte buffer and either takes one whole frame off its front,
//! says it needs more bytes (`Ok(None)`, a normal answer), or refuses. The claimed length is checked
//! against the maximum *before* anything is allocated for it, so a hostile peer that claims 4 GiB
//! costs nothing.

use bytes::{Buf, Bytes, BytesMut};

/// Bytes in the length prefix.
pub const HEADER_LEN: usize = 4;

/// The default largest payload accepted: 16 MiB.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// Why a frame was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The length prefix claims more than the maximum; nothing was allocated for it.
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes")]
    TooLarge {
        /// The claimed (or attempted) payload length.
        len: u64,
        /// The maximum in force.
        max: usize,
    },
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame: {have} of {need} bytes received")]
    Truncated {
        /// Bytes of the frame (header included) that arrived.
        have: usize,
        /// Bytes the frame needed (header included), or the header length if it was cut.
        need: usize,
    },
}

/// Splits frames off the front of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameDecoder {
    /// The largest payload accepted, in bytes.
    max: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self {
            max: DEFAULT_MAX_FRAME,
        }
    }
}

impl FrameDecoder {
    /// A decoder that accepts payloads up to `max` bytes.
    pub fn new(max: usize) -> Self {
        Self { max }
    }

    /// The largest payload this decoder accepts.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Takes one frame's payload off the front of `buf`, or returns `Ok(None)` if `buf` does not
    /// hold a whole frame yet. On `Ok(None)` the buffer is untouched; when the header is complete,
    /// the buffer reserves room for the rest of the frame (the length having been checked first).
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        let Some(header) = buf.get(..HEADER_LEN) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let len = usize::try_from(len).map_err(|_| FrameError::TooLarge {
            len: len.into(),
            max: self.max,
        })?;
        if len > self.max {
            return Err(FrameError::TooLarge {
                len: len as u64,
                max: self.max,
            });
        }
        let need = HEADER_LEN + len;
        if buf.len() < need {
            buf.reserve(need - buf.len());
            return Ok(None);
        }
        buf.advance(HEADER_LEN);
        Ok(Some(buf.split_to(len).freeze()))
    }

    /// Like [`decode`](Self::decode), for when the peer has closed the stream: a clean end between
    /// frames is `Ok(None)`; leftover bytes that do not make a whole frame are [`FrameError::Truncated`].
    pub fn decode_eof(&self, buf: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        match self.decode(buf)? {
            Some(frame) => Ok(Some(frame)),
            None if buf.is_empty() => Ok(None),
            None => {
                let need = match buf.get(..HEADER_LEN) {
                    Some(h) => HEADER_LEN + u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize,
                    None => HEADER_LEN,
                };
                Err(FrameError::Truncated {
                    have: buf.len(),
                    need,
                })
            }
        }
    }

    /// Appends `payload` to `out` as one frame, refusing a payload over the maximum.
    pub fn encode(&self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
        if payload.len() > self.max {
            return Err(FrameError::TooLarge {
                len: payload.len() as u64,
                max: self.max,
            });
        }
        let len = u32::try_from(payload.len()).map_err(|_| FrameError::TooLarge {
            len: payload.len() as u64,
            max: self.max,
        })?;
        out.reserve(HEADER_LEN + payload.len());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(payload);
        Ok(())
    }

    /// `payload` as one frame in a new buffer.
    pub fn encode_to_vec(&self, payload: &[u8]) -> Result<Vec<u8>, FrameError> {
        let mut out = Vec::new();
        self.encode(payload, &mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(payload: &[u8]) -> BytesMut {
        BytesMut::from(&FrameDecoder::default().encode_to_vec(payload).unwrap()[..])
    }

    #[test]
    fn a_whole_frame_comes_off_the_front_and_the_rest_stays() {
        let mut buf = framed(b"hello");
        buf.extend_from_slice(&[0, 0]);
        let frame = FrameDecoder::default().decode(&mut buf).unwrap();
        assert_eq!(frame.as_deref(), Some(&b"hello"[..]));
        assert_eq!(&buf[..], &[0, 0]);
    }

    #[test]
    fn a_partial_frame_needs_more_bytes_and_leaves_the_buffer_alone() {
        let whole = framed(b"hello");
        for cut in 0..whole.len() {
            let mut buf = BytesMut::from(&whole[..cut]);
            assert_eq!(
                FrameDecoder::default().decode(&mut buf),
                Ok(None),
                "cut at {cut}"
            );
            assert_eq!(&buf[..], &whole[..cut]);
        }
    }

    #[test]
    fn an_empty_payload_is_a_frame() {
        let mut buf = framed(b"");
        assert_eq!(
            FrameDecoder::default().decode(&mut buf).unwrap().as_deref(),
            Some(&b""[..])
        );
    }

    #[test]
    fn an_oversized_length_is_refused_from_the_header_alone() {
        let mut buf = BytesMut::from(&u32::MAX.to_be_bytes()[..]);
        let cap_before = buf.capacity();
        let err = FrameDecoder::default().decode(&mut buf).unwrap_err();
        assert_eq!(
            err,
            FrameError::TooLarge {
                len: u32::MAX as u64,
                max: DEFAULT_MAX_FRAME
            }
        );
        assert_eq!(
            buf.capacity(),
            cap_before,
            "nothing may be reserved for a refused frame"
        );
    }

    #[test]
    fn sixteen_mib_plus_one_is_refused_before_allocation_and_sixteen_mib_is_not() {
        let d = FrameDecoder::default();
        let mut over = BytesMut::from(&((DEFAULT_MAX_FRAME as u32 + 1).to_be_bytes())[..]);
        let cap = over.capacity();
        assert!(
            matches!(d.decode(&mut over), Err(FrameError::TooLarge { len, .. }) if len == DEFAULT_MAX_FRAME as u64 + 1)
        );
        assert_eq!(over.capacity(), cap);
        let mut at = BytesMut::from(&((DEFAULT_MAX_FRAME as u32).to_be_bytes())[..]);
        assert_eq!(d.decode(&mut at), Ok(None));
    }

    #[test]
    fn encoding_refuses_what_decoding_would_refuse() {
        let d = FrameDecoder::new(3);
        assert!(d.encode_to_vec(b"abc").is_ok());
        assert_eq!(
            d.encode_to_vec(b"abcd"),
            Err(FrameError::TooLarge { len: 4, max: 3 })
        );
    }

    #[test]
    fn eof_between_frames_is_a_clean_end_and_inside_one_is_an_error() {
        let d = FrameDecoder::default();
        assert_eq!(d.decode_eof(&mut BytesMut::new()), Ok(None));
        let mut cut_header = BytesMut::from(&[0u8, 0][..]);
        assert_eq!(
            d.decode_eof(&mut cut_header),
            Err(FrameError::Truncated { have: 2, need: 4 })
        );
        let mut cut_body = BytesMut::from(&framed(b"hello")[..7]);
        assert_eq!(
            d.decode_eof(&mut cut_body),
            Err(FrameError::Truncated { have: 7, need: 9 })
        );
    }
}
