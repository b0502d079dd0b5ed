//! A file in the workspace, read by the client for the person at the terminal (the file a
//! `write_file` would replace, for its diff; the demo's result) — never steered by what the
//! model made there.
//!
//! The workspace is the model's to write. Where a file was, it can leave a FIFO (`open()` for
//! reading waits for a writer, forever, in a thread Ctrl-C cannot reach), a symlink to a file of
//! the user's outside the workspace, a device that never ends, or a file of gigabytes. So every
//! such read is [`read`]: one `openat2` below the workspace that refuses a symlink in any
//! component (`RESOLVE_NO_SYMLINKS`) and any way out of it (`RESOLVE_BENEATH`), with
//! `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC` (a FIFO opens at once instead of waiting, a
//! terminal is not taken as the controlling one); then `fstat` on what was opened decides: only
//! a regular file is read, and only up to a bound. What it refuses comes back as a [`Refused`]
//! whose words say why, for the screen.
//!
//! Not for the supervisor's own state (its store, its config): those are not the model's.

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::{Mode, SFlag, fstat};
use std::io::Read;
use std::path::Path;

/// Why a workspace file was not read. The words are shown as they are ("not compared with the
/// file now: {why}").
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// A symlink in the path, in its last component or on the way.
    #[error("a symlink")]
    Symlink,
    /// Something other than a regular file: a FIFO, a device, a socket, a directory.
    #[error("{0}, not a regular file")]
    NotRegular(&'static str),
    /// More than the bound.
    #[error("larger than {}", size(*.0))]
    TooLarge(u64),
    /// An absolute path elsewhere, or `..` out of the workspace.
    #[error("outside the workspace")]
    Outside,
    /// Bytes that are not UTF-8 text.
    #[error("not UTF-8 text")]
    NotText,
    /// A kernel without `openat2` (before 5.6): there is no safe way to open it.
    #[error("this kernel has no openat2 to open it safely")]
    NoOpenat2,
    /// Any other failure to open or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The text of the regular file at `path` (relative to `root`, or absolute inside it), at most
/// `max` bytes; `Ok(None)` when there is nothing there (a file about to be created). Never
/// blocks, never follows a symlink, never leaves `root`.
pub fn read(root: &Path, path: &Path, max: u64) -> Result<Option<String>, Refused> {
    let relative = match path.strip_prefix(root) {
        Ok(inside) => inside,
        Err(_) if path.is_absolute() => return Err(Refused::Outside),
        Err(_) => path,
    };
    // The root is the user's own choice (the canonical workspace): it is opened as it is.
    let dir = nix::fcntl::open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Refused::Io(e.into()))?;
    let name = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    let how = OpenHow::new()
        .flags(
            OFlag::O_RDONLY
                | OFlag::O_NOFOLLOW
                | OFlag::O_NONBLOCK
                | OFlag::O_NOCTTY
                | OFlag::O_CLOEXEC,
        )
        .resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        );
    let fd = match openat2(&dir, name, how) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(None),
        Err(Errno::ELOOP) => return Err(Refused::Symlink),
        Err(Errno::EXDEV) => return Err(Refused::Outside),
        Err(Errno::ENXIO) => return Err(Refused::NotRegular("a socket")),
        Err(Errno::ENOSYS) => return Err(Refused::NoOpenat2),
        Err(e) => return Err(Refused::Io(e.into())),
    };
    let st = fstat(&fd).map_err(|e| Refused::Io(e.into()))?;
    if let Some(what) = not_regular(st.st_mode) {
        return Err(Refused::NotRegular(what));
    }
    if u64::try_from(st.st_size).unwrap_or(u64::MAX) > max {
        return Err(Refused::TooLarge(max));
    }
    // It may have grown since the fstat: read one byte past the bound to know.
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(Refused::TooLarge(max));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Refused::NotText)
}

