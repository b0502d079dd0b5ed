//! The sandbox's second layer, attacked: the mount, IPC and PID namespaces of a call. Every
//! attempt here must FAIL, run for real through the built `agentd sandbox` as root and as an
//! unprivileged user, each beside a command in the same set-up that must succeed.
//!
//! Classes: metadata changes outside the writable roots (chmod, chown, utime, xattrs — Landlock
//! does not cover them); code planted in protected paths (`.git/hooks`, `.git/config`, `.vscode`)
//! to run later outside the sandbox; what is shared with the host (SysV IPC, `/dev/shm`, the
//! host's `/proc`, inotify on directories the tool may not list); and commands that outrun their
//! timeout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::{As, Dir, give, home_of, processes_with, sandbox, test_user};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

macro_rules! both {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[test]
            fn as_root() {
                ($body)(As::Root);
            }
            #[test]
            fn as_unprivileged_user() {
                if test_user().is_none() {
                    eprintln!("skipped: needs root to create the test user");
                    return;
                }
                ($body)(As::User);
            }
        }
    };
}

fn unique(label: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "{label}-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// A file outside every writable root but inside the sandbox's readable view (`/opt`), owned by
/// `who` — so the worker, which runs as `who`, is its owner and the kernel's permission checks
/// alone would let it change its metadata. Removed on drop.
struct Owned(PathBuf);

impl Owned {
    fn new(who: As) -> Self {
        let path = Path::new("/opt").join(unique("agentd-e2e-meta"));
        std::fs::write(&path, "original\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        give(&path, who);
        Owned(path)
    }

    fn snapshot(&self) -> (u32, u32, i64, u64) {
        let m = std::fs::metadata(&self.0).unwrap();
        (m.mode(), m.uid(), m.mtime(), m.len())
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `git` in `dir` as `who` on the host (set-up and checks, outside the sandbox).
fn host_git(dir: &Path, who: As, args: &[&str]) -> String {
    let mut cmd = match who {
        As::Root => Command::new("git"),
        As::User => {
            let u = test_user().unwrap();
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={}", u.uid))
                .arg(format!("--regid={}", u.gid))
                .arg("--init-groups")
                .arg("git");
            c
        }
    };
    let out = cmd
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "-c",
            "safe.directory=*",
        ])
        .args(args)
        .current_dir(dir)
        .env("HOME", home_of(who))
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A workspace with a git repository and one commit, owned by `who`.
fn repo(label: &str, who: As) -> Dir {
    let ws = Dir::new(label, who);
    std::fs::write(ws.0.join("a.txt"), "one\n").unwrap();
    give(&ws.0, who);
    host_git(&ws.0, who, &["init", "-q", "-b", "main"]);
    host_git(&ws.0, who, &["add", "a.txt"]);
    host_git(&ws.0, who, &["commit", "-qm", "first"]);
    ws
}

const GIT: &str = "git -c user.name=t -c user.email=t@e -c safe.directory=*";

both!(metadata_outside_the_writable_roots_cannot_change, |who| {
    let ws = Dir::new("meta", who);
    let target = Owned::new(who);
    let before = target.snapshot();
    let t = target.0.display();
    let attempts = [
        format!("chmod 0700 {t}"),
        format!("chmod 0666 {t}"),
        format!("chown $(id -u):$(id -g) {t}"),
        format!("touch -d '2001-01-01' {t}"),
        format!("touch -m {t}"),
        format!("python3 -c 'import os; os.chmod(\"{t}\", 0o777)'"),
        format!("python3 -c 'import os; os.utime(\"{t}\", (1, 1))'"),
        format!("python3 -c 'import os; os.setxattr(\"{t}\", \"user.agentd\", b\"x\")'"),
        format!("python3 -c 'import os; os.truncate(\"{t}\", 0)'"),
    ];
    for attempt in &attempts {
        let run = sandbox(who, &ws.0, &[], attempt, &[]);
        assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        assert!(
            run.stdout.contains("Read-only file system") || run.stdout.contains("Errno 30"),
            "`{attempt}` must fail with EROFS (the mount layer), not only EACCES: {run:?}"
        );
        assert_eq!(target.snapshot(), before, "`{attempt}` changed {t}");
    }
    // The same changes on a file of the workspace work.
    let sane = sandbox(
        who,
        &ws.0,
        &[],
        "echo x > mine && chmod 0600 mine && touch -d '2001-01-01' mine && python3 -c 'import os; os.setxattr(\"mine\", \"user.agentd\", b\"x\")' && stat -c '%a %Y' mine",
        &[],
    );
    assert_eq!(sane.code, 0, "{sane:?}");
    assert_eq!(sane.stdout.trim(), "600 978307200", "{sane:?}");
});

both!(the_working_directory_is_on_the_sandboxs_mount, |who| {
    // A directory entered before the mounts would stay on the old, writable mount: `..` from it
    // would then reach a writable parent. The workspace's parent must be read-only.
    let ws = Dir::new("cwd", who);
    let parent = ws.0.parent().unwrap().to_path_buf();
    let marker = unique("agentd-e2e-parent");
    let run = sandbox(
        who,
        &ws.0,
        &[],
        &format!("chmod 0777 . ; touch ../{marker}; mkdir ../{marker}; pwd"),
        &[],
    );
    assert!(!parent.join(&marker).exists(), "{run:?}");
    assert!(run.stdout.contains(&ws.0.display().to_string()), "{run:?}");
    assert!(
        run.stdout.contains("Read-only file system") || run.stdout.contains("Permission denied"),
        "{run:?}"
    );
});

both!(code_cannot_be_planted_in_git_hooks_or_config, |who| {
    let ws = repo("hooks", who);
    let config_before = std::fs::read_to_string(ws.0.join(".git/config")).unwrap();
    let attempts = [
        "echo 'touch /tmp/pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "cp /bin/true .git/hooks/post-checkout",
        "rm -rf .git/hooks",
        "mv .git/hooks .git/hooks.old && mkdir .git/hooks && echo evil > .git/hooks/pre-commit",
        "git config core.hooksPath /tmp",
        "git config core.fsmonitor 'touch /tmp/pwned'",
        "git config alias.st '!touch /tmp/pwned'",
        "echo '[core]' >> .git/config",
        "python3 -c 'open(\".git/config\", \"a\").write(\"[core]\\n\\tpager = evil\\n\")'",
        "cp .git/config c && echo '[core] hooksPath = x' >> c && mv c .git/config",
        "mv .git .git.old && git init -q && echo evil > .git/hooks/pre-commit",
        "rm -rf .git",
    ];
    for attempt in attempts {
        let run = sandbox(who, &ws.0, &[], attempt, &[]);
        assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        let hooks: Vec<String> = std::fs::read_dir(ws.0.join(".git/hooks"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.ends_with(".sample"))
                    .collect()
            })
            .unwrap_or_default();
        assert!(hooks.is_empty(), "`{attempt}` planted {hooks:?}");
        assert_eq!(
            std::fs::read_to_string(ws.0.join(".git/config")).unwrap(),
            config_before,
            "`{attempt}` changed .git/config"
        );
        assert!(ws.0.join(".git").is_dir(), "`{attempt}` moved .git");
    }
});

both!(git_still_works_with_its_hooks_and_config_protected, |who| {
    let ws = repo("git-works", who);
    let run = sandbox(
        who,
        &ws.0,
        &["--verbose"],
        &format!(
            "echo two >> a.txt && {GIT} add a.txt && {GIT} commit -qm second && {GIT} checkout -qb feature && echo three >> a.txt && {GIT} stash -q && {GIT} log --oneline | wc -l && {GIT} stash list | wc -l && {GIT} branch --show-current"
        ),
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().map(str::trim).collect();
    assert_eq!(lines, ["2", "1", "feature"], "{run:?}");
    assert_eq!(
        host_git(&ws.0, who, &["rev-list", "--count", "main"]).trim(),
        "2"
    );
    assert!(
        run.stderr.contains("protected (read-only):")
            && run.stderr.contains(".git/hooks")
            && run.stderr.contains(".git/config"),
        "the lockdown report names what was protected: {}",
        run.stderr
    );
});

both!(editor_settings_and_submodule_hooks_are_protected, |who| {
    let ws = repo("editor", who);
    for dir in [".vscode", ".idea", ".git/modules/lib/hooks"] {
        std::fs::create_dir_all(ws.0.join(dir)).unwrap();
    }
    std::fs::write(ws.0.join(".git/modules/lib/config"), "[core]\n").unwrap();
    give(&ws.0, who);
    let attempts = [
        "echo '{\"tasks\": []}' > .vscode/tasks.json",
        "echo x > .idea/workspace.xml",
        "echo evil > .git/modules/lib/hooks/pre-commit",
        "echo '[core] hooksPath = /x' >> .git/modules/lib/config",
        "mv .git/modules/lib .git/modules/lib2",
        "rm -rf .vscode",
    ];
    for attempt in attempts {
        let run = sandbox(who, &ws.0, &[], attempt, &[]);
        assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
    }
    assert!(!ws.0.join(".vscode/tasks.json").exists());
    assert!(!ws.0.join(".idea/workspace.xml").exists());
    assert!(!ws.0.join(".git/modules/lib/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(ws.0.join(".git/modules/lib/config")).unwrap(),
        "[core]\n"
    );
    let sane = sandbox(
        who,
        &ws.0,
        &[],
        "mkdir -p src && echo ok > src/x && cat src/x",
        &[],
    );
    assert_eq!(sane.stdout.trim(), "ok", "{sane:?}");
});

both!(
    host_ipc_objects_are_not_shared_and_the_calls_do_not_survive,
    |who| {
        let ws = Dir::new("ipc", who);
        // A SysV shared memory segment and message queue of the host.
        let made = Command::new("ipcmk").args(["-M", "4096"]).output().unwrap();
        let shm_id: String = String::from_utf8_lossy(&made.stdout)
            .split(':')
            .nth(1)
            .unwrap()
            .trim()
            .to_owned();
        let attach = format!(
            "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); l.shmat.restype = ctypes.c_void_p; p = l.shmat({shm_id}, None, 0); print(\"attached\" if p not in (None, 2**64 - 1) else \"refused\", ctypes.get_errno())'"
        );
        let run = sandbox(who, &ws.0, &[], &format!("ipcs -m; {attach}"), &[]);
        let _ = Command::new("ipcrm").args(["-m", &shm_id]).status();
        assert!(run.stdout.contains("refused"), "{run:?}");
        assert!(!run.stdout.contains("attached"), "{run:?}");
        assert!(
            !run.stdout
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(&shm_id)),
            "the host's segment is listed: {run:?}"
        );
        // What a call makes dies with it, and never reaches the host's namespace.
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "ipcmk -M 65536 >/dev/null && ipcmk -Q >/dev/null && ipcmk -S 2 >/dev/null && ipcs",
            &[],
        );
        assert_eq!(run.code, 0, "making IPC objects inside works: {run:?}");
        let keys: Vec<&str> = run
            .stdout
            .split_whitespace()
            .filter(|w| w.starts_with("0x"))
            .collect();
        assert_eq!(keys.len(), 3, "{run:?}");
        let host = String::from_utf8(Command::new("ipcs").output().unwrap().stdout).unwrap();
        for key in keys {
            assert!(
                !host.contains(key),
                "the call's IPC object {key} reached the host or outlived the call:\n{host}"
            );
        }
    }
);

both!(dev_shm_is_the_calls_own, |who| {
    let ws = Dir::new("shm", who);
    let name = unique("agentd-e2e-shm");
    let host_file = Path::new("/dev/shm").join(&name);
    std::fs::write(&host_file, "host secret").unwrap();
    std::fs::set_permissions(&host_file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let run = sandbox(
        who,
        &ws.0,
        &[],
        &format!(
            "cat /dev/shm/{name}; ls /dev/shm; echo planted > /dev/shm/{name}-mine && cat /dev/shm/{name}-mine"
        ),
        &[],
    );
    let host_after = std::fs::read_to_string(&host_file).unwrap();
    std::fs::remove_file(&host_file).unwrap();
    assert!(!run.stdout.contains("host secret"), "{run:?}");
    assert!(
        run.stdout.contains("planted"),
        "the private /dev/shm works: {run:?}"
    );
    assert_eq!(host_after, "host secret");
    assert!(!Path::new("/dev/shm").join(format!("{name}-mine")).exists());
});

both!(the_hosts_processes_are_not_visible, |who| {
    let ws = Dir::new("proc", who);
    let secret = unique("agentd-e2e-argv-secret");
    let mut host = Command::new("/usr/bin/python3")
        .args(["-c", "import time; time.sleep(30)", &secret])
        .spawn()
        .unwrap();
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; ps -eo pid,args; ls -d /proc/[0-9]* | wc -l; sleep 7 & pgrep -x sleep",
        &[],
    );
    let _ = host.kill();
    let _ = host.wait();
    assert!(!run.stdout.contains(&secret), "{run:?}");
    assert!(
        run.stdout.contains("ps -eo pid,args"),
        "ps lists the call's own processes: {run:?}"
    );
    let counts: Vec<usize> = run
        .stdout
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert!(
        counts.iter().any(|n| (1..=8).contains(n)),
        "only the call's few processes are in /proc: {run:?}"
    );
});

both!(
    hidden_directories_cannot_be_listed_probed_or_watched,
    |who| {
        let ws = Dir::new("hidden", who);
        let name = unique("agentd-e2e-probe");
        let home_dir = home_of(who).join(&name);
        std::fs::create_dir(&home_dir).unwrap();
        let home_file = home_dir.join("key");
        std::fs::write(&home_file, "x").unwrap();
        give(&home_dir, who);
        let tmp_file = std::env::temp_dir().join(&name);
        std::fs::write(&tmp_file, "x").unwrap();
        let watch = |dir: &str| {
            format!(
                "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); fd = l.inotify_init1(0); print(\"watch {dir}\", l.inotify_add_watch(fd, b\"{dir}\", 0x100), ctypes.get_errno())'"
            )
        };
        let home = home_of(who);
        let command = format!(
            "test -e {h} && echo FOUND-HOME; test -e {t} && echo FOUND-TMP; stat -c %n {h} {t}; ls -a {home} /tmp; {w1}; {w2}; {w3}",
            h = home_file.display(),
            t = tmp_file.display(),
            home = home.display(),
            w1 = watch(&home_dir.display().to_string()),
            w2 = watch("/tmp"),
            w3 = watch("."),
        ) + "; "
            + &watch("/var/log")
            + "; "
            + &watch("/run/lock");
        let run = sandbox(who, &ws.0, &[], &command, &[]);
        std::fs::remove_dir_all(&home_dir).unwrap();
        std::fs::remove_file(&tmp_file).unwrap();
        assert!(!run.stdout.contains("FOUND-"), "{run:?}");
        assert!(!run.stdout.contains(&format!("\n{name}")), "{run:?}");
        let watched = |dir: &str| {
            run.stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("watch {dir} ")))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse::<i32>().ok())
                .unwrap_or_else(|| panic!("no watch line for {dir}: {run:?}"))
        };
        assert!(watched(&home_dir.display().to_string()) < 0, "{run:?}");
        assert!(
            watched("/tmp") > 0,
            "/tmp can be watched, but it is an empty mount of the call's own: {run:?}"
        );
        assert!(watched(".") > 0, "the workspace can be watched: {run:?}");
        assert!(watched("/var/log") < 0, "{run:?}");
        assert!(watched("/run/lock") < 0, "{run:?}");
    }
);

