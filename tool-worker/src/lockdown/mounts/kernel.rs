//! The mount steps as syscalls: the classic `mount(2)` for new filesystems and propagation, and
//! the new mount API (`open_tree`, `move_mount`, `mount_setattr`, Linux ≥ 5.12) for copies of
//! trees and for changing flags on a whole tree at once. libc has the syscall numbers but not
//! every constant on every version, so the few constants used are spelled out here.

use super::{MountError, Mounter, Step};
use nix::mount::{MsFlags, mount};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const OPEN_TREE_CLONE: libc::c_uint = 0x1;
const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const AT_SYMLINK_NOFOLLOW: libc::c_uint = 0x100;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
pub(super) const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// `struct mount_attr` of `<linux/mount.h>`, version 0.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Carries out mount steps in the current mount namespace.
#[derive(Debug, Default)]
pub struct Kernel {
    /// Detached copies of trees, by slot.
    slots: Vec<Option<OwnedFd>>,
}

fn c_path(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

pub(super) fn err(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> MountError {
    let path = path.to_path_buf();
    move |source| MountError { what, path, source }
}

fn last_error<T>(rc: libc::c_long, ok: T) -> std::io::Result<T> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ok)
    }
}

/// A detached copy of the tree at `path` (with everything mounted under it), a final symlink
/// not followed.
pub(super) fn open_tree(path: &Path) -> std::io::Result<OwnedFd> {
    let c = c_path(path)?;
    let flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW;
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call; open_tree returns a new
    // descriptor (or -1) and writes no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, c.as_ptr(), flags) };
    last_error(fd, ())?;
    let fd = i32::try_from(fd).map_err(|_| std::io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A detached copy of the tree at `path`, reached without following any symlink on the way: the
/// path is canonical when the view is read, and a component a concurrent call swapped for a
/// symlink since (a parent of a configured write path inside the workspace, flipped to
/// `/usr/local`) fails the step instead of grabbing where it now leads.
fn open_tree_no_symlinks(path: &Path) -> std::io::Result<OwnedFd> {
    let at = super::resolve::open_no_symlinks(path, false)?;
    if nix::sys::stat::fstat(&at)?.st_mode & libc::S_IFMT == libc::S_IFLNK {
        return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
    }
    let empty = c"";
    let flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | libc::AT_EMPTY_PATH as u32;
    // SAFETY: `at` is an open descriptor we own and `empty` a valid NUL-terminated string; the
    // kernel returns a new descriptor (or -1) and writes no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, at.as_raw_fd(), empty.as_ptr(), flags) };
    last_error(fd, ())?;
    let fd = i32::try_from(fd).map_err(|_| std::io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Attaches the detached tree `from` at `to` (a final symlink in `to` is not followed).
pub(super) fn move_mount(from: &OwnedFd, to: &Path) -> std::io::Result<()> {
    let c = c_path(to)?;
    let empty = c"";
    // SAFETY: both strings are valid and NUL-terminated for the call; `from` is an open mount
    // descriptor we own; move_mount writes no memory of ours.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            from.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            c.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    last_error(rc, ())
}

/// Sets and clears mount attributes on the mount at `path` (and every mount under it when
/// `recursive`).
pub(super) fn set_attr(path: &Path, recursive: bool, set: u64, clear: u64) -> std::io::Result<()> {
    let c = c_path(path)?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let mut flags = AT_SYMLINK_NOFOLLOW;
    if recursive {
        flags |= AT_RECURSIVE;
    }
    // SAFETY: `c` is a valid path and `attr` a valid mount_attr of the size passed, both alive
    // for the call; the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    last_error(rc, ())
}

pub(super) fn tmpfs(path: &Path, flags: MsFlags, options: &str) -> std::io::Result<()> {
    mount(Some("tmpfs"), path, Some("tmpfs"), flags, Some(options)).map_err(std::io::Error::from)
}

impl Kernel {
    fn bind_onto_itself(&mut self, path: &Path) -> std::io::Result<()> {
        let copy = open_tree(path)?;
        move_mount(&copy, path)
    }
}

impl Mounter for Kernel {
    fn apply(&mut self, step: &Step) -> Result<(), MountError> {
        let root = Path::new("/");
        match step {
            Step::Private => mount(
                None::<&str>,
                root,
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                None::<&str>,
            )
            .map_err(std::io::Error::from)
            .map_err(err("making private", root)),
            Step::Grab { slot, path } => {
                let fd = open_tree_no_symlinks(path).map_err(err("copying the tree at", path))?;
                if self.slots.len() <= *slot {
                    self.slots.resize_with(slot + 1, || None);
                }
                self.slots[*slot] = Some(fd);
                Ok(())
            }
            Step::Hide { path } => tmpfs(
                path,
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                "mode=0755,size=64k",
            )
            .map_err(err("hiding", path)),
            Step::MountPoint { path, is_dir } => {
                let made = if *is_dir {
                    std::fs::create_dir_all(path)
                } else {
                    path.parent()
                        .map_or(Ok(()), std::fs::create_dir_all)
                        .and_then(|()| std::fs::File::create(path).map(drop))
                };
                made.map_err(err("making a mount point at", path))
            }
            Step::Attach { slot, path } => {
                let fd = self
                    .slots
                    .get_mut(*slot)
                    .and_then(Option::take)
                    .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EBADF))
                    .map_err(err("attaching (no copy kept)", path))?;
                move_mount(&fd, path).map_err(err("attaching the copy at", path))
            }
            Step::ReadOnly => set_attr(root, true, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0)
                .map_err(err("making read-only", root)),
            Step::Writable { path } => {
                set_attr(path, false, 0, MOUNT_ATTR_RDONLY).map_err(err("making writable", path))
            }
            Step::Pin { path } => self.bind_onto_itself(path).map_err(err("pinning", path)),
            Step::Protect { path } => self
                .bind_onto_itself(path)
                .and_then(|()| set_attr(path, true, MOUNT_ATTR_RDONLY, 0))
                .map_err(err("protecting", path)),
            Step::Seal { path } => self
                .bind_onto_itself(path)
                .and_then(|()| set_attr(path, false, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0))
                .map_err(err("sealing", path)),
            Step::Conceal { path, is_dir: true } => tmpfs(
                path,
                MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                "mode=0555,size=4k",
            )
            .map_err(err("concealing", path)),
            // A device node on a nodev mount cannot be opened at all: reading and writing the
            // file fail with EACCES, where a plain /dev/null would take writes silently.
            Step::Conceal {
                path,
                is_dir: false,
            } => open_tree(Path::new("/dev/null"))
                .and_then(|null| move_mount(&null, path))
                .and_then(|()| {
                    set_attr(
                        path,
                        false,
                        MOUNT_ATTR_RDONLY
                            | MOUNT_ATTR_NOSUID
                            | MOUNT_ATTR_NODEV
                            | MOUNT_ATTR_NOEXEC,
                        0,
                    )
                })
                .map_err(err("concealing", path)),
            // Read-only as a whole: one mount makes Docker's read-only paths (`/proc/sys`, …)
            // read-only, where a bind of each cost three syscalls and a mount to tear down.
            Step::Proc => {
                let proc = Path::new("/proc");
                mount(
                    Some("proc"),
                    proc,
                    Some("proc"),
                    MsFlags::MS_RDONLY
                        | MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV
                        | MsFlags::MS_NOEXEC,
                    None::<&str>,
                )
                .map_err(std::io::Error::from)
                .map_err(err("mounting a fresh procfs on", proc))
            }
            Step::Shm { bytes } => {
                let shm = Path::new("/dev/shm");
                tmpfs(
                    shm,
                    MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                    &format!("mode=1777,size={bytes}"),
                )
                .map_err(err("mounting a private tmpfs on", shm))
            }
            Step::Mask { path } => super::masked::mask(path),
            Step::MaskOwnerOnly => super::masked::mask_owner_only(),
        }
    }
}
