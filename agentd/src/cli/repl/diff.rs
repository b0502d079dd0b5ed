//! The coloured diff shown for `str_replace` and `write_file` calls, before they run (so the
//! approval prompt comes after what would change). Lines are made inert: the model wrote them.
//! The file a `write_file` would replace is read through [`workspace_file::read`]: the model
//! may have left a FIFO, a symlink or a device there, which is named instead of opened.

use super::style::{Palette, Tone};
use crate::inert::inert;
use crate::workspace_file;
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
/// `write_file`'s content against the file as it is now (read only inside `workspace`; when it
/// cannot be read safely, a note says why and the content is shown whole). `None` for other
/// tools or arguments that do not parse.
pub fn of_call(name: &str, arguments: &str, workspace: &Path, palette: Palette) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let text = |key: &str| args.get(key).and_then(|v| v.as_str());
    match name {
        "str_replace" => Some(render(text("old")?, text("new")?, palette)),
        "write_file" => {
            let after = text("content")?;
            Some(
                match workspace_file::read(workspace, Path::new(text("path")?), MAX_READ) {
                    Ok(before) => render(&before.unwrap_or_default(), after, palette),
                    Err(why) => {
                        let note = format!("    (not compared with the file now: {why})");
                        let note = palette.paint(Tone::Yellow, &note);
                        format!("{note}\n{}", render("", after, palette))
                    }
                },
            )
        }
        _ => None,
    }
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
            &ws,
            plain,
        );
        assert_eq!(
            outside.as_deref(),
            Some("    (not compared with the file now: outside the workspace)\n    + x")
        );
    }

    #[test]
    fn a_fifo_in_place_of_the_file_is_named_not_opened() {
        let ws = std::env::temp_dir().join(format!("agentd-diff-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&ws);
        std::fs::create_dir_all(&ws).unwrap_or_default();
        nix::unistd::mkfifo(
            &ws.join("pipe"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let args = r#"{"path": "pipe", "content": "x\n"}"#;
        let shown = of_call("write_file", args, &ws, Palette { on: false });
        let _ = std::fs::remove_dir_all(&ws);
        assert_eq!(
            shown.as_deref(),
            Some("    (not compared with the file now: a FIFO, not a regular file)\n    + x")
        );
    }
}
