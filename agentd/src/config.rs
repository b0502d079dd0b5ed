//! The config file (`/etc/agentd/config.toml`, `$XDG_CONFIG_HOME/agentd/config.toml`, or
//! `--config`): `[provider]`, `[policy]`, `[sandbox]`, `[aggregate]`, `[agent]` and `[server]`. Unknown sections and keys are errors that name
//! the key, the file and the line — a typo never silently falls back to a default.

mod aggregate;

pub use aggregate::AggregateSection;
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
    /// The sandbox every call gets.
    pub sandbox: Option<SandboxSection>,
    /// The agent loop.
    pub agent: Option<AgentSection>,
    /// The daemon's socket server (`agentd serve`).
    pub server: Option<ServerSection>,
    /// Bounds over all calls of a session and all sessions of a user.
    pub aggregate: Option<AggregateSection>,
}

/// `[server]`: the bounds of `agentd serve`; each key defaults to [`crate::server::Limits`].
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Clients connected at once.
    pub max_connections: Option<usize>,
    /// Clients one uid may have connected at once.
    pub max_connections_per_uid: Option<usize>,
    /// Clients each uid may have connected whatever the others hold.
    pub reserved_connections_per_uid: Option<usize>,
    /// Largest frame payload, bytes.
    pub max_frame_bytes: Option<usize>,
    /// How long a client has for its hello, milliseconds.
    pub handshake_timeout_ms: Option<u64>,
    /// How long a connection with no session attached may make no request, milliseconds.
    pub idle_timeout_ms: Option<u64>,
    /// Frames queued for one client before it is dropped as too slow.
    pub outgoing_queue: Option<usize>,
    /// Sessions one uid may have.
    pub max_sessions_per_uid: Option<usize>,
    /// A group whose members may list every user's sessions.
    pub admin_group: Option<String>,
    /// How long a session's ask waits while no client is attached before it is denied,
    /// milliseconds.
    pub approval_wait_ms: Option<u64>,
    /// How long running turns may go on after SIGTERM before they are interrupted,
    /// milliseconds.
    pub shutdown_grace_ms: Option<u64>,
    /// The largest session log a new turn is started on, bytes.
    pub max_session_log_bytes: Option<u64>,
}

impl ServerSection {
    /// The limits, these keys over the defaults.
    pub fn limits(&self) -> crate::server::Limits {
        let d = crate::server::Limits::default();
        crate::server::Limits {
            max_connections: self.max_connections.unwrap_or(d.max_connections),
            max_connections_per_uid: self
                .max_connections_per_uid
                .unwrap_or(d.max_connections_per_uid),
            reserved_connections_per_uid: self
                .reserved_connections_per_uid
                .unwrap_or(d.reserved_connections_per_uid),
            max_frame_bytes: self.max_frame_bytes.unwrap_or(d.max_frame_bytes),
            handshake_timeout: self
                .handshake_timeout_ms
                .map_or(d.handshake_timeout, std::time::Duration::from_millis),
            idle_timeout: self
                .idle_timeout_ms
                .map_or(d.idle_timeout, std::time::Duration::from_millis),
            outgoing_queue: self.outgoing_queue.unwrap_or(d.outgoing_queue),
            max_sessions_per_uid: self.max_sessions_per_uid.unwrap_or(d.max_sessions_per_uid),
            approval_wait: self
                .approval_wait_ms
                .map_or(d.approval_wait, std::time::Duration::from_millis),
            shutdown_grace: self
                .shutdown_grace_ms
                .map_or(d.shutdown_grace, std::time::Duration::from_millis),
            max_session_log_bytes: self
                .max_session_log_bytes
                .unwrap_or(d.max_session_log_bytes),
        }
    }
}

/// `[agent]`: the agent loop's settings that have no flag.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    /// Model calls a subagent (a `task` call's child loop) may make, at least 1 (default
    /// [`crate::agent::subagent::DEFAULT_MAX_STEPS`]).
    pub subagent_max_steps: Option<std::num::NonZeroU32>,
}

impl AgentSection {
    /// A subagent's step limit: the key, else the default.
    pub fn subagent_max_steps(section: Option<&Self>) -> u32 {
        section
            .and_then(|a| a.subagent_max_steps)
            .map_or(crate::agent::subagent::DEFAULT_MAX_STEPS, |n| n.get())
    }
}

