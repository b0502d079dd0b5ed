//! Attacks on the zygote that forks every worker, run for real through the built `agentd
//! sandbox`, `agentd serve` and `tool-worker`, as root and as an unprivileged user. The zygote
//! holds `O_PATH` descriptors of host paths (`/usr`, `/etc` files, devices) that bypass the
//! call's read-only mounts, has only the early part of the seccomp table on itself, and clones
//! each worker straight into its namespaces as their init. So: no descriptor it opened reaches a
//! tool (its own, its worker's, by number or through `/proc`); the zygote cannot be traced,
//! signalled or read by a call given its host pid, nor from a `full-access` call, which sees the
//! host's `/proc`; every entry of the table, early part and late part, is still refused at tool
//! time; the call's namespace holds only its own processes, and they die with the supervisor
//! (for a call dropped to another user, `daemon_privileges.rs` kills a root daemon); the
//! unprivileged worker's user namespace maps its own ids only and leaves no capability; where the
//! kernel refuses the zygote's clone, the plain-fork fallback names the step that fails. Each test
//! runs a harmless form of the same thing that must work, so a sandbox that refuses everything
//! cannot pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::{
    As, Dir, Run, agentd_command, binary_for, both, command_for, give, home_of, processes_with,
    sandbox, sandbox_command, test_user, unique,
};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// tests/probe/zygote_probe.c, compiled once.
fn zygote_probe() -> std::path::PathBuf {
    agentd_e2e::compiled_probe("zygote_probe")
}

/// Copies the probe into `ws` as `zp`, owned by `who`, with a file `zp-target` to chmod.
fn install_zygote_probe(ws: &Path, who: As) {
    let dest = ws.join("zp");
    std::fs::copy(zygote_probe(), &dest).unwrap();
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(ws.join("zp-target"), "").unwrap();
    give(ws, who);
}

/// The probe's `<what> rc=<rc> errno=<errno>` lines, by `what`: (rc, errno).
fn attempts(stdout: &str) -> BTreeMap<String, (i64, i32)> {
    assert!(
        stdout.lines().any(|l| l == "END"),
        "the probe did not finish: {stdout}"
    );
    stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split(' ');
            let what = words.next()?;
            let rc = words.next()?.strip_prefix("rc=")?.parse().ok()?;
            let errno = words.next()?.strip_prefix("errno=")?.parse().ok()?;
            Some((what.to_owned(), (rc, errno)))
        })
        .collect()
}

const EPERM: i32 = 1;
const ESRCH: i32 = 3;
const EACCES: i32 = 13;
const EINVAL: i32 = 22;
const ENOSYS: i32 = 38;

/// The entries the zygote installs on itself, once, for every worker.
const EARLY: &[&str] = &[
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "name_to_handle_at",
    "modify_ldt",
    "personality",
    "ioctl_tiocsti",
    "fchmodat_setuid",
    "openat_creat_setgid",
    "x32_getpid",
    "open_tree_attr",
];

/// The entries each worker adds at the end of its lockdown.
const LATE: &[&str] = &[
    "unshare_none",
    "setns",
    "open_tree",
    "fsconfig",
    "mount_setattr",
    "clone_newuser",
    "socket_unix",
    "socket_netlink",
];

