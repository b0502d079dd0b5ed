//! What the model sees besides the conversation. Layer 1, persistent: the system prompt
//! ([`prompt`]), the user's and the workspace's `AGENTS.md` ([`instructions`]) and the index of
//! skills ([`skills`]), whose bodies the model reads on demand.
//!
//! Everything here is read from directories the model can write (the workspace) or that another
//! program may have planted into: files are opened without following a symlink in their last
//! component, only if regular, up to a bound, and a file that cannot be used is skipped with a
//! warning that names it — never a reason to refuse the session.

pub mod compact;
pub mod fit;
pub mod git_state;
pub mod history;
pub mod instructions;
pub mod prompt;
#[cfg(test)]
mod props;
#[cfg(any(test, feature = "testing"))]
pub mod sample;
pub mod skills;
pub mod todos;

/// A file that was skipped, and why; shown to the user, never to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file.
    pub path: std::path::PathBuf,
    /// Why, in words.
    pub why: String,
}

impl std::fmt::Display for Skipped {
    /// Inert: a file name in the workspace is the model's to choose, and this reaches a terminal.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display().to_string();
        write!(
            f,
            "skipped {}: {}",
            crate::inert::inert(&path),
            crate::inert::inert(&self.why)
        )
    }
}

/// Reads a file for the context: `Ok(None)` when there is none, `Err` (a [`Skipped`]) when it
/// is there but cannot be used.
pub(crate) fn read_file(
    path: &std::path::Path,
    max: u64,
) -> Result<Option<tool_worker::lockdown::mounts::gitconfig::Bounded>, Skipped> {
    use std::io::ErrorKind;
    match tool_worker::lockdown::mounts::gitconfig::read_regular(path, max) {
        Ok(read) => Ok(Some(read)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Skipped {
            path: path.to_path_buf(),
            why: match e.raw_os_error() {
                Some(libc::ELOOP) => "it is a symbolic link".into(),
                _ => e.to_string(),
            },
        }),
    }
}
