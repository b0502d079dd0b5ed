//! Reading the [`View`] a call gets from its spec and the machine: which directories exist to be
//! hidden, which roots exist (and whether the host has them read-only), and which protected paths
//! exist inside the writable roots.

use super::MountError;
use super::plan::{Root, View};
use super::within::Within;
use protocol::worker::{SandboxProfile, SandboxSpec};
use std::path::{Component, Path, PathBuf};

/// Directories hidden behind an empty, read-only tmpfs: homes (root's and every user's), the
/// shared temp dirs another local user can write to, mounted media, spools and agentd's own
/// config and state. Landlock already refuses reading them; hidden, they cannot be listed,
/// watched (inotify) or probed with `stat` either. A writable root or read path under one of them
/// is carried over into the empty mount.
///
/// `/var`, `/run` and `/sys` are outside Landlock's view as a whole, so hiding them costs a tool
/// nothing, and stops inotify watches there (Landlock does not cover inotify): sessions' tokens
/// created under `/run`, logs under `/var/log`. `/etc/resolv.conf`, often a symlink into `/run`,
/// is carried over.
pub const HIDDEN: &[&str] = &[
    "/home",
    "/root",
    "/tmp",
    "/var",
    "/run",
    "/sys",
    "/mnt",
    "/media",
    "/srv",
    "/etc/agentd",
];

/// The directories at the top of the tree that are neither on [`HIDDEN`] nor what a tool may
/// read at all (Landlock grants the system trees, `/etc`'s allowlist and `/dev`'s devices): a
/// site's `/work` or `/data` with other people's projects, `/boot`, `/lost+found`. Landlock
/// refuses reading them already; hidden, their names cannot be probed with `stat` or watched
/// with inotify either. A writable root or read path inside one is carried over, as for `/tmp`.
fn unlisted_top_level() -> Vec<PathBuf> {
    let visible = |name: &std::ffi::OsStr| {
        let path = Path::new("/").join(name);
        crate::lockdown::landlock::SYSTEM_PATHS
            .iter()
            .chain(&["/etc", "/dev"])
            .chain(HIDDEN)
            .any(|v| Path::new(v) == path)
    };
    let Ok(entries) = std::fs::read_dir("/") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && !visible(&e.file_name()))
        .map(|e| e.path())
        .collect()
}

/// Most protected paths and pins a call gets. Each is a mount; a workspace with thousands of
/// submodule directories would make lockdown slow, so the call is refused with the count instead.
pub const MAX_PROTECTED: usize = 1024;

/// Upper bound of the private `/dev/shm`; the spec's memory limit when lower.
const SHM_MAX_BYTES: u64 = 1 << 30;

