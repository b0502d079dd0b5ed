//! The worker channel: agentd ⇄ one tool-worker, over a socketpair, for exactly one tool call.
//!
//! The order is fixed (a worker rejects anything out of phase):
//! 1. supervisor → worker: [`ToWorker::Spec`] — the sandbox to build;
//! 2. worker locks itself down, then → [`FromWorker::Ready`] with the lockdown achieved
//!    (or [`FromWorker::Failed`] naming the step that failed, and exits);
//! 3. supervisor → worker: [`ToWorker::Run`] — the one tool request, read only after lockdown;
//! 4. worker → supervisor: any number of [`FromWorker::Output`], then one [`FromWorker::Result`];
//!    then it exits. A worker that dies before its result is turned into an error by the supervisor.

use crate::wire_enum;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

wire_enum! {
    /// Supervisor → worker.
    pub enum ToWorker {
        /// The sandbox to build; always the first message.
        Spec(SandboxSpec),
        /// The tool request; only after the worker reported `ready`.
        Run(RunTool),
    }
}

wire_enum! {
    /// Worker → supervisor.
    pub enum FromWorker {
        /// Lockdown is complete; this is what was achieved.
        Ready(LockdownReport),
        /// A piece of output while the tool runs.
        Output(OutputChunk),
        /// The tool's one final result; the worker exits after it.
        Result(ToolResult),
        /// The worker could not lock down or serve the request; it exits after this.
        Failed(WorkerFailure),
    }
}

/// Filesystem profile of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxProfile {
    /// Read system paths and the workspace; write only the private temp dir.
    ReadOnly,
    /// Read system paths; read and write the workspace and the private temp dir (the default).
    #[default]
    WorkspaceWrite,
    /// No filesystem rules; the seccomp core still applies.
    FullAccess,
}

impl SandboxProfile {
    /// The name used in configuration and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxProfile::ReadOnly => "read-only",
            SandboxProfile::WorkspaceWrite => "workspace-write",
            SandboxProfile::FullAccess => "full-access",
        }
    }
}

/// Everything the worker needs to lock itself down.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSpec {
    /// The workspace: the tool's working directory and where relative paths resolve.
    pub workspace: PathBuf,
    /// A private, per-call temp dir (`TMPDIR`), writable in every profile.
    pub tmp_dir: PathBuf,
    /// The filesystem profile.
    pub profile: SandboxProfile,
    /// Whether TCP/UDP sockets are allowed.
    pub network: bool,
    /// Extra paths readable (and executable), from the configuration.
    pub read_paths: Vec<PathBuf>,
    /// Extra paths writable, from the configuration.
    pub write_paths: Vec<PathBuf>,
    /// Resource limits.
    pub limits: ResourceLimits,
    /// The identity to drop to when the worker starts as root.
    pub run_as: Option<RunAs>,
    /// The tool's whole environment (built from an allowlist by the supervisor).
    pub env: Vec<EnvVar>,
    /// Refuse to run when Landlock cannot be enforced (the default); `false` only by explicit config.
    pub require_landlock: bool,
    /// Paths inside the writable roots (workspace and `write_paths`, not `tmp_dir`) that stay
    /// read-only although their parent is writable: relative to each root, `*` matching one path
    /// component (`.git/modules/*/hooks`). [`DEFAULT_PROTECTED_PATHS`] unless configured.
    #[serde(default)]
    pub protected_paths: Vec<String>,
    /// The workspace directory's identity (device, inode), taken when the session was made,
    /// with the owner's rights: a worker whose working directory, entered after its mounts, is
    /// another directory refuses the call, and the supervisor moves or makes nothing in it — a
    /// path component swapped for a symlink would otherwise point a root daemon's worker at
    /// someone else's files. `None`: not checked.
    #[serde(default)]
    pub workspace_identity: Option<(u64, u64)>,
    /// Every repository below the writable roots' top (a directory holding a `.git`, or a bare
    /// git directory), absolute, as the supervisor's walk found them: each gets the protection
    /// the root's repository has (its git directory's hooks, config, info, …), whatever its
    /// depth. Filled by the supervisor for each call; empty: only the roots and one level down.
    #[serde(default)]
    pub repositories: Vec<PathBuf>,
    /// Paths inside the workspace (or another kept root) that no call may read or write,
    /// although what holds them is readable and writable: a broad workspace's secrets (a home's
    /// `.ssh`, the agent's config, keys and state), allowed only with `allow_broad_workspace`.
    /// Each existing one is covered by an empty read-only mount; one that holds a kept root has
    /// everything else in it covered instead. Missing ones are left to `protected_paths`.
    #[serde(default)]
    pub hidden_inside: Vec<PathBuf>,
}

