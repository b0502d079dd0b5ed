//! Helpers for the end-to-end suites in `tests/tests/`: locate the built binaries, make
//! workspaces, create the unprivileged test user, and run `agentd sandbox` as root or as that user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support: a panic is the failure report

pub mod mock_llm;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};

/// The directory holding the built binaries (`target/debug`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/debug/deps/escape-… → target/debug
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// A built binary of the workspace; panics with the command to run if it is missing.
pub fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build --workspace --bins` first",
        path.display()
    );
    path
}

/// Who runs `agentd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum As {
    /// The test's own uid (root on the build machines).
    Root,
    /// An unprivileged user created for the suite.
    User,
}

/// The unprivileged test user: name, uid, gid, home.
#[derive(Debug, Clone)]
pub struct TestUser {
    /// Login name.
    pub name: String,
    /// uid.
    pub uid: u32,
    /// gid.
    pub gid: u32,
    /// Home directory.
    pub home: PathBuf,
}

/// Creates (once) and returns the unprivileged user, or `None` when not running as root.
pub fn test_user() -> Option<&'static TestUser> {
    static USER: OnceLock<Option<TestUser>> = OnceLock::new();
    USER.get_or_init(|| {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("not root: the unprivileged-user variants are skipped");
            return None;
        }
        let name = "agentd-e2e";
        if nix::unistd::User::from_name(name).ok().flatten().is_none() {
            let status = Command::new("useradd")
                .args(["--create-home", "--shell", "/bin/sh", name])
                .status()
                .unwrap();
            assert!(status.success(), "useradd {name} failed");
        }
        let u = nix::unistd::User::from_name(name).unwrap().unwrap();
        Some(TestUser {
            name: name.into(),
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
            home: u.dir,
        })
    })
    .as_ref()
}

/// One test per identity: `both!(name, |who| { … })` makes `name::as_root` and
/// `name::as_unprivileged_user` (the latter skipped, with a message, when the suite cannot create
/// the test user because it does not run as root).
#[macro_export]
macro_rules! both {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[test]
            fn as_root() {
                ($body)($crate::As::Root);
            }
            #[test]
            fn as_unprivileged_user() {
                if $crate::test_user().is_none() {
                    eprintln!("skipped: needs root to create the test user");
                    return;
                }
                ($body)($crate::As::User);
            }
        }
    };
}

/// `label-PID-N`: a name no other test, run or process of this suite uses.
pub fn unique(label: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "{label}-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// The home directory of `who`.
pub fn home_of(who: As) -> PathBuf {
    match who {
        As::Root => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())),
        As::User => test_user().unwrap().home.clone(),
    }
}

