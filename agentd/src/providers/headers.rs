//! `[provider] headers`: extra request headers for every model call — OpenRouter's
//! `HTTP-Referer` and `X-Title`, `anthropic-beta`, a gateway's own.
//!
//! Checked when the config is read, so a bad one is an error naming the key, the file and the
//! line: each name must be a valid HTTP header name and each value a valid value (no CR, LF or
//! other control characters: a header cannot be split into two). Refused, whatever the value:
//! the headers the adapter sets itself (the body's framing — `content-type`, `content-length`,
//! `transfer-encoding`, `host`, `connection` — and each provider's key header, `authorization`,
//! `x-api-key`, `x-goog-api-key`), so that the key has one place (`API_KEY`) and the request one
//! framing.
//!
//! Values are never printed when they may be a credential: [`ExtraHeaders`]'s `Debug` shows
//! `<redacted>` for a name that says key, token, secret, auth, cookie or signature, and for a
//! value that looks like one (`sk-…`, `Bearer …`, long unbroken text).

use serde::Deserialize;

/// The headers no config may set (lower case): the adapter's own.
const RESERVED: &[&str] = &[
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "content-type",
    "content-length",
    "transfer-encoding",
    "host",
    "connection",
];

/// The most headers, and the longest value, a config may give: far past any real need.
const MAX_HEADERS: usize = 32;
const MAX_VALUE_BYTES: usize = 4096;

/// Extra headers, checked; names lower-cased.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExtraHeaders(Vec<(String, String)>);

impl ExtraHeaders {
    /// The headers, names lower-cased, in the file's order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// Checks `pairs` as the config's would be; `Err` says which and why.
    pub fn new(pairs: Vec<(String, String)>) -> Result<Self, String> {
        if pairs.len() > MAX_HEADERS {
            return Err(format!("at most {MAX_HEADERS} headers may be given"));
        }
        let mut out = Vec::with_capacity(pairs.len());
        for (name, value) in pairs {
            let lower = name.to_ascii_lowercase();
            if reqwest::header::HeaderName::from_bytes(lower.as_bytes()).is_err() {
                return Err(format!("{name:?} is not a valid HTTP header name"));
            }
            if RESERVED.contains(&lower.as_str()) {
                return Err(format!(
                    "{name:?} is set by agentd itself (the key goes in API_KEY), and cannot be given here"
                ));
            }
            let valid = value.len() <= MAX_VALUE_BYTES
                && value
                    .bytes()
                    .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
            if !valid {
                return Err(format!(
                    "the value of {name:?} must be printable ASCII of at most {MAX_VALUE_BYTES} bytes (no line breaks or control characters)"
                ));
            }
            out.push((lower, value));
        }
        Ok(Self(out))
    }
}

/// Whether a header may hold a credential, by its name or its value.
fn secret(name: &str, value: &str) -> bool {
    let by_name = [
        "key",
        "token",
        "secret",
        "auth",
        "cookie",
        "signature",
        "password",
    ]
    .iter()
    .any(|w| name.contains(w));
    let v = value.trim();
    let by_value = v.starts_with("sk-")
        || v.to_ascii_lowercase().starts_with("bearer ")
        || (v.len() >= 24 && !v.contains(' '));
    by_name || by_value
}

impl std::fmt::Debug for ExtraHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(n, v)| {
                let shown = if secret(n, v) {
                    "<redacted>"
                } else {
                    v.as_str()
                };
                (n, shown)
            }))
            .finish()
    }
}

impl<'de> Deserialize<'de> for ExtraHeaders {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(d)?;
        let mut pairs = Vec::with_capacity(table.len());
        for (name, value) in table {
            let toml::Value::String(value) = value else {
                return Err(serde::de::Error::custom(format!(
                    "provider.headers.{name}: a header's value must be a string"
                )));
            };
            pairs.push((name, value));
        }
        Self::new(pairs).map_err(|why| serde::de::Error::custom(format!("provider.headers: {why}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, value: &str) -> Result<ExtraHeaders, String> {
        ExtraHeaders::new(vec![(name.into(), value.into())])
    }

    #[test]
    fn valid_headers_are_taken_and_bad_or_reserved_ones_refused() {
        assert!(one("HTTP-Referer", "https://example.org").is_ok());
        assert!(one("anthropic-beta", "prompt-caching-2024-07-31").is_ok());
        for (name, value) in [
            ("bad name", "x"),
            ("x:y", "x"),
            ("", "x"),
            ("X-Title", "a\r\nx-evil: 1"),
            ("X-Title", "nul\0"),
            ("Authorization", "Bearer x"),
            ("x-api-key", "k"),
            ("Content-Length", "3"),
            ("Host", "evil.example"),
        ] {
            assert!(one(name, value).is_err(), "{name:?}: {value:?}");
        }
    }

    #[test]
    fn credentials_are_never_printed() {
        let h = ExtraHeaders::new(vec![
            ("X-Title".into(), "my agent".into()),
            ("api-key".into(), "abc".into()),
            ("X-Gateway".into(), "sk-live-123456".into()),
            ("X-Proxy".into(), "Bearer abc".into()),
            ("X-Opaque".into(), "0123456789abcdef0123456789abcdef".into()),
        ])
        .unwrap();
        let shown = format!("{h:?}");
        assert!(shown.contains("my agent"), "{shown}");
        for secret in ["abc", "sk-live", "0123456789abcdef"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
}
