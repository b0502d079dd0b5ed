//! What an allowed broad workspace hides from its calls: every home strictly inside it whole,
//! the agent's own paths and the sandbox's hidden system directories inside it, `/etc`'s
//! secrets, and — when the workspace *is* a home, where hiding the home is impossible — the
//! home's secret paths of [`HOME_SECRETS`].

use super::{Hidden, Sensitive};
use std::path::{Path, PathBuf};
use tool_worker::lockdown::landlock::ETC_SECRETS;

/// A home's paths hidden from calls when the workspace is that home: credentials and keys,
/// and what runs later outside the sandbox (shell startup files, `~/.config` with git's and
/// every tool's config, `~/.local` with `bin` on the `PATH` and the agent's state). A list, so
/// what is not on it stays readable and writable: `docs/security.md`, "What is not protected".
pub const HOME_SECRETS: &[&str] = &[
    // Keys and credentials.
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".my.cnf",
    ".npmrc",
    ".pypirc",
    ".gem",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d",
    ".vault-token",
    ".Xauthority",
    ".pki",
    ".mozilla",
    // The agent's own keys, config and state; every XDG tool's config and data.
    ".agents",
    ".config",
    ".local",
    ".cache",
    // Read by git and shells outside the sandbox: what is planted here runs later.
    ".gitconfig",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".inputrc",
    ".pam_environment",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    ".vimrc",
    ".vim",
    ".emacs",
    ".emacs.d",
    // Histories: typed secrets.
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".lesshst",
    ".viminfo",
];

/// What `workspace` (canonical, judged broad) hides from its calls.
pub fn hidden(workspace: &Path, s: &Sensitive) -> Hidden {
    let strictly_in = |p: &Path| p.starts_with(workspace) && p != workspace;
    let mut out = Hidden::default();
    for home in &s.homes {
        if home == workspace {
            for name in HOME_SECRETS {
                let path = home.join(name);
                if std::fs::symlink_metadata(&path).is_ok() {
                    out.paths.push(path);
                } else {
                    out.names.push((*name).to_owned());
                }
            }
        } else if strictly_in(home) {
            if std::fs::symlink_metadata(home).is_ok() {
                out.paths.push(home.clone());
            } else if let Ok(rel) = home.strip_prefix(workspace) {
                // A home not made yet (an account whose directory is missing) is not made by
                // a call either.
                out.names.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let etc = ETC_SECRETS.iter().map(|e| Path::new("/etc").join(e));
    let system = tool_worker::lockdown::mounts::view::HIDDEN
        .iter()
        .map(PathBuf::from);
    let agent = s.agent.iter().map(|a| a.path.clone());
    out.paths.extend(
        agent
            .chain(system)
            .chain(etc)
            .filter(|p| strictly_in(p) && std::fs::symlink_metadata(p).is_ok()),
    );
    out.paths.sort();
    out.paths.dedup();
    out
}
