//! Dropping from root to the session owner's identity.

use nix::unistd::{Gid, Uid, setgroups, setresgid, setresuid};
use protocol::worker::RunAs;

/// Why the identity could not be changed.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub struct IdentityError {
    step: &'static str,
    #[source]
    source: nix::Error,
}

/// Supplementary groups first, then the gid, then the uid (after which nothing else can change).
pub fn drop_to(who: &RunAs) -> Result<(), IdentityError> {
    let groups: Vec<Gid> = who.groups.iter().map(|g| Gid::from_raw(*g)).collect();
    setgroups(&groups).map_err(|source| IdentityError {
        step: "setgroups",
        source,
    })?;
    let gid = Gid::from_raw(who.gid);
    setresgid(gid, gid, gid).map_err(|source| IdentityError {
        step: "setresgid",
        source,
    })?;
    let uid = Uid::from_raw(who.uid);
    setresuid(uid, uid, uid).map_err(|source| IdentityError {
        step: "setresuid",
        source,
    })?;
    Ok(())
}
