//! A server-sent event decoder: bytes in, events out, in time linear in the input and memory
//! bounded by one event.
//!
//! Pure: the caller pushes what arrived and takes the events that are complete; no I/O here. It
//! follows the WHATWG rules the providers' streams rely on — lines end in LF, CRLF or CR; a
//! blank line ends an event; `data` lines are joined with LF; `event` names it; lines starting
//! with `:` are comments (keep-alives); one space after the colon is dropped; a leading BOM is
//! skipped; an event not ended by a blank line when the stream closes is dropped. `id` and
//! `retry` are ignored: a model call is never resumed by reconnecting.
//!
//! Why not `eventsource-stream` (used before): it re-parses its whole buffer from the start on
//! every chunk while a line is incomplete and copies the rest of the buffer after every line, so
//! one long event costs time quadratic in its length — and it has no bound on an event's size,
//! so a stream that never ends an event grows without limit. Here each byte is scanned once, and
//! an event over `max_event_bytes` is an error as soon as it passes the bound.

/// One event: its name (`event:`, empty when not given) and its data lines joined with LF.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field; empty when the event had none.
    pub event: String,
    /// The `data:` lines, joined with LF.
    pub data: String,
}

/// Why the stream cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event (with the line being read) passed the bound before it ended.
    #[error("one event passed {limit} bytes before it ended")]
    EventTooLarge {
        /// The bound, bytes.
        limit: usize,
    },
    /// A line is not UTF-8.
    #[error("a line of the event stream is not UTF-8")]
    NotUtf8,
}

/// The decoder's state between pushes.
#[derive(Debug)]
pub struct Decoder {
    /// Bytes received and not yet consumed as lines; `buf[start..]` is unread.
    buf: Vec<u8>,
    /// Where the unread bytes start.
    start: usize,
    /// How far from `start` no line end was found, so the next search resumes there (each byte
    /// is looked at once however the stream is cut into chunks).
    scanned: usize,
    /// The event being built.
    event: Event,
    /// Whether a `data` line arrived for it (an event with none is not dispatched).
    has_data: bool,
    /// Whether the first bytes (and a BOM among them) have been seen.
    started: bool,
    /// The most one event may hold: its data and name plus the line being read.
    max_event_bytes: usize,
}

