//! read_file, write_file, list_dir.
//!
//! Reading never blocks on what is not a regular file: a FIFO would wait for a writer that never
//! comes, a device could stream forever. [`open_regular`] opens without blocking and refuses
//! anything `fstat` does not call a regular file, before a byte is read. Writing goes through a
//! temp file that is created new (never an existing file or a symlink's target) with the final
//! mode from the start, so a private file is never readable by others, not even for a moment.

use super::{Outcome, io_error};
use protocol::worker::{ListDirRequest, ReadFileRequest, WriteFileRequest};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Lines shown when the request gives no limit.
const DEFAULT_LINES: u64 = 2000;
/// A longer line is cut.
const MAX_LINE: usize = 2000;
/// Entries listed at most.
const MAX_ENTRIES: usize = 1000;

/// Why [`open_regular`] refused.
#[derive(Debug)]
pub enum OpenError {
    /// The open or the `fstat` failed.
    Io(std::io::Error),
    /// It is there but is not a regular file: "a directory", "a FIFO", …
    NotRegular(&'static str),
}

impl OpenError {
    /// The error in words, for the model.
    pub fn describe(&self, action: &str, path: &str) -> String {
        match self {
            OpenError::Io(e) => io_error(action, path, e),
            OpenError::NotRegular("a directory") => {
                format!("{path} is a directory; use list_dir")
            }
            OpenError::NotRegular(what) => {
                format!("cannot {action} {path}: it is {what}, not a regular file")
            }
        }
    }
}

/// What a file type is called, for anything but a regular file.
fn kind_of(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

/// Opens `path` for reading only if it is a regular file, without ever blocking: `stat` first
/// (so a device is not even opened), then `O_NONBLOCK` (a FIFO put in its place returns at once
/// instead of waiting for a writer) and `fstat` on what was opened, which decides.
pub fn open_regular(path: &Path) -> Result<File, OpenError> {
    let before = std::fs::metadata(path).map_err(OpenError::Io)?;
    if let Some(what) = kind_of(before.file_type()) {
        return Err(OpenError::NotRegular(what));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(OpenError::Io)?;
    let opened = file.metadata().map_err(OpenError::Io)?;
    match kind_of(opened.file_type()) {
        // O_NONBLOCK means nothing for a regular file's reads; it is left set.
        None => Ok(file),
        Some(what) => Err(OpenError::NotRegular(what)),
    }
}

/// Numbered lines of a text file, from `offset` (1-based), at most `limit`.
pub fn read_file(req: &ReadFileRequest) -> Outcome {
    let file = match open_regular(Path::new(&req.path)) {
        Ok(f) => f,
        Err(e) => return Outcome::err(e.describe("read", &req.path)),
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = BufReader::new(file);
    let head = match reader.fill_buf() {
        Ok(b) => b,
        Err(e) => return Outcome::err(io_error("read", &req.path, &e)),
    };
    if head.iter().take(8192).any(|b| *b == 0) {
        return Outcome::err(format!(
            "{} looks binary ({size} bytes); not shown",
            req.path
        ));
    }
    let first = req.offset.unwrap_or(1).max(1);
    let limit = req.limit.unwrap_or(DEFAULT_LINES).max(1);
    let mut out = String::new();
    let mut shown = 0u64;
    let mut line_no = 0u64;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        match reader.read_until(b'\n', &mut raw) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Outcome::err(io_error("read", &req.path, &e)),
        }
        line_no += 1;
        if line_no < first {
            continue;
        }
        if shown == limit {
            let _ = write!(out, "[… more lines follow; read on with offset {line_no}]");
            return Outcome::ok(out);
        }
        let text = String::from_utf8_lossy(&raw);
        let text = text.trim_end_matches(['\n', '\r']);
        let cut: String = text.chars().take(MAX_LINE).collect();
        let more = if cut.len() < text.len() {
            " […line cut]"
        } else {
            ""
        };
        let _ = writeln!(out, "{line_no:>6}\t{cut}{more}");
        shown += 1;
    }
    if shown == 0 {
        if line_no == 0 {
            return Outcome::ok(format!("{} is empty", req.path));
        }
        return Outcome::err(format!(
            "{} has {line_no} lines; offset {first} is past the end",
            req.path
        ));
    }
    Outcome::ok(out)
}

/// Creates or replaces a file atomically (temp file + rename), creating parent directories and
/// keeping an existing file's mode.
pub fn write_file(req: &WriteFileRequest) -> Outcome {
    match write_atomically(Path::new(&req.path), req.content.as_bytes()) {
        Ok(()) => Outcome::ok(format!("wrote {} bytes to {}", req.content.len(), req.path)),
        Err(e) => Outcome::err(io_error("write", &req.path, &e)),
    }
}

/// Temp file names tried before giving up (a taken name is skipped, never reused).
const TEMP_ATTEMPTS: usize = 16;

/// The mode a new file is created with (the umask applies), and a replaced file keeps: its
/// permission bits, without set-uid, set-gid or sticky.
fn mode_for(existing: Option<u32>) -> u32 {
    existing.map_or(0o666, |m| m & 0o777)
}

/// How the temp file is opened: created new (`O_EXCL`: neither an existing file nor a planted
/// symlink is ever opened), not following a symlink, with `mode` from the start.
fn temp_options(mode: u32) -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    options
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    options
}

/// A name for the temp file beside `name`, different on each try and not guessable in advance
/// (std's hasher keys are random per process).
fn temp_name(name: &str, attempt: usize) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(attempt);
    format!(".{name}.agentd-{:016x}.tmp", h.finish())
}

