//! Where the control socket is and who may connect to it.
//!
//! * System mode (agentd runs as root): `/run/agentd/agentd.sock`, mode 0660, group `agentd`
//!   (0600 if there is no such group), state in `/var/lib/agentd`.
//! * User mode: `$XDG_RUNTIME_DIR/agentd/agentd.sock` in a 0700 directory, mode 0600, state in
//!   `$XDG_STATE_HOME/agentd`.
//! * Socket activation: when `LISTEN_PID` is this process and `LISTEN_FDS` ≥ 1, descriptor 3 is
//!   the listening socket systemd made (its unit decides path and mode).
//!
//! The socket is bound with a umask that leaves it private, then given its mode and group, so
//! there is no moment at which another user could connect. A path that exists is replaced only
//! when it is a socket nobody listens on (a previous agentd that died); a live socket or anything
//! else is an error naming the path.

use std::os::fd::FromRawFd;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where the socket and the state live by default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defaults {
    /// The socket.
    pub socket: PathBuf,
    /// The state directory.
    pub state_dir: PathBuf,
    /// Whether this is the system service.
    pub system: bool,
}

/// The defaults for this process: system mode as root, else user mode.
pub fn defaults() -> Result<Defaults, String> {
    if nix::unistd::geteuid().is_root() {
        return Ok(Defaults {
            socket: "/run/agentd/agentd.sock".into(),
            state_dir: "/var/lib/agentd".into(),
            system: true,
        });
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .ok_or("XDG_RUNTIME_DIR is not set: pass --socket PATH")?;
    let state_dir = crate::store::Store::default_dir()
        .ok_or("neither XDG_STATE_HOME nor HOME is set: pass --state-dir DIR")?;
    Ok(Defaults {
        socket: runtime.join("agentd/agentd.sock"),
        state_dir,
        system: false,
    })
}

/// The listening socket systemd passed, if this process was socket-activated. The variables are
/// removed either way, so no child inherits them.
pub fn activated() -> Option<std::os::unix::net::UnixListener> {
    let pid = std::env::var("LISTEN_PID").ok()?;
    let fds = std::env::var("LISTEN_FDS").ok()?;
    // SAFETY: called at start-up, before the runtime or any other thread reads the environment.
    unsafe {
        std::env::remove_var("LISTEN_PID");
        std::env::remove_var("LISTEN_FDS");
        std::env::remove_var("LISTEN_FDNAMES");
    }
    if pid.parse::<u32>().ok()? != std::process::id() || fds.parse::<u32>().ok()? < 1 {
        return None;
    }
    // SAFETY: systemd passes the listening socket as descriptor 3 (SD_LISTEN_FDS_START) and
    // nothing else in this process owns it.
    let listener = unsafe { std::os::unix::net::UnixListener::from_raw_fd(3) };
    Some(listener)
}

/// Binds the socket at `path`: its directory made if missing (0700 in user mode, 0755 in system
/// mode, where the socket's own mode guards it), the socket private while it is bound, then given
/// `mode` and, in system mode, the `agentd` group.
pub fn bind(path: &Path, system: bool) -> Result<std::os::unix::net::UnixListener, String> {
    let at = |e: std::io::Error, what: &str| format!("{what} {}: {e}", path.display());
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(if system { 0o755 } else { 0o700 })
            .create(dir)
            .map_err(|e| at(e, "cannot make the directory of"))?;
    }
    clear_stale(path)?;
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let bound = std::os::unix::net::UnixListener::bind(path);
    nix::sys::stat::umask(old);
    let listener = bound.map_err(|e| at(e, "cannot listen on"))?;
    let group = system
        .then(|| nix::unistd::Group::from_name("agentd").ok().flatten())
        .flatten();
    let mode = match &group {
        Some(g) => {
            nix::unistd::chown(path, None, Some(g.gid))
                .map_err(|e| at(e.into(), "cannot chown"))?;
            0o660
        }
        None => 0o600,
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| at(e, "cannot set the mode of"))?;
    Ok(listener)
}

fn clear_stale(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Err(format!(
            "{} exists and is not a socket: move it away or pass another --socket",
            path.display()
        ));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(format!(
            "another agentd is already listening on {}",
            path.display()
        ));
    }
    std::fs::remove_file(path)
        .map_err(|e| format!("cannot remove the stale socket {}: {e}", path.display()))
}
