//! seccomp's second round, run for real through the built `agentd sandbox` and `tool-worker`, as
//! root and as an unprivileged user: no set-uid or set-gid bit can be set on anything (the `chmod`
//! family, files created with those bits by `open`/`openat`/`creat`/`O_TMPFILE`/`mknod`),
//! `openat2` answers ENOSYS so libc falls back to `openat`, and `modify_ldt`, `fanotify_init`,
//! `memfd_secret` and `pidfd_getfd` are refused. Every attempt is checked twice: by the errno the
//! sandbox printed (EPERM, the filter's answer) and by looking at the file from outside afterwards.
//! Each test also runs a harmless form of the same call (`chmod 0755`, `mkfifo`, a plain
//! `open(O_CREAT)`) that must work, so a sandbox that refuses everything cannot pass; where the
//! kernel would allow the attempt on its own, the same probe is run outside the sandbox too, to
//! show it is the filter that refuses.
//!
//! The third round (tests/probe/ipc_probe.c): no file lease can be taken (a lease makes every
//! other process's open of the file block or fail, the supervisor's scans included), a
//! socketpair is a connected stream or seqpacket pair of `AF_UNIX` or nothing (a datagram end can
//! send to any socket it can name: the host's path sockets and, where Landlock sets no scopes,
//! its abstract ones), and without network no socket end can take a name in the host's abstract
//! namespace. Host-side listeners check that nothing arrived.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::both;
use agentd_e2e::{As, Dir, Run, command_for, give, install_probe, repo, sandbox, unique};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};
use std::path::Path;

const SET_ID: u32 = 0o6000;

