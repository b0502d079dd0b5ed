//! Kernel files a call has no use for and that tell about the host (or, for uid 0, reveal what
//! only root may read): masked in the call's fresh `/proc` and in `/sys`, as Docker masks them.
//!
//! The list is Docker's default (moby `oci/defaults.go`, `MaskedPaths` and `ReadonlyPaths`; the
//! current engine adds `/proc/interrupts` and `/sys/devices/virtual/powercap`), plus what a root
//! call here could read that a container's root could not: the files of `/proc` that only their
//! owner may read (`/proc/slabinfo`, `/proc/vmallocinfo`, `/proc/timer_list`, `/proc/kpage*`, …:
//! a call as uid 0 without capabilities still passes their mode check), found by their mode,
//! not by name, and the kernel's build config (`/proc/config.gz`).
//!
//! A file is masked by binding `/dev/null` over it (it reads empty), a directory by an empty
//! read-only tmpfs. A path this kernel does not have is skipped. All of it runs after the fresh
//! `/proc` is mounted, which it covers.
//!
//! Docker's read-only paths ([`READ_ONLY`]) need no mount of their own: the fresh `/proc` is
//! mounted read-only as a whole (Landlock grants a call only reading there, so no tool loses a
//! write it had; this is the second layer, for all of `/proc` rather than five paths). A write
//! through a magic link (`/proc/self/fd/1`) lands on the target's mount, not on `/proc`'s.

use super::kernel::{err, tmpfs};
use super::{MountError, Step};
use nix::mount::{MsFlags, mount};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Masked in every call: Docker's `MaskedPaths` (moby `oci/defaults.go`, with the two the
/// current engine added), and the kernel's config.
pub const MASKED: &[&str] = &[
    "/proc/asound",
    "/proc/acpi",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    "/proc/config.gz",
    "/proc/slabinfo",
    "/proc/vmallocinfo",
];

/// Docker's `ReadonlyPaths`: read-only in every call, with the rest of the read-only `/proc`.
pub const READ_ONLY: &[&str] = &[
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// The steps, after the one that mounts `/proc`.
pub fn steps() -> Vec<Step> {
    let mut steps: Vec<Step> = MASKED
        .iter()
        .map(|p| Step::Mask { path: p.into() })
        .collect();
    steps.push(Step::MaskOwnerOnly);
    steps
}

/// What a mask step does to a path, decided from what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cover {
    /// Nothing there on this kernel: skipped.
    Absent,
    /// A directory: an empty read-only tmpfs.
    Dir,
    /// Anything else: `/dev/null` bound over it.
    File,
}

impl Cover {
    /// What covers `path` (not following a final symlink: a symlink is covered as a file,
    /// which bind-mounts onto where it leads inside `/proc` — none of the listed paths is one).
    pub fn of(path: &Path) -> Self {
        match std::fs::metadata(path) {
            Err(_) => Cover::Absent,
            Ok(m) if m.is_dir() => Cover::Dir,
            Ok(_) => Cover::File,
        }
    }
}

/// The top-level files of the `/proc` at `proc` that only their owner may read (no read bit for
/// group or others), beyond those in [`MASKED`]: what uid 0 without capabilities still reads.
pub fn owner_only(proc: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            // Process directories are the call's own.
            !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            e.file_type().is_ok_and(|t| t.is_file())
                && e.metadata()
                    .is_ok_and(|m| m.permissions().mode() & 0o044 == 0)
        })
        .map(|e| e.path())
        .filter(|p| !MASKED.iter().any(|m| Path::new(m) == p))
        .collect();
    found.sort();
    found
}

/// Covers `path` as [`Cover::of`] says.
pub fn mask(path: &Path) -> Result<(), MountError> {
    match Cover::of(path) {
        Cover::Absent => Ok(()),
        Cover::Dir => tmpfs(
            path,
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            "mode=0555,size=4k",
        )
        .map_err(err("masking the directory", path)),
        Cover::File => mount(
            Some("/dev/null"),
            path,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(std::io::Error::from)
        .map_err(err("masking the file", path)),
    }
}

/// Masks every file [`owner_only`] finds in `/proc`.
pub fn mask_owner_only() -> Result<(), MountError> {
    owner_only(Path::new("/proc"))
        .iter()
        .try_for_each(|path| mask(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_path_is_masked_and_the_read_only_ones_are_in_proc() {
        let steps = steps();
        for p in MASKED {
            assert!(steps.contains(&Step::Mask { path: p.into() }), "{p}");
        }
        // Made read-only by the read-only `/proc` itself (`Step::Proc`).
        for p in READ_ONLY {
            assert!(Path::new(p).starts_with("/proc"), "{p}");
        }
        assert!(steps.contains(&Step::MaskOwnerOnly));
    }

    #[test]
    fn owner_only_files_are_found_by_their_mode() {
        let dir = std::env::temp_dir().join(format!("agentd-masked-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join("1234")).unwrap();
        for (name, mode) in [("secret", 0o400), ("open", 0o444), ("group", 0o440)] {
            let file = dir.join(name);
            std::fs::write(&file, "x").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        assert_eq!(owner_only(&dir), vec![dir.join("secret")]);
        assert_eq!(Cover::of(&dir.join("sub")), Cover::Dir);
        assert_eq!(Cover::of(&dir.join("open")), Cover::File);
        assert_eq!(Cover::of(&dir.join("none")), Cover::Absent);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
