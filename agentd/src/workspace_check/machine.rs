//! What is sensitive on this machine, read once per check: the system directories the sandbox
//! hides or keeps read-only, every home, and the agent's own config, keys, state and socket.

use super::Guard;
use std::path::{Component, Path, PathBuf};
use tool_worker::lockdown::{landlock::SYSTEM_PATHS, mounts::view::HIDDEN};

/// One of the agent's own paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPath {
    /// Canonical.
    pub path: PathBuf,
    /// What it is, for the error.
    pub what: &'static str,
    /// A directory: a workspace inside it is refused too (else only one that holds it).
    pub is_dir: bool,
}

/// What no workspace may be or hold, every path canonical.
#[derive(Debug, Clone, Default)]
pub struct Sensitive {
    /// The sandbox's hidden directories and system trees, `/etc` and `/dev` (`/` is always).
    pub system: Vec<PathBuf>,
    /// Every home: the passwd database's (system accounts' homes in the system trees left
    /// out: they are [`Sensitive::system`]'s), `$HOME`, the session owner's, root's.
    pub homes: Vec<PathBuf>,
    /// The agent's config, keys, state and socket.
    pub agent: Vec<AgentPath>,
}

/// Directories besides [`HIDDEN`] and [`SYSTEM_PATHS`] that a workspace may not be.
const MORE_SYSTEM: &[&str] = &["/etc", "/dev", "/boot"];

impl Sensitive {
    /// Reads this machine: `/etc/passwd`, the environment (`HOME`, `XDG_*`), the guard's own
    /// paths; `owner_home` is the session owner's home when not this process's.
    pub fn read(guard: &Guard, owner_home: Option<&Path>) -> Self {
        let env = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let home = env("HOME");
        let system = HIDDEN
            .iter()
            .chain(SYSTEM_PATHS)
            .chain(MORE_SYSTEM)
            .map(|p| canonical(Path::new(p)))
            .collect();
        let mut homes: Vec<PathBuf> = passwd_homes();
        homes.extend(home.as_deref().into_iter().chain(owner_home).map(canonical));
        homes.push(canonical(Path::new("/root")));
        let in_system = |h: &PathBuf| {
            h.as_path() == Path::new("/")
                || SYSTEM_PATHS
                    .iter()
                    .chain(&["/dev", "/sys"])
                    .any(|s| h.starts_with(canonical(Path::new(s))))
        };
        homes.retain(|h| !in_system(h));
        homes.sort();
        homes.dedup();
        let dir = |path: PathBuf, what| AgentPath {
            path: canonical(&path),
            what,
            is_dir: true,
        };
        let file = |path: PathBuf, what| AgentPath {
            path: canonical(&path),
            what,
            is_dir: false,
        };
        let mut agent = vec![
            dir("/etc/agentd".into(), "the system's agentd config"),
            dir("/var/lib/agentd".into(), "the daemon's session state"),
            dir("/run/agentd".into(), "the daemon's socket directory"),
        ];
        if let Some(config) = env("XDG_CONFIG_HOME") {
            agent.push(dir(config.join("agentd"), "the agent's config"));
        }
        if let Some(state) = env("XDG_STATE_HOME") {
            agent.push(dir(state.join("agentd"), "the agent's session state"));
        }
        if let Some(runtime) = env("XDG_RUNTIME_DIR") {
            agent.push(dir(runtime.join("agentd"), "the daemon's socket directory"));
        }
        for h in home.as_deref().into_iter().chain(owner_home) {
            agent.push(file(h.join(".agents/env"), "the agent's API keys"));
            agent.push(dir(h.join(".config/agentd"), "the agent's config"));
            agent.push(dir(
                h.join(".local/state/agentd"),
                "the agent's session state",
            ));
        }
        for (path, what) in &guard.own {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            agent.push(match std::fs::metadata(&path) {
                Ok(m) if !m.is_dir() => file(path, what),
                _ => dir(path, what),
            });
        }
        Sensitive {
            system,
            homes,
            agent,
        }
    }
}

/// The homes in `/etc/passwd` (users from other NSS sources — LDAP, systemd's dynamic users —
/// are not listed there; `$HOME` and the session owner's home are added by the caller).
fn passwd_homes() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    text.lines()
        .filter_map(|line| line.split(':').nth(5))
        .map(Path::new)
        .filter(|p| p.is_absolute())
        .map(canonical)
        .collect()
}

/// `path` made absolute with its symlinks resolved; a part that does not exist yet is joined
/// to its nearest existing parent's real path (`..` in it applied lexically), so a config dir
/// not made yet still compares where it will be.
pub fn canonical(path: &Path) -> PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let mut rest = Vec::new();
    let mut base = path.as_path();
    loop {
        match (base.canonicalize(), base.parent()) {
            (Ok(real), _) => {
                let mut out = real;
                for part in rest.iter().rev() {
                    match part {
                        Component::ParentDir => {
                            out.pop();
                        }
                        Component::Normal(n) => out.push(n),
                        _ => {}
                    }
                }
                return out;
            }
            (Err(_), Some(parent)) => {
                rest.push(base.components().next_back().unwrap_or(Component::CurDir));
                base = parent;
            }
            (Err(_), None) => return path,
        }
    }
}
