//! Runs a command the way the tool-worker will — `/bin/bash --noprofile --norc -c COMMAND`, no
//! `BASH_ENV`/`ENV`, in the workspace — and records everything it executes:
//!
//! - **xtrace** of every simple command bash runs, builtins, functions' bodies and the code that
//!   subscripts and arithmetic evaluate included, written to descriptor 99 (`BASH_XTRACEFD`), each
//!   line prefixed (`PS4`) with the directory it ran in. xtrace is switched on through the exported
//!   `SHELLOPTS=xtrace`, so the command line is exactly the worker's, and a `bash -c` inside it is
//!   traced as well;
//! - **logging shims**: `PATH` holds only a directory of small scripts, one per program name any
//!   corpus or fuzz fragment uses, which write their argv, directory and environment to a log and
//!   exit 0. Wrappers (`env`, `xargs`, `find`, `timeout`, `nice`, …, `sh`, `bash`) log and then run
//!   the real program, still with the shims as `PATH`, so what *they* execute is logged too;
//! - **the file system**: the workspace, home and temp directories are compared before and after.
//!
//! Safety: the command runs as an unprivileged user (created if missing when the tests run as
//! root), under Landlock: read-only system directories, execute only bash, dash, the dynamic
//! loader, the shims and the wrappers' real programs, write only beneath the worker's scratch
//! directory, no TCP, no signals or abstract sockets outside the sandbox; with a timeout, after
//! which its whole process group is killed. Without Landlock nothing is run: the harness fails.
#![allow(dead_code)] // shared by the differential test and the fuzz bench, each using part of it

use super::confine::{
    bash_builtins, chown, chown_tree, landlock_ruleset, unprivileged_user, write_shim,
};
use super::fixtures::{HOME, WORKSPACE};
use super::snapshot::{Snapshot, diff_snapshots, snapshot};
use super::trace::{Traced, parse_trace};
use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The unprivileged user commands run as (when the tests run as root).
pub const USER: &str = "agentd-policy-diff";
/// Scratch directories are `$TMPDIR/agentd-policy-diff.PID.N`.
const BASE_PREFIX: &str = "agentd-policy-diff.";
/// The shell, at the path the tool-worker runs it from.
pub const BASH: &str = "/bin/bash";
/// Where bash writes its trace.
const TRACE_FD: RawFd = 99;
/// Starts each trace record: replicated once per nesting level by bash, then the directory.
const PS4: &str = "+\x1e${PWD@Q}\x1f";

/// Program names that get a logging shim (exit 0, no output).
#[rustfmt::skip]
pub const SHIMS: &[&str] = &[
    // coreutils and friends
    "ls", "cat", "head", "tail", "wc", "nl", "file", "stat", "du", "df", "tree", "realpath",
    "readlink", "basename", "dirname", "echo", "printf", "true", "false", "which", "whoami",
    "uname", "date", "cmp", "comm", "diff", "sort", "uniq", "cut", "tr", "tac", "paste", "seq",
    "id", "base64", "strings", "xxd", "od", "hexdump", "sha256sum", "sha1sum", "md5sum", "cksum",
    "nproc", "sleep", "tee", "touch", "mkdir", "rm", "rmdir", "cp", "mv", "ln", "chmod", "chown",
    "truncate", "shred", "dd", "install", "mktemp", "expand", "unexpand", "fold", "fmt", "column",
    "rev", "printenv", "test", "[", "hostname", "uptime", "free", "ps", "pgrep", "pkill", "kill",
    "top", "lscpu", "locale", "getconf", "tty", "groups", "who", "pwd", "numfmt", "split", "join",
    "shuf", "expr", "iconv", "lsb_release", "getent",
    // search
    "grep", "egrep", "fgrep", "rg", "ag", "fd", "locate",
    // development tools
    "git", "cargo", "rustc", "rustup", "rustfmt", "node", "npm", "npx", "yarn", "pnpm", "tsc",
    "eslint", "prettier", "jest", "go", "gofmt", "python", "python3", "pip", "pip3", "pytest",
    "ruff", "mypy", "black", "flake8", "pylint", "isort", "tox", "uv", "poetry", "make", "cmake",
    "gcc", "cc", "clang", "java", "javac", "mvn", "gradle",
    // text and viewers
    "sed", "awk", "gawk", "mawk", "jq", "yq", "less", "more", "man", "bc", "vim", "vi", "nano",
    "ed", "perl", "ruby", "php", "lua", "sqlite3",
    // network, privilege, archives, misc
    "curl", "wget", "nc", "ncat", "socat", "ssh", "scp", "sudo", "su", "doas", "pkexec", "chroot",
    "mkfs", "fdisk", "shutdown", "reboot", "watch", "script", "parallel", "flock", "tar", "zip",
    "unzip", "gzip", "gunzip", "zcat", "xz", "bzip2", "docker", "kubectl", "zsh", "ksh", "busybox",
    "xdg-open",
];

