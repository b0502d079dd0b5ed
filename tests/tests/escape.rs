//! The sandbox escape suite: every attempt here must FAIL, run for real through the built
//! `agentd sandbox` and `tool-worker` binaries, as root and as an unprivileged user. A plain command
//! in the workspace must succeed, so a sandbox that refuses everything cannot pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::both;
use agentd_e2e::{As, Dir, give, home_of, install_probe, processes_with, sandbox, unique};
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// The shell's words for a file the sandbox hides (the mount namespace) or refuses (Landlock).
fn hidden_or_denied(output: &str) -> bool {
    output.contains("No such file or directory") || output.contains("Permission denied")
}

/// The shell's words for a write refused by either layer: hidden or read-only (the mount
/// namespace), or denied (Landlock).
fn refused(output: &str) -> bool {
    hidden_or_denied(output)
        || output.contains("Directory nonexistent")
        || output.contains("Read-only file system")
}

/// Writes `content` to `path` (creating parents) owned by `who`.
fn plant(path: &Path, content: &str, who: As) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
    give(path.parent().unwrap(), who);
}

both!(a_plain_command_in_the_workspace_succeeds, |who| {
    let ws = Dir::new("plain", who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "echo made > inside.txt && cat inside.txt && ls",
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("made") && run.stdout.contains("inside.txt"),
        "{run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.0.join("inside.txt")).unwrap(),
        "made\n"
    );
});

both!(reading_a_key_under_home_ssh_fails, |who| {
    let ws = Dir::new("ssh", who);
    let marker = unique("SSH-SECRET");
    let key = home_of(who).join(".ssh").join(unique("agentd-e2e-key"));
    plant(&key, &marker, who);
    let run = sandbox(who, &ws.0, &[], &format!("cat {}", key.display()), &[]);
    std::fs::remove_file(&key).ok();
    assert!(!run.stdout.contains(&marker), "the key leaked: {run:?}");
    // The home is hidden by the mount namespace (no such file), and Landlock would refuse it.
    assert!(hidden_or_denied(&run.stdout), "{run:?}");
    assert_ne!(run.code, 0);
});

both!(reading_the_agents_env_file_fails, |who| {
    let ws = Dir::new("agents-env", who);
    let marker = unique("sk-agents-env");
    let env_file = home_of(who).join(".agents/env");
    let existed = env_file.exists();
    if !existed {
        plant(&env_file, &format!("API_KEY={marker}\n"), who);
    }
    let run = sandbox(who, &ws.0, &[], "cat ~/.agents/env", &[]);
    if !existed {
        std::fs::remove_file(&env_file).ok();
    }
    assert!(hidden_or_denied(&run.stdout), "{run:?}");
    assert!(!run.stdout.contains("API_KEY="), "{run:?}");
});

both!(the_supervisors_key_is_in_no_environment, |who| {
    let ws = Dir::new("environ", who);
    let key = unique("sk-supervisor-key");
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "env; cat /proc/self/environ; for f in /proc/[0-9]*/environ; do cat \"$f\"; done 2>/dev/null; echo done",
        &[("API_KEY", &key), ("OPENAI_API_KEY", &key)],
    );
    assert!(run.stdout.contains("done"), "{run:?}");
    assert!(
        run.stdout.contains("TERM=dumb"),
        "the allowlisted environment is there: {run:?}"
    );
    assert!(
        !run.stdout.contains(&key),
        "the supervisor's key reached the worker: {run:?}"
    );
});

both!(reading_etc_shadow_fails, |who| {
    let ws = Dir::new("shadow", who);
    let run = sandbox(who, &ws.0, &[], "cat /etc/shadow", &[]);
    assert!(run.stdout.contains("Permission denied"), "{run:?}");
    assert!(!run.stdout.contains("root:"), "{run:?}");
});

both!(
    writing_outside_the_workspace_fails_directly_and_through_a_symlink,
    |who| {
        let ws = Dir::new("write-ws", who);
        let outside = Dir::new("write-outside", who);
        std::os::unix::fs::symlink(&outside.0, ws.0.join("link")).unwrap();
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "echo x > {0}/direct; echo x > link/via-symlink; echo x > ../{1}/dotdot; ls {0}",
                outside.0.display(),
                outside.0.file_name().unwrap().to_string_lossy()
            ),
            &[],
        );
        assert!(
            run.stdout.lines().filter(|l| refused(l)).count() >= 3,
            "{run:?}"
        );
        for name in ["direct", "via-symlink", "dotdot"] {
            assert!(
                !outside.0.join(name).exists(),
                "{name} was written outside the workspace: {run:?}"
            );
        }
    }
);

both!(
    writing_the_shared_tmp_fails_but_the_private_tmpdir_works,
    |who| {
        let ws = Dir::new("tmp", who);
        let name = unique("/tmp/agentd-e2e-shared");
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!("echo x > {name}; echo y > \"$TMPDIR/private\" && cat \"$TMPDIR/private\""),
            &[],
        );
        assert!(
            !Path::new(&name).exists(),
            "the shared /tmp was written: {run:?}"
        );
        assert!(refused(&run.stdout), "{run:?}");
        assert!(
            run.stdout.contains('y'),
            "the private TMPDIR is writable: {run:?}"
        );
    }
);