/// What a call may not change inside its writable roots, because something outside the sandbox
/// runs or trusts it later: git's hooks and config (`core.hooksPath`, `core.fsmonitor`, aliases),
/// also of submodules and linked worktrees, the editors' per-project settings and tasks (VS Code,
/// JetBrains, Zed, a `*.code-workspace`, a dev container's `initializeCommand`, which runs on the
/// host; Helix's language servers; Vim's and Neovim's `exrc` files), and other coding agents'
/// project settings, whose hooks, MCP servers and test commands run when the user starts that
/// agent in the folder (Claude Code, Cursor, Gemini CLI, Codex, opencode, Roo, Kiro, Amazon Q,
/// aider).
///
/// `info` is on the list because what it holds changes what the user reviews: `info/exclude`
/// hides a planted file from `git status`, `info/grafts` rewrites what `git log` shows.
/// `commondir` and `config.worktree` are on the list because git takes its config and hooks from
/// them too: a `commondir` naming a directory the call wrote redirects everything. Submodules'
/// git directories may nest (`.git/modules/vendor/lib`), hence `**`; a repository one level
/// down (`sub/.git`) is run by the parent's `git status` once it is in the index. Beyond the
/// list, the worker protects a `.git` that is a file (`gitdir:`) and what it names (also a
/// submodule's deeper down, where `.gitmodules` places it), the directory a `commondir` names,
/// and a `core.hooksPath` inside the workspace.
pub const DEFAULT_PROTECTED_PATHS: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/info",
    ".git/modules/**/hooks",
    ".git/modules/**/config",
    ".git/modules/**/config.worktree",
    ".git/modules/**/commondir",
    ".git/modules/**/info",
    ".git/worktrees/*/hooks",
    ".git/worktrees/*/config",
    ".git/worktrees/*/config.worktree",
    ".git/worktrees/*/commondir",
    ".git/worktrees/*/info",
    "*/.git/hooks",
    "*/.git/config",
    "*/.git/config.worktree",
    "*/.git/commondir",
    "*/.git/info",
    ".vscode",
    ".idea",
    ".zed",
    "*.code-workspace",
    ".devcontainer",
    ".mcp.json",
    ".claude",
    ".cursor",
    ".gemini",
    ".codex",
    ".opencode",
    "opencode.json",
    ".roo",
    ".kiro",
    ".amazonq",
    ".aider.conf.yml",
    ".helix",
    ".nvim.lua",
    ".exrc",
];

/// Resource limits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// Wall-clock limit of the tool, in milliseconds.
    pub timeout_ms: u64,
    /// `RLIMIT_CPU`, seconds.
    pub cpu_seconds: u64,
    /// `RLIMIT_AS` (and the memory cgroup when there is one), bytes.
    pub memory_bytes: u64,
    /// `RLIMIT_FSIZE`, bytes.
    pub file_size_bytes: u64,
    /// `RLIMIT_NOFILE`.
    pub open_files: u64,
    /// Processes: `pids.max` of the cgroup, or `RLIMIT_NPROC` for a non-root uid.
    pub max_processes: u64,
    /// Bytes of output kept for the result (head and tail); the rest is counted, not kept.
    pub output_cap_bytes: u64,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            timeout_ms: 60_000,
            cpu_seconds: 300,
            memory_bytes: 4 * 1024 * 1024 * 1024,
            file_size_bytes: 1024 * 1024 * 1024,
            open_files: 1024,
            max_processes: 512,
            output_cap_bytes: 30_000,
        }
    }
}

/// An identity to run as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunAs {
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

/// One environment variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVar {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// Payload of [`ToWorker::Run`]. A struct around the request, not the request itself: an
/// internally tagged enum inside another would put two `type` keys in one JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunTool {
    /// The request.
    pub tool: ToolRequest,
    /// A timeout for this call shorter than the spec's `limits.timeout_ms` (never longer: the
    /// worker takes the smaller). Lets a worker locked down ahead of time serve a call whose
    /// session deadline is closer than the default timeout.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

wire_enum! {
    /// One tool request, already validated against the tool's schema by the supervisor.
    pub enum ToolRequest {
        /// Run a shell command with `sh -c`.
        Bash(BashRequest),
        /// Read a text file.
        ReadFile(ReadFileRequest),
        /// Create or overwrite a file.
        WriteFile(WriteFileRequest),
        /// Replace text in a file.
        StrReplace(StrReplaceRequest),
        /// List a directory.
        ListDir(ListDirRequest),
        /// Find files by glob pattern.
        Glob(GlobRequest),
        /// Search file contents by regular expression.
        Grep(GrepRequest),
    }
}

/// Payload of [`ToolRequest::Bash`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BashRequest {
    /// The command text.
    pub command: String,
}

/// Payload of [`ToolRequest::ReadFile`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadFileRequest {
    /// The file, relative to the workspace or absolute.
    pub path: String,
    /// First line to show, counting from 1.
    pub offset: Option<u64>,
    /// Most lines to show.
    pub limit: Option<u64>,
}

/// Payload of [`ToolRequest::WriteFile`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteFileRequest {
    /// The file, relative to the workspace or absolute.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// Payload of [`ToolRequest::StrReplace`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrReplaceRequest {
    /// The file.
    pub path: String,
    /// The exact text to find.
    pub old: String,
    /// What to put in its place.
    pub new: String,
    /// Replace every occurrence instead of requiring exactly one.
    pub replace_all: bool,
}

