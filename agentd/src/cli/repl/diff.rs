//! The coloured diff shown for `str_replace` and `write_file` calls, before they run (so the
//! approval prompt comes after what would change). Lines are made inert: the model wrote them.

use super::style::{Palette, Tone};
use crate::inert::inert;
use similar::{ChangeTag, TextDiff};
use std::path::Path;

/// Lines of diff shown at most; the rest is counted.
const MAX_LINES: usize = 40;
/// A file larger than this is not read for a `write_file` diff.
const MAX_READ: u64 = 256 * 1024;

/// The diff of `before` → `after`, with two lines of context, each line indented.
pub fn render(before: &str, after: &str, palette: Palette) -> String {
    let diff = TextDiff::from_lines(before, after);
    let mut lines = Vec::new();
    for (i, group) in diff.grouped_ops(2).iter().enumerate() {
        if i > 0 {
            lines.push(palette.paint(Tone::Cyan, "    ⋯"));
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let text = inert(change.value().trim_end_matches('\n')).into_owned();
                lines.push(match change.tag() {
                    ChangeTag::Delete => palette.paint(Tone::Red, &format!("    - {text}")),
                    ChangeTag::Insert => palette.paint(Tone::Green, &format!("    + {text}")),
                    ChangeTag::Equal => palette.paint(Tone::Dim, &format!("      {text}")),
                });
            }
        }
    }
    let more = lines.len().saturating_sub(MAX_LINES);
    lines.truncate(MAX_LINES);
    if more > 0 {
        lines.push(palette.paint(Tone::Dim, &format!("    … {more} more lines")));
    }
    lines.join("\n")
}

/// The diff a tool call would make, from its arguments: `str_replace`'s old and new text, or
/// `write_file`'s content against the file as it is now (read only inside `workspace`).
/// `None` for other tools or arguments that do not parse.
pub fn of_call(name: &str, arguments: &str, workspace: &Path, palette: Palette) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let text = |key: &str| args.get(key).and_then(|v| v.as_str());
    match name {
        "str_replace" => Some(render(text("old")?, text("new")?, palette)),
        "write_file" => {
            let before = current(workspace, text("path")?).unwrap_or_default();
            Some(render(&before, text("content")?, palette))
        }
        _ => None,
    }
}

/// The file's text now, if `path` is inside `workspace` and small enough to show.
fn current(workspace: &Path, path: &str) -> Option<String> {
    let full = workspace.join(path).canonicalize().ok()?;
    if !full.starts_with(workspace) || std::fs::metadata(&full).ok()?.len() > MAX_READ {
        return None;
    }
    std::fs::read_to_string(full).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replacement_shows_the_removed_and_added_lines_around_context() {
        let plain = Palette { on: false };
        let shown = render("a\nb\nreturn a - b\nc\n", "a\nb\nreturn a + b\nc\n", plain);
        assert_eq!(
            shown,
            "      a\n      b\n    - return a - b\n    + return a + b\n      c"
        );
        let coloured = render("x\n", "y\n", Palette { on: true });
        assert!(coloured.contains("\x1b[31m    - x"), "{coloured:?}");
        assert!(coloured.contains("\x1b[32m    + y"), "{coloured:?}");
    }

    #[test]
    fn the_model_text_in_a_diff_is_inert_and_long_diffs_are_cut() {
        let shown = render("", "evil\x1b]52;c;aGk=\x07\n", Palette { on: false });
        assert_eq!(shown, r"    + evil\x1b]52;c;aGk=\x07");
        let long: String = (0..100).map(|i| format!("{i}\n")).collect();
        let shown = render("", &long, Palette { on: false });
        assert_eq!(shown.lines().count(), MAX_LINES + 1);
        assert!(shown.ends_with("… 60 more lines"), "{shown}");
    }

    #[test]
    fn only_edits_get_a_diff_and_files_outside_the_workspace_are_not_read() {
        let plain = Palette { on: false };
        let ws = std::env::temp_dir();
        assert!(of_call("bash", r#"{"command": "ls"}"#, &ws, plain).is_none());
        assert!(of_call("str_replace", "{broken", &ws, plain).is_none());
        let outside = of_call(
            "write_file",
            r#"{"path": "../../../../etc/hostname", "content": "x\n"}"#,
            &ws.join("no-such-dir"),
            plain,
        );
        assert_eq!(outside.as_deref(), Some("    + x"));
    }
}