both!(tcp_connect_to_a_local_listener_fails, |who| {
    let ws = Dir::new("tcp", who);
    install_probe(&ws.0, who);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let run = sandbox(who, &ws.0, &[], &format!("./probe tcp {port}"), &[]);
    assert!(run.stdout.contains("BLOCKED"), "{run:?}");
    assert!(listener.accept().is_err(), "a connection arrived");
});

both!(udp_send_to_a_local_socket_fails, |who| {
    let ws = Dir::new("udp", who);
    install_probe(&ws.0, who);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let port = socket.local_addr().unwrap().port();
    let run = sandbox(who, &ws.0, &[], &format!("./probe udp {port}"), &[]);
    assert!(run.stdout.contains("BLOCKED"), "{run:?}");
    let mut buf = [0u8; 8];
    assert!(socket.recv(&mut buf).is_err(), "a datagram arrived");
});

both!(connecting_to_path_and_abstract_unix_sockets_fails, |who| {
    let ws = Dir::new("unix", who);
    install_probe(&ws.0, who);
    let dir = Dir::new("unix-sock", who);
    let path = dir.0.join("agentd.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    listener.set_nonblocking(true).unwrap();
    use std::os::linux::net::SocketAddrExt;
    let name = unique("agentd-e2e-abstract");
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let run = sandbox(
        who,
        &ws.0,
        &[],
        &format!("./probe unix {}; ./probe abstract {name}", path.display()),
        &[],
    );
    assert_eq!(run.stdout.matches("BLOCKED").count(), 2, "{run:?}");
    assert!(
        listener.accept().is_err() && abstract_listener.accept().is_err(),
        "a connection arrived"
    );
});

both!(killing_the_supervisor_fails, |who| {
    let ws = Dir::new("kill", who);
    install_probe(&ws.0, who);
    // /proc is the call's own: the supervisor is not in it. Its host pid is in the worker's
    // command line (pid 1, `--parent PID`); signalling that pid must not reach it either.
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "a=$(tr '\\0' '\\n' < /proc/1/cmdline | sed -n '/--parent/{n;p}'); echo \"supervisor=$a\"; ./probe kill $a; kill -9 $a; echo still-here",
        &[],
    );
    assert!(
        run.stdout.lines().any(|l| l
            .strip_prefix("supervisor=")
            .is_some_and(|p| p.parse::<u32>().is_ok())),
        "the attempt found the supervisor's host pid: {run:?}"
    );
    assert!(run.stdout.contains("BLOCKED kill"), "{run:?}");
    assert!(run.stdout.contains("still-here"), "{run:?}");
    assert_eq!(
        run.code, 0,
        "agentd survived to report the command's exit code: {run:?}"
    );
});

both!(new_namespaces_and_mounts_fail, |who| {
    let ws = Dir::new("ns", who);
    install_probe(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "unshare -r id; mount -t tmpfs none \"$TMPDIR\"; ./probe userns; ./probe clone-newuser; echo end",
        &[],
    );
    assert!(run.stdout.contains("end"), "{run:?}");
    assert!(run.stdout.contains("unshare failed"), "{run:?}");
    assert_eq!(run.stdout.matches("BLOCKED").count(), 2, "{run:?}");
    assert!(run.stdout.contains("mount:"), "{run:?}");
    assert!(!run.stdout.contains("ESCAPED"), "{run:?}");
});

both!(dangerous_syscalls_are_refused, |who| {
    let ws = Dir::new("syscalls", who);
    install_probe(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "for p in io_uring bpf userfaultfd keyctl perf x32; do ./probe $p; done; ./probe ptrace 1",
        &[],
    );
    assert_eq!(run.stdout.matches("BLOCKED").count(), 7, "{run:?}");
    assert!(!run.stdout.contains("ESCAPED"), "{run:?}");
    // EPERM (1) from seccomp, not ENOSYS or EINVAL: the filter refused, not a missing feature.
    for what in [
        "io_uring_setup",
        "bpf",
        "userfaultfd",
        "keyctl",
        "perf_event_open",
        "x32 getpid",
        "ptrace attach",
    ] {
        assert!(
            run.stdout.contains(&format!("BLOCKED {what} errno=1 ")),
            "{what}: {run:?}"
        );
    }
});

both!(capabilities_no_new_privs_and_seccomp_are_in_force, |who| {
    let ws = Dir::new("status", who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status",
        &[],
    );
    for line in [
        "CapEff:\t0000000000000000",
        "CapPrm:\t0000000000000000",
        "CapBnd:\t0000000000000000",
        "CapAmb:\t0000000000000000",
        "NoNewPrivs:\t1",
        "Seccomp:\t2",
    ] {
        assert!(run.stdout.contains(line), "missing {line:?}: {run:?}");
    }
});