both!(
    a_command_that_closes_its_output_cannot_outrun_the_timeout,
    |who| {
        let ws = Dir::new("deadline", who);
        for command in [
            "echo before; exec >/dev/null 2>&1; sleep 30",
            "echo before; sleep 30 >/dev/null 2>&1 <&- & wait",
            "echo before; (sleep 30 & ) ; exec sleep 30",
        ] {
            let start = Instant::now();
            let run = sandbox(who, &ws.0, &["--timeout", "2"], command, &[]);
            let took = start.elapsed();
            assert_eq!(run.code, 124, "`{command}`: {run:?}");
            assert!(run.stdout.contains("before"), "output kept: {run:?}");
            assert!(run.stdout.contains("timed out"), "{run:?}");
            assert!(took < Duration::from_secs(6), "`{command}` took {took:?}");
        }
        // Background work a finished command left behind does not hold the call open. (A
        // duration of its own, so the other identity's run of this test is not mistaken for it.)
        let lingering = format!("25.{}{}", std::process::id(), who as u8);
        let start = Instant::now();
        let run = sandbox(
            who,
            &ws.0,
            &["--timeout", "20"],
            &format!("(sleep {lingering}; echo late) & echo done"),
            &[],
        );
        assert_eq!(run.code, 0, "{run:?}");
        assert!(start.elapsed() < Duration::from_secs(10), "{run:?}");
        assert!(processes_with(&format!("sleep {lingering}")).is_empty());
    }
);

