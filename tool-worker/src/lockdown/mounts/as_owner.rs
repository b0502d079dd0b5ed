//! Reading on a session owner's behalf with the owner's rights, not root's.
//!
//! The scans that decide what is protected read the owner's git configs (`~/.gitconfig`, the
//! XDG one) and whatever they include — paths the owner chose, which may name any file of the
//! machine. Read as root, a scan was an oracle on every file ("Not a directory" or not, for
//! `[include] path = /home/OTHER/.ssh/id_ed25519/x`) and opened any device named there. So a
//! supervisor or worker running as root for another user does those reads with the owner's
//! filesystem identity: `setfsuid`, `setfsgid` and the owner's supplementary groups, **on the
//! calling thread only** (the raw system calls change one thread's credentials; libc's wrappers
//! would change every thread's), and puts root's back when the guard is dropped. Every open,
//! `stat` and listing in between is then checked as the owner's own would be, and an error says
//! no more than the owner could learn by trying.

use protocol::worker::RunAs;

/// The thread's filesystem identity while it reads for an owner; root's again when dropped.
#[derive(Debug)]
pub struct AsOwner {
    /// Root's supplementary groups, to restore; `None` when nothing was changed.
    restore: Option<Vec<libc::gid_t>>,
}

/// Takes `run_as`'s filesystem identity on this thread when running as root for another user;
/// does nothing otherwise. Fails when the kernel did not take it (the scan must not then run as
/// root).
pub fn assume(run_as: Option<&RunAs>) -> std::io::Result<AsOwner> {
    let none = AsOwner { restore: None };
    let Some(owner) = run_as else {
        return Ok(none);
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 || owner.uid == 0 {
        return Ok(none);
    }
    let saved = groups()?;
    let guard = AsOwner {
        restore: Some(saved),
    };
    set_groups(&owner.groups)?;
    // SAFETY: setfsgid/setfsuid take a plain id and change only this thread's credentials; they
    // return the previous id, and the one in force is read back below to see that it took.
    unsafe {
        libc::syscall(libc::SYS_setfsgid, owner.gid);
        libc::syscall(libc::SYS_setfsuid, owner.uid);
    }
    if current_fsuid() != owner.uid || current_fsgid() != owner.gid {
        return Err(std::io::Error::other(format!(
            "could not take uid {} and gid {} to read as the session's owner",
            owner.uid, owner.gid
        )));
    }
    Ok(guard)
}

impl Drop for AsOwner {
    fn drop(&mut self) {
        let Some(saved) = self.restore.take() else {
            return;
        };
        // SAFETY: as in `assume`; root's own ids back, on this thread.
        unsafe {
            libc::syscall(libc::SYS_setfsuid, 0);
            libc::syscall(libc::SYS_setfsgid, 0);
        }
        if set_groups(&saved).is_err() || current_fsuid() != 0 {
            // A thread left with another user's rights would do root's later work as them:
            // fail loudly rather than silently.
            eprintln!("agentd: could not restore root's filesystem identity on this thread");
            std::process::abort();
        }
    }
}

/// The fsuid in force on this thread (`setfsuid` of an invalid id changes nothing and returns
/// the current one).
fn current_fsuid() -> u32 {
    // SAFETY: an id of -1 is invalid, so nothing changes; the call returns the current fsuid.
    let id = unsafe { libc::syscall(libc::SYS_setfsuid, -1i32) };
    u32::try_from(id).unwrap_or(u32::MAX)
}

fn current_fsgid() -> u32 {
    // SAFETY: as in `current_fsuid`.
    let id = unsafe { libc::syscall(libc::SYS_setfsgid, -1i32) };
    u32::try_from(id).unwrap_or(u32::MAX)
}

fn groups() -> std::io::Result<Vec<libc::gid_t>> {
    let mut list = vec![0 as libc::gid_t; 65_536];
    // SAFETY: `list` has room for the number of entries passed.
    let n = unsafe { libc::getgroups(list.len() as libc::c_int, list.as_mut_ptr()) };
    let n = usize::try_from(n).map_err(|_| std::io::Error::last_os_error())?;
    list.truncate(n);
    Ok(list)
}

/// Sets this thread's supplementary groups (the raw call: libc's wrapper sets every thread's).
fn set_groups(groups: &[libc::gid_t]) -> std::io::Result<()> {
    // SAFETY: `groups` is a valid slice of the length passed.
    let r = unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn reads_as_the_owner_see_what_the_owner_sees_and_root_is_back_after() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root");
            return;
        }
        let dir = std::env::temp_dir().join(format!("agentd-as-owner-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let secret = dir.join("root-only");
        std::fs::write(&secret, "secret").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let owner = RunAs {
            uid: 65534,
            gid: 65534,
            groups: vec![],
        };
        // On a thread of its own: the test harness's threads must keep root's rights.
        let seen = std::thread::spawn({
            let secret = secret.clone();
            move || {
                let guard = assume(Some(&owner)).unwrap();
                let as_owner = std::fs::read_to_string(&secret).map_err(|e| e.kind());
                drop(guard);
                let after = std::fs::read_to_string(&secret).map_err(|e| e.kind());
                (as_owner, after)
            }
        })
        .join()
        .unwrap();
        assert_eq!(seen.0, Err(std::io::ErrorKind::PermissionDenied));
        assert_eq!(seen.1, Ok("secret".to_owned()));
        // Other threads never lost root's rights.
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