both!(
    every_early_and_late_seccomp_entry_is_still_refused_at_tool_time,
    |who| {
        let ws = Dir::new("zygote-seccomp", who);
        install_zygote_probe(&ws.0, who);
        // Outside the sandbox, as the same user: the kernel alone answers none of them with EPERM
        // (the arguments are chosen so), so an EPERM inside is the filter's.
        let outside = command_for(ws.0.join("zp"), who)
            .arg("syscalls")
            .current_dir(&ws.0)
            .output()
            .unwrap();
        let outside = attempts(&String::from_utf8_lossy(&outside.stdout));
        for what in EARLY.iter().chain(LATE) {
            assert_ne!(outside[*what].1, EPERM, "{what} outside: {outside:?}");
        }
        std::fs::remove_file(ws.0.join("zp-created")).unwrap();
        std::fs::set_permissions(
            ws.0.join("zp-target"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();

        let run = sandbox(who, &ws.0, &[], "./zp syscalls", &[]);
        let inside = attempts(&run.stdout);
        for what in EARLY.iter().chain(LATE) {
            assert_eq!(inside[*what], (-1, EPERM), "{what} inside: {run:?}");
        }
        // A foreign architecture (i386 through int 0x80) is killed by the prologue, SIGSYS.
        assert_eq!(inside["int80_getpid"].0, -31, "{run:?}");
        assert_ne!(outside["int80_getpid"].0, -31, "{outside:?}");
        // Answered ENOSYS so libc falls back to the calls the table can inspect.
        for what in ["clone3", "openat2"] {
            assert_eq!(inside[what], (-1, ENOSYS), "{what} inside: {run:?}");
        }
        for what in ["getpid", "socketpair", "fchmodat_plain"] {
            assert!(inside[what].0 >= 0, "{what} must work: {run:?}");
        }
        let mode = std::fs::metadata(ws.0.join("zp-target"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755, "{run:?}");
        assert!(!ws.0.join("zp-created").exists(), "{run:?}");
    }
);

both!(
    the_same_holds_with_network_granted_where_the_late_part_differs,
    |who| {
        let ws = Dir::new("zygote-seccomp-net", who);
        install_zygote_probe(&ws.0, who);
        let run = sandbox(who, &ws.0, &["--network"], "./zp syscalls", &[]);
        let inside = attempts(&run.stdout);
        for what in EARLY.iter().chain(LATE) {
            assert_eq!(inside[*what], (-1, EPERM), "{what} inside: {run:?}");
        }
        assert!(inside["getpid"].0 >= 0, "{run:?}");
    }
);

/// The descriptors open in the tool's shell (`$$`) and in its worker (pid 1), and whether any of
/// the worker's point at a host path: `FD <n> <target>` / `WORKER <n> <target-or-?>`.
const LIST_DESCRIPTORS: &str = "ls /proc/$$/fd > .own; echo OWNFDS $(cat .own); \
     for f in /proc/1/fd/*; do echo \"WORKER ${f##*/} $(readlink $f 2>/dev/null || echo '?')\"; done; \
     for n in $(seq 3 127); do (: </proc/1/fd/$n) 2>/dev/null && echo \"OPENED $n\"; done; \
     ls -l /proc/[0-9]*/fd/ 2>/dev/null | grep -E ' -> /(usr|etc|dev|opt|bin|lib|sbin)' | grep -v ' -> /dev/null$'; \
     echo done";

both!(no_descriptor_the_zygote_opened_reaches_the_tool, |who| {
    let ws = Dir::new("zygote-fds", who);
    let run = sandbox(who, &ws.0, &[], LIST_DESCRIPTORS, &[]);
    assert!(run.stdout.contains("done"), "{run:?}");
    // The shell has its three standard descriptors and nothing else.
    assert!(run.stdout.contains("OWNFDS 0 1 2\n"), "{run:?}");
    // The worker's descriptors (the zygote's O_PATH ones were closed by the Landlock step) can
    // be neither read nor opened by the tool.
    assert!(!run.stdout.contains("OPENED "), "{run:?}");
    for line in run.stdout.lines().filter(|l| l.starts_with("WORKER ")) {
        assert!(
            line.ends_with(" ?"),
            "the worker's {line} is readable: {run:?}"
        );
    }
    for host in [" -> /usr", " -> /etc", " -> /opt", " -> /dev/"] {
        assert!(!run.stdout.contains(host), "{host}: {run:?}");
    }
});

/// Looks at the running worker from outside: its host pid (NSpid `<host> 1`) under `supervisor`,
/// and the descriptors it holds while the tool runs.
fn worker_descriptors_while_running(who: As) -> Vec<String> {
    let ws = Dir::new("zygote-fds-outside", who);
    let marker = unique("zfds");
    let mut child = agentd_command(who, &[])
        .arg("sandbox")
        .arg("--workspace")
        .arg(&ws.0)
        .arg("--")
        .arg(format!("sleep 5; : {marker}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let shell = loop {
        if let Some(p) = processes_with(&marker)
            .iter()
            .find(|p| p.contains("bash --noprofile"))
        {
            break p.split(':').next().unwrap().trim().to_owned();
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = std::fs::read_to_string(format!("/proc/{shell}/status")).unwrap();
    let worker = status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .unwrap()
        .trim()
        .to_owned();
    let worker_status = std::fs::read_to_string(format!("/proc/{worker}/status")).unwrap();
    assert!(
        worker_status
            .lines()
            .any(|l| l.starts_with("NSpid:") && l.ends_with("\t1")),
        "the tool's parent is the namespace's init: {worker_status}"
    );
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{worker}/fd"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                target.display()
            )
        })
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    fds
}

both!(
    the_worker_holds_no_host_path_descriptor_while_the_tool_runs,
    |who| {
        let fds = worker_descriptors_while_running(who);
        assert!(fds.len() >= 3, "{fds:?}");
        for fd in &fds {
            let target = fd.split(" -> ").nth(1).unwrap();
            assert!(
                !target.starts_with('/') || target == "/dev/null",
                "the worker still holds {fd}: {fds:?}"
            );
        }
    }
);

both!(
    a_full_access_call_which_sees_the_hosts_proc_cannot_reach_the_zygote,
    |who| {
        let ws = Dir::new("zygote-target", who);
        install_zygote_probe(&ws.0, who);
        // full-access: no mount namespace, so /proc is the host's and shows the zygote: the
        // tool's parent is the worker, whose parent is the zygote.
        let find = "read -r _ _ _ w _ < /proc/self/stat; read -r _ _ _ z _ < /proc/$w/stat; \
                    echo ZYGOTE $z $(tr '\\0' ' ' < /proc/$z/cmdline); ./zp zygote $z";
        let run = sandbox(who, &ws.0, &["--profile", "full-access"], find, &[]);
        let zygote_line = run
            .stdout
            .lines()
            .find(|l| l.starts_with("ZYGOTE "))
            .unwrap_or_else(|| panic!("{run:?}"));
        assert!(zygote_line.contains("--zygote"), "{run:?}");
        let got = attempts(&run.stdout);
        assert!(got["z_status"].0 >= 0, "the zygote is visible: {run:?}");
        assert_eq!(got["z_ptrace_attach"], (-1, EPERM), "{run:?}");
        // Pids and pidfds are resolved in the call's PID namespace, which it is not in.
        assert_eq!(got["z_kill0"], (-1, ESRCH), "{run:?}");
        assert_eq!(got["z_pidfd_open"], (-1, ESRCH), "{run:?}");
        assert!(got["z_open_proc_dir"].0 >= 0, "{run:?}");
        assert_eq!(got["z_pidfd_send_signal"], (-1, EINVAL), "{run:?}");
        assert_eq!(got["z_process_vm_readv"], (-1, EPERM), "{run:?}");
        assert_eq!(got["z_mem"].1, EACCES, "{run:?}");
        // Not dumpable: none of its descriptors (the O_PATH ones included) can be opened.
        let fds: Vec<_> = got.iter().filter(|(k, _)| k.starts_with("z_fd_")).collect();
        assert!(!fds.is_empty(), "{run:?}");
        for (what, (rc, errno)) in fds {
            assert_eq!((*rc, *errno), (-1, EACCES), "{what}: {run:?}");
        }
        // And it still serves: the next call runs.
        let again = sandbox(who, &ws.0, &[], "echo SANE", &[]);
        assert!(again.stdout.contains("SANE"), "{again:?}");
    }
);

both!(
    the_namespace_holds_only_the_calls_processes_and_its_init_survives_the_tool,
    |who| {
        let ws = Dir::new("zygote-ns", who);
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "kill -9 1; kill -9 -1; ls -d /proc/[0-9]* > .pids; echo PIDS $(cat .pids); \
             tr '\\0' ' ' < /proc/1/cmdline; echo; echo SANE",
            &[],
        );
        assert!(run.stdout.contains("SANE"), "{run:?}");
        // pid 1 (the worker, immune to signals from inside) and the shell (which expanded the
        // glob itself), nothing else.
        assert!(run.stdout.contains("PIDS /proc/1 /proc/2\n"), "{run:?}");
        assert_eq!(run.code, 0, "{run:?}");
    }
);

both!(
    the_unprivileged_user_namespace_maps_only_its_own_ids_and_leaves_no_capability,
    |who| {
        let ws = Dir::new("zygote-userns", who);
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status; \
             echo UID_MAP $(cat /proc/self/uid_map); echo GID_MAP $(cat /proc/self/gid_map); \
             echo SETGROUPS $(cat /proc/self/setgroups); id -u; \
             echo 0 0 1 > /proc/self/uid_map 2>/dev/null && echo REMAPPED; echo SANE",
            &[],
        );
        assert!(run.stdout.contains("SANE"), "{run:?}");
        assert!(!run.stdout.contains("REMAPPED"), "{run:?}");
        for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
            assert!(
                run.stdout.contains(&format!("{set}:\t0000000000000000")),
                "{set}: {run:?}"
            );
        }
        match who {
            As::Root => assert!(
                run.stdout.contains("UID_MAP 0 0 4294967295"),
                "root needs no user namespace: {run:?}"
            ),
            As::User => {
                let u = test_user().unwrap();
                assert!(
                    run.stdout.contains(&format!("UID_MAP {0} {0} 1", u.uid)),
                    "{run:?}"
                );
                assert!(
                    run.stdout.contains(&format!("GID_MAP {0} {0} 1", u.gid)),
                    "{run:?}"
                );
                assert!(run.stdout.contains("SETGROUPS deny"), "{run:?}");
            }
        }
    }
);