/// Wrappers: the shim logs, then runs the real program (which finds the shims through `PATH`).
pub const PASS_THROUGH: &[(&str, &str)] = &[
    ("env", "/usr/bin/env"),
    ("xargs", "/usr/bin/xargs"),
    ("find", "/usr/bin/find"),
    ("timeout", "/usr/bin/timeout"),
    ("nice", "/usr/bin/nice"),
    ("nohup", "/usr/bin/nohup"),
    ("stdbuf", "/usr/bin/stdbuf"),
    ("setsid", "/usr/bin/setsid"),
    ("ionice", "/usr/bin/ionice"),
    ("time", "/usr/bin/time"),
    ("sh", "/usr/bin/dash"),
    ("dash", "/usr/bin/dash"),
    ("bash", "/usr/bin/bash"),
];

/// Environment variables that bash or the harness set and that are not the command's doing.
const ENV_NOISE: &[&str] = &[
    "_",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "BASH_XTRACEFD",
    // stdbuf's own mechanism (it preloads its library into what it runs): the stdbuf command
    // line that asked for it is rated itself.
    "_STDBUF_I",
    "_STDBUF_O",
    "_STDBUF_E",
];

/// `stdbuf`'s library, which it puts in `LD_PRELOAD` of the program it runs.
const STDBUF_PRELOAD: &str = "/usr/libexec/coreutils/libstdbuf.so";

/// One program a shim saw started.
#[derive(Debug, Clone)]
pub struct Exec {
    /// The program name.
    pub name: String,
    /// The directory it ran in.
    pub cwd: String,
    /// Its arguments (without the name).
    pub args: Vec<String>,
    /// Environment variables it got that the harness did not set (or set otherwise).
    pub env: Vec<(String, String)>,
}

/// Everything a run showed.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// Simple commands bash ran (xtrace).
    pub traced: Vec<Traced>,
    /// Trace text that could not be read as records.
    pub unparsed_trace: Vec<String>,
    /// Programs started (shims).
    pub execs: Vec<Exec>,
    /// Files created, changed or removed, absolute.
    pub changed: Vec<PathBuf>,
    /// Its output.
    pub stdout: String,
    /// Its error output.
    pub stderr: String,
    /// Whether it was killed at the timeout.
    pub timed_out: bool,
    /// Bash's exit status, if it exited.
    pub status: Option<i32>,
}

/// The shared part: the base directory, the user, bash's builtin and keyword names.
#[derive(Debug)]
pub struct Harness {
    base: PathBuf,
    /// The per-thread sandboxes.
    pub sandboxes: Vec<Sandbox>,
}

/// One scratch area with its own shims, log and Landlock ruleset; runs one command at a time.
#[derive(Debug)]
pub struct Sandbox {
    root: PathBuf,
    case: PathBuf,
    shims: PathBuf,
    log: PathBuf,
    ruleset: OwnedFd,
    user: Option<(u32, u32)>,
    env: Vec<(String, String)>,
    /// The fixture as built, to tell whether a command changed it.
    pristine: Option<Snapshot>,
    /// Bash's builtins and keywords.
    pub builtins: BTreeSet<String>,
}

impl Harness {
    /// Sets up `workers` sandboxes under a fresh base directory.
    pub fn new(workers: usize) -> Result<Self, String> {
        if !Path::new(BASH).exists() {
            return Err(format!(
                "{BASH} does not exist: the differential check needs bash"
            ));
        }
        let user = unprivileged_user()?;
        // Orphans of a command (its background jobs) become our children, so we can wait for
        // them and know when a command is over.
        // SAFETY: prctl with integer arguments only sets a flag of this process.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
            return Err(format!(
                "PR_SET_CHILD_SUBREAPER: {}",
                io::Error::last_os_error()
            ));
        }
        let builtins = bash_builtins()?;
        remove_stale_bases();
        static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = std::env::temp_dir().join(format!("{BASE_PREFIX}{}.{n}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
        fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
        let mut harness = Harness {
            base: base.clone(),
            sandboxes: Vec::new(),
        };
        for n in 0..workers.max(1) {
            harness
                .sandboxes
                .push(Sandbox::new(&base, n, user, builtins.clone())?);
        }
        Ok(harness)
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.base);
    }
}