/// `[sandbox]`: what the calls' sandbox grants beyond the workspace, and what it protects in it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// Absolute paths also readable (a toolchain, a cache).
    #[serde(default)]
    pub read_paths: Vec<std::path::PathBuf>,
    /// Absolute paths also writable.
    #[serde(default)]
    pub write_paths: Vec<std::path::PathBuf>,
    /// Paths inside the writable roots kept read-only, relative, `*` matching one component;
    /// replaces the defaults (`.git/hooks`, `.git/config`, … — see `docs/security.md`).
    pub protected_paths: Option<Vec<toml::Spanned<String>>>,
    /// Allow a workspace that is `/`, a home or an ancestor of one, a system directory, or
    /// holds the agent's config, keys, state or socket; its secrets are then hidden from calls
    /// (`crate::workspace_check`). For the daemon, only its own config allows it.
    #[serde(default)]
    pub allow_broad_workspace: bool,
}

impl SandboxSection {
    /// Applies the section to `spec`; an invalid entry is an error naming it, the file and line.
    pub fn apply(
        &self,
        spec: &mut protocol::worker::SandboxSpec,
        text: &str,
        path: &str,
    ) -> Result<(), ConfigError> {
        let invalid = |span: std::ops::Range<usize>, message: String| {
            let (line, column) = policy::rules::line_col(text, span.start);
            ConfigError::Invalid {
                path: path.into(),
                line,
                column,
                message,
            }
        };
        for p in self.read_paths.iter().chain(&self.write_paths) {
            if !p.is_absolute() {
                return Err(invalid(
                    0..0,
                    format!("sandbox: {} is not an absolute path", p.display()),
                ));
            }
        }
        spec.read_paths.extend(self.read_paths.iter().cloned());
        spec.write_paths.extend(self.write_paths.iter().cloned());
        if let Some(protected) = &self.protected_paths {
            let mut out = Vec::with_capacity(protected.len());
            for entry in protected {
                let rel = std::path::Path::new(entry.get_ref());
                let ok = !entry.get_ref().is_empty()
                    && rel
                        .components()
                        .all(|c| matches!(c, std::path::Component::Normal(_)));
                if !ok {
                    return Err(invalid(
                        entry.span(),
                        format!(
                            "sandbox.protected_paths: {:?} must be a relative path inside the workspace, without `..`",
                            entry.get_ref()
                        ),
                    ));
                }
                out.push(entry.get_ref().clone());
            }
            spec.protected_paths = out;
        }
        Ok(())
    }
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
    /// Longest wait for a stream's first event, seconds, for every model (default: 600 for a
    /// model that thinks before it streams, `providers::limits::thinks_silently`, else the
    /// idle timeout).
    pub first_byte_timeout_secs: Option<FirstByteTimeout>,
    /// The model's context window, tokens (default: the model's own from
    /// `providers::limits`, 32 768 for a name it does not know); `--context-window` overrides it.
    pub context_window: Option<ContextWindow>,
    /// The most text, tool arguments and thinking one model response may bring, bytes (default
    /// 8 MiB): past it the call ends with an error (`docs/agent.md`, "Bounds on a response").
    pub max_response_bytes: Option<usize>,
    /// The cap on each answer's output tokens, sent in each API's own field (default: the
    /// model's limit from `providers::limits` where the API requires a cap, else none).
    pub max_output_tokens: Option<MaxOutputTokens>,
    /// The longest wait before a retry, seconds (default 60): a server that asks for longer
    /// (`Retry-After`, Gemini's `retryDelay`) ends the call with an error that says so.
    pub max_retry_wait_secs: Option<u64>,
    /// Extra request headers for every model call (OpenRouter's `HTTP-Referer` and `X-Title`,
    /// `anthropic-beta`, a gateway's own), checked when the file is read.
    pub headers: Option<crate::providers::headers::ExtraHeaders>,
}

/// `[provider] first_byte_timeout_secs`: whole seconds from 1 to [`FirstByteTimeout::MAX`],
/// checked when the file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstByteTimeout(u64);

impl FirstByteTimeout {
    /// An hour: no model thinks longer before it answers, and a larger number is a typo.
    pub const MAX: u64 = 3600;

    /// The seconds.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for FirstByteTimeout {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(d)?;
        value
            .as_integer()
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| (1..=Self::MAX).contains(n))
            .map(Self)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "provider.first_byte_timeout_secs = {value}: it must be a whole number of seconds from 1 to {}",
                    Self::MAX
                ))
            })
    }
}

