//! Which model to talk to: `PROVIDER`, `BASE_URL`, `API_KEY`, `MODEL` — from `~/.agents/env`
//! (KEY=VALUE lines, compatible with the simple harnesses people already use), overridden by the
//! environment, overridden by command-line flags. A missing value is an error that says which and
//! where to set it.
//!
//! When `API_KEY` is unset, the provider's own variable is used — `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` (then `GOOGLE_API_KEY`), as their SDKs read them — but
//! only for the provider's own endpoint: a key for api.openai.com is never sent to another
//! `BASE_URL` (a proxy, a local server) just because it is in the environment. `API_KEY` is the
//! explicit choice, sent wherever `BASE_URL` points.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (the default).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini.
    Gemini,
}

impl ProviderKind {
    /// Parses `openai`, `anthropic` or `gemini`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-compatible" => Some(Self::OpenAi),
            "anthropic" => Some(Self::Anthropic),
            "gemini" | "google" => Some(Self::Gemini),
            _ => None,
        }
    }

    /// The provider's own key variables, read when `API_KEY` is unset and `BASE_URL` is the
    /// provider's own endpoint, first found wins.
    pub fn key_variables(self) -> &'static [&'static str] {
        match self {
            Self::OpenAi => &["OPENAI_API_KEY"],
            Self::Anthropic => &["ANTHROPIC_API_KEY"],
            Self::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        }
    }

    /// The provider's own endpoint, used when `BASE_URL` is not set.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
            Self::Gemini => "https://generativelanguage.googleapis.com/v1beta",
        }
    }
}

/// Resolved settings.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderSettings {
    /// The wire format.
    pub kind: ProviderKind,
    /// The API root.
    pub base_url: String,
    /// The key, if any (local servers need none).
    pub api_key: Option<String>,
    /// The model name.
    pub model: String,
}

impl std::fmt::Debug for ProviderSettings {
    /// The key is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("model", &self.model)
            .finish()
    }
}

/// Why settings could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A required value is missing.
    #[error(
        "no {name} is set: put `{name}=…` in {env_file} or set the {name} environment variable{hint}"
    )]
    Missing {
        /// Which.
        name: &'static str,
        /// The env file looked at.
        env_file: String,
        /// More help.
        hint: &'static str,
    },
    /// A value is not valid.
    #[error("{name}={value:?} (from {source_name}) is not valid: {why}")]
    Invalid {
        /// Which.
        name: &'static str,
        /// The value.
        value: String,
        /// Where it came from.
        source_name: String,
        /// Why.
        why: &'static str,
    },
    /// The env file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A line of the env file is not KEY=VALUE.
    #[error("{path}:{line}: expected KEY=VALUE, got {text:?}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// The line.
        text: String,
    },
}

/// `~/.agents/env`.
pub fn default_env_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".agents/env"))
}

/// Parses KEY=VALUE lines: `#` comments, blank lines, an optional `export `, optional quotes.
pub fn parse_env_file(text: &str, path: &str) -> Result<HashMap<String, String>, SettingsError> {
    let mut out = HashMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(SettingsError::Syntax {
                path: path.into(),
                line: n + 1,
                text: raw.into(),
            });
        };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        out.insert(key.trim().to_owned(), value.to_owned());
    }
    Ok(out)
}

/// Values given on the command line, which win over everything.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--model`.
    pub model: Option<String>,
}

/// Resolves the settings from `env_file` (if it exists), the process environment and `overrides`.
pub fn resolve(
    env_file: Option<&Path>,
    overrides: &Overrides,
) -> Result<ProviderSettings, SettingsError> {
    resolve_with(env_file, overrides, |name| std::env::var(name).ok())
}

/// [`resolve`] with the config file's `[provider]` section as the lowest layer.
pub fn resolve_layered(
    config: Option<&crate::config::ProviderSection>,
    env_file: Option<&Path>,
    overrides: &Overrides,
) -> Result<ProviderSettings, SettingsError> {
    let config = config.cloned().unwrap_or_default();
    let from_config = move |name: &str| match name {
        "PROVIDER" => config.kind.clone(),
        "BASE_URL" => config.base_url.clone(),
        "MODEL" => config.model.clone(),
        "API_KEY" => config.api_key.clone(),
        _ => None,
    };
    resolve_layers(
        env_file,
        overrides,
        |name| std::env::var(name).ok(),
        from_config,
    )
}

