//! Output capping: keep the head and the tail, count everything, mark what was cut.

use std::collections::VecDeque;

/// Collects output up to a cap: the first half of the cap from the start, the second half from the
/// end; the middle is counted, not kept.
#[derive(Debug)]
pub struct Capped {
    /// Bytes kept from the start.
    head: Vec<u8>,
    /// The most recent bytes, once the head is full.
    tail: VecDeque<u8>,
    /// How much the head keeps.
    head_cap: usize,
    /// How much the tail keeps.
    tail_cap: usize,
    /// Bytes seen in all.
    total: u64,
}

impl Capped {
    /// Keeps at most `cap` bytes in all.
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    /// Adds output.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// Bytes seen in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The kept text (invalid UTF-8 replaced) and whether anything was cut.
    pub fn finish(self) -> (String, bool) {
        let kept = self.head.len() + self.tail.len();
        let cut = self.total - kept as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if cut > 0 {
            text.push_str(&format!(
                "\n[… {cut} bytes cut; {} bytes of output in all …]\n",
                self.total
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = a.to_vec();
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, cut > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = Capped::new(100);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.finish(), ("hello world".to_owned(), false));
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_counts_all() {
        let mut c = Capped::new(10);
        for chunk in [&b"0123456789"[..], b"abcdefghij", b"KLMNOPQRST"] {
            c.push(chunk);
        }
        assert_eq!(c.total(), 30);
        let (text, cut) = c.finish();
        assert!(cut);
        assert!(
            text.starts_with("01234\n[… 20 bytes cut; 30 bytes of output in all …]\n"),
            "{text}"
        );
        assert!(text.ends_with("PQRST"), "{text}");
    }

    #[test]
    fn byte_by_byte_equals_all_at_once() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        let mut a = Capped::new(64);
        a.push(&data);
        let mut b = Capped::new(64);
        data.iter().for_each(|x| b.push(std::slice::from_ref(x)));
        assert_eq!(a.finish(), b.finish());
    }
}