/// `[provider] context_window`: a whole number of tokens from
/// [`CONTEXT_WINDOW_MIN`](crate::providers::limits::CONTEXT_WINDOW_MIN) to
/// [`CONTEXT_WINDOW_BOUND`](crate::providers::limits::CONTEXT_WINDOW_BOUND), checked when the file
/// is read so the error names the key, the file and the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextWindow(u64);

impl ContextWindow {
    /// The number of tokens.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for ContextWindow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::providers::limits::{CONTEXT_WINDOW_BOUND, CONTEXT_WINDOW_MIN};
        let value = toml::Value::deserialize(d)?;
        value
            .as_integer()
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| (CONTEXT_WINDOW_MIN..=CONTEXT_WINDOW_BOUND).contains(n))
            .map(Self)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "provider.context_window = {value}: it must be a whole number of tokens from {CONTEXT_WINDOW_MIN} to {CONTEXT_WINDOW_BOUND}"
                ))
            })
    }
}

/// `[provider] max_output_tokens`: a whole number of tokens from 1 to
/// [`MAX_OUTPUT_TOKENS_BOUND`](crate::providers::limits::MAX_OUTPUT_TOKENS_BOUND). Checked when
/// the file is read, so the error names the key, the file and the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxOutputTokens(u32);

impl MaxOutputTokens {
    /// The number of tokens.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl<'de> Deserialize<'de> for MaxOutputTokens {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::providers::limits::MAX_OUTPUT_TOKENS_BOUND;
        // Any value first, so that a string or a fraction is named with the key too.
        let value = toml::Value::deserialize(d)?;
        value
            .as_integer()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=MAX_OUTPUT_TOKENS_BOUND).contains(n))
            .map(Self)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "provider.max_output_tokens = {value}: it must be a whole number of tokens from 1 to {MAX_OUTPUT_TOKENS_BOUND}"
                ))
            })
    }
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
    fn the_sandbox_section_sets_paths_and_refuses_protected_paths_that_leave_the_workspace() {
        let text = "[sandbox]\nread_paths = [\"/opt/sdk\"]\nprotected_paths = [\".git/hooks\", \"deploy/keys\"]\n";
        let c = parse(text, "c.toml").unwrap();
        let mut spec = crate::worker::default_sandbox("/w".into(), "/t".into(), None);
        c.sandbox.unwrap().apply(&mut spec, text, "c.toml").unwrap();
        assert_eq!(spec.read_paths, vec![std::path::PathBuf::from("/opt/sdk")]);
        assert_eq!(spec.protected_paths, vec![".git/hooks", "deploy/keys"]);
        for bad in ["\"../x\"", "\"/etc\"", "\"\""] {
            let text = format!("[sandbox]\nprotected_paths = [\".git/hooks\",\n  {bad}]\n");
            let c = parse(&text, "c.toml").unwrap();
            let err = c
                .sandbox
                .unwrap()
                .apply(&mut spec, &text, "c.toml")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("c.toml:3:") && err.contains("protected_paths"),
                "{err}"
            );
        }
        let text = "[sandbox]\nwrite_paths = [\"relative\"]\n";
        let c = parse(text, "c.toml").unwrap();
        assert!(c.sandbox.unwrap().apply(&mut spec, text, "c.toml").is_err());
    }

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
        let c = parse("[agent]\nsubagent_max_steps = 7\n", "c.toml").unwrap();
        assert_eq!(AgentSection::subagent_max_steps(c.agent.as_ref()), 7);
        assert_eq!(
            AgentSection::subagent_max_steps(None),
            crate::agent::subagent::DEFAULT_MAX_STEPS
        );
        let err = parse("\n[agent]\nsubagent_max_steps = 0\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("c.toml:3:") && err.contains("nonzero"),
            "{err}"
        );
        let c = parse("[provider]\nmax_output_tokens = 32000\n", "c.toml").unwrap();
        let cap = c
            .provider
            .unwrap()
            .max_output_tokens
            .map(MaxOutputTokens::get);
        assert_eq!(cap, Some(32000));
        for bad in ["-5", "0", "1000001", "99999999999", "\"lots\"", "1.5"] {
            let text = format!("[provider]\nmodel = \"m\"\nmax_output_tokens = {bad}\n");
            let err = parse(&text, "/etc/agentd/config.toml")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("/etc/agentd/config.toml:3:")
                    && err.contains("provider.max_output_tokens")
                    && err.contains("from 1 to 1000000"),
                "{bad}: {err}"
            );
        }
        let err = parse("[providers]\nmodel = \"x\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("c.toml:1:") && err.contains("providers"),
            "{err}"
        );
    }
}
