//! `agentd policy check`: the policy's verdict on commands, for people and for scripts.

use anyhow::{Context as _, Result};
use policy::{Context, Policy};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// Arguments of `agentd policy check`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  agentd policy check -- rm -rf build\n  agentd policy check --json -- 'git status && cargo test'\n  printf '%s\\n' '{\"command\": \"ls\"}' | agentd policy check --jsonl"
)]
pub struct PolicyCheckArgs {
    /// Config file whose [policy] section applies (default: $XDG_CONFIG_HOME/agentd/config.toml or
    /// ~/.config/agentd/config.toml, else /etc/agentd/config.toml, else the built-in policy alone).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The workspace relative paths resolve against (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long, conflicts_with = "jsonl")]
    pub json: bool,
    /// Read {"command": "…"} objects, one per line, from stdin; write one JSON verdict per line.
    #[arg(long)]
    pub jsonl: bool,
    /// The command to rate; several words are joined with spaces.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The config file `policy check` reads when none is named, if one exists.
pub fn default_config_path() -> Option<PathBuf> {
    let user = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|dir| dir.join("agentd/config.toml"));
    user.into_iter()
        .chain([PathBuf::from("/etc/agentd/config.toml")])
        .find(|p| p.is_file())
}

/// Builds the policy from `config` (or the default config file, or the built-ins).
pub fn load_policy(config: Option<&Path>) -> Result<(Policy, String)> {
    let path = config.map(Path::to_path_buf).or_else(default_config_path);
    match path {
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read config file {}", path.display()))?;
            let name = path.display().to_string();
            // Unknown sections and keys anywhere in the file are errors, not silently ignored.
            crate::config::parse(&text, &name)?;
            let policy = Policy::from_config(&text, &name)?;
            Ok((policy, name))
        }
        None => Ok((Policy::builtin()?, "built-in".to_owned())),
    }
}

/// Runs `agentd policy check`; returns the process exit code.
pub fn run(args: PolicyCheckArgs) -> Result<i32> {
    let (policy, source) = load_policy(args.config.as_deref())?;
    let workspace = match args.workspace {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot determine the current directory")?,
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let ctx = Context {
        workspace: &workspace,
        home: home.as_deref(),
    };
    if args.jsonl {
        if !args.command.is_empty() {
            anyhow::bail!("--jsonl reads commands from stdin; do not also give one after --");
        }
        let stdin = std::io::stdin();
        let stdout = std::io::stdout();
        return jsonl(&policy, &ctx, stdin.lock(), &mut stdout.lock());
    }
    if args.command.is_empty() {
        anyhow::bail!(
            "no command to check: give one after --, e.g. `agentd policy check -- ls -la`"
        );
    }
    let command = args.command.join(" ");
    let decision = policy.check_bash(&command, &ctx);
    if args.json {
        let out = serde_json::json!({
            "command": command,
            "verdict": decision.verdict,
            "reason": decision.reason,
            "policy": source,
        });
        println!("{out}");
    } else {
        println!("{}: {}", decision.verdict, decision.reason);
    }
    Ok(0)
}

/// Rates each `{"command": "…"}` line of `input`, writing one JSON object per line in order. A
/// line that is not such an object gets an `{"error": …}` line; the rest go on.
pub fn jsonl(
    policy: &Policy,
    ctx: &Context<'_>,
    input: impl BufRead,
    out: &mut impl Write,
) -> Result<i32> {
    let mut failed = false;
    for (n, line) in input.lines().enumerate() {
        let line = line.with_context(|| format!("cannot read line {} of stdin", n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(value) => match value.get("command").and_then(|c| c.as_str()) {
                Some(command) => {
                    let d = policy.check_bash(command, ctx);
                    serde_json::json!({ "command": command, "verdict": d.verdict, "reason": d.reason })
                }
                None => {
                    failed = true;
                    serde_json::json!({ "line": n + 1, "error": "expected an object with a string \"command\"" })
                }
            },
            Err(e) => {
                failed = true;
                serde_json::json!({ "line": n + 1, "error": format!("not JSON: {e}") })
            }
        };
        writeln!(out, "{reply}").context("cannot write to stdout")?;
    }
    out.flush().context("cannot write to stdout")?;
    Ok(if failed { 1 } else { 0 })
}
