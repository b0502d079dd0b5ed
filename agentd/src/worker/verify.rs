//! What the supervisor checks instead of trusting a worker: the binary it runs as a worker, and
//! the lockdown the worker says it achieved.
//!
//! * [`trusted_binary`]: an explicitly configured worker binary (`AGENTD_TOOL_WORKER`, a library
//!   caller's path) is run only if nobody but root could have written it or replaced it: the file,
//!   every directory on the way to it and every symlink followed are owned by root, none is
//!   writable by group or others (a sticky directory such as `/tmp` excepted: its entries are
//!   checked, and only their owner may replace them), and none lies under the call's writable
//!   roots (workspace, temp dir, write paths), which the model can change. The path is resolved
//!   here, component by component, and the resolved path is what gets spawned. The workers that
//!   `agent` and `agentd` host themselves (`/proc/self/exe`) need no such check.
//! * [`verify`]: a worker's `ready` report against its spec. Every property the spec requires
//!   and the report lacks is listed in a [`Shortfall`]; the supervisor kills such a worker before
//!   it sees a request.

use protocol::worker::{LandlockStatus, LockdownReport, SandboxProfile, SandboxSpec};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// What a worker's lockdown lacks against its spec, one entry per missing property.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .missing.join("; "))]
pub struct Shortfall {
    /// Each missing property, in words: what the spec requires and what the worker reported.
    pub missing: Vec<String>,
}

/// Checks `report` against what `spec` requires of a worker started by this process.
pub fn verify(spec: &SandboxSpec, report: &LockdownReport) -> Result<(), Shortfall> {
    verify_as(spec, report, nix::unistd::geteuid().is_root())
}

/// [`verify`] for a supervisor that is (or is not) root: only a root supervisor's workers can
/// drop to the spec's `run_as`, so only theirs must report it.
pub fn verify_as(
    spec: &SandboxSpec,
    report: &LockdownReport,
    supervisor_is_root: bool,
) -> Result<(), Shortfall> {
    let mut missing = Vec::new();
    // Properties every worker must report, whatever the spec. A new report field is one line.
    let required = [
        (report.seccomp, "the seccomp filter"),
        (report.no_new_privs, "no_new_privs"),
        (report.capabilities_cleared, "every capability set cleared"),
        (!report.containment.trim().is_empty(), "a containment"),
        (report.ipc_namespace, "an IPC namespace"),
        (
            report.mount_namespace || spec.profile == SandboxProfile::FullAccess,
            "a mount namespace",
        ),
    ];
    for (held, property) in required {
        if !held {
            missing.push(format!("{property}: not reported"));
        }
    }
    if !landlock_suffices(spec, report.landlock) {
        missing.push(format!(
            "Landlock {}: the worker reports {}",
            landlock_required(spec),
            landlock_words(report.landlock)
        ));
    }
    if let Some(run_as) = spec.run_as.as_ref().filter(|_| supervisor_is_root)
        && (report.uid, report.gid) != (run_as.uid, run_as.gid)
    {
        missing.push(format!(
            "uid {} gid {}: the worker reports uid {} gid {}",
            run_as.uid, run_as.gid, report.uid, report.gid
        ));
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Shortfall { missing })
    }
}

/// Every protected path that existed before the worker was sent its spec must be among those it
/// reports read-only (one created since is the pool's to notice, at call time).
pub fn verify_protected(
    expected: &[std::path::PathBuf],
    report: &LockdownReport,
) -> Result<(), Shortfall> {
    let missing: Vec<String> = expected
        .iter()
        .filter(|p| !report.protected.contains(p))
        .map(|p| format!("{} read-only: not reported", p.display()))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Shortfall { missing })
    }
}

/// `full-access` asks for no Landlock; `require_landlock = false` accepts a partial or absent one
/// (the report's warnings say so); otherwise every requested right must be enforced.
fn landlock_suffices(spec: &SandboxSpec, got: LandlockStatus) -> bool {
    match (spec.profile, got) {
        (SandboxProfile::FullAccess, _) | (_, LandlockStatus::FullyEnforced) => true,
        (_, LandlockStatus::PartiallyEnforced | LandlockStatus::NotEnforced) => {
            !spec.require_landlock
        }
        (_, LandlockStatus::NotRequested) => false,
    }
}

fn landlock_required(spec: &SandboxSpec) -> &'static str {
    if spec.require_landlock {
        "fully enforced"
    } else {
        "enforced as far as the kernel can"
    }
}

fn landlock_words(status: LandlockStatus) -> &'static str {
    match status {
        LandlockStatus::FullyEnforced => "it fully enforced",
        LandlockStatus::PartiallyEnforced => "it partially enforced",
        LandlockStatus::NotEnforced => "it not enforced",
        LandlockStatus::NotRequested => "it not requested",
    }
}

