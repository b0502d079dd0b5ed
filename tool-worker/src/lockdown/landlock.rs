//! The filesystem and network view, enforced by Landlock.
//!
//! Rules only add access, so secrets inside a readable tree are kept out by granting that tree's
//! other entries one by one: `/etc` is granted entry by entry, minus [`ETC_SECRETS`].

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use protocol::worker::{LandlockStatus, SandboxProfile, SandboxSpec};
use std::path::{Path, PathBuf};

/// The newest ABI whose rights we ask for; older kernels get what they support (best effort).
const TARGET_ABI: ABI = ABI::V7;

/// System trees readable and executable in every profile.
pub const SYSTEM_PATHS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc",
];

/// Entries of `/etc` a tool may read: what the C library, shells, compilers, interpreters, git
/// and TLS clients look for. An allowlist, not "everything but the secrets": `/etc` also holds
/// service configs with passwords (databases, web servers), which no tool call needs. More can be
/// granted per installation with `sandbox.read_paths`.
pub const ETC_READABLE: &[&str] = &[
    "passwd",
    "group",
    "hosts",
    "hostname",
    "resolv.conf",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "services",
    "protocols",
    "networks",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "locale.alias",
    "locale.gen",
    "locale.conf",
    "default/locale",
    "alternatives",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "pki/tls/certs",
    "mime.types",
    "magic",
    "magic.mime",
    "os-release",
    "debian_version",
    "lsb-release",
    "issue",
    "bash.bashrc",
    "profile",
    "profile.d",
    "environment",
    "inputrc",
    "shells",
    "terminfo",
    "gitconfig",
    "npmrc",
    "pip.conf",
    "python3",
    "perl",
    "vim",
    "java-17-openjdk",
    "maven",
    "manpath.config",
    "machine-id",
    "mtab",
    "login.defs",
    "fonts",
    "xdg",
    "sgml",
    "xml",
    "subuid",
    "subgid",
    "ssh/ssh_config",
    "ssh/ssh_config.d",
    "ssh/ssh_known_hosts",
    "mke2fs.conf",
];

/// Entries of `/etc` that must never be readable; the allowlist above must not grant them (a
/// unit test checks it), even to a root-owned worker.
pub const ETC_SECRETS: &[&str] = &[
    "shadow",
    "gshadow",
    "sudoers",
    "sudoers.d",
    "ssh",
    "ssl/private",
    "agentd",
    "security",
];

/// Devices a tool may read and write.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Why Landlock could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    /// The ruleset could not be built or enforced.
    #[error("{0}")]
    Ruleset(#[from] landlock::RulesetError),
    /// The kernel has no Landlock and the configuration requires it.
    #[error(
        "this kernel does not enforce Landlock (is it enabled in the `lsm=` boot parameter?); refusing to run tools without it. Set sandbox.require_landlock = false to accept the risk"
    )]
    Unsupported,
}

/// The kernel's Landlock ABI version, or `None` without Landlock.
pub fn kernel_abi() -> Option<u32> {
    // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION flag only
    // returns the ABI version (or an error); it reads and writes no memory of ours.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    u32::try_from(v).ok().filter(|v| *v > 0)
}

/// What a fixed path grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Read (and execute).
    Read,
    /// Read and write, not create: the devices.
    Device,
}

/// A path opened for a rule: its descriptor (`O_PATH`), and whether it is a directory (a file's
/// rule may only carry file rights).
#[derive(Debug)]
pub struct Opened {
    /// The descriptor; the rule is for its inode.
    pub fd: PathFd,
    /// Whether it is a directory.
    pub is_dir: bool,
}

/// A fixed path opened ahead of the call (see [`super::warm`]).
#[derive(Debug)]
pub struct Fixed {
    /// The opened path.
    pub opened: Opened,
    /// What it grants.
    pub grant: Grant,
}

/// The paths every call's ruleset grants whatever its spec: the system trees, the `/etc`
/// allowlist as this machine has it, the devices. Not `/proc`: each call mounts its own.
pub fn fixed_paths() -> Vec<(PathBuf, Grant)> {
    SYSTEM_PATHS
        .iter()
        .filter(|p| **p != PER_CALL_PROC)
        .map(|p| (PathBuf::from(p), Grant::Read))
        .chain(etc_paths().into_iter().map(|p| (p, Grant::Read)))
        .chain(DEVICES.iter().map(|p| (PathBuf::from(p), Grant::Device)))
        .collect()
}

/// The call's own procfs: a new inode per call, so never opened ahead.
const PER_CALL_PROC: &str = "/proc";

/// Opens the fixed paths; those this machine lacks are left out.
pub fn open_fixed() -> Vec<Fixed> {
    open_all(fixed_paths())
}

/// Opens `paths`; those that do not exist are left out.
pub fn open_all(paths: Vec<(PathBuf, Grant)>) -> Vec<Fixed> {
    paths
        .into_iter()
        .filter_map(|(path, grant)| open(&path).map(|opened| Fixed { opened, grant }))
        .collect()
}