/// The protected paths that exist now in `spec`'s writable roots, by *name*: each relative to
/// the root it is in, symlinks not resolved (a symlink named `.vscode` is `.vscode`, whatever it
/// points to). What the supervisor's check after a call compares and moves aside.
pub fn protected_names(spec: &SandboxSpec) -> Vec<(PathBuf, PathBuf)> {
    if spec.profile != SandboxProfile::WorkspaceWrite {
        return Vec::new();
    }
    let within = within(spec);
    let mut out = Vec::new();
    for root in std::iter::once(&spec.workspace).chain(&spec.write_paths) {
        if !within.enterable(root) {
            continue;
        }
        for path in found_in(spec, root, &within).paths {
            if let Ok(rel) = path.strip_prefix(root)
                && !rel.as_os_str().is_empty()
                && rel.components().all(|c| matches!(c, Component::Normal(_)))
            {
                out.push((root.clone(), rel.to_path_buf()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The existing paths under `root` that are protected: the spec's patterns, and where git
/// takes config and hooks from besides ([`super::gitconfig::redirects`]). Symlinks not resolved;
/// nothing outside `within` looked at.
fn found_in(spec: &SandboxSpec, root: &Path, within: &Within) -> super::gitconfig::Found {
    // The owner's configs, and what they include, are read with the owner's rights: as root they
    // would be an oracle on every file of the machine (`super::as_owner`).
    let _as_owner = match super::as_owner::assume(spec.run_as.as_ref()) {
        Ok(guard) => guard,
        Err(e) => {
            return super::gitconfig::Found {
                paths: Vec::new(),
                unreadable: vec![(root.to_path_buf(), e.to_string())],
            };
        }
    };
    let home = env_path(spec, "HOME");
    let globals = super::gitconfig::user_configs(home, env_path(spec, "XDG_CONFIG_HOME"));
    // The root listed once for the scan: every pattern's first component and the `.git`s a
    // level down (one `getdents` instead of a `stat` per pattern and a listing per glob).
    let listing = super::gitconfig::listing(root);
    let mut found = super::gitconfig::redirects(root, &listing, &globals, home, within);
    found.paths.extend(
        spec.protected_paths
            .iter()
            .flat_map(|pattern| expand_listed(root, pattern, within, Some(&listing))),
    );
    // Every repository deeper down that the supervisor's walk found gets what the root's has:
    // the same scan, and the patterns of its git directory (`.git/…`).
    for repo in spec
        .repositories
        .iter()
        .filter(|r| r.starts_with(root) && r.as_path() != root && within.enterable(r))
    {
        let listing = super::gitconfig::listing(repo);
        let nested = super::gitconfig::redirects(repo, &listing, &globals, home, within);
        found.paths.extend(nested.paths);
        found.unreadable.extend(nested.unreadable);
        found.paths.extend(
            spec.protected_paths
                .iter()
                .filter(|pattern| pattern.starts_with(".git/"))
                .flat_map(|pattern| expand_listed(repo, pattern, within, Some(&listing))),
        );
    }
    found
}

/// Where `spec`'s scans may look: its writable roots (the workspace always: a read-only
/// session's workspace was another's writable one).
fn within(spec: &SandboxSpec) -> Within {
    Within::new(
        std::iter::once(spec.workspace.as_path())
            .chain(writable_paths(spec))
            .collect::<Vec<_>>(),
    )
}

/// The value of `name` in the tools' environment, as a path.
fn env_path<'a>(spec: &'a SandboxSpec, name: &str) -> Option<&'a Path> {
    spec.env
        .iter()
        .find(|v| v.name == name)
        .map(|v| Path::new(v.value.as_str()))
        .filter(|p| p.is_absolute())
}

/// The protected paths that exist now in `spec`'s writable roots: what a worker locked down now
/// would make read-only. The supervisor compares it with a waiting worker's report, so a path
/// created after that worker was locked down (`git init` in an earlier call) is not left
/// writable, and with a call's report, to say what the call created.
pub fn protected_now(spec: &SandboxSpec) -> Vec<PathBuf> {
    if spec.profile == SandboxProfile::FullAccess {
        return Vec::new();
    }
    let writable: Vec<Root> = writable_paths(spec).into_iter().filter_map(root).collect();
    protected_in(spec, &writable, &within(spec)).protected
}

fn writable_paths(spec: &SandboxSpec) -> Vec<&Path> {
    match spec.profile {
        SandboxProfile::ReadOnly => vec![spec.tmp_dir.as_path()],
        _ => std::iter::once(spec.workspace.as_path())
            .chain(std::iter::once(spec.tmp_dir.as_path()))
            .chain(spec.write_paths.iter().map(PathBuf::as_path))
            .collect(),
    }
}

impl View {
    /// The writable roots of this view, canonical (what configured paths are resolved against).
    pub fn roots(&self, spec: &SandboxSpec) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = self.writable.iter().map(|r| r.path.clone()).collect();
        roots.extend(within(spec).roots().iter().cloned());
        roots
    }

    /// The view `spec` asks for, as this machine has it; refused when a configured path leads
    /// through a symlink a call could have made, or a git config that decides what is
    /// protected cannot be read.
    pub fn read(spec: &SandboxSpec) -> Result<View, MountError> {
        let bases = within(spec);
        let configured = |path: &Path| -> Result<Option<Root>, MountError> {
            if !spec
                .write_paths
                .iter()
                .chain(&spec.read_paths)
                .any(|p| p == path)
            {
                return Ok(root(path));
            }
            match super::resolve::resolve(path, bases.roots()) {
                Ok(resolved) => Ok(resolved.and_then(|r| root(&r))),
                Err(steered) => Err(MountError {
                    what: "a configured path leads through a symlink inside a writable root",
                    path: path.to_path_buf(),
                    source: std::io::Error::other(format!(
                        "{steered}: remove it, or configure the path it points to"
                    )),
                }),
            }
        };
        let mut readable_paths: Vec<&Path> = spec.read_paths.iter().map(PathBuf::as_path).collect();
        if spec.profile == SandboxProfile::ReadOnly {
            readable_paths.push(&spec.workspace);
        }
        // Resolved by `root` below: a symlink into /run (systemd-resolved) is carried over.
        readable_paths.push(Path::new("/etc/resolv.conf"));
        let mut writable = Vec::new();
        for path in writable_paths(spec) {
            writable.extend(configured(path)?);
        }
        let mut readable = Vec::new();
        for path in readable_paths {
            readable.extend(configured(path)?);
        }
        let kept: Vec<&Path> = writable
            .iter()
            .chain(&readable)
            .map(|r| r.path.as_path())
            .collect();
        let hidden = HIDDEN
            .iter()
            .map(PathBuf::from)
            .chain(unlisted_top_level())
            .filter(|h| std::fs::symlink_metadata(h).is_ok_and(|m| m.is_dir()))
            // Hidden even when empty: another user may create files there during the call, and
            // telling empty from not would read the directory (for a /tmp of a few hundred
            // entries, ext4 sorts them all by hash: more CPU than the tmpfs mount it saves).
            // A hidden dir inside (or equal to) a kept path would take away what was granted.
            .filter(|h| !kept.iter().any(|k| h.starts_with(k)))
            .collect();
        let Protected {
            protected,
            pins,
            unreadable,
        } = protected_in(spec, &writable, &bases);
        if let Some(linked) = protected.iter().find_map(|p| hard_linked(p)) {
            return Err(MountError {
                what: "a protected file has another name",
                path: linked,
                source: std::io::Error::other(
                    "it has more than one hard link, and a link outside the protected path stays writable: remove the other links (`find . -samefile FILE`)",
                ),
            });
        }
        if let Some((path, why)) = unreadable.into_iter().next() {
            return Err(MountError {
                what: "a git file that decides what is protected could not be read",
                path,
                source: std::io::Error::other(format!(
                    "{why}: git would read it, so the call is refused rather than run with what it names left writable"
                )),
            });
        }
        let writable_mounts = writable_mounts(&writable);
        Ok(View {
            hidden,
            writable,
            writable_mounts,
            readable,
            protected,
            pins,
            shm: Path::new("/dev/shm").is_dir(),
            shm_bytes: spec.limits.memory_bytes.min(SHM_MAX_BYTES),
        })
    }
}

/// `path` if it is a regular file with more than one name, or the first such file directly in
/// the directory `path` (a hook in `.git/hooks`): a read-only mount covers one name, and a link
/// made while the path was not yet protected (in the call that ran `git init`) would let the
/// next call write through the other.
fn hard_linked(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let linked =
        |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.nlink() > 1);
    if linked(path) {
        return Some(path.to_path_buf());
    }
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .take(MAX_LISTED)
        .map(|e| e.path())
        .find(|p| linked(p))
}

/// Most entries of a protected directory looked at for hard links.
const MAX_LISTED: usize = 1024;

/// `path` as a root, if it exists.
fn root(path: &Path) -> Option<Root> {
    let path = path.canonicalize().ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    Some(Root {
        host_read_only: nix::sys::statvfs::statvfs(&path)
            .is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY)),
        is_dir: meta.is_dir(),
        path,
    })
}