impl Sandbox {
    fn new(
        base: &Path,
        n: usize,
        user: Option<(u32, u32)>,
        builtins: BTreeSet<String>,
    ) -> Result<Self, String> {
        let shims = base.join(format!("shims-{n}"));
        let root = base.join(format!("w{n}"));
        let case = root.join("case");
        let log = case.join("log");
        let err = |p: &Path, e: io::Error| format!("{}: {e}", p.display());
        fs::create_dir_all(&shims).map_err(|e| err(&shims, e))?;
        fs::create_dir_all(&case).map_err(|e| err(&case, e))?;
        fs::set_permissions(&shims, fs::Permissions::from_mode(0o755))
            .map_err(|e| err(&shims, e))?;
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).map_err(|e| err(&root, e))?;
        chown(&root, user)?;
        chown(&case, user)?;
        let log_text = log.to_str().ok_or("the scratch path is not UTF-8")?;
        for name in SHIMS {
            write_shim(&shims, name, log_text, None)?;
        }
        for (name, real) in PASS_THROUGH {
            write_shim(&shims, name, log_text, Some(real))?;
        }
        let ruleset = landlock_ruleset(&case, &shims)?;
        let shims_text = shims.to_str().ok_or("the scratch path is not UTF-8")?;
        let env = vec![
            ("PATH".to_owned(), shims_text.to_owned()),
            ("HOME".to_owned(), path_text(&case.join("home"))),
            ("TMPDIR".to_owned(), path_text(&case.join("tmp"))),
            ("USER".to_owned(), USER.to_owned()),
            ("LOGNAME".to_owned(), USER.to_owned()),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
            ("TERM".to_owned(), "dumb".to_owned()),
            ("SHELLOPTS".to_owned(), "xtrace".to_owned()),
            ("BASH_XTRACEFD".to_owned(), TRACE_FD.to_string()),
            ("PS4".to_owned(), PS4.to_owned()),
        ];
        Ok(Sandbox {
            root,
            case,
            shims,
            log,
            ruleset,
            user,
            env,
            pristine: None,
            builtins,
        })
    }

    /// The workspace commands start in.
    pub fn workspace(&self) -> PathBuf {
        self.case.join("ws")
    }

    /// The home directory (`HOME`).
    pub fn home(&self) -> PathBuf {
        self.case.join("home")
    }

    /// Whether a program name has a shim.
    pub fn has_shim(&self, name: &str) -> bool {
        SHIMS.contains(&name) || PASS_THROUGH.iter().any(|(n, _)| *n == name)
    }

    /// Runs `command` in a fresh workspace and reports what it executed.
    pub fn run(&mut self, command: &str, timeout: Duration) -> Result<Observation, String> {
        // The fixture is rebuilt only when the last command changed it: on a loaded machine the
        // file system's metadata work, not bash, was most of the time of a run.
        let mut before = snapshot(&self.case)?;
        if self.pristine.as_ref() != Some(&before) || !self.log.is_dir() {
            self.reset()?;
            before = snapshot(&self.case)?;
            self.pristine = Some(before.clone());
        }
        self.clear_outputs()?;
        let open = |name: &str| {
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(self.case.join(name))
                .map_err(|e| format!("{name}: {e}"))
        };
        let (trace, stdout, stderr) = (open("trace")?, open("stdout")?, open("stderr")?);
        let mut cmd = Command::new(BASH);
        cmd.args(["--noprofile", "--norc", "-c", command])
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(self.workspace())
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        let trace_fd = trace.as_raw_fd();
        let ruleset_fd = self.ruleset.as_raw_fd();
        // SAFETY: the closure runs in the forked child before exec and only makes raw system
        // calls (dup2, fcntl, prctl, landlock_restrict_self) on descriptors the parent keeps open
        // until spawn returns; it allocates nothing and takes no lock.
        unsafe {
            cmd.pre_exec(move || {
                // A session of its own (and a group, with the same id): programs that make a
                // group of their own (`timeout`) stay in the session, so the end of a command
                // is the end of its session, not only of its group.
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                if trace_fd == TRACE_FD {
                    if libc::fcntl(TRACE_FD, libc::F_SETFD, 0) < 0 {
                        return Err(io::Error::last_os_error());
                    }
                } else if libc::dup2(trace_fd, TRACE_FD) < 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, ruleset_fd, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let start = Instant::now();
        let mut child = cmd.spawn().map_err(|e| format!("spawning bash: {e}"))?;
        drop(trace);
        let pgid = child.id() as libc::pid_t;
        let deadline = start + timeout;
        let mut timed_out = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s.code(),
                Ok(None) if Instant::now() >= deadline => {
                    timed_out = true;
                    kill_group(pgid);
                    break child.wait().ok().and_then(|s| s.code());
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => return Err(format!("waiting for bash: {e}")),
            }
        };
        // Background jobs and their children: wait for the group to end, or kill it.
        loop {
            let mut st = 0;
            // SAFETY: waitpid with a process-group selector, WNOHANG and a valid status pointer.
            let r = unsafe { libc::waitpid(-pgid, &mut st, libc::WNOHANG) };
            if r > 0 {
                continue;
            }
            if r < 0 {
                break;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                kill_group(pgid);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Then what left the group but not the session (`timeout` makes a group of its own):
        // reaped as our orphans when they end, killed at the deadline.
        loop {
            let left = in_session(pgid);
            if left.is_empty() {
                break;
            }
            for pid in &left {
                let mut st = 0;
                // SAFETY: waitpid on one pid with WNOHANG and a valid status pointer; it fails
                // harmlessly (ECHILD) for a process that is not our child.
                unsafe { libc::waitpid(*pid, &mut st, libc::WNOHANG) };
                if Instant::now() >= deadline {
                    timed_out = true;
                    // SAFETY: kill with a positive pid of a process of this command's session.
                    unsafe { libc::kill(*pid, libc::SIGKILL) };
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let after = snapshot(&self.case)?;
        let changed = diff_snapshots(&before, &after)
            .into_iter()
            .map(|rel| self.case.join(rel))
            .collect();
        let trace_bytes = fs::read(self.case.join("trace")).map_err(|e| e.to_string())?;
        let (traced, unparsed_trace) = parse_trace(&trace_bytes);
        Ok(Observation {
            traced,
            unparsed_trace,
            execs: self.read_log()?,
            changed,
            stdout: read_lossy(&self.case.join("stdout")),
            stderr: read_lossy(&self.case.join("stderr")),
            timed_out,
            status,
        })
    }

    /// Empties the log and removes the last run's trace and output files.
    fn clear_outputs(&self) -> Result<(), String> {
        let entries =
            fs::read_dir(&self.log).map_err(|e| format!("{}: {e}", self.log.display()))?;
        for entry in entries.flatten() {
            fs::remove_file(entry.path())
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        }
        for name in ["trace", "stdout", "stderr"] {
            match fs::remove_file(self.case.join(name)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(format!("{name}: {e}"));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A fresh case directory: workspace, home, temp and log, owned by the user.
    fn reset(&self) -> Result<(), String> {
        // The case directory itself stays: Landlock's write rule is bound to it.
        let entries =
            fs::read_dir(&self.case).map_err(|e| format!("{}: {e}", self.case.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let removed = if path.is_dir() && !path.is_symlink() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            removed.map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let ws = self.workspace();
        let home = self.home();
        for (dir, files) in [(&ws, WORKSPACE), (&home, HOME)] {
            for (rel, content) in files {
                let path = dir.join(rel);
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
                }
                fs::write(&path, content).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        for dir in [self.case.join("tmp"), self.log.clone()] {
            fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        chown_tree(&self.case, self.user)
    }

    /// Whether an environment variable a program got is the harness's or bash's doing.
    fn harness_set(&self, k: &str, v: &str) -> bool {
        ENV_NOISE.contains(&k)
            || (k == "LD_PRELOAD" && v == STDBUF_PRELOAD)
            || self.env.iter().any(|(bk, bv)| bk == k && bv == v)
    }

    fn read_log(&self) -> Result<Vec<Exec>, String> {
        let mut execs = Vec::new();
        let entries =
            fs::read_dir(&self.log).map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut fields = bytes
                .split(|b| *b == 0)
                .map(|f| String::from_utf8_lossy(f).into_owned());
            let (Some(name), Some(cwd), Some(argc)) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(format!("{}: a truncated shim record", path.display()));
            };
            let argc: usize = argc
                .parse()
                .map_err(|_| format!("{}: a bad argument count {argc:?}", path.display()))?;
            let args: Vec<String> = fields.by_ref().take(argc).collect();
            if args.len() != argc {
                return Err(format!("{}: a truncated shim record", path.display()));
            }
            let env = fields
                .filter(|f| !f.is_empty())
                .filter_map(|f| f.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
                .filter(|(k, v)| !self.harness_set(k, v))
                .collect();
            execs.push(Exec {
                name,
                cwd,
                args,
                env,
            });
        }
        Ok(execs)
    }
}

/// Removes the scratch directories of test processes that no longer run (killed mid-run, so
/// their harness was never dropped).
fn remove_stale_bases() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(BASE_PREFIX)
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn read_lossy(p: &Path) -> String {
    fs::read(p)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The processes of session `sid` (zombies included: they are gone once reaped).
fn in_session(sid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            // Field 6 of /proc/PID/stat is the session; the command name (field 2) may hold
            // spaces and parentheses, so fields are counted after its closing parenthesis.
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .is_some_and(|stat| {
                    stat.rsplit_once(')').and_then(|(_, rest)| {
                        rest.split_whitespace().nth(3)?.parse::<libc::pid_t>().ok()
                    }) == Some(sid)
                })
        })
        .collect()
}

fn kill_group(pgid: libc::pid_t) {
    // SAFETY: kill with a negative pid signals the process group we created for this command.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}