/// Payload of [`ToolRequest::ListDir`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListDirRequest {
    /// The directory; the workspace when absent.
    pub path: Option<String>,
}

/// Payload of [`ToolRequest::Glob`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobRequest {
    /// The pattern, e.g. `src/**/*.rs`.
    pub pattern: String,
    /// The directory to search; the workspace when absent.
    pub path: Option<String>,
}

/// Payload of [`ToolRequest::Grep`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepRequest {
    /// A regular expression.
    pub pattern: String,
    /// The file or directory to search; the workspace when absent.
    pub path: Option<String>,
    /// Only files matching this glob.
    pub glob: Option<String>,
    /// Match case-insensitively.
    pub ignore_case: bool,
    /// Stop after this many matching lines.
    pub max_matches: Option<u64>,
}

/// Payload of [`FromWorker::Output`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputChunk {
    /// Output text (invalid UTF-8 replaced), stdout and stderr merged in arrival order.
    pub text: String,
}

/// Payload of [`FromWorker::Result`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// What the model receives (capped; head and tail with a marker when cut).
    pub content: String,
    /// Whether the tool failed (non-zero exit, missing file, …).
    pub is_error: bool,
    /// The command's exit code, for bash.
    pub exit_code: Option<i32>,
    /// Whether the tool was killed for running past its time limit.
    pub timed_out: bool,
    /// Whether output was cut to fit the cap.
    pub truncated: bool,
    /// Output bytes produced in all, kept or not.
    pub bytes_seen: u64,
    /// Wall-clock time of the tool, in milliseconds.
    pub duration_ms: u64,
    /// The lockdown in force while it ran.
    pub lockdown: LockdownReport,
}

/// How far Landlock got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandlockStatus {
    /// Every requested right is enforced.
    FullyEnforced,
    /// Some rights are enforced; the kernel lacks the rest.
    PartiallyEnforced,
    /// The kernel has no Landlock (and the configuration accepted running without it).
    NotEnforced,
    /// The profile asks for none (`full-access`).
    NotRequested,
}

/// The lockdown a worker achieved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockdownReport {
    /// The kernel's Landlock ABI version, if it has Landlock.
    pub landlock_abi: Option<u32>,
    /// How far Landlock got.
    pub landlock: LandlockStatus,
    /// Whether the seccomp filter is installed.
    pub seccomp: bool,
    /// Whether `no_new_privs` is set.
    pub no_new_privs: bool,
    /// Whether every capability set is empty.
    pub capabilities_cleared: bool,
    /// How the call's processes are contained, e.g. `pid namespace + cgroup v2`.
    pub containment: String,
    /// Whether the call has a mount namespace of its own: the tree read-only but for the writable
    /// roots, homes and shared temp dirs hidden, a fresh `/proc` and a private `/dev/shm`.
    #[serde(default)]
    pub mount_namespace: bool,
    /// Whether the call has an IPC namespace of its own (SysV IPC, POSIX message queues).
    #[serde(default)]
    pub ipc_namespace: bool,
    /// The protected paths that existed and were made read-only for this call.
    #[serde(default)]
    pub protected: Vec<PathBuf>,
    /// Device and inode of each of `protected` as mounted, in the same order. A file replaced
    /// by a rename outside the call's mount namespace (`git` writes its config by renaming a lock
    /// file over it) takes its read-only mount in the namespace with it, so the supervisor
    /// compares these with the paths as they are before it gives a waiting worker a call.
    #[serde(default)]
    pub protected_ids: Vec<(u64, u64)>,
    /// The uid the tool runs as.
    pub uid: u32,
    /// The gid the tool runs as.
    pub gid: u32,
    /// Things that fell short of the request, in words, for the user to see.
    pub warnings: Vec<String>,
}

/// Payload of [`FromWorker::Failed`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerFailure {
    /// The step that failed.
    pub step: WorkerStep,
    /// What went wrong.
    pub message: String,
}

/// The steps of a worker's life, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerStep {
    /// Reading the spec.
    ReadSpec,
    /// Closing inherited file descriptors.
    CloseFds,
    /// Becoming a session leader.
    Setsid,
    /// Arranging to die with the supervisor.
    ParentDeathSignal,
    /// Entering the PID, IPC and mount namespaces (and the user namespace when unprivileged).
    Containment,
    /// Building the call's view of the filesystem in its mount namespace.
    Mounts,
    /// Setting resource limits.
    Rlimits,
    /// Dropping to the session owner's uid and gids.
    DropUser,
    /// Clearing capabilities.
    Capabilities,
    /// Setting `no_new_privs`.
    NoNewPrivs,
    /// Landlock.
    Landlock,
    /// seccomp.
    Seccomp,
    /// Reading the tool request.
    ReadRequest,
    /// Running the tool.
    Tool,
}