/// What [`protected_in`] found.
#[derive(Debug, Default)]
pub struct Protected {
    /// The protected paths that exist inside the writable roots (canonical, deduplicated,
    /// sorted).
    pub protected: Vec<PathBuf>,
    /// The directories between each and its root that pin it in place.
    pub pins: Vec<PathBuf>,
    /// Git configs that exist but could not be read, and why.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// The protected paths that exist inside the writable roots, the pins that hold them in place,
/// and the configs that could not be read; the scans look only `within`.
pub fn protected_in(spec: &SandboxSpec, writable: &[Root], within: &Within) -> Protected {
    let tmp = spec.tmp_dir.canonicalize().ok();
    let mut protected = Vec::new();
    let mut unreadable = Vec::new();
    for root in writable.iter().filter(|r| r.is_dir) {
        if tmp.as_deref() == Some(root.path.as_path()) {
            continue;
        }
        let found = found_in(spec, &root.path, within);
        unreadable.extend(found.unreadable);
        for found in found.paths {
            // Follow symlinks: what git reads is the target. A target outside every writable
            // root is read-only already.
            let Ok(real) = found.canonicalize() else {
                continue;
            };
            if writable
                .iter()
                .any(|w| real.starts_with(&w.path) && real != w.path)
            {
                protected.push(real);
            }
        }
    }
    protected.sort();
    protected.dedup();
    let mut pins = Vec::new();
    for path in &protected {
        let Some(root) = writable
            .iter()
            .filter(|w| path.starts_with(&w.path))
            .max_by_key(|w| w.path.components().count())
        else {
            continue;
        };
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == root.path || !d.starts_with(&root.path) {
                break;
            }
            pins.push(d.to_path_buf());
            dir = d.parent();
        }
    }
    pins.sort();
    pins.dedup();
    // A protected directory is read-only already; pinning inside it would be a second mount.
    pins.retain(|p| !protected.iter().any(|q| p.starts_with(q)));
    Protected {
        protected,
        pins,
        unreadable,
    }
}