/// Starts `agentd sandbox` on `command` and SIGKILLs it once `marker` runs; returns the run.
fn kill_the_supervisor_mid_call(who: As, ws: &Path, command: &str, marker: &str) {
    let mut child = sandbox_command(who, ws, &["--timeout", "120"], command, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while processes_with(marker).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "never started: {:?}",
            processes_with(marker)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

both!(
    a_call_dies_with_its_supervisor_setsid_and_double_forks_included,
    |who| {
        let ws = Dir::new("zygote-pdeath", who);
        let m = unique("zpd");
        kill_the_supervisor_mid_call(
            who,
            &ws.0,
            &format!(
                "exec >/dev/null 2>&1; setsid sh -c 'sleep 100; : {m}' & \
                 (sh -c 'sleep 100; : {m}' &) ; nohup sh -c 'sleep 100; : {m}' & sleep 100"
            ),
            &m,
        );
        daemon::wait_for("the call's processes gone with agentd", || {
            processes_with(&m).is_empty()
        });
        let run = sandbox(who, &ws.0, &[], "echo SANE", &[]);
        assert!(run.stdout.contains("SANE"), "{run:?}");
    }
);

/// A root daemon runs the test user's session: its workers are cloned by a root zygote and drop
/// to the user as the last step before the tool, which clears `PR_SET_PDEATHSIG`.
/// `agentd sandbox` as `who`, inside a user namespace of its own (where it is root) whose limit
/// of new PID namespaces is `max_pid_namespaces`: the zygote's clone into new namespaces is then
/// refused, and the worker it forks instead must say which step failed.
fn sandbox_with_pid_namespaces_limited_to(who: As, ws: &Path, max_pid_namespaces: u32) -> Run {
    let script = format!(
        "echo {max_pid_namespaces} > /proc/sys/user/max_pid_namespaces || exit 99; \
         exec \"$0\" sandbox --workspace \"$1\" -- 'echo SANE'"
    );
    let out = command_for("unshare", who)
        .arg("-Ur")
        .arg("sh")
        .arg("-c")
        .arg(script)
        .arg(binary_for("agentd", who))
        .arg(ws)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home_of(who))
        .env("AGENTD_TOOL_WORKER", binary_for("tool-worker", who))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Root only: in a user namespace of the unprivileged user, every root-owned path (the binaries'
/// directories, /tmp) is nobody's, and the supervisor rightly refuses to run there at all.
#[test]
fn where_the_kernel_refuses_the_clone_the_fallback_names_the_failing_step() {
    let who = As::Root;
    let ws = Dir::new("zygote-fallback", who);
    let sane = sandbox_with_pid_namespaces_limited_to(who, &ws.0, 1000);
    assert!(sane.stdout.contains("SANE"), "{sane:?}");
    let refused = sandbox_with_pid_namespaces_limited_to(who, &ws.0, 0);
    assert_ne!(refused.code, 99, "the limit could not be set: {refused:?}");
    assert!(!refused.stdout.contains("SANE"), "{refused:?}");
    assert_eq!(refused.code, 125, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("(step Containment): unshare(CLONE_NEWPID"),
        "{refused:?}"
    );
}

both!(
    a_sandboxed_call_given_the_zygotes_host_pid_cannot_reach_it,
    |who| {
        let ws = Dir::new("zygote-target-pid", who);
        install_zygote_probe(&ws.0, who);
        let marker = unique("zpid");
        // The test writes the zygote's host pid into the workspace once the call runs.
        let command = format!(
            "while [ ! -s zpid ]; do sleep 0.05; done; ./zp zygote $(cat zpid); : {marker}"
        );
        let child = agentd_command(who, &[])
            .arg("sandbox")
            .arg("--workspace")
            .arg(&ws.0)
            .arg("--")
            .arg(&command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let ppid = |pid: &str| -> String {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
            status
                .lines()
                .find_map(|l| l.strip_prefix("PPid:"))
                .unwrap()
                .trim()
                .to_owned()
        };
        let start = Instant::now();
        let shell = loop {
            if let Some(p) = processes_with(&marker)
                .iter()
                .find(|p| p.contains("bash --noprofile"))
            {
                break p.split(':').next().unwrap().trim().to_owned();
            }
            assert!(start.elapsed() < Duration::from_secs(20), "never started");
            std::thread::sleep(Duration::from_millis(20));
        };
        let zygote = ppid(&ppid(&shell));
        let cmdline = std::fs::read_to_string(format!("/proc/{zygote}/cmdline")).unwrap();
        assert!(cmdline.contains("--zygote"), "{cmdline}");
        let zpid = ws.0.join("zpid");
        std::fs::write(&zpid, format!("{zygote}\n")).unwrap();
        give(&zpid, who);
        let out = child.wait_with_output().unwrap();
        let run = Run {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        };
        let got = attempts(&run.stdout);
        const ENOENT: i32 = 2;
        // The host pid means nothing in the call's PID namespace and its own /proc.
        assert_eq!(got["z_ptrace_attach"], (-1, EPERM), "{run:?}");
        assert_eq!(got["z_kill0"], (-1, ESRCH), "{run:?}");
        assert_eq!(got["z_pidfd_open"], (-1, ESRCH), "{run:?}");
        assert_eq!(got["z_open_proc_dir"], (-1, ENOENT), "{run:?}");
        assert_eq!(got["z_process_vm_readv"], (-1, EPERM), "{run:?}");
        assert_eq!(got["z_mem"], (-1, ENOENT), "{run:?}");
        assert_eq!(got["z_status"], (-1, ENOENT), "{run:?}");
        assert!(!got.keys().any(|k| k.starts_with("z_fd_")), "{run:?}");
        assert_eq!(run.code, 0, "{run:?}");
    }
);

both!(
    a_file_another_user_puts_in_an_empty_hidden_directory_during_the_call_stays_hidden,
    |who| {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root to play the other user writing to /srv or /media");
            return;
        }
        // An empty directory among the hidden ones, as a fresh machine has /srv and /media.
        let Some(hidden) = ["/srv", "/media"].into_iter().map(Path::new).find(|d| {
            std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir())
                && std::fs::read_dir(d).is_ok_and(|mut e| e.next().is_none())
        }) else {
            eprintln!("skipped: no empty /srv or /media here");
            return;
        };
        let ws = Dir::new("zygote-hidden-empty", who);
        let marker = unique("zhidden");
        let planted = hidden.join(&marker);
        let command = format!(
            "while [ ! -e go ]; do sleep 0.05; done; ls -A {dir}; cat {planted} 2>&1; \
             [ -e {planted} ] && echo STAT-SEES-IT; ls -d {dir} && echo SANE; : {marker}",
            dir = hidden.display(),
            planted = planted.display(),
        );
        let child = agentd_command(who, &[])
            .arg("sandbox")
            .arg("--workspace")
            .arg(&ws.0)
            .arg("--")
            .arg(&command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !processes_with(&marker)
            .iter()
            .any(|p| p.contains("bash --noprofile"))
        {
            assert!(start.elapsed() < Duration::from_secs(20), "never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Another user's file, world-readable, made after the call's mounts were set up.
        std::fs::write(&planted, "secret-of-another-user\n").unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(ws.0.join("go"), "").unwrap();
        let out = child.wait_with_output();
        let _ = std::fs::remove_file(&planted);
        let out = out.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("SANE"), "{stdout}");
        assert!(!stdout.contains("secret-of-another-user"), "{stdout}");
        // Landlock refuses the read, but not a `stat`: only the hiding mount stops that.
        assert!(!stdout.contains("STAT-SEES-IT"), "{stdout}");
        assert!(!stdout.contains(&format!("{marker}\n")), "listed: {stdout}");
    }
);
