//! The config file (`/etc/agentd/config.toml`, `$XDG_CONFIG_HOME/agentd/config.toml`, or
//! `--config`): `[provider]` and `[policy]` so far. Unknown sections and keys are errors that name
//! the key, the file and the line — a typo never silently falls back to a default.

use serde::Deserialize;
use std::path::Path;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The model provider.
    pub provider: Option<ProviderSection>,
    /// The policy; validated by the policy crate, which reports its own errors.
    pub policy: Option<toml::Table>,
}

/// `[provider]`: the lowest layer under `~/.agents/env`, the environment and flags.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// `openai`, `anthropic` or `gemini`.
    pub kind: Option<String>,
    /// The API root.
    pub base_url: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The key (prefer `~/.agents/env` or the environment, which stay out of shared files).
    pub api_key: Option<String>,
    /// Tries per model call, the first included (default 4).
    pub max_tries: Option<u32>,
    /// Longest silence inside a response stream, in seconds (default 120).
    pub idle_timeout_secs: Option<u64>,
}

/// Why the config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unreadable.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Not TOML, or an unknown or mistyped key.
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was wrong.
        message: String,
    },
}

/// Parses config text named `path`.
pub fn parse(text: &str, path: &str) -> Result<ConfigFile, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e
            .span()
            .map_or((1, 1), |s| policy::rules::line_col(text, s.start));
        ConfigError::Invalid {
            path: path.into(),
            line,
            column,
            message: e.message().to_owned(),
        }
    })
}

/// Reads and parses the file at `path`; also returns its text (for the policy's own parse).
pub fn load(path: &Path) -> Result<(ConfigFile, String), ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: name.clone(),
        source,
    })?;
    Ok((parse(&text, &name)?, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sections_parse_and_unknown_keys_are_named_with_their_line() {
        let c = parse(
            "[provider]\nkind = \"anthropic\"\nmodel = \"claude\"\n[policy]\ndefault = \"ask\"\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.provider.unwrap().model.as_deref(), Some("claude"));
        let err = parse("[provider]\nmodle = \"x\"\n", "/etc/agentd/config.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/etc/agentd/config.toml:2:") && err.contains("modle"),
            "{err}"
        );
        let err = parse("[providers]\nmodel = \"x\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("c.toml:1:") && err.contains("providers"),
            "{err}"
        );
    }
}
