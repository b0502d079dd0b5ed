//! Setting up a case's confinement: the unprivileged user, the logging shims, ownership, and the
//! Landlock ruleset the command runs under.

use super::sandbox::{BASH, PASS_THROUGH, USER};
use std::collections::BTreeSet;
use std::fs;

use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The uid and gid to run as: the dedicated user when we are root (created if missing), none
/// (stay who we are) otherwise.
pub fn unprivileged_user() -> Result<Option<(u32, u32)>, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let lookup = || -> Result<Option<(u32, u32)>, String> {
        Ok(nix::unistd::User::from_name(USER)
            .map_err(|e| format!("looking up {USER}: {e}"))?
            .map(|u| (u.uid.as_raw(), u.gid.as_raw())))
    };
    if let Some(ids) = lookup()? {
        return Ok(Some(ids));
    }
    let out = Command::new("useradd")
        .args(["--system", "--no-create-home", "--home-dir", "/nonexistent"])
        .args(["--shell", "/usr/sbin/nologin", "--user-group", USER])
        .output()
        .map_err(|e| format!("useradd: {e}"))?;
    // 9: the user exists (another test process created it meanwhile).
    if !out.status.success() && out.status.code() != Some(9) {
        return Err(format!(
            "useradd {USER} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    lookup()?
        .ok_or_else(|| format!("{USER} still does not exist after useradd"))
        .map(Some)
}

/// Bash's builtin and keyword names, from bash itself.
pub fn bash_builtins() -> Result<BTreeSet<String>, String> {
    let out = Command::new(BASH)
        .args(["--noprofile", "--norc", "-c", "compgen -b; compgen -k"])
        .env_clear()
        .output()
        .map_err(|e| format!("{BASH}: {e}"))?;
    let names: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    if !names.contains("cd") || !names.contains("[[") {
        return Err(format!("compgen listed no builtins: {names:?}"));
    }
    Ok(names)
}

pub fn write_shim(dir: &Path, name: &str, log: &str, real: Option<&str>) -> Result<(), String> {
    let then = match real {
        Some(real) => format!("exec {real} \"$@\""),
        None => "exit 0".to_owned(),
    };
    // `-p`: no BASH_ENV, ENV, SHELLOPTS (so no trace of the shim itself) or imported functions.
    let text = format!(
        "#!/usr/bin/bash -p\n\
         # agentd differential-check shim: records name, directory, argv and environment.\n\
         l='{log}'/$BASHPID.$SRANDOM\n\
         {{ printf '%s\\0' \"${{0##*/}}\" \"$PWD\" \"$#\" \"$@\"\n  \
         while IFS= read -r -d '' e; do printf '%s\\0' \"$e\"; done < /proc/$BASHPID/environ\n\
         }} > \"$l\" 2>/dev/null\n\
         {then}\n"
    );
    let path = dir.join(name);
    fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))
}

pub fn chown(path: &Path, user: Option<(u32, u32)>) -> Result<(), String> {
    match user {
        Some((uid, gid)) => std::os::unix::fs::lchown(path, Some(uid), Some(gid))
            .map_err(|e| format!("chown {}: {e}", path.display())),
        None => Ok(()),
    }
}

pub fn chown_tree(path: &Path, user: Option<(u32, u32)>) -> Result<(), String> {
    if user.is_none() {
        return Ok(());
    }
    chown(path, user)?;
    let meta = fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.is_dir() {
        for entry in fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))? {
            let entry = entry.map_err(|e| e.to_string())?;
            chown_tree(&entry.path(), user)?;
        }
    }
    Ok(())
}

/// The Landlock ruleset of one sandbox, created in the parent and applied in the child: the
/// command may write only beneath `case`.
pub fn landlock_ruleset(case: &Path, shims: &Path) -> Result<OwnedFd, String> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope, path_beneath_rules,
    };
    let no = |e: landlock::RulesetError| {
        format!("Landlock: {e} — the differential check does not run commands unconfined")
    };
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let execute = AccessFs::from_read(ABI::V5);
    let write_dev = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    let loader = fs::canonicalize("/lib64/ld-linux-x86-64.so.2")
        .or_else(|_| fs::canonicalize("/lib/ld-linux-aarch64.so.1"))
        .map_err(|e| format!("the dynamic loader: {e}"))?;
    let mut programs: Vec<PathBuf> = vec![
        fs::canonicalize(BASH).map_err(|e| format!("{BASH}: {e}"))?,
        loader,
    ];
    for (_, real) in PASS_THROUGH {
        if let Ok(p) = fs::canonicalize(real) {
            programs.push(p);
        }
    }
    let created = Ruleset::default()
        // At least the file-system rights of ABI 3 (write, remove, truncate), or nothing runs.
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V3))
        .map_err(no)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI::V5))
        .map_err(no)?
        .handle_access(AccessNet::from_all(ABI::V4))
        .map_err(no)?
        .scope(Scope::from_all(ABI::V6))
        .map_err(no)?
        .create()
        .map_err(no)?
        .add_rules(path_beneath_rules(
            [
                "/usr", "/etc", "/proc", "/dev", "/lib", "/lib64", "/bin", "/sys",
            ],
            read,
        ))
        .map_err(no)?
        .add_rules(path_beneath_rules(["/dev/null"], write_dev))
        .map_err(no)?
        .add_rules(path_beneath_rules(&programs, execute))
        .map_err(no)?
        .add_rules(path_beneath_rules([shims], execute))
        .map_err(no)?
        .add_rules(path_beneath_rules([case], AccessFs::from_all(ABI::V5)))
        .map_err(no)?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| {
        "Landlock is not supported by this kernel: nothing is run unconfined".to_owned()
    })
}