both!(
    git_cannot_be_redirected_to_a_config_or_hooks_the_call_wrote,
    |who| {
        // Found by an adversarial review: git takes config and hooks from `commondir`,
        // `config.worktree`, a `.git` file's `gitdir:` and `core.hooksPath` too.
        let ws = repo("redirect", who);
        host_git(&ws.0, who, &["config", "extensions.worktreeConfig", "true"]);
        // `commondir` does not exist, so it cannot be mounted over: the supervisor moves what the call
        // created out of git's way after the call, and says so.
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "mkdir -p .evil && cp -r .git/objects .git/refs .evil/ && printf '[core]\\n\\tfsmonitor = evil\\n' > .evil/config && echo ../.evil > .git/commondir && echo written",
            &[],
        );
        assert!(run.stdout.contains("written"), "{run:?}");
        assert!(
            run.stdout.contains(".git/commondir") && run.stdout.contains("moved to"),
            "{run:?}"
        );
        assert_eq!(
            std::fs::read_dir(ws.0.join(".agentd-quarantine"))
                .unwrap()
                .count(),
            1,
            "{run:?}"
        );
        for attempt in [
            "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config.worktree",
            "rm -f .git/config.worktree && echo x > .git/config.worktree",
        ] {
            let run = sandbox(who, &ws.0, &[], attempt, &[]);
            assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        }
        assert!(!ws.0.join(".git/commondir").exists());
        assert_eq!(
            std::fs::read_to_string(ws.0.join(".git/config.worktree")).unwrap(),
            "",
            "an empty config.worktree is made so it can be protected"
        );
        // A repository without `.git/hooks`, and one whose hooks live in the workspace.
        std::fs::remove_dir_all(ws.0.join(".git/hooks")).unwrap();
        host_git(&ws.0, who, &["config", "core.hooksPath", ".husky"]);
        std::fs::create_dir(ws.0.join(".husky")).unwrap();
        give(&ws.0, who);
        for attempt in [
            "echo evil > .git/hooks/pre-commit",
            "echo evil > .husky/pre-commit",
            "rm -rf .husky",
        ] {
            let run = sandbox(who, &ws.0, &[], attempt, &[]);
            assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        }
        assert!(!ws.0.join(".git/hooks/pre-commit").exists());
        assert!(!ws.0.join(".husky/pre-commit").exists());
        let sane = sandbox(
            who,
            &ws.0,
            &[],
            &format!("{GIT} status --short && echo fine"),
            &[],
        );
        assert!(sane.stdout.contains("fine"), "{sane:?}");
    }
);