/// What the file is in words, if it is not a regular file.
fn not_regular(mode: libc::mode_t) -> Option<&'static str> {
    let kind = SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits());
    Some(match kind {
        SFlag::S_IFREG => return None,
        SFlag::S_IFIFO => "a FIFO",
        SFlag::S_IFCHR => "a character device",
        SFlag::S_IFBLK => "a block device",
        SFlag::S_IFSOCK => "a socket",
        SFlag::S_IFDIR => "a directory",
        _ => "something",
    })
}

/// A size in words: `256 KiB`, `3 MiB`, `100 bytes`.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A fresh directory, removed on drop.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("agentd-wsfile-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            Self(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn words(r: Result<Option<String>, Refused>) -> String {
        match r {
            Ok(text) => format!("read {text:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_normal_file_is_read_by_a_relative_or_an_absolute_path_and_a_missing_one_is_none() {
        let s = Scratch::new("normal");
        std::fs::create_dir(s.0.join("src")).unwrap_or_default();
        std::fs::write(s.0.join("src/a.py"), "print(1)\n").unwrap_or_default();
        let text = read(&s.0, Path::new("src/a.py"), 1024).ok().flatten();
        assert_eq!(text.as_deref(), Some("print(1)\n"));
        let text = read(&s.0, &s.0.join("src/a.py"), 1024).ok().flatten();
        assert_eq!(text.as_deref(), Some("print(1)\n"));
        assert!(matches!(read(&s.0, Path::new("new.py"), 1024), Ok(None)));
    }

    #[test]
    fn a_fifo_is_refused_at_once_without_waiting_for_a_writer() {
        let s = Scratch::new("fifo");
        nix::unistd::mkfifo(&s.0.join("pipe"), Mode::from_bits_truncate(0o600))
            .unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        let got = words(read(&s.0, Path::new("pipe"), 1024));
        assert_eq!(got, "a FIFO, not a regular file");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_symlink_is_not_followed_in_the_last_component_nor_on_the_way() {
        let s = Scratch::new("symlink");
        let outside = Scratch::new("symlink-outside");
        std::fs::write(outside.0.join("secret"), "TOKEN").unwrap_or_default();
        std::fs::write(s.0.join("real"), "ok").unwrap_or_default();
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, s.0.join(name)).unwrap_or_else(|e| panic!("{e}"))
        };
        link(&outside.0.join("secret"), "leak");
        link(&outside.0, "dir");
        link(Path::new("real"), "inside");
        for name in ["leak", "dir/secret", "inside"] {
            assert_eq!(
                words(read(&s.0, Path::new(name), 1024)),
                "a symlink",
                "{name}"
            );
        }
        for name in ["../symlink-outside/secret", "/etc/hostname"] {
            let path = Path::new(name);
            assert_eq!(words(read(&s.0, path, 1024)), "outside the workspace");
        }
    }

    #[test]
    fn a_device_is_refused_without_reading_it() {
        // /dev/zero would never end; it is not even read.
        let got = words(read(Path::new("/dev"), Path::new("zero"), 1024));
        assert_eq!(got, "a character device, not a regular file");
        let got = words(read(Path::new("/"), Path::new("dev"), 1024));
        assert_eq!(got, "a directory, not a regular file");
    }

    #[test]
    fn a_file_over_the_bound_is_refused_and_one_at_it_is_read() {
        let s = Scratch::new("big");
        std::fs::write(s.0.join("big"), vec![b'x'; 300 * 1024]).unwrap_or_default();
        let got = words(read(&s.0, Path::new("big"), 256 * 1024));
        assert_eq!(got, "larger than 256 KiB");
        std::fs::write(s.0.join("edge"), "12345").unwrap_or_default();
        assert_eq!(
            words(read(&s.0, Path::new("edge"), 5)),
            r#"read Some("12345")"#
        );
        assert_eq!(
            words(read(&s.0, Path::new("edge"), 4)),
            "larger than 4 bytes"
        );
        std::fs::write(s.0.join("bin"), [0xff, 0xfe, 0]).unwrap_or_default();
        assert_eq!(words(read(&s.0, Path::new("bin"), 16)), "not UTF-8 text");
    }
}