/// Writes `bytes` to a temp file beside `path`, then renames it over `path`. The temp file has
/// the final mode from its creation (an existing file's, else `0666 & ~umask`): a 0600 file's
/// new content is never readable by anyone else.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    std::fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing = std::fs::metadata(path).ok().map(|m| m.permissions().mode());
    let mode = mode_for(existing);
    let (mut f, tmp) = create_temp(&dir, &name, mode)?;
    let result = (|| {
        f.write_all(bytes)?;
        if existing.is_some() {
            // The umask may have narrowed the mode at creation; widen it back to the old file's
            // exactly (never beyond), on the fd.
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Creates a new temp file for `name` in `dir` with `mode`; a name that is taken is skipped.
fn create_temp(dir: &Path, name: &str, mode: u32) -> std::io::Result<(File, std::path::PathBuf)> {
    let mut last = None;
    for attempt in 0..TEMP_ATTEMPTS {
        let tmp = dir.join(temp_name(name, attempt));
        match temp_options(mode).open(&tmp) {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temp file name")))
}

/// Reads a whole text file of reasonable size (a regular file only; see [`open_regular`]).
pub fn read_text(path: &str, max: u64) -> Result<String, String> {
    let file = open_regular(Path::new(path)).map_err(|e| e.describe("read", path))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error("read", path, &e))?;
    if bytes.len() as u64 > max {
        return Err(format!("{path} is larger than {max} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8 text"))
}

/// The entries of a directory, sorted, directories marked with `/`.
pub fn list_dir(req: &ListDirRequest) -> Outcome {
    let path = req.path.as_deref().unwrap_or(".");
    let entries = match std::fs::read_dir(path) {
        Ok(e) => e,
        Err(e) => return Outcome::err(io_error("list", path, &e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| {
            let mut name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                name.push('/');
            }
            name
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(MAX_ENTRIES);
    let mut out = names.join("\n");
    if total > MAX_ENTRIES {
        let _ = write!(out, "\n[… {} more entries]", total - MAX_ENTRIES);
    }
    if total == 0 {
        out = format!("{path} is empty");
    }
    Outcome::ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    struct Scratch(PathBuf);

    impl Scratch {
        fn new(label: &str) -> Self {
            let path = std::env::temp_dir()
                .join(format!("agentd-files-unit-{label}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir(&path).unwrap();
            Scratch(path)
        }

        fn fifo(&self, name: &str) -> PathBuf {
            let path = self.0.join(name);
            nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
            path
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Runs `f` on a thread and fails the test if it has not returned within 3 s (a FIFO read
    /// would block for good: the thread is then left behind, and the test reports it).
    fn within_3s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(3))
            .expect("blocked: did not return within 3 s")
    }

    fn read(path: &Path) -> Outcome {
        read_file(&ReadFileRequest {
            path: path.display().to_string(),
            offset: None,
            limit: None,
        })
    }

    #[test]
    fn read_file_refuses_a_fifo_at_once_and_still_reads_a_file() {
        let s = Scratch::new("fifo");
        let fifo = s.fifo("pipe");
        let out = within_3s(move || read(&fifo));
        assert!(out.is_error);
        assert!(out.content.contains("a FIFO"), "{}", out.content);
        std::fs::write(s.0.join("plain.txt"), "hello\n").unwrap();
        let out = read(&s.0.join("plain.txt"));
        assert!(
            !out.is_error && out.content.contains("hello"),
            "{}",
            out.content
        );
    }

    #[test]
    fn read_file_refuses_devices_sockets_and_directories() {
        let s = Scratch::new("kinds");
        let sock = s.0.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        for (path, what) in [
            (PathBuf::from("/dev/zero"), "a character device"),
            (PathBuf::from("/dev/urandom"), "a character device"),
            (sock.clone(), "a socket"),
        ] {
            let out = within_3s(move || read(&path));
            assert!(
                out.is_error && out.content.contains(what),
                "{}",
                out.content
            );
        }
        let out = read(&s.0);
        assert!(
            out.is_error && out.content.contains("use list_dir"),
            "{}",
            out.content
        );
    }

    #[test]
    fn a_symlink_to_a_fifo_is_refused_too() {
        let s = Scratch::new("link");
        let fifo = s.fifo("pipe");
        let link = s.0.join("link.txt");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let out = within_3s(move || read(&link));
        assert!(
            out.is_error && out.content.contains("a FIFO"),
            "{}",
            out.content
        );
    }

    #[test]
    fn read_text_for_str_replace_refuses_a_fifo_at_once() {
        let s = Scratch::new("text");
        let fifo = s.fifo("pipe").display().to_string();
        let e = within_3s(move || read_text(&fifo, 1024)).unwrap_err();
        assert!(e.contains("a FIFO"), "{e}");
        std::fs::write(s.0.join("ok"), "text").unwrap();
        let ok = s.0.join("ok").display().to_string();
        assert_eq!(read_text(&ok, 1024).unwrap(), "text");
    }

    #[test]
    fn modes_keep_permission_bits_only() {
        assert_eq!(mode_for(None), 0o666);
        assert_eq!(mode_for(Some(0o100600)), 0o600);
        assert_eq!(mode_for(Some(0o104755)), 0o755, "no set-uid on a rewrite");
        assert_eq!(mode_for(Some(0o102640)), 0o640, "no set-gid on a rewrite");
    }

    #[test]
    fn the_temp_file_is_created_new_with_its_mode_and_never_through_a_symlink() {
        let s = Scratch::new("opts");
        let f = temp_options(0o600).open(s.0.join("t")).unwrap();
        assert_eq!(f.metadata().unwrap().mode() & 0o7777, 0o600);
        // A planted symlink or file at the name is never opened: the target stays as it was.
        std::fs::write(s.0.join("target"), "keep").unwrap();
        std::os::unix::fs::symlink(s.0.join("target"), s.0.join("link")).unwrap();
        let e = temp_options(0o600).open(s.0.join("link")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        let e = temp_options(0o600).open(s.0.join("target")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(s.0.join("target")).unwrap(), "keep");
        assert_ne!(
            temp_name("a", 0),
            temp_name("a", 0),
            "names are not guessable"
        );
    }

    /// A reader racing the writer: while a 0600 file is rewritten again and again, every temp
    /// file that appears beside it is looked at; none may ever be readable by group or others.
    #[test]
    fn rewriting_a_private_file_never_exposes_its_temp_file() {
        let s = Scratch::new("race");
        let secret = s.0.join("secret");
        std::fs::write(&secret, "x").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::<u32>::new()));
        let watcher = {
            let (dir, done, seen) = (s.0.clone(), done.clone(), seen.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    for e in std::fs::read_dir(&dir).unwrap().filter_map(Result::ok) {
                        let name = e.file_name().to_string_lossy().into_owned();
                        if name.ends_with(".tmp")
                            && let Ok(m) = std::fs::symlink_metadata(e.path())
                        {
                            seen.lock().unwrap().push(m.mode() & 0o777);
                        }
                    }
                }
            })
        };
        let content = "s".repeat(1 << 20);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) && seen.lock().unwrap().len() < 50 {
            write_atomically(&secret, content.as_bytes()).unwrap();
        }
        done.store(true, Ordering::Relaxed);
        watcher.join().unwrap();
        let seen = seen.lock().unwrap();
        assert!(
            !seen.is_empty(),
            "the watcher saw no temp file: the test proves nothing"
        );
        let exposed: Vec<String> = seen
            .iter()
            .filter(|m| *m & 0o077 != 0)
            .map(|m| format!("{m:o}"))
            .collect();
        assert!(
            exposed.is_empty(),
            "{} of {} temp files seen were readable by others, e.g. mode {:?}",
            exposed.len(),
            seen.len(),
            exposed.first()
        );
        let meta = std::fs::metadata(&secret).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(meta.len(), 1 << 20);
    }
}