/// Gives `path` (and what is inside) to `who`.
pub fn give(path: &Path, who: As) {
    if who == As::User {
        let u = test_user().unwrap();
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{}:{}", u.uid, u.gid))
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// A fresh directory, removed on drop.
#[derive(Debug)]
pub struct Dir(pub PathBuf);

impl Dir {
    /// A new empty directory under /tmp, owned by `who`, world-traversable so the test can look.
    pub fn new(label: &str, who: As) -> Self {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("agentd-e2e-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        give(&path, who);
        Dir(path)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The binaries as `who` can reach them. The checkout may sit in a directory only its owner can
/// enter (`mktemp -d` makes 0700 directories), so for the test user they are staged — hard-linked,
/// or copied across filesystems — into a world-readable directory under /tmp.
pub fn binary_for(name: &str, who: As) -> PathBuf {
    static STAGED: OnceLock<PathBuf> = OnceLock::new();
    if who == As::Root {
        return binary(name);
    }
    let dir = STAGED.get_or_init(|| {
        // Remove what earlier runs left behind (their process is gone).
        if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
            for e in entries.filter_map(Result::ok) {
                let n = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = n.strip_prefix("agentd-e2e-bin-")
                    && !Path::new("/proc").join(pid).exists()
                {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = std::env::temp_dir().join(format!("agentd-e2e-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        for bin in ["agentd", "agent", "tool-worker"] {
            let (from, to) = (binary(bin), dir.join(bin));
            let _ = std::fs::remove_file(&to);
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).unwrap();
            }
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    });
    dir.join(name)
}

/// `agentd` as `who`, with a clean environment plus `env`.
pub fn agentd_command(who: As, env: &[(&str, &str)]) -> Command {
    command_as("agentd", who, env)
}

/// `program` run as `who`: directly as root, through `setpriv` (uid, gid and the user's groups)
/// as the test user. Only the identity: environment and arguments are the caller's.
pub fn command_for(program: impl AsRef<std::ffi::OsStr>, who: As) -> Command {
    match who {
        As::Root => Command::new(program),
        As::User => {
            let u = test_user().unwrap();
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={}", u.uid))
                .arg(format!("--regid={}", u.gid))
                .arg("--init-groups")
                .arg(program);
            c
        }
    }
}

/// One of the built binaries (`agentd`, `agent`) as `who`, with a clean environment (`PATH`,
/// `HOME`, the tool-worker to use) plus `env`.
pub fn command_as(name: &str, who: As, env: &[(&str, &str)]) -> Command {
    let bin = binary_for(name, who);
    let mut cmd = command_for(&bin, who);
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home_of(who))
        .env("AGENTD_TOOL_WORKER", binary_for("tool-worker", who));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// `agent` as `who` with `home` as its HOME, its model the mock LLM at `model_url` speaking the
/// OpenAI wire format (model `mock-model`, a dummy key).
pub fn agent_against(who: As, home: &Path, model_url: &str) -> Command {
    let home = home.display().to_string();
    command_as(
        "agent",
        who,
        &[
            ("HOME", home.as_str()),
            ("PROVIDER", "openai"),
            ("BASE_URL", model_url),
            ("API_KEY", "sk-e2e"),
            ("MODEL", "mock-model"),
        ],
    )
}

/// The outcome of one `agentd sandbox` run.
#[derive(Debug)]
pub struct Run {
    /// What the model would receive.
    pub stdout: String,
    /// Diagnostics.
    pub stderr: String,
    /// agentd's exit code (the command's).
    pub code: i32,
}

/// `agentd sandbox --workspace WORKSPACE [args] -- command` as `who`, its stdin closed.
pub fn sandbox_command(
    who: As,
    workspace: &Path,
    args: &[&str],
    command: &str,
    env: &[(&str, &str)],
) -> Command {
    let mut cmd = agentd_command(who, env);
    cmd.arg("sandbox")
        .arg("--workspace")
        .arg(workspace)
        .args(args)
        .arg("--")
        .arg(command)
        .stdin(Stdio::null());
    cmd
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        }
    }
}

/// Runs `agentd sandbox [args] -- command` in `workspace` as `who`.
pub fn sandbox(
    who: As,
    workspace: &Path,
    args: &[&str],
    command: &str,
    env: &[(&str, &str)],
) -> Run {
    Run::from(
        sandbox_command(who, workspace, args, command, env)
            .output()
            .unwrap(),
    )
}

/// [`sandbox`], killed (and the test failed) if it outlives `limit`: a sandbox that never
/// returns must fail the suite, not hang it.
pub fn sandbox_within(
    who: As,
    workspace: &Path,
    args: &[&str],
    command: &str,
    limit: std::time::Duration,
    env: &[(&str, &str)],
) -> Run {
    let mut child = sandbox_command(who, workspace, args, command, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{command}` still ran after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Run::from(child.wait_with_output().unwrap())
}

/// What the user runs later, outside the sandbox: `git status` in `dir` as `who`; whether
/// `marker`, which code planted by a call would create, appeared.
pub fn later_git_status_runs_planted_code(dir: &Path, who: As, marker: &Path) -> bool {
    let _ = std::panic::catch_unwind(|| host_git(dir, who, &["status", "--short"]));
    marker.exists()
}

/// Compiles `tests/probe/<name>.c` into `out`.
pub fn compile_probe(name: &str, out: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("probe")
        .join(format!("{name}.c"));
    let status = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(out)
        .arg(&src)
        .status()
        .expect("a C compiler (cc) is needed");
    assert!(status.success(), "compiling {} failed", src.display());
}

/// `tests/probe/<name>.c` compiled once per test process, under the temp dir; its path.
pub fn compiled_probe(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(n, _)| n == name) {
        return path.clone();
    }
    let out = std::env::temp_dir().join(format!("agentd-e2e-{name}-{}", std::process::id()));
    compile_probe(name, &out);
    built.push((name.to_owned(), out.clone()));
    out
}

/// Copies the compiled probe `from` into `workspace` as `as_name` (where the sandbox may
/// execute it), executable, owned by `who`.
pub fn install_compiled(from: &Path, workspace: &Path, as_name: &str, who: As) {
    let dest = workspace.join(as_name);
    std::fs::copy(from, &dest).unwrap();
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).unwrap();
    give(&dest, who);
}

/// Compiles the escape probe (tests/probe/probe.c) once and returns its path.
pub fn probe() -> PathBuf {
    compiled_probe("probe")
}

/// Copies the probe into `workspace` (where the sandbox may execute it), owned by `who`.
pub fn install_probe(workspace: &Path, who: As) {
    install_compiled(&probe(), workspace, "probe", who);
}

/// Processes whose working directory is `dir`, as `pid: command line`.
pub fn processes_in(dir: &Path) -> Vec<String> {
    processes(|proc_dir, _| std::fs::read_link(proc_dir.join("cwd")).is_ok_and(|cwd| cwd == dir))
}

/// Processes whose command line contains `marker`, as `pid: command line`.
pub fn processes_with(marker: &str) -> Vec<String> {
    processes(|_, cmdline| cmdline.contains(marker))
}

/// Every process for which `keep(/proc/PID, command line)` holds, as `pid: command line`.
fn processes(keep: impl Fn(&Path, &str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if keep(&entry.path(), &text) {
            found.push(format!("{name}: {text}"));
        }
    }
    found
}

/// `git` in `dir` as `who` on the host, with an identity and any directory trusted: the command
/// [`host_git`] runs, for a caller that wants its outcome whatever it is.
pub fn host_git_command(dir: &Path, who: As) -> Command {
    let mut cmd = command_for("git", who);
    cmd.args([
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "-c",
        "safe.directory=*",
    ])
    .current_dir(dir)
    .env("HOME", home_of(who));
    cmd
}

/// Runs `git` in `dir` as `who` on the host (set-up and checks, outside the sandbox).
pub fn host_git(dir: &Path, who: As, args: &[&str]) -> String {
    let out = host_git_command(dir, who).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The names in the quarantine of the writable root `root` (`.agentd-quarantine`), if any.
pub fn quarantined(root: &Path) -> Vec<String> {
    std::fs::read_dir(root.join(".agentd-quarantine"))
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A workspace with a git repository and one commit, owned by `who`.
pub fn repo(label: &str, who: As) -> Dir {
    let ws = Dir::new(label, who);
    std::fs::write(ws.0.join("a.txt"), "one\n").unwrap();
    give(&ws.0, who);
    host_git(&ws.0, who, &["init", "-q", "-b", "main"]);
    host_git(&ws.0, who, &["add", "a.txt"]);
    host_git(&ws.0, who, &["commit", "-qm", "first"]);
    ws
}

/// `git` with an identity and any directory trusted, for commands run inside the sandbox.
pub const GIT: &str = "git -c user.name=t -c user.email=t@e -c safe.directory=*";