both!(no_process_outlives_the_call, |who| {
    let ws = Dir::new("survivors", who);
    let marker = format!(
        "{}",
        3000 + std::process::id() % 1000 + if who == As::Root { 0 } else { 1000 }
    );
    let cmd = format!(
        "setsid sleep {m}1 & nohup sleep {m}2 > /dev/null 2>&1 & (sleep {m}3 &) ; sh -c 'sleep {m}4 &' ; echo started",
        m = marker
    );
    let run = sandbox(who, &ws.0, &[], &cmd, &[]);
    assert!(run.stdout.contains("started"), "{run:?}");
    std::thread::sleep(Duration::from_millis(200));
    let left = processes_with(&format!("sleep {marker}"));
    assert!(left.is_empty(), "survivors: {left:?}");
});

both!(a_timeout_kills_everything_the_command_started, |who| {
    let ws = Dir::new("timeout", who);
    let marker = format!(
        "{}",
        5000 + std::process::id() % 1000 + if who == As::Root { 0 } else { 1000 }
    );
    let start = Instant::now();
    let run = sandbox(
        who,
        &ws.0,
        &["--timeout", "1"],
        &format!("setsid sleep {marker}7 & sleep {marker}8"),
        &[],
    );
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(run.code, 124, "{run:?}");
    assert!(run.stdout.contains("timed out after 1 s"), "{run:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(processes_with(&format!("sleep {marker}")).is_empty());
});

both!(
    a_fork_bomb_returns_within_its_timeout_and_leaves_nothing,
    |who| {
        let ws = Dir::new("forkbomb", who);
        let script = unique("bomb");
        std::fs::write(ws.0.join(format!("{script}.sh")), "f() { f | f & }; f\n").unwrap();
        give(&ws.0, who);
        let start = Instant::now();
        let run = sandbox(
            who,
            &ws.0,
            &["--timeout", "3"],
            &format!("sh ./{script}.sh; sleep 60"),
            &[],
        );
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "took {:?}: {run:?}",
            start.elapsed()
        );
        std::thread::sleep(Duration::from_millis(300));
        let left = processes_with(&script);
        assert!(left.is_empty(), "{} bomb processes left", left.len());
    }
);

both!(a_memory_limit_refuses_a_large_allocation, |who| {
    let ws = Dir::new("memory", who);
    install_probe(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &["--memory", "256M"],
        "./probe alloc 1073741824; ./probe alloc 1048576",
        &[],
    );
    assert!(
        run.stdout.contains("BLOCKED malloc"),
        "1 GiB was allocated under a 256 MiB limit: {run:?}"
    );
    assert!(
        run.stdout.contains("ESCAPED malloc"),
        "1 MiB must still work: {run:?}"
    );
});

both!(
    two_gigabytes_of_output_are_capped_and_the_supervisor_stays_small,
    |who| {
        let ws = Dir::new("flood", who);
        // Reaped below with wait4, which also yields the child's own peak RSS.
        #[allow(clippy::zombie_processes)]
        let mut child = agentd_e2e::agentd_command(who, &[])
            .args(["sandbox", "--verbose", "--workspace"])
            .arg(&ws.0)
            .args(["--", "head -c 2000000000 /dev/zero | tr '\\0' x"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child (never waited on through `child`) and writes only into the
        // two locals passed.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(rc, pid);
        assert!(
            stdout.len() < 64 * 1024,
            "the result is capped: {} bytes",
            stdout.len()
        );
        assert!(
            stdout.contains("bytes cut; 2000000000 bytes of output in all"),
            "{}",
            &stdout[stdout.len().saturating_sub(300)..]
        );
        assert!(stderr.contains("2000000000 bytes of output"), "{stderr}");
        // As the user, agentd runs under setpriv (exec, same pid), so this is agentd's own peak.
        let max_rss_kib = usage.ru_maxrss;
        assert!(
            max_rss_kib < 64 * 1024,
            "agentd's peak RSS was {max_rss_kib} KiB"
        );
    }
);

both!(the_read_only_profile_refuses_workspace_writes, |who| {
    let ws = Dir::new("readonly", who);
    std::fs::write(ws.0.join("kept.txt"), "original\n").unwrap();
    give(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &["--profile", "read-only"],
        "cat kept.txt; echo changed > kept.txt; echo new > new.txt; echo t > \"$TMPDIR/t\" && echo tmp-ok",
        &[],
    );
    assert!(run.stdout.contains("original"), "reading works: {run:?}");
    assert!(
        run.stdout.contains("tmp-ok"),
        "the private TMPDIR stays writable: {run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.0.join("kept.txt")).unwrap(),
        "original\n"
    );
    assert!(!ws.0.join("new.txt").exists());
});

both!(
    granting_network_allows_tcp_but_still_no_unix_sockets,
    |who| {
        let ws = Dir::new("network", who);
        install_probe(&ws.0, who);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let run = sandbox(
            who,
            &ws.0,
            &["--network"],
            &format!("./probe tcp {port}; ./probe abstract agentd-e2e-none"),
            &[],
        );
        assert!(
            run.stdout.contains("ESCAPED tcp connect"),
            "with --network a TCP connection works: {run:?}"
        );
        assert!(
            run.stdout.contains("BLOCKED unix socket"),
            "AF_UNIX stays forbidden: {run:?}"
        );
    }
);
