//! `agentd sandbox`: run a command through a real tool-worker, exactly as a bash tool call would,
//! to see what the sandbox allows on this machine.

use crate::inert::{inert, inert_line};
use crate::worker;
use crate::worker::tmp::{Owner, PrivateDir};
use anyhow::{Context as _, Result, bail};
use protocol::worker::{
    BashRequest, ResourceLimits, SandboxProfile, SandboxSpec, ToolRequest, ToolResult,
};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `agentd sandbox`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: the command's own; 124 if it timed out; 125 if the sandbox could not run it.\n\nExamples:\n  agentd sandbox -- cat ~/.ssh/id_rsa          # fails: home is not readable\n  agentd sandbox --verbose -- 'ls | wc -l'     # one argument: run as shell text\n  agentd sandbox --network -- curl -sI https://example.com"
)]
pub struct SandboxArgs {
    /// The workspace: readable and writable, the command's working directory (default: the
    /// current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Filesystem profile.
    #[arg(long, value_name = "PROFILE", default_value = "workspace-write", value_parser = ["read-only", "workspace-write", "full-access"])]
    pub profile: String,
    /// Allow TCP/UDP sockets.
    #[arg(long)]
    pub network: bool,
    /// Wall-clock limit in seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub timeout: f64,
    /// Address-space limit, in bytes or with a K, M or G suffix.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub memory: Option<u64>,
    /// Also readable (and executable), like `sandbox.read_paths` in the config; repeatable.
    #[arg(long = "read-path", value_name = "PATH")]
    pub read_paths: Vec<PathBuf>,
    /// Also writable, like `sandbox.write_paths` in the config; repeatable.
    #[arg(long = "write-path", value_name = "PATH")]
    pub write_paths: Vec<PathBuf>,
    /// Print the lockdown achieved (to stderr).
    #[arg(long)]
    pub verbose: bool,
    /// Allow a workspace that is `/`, a home or holds one, a system directory, or holds the
    /// agent's config, keys or state (refused otherwise); its secrets stay hidden from the call.
    #[arg(long)]
    pub allow_broad_workspace: bool,
    /// The command. One argument is shell text (`'ls | wc -l'`); several are quoted and joined.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Parses `256M`, `1G`, `4096`, `64k`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size: use bytes or a K, M or G suffix"))?;
    let mult = match unit.to_ascii_uppercase().trim_end_matches(['B', 'I']) {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return Err(format!("{s:?}: unknown unit {unit:?}; use K, M or G")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// Quotes one word for `sh`.
fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `paths` made absolute, symlinks not resolved (the worker refuses one a call could have made:
/// resolving it here would hand the call its target); an error names the flag and the path
/// that does not exist.
fn absolute(paths: &[PathBuf], flag: &str) -> Result<Vec<PathBuf>> {
    paths
        .iter()
        .map(|p| {
            std::path::absolute(p)
                .ok()
                .filter(|a| a.exists())
                .with_context(|| format!("{flag} {}: no such file or directory", p.display()))
        })
        .collect()
}

/// Runs `agentd sandbox`; returns the exit code.
pub fn run(args: SandboxArgs) -> Result<i32> {
    // The call's private temp dir (random name, 0700, ours) lives until the call is over.
    let (spec, tool, _tmp) = call(&args)?;
    let worker_bin = worker::locate_worker().context(
        "cannot find the tool-worker binary beside agentd; set AGENTD_TOOL_WORKER to its path",
    )?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(worker::run_tool(&worker_bin, &spec, tool, |_| {}));
    let result = match outcome {
        Ok(result) => result,
        // The worker's words (a lockdown failure's message) are made inert like its output.
        Err(e) => {
            eprintln!("agentd sandbox: {}", inert(&e.to_string()));
            return Ok(125);
        }
    };
    if args.verbose {
        report(&result);
    }
    // What the command printed, with its control sequences shown, not acted on by the terminal.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(inert(&result.content).as_bytes());
    if !result.content.ends_with('\n') && !result.content.is_empty() {
        let _ = stdout.write_all(b"\n");
    }
    let _ = stdout.flush();
    Ok(if result.timed_out {
        124
    } else {
        result.exit_code.unwrap_or(125)
    })
}

/// The call the arguments describe: its sandbox spec, the bash request, and the call's private
/// temp dir (removed when dropped).
fn call(args: &SandboxArgs) -> Result<(SandboxSpec, ToolRequest, PrivateDir)> {
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot determine the current directory")?,
    };
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {} does not exist", workspace.display()))?;
    let guard = crate::workspace_check::Guard {
        allow: args.allow_broad_workspace,
        ..Default::default()
    };
    let hidden = crate::workspace_check::check(&workspace, &guard, None)?;
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!(
            "--timeout must be a positive number of seconds, not {}",
            args.timeout
        );
    }
    let command = match args.command.as_slice() {
        [one] => one.clone(),
        many => many
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
    };
    let profile = match args.profile.as_str() {
        "read-only" => SandboxProfile::ReadOnly,
        "full-access" => SandboxProfile::FullAccess,
        _ => SandboxProfile::WorkspaceWrite,
    };
    let tmp = PrivateDir::create(&std::env::temp_dir(), "agentd-sandbox-", Owner::current())
        .context("cannot create the call's temp dir")?;
    let mut limits = ResourceLimits {
        timeout_ms: (args.timeout * 1000.0) as u64,
        ..ResourceLimits::default()
    };
    if let Some(memory) = args.memory {
        limits.memory_bytes = memory;
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut spec = worker::default_sandbox(workspace, tmp.path().to_owned(), home.as_deref());
    hidden.apply(&mut spec);
    spec.profile = profile;
    spec.network = args.network;
    spec.limits = limits;
    spec.read_paths = absolute(&args.read_paths, "--read-path")?;
    spec.write_paths = absolute(&args.write_paths, "--write-path")?;
    crate::workspace_check::links_protected(&mut spec, home.as_deref(), &guard)?;
    Ok((spec, ToolRequest::Bash(BashRequest { command }), tmp))
}

/// `--verbose`: what the lockdown reported, on stderr.
fn report(result: &ToolResult) {
    let l = &result.lockdown;
    eprintln!(
        "lockdown: landlock {:?} (ABI {}), seccomp {}, no_new_privs {}, capabilities cleared {}, {}, uid {} gid {}",
        l.landlock,
        l.landlock_abi.map_or("none".into(), |a| a.to_string()),
        l.seccomp,
        l.no_new_privs,
        l.capabilities_cleared,
        l.containment,
        l.uid,
        l.gid
    );
    eprintln!(
        "namespaces: mount {}, ipc {}",
        if l.mount_namespace { "yes" } else { "no" },
        if l.ipc_namespace { "yes" } else { "no" }
    );
    for p in &l.protected {
        eprintln!(
            "protected (read-only): {}",
            inert_line(&p.display().to_string())
        );
    }
    eprintln!("cgroup: {}", worker::cgroup::Layout::detect().name());
    for w in &l.warnings {
        eprintln!("warning: {}", inert_line(w));
    }
    eprintln!(
        "{} bytes of output in {} ms{}",
        result.bytes_seen,
        result.duration_ms,
        if result.truncated { ", truncated" } else { "" }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units_and_errors_name_the_input() {
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert!(parse_size("lots").unwrap_err().contains("\"lots\""));
        assert!(parse_size("5T").unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn words_are_quoted_for_sh() {
        assert_eq!(shell_quote("ls"), "ls");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
