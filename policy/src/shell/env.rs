//! Environment assignments before a command (`NAME=value cmd`, `env NAME=value cmd`, `export`):
//! by allowlist. Only names that cannot change which programs run, what they load, or where they
//! read configuration pass; any other asks (`RUSTFLAGS`, `GOFLAGS`, `XDG_CONFIG_HOME`, `GIT_*`,
//! `PYTEST_ADDOPTS`, `npm_config_*`, `CARGO_*`, `PATH`, `LD_PRELOAD`, …).

/// Names allowed exactly.
const ALLOWED: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "TERM",
    "COLUMNS",
    "LINES",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "RUST_LOG",
    "RUST_TEST_THREADS",
    "CARGO_TERM_COLOR",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONIOENCODING",
    "CI",
    // Selects a mode the project's own configuration reads (its code, which runs anyway).
    "NODE_ENV",
];

/// Search paths for code: allowed only when every entry is the directory the command runs in
/// (`.`, or empty), which `python -m` and node put first on their search paths already; for the
/// commands that run code, that directory must be inside the workspace (the engine checks it).
/// A subdirectory (`PYTHONPATH=./evil`) asks: it puts modules named like the standard
/// library's, or a `sitecustomize.py` that runs at start-up, before everything else.
const LOAD_PATHS: &[&str] = &["PYTHONPATH", "NODE_PATH"];

/// Whether `NAME=value` (static) before a command is harmless: an allowlisted name with a plain
/// value, or a search path that only names the directory the command runs in.
pub fn is_allowed_with(name: &str, value: &str) -> bool {
    (is_allowed(name) && value_is_plain(value))
        || (LOAD_PATHS.contains(&name) && value.split(':').all(|e| matches!(e, "" | "." | "./")))
}

/// Whether `NAME=value` before a command is harmless. `LC_*` are locale categories.
pub fn is_allowed(name: &str) -> bool {
    ALLOWED.contains(&name)
        || name
            .strip_prefix("LC_")
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_uppercase()))
}

/// Whether `value` is acceptable for an allowed name: static, and not a path (a locale or
/// terminal name with a `/` is read as a file).
pub fn value_is_plain(value: &str) -> bool {
    !value.contains('/')
}

/// The names, for documentation.
pub fn allowed_names() -> impl Iterator<Item = &'static str> {
    ALLOWED.iter().copied().chain(std::iter::once("LC_*"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_paths_pass_only_as_the_working_directory() {
        for ok in [".", "./", ".:", ""] {
            assert!(is_allowed_with("PYTHONPATH", ok), "{ok}");
        }
        for bad in ["/tmp", "./evil", "src", ".:/tmp/x", "..", "~/x", "$X", "*"] {
            assert!(!is_allowed_with("PYTHONPATH", bad), "{bad}");
        }
        assert!(!is_allowed_with("LD_LIBRARY_PATH", "."));
        assert!(!is_allowed_with("LANG", "a/b"));
    }

    #[test]
    fn only_the_short_list_passes() {
        for ok in [
            "LANG",
            "LC_ALL",
            "LC_CTYPE",
            "TZ",
            "NO_COLOR",
            "RUST_BACKTRACE",
            "TERM",
        ] {
            assert!(is_allowed(ok), "{ok}");
        }
        for bad in [
            "RUSTFLAGS",
            "GOFLAGS",
            "XDG_CONFIG_HOME",
            "GIT_DIR",
            "GIT_COMMON_DIR",
            "PYTEST_ADDOPTS",
            "npm_config_script_shell",
            "CARGO_TARGET_X_RUNNER",
            "PATH",
            "LD_PRELOAD",
            "LC_",
            "LC_all",
            "BASH_ENV",
            "PYTHONPATH",
            "HOME",
            "FOO",
        ] {
            assert!(!is_allowed(bad), "{bad}");
        }
    }
}
