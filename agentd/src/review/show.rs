//! A turn's changes as lines for a terminal: `changed: N files`, then one line per path (the
//! first [`SHOWN`]), then how many more. Every path is the model's to name, so each goes
//! through [`inert_line`]: a name cannot end our line and draw one of its own.

use crate::inert::inert_line;
use protocol::event::{PathChange, PathKind, WorkspaceChanges};

/// Paths shown on a terminal at most; the rest are counted (the JSON output and the session
/// log keep up to [`protocol::event::MAX_CHANGES_LISTED`]).
pub const SHOWN: usize = 50;

/// The lines, without colour.
pub fn lines(changes: &WorkspaceChanges) -> Vec<String> {
    let mut out = vec![match changes.total {
        0 => "changed: no files".to_owned(),
        1 => "changed: 1 file".to_owned(),
        n => format!("changed: {n} files"),
    }];
    for p in changes.paths.iter().take(SHOWN) {
        let what = match p.change {
            PathChange::Created => "created ",
            PathChange::Modified => "modified",
            PathChange::ModeChanged => "mode    ",
            PathChange::Deleted => "deleted ",
        };
        let kind = match p.kind {
            PathKind::File => "",
            PathKind::Directory => " (directory)",
            PathKind::Symlink => " (symlink)",
            PathKind::Other => " (special file)",
        };
        out.push(format!("  {what} {}{kind}", inert_line(&p.path)));
    }
    let shown = changes.paths.len().min(SHOWN) as u64;
    if changes.total > shown {
        out.push(format!("  … and {} more", changes.total - shown));
    }
    if let Some(why) = &changes.incomplete {
        out.push(format!("  (not all files checked: {})", inert_line(why)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::event::ChangedPath;

    fn path(p: &str, change: PathChange) -> ChangedPath {
        ChangedPath {
            path: p.into(),
            change,
            kind: PathKind::File,
        }
    }

    #[test]
    fn the_list_is_capped_and_counts_the_rest() {
        let paths: Vec<ChangedPath> = (0..60)
            .map(|i| path(&format!("f{i:02}"), PathChange::Created))
            .collect();
        let changes = WorkspaceChanges {
            total: 70,
            paths,
            incomplete: None,
        };
        let lines = lines(&changes);
        assert_eq!(lines[0], "changed: 70 files");
        assert_eq!(lines.len(), 1 + SHOWN + 1);
        assert_eq!(lines[1], "  created  f00");
        assert_eq!(lines.last().map(String::as_str), Some("  … and 20 more"));
    }

    #[test]
    fn a_name_cannot_draw_a_line_of_its_own_or_reach_the_terminal_raw() {
        let changes = WorkspaceChanges {
            total: 1,
            paths: vec![path(
                "a\nchanged: no files\x1b]52;c;x\x07",
                PathChange::Modified,
            )],
            incomplete: None,
        };
        let lines = lines(&changes);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(!lines[1].contains('\n') && !lines[1].contains('\x1b'));
    }
}
