//! Anthropic's prompt cache, as the mock keeps it
//! (<https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching>):
//!
//! - A request may mark at most four blocks with `cache_control`; a fifth is a 400 ("A maximum
//!   of 4 blocks with cache_control may be provided. Found 5.").
//! - The prompt is read in the order tools, system, messages. The prefix up to and including a
//!   marked block (a breakpoint) is written to the cache when it is at least the model's minimum
//!   (1024 tokens for Claude Sonnet and Opus); a shorter one is silently not cached.
//! - A request reads the longest cached prefix that ends at one of its breakpoints or at a block
//!   boundary up to 20 blocks before one ("the system automatically checks for cache hits at
//!   all previous content block boundaries, up to approximately 20 blocks before your explicit
//!   breakpoint"). What was read is reported as `cache_read_input_tokens`; what it wrote from
//!   there to its last breakpoint as `cache_creation_input_tokens`; the rest as `input_tokens`
//!   (billed at 0.1×, 1.25× and 1× the input price).
//!
//! The `cache_control` markers are not part of what is compared: moving a breakpoint does not
//! change the prefix. Tokens are counted as bytes / 4, as in [`super::context`]. Entries never
//! expire (a scripted session is far shorter than the five-minute lifetime).

use super::Reply;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

/// The most breakpoints one request may set.
pub const MAX_BREAKPOINTS: usize = 4;
/// The shortest prefix that is cached, tokens (Claude Sonnet and Opus).
pub const MIN_CACHED_TOKENS: u64 = 1024;
/// How many block boundaries before a breakpoint are checked for a cached prefix.
const LOOKBACK: usize = 20;

/// The cached prefixes, by their hash.
#[derive(Debug, Default)]
pub(super) struct PromptCache {
    entries: HashSet<u64>,
}

/// What one request was billed, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Billed {
    /// At the full input price.
    pub input: u64,
    /// Read from the cache.
    pub read: u64,
    /// Written to the cache.
    pub write: u64,
}

/// The prompt's blocks in the order the cache reads them, each with whether it is a breakpoint;
/// the markers are taken out of the blocks.
fn blocks(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut push = |prefix: &str, block: &Value| {
        let marked = block.get("cache_control").is_some();
        let mut block = block.clone();
        if let Some(o) = block.as_object_mut() {
            o.remove("cache_control");
        }
        out.push((format!("{prefix}{block}"), marked));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push("tool:", tool);
    }
    match &body["system"] {
        Value::Array(system) => system.iter().for_each(|b| push("system:", b)),
        Value::Null => {}
        text => push("system:", &json!({"type": "text", "text": text})),
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = format!("{}:", m["role"].as_str().unwrap_or_default());
        match &m["content"] {
            Value::Array(content) => content.iter().for_each(|b| push(&role, b)),
            text => push(&role, &json!({"type": "text", "text": text})),
        }
    }
    out
}

/// Refuses more than [`MAX_BREAKPOINTS`] marked blocks, as the API does.
pub(super) fn check(body: &Value) -> Result<(), String> {
    let found = blocks(body).iter().filter(|(_, marked)| *marked).count();
    if found > MAX_BREAKPOINTS {
        return Err(format!(
            "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {found}."
        ));
    }
    Ok(())
}

impl PromptCache {
    /// Bills a request of `body` whose whole prompt is `total` tokens, and caches its prefixes.
    pub(super) fn bill(&mut self, body: &Value, total: u64) -> Billed {
        let blocks = blocks(body);
        let mut hashes = Vec::with_capacity(blocks.len());
        let mut ends = Vec::with_capacity(blocks.len());
        let (mut hasher, mut tokens) = (DefaultHasher::new(), 0u64);
        for (text, _) in &blocks {
            text.hash(&mut hasher);
            hashes.push(hasher.finish());
            tokens += super::context::tokens_of(text.len());
            ends.push(tokens);
        }
        let marks: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].1).collect();
        let Some(&last) = marks.last() else {
            return Billed {
                input: total,
                read: 0,
                write: 0,
            };
        };
        let hit = marks
            .iter()
            .flat_map(|&b| (b.saturating_sub(LOOKBACK)..=b).rev())
            .filter(|&i| self.entries.contains(&hashes[i]))
            .max();
        let read = hit.map_or(0, |i| ends[i]);
        let write = if ends[last] >= MIN_CACHED_TOKENS {
            ends[last] - read
        } else {
            0
        };
        for &b in &marks {
            if ends[b] >= MIN_CACHED_TOKENS {
                self.entries.insert(hashes[b]);
            }
        }
        let total = total.max(read + write);
        Billed {
            input: total - read - write,
            read,
            write,
        }
    }
}

/// `usage` with the cache's counts, as Anthropic reports them.
fn set_usage(usage: &mut Value, billed: Billed) {
    usage["input_tokens"] = json!(billed.input);
    usage["cache_read_input_tokens"] = json!(billed.read);
    usage["cache_creation_input_tokens"] = json!(billed.write);
}

/// `reply` with its usage (a message's, or a stream's `message_start`) replaced by `billed`.
pub(super) fn with_usage(reply: Reply, billed: Billed) -> Reply {
    match reply {
        Reply::Json {
            status,
            headers,
            body,
        } => {
            let body = match serde_json::from_str::<Value>(&body) {
                Ok(mut v) if v.get("usage").is_some() => {
                    set_usage(&mut v["usage"], billed);
                    v.to_string()
                }
                _ => body,
            };
            Reply::Json {
                status,
                headers,
                body,
            }
        }
        Reply::Sse { events, pause, cut } => {
            let events = events
                .into_iter()
                .map(|e| match serde_json::from_str::<Value>(&e) {
                    Ok(mut v) if v["type"] == "message_start" => {
                        set_usage(&mut v["message"]["usage"], billed);
                        v.to_string()
                    }
                    _ => e,
                })
                .collect();
            Reply::Sse { events, pause, cut }
        }
        other => other,
    }
}
