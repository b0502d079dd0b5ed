//! `AGENTS.md`: the user's own (`~/.agents/AGENTS.md`) and the workspace's (at its root), both
//! given to the model, the user's first, each labelled with where it came from.

use super::{Skipped, read_file};
use std::path::{Path, PathBuf};

/// Most bytes of one `AGENTS.md` given to the model; past it the text is cut with a note.
pub const MAX_INSTRUCTIONS_BYTES: u64 = 32 * 1024;

/// One `AGENTS.md` that was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instructions {
    /// Where it came from, as the label the model sees.
    pub source: Source,
    /// The file.
    pub path: PathBuf,
    /// Its text, possibly cut.
    pub text: String,
    /// Whether it was cut at [`MAX_INSTRUCTIONS_BYTES`].
    pub truncated: bool,
}

/// Whose instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `~/.agents/AGENTS.md`: the user's, for every project.
    User,
    /// `AGENTS.md` at the workspace root: the project's.
    Workspace,
}

/// Reads the user's and the workspace's `AGENTS.md`, in that order; those missing are left out,
/// those unusable are returned as skipped.
pub fn load(home: Option<&Path>, workspace: &Path) -> (Vec<Instructions>, Vec<Skipped>) {
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    let places = home
        .map(|h| (Source::User, h.join(".agents/AGENTS.md")))
        .into_iter()
        .chain([(Source::Workspace, workspace.join("AGENTS.md"))]);
    for (source, path) in places {
        match read_file(&path, MAX_INSTRUCTIONS_BYTES) {
            Ok(Some(read)) if read.text.trim().is_empty() => {}
            Ok(Some(read)) => found.push(Instructions {
                source,
                path,
                text: read.text,
                truncated: read.truncated,
            }),
            Ok(None) => {}
            Err(s) => skipped.push(s),
        }
    }
    (found, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(label: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("agentd-instr-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join(".agents")).unwrap_or_else(|e| panic!("{e}"));
        d
    }

    #[test]
    fn both_files_user_first_missing_ones_left_out() {
        let home = dir("home");
        let ws = dir("ws");
        std::fs::write(home.join(".agents/AGENTS.md"), "prefer small commits\n")
            .unwrap_or_default();
        std::fs::write(ws.join("AGENTS.md"), "run `make test`\n").unwrap_or_default();
        let (found, skipped) = load(Some(&home), &ws);
        assert!(skipped.is_empty(), "{skipped:?}");
        let sources: Vec<Source> = found.iter().map(|i| i.source).collect();
        assert_eq!(sources, [Source::User, Source::Workspace]);
        assert_eq!(found[1].text, "run `make test`\n");

        std::fs::remove_file(home.join(".agents/AGENTS.md")).unwrap_or_default();
        let (found, _) = load(Some(&home), &ws);
        assert_eq!(found.len(), 1, "only the workspace's is left");
        let (found, _) = load(None, &ws);
        assert_eq!(found.len(), 1, "no home, no user file");
        for d in [home, ws] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    #[test]
    fn a_symlink_a_fifo_or_a_huge_file_is_skipped_or_cut_never_followed_or_waited_on() {
        let ws = dir("ws-bad");
        let secret = ws.join("secret");
        std::fs::write(&secret, "TOKEN").unwrap_or_default();
        std::os::unix::fs::symlink(&secret, ws.join("AGENTS.md")).unwrap_or_default();
        let (found, skipped) = load(None, &ws);
        assert!(found.is_empty(), "a symlink is not followed: {found:?}");
        assert!(skipped[0].why.contains("symbolic link"), "{:?}", skipped[0]);
        assert!(
            skipped[0].to_string().contains("AGENTS.md"),
            "the warning names the file"
        );

        std::fs::remove_file(ws.join("AGENTS.md")).unwrap_or_default();
        nix::unistd::mkfifo(
            &ws.join("AGENTS.md"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (found, skipped) = load(None, &ws);
        assert!(
            found.is_empty() && skipped.len() == 1,
            "a FIFO is skipped at once"
        );

        std::fs::remove_file(ws.join("AGENTS.md")).unwrap_or_default();
        let big = "é".repeat(MAX_INSTRUCTIONS_BYTES as usize);
        std::fs::write(ws.join("AGENTS.md"), &big).unwrap_or_default();
        let (found, _) = load(None, &ws);
        assert!(found[0].truncated);
        assert!(found[0].text.len() as u64 <= MAX_INSTRUCTIONS_BYTES);
        assert!(
            found[0].text.chars().all(|c| c == 'é'),
            "cut on a character boundary"
        );
        let _ = std::fs::remove_dir_all(ws);
    }
}
