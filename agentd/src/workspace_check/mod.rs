//! Workspace sanity: a workspace that holds what the sandbox hides is refused, by every front
//! end, in one place ([`check`], called by `engine::build::prepare` for `agent run`, the REPL
//! and the daemon's create and resume, and by `agentd sandbox`).
//!
//! The sandbox hides homes, agentd's own config, keys and state, and the system's private
//! directories — but carries the workspace over readable and writable. A workspace that is `/`,
//! a home or an ancestor of one, a system directory the sandbox hides (`/tmp`, `/var`, `/etc`,
//! …), or one that holds the agent's config (`$XDG_CONFIG_HOME/agentd`, `/etc/agentd`, the
//! `--config` file), its keys (`~/.agents/env`), its session state or the daemon's socket, would
//! hand a call everything hidden: `cd ~ && agent run` let one allowed `make test` print the
//! API key and the SSH key and rewrite the config of the next run. Paths are compared canonical
//! (symlinks resolved; a path not made yet by its nearest existing parent), so `/home/../home/me`
//! and a symlink to a home are what they lead to.
//!
//! `--allow-broad-workspace` (or `[sandbox] allow_broad_workspace = true`; for the daemon only
//! its own config, never a client's word) lets such a workspace through; the secrets inside it
//! are then hidden from every call ([`hide::hidden`]): a home inside the workspace whole, and
//! when the workspace *is* a home, the documented list [`hide::HOME_SECRETS`].
//!
//! [`machine`] reads what is sensitive on this machine; [`judge`] is the pure decision.
//!
//! A project workspace can still be what the home runs: `~/.bashrc -> ~/dotfiles/bashrc`. Once
//! the spec's writable roots are known, [`links_protected`] scans the home's links
//! ([`links`]) and makes each target inside a root a protected path, or refuses the workspace
//! as broad naming a link that cannot be protected.

pub mod hide;
pub mod links;
pub mod machine;

use std::path::{Path, PathBuf};

pub use machine::Sensitive;

/// What a front end knows beyond the machine's defaults, and whether it allows a broad
/// workspace.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Allow a broad workspace (the secrets in it are hidden from calls).
    pub allow: bool,
    /// Paths of this process's own that no workspace may hold: the `--config` file, a
    /// `--state-dir`, the daemon's socket; each with what it is, for the error.
    pub own: Vec<(PathBuf, &'static str)>,
    /// How the user would allow it, for the error.
    pub how: Override,
}

/// How a broad workspace is allowed, named in the refusal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Override {
    /// The command line's flag, or the config key.
    #[default]
    Flag,
    /// The daemon's config only: a client cannot allow it.
    DaemonConfig,
}

/// Why a workspace is too broad.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// It is the root of the filesystem.
    Root,
    /// It is, or holds, a system directory the sandbox hides or keeps read-only.
    System {
        /// The directory.
        dir: PathBuf,
        /// The workspace holds it (else is it).
        holds: bool,
    },
    /// It is a home, or holds one.
    Home {
        /// The home.
        home: PathBuf,
        /// The workspace holds it (else is it).
        holds: bool,
    },
    /// A symlink of the home (or of a config directory) leads into the workspace, and what it
    /// leads to cannot be made read-only.
    HomeLink {
        /// The link, as the home names it.
        link: PathBuf,
        /// Why it cannot be protected.
        why: links::Why,
    },
    /// The home could not be scanned for links into the workspace as its owner.
    Unscanned {
        /// The home.
        home: PathBuf,
        /// Why.
        why: String,
    },
    /// It holds (or is, or lies inside) one of the agent's own paths.
    Agent {
        /// What that path is.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The workspace lies inside it (else holds it).
        inside: bool,
    },
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Root => write!(
                f,
                "it is the root of the filesystem, which holds every home and every secret the sandbox hides"
            ),
            Reason::System { dir, holds } => write!(
                f,
                "it {} the system directory {}, which the sandbox hides or keeps read-only",
                if *holds { "holds" } else { "is" },
                dir.display()
            ),
            Reason::Home { home, holds } => write!(
                f,
                "it {} the home directory {}: its keys (~/.ssh), the agent's API key (~/.agents/env) and config, and the shell's startup files",
                if *holds { "holds" } else { "is" },
                home.display()
            ),
            Reason::HomeLink { link, why } => write!(
                f,
                "the home's symlink {} {why}, so a call could change what the home runs outside the sandbox (the shell's startup files, an editor's config)",
                link.display()
            ),
            Reason::Unscanned { home, why } => write!(
                f,
                "the home {} could not be scanned for symlinks into it as its owner: {why}",
                home.display()
            ),
            Reason::Agent {
                what,
                path,
                inside: false,
            } => write!(f, "it holds {what} ({})", path.display()),
            Reason::Agent {
                what,
                path,
                inside: true,
            } => write!(f, "it lies inside {what} ({})", path.display()),
        }
    }
}

/// A workspace refused.
#[derive(Debug, thiserror::Error)]
#[error(
    "workspace {workspace} is too broad: {reason}; a tool call could read and change it all. Work in a project directory, or {how}"
)]
pub struct BroadWorkspace {
    /// The workspace, canonical.
    pub workspace: PathBuf,
    /// Why.
    pub reason: Reason,
    /// How to allow it anyway.
    how: &'static str,
}

/// What a broad workspace that was allowed hides from its calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hidden {
    /// Existing paths inside the workspace to cover (`SandboxSpec::hidden_inside`).
    pub paths: Vec<PathBuf>,
    /// Names relative to the workspace, missing now, that a call must not create (added to
    /// `protected_paths`: one a call makes is moved aside after it).
    pub names: Vec<String>,
}