/// The permission bits of `name` in `dir` (without following a symlink), or `None` if it is absent.
fn mode_of(dir: &Path, name: &str) -> Option<u32> {
    std::fs::symlink_metadata(dir.join(name))
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

/// Asserts that `name` either does not exist or carries neither set-id bit.
fn assert_no_set_id(dir: &Path, name: &str, run: &Run) {
    if let Some(mode) = mode_of(dir, name) {
        assert_eq!(mode & SET_ID, 0, "{name} has mode {mode:o}: {run:?}");
    }
}

/// Asserts that the probe printed `BLOCKED <what> errno=<errno> ` for each of `whats`.
fn assert_blocked(run: &Run, errno: i32, whats: &[&str]) {
    for what in whats {
        assert!(
            run.stdout
                .contains(&format!("BLOCKED {what} errno={errno} ")),
            "{what} was not refused with errno {errno}: {run:?}"
        );
    }
    assert!(!run.stdout.contains("ESCAPED"), "{run:?}");
}

/// Runs the probe in `ws` directly, outside the sandbox, as `who`: what the kernel alone allows.
fn probe_outside(who: As, ws: &Path, args: &[&str]) -> String {
    let probe = ws.join("probe");
    let mut cmd = command_for(&probe, who);
    let out = cmd.args(args).current_dir(ws).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

both!(chmod_cannot_set_the_set_uid_or_set_gid_bit, |who| {
    let ws = Dir::new("chmod-setid", who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "touch u g both sane; chmod u+s u; chmod 2755 g; chmod 6755 both; chmod ug+s both; \
         chmod 0755 sane && chmod +x g && echo SANE",
        &[],
    );
    assert!(run.stdout.contains("SANE"), "{run:?}");
    assert!(
        run.stdout.matches("Operation not permitted").count() >= 4,
        "{run:?}"
    );
    for name in ["u", "g", "both"] {
        assert!(
            mode_of(&ws.0, name).is_some(),
            "{name} was not made: {run:?}"
        );
        assert_no_set_id(&ws.0, name, &run);
    }
    assert_eq!(mode_of(&ws.0, "sane"), Some(0o755), "{run:?}");
    assert_eq!(mode_of(&ws.0, "g").unwrap() & 0o111, 0o111, "{run:?}");
});

both!(chmod_g_plus_s_on_a_directory_is_refused_too, |who| {
    // seccomp sees a mode, not whether the path is a directory: refusing S_ISGID on files means
    // refusing it on directories as well (systemd's RestrictSUIDSGID= does the same).
    let ws = Dir::new("chmod-dir", who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "mkdir d; chmod g+s d; chmod 2775 d; mkdir -m 2775 d2; chmod 0775 d && echo SANE",
        &[],
    );
    assert!(run.stdout.contains("SANE"), "{run:?}");
    assert!(
        run.stdout.matches("Operation not permitted").count() >= 2,
        "{run:?}"
    );
    assert_eq!(mode_of(&ws.0, "d"), Some(0o775), "{run:?}");
    assert_no_set_id(&ws.0, "d2", &run);
});

both!(
    python_install_cp_and_tar_cannot_set_the_bits_either,
    |who| {
        let ws = Dir::new("tools-setid", who);
        // A set-uid file planted from outside, for cp -p and tar to try to reproduce.
        let planted = ws.0.join("planted");
        std::fs::write(&planted, "#!/bin/sh\n").unwrap();
        give(&planted, who);
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "python3 -c 'import os; open(\"py\", \"w\").close(); os.chmod(\"py\", 0o755); print(\"PY-SANE\"); os.chmod(\"py\", 0o4755)'; \
         install -m 4755 /bin/true installed; \
         cp -p planted copied; \
         tar cf a.tar planted && mkdir x && tar xpf a.tar -C x; \
         install -m 0755 /bin/true sane-installed && echo SANE",
            &[],
        );
        assert!(
            run.stdout.contains("SANE") && run.stdout.contains("PY-SANE"),
            "{run:?}"
        );
        assert!(run.stdout.contains("PermissionError"), "{run:?}");
        assert!(
            run.stdout.matches("Operation not permitted").count() >= 4,
            "python, install, cp and tar each refused: {run:?}"
        );
        assert_eq!(mode_of(&ws.0, "py"), Some(0o755), "{run:?}");
        for name in ["installed", "copied", "x/planted"] {
            assert_no_set_id(&ws.0, name, &run);
        }
        assert_eq!(mode_of(&ws.0, "sane-installed"), Some(0o755), "{run:?}");
    }
);

both!(creating_a_file_with_set_id_bits_fails, |who| {
    let ws = Dir::new("create-setid", who);
    install_probe(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "./probe open 4755 o; ./probe openat 2755 oa; ./probe creat 6755 c; ./probe tmpfile 4755 .; \
         ./probe open 0755 sane; ./probe tmpfile 0600 .",
        &[],
    );
    assert_blocked(
        &run,
        libc::EPERM,
        &["open 4755", "openat 2755", "creat 6755", "tmpfile 4755"],
    );
    assert!(
        run.stdout.contains("ALLOWED open 0755") && run.stdout.contains("ALLOWED tmpfile 0600"),
        "{run:?}"
    );
    for name in ["o", "oa", "c", "tmpfile-linked"] {
        assert_eq!(mode_of(&ws.0, name), None, "{name} was created: {run:?}");
    }
    assert_eq!(mode_of(&ws.0, "sane"), Some(0o755), "{run:?}");
});

both!(mknod_with_set_id_bits_fails, |who| {
    let ws = Dir::new("mknod-setid", who);
    install_probe(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "./probe mknod 6644 fifo; ./probe mknod 2644 fifo2; ./probe mknodat-reg 4755 reg; \
         mkfifo -m 6644 fifo3; mkfifo sane-fifo && ./probe mknod 0644 sane-fifo2",
        &[],
    );
    assert_blocked(
        &run,
        libc::EPERM,
        &["mknod 6644", "mknod 2644", "mknodat-reg 4755"],
    );
    assert!(run.stdout.contains("ALLOWED mknod 0644"), "{run:?}");
    for name in ["fifo", "fifo2", "reg"] {
        assert_eq!(mode_of(&ws.0, name), None, "{name} was created: {run:?}");
    }
    assert_no_set_id(&ws.0, "fifo3", &run);
    for name in ["sane-fifo", "sane-fifo2"] {
        let meta = std::fs::symlink_metadata(ws.0.join(name)).unwrap();
        assert!(meta.file_type().is_fifo(), "{name}: {run:?}");
    }
});

both!(fchmod_fchmodat_and_fchmodat2_are_covered, |who| {
    let ws = Dir::new("fchmod-setid", who);
    install_probe(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "touch f; ./probe fchmod 4755 f; ./probe fchmodat 2755 f; ./probe fchmodat2 6755 f; \
         ./probe chmod 4000 f; ./probe fchmod 0600 f; ./probe fchmodat2 0700 f",
        &[],
    );
    assert_blocked(
        &run,
        libc::EPERM,
        &[
            "fchmod 4755",
            "fchmodat 2755",
            "fchmodat2 6755",
            "chmod 4000",
        ],
    );
    assert!(
        run.stdout.contains("ALLOWED fchmod 0600") && run.stdout.contains("ALLOWED fchmodat2 0700"),
        "{run:?}"
    );
    assert_eq!(mode_of(&ws.0, "f"), Some(0o700), "{run:?}");
});

both!(openat2_answers_enosys_so_libc_falls_back, |who| {
    // openat2 takes its flags and mode in a struct seccomp cannot read: it is refused whatever
    // its arguments, with ENOSYS, the answer that makes callers fall back to openat.
    let ws = Dir::new("openat2", who);
    install_probe(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "./probe openat2 4755 a; ./probe openat2 0644 b; echo made > sane && cat sane",
        &[],
    );
    assert_blocked(&run, libc::ENOSYS, &["openat2 4755", "openat2 0644"]);
    assert!(run.stdout.contains("made"), "{run:?}");
    assert_eq!(mode_of(&ws.0, "a"), None, "{run:?}");
    assert_eq!(mode_of(&ws.0, "b"), None, "{run:?}");
    let outside = probe_outside(who, &ws.0, &["openat2", "0644", "outside"]);
    assert!(
        outside.contains("ALLOWED openat2 0644"),
        "the kernel has openat2, so ENOSYS came from the filter: {outside}"
    );
});

both!(
    modify_ldt_fanotify_init_and_memfd_secret_are_refused,
    |who| {
        let ws = Dir::new("ldt-fanotify-secret", who);
        install_probe(&ws.0, who);
        let probes = ["modify_ldt", "fanotify_init", "memfd_secret", "pidfd_getfd"];
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "for p in modify_ldt fanotify_init memfd_secret pidfd_getfd; do ./probe $p; done; \
         ./probe chmod 0700 probe",
            &[],
        );
        assert_blocked(&run, libc::EPERM, &probes);
        assert!(run.stdout.contains("ALLOWED chmod 0700"), "{run:?}");
        // Outside the sandbox the kernel grants each of them to the same user: the filter refused.
        for p in probes {
            let outside = probe_outside(who, &ws.0, &[p]);
            assert!(
                outside.contains(&format!("ESCAPED {p}")),
                "{p} outside: {outside}"
            );
        }
    }
);