/// Why a configured worker binary is not run.
#[derive(Debug, thiserror::Error)]
pub enum Untrusted {
    /// The path or a component of it cannot be examined (missing, unreadable).
    #[error("{path}: {source}")]
    Unreadable {
        /// The component.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Somebody other than root could write or replace the binary.
    #[error("{path} {reason}")]
    Writable {
        /// The component that is not safe.
        path: PathBuf,
        /// Why, in words.
        reason: String,
    },
}

/// Symlinks followed before giving up, as the kernel does.
const MAX_LINKS: u32 = 40;

/// Resolves `path` and checks that nobody but root could have written or replaced it, and that
/// it lies outside the writable roots of `spec`. Returns the resolved path, the one to spawn.
pub fn trusted_binary(path: &Path, spec: &SandboxSpec) -> Result<PathBuf, Untrusted> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        let cwd = std::env::current_dir().map_err(|source| Untrusted::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
        cwd.join(path)
    };
    let roots = writable_roots(spec);
    let mut links = 0;
    let resolved = resolve(&absolute, &roots, &mut links)?;
    let meta = lstat(&resolved)?;
    if !meta.is_file() {
        return Err(writable(&resolved, "is not a regular file".into()));
    }
    Ok(resolved)
}

/// The directories a call may write, resolved (a root that does not exist yet is taken as given).
fn writable_roots(spec: &SandboxSpec) -> Vec<PathBuf> {
    [&spec.workspace, &spec.tmp_dir]
        .into_iter()
        .chain(&spec.write_paths)
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect()
}

/// Walks `path` from `/`, checking every directory, symlink and the file it passes, and following
/// symlinks (their targets are walked the same way).
fn resolve(path: &Path, roots: &[PathBuf], links: &mut u32) -> Result<PathBuf, Untrusted> {
    let mut at = PathBuf::from("/");
    check_node(&at, &lstat(&at)?, roots)?;
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                at.pop();
            }
            Component::Normal(name) => {
                let next = at.join(name);
                let meta = lstat(&next)?;
                check_node(&next, &meta, roots)?;
                if meta.file_type().is_symlink() {
                    *links += 1;
                    if *links > MAX_LINKS {
                        return Err(writable(&next, "is a loop of symlinks".into()));
                    }
                    let target =
                        std::fs::read_link(&next).map_err(|source| Untrusted::Unreadable {
                            path: next.clone(),
                            source,
                        })?;
                    // A relative target resolves from the link's directory, `at`.
                    at = resolve(&at.join(target), roots, links)?;
                } else {
                    at = next;
                }
            }
        }
    }
    Ok(at)
}

fn lstat(path: &Path) -> Result<std::fs::Metadata, Untrusted> {
    std::fs::symlink_metadata(path).map_err(|source| Untrusted::Unreadable {
        path: path.to_path_buf(),
        source,
    })
}

fn writable(path: &Path, reason: String) -> Untrusted {
    Untrusted::Writable {
        path: path.to_path_buf(),
        reason,
    }
}

