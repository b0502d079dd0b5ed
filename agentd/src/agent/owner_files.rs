//! Reading the session owner's files as the owner. When agentd runs as root for another user's
//! session, what it reads on that session's behalf outside a worker — `~/.agents/AGENTS.md`, the
//! skills' `SKILL.md` — must be read with that user's rights: a user could otherwise point
//! `~/.agents` at a root-only directory and have root read it into their model's context.
//!
//! `setfsuid`/`setfsgid` change the identity the kernel checks file access against for the
//! calling thread only; moving the fsuid off 0 also clears `CAP_DAC_OVERRIDE` and
//! `CAP_DAC_READ_SEARCH` from the thread's effective set, and moving it back restores them. The
//! closure runs synchronously, so no other task can run on the thread in between.

use nix::unistd::{Gid, Uid, setfsgid, setfsuid};
use protocol::worker::RunAs;

/// Puts the thread's file identity back when dropped, even if the closure panicked.
struct Restore {
    /// The fsuid before.
    uid: Uid,
    /// The fsgid before.
    gid: Gid,
}

impl Drop for Restore {
    fn drop(&mut self) {
        setfsuid(self.uid);
        setfsgid(self.gid);
    }
}

/// Runs `f` with the file rights of `who` when agentd is root and `who` is another user; as
/// agentd otherwise.
pub fn as_owner<T>(who: Option<&RunAs>, f: impl FnOnce() -> T) -> T {
    let Some(who) = who.filter(|w| w.uid != 0 && nix::unistd::geteuid().is_root()) else {
        return f();
    };
    // The gid first: once the fsuid is not 0, the thread may no longer change its fsgid.
    let gid = setfsgid(Gid::from_raw(who.gid));
    let uid = setfsuid(Uid::from_raw(who.uid));
    let _restore = Restore { uid, gid };
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_root_only_file_is_unreadable_as_the_owner_and_readable_after() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let dir = std::env::temp_dir().join(format!("agentd-owner-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let secret = dir.join("AGENTS.md");
        std::fs::write(&secret, "root only").unwrap();
        let nobody = RunAs {
            uid: 65534,
            gid: 65534,
            groups: vec![],
        };
        let read = as_owner(Some(&nobody), || std::fs::read_to_string(&secret));
        assert_eq!(
            read.unwrap_err().kind(),
            std::io::ErrorKind::PermissionDenied
        );
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root only");
        assert!(as_owner(None, || std::fs::read_to_string(&secret)).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
