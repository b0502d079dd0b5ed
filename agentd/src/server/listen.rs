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
/// mode, where the socket's own mode guards it); the socket is bound under a staging name,
/// private, given its mode and, in system mode, the `agentd` group, made to listen, and only
/// then renamed to `path` (never over an existing one).
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
    // Bound under a name of its own, given its owner and mode, listening, and only then moved to
    // `path`: a client that connects as soon as the path exists (a test granting the socket to
    // another user) neither races a mode set after it nor finds a socket not yet listening.
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staged = path.with_file_name(format!(".{name}.{}.new", std::process::id()));
    let _ = std::fs::remove_file(&staged);
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let bound = bind_unlistened(&staged);
    nix::sys::stat::umask(old);
    let socket = bound.map_err(|e| at(e, "cannot bind"))?;
    let placed = (|| {
        set_owner_and_mode(&staged, system).map_err(|e| at(e, "cannot set the mode of"))?;
        nix::sys::socket::listen(&socket, nix::sys::socket::Backlog::MAXCONN)
            .map_err(|e| at(e.into(), "cannot listen on"))?;
        nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            &staged,
            nix::fcntl::AT_FDCWD,
            path,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        )
        .map_err(|e| at(e.into(), "cannot put the socket at"))
    })();
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&staged);
        return Err(e);
    }
    Ok(std::os::unix::net::UnixListener::from(socket))
}

/// The socket's group (`agentd`, in system mode, when it exists) and mode (0660 with the group,
/// else 0600).
fn set_owner_and_mode(path: &Path, system: bool) -> std::io::Result<()> {
    let group = system
        .then(|| nix::unistd::Group::from_name("agentd").ok().flatten())
        .flatten();
    let mode = match &group {
        Some(g) => {
            nix::unistd::chown(path, None, Some(g.gid))?;
            0o660
        }
        None => 0o600,
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// A Unix stream socket bound to `path`, not yet listening.
fn bind_unlistened(path: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, socket};
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    nix::sys::socket::bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &UnixAddr::new(path)?)?;
    Ok(fd)
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