/// One component: root-owned, not writable by group or others (sticky directories excepted; the
/// next component's owner is checked in turn), and outside the writable roots.
fn check_node(path: &Path, meta: &std::fs::Metadata, roots: &[PathBuf]) -> Result<(), Untrusted> {
    if let Some(root) = roots.iter().find(|root| path.starts_with(root)) {
        return Err(writable(
            path,
            format!("lies under {}, which the call may write", root.display()),
        ));
    }
    if meta.uid() != 0 {
        return Err(writable(
            path,
            format!("is owned by uid {}, not root", meta.uid()),
        ));
    }
    let mode = meta.mode();
    let sticky_dir = meta.is_dir() && mode & 0o1000 != 0;
    if !meta.file_type().is_symlink() && mode & 0o022 != 0 && !sticky_dir {
        return Err(writable(
            path,
            format!(
                "is writable by group {} or others (mode {:o})",
                meta.gid(),
                mode & 0o7777
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

    use super::*;
    use protocol::worker::RunAs;

    fn spec(profile: SandboxProfile, require_landlock: bool, run_as: Option<u32>) -> SandboxSpec {
        let mut spec = crate::worker::default_sandbox("/ws".into(), "/tmp/t".into(), None);
        spec.profile = profile;
        spec.require_landlock = require_landlock;
        spec.run_as = run_as.map(|uid| RunAs {
            uid,
            gid: uid,
            groups: vec![],
        });
        spec
    }

    fn full() -> LockdownReport {
        LockdownReport {
            landlock_abi: Some(7),
            landlock: LandlockStatus::FullyEnforced,
            seccomp: true,
            no_new_privs: true,
            capabilities_cleared: true,
            containment: "pid namespace + cgroup v1".into(),
            mount_namespace: true,
            ipc_namespace: true,
            protected: vec![],
            protected_ids: vec![],
            uid: 1000,
            gid: 1000,
            warnings: vec![],
        }
    }

    #[test]
    fn the_namespaces_and_every_expected_protected_path_are_required() {
        let ws = spec(SandboxProfile::WorkspaceWrite, true, None);
        let mut r = full();
        r.ipc_namespace = false;
        r.mount_namespace = false;
        let err = verify_as(&ws, &r, true).unwrap_err().to_string();
        assert!(
            err.contains("IPC namespace") && err.contains("mount namespace"),
            "{err}"
        );
        let full_access = spec(SandboxProfile::FullAccess, true, None);
        let err = verify_as(&full_access, &r, true).unwrap_err().to_string();
        assert!(
            err.contains("IPC namespace") && !err.contains("mount namespace"),
            "full-access has no mount namespace to report: {err}"
        );
        let expected = vec![
            std::path::PathBuf::from("/ws/.git/hooks"),
            std::path::PathBuf::from("/ws/.git/config"),
        ];
        let mut r = full();
        r.protected = vec![expected[0].clone()];
        let err = verify_protected(&expected, &r).unwrap_err().to_string();
        assert!(
            err.contains("/ws/.git/config") && !err.contains("hooks"),
            "{err}"
        );
        r.protected.push(expected[1].clone());
        assert!(verify_protected(&expected, &r).is_ok());
    }

    #[test]
    fn each_missing_property_is_named() {
        use LandlockStatus::*;
        use SandboxProfile::*;
        let ws = WorkspaceWrite;
        // (case, profile, require_landlock, run_as, change to the full report, root, missing words)
        #[allow(clippy::type_complexity)]
        let cases: Vec<(
            &str,
            SandboxProfile,
            bool,
            Option<u32>,
            fn(&mut LockdownReport),
            bool,
            Vec<&str>,
        )> = vec![
            ("full report", ws, true, Some(1000), |_| {}, true, vec![]),
            (
                "no seccomp",
                ws,
                true,
                None,
                |r| r.seccomp = false,
                true,
                vec!["seccomp"],
            ),
            (
                "no nnp",
                ws,
                true,
                None,
                |r| r.no_new_privs = false,
                true,
                vec!["no_new_privs"],
            ),
            (
                "caps kept",
                ReadOnly,
                true,
                None,
                |r| r.capabilities_cleared = false,
                true,
                vec!["capability"],
            ),
            (
                "no containment",
                ws,
                true,
                None,
                |r| r.containment = " ".into(),
                true,
                vec!["containment"],
            ),
            (
                "partial landlock",
                ws,
                true,
                None,
                |r| r.landlock = PartiallyEnforced,
                true,
                vec!["Landlock fully enforced: the worker reports it partially"],
            ),
            (
                "no landlock",
                ReadOnly,
                true,
                None,
                |r| r.landlock = NotEnforced,
                true,
                vec!["Landlock fully enforced: the worker reports it not enforced"],
            ),
            (
                "partial, not required",
                ws,
                false,
                None,
                |r| r.landlock = PartiallyEnforced,
                true,
                vec![],
            ),
            (
                "none, not required",
                ws,
                false,
                None,
                |r| r.landlock = NotEnforced,
                true,
                vec![],
            ),
            (
                "not requested by a confining profile",
                ws,
                false,
                None,
                |r| r.landlock = NotRequested,
                true,
                vec![
                    "Landlock enforced as far as the kernel can: the worker reports it not requested",
                ],
            ),
            (
                "full-access asks none",
                FullAccess,
                true,
                None,
                |r| r.landlock = NotRequested,
                true,
                vec![],
            ),
            (
                "full-access keeps seccomp",
                FullAccess,
                true,
                None,
                |r| {
                    r.landlock = NotRequested;
                    r.seccomp = false
                },
                true,
                vec!["seccomp"],
            ),
            (
                "wrong uid",
                ws,
                true,
                Some(1001),
                |_| {},
                true,
                vec!["uid 1001 gid 1001: the worker reports uid 1000 gid 1000"],
            ),
            (
                "wrong gid",
                ws,
                true,
                Some(1000),
                |r| r.gid = 0,
                true,
                vec!["the worker reports uid 1000 gid 0"],
            ),
            (
                "run_as needs a root supervisor",
                ws,
                true,
                Some(1001),
                |_| {},
                false,
                vec![],
            ),
            (
                "everything missing",
                ws,
                true,
                Some(1000),
                |r| {
                    r.seccomp = false;
                    r.no_new_privs = false;
                    r.capabilities_cleared = false;
                    r.containment.clear();
                    r.landlock = NotEnforced;
                    r.uid = 0;
                },
                true,
                vec![
                    "seccomp",
                    "no_new_privs",
                    "capability",
                    "containment",
                    "Landlock",
                    "uid 1000",
                ],
            ),
        ];
        for (case, profile, require, run_as, change, root, want) in cases {
            let mut report = full();
            change(&mut report);
            let got = verify_as(&spec(profile, require, run_as), &report, root);
            match got {
                Ok(()) => assert!(want.is_empty(), "{case}: accepted, wanted {want:?}"),
                Err(shortfall) => {
                    assert_eq!(shortfall.missing.len(), want.len(), "{case}: {shortfall:?}");
                    for (missing, want) in shortfall.missing.iter().zip(&want) {
                        assert!(missing.contains(want), "{case}: {missing:?} lacks {want:?}");
                    }
                }
            }
        }
    }
}
