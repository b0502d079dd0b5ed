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

use agentd_e2e::both;
use agentd_e2e::{As, Dir, give, home_of, processes_with, sandbox, unique};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

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
                .filter(|l| l.starts_with("0x"))
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

both!(kernel_filesystems_are_refused_as_write_paths, |who| {
    let ws = Dir::new("pseudo", who);
    for path in ["/proc", "/proc/sys", "/sys", "/dev"] {
        let run = sandbox(who, &ws.0, &["--write-path", path], "echo ran", &[]);
        assert_eq!(run.code, 125, "{path}: {run:?}");
        assert!(!run.stdout.contains("ran"), "{path}: {run:?}");
        assert!(run.stderr.contains("kernel filesystem"), "{path}: {run:?}");
    }
});

both!(
    other_top_level_directories_cannot_be_probed_or_watched,
    |who| {
        // A site's /work or /data, with someone else's project in it; the call's workspace may
        // be in the same directory, and is carried over into the empty mount that hides it.
        let top = Path::new("/").join(unique("agentd-e2e-top"));
        std::fs::create_dir_all(top.join("otherproject")).unwrap();
        std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o755)).unwrap();
        let ws = top.join("ws");
        std::fs::create_dir(&ws).unwrap();
        give(&ws, who);
        let other = top.join("otherproject");
        let probe = format!(
            "stat {o} >/dev/null 2>&1 && echo visible; python3 -c 'import ctypes; l = ctypes.CDLL(None); fd = l.inotify_init(); print(\"watched\" if l.inotify_add_watch(fd, b\"{o}\", 0xfff) >= 0 else \"refused\")'; echo kept > f && cat f",
            o = other.display()
        );
        let run = sandbox(who, &ws, &[], &probe, &[]);
        let _ = std::fs::remove_dir_all(&top);
        assert!(
            run.stdout.contains("kept"),
            "the workspace inside works: {run:?}"
        );
        assert!(!run.stdout.contains("visible"), "{run:?}");
        assert!(run.stdout.contains("refused"), "{run:?}");
    }
);
