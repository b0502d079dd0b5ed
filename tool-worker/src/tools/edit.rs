//! str_replace: exact-text replacement with a small diff in the result.

use super::Outcome;
use super::files::{read_text, write_atomically};
use protocol::worker::StrReplaceRequest;
use std::fmt::Write as _;
use std::path::Path;

/// Largest file edited.
const MAX_FILE: u64 = 10 * 1024 * 1024;

/// Replaces `old` by `new`: exactly one occurrence unless `replace_all`.
pub fn str_replace(req: &StrReplaceRequest) -> Outcome {
    if req.old.is_empty() {
        return Outcome::err(
            "old is empty: give the exact text to replace (use write_file to create a file)",
        );
    }
    if req.old == req.new {
        return Outcome::err("old and new are the same: nothing would change");
    }
    let text = match read_text(&req.path, MAX_FILE) {
        Ok(t) => t,
        Err(e) => return Outcome::err(e),
    };
    let count = text.matches(&req.old).count();
    if count == 0 {
        let hint = if text.contains(req.old.trim()) {
            " (it occurs with different surrounding whitespace)"
        } else {
            ""
        };
        return Outcome::err(format!(
            "the text to replace was not found in {}{hint}; read the file and copy the text exactly",
            req.path
        ));
    }
    if count > 1 && !req.replace_all {
        return Outcome::err(format!(
            "the text to replace occurs {count} times in {}; include more surrounding lines to make it unique, or set replace_all",
            req.path
        ));
    }
    let first = text.find(&req.old).unwrap_or(0);
    let line = text[..first].matches('\n').count() + 1;
    let updated = text.replace(&req.old, &req.new);
    if let Err(e) = write_atomically(Path::new(&req.path), updated.as_bytes()) {
        return Outcome::err(super::io_error("write", &req.path, &e));
    }
    let mut out = format!(
        "replaced {count} occurrence{} in {}\n@@ line {line} @@\n",
        if count == 1 { "" } else { "s" },
        req.path
    );
    for l in req.old.lines().take(10) {
        let _ = writeln!(out, "-{l}");
    }
    for l in req.new.lines().take(10) {
        let _ = writeln!(out, "+{l}");
    }
    Outcome::ok(out)
}