both!(
    mkdir_needs_no_rule_because_the_kernel_drops_the_bits,
    |who| {
        // The table leaves mkdir/mkdirat alone (systemd filters them): the kernel keeps only the
        // permission bits and S_ISVTX of mkdir's mode. This test holds the kernel to that.
        let ws = Dir::new("mkdir-setid", who);
        install_probe(&ws.0, who);
        let run = sandbox(who, &ws.0, &[], "./probe mkdir 6755 inside", &[]);
        assert!(run.stdout.contains("ALLOWED mkdir 6755"), "{run:?}");
        assert_eq!(mode_of(&ws.0, "inside"), Some(0o755), "{run:?}");
        let outside = probe_outside(who, &ws.0, &["mkdir", "6755", "outside"]);
        assert!(outside.contains("ALLOWED mkdir 6755"), "{outside}");
        assert_eq!(mode_of(&ws.0, "outside"), Some(0o755), "{outside}");
    }
);

/// Copies the IPC probe (tests/probe/ipc_probe.c) into `ws` as `ipc`, owned by `who`.
fn install_ipc_probe(ws: &Path, who: As) {
    agentd_e2e::install_compiled(&agentd_e2e::compiled_probe("ipc_probe"), ws, "ipc", who);
}

/// Runs the IPC probe in `ws` directly, outside the sandbox, as `who`.
fn ipc_outside(who: As, ws: &Path, args: &[&str]) -> String {
    let out = command_for(ws.join("ipc"), who)
        .args(args)
        .current_dir(ws)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The address of `name`: a path, or `@name` in the abstract namespace.
fn unix_address(name: &str) -> SocketAddr {
    match name.strip_prefix('@') {
        Some(abstract_name) => SocketAddr::from_abstract_name(abstract_name).unwrap(),
        None => SocketAddr::from_pathname(name).unwrap(),
    }
}

/// A datagram socket of the host's at `name` (a path, made writable by anyone, or `@name`), as
/// journald's, syslog's or systemd's notify socket would be: nothing in a call may reach it.
struct HostDatagram(UnixDatagram);

impl HostDatagram {
    fn bind(name: &str) -> Self {
        let socket = UnixDatagram::bind_addr(&unix_address(name)).unwrap();
        if !name.starts_with('@') {
            std::fs::set_permissions(name, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        socket.set_nonblocking(true).unwrap();
        HostDatagram(socket)
    }

    /// Every datagram that has arrived.
    fn received(&self) -> Vec<String> {
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while let Ok(n) = self.0.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        got
    }
}

/// Asserts that the probe printed `ALLOWED <what>` for each of `whats`.
fn assert_allowed(run: &Run, whats: &[&str]) {
    for what in whats {
        assert!(
            run.stdout.contains(&format!("ALLOWED {what}\n")),
            "{what} must work: {run:?}"
        );
    }
}

both!(a_file_lease_cannot_be_taken, |who| {
    // A write lease on .git/config would make every O_NONBLOCK open of it by another process
    // fail with EWOULDBLOCK while the call runs (a blocking open waits up to lease-break-time):
    // the supervisor's scan of the repository's config, and the next call's.
    let ws = repo("lease", who);
    std::fs::write(ws.0.join("leased"), "x\n").unwrap();
    give(&ws.0, who);
    install_ipc_probe(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "./ipc setlease leased; ./ipc setlease .git/config; ./ipc getlease leased; \
         cat leased .git/config >/dev/null && echo SANE",
        &[],
    );
    assert_blocked(
        &run,
        libc::EPERM,
        &[
            "setlease F_WRLCK leased",
            "setlease F_RDLCK leased",
            "setlease F_WRLCK .git/config",
            "setlease F_RDLCK .git/config",
        ],
    );
    assert_allowed(&run, &["getlease leased"]);
    assert!(run.stdout.contains("SANE"), "{run:?}");
    // The kernel grants the owner of the file a lease: the filter refused it.
    let outside = ipc_outside(who, &ws.0, &["setlease", "leased"]);
    assert!(
        outside.contains("ESCAPED setlease F_WRLCK leased"),
        "outside: {outside}"
    );
});

both!(
    a_datagram_socketpair_is_refused_and_reaches_no_host_socket,
    |who| {
        let ws = Dir::new("dgram-pair", who);
        install_ipc_probe(&ws.0, who);
        let path = ws.0.join("host.sock").display().to_string();
        let abstract_name = format!("@{}", unique("agentd-e2e-dgram"));
        let (on_path, on_name) = (
            HostDatagram::bind(&path),
            HostDatagram::bind(&abstract_name),
        );
        let stream_name = format!("@{}", unique("agentd-e2e-stream"));
        let stream = UnixListener::bind_addr(&unix_address(&stream_name)).unwrap();
        stream.set_nonblocking(true).unwrap();
        let command = format!(
            "for t in dgram raw dgram-flags; do ./ipc pair $t {abstract_name}; ./ipc pair $t host.sock; done; \
             for t in stream stream-flags seqpacket; do ./ipc pair $t {abstract_name}; ./ipc pair $t host.sock; \
             ./ipc pair $t {stream_name}; done; \
             ./ipc pair-domain inet; ./ipc pair-domain netlink; \
             python3 -c 'import asyncio, socket; asyncio.run(asyncio.sleep(0)); socket.socketpair(); print(\"ASYNCIO\")'"
        );
        // Landlock's scopes already keep a call from its host's abstract sockets but in the
        // full-access profile, where seccomp alone stands between them.
        for profile in ["workspace-write", "full-access"] {
            let run = sandbox(who, &ws.0, &["--profile", profile], &command, &[]);
            assert_blocked(
                &run,
                libc::EPERM,
                &[
                    "socketpair dgram",
                    "socketpair raw",
                    "socketpair dgram-flags",
                    "socketpair-domain inet",
                    "socketpair-domain netlink",
                ],
            );
            assert_allowed(
                &run,
                &[
                    "socketpair stream",
                    "socketpair stream-flags",
                    "socketpair seqpacket",
                ],
            );
            assert!(run.stdout.contains("ASYNCIO"), "{profile}: {run:?}");
            assert_eq!(
                on_path.received(),
                Vec::<String>::new(),
                "{profile}: {run:?}"
            );
            assert_eq!(
                on_name.received(),
                Vec::<String>::new(),
                "{profile}: {run:?}"
            );
            assert!(
                stream.accept().is_err(),
                "a connected pair connected to the host's stream socket: {profile}: {run:?}"
            );
        }
        // The same user outside the sandbox reaches both: they were listening.
        for (name, listener) in [(&abstract_name, &on_name), (&path, &on_path)] {
            let outside = ipc_outside(who, &ws.0, &["pair", "dgram", name]);
            assert!(outside.contains("ESCAPED socketpair dgram"), "{outside}");
            assert!(
                listener.received().contains(&"from-the-sandbox".to_owned()),
                "{name} got nothing from outside: {outside}"
            );
        }
    }
);

both!(without_network_no_socket_end_can_take_a_name, |who| {
    // A connected pair cannot send or connect elsewhere, but either end can still be bound:
    // to a name in the host's abstract namespace (squatting it while the call runs), or to
    // a socket file. Without network there is no socket() either, so nothing needs bind().
    let ws = Dir::new("pair-bind", who);
    install_ipc_probe(&ws.0, who);
    let name = format!("@{}", unique("agentd-e2e-squat"));
    let run = sandbox(
        who,
        &ws.0,
        &[],
        &format!(
            "./ipc bind stream {name}; ./ipc bind seqpacket {name}; ./ipc bind stream sock-file; \
                 ./ipc pair stream {name}"
        ),
        &[],
    );
    assert_blocked(
        &run,
        libc::EPERM,
        &[
            &format!("bind stream {name}"),
            &format!("bind seqpacket {name}"),
            "bind stream sock-file",
        ],
    );
    assert_allowed(&run, &["socketpair stream"]);
    assert!(!ws.0.join("sock-file").exists(), "{run:?}");
    let outside = ipc_outside(who, &ws.0, &["bind", "stream", &name]);
    assert!(
        outside.contains(&format!("ESCAPED bind stream {name}")),
        "{outside}"
    );
    // With network granted, bind() stays: a server must bind its TCP port.
    let run = sandbox(
        who,
        &ws.0,
        &["--network"],
        "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); print(\"BOUND\")'",
        &[],
    );
    assert!(run.stdout.contains("BOUND"), "{run:?}");
});