/// The mounts to make writable: each writable root the host does not have read-only, and every
/// mount under one that the host has read-write (one the host has read-only stays so).
fn writable_mounts(writable: &[Root]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = writable
        .iter()
        .filter(|r| !r.host_read_only)
        .map(|r| r.path.clone())
        .collect();
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for (point, read_only) in info.lines().filter_map(mount_point) {
        let under = writable
            .iter()
            .any(|r| point.starts_with(&r.path) && point != r.path);
        if under && !read_only {
            out.push(point);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The mount point of a `/proc/self/mountinfo` line, and whether that mount is read-only.
fn mount_point(line: &str) -> Option<(PathBuf, bool)> {
    let mut fields = line.split(' ');
    let point = fields.nth(4)?;
    let options = fields.next()?;
    let read_only = options.split(',').any(|o| o == "ro");
    Some((PathBuf::from(unescape_octal(point)), read_only))
}

/// Undoes mountinfo's `\040`-style escapes of space, tab, newline and backslash.
fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], code) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Deepest directories and most entries a `**` walks: a workspace's `.git/modules` holds few.
const DEEP_LEVELS: usize = 8;
const DEEP_ENTRIES: usize = 4096;

/// The parts of a git directory that are large and hold no config: skipped in a directory
/// shaped like one (it has a `HEAD`), and only there — a submodule may be named `refs`.
const GIT_STORE: &[&str] = &["objects", "refs", "logs", "lfs", "info"];

/// `dir` and the directories below it (not symlinks; not a git directory's store), up to
/// [`DEEP_LEVELS`] and [`DEEP_ENTRIES`]. Where a limit stops the walk, the directory it did not
/// enter goes to `cut`: the caller protects it whole, so what lies below it is read-only
/// rather than unseen.
pub fn descendants(dir: &Path, level: usize, out: &mut Vec<PathBuf>, cut: &mut Vec<PathBuf>) {
    if out.len() >= DEEP_ENTRIES || level > DEEP_LEVELS {
        cut.push(dir.to_path_buf());
        return;
    }
    out.push(dir.to_path_buf());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let git_dir = std::fs::symlink_metadata(dir.join("HEAD")).is_ok();
    for entry in entries.filter_map(Result::ok) {
        let store = git_dir && GIT_STORE.iter().any(|n| entry.file_name() == *n);
        if !store && entry.file_type().is_ok_and(|t| t.is_dir()) {
            descendants(&entry.path(), level + 1, out, cut);
        }
    }
}

/// The existing paths under `root` that `pattern` names: relative, `/`-separated, each
/// component literal or a glob matching one name (`.git/modules/*/hooks`). Absolute patterns
/// and `..` name nothing; a `**` component matches zero or more directories.
pub fn expand(root: &Path, pattern: &str, within: &Within) -> Vec<PathBuf> {
    expand_listed(root, pattern, within, None)
}

/// [`expand`], with `root`'s entries already listed (sorted) when `listing` is given.
fn expand_listed(
    root: &Path,
    pattern: &str,
    within: &Within,
    listing: Option<&[std::ffi::OsString]>,
) -> Vec<PathBuf> {
    let rel = Path::new(pattern);
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Vec::new();
    }
    let mut found = vec![root.to_path_buf()];
    // Directories too deep or too many for a `**` to walk: matched whole.
    let mut whole = Vec::new();
    let last = rel.components().count().saturating_sub(1);
    for (i, component) in rel.components().enumerate() {
        let Component::Normal(name) = component else {
            return Vec::new();
        };
        let name = name.to_string_lossy();
        let mut next = Vec::new();
        if name == "**" {
            // Zero or more directories: submodules named `vendor/lib`, or nested in each other.
            for dir in &found {
                descendants(dir, 0, &mut next, &mut whole);
            }
        } else if let (0, Some(listing)) = (i, listing) {
            // The root's own entries, listed by the caller.
            if super::name_glob::is_glob(&name) {
                let Some(matcher) = super::name_glob::matcher(&name) else {
                    return Vec::new();
                };
                next.extend(
                    listing
                        .iter()
                        .filter(|n| matcher.is_match(n))
                        .map(|n| root.join(n)),
                );
            } else if listing
                .binary_search_by(|n| n.as_os_str().cmp(std::ffi::OsStr::new(name.as_ref())))
                .is_ok()
            {
                next.push(root.join(name.as_ref()));
            }
        } else if super::name_glob::is_glob(&name) {
            let Some(matcher) = super::name_glob::matcher(&name) else {
                return Vec::new();
            };
            for dir in &found {
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                for entry in entries.filter_map(Result::ok) {
                    if matcher.is_match(entry.file_name()) {
                        next.push(entry.path());
                    }
                }
            }
        } else {
            for dir in &found {
                let candidate = dir.join(name.as_ref());
                if std::fs::symlink_metadata(&candidate).is_ok() {
                    next.push(candidate);
                }
            }
        }
        // Only what the next component is looked for in is entered: a symlink out of the
        // writable roots (`.git/modules -> /root`) is not listed.
        if i < last {
            next.retain(|p| within.enterable(p));
        }
        found = next;
        if found.is_empty() {
            break;
        }
    }
    found.extend(whole);
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agentd-view-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    fn spec_for(ws: &Path) -> SandboxSpec {
        SandboxSpec {
            workspace: ws.to_path_buf(),
            tmp_dir: ws.join("tmp"),
            profile: SandboxProfile::WorkspaceWrite,
            network: false,
            read_paths: vec![],
            write_paths: vec![],
            limits: Default::default(),
            run_as: None,
            env: vec![],
            require_landlock: true,
            protected_paths: protocol::worker::DEFAULT_PROTECTED_PATHS
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
            workspace_identity: None,
            repositories: vec![],
            hidden_inside: vec![],
        }
    }

    #[test]
    fn patterns_expand_to_what_exists_and_never_leave_the_root() {
        let ws = scratch("expand");
        for d in [".git/hooks", ".git/modules/a/hooks", ".git/modules/b"] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        assert_eq!(
            expand(&ws, ".git/hooks", &Within::new([ws.as_path()])),
            vec![ws.join(".git/hooks")]
        );
        assert_eq!(
            expand(&ws, ".git/modules/*/hooks", &Within::new([ws.as_path()])),
            vec![ws.join(".git/modules/a/hooks")]
        );
        assert!(expand(&ws, ".vscode", &Within::new([ws.as_path()])).is_empty());
        assert!(expand(&ws, "../etc", &Within::new([ws.as_path()])).is_empty());
        assert!(expand(&ws, "/etc", &Within::new([ws.as_path()])).is_empty());
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn a_submodule_named_like_a_git_store_or_nested_deep_is_still_found() {
        let ws = scratch("deep");
        // `refs` and `info` are skipped only inside a git directory (one with a HEAD).
        for d in ["info", "refs", "objects", "logs"] {
            std::fs::create_dir_all(ws.join(".git/modules").join(d).join("hooks")).unwrap();
        }
        std::fs::create_dir_all(ws.join(".git/modules/real/refs/heads")).unwrap();
        std::fs::write(ws.join(".git/modules/real/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(ws.join(".git/modules/real/refs/hooks")).unwrap();
        let found = expand(&ws, ".git/modules/**/hooks", &Within::new([ws.as_path()]));
        for d in ["info", "refs", "objects", "logs"] {
            let hooks = ws.join(".git/modules").join(d).join("hooks");
            assert!(found.contains(&hooks), "{d}: {found:?}");
        }
        assert!(
            !found.contains(&ws.join(".git/modules/real/refs/hooks")),
            "a git directory's own refs are not walked: {found:?}"
        );
        // Deeper than the walk goes: the directory it did not enter is matched whole, so what
        // is below it is protected, not unseen.
        let deep = ws.join(".git/modules/a/b/c/d/e/f/g/h/i/j/hooks");
        std::fs::create_dir_all(&deep).unwrap();
        let found = expand(&ws, ".git/modules/**/hooks", &Within::new([ws.as_path()]));
        assert!(
            found
                .iter()
                .any(|p| deep.starts_with(p) && p != &ws.join(".git/modules")),
            "{found:?}"
        );
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn protected_paths_are_found_resolved_and_pinned() {
        let ws = scratch("protected");
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(ws.join(".git/modules/sub/hooks")).unwrap();
        std::fs::create_dir_all(ws.join("tools/editor")).unwrap();
        std::os::unix::fs::symlink("tools/editor", ws.join(".vscode")).unwrap();
        std::fs::create_dir_all(ws.join("tmp")).unwrap();
        let spec = spec_for(&ws);
        let view = View::read(&spec).unwrap();
        assert_eq!(
            view.protected,
            vec![
                ws.join(".git/config"),
                ws.join(".git/hooks"),
                ws.join(".git/modules/sub/hooks"),
                ws.join("tools/editor"),
            ],
            "a symlinked protected path protects its target inside the workspace"
        );
        assert_eq!(
            view.pins,
            vec![
                ws.join(".git"),
                ws.join(".git/modules"),
                ws.join(".git/modules/sub"),
                ws.join("tools"),
            ]
        );
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn a_symlink_out_of_the_roots_protects_nothing_more() {
        let ws = scratch("outside");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::os::unix::fs::symlink("/usr/share", ws.join(".git/hooks")).unwrap();
        let view = View::read(&spec_for(&ws)).unwrap();
        assert!(view.protected.is_empty(), "{view:?}");
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn a_git_file_its_target_and_an_inner_hooks_path_are_protected() {
        let ws = scratch("gitfile");
        std::fs::create_dir_all(ws.join("real/hooks")).unwrap();
        std::fs::write(ws.join("real/config"), "[core]\n\thooksPath = .husky\n").unwrap();
        std::fs::write(ws.join(".git"), "gitdir: real\n").unwrap();
        std::fs::create_dir_all(ws.join(".husky")).unwrap();
        std::fs::create_dir_all(ws.join("tmp")).unwrap();
        let view = View::read(&spec_for(&ws)).unwrap();
        for p in [".git", "real/hooks", "real/config", ".husky"] {
            assert!(view.protected.contains(&ws.join(p)), "{p}: {view:?}");
        }
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn the_owners_git_config_is_read_with_the_owners_rights_not_roots() {
        use std::os::unix::fs::PermissionsExt;
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let ws = scratch("as-owner");
        let home = scratch("as-owner-home");
        let secret = scratch("as-owner-secret");
        std::fs::write(secret.join("config"), "[core]\n\thooksPath = .evil\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir_all(ws.join(".evil")).unwrap();
        std::fs::create_dir_all(ws.join("tmp")).unwrap();
        let mut spec = spec_for(&ws);
        spec.env.push(protocol::worker::EnvVar {
            name: "HOME".into(),
            value: home.display().to_string(),
        });
        let scan = |spec: &SandboxSpec, include: &Path| {
            std::fs::write(
                home.join(".gitconfig"),
                format!("[include]\n\tpath = {}\n", include.display()),
            )
            .unwrap();
            found_in(spec, &ws, &within(spec))
        };
        // As root for root, the include is read: its hooksPath is protected.
        let as_root = scan(&spec, &secret.join("config"));
        assert!(as_root.paths.contains(&ws.join(".evil")), "{as_root:?}");
        // For another owner, the file they cannot read is not read, and whether it exists is not
        // told: the same refusal for a file that is there and one that is not.
        spec.run_as = Some(protocol::worker::RunAs {
            uid: 65534,
            gid: 65534,
            groups: vec![],
        });
        let there = scan(&spec, &secret.join("config"));
        let not_there = scan(&spec, &secret.join("nope/x"));
        assert!(!there.paths.contains(&ws.join(".evil")), "{there:?}");
        let why = |f: &super::super::gitconfig::Found| -> Vec<String> {
            f.unreadable.iter().map(|(_, why)| why.clone()).collect()
        };
        assert_eq!(why(&there), why(&not_there));
        assert!(
            why(&there).iter().all(|w| w.contains("denied")),
            "{there:?}"
        );
        // And the thread is root's again.
        assert!(std::fs::read_to_string(secret.join("config")).is_ok());
        for d in [&ws, &home, &secret] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn mountinfo_lines_give_their_mount_point_and_whether_it_is_read_only() {
        let line = "36 27 0:33 / /work/a\\040b ro,relatime shared:1 - tmpfs tmpfs rw";
        assert_eq!(mount_point(line), Some((PathBuf::from("/work/a b"), true)));
        let line = "37 27 0:33 / /work/c rw,nosuid - tmpfs tmpfs rw";
        assert_eq!(mount_point(line), Some((PathBuf::from("/work/c"), false)));
        assert_eq!(unescape_octal("a\\134b\\011"), "a\\b\t");
    }

    #[test]
    fn a_root_the_host_has_read_only_is_not_made_writable() {
        let roots = [
            Root {
                path: "/nonexistent-agentd/ro".into(),
                is_dir: true,
                host_read_only: true,
            },
            Root {
                path: "/nonexistent-agentd/rw".into(),
                is_dir: true,
                host_read_only: false,
            },
        ];
        assert_eq!(
            writable_mounts(&roots),
            vec![PathBuf::from("/nonexistent-agentd/rw")]
        );
    }

    #[test]
    fn a_hidden_dir_inside_a_kept_path_stays_visible() {
        let mut spec = spec_for(Path::new("/"));
        spec.tmp_dir = "/nonexistent-agentd-tmp".into();
        let view = View::read(&spec).unwrap();
        assert!(view.hidden.is_empty(), "{view:?}");
    }
}