/// Opens `path` for a rule; `None` when it does not exist here (it grants nothing then).
fn open(path: &Path) -> Option<Opened> {
    let fd = PathFd::new(path).ok()?;
    // On the descriptor: no second walk of the path.
    let is_dir = nix::sys::stat::fstat(&fd).is_ok_and(|st| {
        nix::sys::stat::SFlag::from_bits_truncate(st.st_mode) & nix::sys::stat::SFlag::S_IFMT
            == nix::sys::stat::SFlag::S_IFDIR
    });
    Some(Opened { fd, is_dir })
}

/// Adds one rule for `opened`, narrowed to file rights for a file. Consumes (closes) the
/// descriptor.
fn add(
    ruleset: landlock::RulesetCreated,
    opened: Opened,
    access: landlock::BitFlags<AccessFs>,
) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
    let access = if opened.is_dir {
        access
    } else {
        access & AccessFs::from_file(TARGET_ABI)
    };
    ruleset.add_rule(PathBeneath::new(opened.fd, access))
}

fn add_paths(
    ruleset: landlock::RulesetCreated,
    paths: impl IntoIterator<Item = PathBuf>,
    access: landlock::BitFlags<AccessFs>,
) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
    paths
        .into_iter()
        .filter_map(|path| open(&path))
        .try_fold(ruleset, |ruleset, opened| add(ruleset, opened, access))
}

/// The readable entries of `/etc` that exist here (with `python3.11`-style versioned siblings).
fn etc_paths() -> Vec<PathBuf> {
    let etc = Path::new("/etc");
    let mut out: Vec<PathBuf> = ETC_READABLE.iter().map(|p| etc.join(p)).collect();
    // Versioned directories (python3.11, java-21-openjdk) whose names we cannot know in advance.
    if let Ok(dir) = std::fs::read_dir(etc) {
        for entry in dir.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("python3.")
                || (name.starts_with("java-") && name.ends_with("-openjdk"))
            {
                out.push(entry.path());
            }
        }
    }
    out
}

/// Builds and enforces the ruleset for `spec`. `private_shm`: `/dev/shm` is the call's own
/// (the mount namespace made it), so it is writable like the temp dir. Returns what was achieved.
/// `fixed`: the fixed paths opened ahead by the zygote, else they are opened here.
pub fn enforce(
    spec: &SandboxSpec,
    private_shm: bool,
    fixed: Option<Vec<Fixed>>,
) -> Result<(LandlockStatus, Option<u32>), LandlockError> {
    let abi = kernel_abi();
    if spec.profile == SandboxProfile::FullAccess {
        return Ok((LandlockStatus::NotRequested, abi));
    }
    if abi.is_none() {
        return if spec.require_landlock {
            Err(LandlockError::Unsupported)
        } else {
            Ok((LandlockStatus::NotEnforced, None))
        };
    }
    let read = AccessFs::from_read(TARGET_ABI);
    let all = AccessFs::from_all(TARGET_ABI);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?;
    if !spec.network {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    ruleset = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    let mut created = ruleset.create()?;
    for Fixed { opened, grant } in fixed.unwrap_or_else(open_fixed) {
        let access = match grant {
            Grant::Read => read,
            Grant::Device => read | AccessFs::WriteFile,
        };
        created = add(created, opened, access)?;
    }
    created = add_paths(created, [PathBuf::from(PER_CALL_PROC)], read)?;
    created = add_paths(created, spec.read_paths.iter().cloned(), read)?;
    created = add_paths(created, [spec.tmp_dir.clone()], all)?;
    if private_shm {
        created = add_paths(created, [PathBuf::from("/dev/shm")], all)?;
    }
    let workspace_access = match spec.profile {
        SandboxProfile::ReadOnly => read,
        _ => all,
    };
    created = add_paths(created, [spec.workspace.clone()], workspace_access)?;
    if spec.profile != SandboxProfile::ReadOnly {
        created = add_paths(created, spec.write_paths.iter().cloned(), all)?;
    }
    let status = created.restrict_self()?;
    let achieved = match status.ruleset {
        RulesetStatus::FullyEnforced => LandlockStatus::FullyEnforced,
        RulesetStatus::PartiallyEnforced => LandlockStatus::PartiallyEnforced,
        RulesetStatus::NotEnforced => LandlockStatus::NotEnforced,
    };
    if achieved == LandlockStatus::NotEnforced && spec.require_landlock {
        return Err(LandlockError::Unsupported);
    }
    Ok((achieved, abi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_etc_allowlist_grants_no_secret() {
        for granted in ETC_READABLE {
            for secret in ETC_SECRETS {
                let exposes = granted == secret
                    || granted.starts_with(&format!("{secret}/"))
                        && !["ssh/ssh_config", "ssh/ssh_config.d", "ssh/ssh_known_hosts"]
                            .contains(granted);
                assert!(!exposes, "/etc/{granted} exposes /etc/{secret}");
            }
        }
        assert!(
            !ETC_READABLE.contains(&"shadow") && !ETC_READABLE.iter().any(|p| p.contains("key"))
        );
    }
}