impl Hidden {
    /// Puts what is hidden into `spec` (after the config's `[sandbox]`, which may replace the
    /// protected paths: these are added to whatever it chose).
    pub fn apply(&self, spec: &mut protocol::worker::SandboxSpec) {
        spec.hidden_inside.extend(self.paths.iter().cloned());
        for name in &self.names {
            if !spec.protected_paths.contains(name) {
                spec.protected_paths.push(name.clone());
            }
        }
    }
}

/// Checks `workspace` (canonical) against what is sensitive on this machine (`owner_home`: the
/// session owner's home, when not this process's). Refused when too broad and not allowed;
/// allowed, what its calls must not see.
pub fn check(
    workspace: &Path,
    guard: &Guard,
    owner_home: Option<&Path>,
) -> Result<Hidden, BroadWorkspace> {
    let sensitive = Sensitive::read(guard, owner_home);
    check_against(workspace, guard, &sensitive)
}

/// [`check`] against a given [`Sensitive`].
pub fn check_against(
    workspace: &Path,
    guard: &Guard,
    sensitive: &Sensitive,
) -> Result<Hidden, BroadWorkspace> {
    let workspace = machine::canonical(workspace);
    match judge(&workspace, sensitive) {
        None => Ok(Hidden::default()),
        Some(_) if guard.allow => Ok(hide::hidden(&workspace, sensitive)),
        Some(reason) => Err(refusal(workspace, reason, guard)),
    }
}

fn refusal(workspace: PathBuf, reason: Reason, guard: &Guard) -> BroadWorkspace {
    BroadWorkspace {
        workspace,
        reason,
        how: match guard.how {
            Override::Flag => {
                "pass --allow-broad-workspace (or set `[sandbox] allow_broad_workspace = true` in the config) to allow it with the home's secrets hidden"
            }
            Override::DaemonConfig => {
                "ask the daemon's operator to set `[sandbox] allow_broad_workspace = true` in its config (a client cannot allow it)"
            }
        },
    }
}

/// Makes every path inside `spec`'s writable roots (workspace and write paths, as the config
/// left them) that a symlink of `home` or of its config directories leads to a protected path
/// of `spec`; refuses the workspace as broad, naming the link, when one cannot be protected
/// (unless allowed: then it is left as it is, with a warning). Read with the rights of
/// `spec.run_as` when this process is root (what the owner's links lead to is the owner's to
/// see, not root's). `$XDG_CONFIG_HOME` is the tools' when they have one, else this process's
/// when `home` is its own.
pub fn links_protected(
    spec: &mut protocol::worker::SandboxSpec,
    home: Option<&Path>,
    guard: &Guard,
) -> Result<(), BroadWorkspace> {
    let Some(home) = home.filter(|h| h.is_absolute()) else {
        return Ok(());
    };
    let workspace = machine::canonical(&spec.workspace);
    let roots: Vec<PathBuf> = std::iter::once(&spec.workspace)
        .chain(&spec.write_paths)
        .map(|p| machine::canonical(p))
        .collect();
    let own_home = std::env::var_os("HOME").is_some_and(|h| Path::new(&h) == home);
    let xdg = spec
        .env
        .iter()
        .find(|v| v.name == "XDG_CONFIG_HOME")
        .map(|v| PathBuf::from(&v.value))
        .or_else(|| {
            own_home
                .then(|| std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from))
                .flatten()
        })
        .filter(|p| p.is_absolute());
    let mut configs = vec![home.join(".config")];
    configs.extend(xdg.filter(|x| *x != configs[0]));
    let found = {
        let _as_owner = match tool_worker::lockdown::mounts::as_owner::assume(spec.run_as.as_ref())
        {
            Ok(guard) => guard,
            Err(e) => {
                let reason = Reason::Unscanned {
                    home: home.to_path_buf(),
                    why: e.to_string(),
                };
                return Err(refusal(workspace, reason, guard));
            }
        };
        links::scan(home, &configs, &roots)
    };
    if found.truncated {
        tracing::info!(
            "the home's symlinks below its first level were looked at up to {} entries only",
            links::MAX_ENTRIES
        );
    }
    for name in found.names {
        if !spec.protected_paths.contains(&name) {
            spec.protected_paths.push(name);
        }
    }
    match found.refusal {
        None => Ok(()),
        Some(r) if guard.allow => {
            tracing::warn!(
                "the home's symlink {} {}: left writable (the broad workspace is allowed)",
                crate::inert::inert_line(&r.link.display().to_string()),
                r.why
            );
            Ok(())
        }
        Some(r) => Err(refusal(
            workspace,
            Reason::HomeLink {
                link: r.link,
                why: r.why,
            },
            guard,
        )),
    }
}

/// Why `workspace` (canonical) is too broad, if it is. Pure: every path canonical already.
pub fn judge(workspace: &Path, s: &Sensitive) -> Option<Reason> {
    if workspace == Path::new("/") {
        return Some(Reason::Root);
    }
    let is = s.system.iter().find(|d| d.as_path() == workspace);
    if let Some(dir) = is.or_else(|| s.system.iter().find(|d| d.starts_with(workspace))) {
        return Some(Reason::System {
            dir: dir.clone(),
            holds: dir != workspace,
        });
    }
    if let Some(home) = s.homes.iter().find(|h| h.starts_with(workspace)) {
        return Some(Reason::Home {
            home: home.clone(),
            holds: home != workspace,
        });
    }
    s.agent.iter().find_map(|a| {
        let holds = a.path.starts_with(workspace);
        let inside = a.is_dir && workspace.starts_with(&a.path);
        (holds || inside).then(|| Reason::Agent {
            what: a.what,
            path: a.path.clone(),
            inside: !holds,
        })
    })
}

#[cfg(test)]
mod tests;