both!(a_linked_worktrees_git_file_cannot_be_rewritten, |who| {
    let main = repo("wt-main", who);
    let wt = main.0.with_file_name(format!(
        "{}-linked",
        main.0.file_name().unwrap().to_string_lossy()
    ));
    host_git(
        &main.0,
        who,
        &["worktree", "add", "-q", wt.to_str().unwrap(), "-b", "side"],
    );
    let before = std::fs::read_to_string(wt.join(".git")).unwrap();
    let run = sandbox(
        who,
        &wt,
        &[],
        "echo 'gitdir: .evil' > .git; rm -f .git; mv .git g2; echo done",
        &[],
    );
    let after = std::fs::read_to_string(wt.join(".git")).ok();
    let _ = std::fs::remove_dir_all(&wt);
    assert!(run.stdout.contains("done"), "{run:?}");
    assert_eq!(after.as_deref(), Some(before.as_str()), "{run:?}");
});

both!(
    a_read_only_host_mount_inside_the_workspace_stays_read_only,
    |who| {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: the set-up mounts");
            return;
        }
        let ws = Dir::new("ro-mount", who);
        let data = Dir::new("ro-mount-data", who);
        std::fs::write(data.0.join("f"), "original\n").unwrap();
        std::fs::create_dir(ws.0.join("data")).unwrap();
        give(&ws.0, who);
        let mount =
            |args: &[&str]| assert!(Command::new("mount").args(args).status().unwrap().success());
        mount(&[
            "--bind",
            data.0.to_str().unwrap(),
            ws.0.join("data").to_str().unwrap(),
        ]);
        mount(&["-o", "remount,bind,ro", ws.0.join("data").to_str().unwrap()]);
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "echo MODIFIED > data/f; echo ok > mine && cat mine",
            &[],
        );
        let _ = Command::new("umount").arg(ws.0.join("data")).status();
        assert_eq!(
            std::fs::read_to_string(data.0.join("f")).unwrap(),
            "original\n",
            "{run:?}"
        );
        assert!(
            run.stdout.contains("ok"),
            "the rest of the workspace is writable: {run:?}"
        );
    }
);