/// [`resolve`] with the environment given as a function (for tests).
pub fn resolve_with(
    env_file: Option<&Path>,
    overrides: &Overrides,
    environment: impl Fn(&str) -> Option<String>,
) -> Result<ProviderSettings, SettingsError> {
    resolve_layers(env_file, overrides, environment, |_| None)
}

/// The layers, lowest first: `config`, then `env_file`, then `environment`, then `overrides`.
fn resolve_layers(
    env_file: Option<&Path>,
    overrides: &Overrides,
    environment: impl Fn(&str) -> Option<String>,
    config: impl Fn(&str) -> Option<String>,
) -> Result<ProviderSettings, SettingsError> {
    let env_name = env_file.map_or_else(|| "~/.agents/env".to_owned(), |p| p.display().to_string());
    let file = match env_file {
        Some(path) if path.is_file() => {
            let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
                path: env_name.clone(),
                source,
            })?;
            parse_env_file(&text, &env_name)?
        }
        _ => HashMap::new(),
    };
    let lookup = |name: &str| -> Option<(String, String)> {
        environment(name)
            .filter(|v| !v.is_empty())
            .map(|v| (v, format!("the {name} environment variable")))
            .or_else(|| {
                file.get(name)
                    .filter(|v| !v.is_empty())
                    .map(|v| (v.clone(), env_name.clone()))
            })
            .or_else(|| {
                config(name)
                    .filter(|v| !v.is_empty())
                    .map(|v| (v, "the config file's [provider]".to_owned()))
            })
    };
    let (kind, kind_source) = match overrides
        .provider
        .clone()
        .map(|p| (p, "--provider".to_owned()))
        .or_else(|| lookup("PROVIDER"))
    {
        Some((value, source_name)) => match ProviderKind::parse(&value) {
            Some(kind) => (kind, source_name),
            None => {
                return Err(SettingsError::Invalid {
                    name: "PROVIDER",
                    value,
                    source_name,
                    why: "use openai, anthropic or gemini",
                });
            }
        },
        None => (ProviderKind::OpenAi, "the default".to_owned()),
    };
    let _ = kind_source;
    let base_url = overrides
        .base_url
        .clone()
        .or_else(|| lookup("BASE_URL").map(|(v, _)| v))
        .unwrap_or_else(|| kind.default_base_url().to_owned());
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(SettingsError::Invalid {
            name: "BASE_URL",
            value: base_url,
            source_name: env_name,
            why: "it must start with http:// or https://",
        });
    }
    let own_endpoint = base_url == kind.default_base_url();
    let api_key = lookup("API_KEY").map(|(v, _)| v).or_else(|| {
        // The provider's own variable, for its own endpoint only (see the module's comment).
        kind.key_variables()
            .iter()
            .filter(|_| own_endpoint)
            .find_map(|name| lookup(name).map(|(v, _)| v))
    });
    if api_key.is_none() && own_endpoint {
        return Err(SettingsError::Missing {
            name: "API_KEY",
            env_file: env_name,
            hint: match kind {
                ProviderKind::OpenAi => " (or OPENAI_API_KEY)",
                ProviderKind::Anthropic => " (or ANTHROPIC_API_KEY)",
                ProviderKind::Gemini => " (or GEMINI_API_KEY)",
            },
        });
    }
    let model = overrides
        .model
        .clone()
        .or_else(|| lookup("MODEL").map(|(v, _)| v))
        .ok_or(SettingsError::Missing {
            name: "MODEL",
            env_file: env_name.clone(),
            hint: ", e.g. MODEL=gpt-4.1",
        })?;
    Ok(ProviderSettings {
        kind,
        base_url,
        api_key,
        model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_files_parse_like_shells_write_them() {
        let text = "# keys\nexport API_KEY=\"sk-1\"\nMODEL='gpt-4.1'\n\nBASE_URL = http://localhost:11434/v1\n";
        let m = parse_env_file(text, "env").unwrap();
        assert_eq!(m["API_KEY"], "sk-1");
        assert_eq!(m["MODEL"], "gpt-4.1");
        assert_eq!(m["BASE_URL"], "http://localhost:11434/v1");
        let err = parse_env_file("MODEL=x\njust words\n", "/home/u/.agents/env").unwrap_err();
        assert_eq!(
            err.to_string(),
            "/home/u/.agents/env:2: expected KEY=VALUE, got \"just words\""
        );
    }

    #[test]
    fn each_providers_own_key_variable_is_a_fallback_for_its_own_endpoint_only() {
        let env_with = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        for (provider, var) in [
            ("openai", "OPENAI_API_KEY"),
            ("anthropic", "ANTHROPIC_API_KEY"),
            ("gemini", "GEMINI_API_KEY"),
            ("gemini", "GOOGLE_API_KEY"),
        ] {
            let flags = Overrides {
                provider: Some(provider.into()),
                model: Some("m".into()),
                ..Overrides::default()
            };
            let env = move |name: &str| (name == var).then(|| format!("key-from-{var}"));
            let s = resolve_with(None, &flags, env).unwrap();
            assert_eq!(s.api_key, Some(format!("key-from-{var}")), "{provider}");
            // Another provider's variable is not this one's key.
            let other = |name: &str| (name == "MISTRAL_API_KEY").then(|| "k".to_owned());
            let err = resolve_with(None, &flags, other).unwrap_err().to_string();
            assert!(
                err.starts_with("no API_KEY is set") && err.contains("_API_KEY)"),
                "{err}"
            );
            // Never sent to another endpoint.
            let elsewhere = Overrides {
                base_url: Some("http://127.0.0.1:1/v1".into()),
                ..flags.clone()
            };
            let s = resolve_with(None, &elsewhere, env).unwrap();
            assert_eq!(
                s.api_key, None,
                "{provider}: {var} went to another endpoint"
            );
        }
        let both = env_with(&[("API_KEY", "explicit"), ("OPENAI_API_KEY", "fallback")]);
        let flags = Overrides {
            model: Some("m".into()),
            ..Overrides::default()
        };
        assert_eq!(
            resolve_with(None, &flags, both).unwrap().api_key.as_deref(),
            Some("explicit"),
            "API_KEY wins"
        );
        let gemini_first = env_with(&[("GOOGLE_API_KEY", "g2"), ("GEMINI_API_KEY", "g1")]);
        let flags = Overrides {
            provider: Some("gemini".into()),
            ..flags
        };
        assert_eq!(
            resolve_with(None, &flags, gemini_first)
                .unwrap()
                .api_key
                .as_deref(),
            Some("g1")
        );
    }

    #[test]
    fn settings_come_from_the_file_and_flags_win() {
        let dir = std::env::temp_dir().join(format!("agentd-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("env");
        std::fs::write(
            &file,
            "PROVIDER=anthropic\nBASE_URL=http://127.0.0.1:1\nMODEL=claude-x\n",
        )
        .unwrap();
        let none = |_: &str| None;
        let s = resolve_with(
            Some(&file),
            &Overrides {
                model: Some("flag-model".into()),
                ..Overrides::default()
            },
            none,
        )
        .unwrap();
        assert_eq!(s.kind, ProviderKind::Anthropic);
        assert_eq!(s.model, "flag-model");
        assert!(s.api_key.is_none());
        assert!(!format!("{s:?}").contains("sk-"));
        std::fs::write(&file, "PROVIDER=mistral\n").unwrap();
        let err = resolve_with(Some(&file), &Overrides::default(), none)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("PROVIDER=\"mistral\"") && err.contains("openai, anthropic or gemini"),
            "{err}"
        );
        std::fs::write(&file, "BASE_URL=http://127.0.0.1:1\n").unwrap();
        let err = resolve_with(Some(&file), &Overrides::default(), none)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("no MODEL is set: put `MODEL=…` in "),
            "{err}"
        );
        let config = crate::config::ProviderSection {
            model: Some("from-config".into()),
            kind: Some("gemini".into()),
            ..Default::default()
        };
        std::fs::write(&file, "BASE_URL=http://127.0.0.1:1\nMODEL=from-file\n").unwrap();
        let s = resolve_layers(Some(&file), &Overrides::default(), none, |n| match n {
            "MODEL" => config.model.clone(),
            "PROVIDER" => config.kind.clone(),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            (s.model.as_str(), s.kind),
            ("from-file", ProviderKind::Gemini),
            "the env file wins over the config file, which fills the gaps"
        );
        let env = |name: &str| (name == "MODEL").then(|| "from-env".to_owned());
        std::fs::write(&file, "BASE_URL=http://127.0.0.1:1\nMODEL=from-file\n").unwrap();
        assert_eq!(
            resolve_with(Some(&file), &Overrides::default(), env)
                .unwrap()
                .model,
            "from-env",
            "the environment wins over the file"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
