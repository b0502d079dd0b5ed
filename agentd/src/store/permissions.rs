//! Who may reach what in a root daemon's state directory. Everything is root's and private,
//! except the one thing a session's workers must read as the session's owner: its spill folder
//! (big outputs, paged back with `read_file`).
//!
//! ```text
//! <state>/sessions/              root 0711   anyone may pass through, nobody may list it
//! <state>/sessions/<id>/         root:<owner's group> 0710   the owner may pass through
//! <state>/sessions/<id>/log.jsonl  root 0600
//! <state>/sessions/<id>/spill/   <owner> 0700   the owner alone reads it
//! ```
//!
//! So another user can neither list the sessions nor enter a session directory not of their
//! group, and cannot open a spill folder not their own. The owner cannot rename or replace their
//! spill folder (its parent is root's), so the path agentd writes through stays its own; the
//! files in it are created with `O_EXCL | O_NOFOLLOW` and only then given to the owner
//! (`agent/spill.rs`). A worker reads the folder through its read-only view: no call can write
//! there.

use nix::fcntl::{OFlag, open};
use nix::sys::stat::{Mode, fchmod};
use nix::unistd::{Gid, Uid, fchown};
use std::path::Path;

fn open_dir(path: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    Ok(open(
        path,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?)
}

/// Whether this process is a root daemon keeping sessions of other users.
fn root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The mode a state directory is made with: 0711 for a root daemon, else 0700.
pub fn state_dir_mode() -> u32 {
    if root() { 0o711 } else { 0o700 }
}

/// `<state>/sessions` of a root daemon: passable, not listable (0711).
pub fn sessions_root(path: &Path) -> std::io::Result<()> {
    if !root() {
        return Ok(());
    }
    fchmod(&open_dir(path)?, Mode::from_bits_truncate(0o711))?;
    Ok(())
}

/// Gives `spill` (in `session_dir`) to `owner` when a root daemon keeps it for another user:
/// the session directory passable by the owner's primary group, the spill folder the owner's
/// alone. A uid with no user left keeps both root's.
pub fn share_spill(session_dir: &Path, spill: &Path, owner: u32) -> std::io::Result<()> {
    if !root() || owner == 0 {
        return Ok(());
    }
    let Some(user) = nix::unistd::User::from_uid(Uid::from_raw(owner))
        .ok()
        .flatten()
    else {
        return Ok(());
    };
    let dir = open_dir(session_dir)?;
    fchown(&dir, None, Some(user.gid))?;
    fchmod(&dir, Mode::from_bits_truncate(0o710))?;
    let spill = open_dir(spill)?;
    fchown(
        &spill,
        Some(Uid::from_raw(owner)),
        Some(Gid::from_raw(user.gid.as_raw())),
    )?;
    fchmod(&spill, Mode::from_bits_truncate(0o700))?;
    Ok(())
}