both!(
    too_many_protected_paths_refuse_the_call_quickly_and_by_name,
    |who| {
        let ws = repo("many", who);
        for i in 0..300 {
            std::fs::create_dir_all(ws.0.join(format!(".git/modules/m{i}/hooks"))).unwrap();
        }
        give(&ws.0, who);
        let start = Instant::now();
        let run = sandbox(who, &ws.0, &[], "echo ran", &[]);
        assert_eq!(run.code, 125, "{run:?}");
        assert!(run.stderr.contains("too many protected paths"), "{run:?}");
        assert!(
            start.elapsed() < Duration::from_secs(8),
            "{:?}",
            start.elapsed()
        );
    }
);

both!(
    protected_paths_a_call_creates_are_moved_out_of_the_way,
    |who| {
        let ws = repo("created", who);
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "mkdir .vscode && echo '{\"tasks\": []}' > .vscode/tasks.json && mkdir -p .git/modules/x/hooks && echo evil > .git/modules/x/hooks/pre-commit && echo made",
            &[],
        );
        assert!(run.stdout.contains("made"), "{run:?}");
        assert!(!ws.0.join(".vscode").exists(), "{run:?}");
        assert!(!ws.0.join(".git/modules/x/hooks").exists(), "{run:?}");
        let kept: Vec<String> = std::fs::read_dir(ws.0.join(".agentd-quarantine"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(kept.len(), 2, "{kept:?}");
        // A repository the call makes itself keeps what `git init` made; the next call cannot touch it.
        let fresh = Dir::new("fresh-repo", who);
        let run = sandbox(
            who,
            &fresh.0,
            &[],
            &format!("{GIT} init -q && echo inited"),
            &[],
        );
        assert!(run.stdout.contains("inited"), "{run:?}");
        assert!(fresh.0.join(".git/config").is_file() && fresh.0.join(".git/hooks").is_dir());
        assert!(run.stdout.contains("made a repository"), "{run:?}");
        let next = sandbox(who, &fresh.0, &[], "echo evil > .git/hooks/pre-commit", &[]);
        assert_ne!(next.code, 0, "{next:?}");
    }
);

both!(the_quarantine_moves_names_never_what_they_point_to, |who| {
    // From a second adversarial review: the check after a call compared resolved paths and
    // renamed through symlinks, so a symlink named like a protected path made the supervisor
    // move its target (the repository, a hook, a file outside the workspace).
    let ws = repo("qnames", who);
    std::fs::write(ws.0.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    let outside = Dir::new("qnames-outside", who);
    std::fs::write(outside.0.join("key"), "SECRET").unwrap();
    give(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        &format!(
            "ln -s .git .idea; ln -s .git/hooks/pre-commit .vscode; ln -s {}/key .git/commondir; echo linked",
            outside.0.display()
        ),
        &[],
    );
    assert!(run.stdout.contains("linked"), "{run:?}");
    assert!(
        ws.0.join(".git/HEAD").is_file(),
        "the repository stays: {run:?}"
    );
    assert!(
        ws.0.join(".git/hooks/pre-commit").is_file(),
        "the hook stays: {run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.0.join("key")).unwrap(),
        "SECRET"
    );
    for name in [".idea", ".vscode", ".git/commondir"] {
        assert!(
            std::fs::symlink_metadata(ws.0.join(name)).is_err(),
            "{name} was left: {run:?}"
        );
    }
    let moved: Vec<_> = std::fs::read_dir(ws.0.join(".agentd-quarantine"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(moved.len(), 3, "{moved:?}");
    assert!(moved.iter().all(|p| {
        std::fs::symlink_metadata(p)
            .unwrap()
            .file_type()
            .is_symlink()
    }));
});

both!(an_included_config_in_the_workspace_is_protected, |who| {
    let ws = repo("include", who);
    host_git(
        &ws.0,
        who,
        &["config", "include.path", "../.gitconfig.local"],
    );
    std::fs::write(ws.0.join(".gitconfig.local"), "[core]\n").unwrap();
    give(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "printf '\\tfsmonitor = evil\\n' >> .gitconfig.local",
        &[],
    );
    assert_ne!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(ws.0.join(".gitconfig.local")).unwrap(),
        "[core]\n"
    );
});

both!(kernel_filesystems_are_refused_as_write_paths, |who| {
    let ws = Dir::new("pseudo", who);
    for path in ["/proc", "/proc/sys", "/sys", "/dev"] {
        let run = sandbox(who, &ws.0, &["--write-path", path], "echo ran", &[]);
        assert_eq!(run.code, 125, "{path}: {run:?}");
        assert!(!run.stdout.contains("ran"), "{path}: {run:?}");
        assert!(run.stderr.contains("kernel filesystem"), "{path}: {run:?}");
    }
});
