//! read_file, write_file, list_dir.

use super::{Outcome, io_error};
use protocol::worker::{ListDirRequest, ReadFileRequest, WriteFileRequest};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

/// Lines shown when the request gives no limit.
const DEFAULT_LINES: u64 = 2000;
/// A longer line is cut.
const MAX_LINE: usize = 2000;
/// Entries listed at most.
const MAX_ENTRIES: usize = 1000;

/// Numbered lines of a text file, from `offset` (1-based), at most `limit`.
pub fn read_file(req: &ReadFileRequest) -> Outcome {
    let file = match std::fs::File::open(&req.path) {
        Ok(f) => f,
        Err(e) => return Outcome::err(io_error("read", &req.path, &e)),
    };
    match file.metadata() {
        Ok(m) if m.is_dir() => {
            return Outcome::err(format!("{} is a directory; use list_dir", req.path));
        }
        Err(e) => return Outcome::err(io_error("read", &req.path, &e)),
        _ => {}
    }
    let mut reader = BufReader::new(file);
    let head = match reader.fill_buf() {
        Ok(b) => b,
        Err(e) => return Outcome::err(io_error("read", &req.path, &e)),
    };
    if head.iter().take(8192).any(|b| *b == 0) {
        let size = std::fs::metadata(&req.path).map(|m| m.len()).unwrap_or(0);
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

/// Writes `bytes` to a temp file beside `path`, then renames it over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    std::fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.agentd-{}.tmp", std::process::id()));
    let mode = std::fs::metadata(path).ok().map(|m| m.permissions().mode());
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Some(mode) = mode {
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Reads a whole text file of reasonable size.
pub fn read_text(path: &str, max: u64) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| io_error("read", path, &e))?;
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
