//! Loading a session log: the header, every record in order, and what was torn off the end.

use super::log::{Header, Record};
use super::{FORMAT_VERSION, StoreError, io_err};
use std::path::Path;

/// A log as loaded.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// What the session is.
    pub header: Header,
    /// Every complete record, in order (sequence numbers checked to run 1, 2, 3, …).
    pub records: Vec<Record>,
    /// The last line, when it was torn by a crash mid-write.
    pub torn: Option<Torn>,
    /// The end of the last whole record: the log's length without a torn line.
    pub covered_bytes: u64,
}

/// A torn last line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torn {
    /// Its line number, from 1.
    pub line: usize,
    /// The length of the log without it.
    pub valid_bytes: u64,
}

impl Loaded {
    /// Warnings for the user: the torn line, if any, with the file and line.
    pub fn warnings(&self, path: &Path) -> Vec<String> {
        self.torn
            .iter()
            .map(|t| {
                format!(
                    "{}:{}: the last line was cut off (a crash while it was written); it is ignored, and everything before it is kept",
                    path.display(),
                    t.line
                )
            })
            .collect()
    }
}

/// Loads the log at `path`.
pub fn load(path: &Path) -> Result<Loaded, StoreError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_log(path)?
        .read_to_end(&mut bytes)
        .map_err(io_err(path))?;
    parse(path, &bytes)
}

/// Opens the log at `path` for reading: never through a symlink, never waiting (a FIFO put in a
/// log's place would hold a reader forever), and only a regular file. Every reader of a log
/// comes through here, so tests can count what a listing opened ([`opened`]).
pub fn open_log(path: &Path) -> Result<std::fs::File, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    #[cfg(test)]
    OPENED.with(|o| o.borrow_mut().push(path.to_path_buf()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(io_err(path))?;
    let meta = file.metadata().map_err(io_err(path))?;
    if !meta.is_file() {
        return Err(StoreError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other("not a regular file"),
        });
    }
    Ok(file)
}

#[cfg(test)]
thread_local! {
    static OPENED: std::cell::RefCell<Vec<std::path::PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The logs this thread opened since the last call (tests only).
#[cfg(test)]
pub fn opened() -> Vec<std::path::PathBuf> {
    OPENED.with(|o| std::mem::take(&mut *o.borrow_mut()))
}

/// Parses a log's bytes; `path` only names it in errors.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Loaded, StoreError> {
    let corrupt = |line: usize, why: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        line,
        why,
    };
    // Lines with their start offsets; a last piece without a newline is still a line.
    let mut lines: Vec<(usize, &[u8])> = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            lines.push((start, &bytes[start..i]));
            start = i + 1;
        }
    }
    let unterminated = start < bytes.len();
    if unterminated {
        lines.push((start, &bytes[start..]));
    }
    let last = lines.len();
    let Some((_, first)) = lines.first() else {
        return Err(corrupt(1, "the file is empty: it has no header".into()));
    };
    let header = parse_header(path, first, last == 1 && unterminated)?;
    let mut records = Vec::with_capacity(last.saturating_sub(1));
    let mut torn = None;
    for (index, (offset, text)) in lines.iter().enumerate().skip(1) {
        let number = index + 1;
        match serde_json::from_slice::<Record>(text) {
            Ok(record) => {
                let want = records.len() as u64 + 1;
                if record.seq.0 != want {
                    return Err(corrupt(
                        number,
                        format!("sequence number {} where {want} was due", record.seq.0),
                    ));
                }
                if number == last && unterminated {
                    // Complete JSON but no newline: the write was cut before its end.
                    torn = Some(Torn {
                        line: number,
                        valid_bytes: *offset as u64,
                    });
                } else {
                    records.push(record);
                }
            }
            Err(_) if number == last => {
                torn = Some(Torn {
                    line: number,
                    valid_bytes: *offset as u64,
                });
            }
            Err(e) => return Err(corrupt(number, format!("not a session record: {e}"))),
        }
    }
    let covered_bytes = torn.as_ref().map_or(bytes.len() as u64, |t| t.valid_bytes);
    Ok(Loaded {
        header,
        records,
        torn,
        covered_bytes,
    })
}

/// Parses line 1 of the log at `path`; `torn` says it lacks its newline (never finished).
pub fn parse_header(path: &Path, text: &[u8], torn: bool) -> Result<Header, StoreError> {
    let corrupt = |why: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        line: 1,
        why,
    };
    if torn {
        return Err(corrupt(
            "the header is incomplete (the session was never started)".into(),
        ));
    }
    let value: serde_json::Value = serde_json::from_slice(text)
        .map_err(|e| corrupt(format!("not a session log header: {e}")))?;
    let version = value
        .get("agentd_session")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| corrupt("not a session log (no \"agentd_session\" version)".into()))?;
    if version != u64::from(FORMAT_VERSION) {
        return Err(StoreError::Version {
            path: path.to_path_buf(),
            found: version,
        });
    }
    serde_json::from_value(value).map_err(|e| corrupt(format!("a bad header: {e}")))
}