impl Decoder {
    /// A decoder that refuses events over `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            event: Event::default(),
            has_data: false,
            started: false,
            max_event_bytes,
        }
    }

    /// Adds bytes that arrived; take the events they complete with [`Decoder::next_event`]
    /// until it answers `None` before pushing more. What is held is then at most the bound plus
    /// one chunk.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if !self.started && !bytes.is_empty() {
            // The BOM is three bytes, which a chunk boundary may split: wait until they are here.
            let have = self.buf.len() - self.start + bytes.len();
            if have < 3 && b"\xef\xbb\xbf".starts_with(&[&self.buf[self.start..], bytes].concat()) {
                self.buf.extend_from_slice(bytes);
                return;
            }
            self.started = true;
            let mut head = std::mem::take(&mut self.buf);
            head.extend_from_slice(bytes);
            let skip = if head.starts_with(b"\xef\xbb\xbf") {
                3
            } else {
                0
            };
            self.buf = head.split_off(skip);
            self.start = 0;
            self.scanned = 0;
            bytes = &[];
        }
        // Consumed bytes are dropped before more are kept: what stays is one partial line.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Fails when the event being read, with its unfinished line, is over the bound.
    fn check_size(&self) -> Result<(), SseError> {
        let held = self.event.data.len() + self.event.event.len() + self.buf.len() - self.start;
        if held > self.max_event_bytes {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(())
    }

    /// The next complete event, if one is complete. `None` means more bytes are needed; the
    /// event being read is then checked against the bound, so an event that never ends is an
    /// error as soon as it passes it.
    pub fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        loop {
            match self.next_line()? {
                Some(line) => {
                    if let Some(event) = self.take_line(&line) {
                        return Ok(Some(event));
                    }
                }
                None => {
                    self.check_size()?;
                    return Ok(None);
                }
            }
        }
    }

    /// The next whole line, without its end; `None` until one is complete. A CR at the very end
    /// of what arrived waits for the next byte: it may be the first half of a CRLF.
    fn next_line(&mut self) -> Result<Option<String>, SseError> {
        let unread = &self.buf[self.start..];
        let Some(offset) = unread[self.scanned..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        else {
            self.scanned = unread.len();
            return Ok(None);
        };
        let end = self.scanned + offset;
        let width = match (unread[end], unread.get(end + 1)) {
            (b'\r', Some(b'\n')) => 2,
            (b'\r', None) => {
                self.scanned = end;
                return Ok(None);
            }
            _ => 1,
        };
        let line = std::str::from_utf8(&unread[..end])
            .map_err(|_| SseError::NotUtf8)?
            .to_owned();
        self.start += end + width;
        self.scanned = 0;
        Ok(Some(line))
    }

    /// Applies one line; returns the event a blank line completed.
    fn take_line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            let had_data = std::mem::take(&mut self.has_data);
            let mut event = std::mem::take(&mut self.event);
            if !had_data {
                return None;
            }
            if event.data.ends_with('\n') {
                event.data.pop();
            }
            return Some(event);
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.event.data.push_str(value);
                self.event.data.push('\n');
                self.has_data = true;
            }
            "event" => value.clone_into(&mut self.event.event),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `input` pushed in chunks of `size` bytes.
    fn decode(input: &[u8], size: usize, max: usize) -> Result<Vec<Event>, SseError> {
        let mut d = Decoder::new(max);
        let mut out = Vec::new();
        for chunk in input.chunks(size.max(1)) {
            d.push(chunk);
            while let Some(e) = d.next_event()? {
                out.push(e);
            }
        }
        Ok(out)
    }

    fn ev(event: &str, data: &str) -> Event {
        Event {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_come_out_the_same_however_the_stream_is_cut() {
        let input = "\u{feff}: keep-alive\n\ndata: {\"a\": 1}\n\nevent: message_stop\r\ndata:x\r\ndata:  y\r\n\r\nid: 7\nretry: 10\ndata\n\n\rdata: cr\r\rdata: ünï 漢字\n\n";
        let want = vec![
            ev("", "{\"a\": 1}"),
            ev("message_stop", "x\n y"),
            ev("", ""),
            ev("", "cr"),
            ev("", "ünï 漢字"),
        ];
        for size in 1..=input.len() {
            assert_eq!(
                decode(input.as_bytes(), size, 1 << 20).unwrap(),
                want,
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn an_event_without_its_blank_line_is_not_dispatched() {
        assert_eq!(
            decode(b"data: a\n\ndata: cut", 4, 100).unwrap(),
            [ev("", "a")]
        );
        assert!(
            decode(b"event: ping\n\n: only a comment\n\n", 3, 100)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn an_event_over_the_bound_is_an_error_before_it_ends() {
        // One endless line.
        let long = vec![b'x'; 1000];
        assert_eq!(
            decode(&long, 7, 100),
            Err(SseError::EventTooLarge { limit: 100 })
        );
        // Many short data lines of one event.
        let lines = "data: 0123456789\n".repeat(20);
        assert_eq!(
            decode(lines.as_bytes(), 5, 100),
            Err(SseError::EventTooLarge { limit: 100 })
        );
        // The same bytes as separate events are fine: the bound is per event.
        let events = "data: 0123456789\n\n".repeat(20);
        assert_eq!(decode(events.as_bytes(), 5, 100).unwrap().len(), 20);
    }

    #[test]
    fn a_line_that_is_not_utf8_is_an_error() {
        assert_eq!(
            decode(b"data: \xff\xfe\n\n", 64, 100),
            Err(SseError::NotUtf8)
        );
    }

    #[test]
    fn a_long_event_in_small_chunks_is_scanned_once() {
        // 8 MiB in 512-byte chunks: rescanning the line on each chunk would read 64 GB (what
        // eventsource-stream did); scanning once takes well under a second, even unoptimised.
        let mut input = b"data: ".to_vec();
        input.extend(std::iter::repeat_n(b'x', 8 << 20));
        input.extend_from_slice(b"\n\n");
        let start = std::time::Instant::now();
        let out = decode(&input, 512, 9 << 20).unwrap();
        assert_eq!(out[0].data.len(), 8 << 20);
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
