//! glob and grep, walking the tree as git would see it (honouring .gitignore).
//!
//! Neither blocks on a FIFO, socket or device: the walk does not follow symlinks, glob opens no
//! file, and grep reads only what the walk calls a regular file and `fstat` confirms
//! ([`super::files::open_regular`]).

use super::Outcome;
use ignore::WalkBuilder;
use protocol::worker::{GlobRequest, GrepRequest};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};

/// Paths listed by glob at most.
const MAX_GLOB: usize = 1000;
/// Matching lines shown by grep when the request gives no limit.
const DEFAULT_MATCHES: u64 = 200;

/// Files under `path` whose path relative to it matches `pattern`.
pub fn glob(req: &GlobRequest) -> Outcome {
    let root = req.path.as_deref().unwrap_or(".");
    let matcher = match globset::GlobBuilder::new(&req.pattern)
        .literal_separator(true)
        .build()
    {
        Ok(g) => g.compile_matcher(),
        Err(e) => return Outcome::err(format!("invalid glob {:?}: {}", req.pattern, e.kind())),
    };
    let mut found = Vec::new();
    let mut more = 0usize;
    for entry in WalkBuilder::new(root)
        .hidden(false)
        .build()
        .filter_map(Result::ok)
    {
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap_or(path);
        if entry.depth() > 0 && matcher.is_match(rel) {
            if found.len() < MAX_GLOB {
                found.push(path.display().to_string());
            } else {
                more += 1;
            }
        }
    }
    if found.is_empty() {
        return Outcome::ok(format!("no files match {:?} under {root}", req.pattern));
    }
    found.sort();
    let mut out = found.join("\n");
    if more > 0 {
        let _ = write!(out, "\n[… {more} more]");
    }
    Outcome::ok(out)
}

/// Lines matching a regular expression, as `path:line:text`.
pub fn grep(req: &GrepRequest) -> Outcome {
    let regex = match regex::RegexBuilder::new(&req.pattern)
        .case_insensitive(req.ignore_case)
        .size_limit(1 << 20)
        .build()
    {
        Ok(r) => r,
        Err(e) => return Outcome::err(format!("invalid regular expression: {e}")),
    };
    let filter = match req
        .glob
        .as_deref()
        .map(|g| globset::Glob::new(g).map(|g| g.compile_matcher()))
    {
        Some(Err(e)) => return Outcome::err(format!("invalid glob {:?}: {}", req.glob, e.kind())),
        Some(Ok(m)) => Some(m),
        None => None,
    };
    let root = req.path.as_deref().unwrap_or(".");
    let max = req.max_matches.unwrap_or(DEFAULT_MATCHES);
    let mut out = String::new();
    let mut count = 0u64;
    for entry in WalkBuilder::new(root)
        .hidden(false)
        .build()
        .filter_map(Result::ok)
    {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        if let Some(f) = &filter
            && !path.file_name().is_some_and(|n| f.is_match(n))
            && !f.is_match(path)
        {
            continue;
        }
        // The walk said "file", but what is opened is checked again: a FIFO swapped in since
        // would block the read.
        let Ok(file) = super::files::open_regular(path) else {
            continue;
        };
        let mut reader = BufReader::new(file);
        if reader
            .fill_buf()
            .map(|b| b.iter().take(8192).any(|c| *c == 0))
            .unwrap_or(true)
        {
            continue; // binary
        }
        let mut raw = Vec::new();
        let mut line_no = 0u64;
        while reader
            .read_until(b'\n', &mut raw)
            .map(|n| n > 0)
            .unwrap_or(false)
        {
            line_no += 1;
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches(['\n', '\r']);
            if regex.is_match(line) {
                if count == max {
                    let _ = write!(
                        out,
                        "[… stopped at {max} matches; narrow the pattern or the path]"
                    );
                    return Outcome::ok(out);
                }
                let shown: String = line.chars().take(500).collect();
                let _ = writeln!(out, "{}:{line_no}:{shown}", path.display());
                count += 1;
            }
            raw.clear();
        }
    }
    if count == 0 {
        return Outcome::ok(format!("no matches for {:?} under {root}", req.pattern));
    }
    Outcome::ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::tools::files::list_dir;
    use protocol::worker::ListDirRequest;
    use std::time::Duration;

    /// Runs `f` on a thread; fails if it has not returned within 3 s (it would be blocked on a
    /// FIFO for good).
    fn within_3s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(3))
            .expect("blocked: did not return within 3 s")
    }

    #[test]
    fn grep_glob_and_list_dir_pass_over_a_fifo_without_blocking() {
        let dir = std::env::temp_dir().join(format!("agentd-search-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let fifo = dir.join("a-pipe.txt");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        std::os::unix::fs::symlink(&fifo, dir.join("b-link.txt")).unwrap();
        std::fs::write(dir.join("c-real.txt"), "needle here\n").unwrap();
        let root = dir.display().to_string();
        let grep_in = |path: String| GrepRequest {
            pattern: "needle".into(),
            path: Some(path),
            glob: None,
            ignore_case: false,
            max_matches: None,
        };
        // Sanity, in the same tree: the regular file's line is found.
        let req = grep_in(root.clone());
        let out = within_3s(move || grep(&req));
        assert!(
            out.content.contains("c-real.txt:1:needle here"),
            "{}",
            out.content
        );
        let req = grep_in(fifo.display().to_string());
        let out = within_3s(move || grep(&req));
        assert!(out.content.starts_with("no matches"), "{}", out.content);
        let req = GlobRequest {
            pattern: "*.txt".into(),
            path: Some(root.clone()),
        };
        let out = within_3s(move || glob(&req));
        assert!(out.content.contains("a-pipe.txt"), "{}", out.content);
        let req = ListDirRequest { path: Some(root) };
        let out = within_3s(move || list_dir(&req));
        assert!(out.content.contains("a-pipe.txt"), "{}", out.content);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
