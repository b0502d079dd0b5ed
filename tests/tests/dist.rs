//! `dist/`: the example config holds every key, with the code's defaults, and the daemon starts
//! with it; the units pass `systemd-analyze verify`; the service's exposure is what the docs say
//! and at most 5.0; the tmpfiles and sysusers snippets do what they say; and the unit's filters
//! (system calls, namespaces, address families) admit everything a sandboxed call does, seen with
//! strace — as root for the system unit, as an unprivileged user for the user unit. A check whose
//! tool is missing is skipped with a message saying which.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::config::{AgentSection, ProviderSection, SandboxSection, ServerSection};
use agentd_e2e::{As, Dir, binary, binary_for, command_for, give, test_user};
use std::collections::BTreeSet;
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn dist(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dist")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(dist(name)).unwrap()
}

/// `program`'s path, or `None` with a message saying the check is skipped.
fn tool(program: &str) -> Option<PathBuf> {
    let found = ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin"]
        .iter()
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file());
    if found.is_none() {
        eprintln!("skipped: {program} is not installed (it comes with systemd / strace)");
    }
    found
}

#[test]
fn the_example_config_sets_every_key_to_the_codes_default() {
    let text = read("agentd.toml");
    let config = agentd::config::parse(&text, "dist/agentd.toml").unwrap();
    // Destructured without `..`: a key added to the code fails to compile here until it is
    // added to the example.
    let ProviderSection {
        kind,
        base_url,
        model,
        api_key,
        max_tries,
        idle_timeout_secs,
        first_byte_timeout_secs,
        context_window,
        max_response_bytes,
        max_output_tokens,
        max_retry_wait_secs,
        headers,
    } = config.provider.unwrap();
    assert!(kind.is_some() && base_url.is_some() && model.is_some() && api_key.is_some());
    let transport = agentd::providers::http::Transport::new("openai").unwrap();
    assert_eq!(max_tries, Some(transport.retry.max_tries));
    assert_eq!(idle_timeout_secs, Some(transport.idle_timeout.as_secs()));
    // No single default (each is per model), and none for headers: named, commented out.
    assert!(context_window.is_none() && text.contains("\n# context_window = "));
    assert!(first_byte_timeout_secs.is_none() && text.contains("\n# first_byte_timeout_secs = "));
    assert!(headers.is_none() && text.contains("\n# headers = "));
    assert_eq!(max_response_bytes, Some(transport.max_response_bytes));
    assert_eq!(
        max_retry_wait_secs,
        Some(transport.retry.max_delay.as_secs())
    );
    // No single default (it is per model): named, commented out.
    assert!(max_output_tokens.is_none() && text.contains("\n# max_output_tokens = "));

    let SandboxSection {
        read_paths,
        write_paths,
        protected_paths,
        allow_broad_workspace,
    } = config.sandbox.unwrap();
    assert!(read_paths.is_empty() && write_paths.is_empty());
    assert!(
        !allow_broad_workspace,
        "the example sets the default: refused"
    );
    let protected: Vec<String> = protected_paths
        .unwrap()
        .into_iter()
        .map(|p| p.into_inner())
        .collect();
    assert_eq!(protected, protocol::worker::DEFAULT_PROTECTED_PATHS);

    let aggregate = config.aggregate.unwrap();
    let machine = agentd::worker::aggregate::Machine::read();
    assert_eq!(
        agentd::config::AggregateSection::bounds(Some(&aggregate), &machine, &text, "agentd.toml")
            .unwrap(),
        agentd::worker::aggregate::Bounds::defaults(&machine)
    );
    let agentd::config::AggregateSection {
        session_memory,
        user_memory,
        total_memory,
        session_max_processes,
        session_cpus,
        user_max_processes,
        user_cpus,
        total_max_processes,
        total_cpus,
    } = aggregate;
    // The machine-dependent process defaults and the unbounded CPU are written commented out.
    assert!(session_memory.is_some() && user_memory.is_some() && total_memory.is_some());
    assert!(
        session_max_processes.is_none()
            && user_max_processes.is_none()
            && total_max_processes.is_none()
            && session_cpus.is_none()
            && user_cpus.is_none()
            && total_cpus.is_none()
    );

    let AgentSection { subagent_max_steps } = config.agent.unwrap();
    assert_eq!(
        subagent_max_steps.map(|n| n.get()),
        Some(agentd::agent::subagent::DEFAULT_MAX_STEPS)
    );

    let server = config.server.unwrap();
    assert_eq!(server.limits(), agentd::server::Limits::default());
    let ServerSection {
        max_connections,
        max_connections_per_uid,
        reserved_connections_per_uid,
        max_frame_bytes,
        handshake_timeout_ms,
        idle_timeout_ms,
        outgoing_queue,
        max_sessions_per_uid,
        admin_group,
        approval_wait_ms,
        shutdown_grace_ms,
        max_session_log_bytes,
    } = server;
    assert!(
        [
            max_connections,
            max_connections_per_uid,
            reserved_connections_per_uid,
            max_frame_bytes,
            outgoing_queue,
            max_sessions_per_uid
        ]
        .iter()
        .all(Option::is_some)
            && handshake_timeout_ms.is_some()
            && idle_timeout_ms.is_some()
            && admin_group.is_some()
            && approval_wait_ms.is_some()
            && shutdown_grace_ms.is_some()
            && max_session_log_bytes.is_some()
    );

    // [policy]: the policy crate's own parse, and every key of its section.
    policy::Policy::from_config(&text, "dist/agentd.toml").unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let policy::rules::PolicyConfig {
        default,
        defaults,
        network,
        project_code,
        bash,
        read,
        write,
    } = toml::from_str(&toml::to_string(&table["policy"]).unwrap()).unwrap();
    assert_eq!(default, Some(policy::Verdict::Ask));
    assert_eq!(defaults.unwrap().into_inner(), "extend");
    assert_eq!(network.unwrap().into_inner(), policy::Verdict::Deny);
    assert_eq!(project_code.unwrap().into_inner(), policy::Verdict::Allow);
    assert!(!bash.is_empty() && !read.is_empty() && !write.is_empty());
}

#[test]
fn the_daemon_starts_with_the_example_config() {
    let dir = Dir::new("dist-serve", As::Root);
    let name = agentd_e2e::unique("agentd-e2e-dist");
    let listener =
        UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let child = Command::new(binary("agentd"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NOTIFY_SOCKET", format!("@{name}"))
        .arg("serve")
        .arg("--config")
        .arg(dist("agentd.toml"))
        .arg("--socket")
        .arg(dir.0.join("agentd.sock"))
        .arg("--state-dir")
        .arg(dir.0.join("state"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 512];
    let got = listener.recv(&mut buf).map(|n| buf[..n].to_vec());
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    );
    let out = child.wait_with_output().unwrap();
    let got = got
        .unwrap_or_else(|e| panic!("no READY=1 ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert!(got.starts_with(b"READY=1"), "{got:?}");
    assert_eq!(out.status.code(), Some(0));
}

/// The units of `dir` (`""` or `"user"`) copied to a temp dir, with `ExecStart` pointing at the
/// built binary (verify checks that the program exists).
fn staged_units(dir: &str) -> Dir {
    let staged = Dir::new("dist-units", As::Root);
    for unit in ["agentd.service", "agentd.socket"] {
        let text = read(format!("{dir}/{unit}").trim_start_matches('/'));
        let text = text.replace("/usr/bin/agentd", binary("agentd").to_str().unwrap());
        std::fs::write(staged.0.join(unit), text).unwrap();
    }
    staged
}

#[test]
fn the_units_pass_systemd_analyze_verify() {
    let Some(analyze) = tool("systemd-analyze") else {
        return;
    };
    for (dir, user) in [("", false), ("user", true)] {
        let staged = staged_units(dir);
        let mut cmd = Command::new(&analyze);
        if user {
            cmd.arg("--user").env("XDG_RUNTIME_DIR", &staged.0);
        }
        let out = cmd
            .arg("verify")
            .arg("agentd.service")
            .arg("agentd.socket")
            .current_dir(&staged.0)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.trim().is_empty(),
            "dist/{dir}: {said}"
        );
    }
}

/// `systemd-analyze security --offline=yes` of the system service: its overall exposure.
fn exposure(analyze: &Path) -> f64 {
    let out = Command::new(analyze)
        .args(["security", "--offline=yes"])
        .arg(dist("agentd.service"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("Overall exposure level"))
        .unwrap_or_else(|| panic!("{text}"));
    line.split(": ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn the_service_exposure_is_at_most_5_and_is_the_one_documented() {
    let Some(analyze) = tool("systemd-analyze") else {
        return;
    };
    let score = exposure(&analyze);
    assert!(score <= 5.0, "exposure {score}");
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/daemon.md"))
            .unwrap();
    assert!(
        docs.contains(&format!("exposure level **{score:.1}**")),
        "docs/daemon.md does not report the exposure {score:.1}"
    );
}

#[test]
fn the_tmpfiles_and_sysusers_snippets_make_what_they_say() {
    let (Some(tmpfiles), Some(sysusers)) = (tool("systemd-tmpfiles"), tool("systemd-sysusers"))
    else {
        return;
    };
    let root = Dir::new("dist-root", As::Root);
    for (dir, file) in [
        ("usr/lib/tmpfiles.d", "agentd.tmpfiles"),
        ("usr/lib/sysusers.d", "agentd.sysusers"),
    ] {
        std::fs::create_dir_all(root.0.join(dir)).unwrap();
        std::fs::copy(dist(file), root.0.join(dir).join("agentd.conf")).unwrap();
    }
    std::fs::create_dir_all(root.0.join("etc")).unwrap();
    let root_arg = format!("--root={}", root.0.display());
    for cmd in [
        Command::new(&tmpfiles)
            .args(["--create", &root_arg])
            .output(),
        Command::new(&sysusers).arg(&root_arg).output(),
    ] {
        let out = cmd.unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    use std::os::unix::fs::MetadataExt as _;
    for (path, mode) in [
        ("run/agentd", 0o755),
        ("var/lib/agentd", 0o711),
        ("etc/agentd", 0o755),
    ] {
        let meta = std::fs::metadata(root.0.join(path)).unwrap();
        assert_eq!((meta.mode() & 0o7777, meta.uid()), (mode, 0), "{path}");
    }
    let group = std::fs::read_to_string(root.0.join("etc/group")).unwrap();
    assert!(group.lines().any(|l| l.starts_with("agentd:x:")), "{group}");
}

/// A unit's value for `key` (the last one set), split into words.
fn unit_words(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .rev()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}="))
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Every system call `SystemCallFilter=` allows, groups expanded.
fn allowed_syscalls(analyze: &Path, filter: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo: Vec<String> = filter.to_vec();
    let mut seen = BTreeSet::new();
    while let Some(item) = todo.pop() {
        if !item.starts_with('@') {
            out.insert(item);
            continue;
        }
        if !seen.insert(item.clone()) {
            continue;
        }
        let listing = Command::new(analyze)
            .args(["syscall-filter", &item])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&listing.stdout);
        todo.extend(
            text.lines()
                .skip(1)
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned),
        );
    }
    out
}

/// What the strace log of a run shows: system calls by name, namespaces unshared or cloned, and
/// socket families created.
fn observed(log: &str) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let (mut calls, mut namespaces, mut families) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for line in log.lines() {
        // `PID  name(args) = result`; resumed and signal lines start otherwise.
        let body = line
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start();
        let Some((name, args)) = body.split_once('(') else {
            continue;
        };
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            continue;
        }
        calls.insert(name.to_owned());
        if matches!(name, "unshare" | "clone" | "clone3" | "setns") {
            for (flag, ns) in [
                ("CLONE_NEWNS", "mnt"),
                ("CLONE_NEWPID", "pid"),
                ("CLONE_NEWIPC", "ipc"),
                ("CLONE_NEWUSER", "user"),
                ("CLONE_NEWNET", "net"),
                ("CLONE_NEWUTS", "uts"),
                ("CLONE_NEWCGROUP", "cgroup"),
            ] {
                if args.contains(flag) {
                    namespaces.insert(ns.to_owned());
                }
            }
        }
        if name == "socket" || name == "socketpair" {
            families.insert(args.split([',', ')']).next().unwrap_or_default().to_owned());
        }
    }
    (calls, namespaces, families)
}

/// Runs a representative call in the sandbox as `who` under `strace -f`, and checks what it did
/// against the filters of `unit`.
fn filters_admit_a_sandboxed_call(who: As, unit: &str) {
    let (Some(analyze), Some(strace)) = (tool("systemd-analyze"), tool("strace")) else {
        return;
    };
    let ws = Dir::new("dist-strace-ws", who);
    let log_dir = Dir::new("dist-strace-log", who);
    let log = log_dir.0.join("strace.log");
    std::fs::write(
        ws.0.join("t.py"),
        "import os, subprocess\nprint(os.cpu_count())\nsubprocess.run(['true'])\n",
    )
    .unwrap();
    std::fs::write(ws.0.join("a.c"), "int main(void) { return 0; }\n").unwrap();
    give(&ws.0, who);
    let workload = "python3 t.py && git hash-object a.c && cc a.c -o a && ./a \
                    && ls -la | sort | head -3 && tar cf - . | wc -c && echo done";
    let out = command_for(&strace, who)
        .args(["-f", "-qq", "-o"])
        .arg(&log)
        .arg(binary_for("agentd", who))
        .arg("sandbox")
        .arg("--workspace")
        .arg(&ws.0)
        .args(["--", workload])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", agentd_e2e::home_of(who))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l == "done"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (calls, namespaces, families) = observed(&std::fs::read_to_string(&log).unwrap());
    assert!(
        calls.contains("landlock_restrict_self") && calls.contains("seccomp"),
        "{calls:?}"
    );
    let allowed = allowed_syscalls(&analyze, &unit_words(unit, "SystemCallFilter"));
    let refused: Vec<&String> = calls.difference(&allowed).collect();
    assert!(
        refused.is_empty(),
        "the unit's SystemCallFilter= would refuse {refused:?}"
    );
    let ns: BTreeSet<String> = unit_words(unit, "RestrictNamespaces").into_iter().collect();
    assert!(
        namespaces.is_subset(&ns),
        "namespaces {namespaces:?}, unit allows {ns:?}"
    );
    let af: BTreeSet<String> = unit_words(unit, "RestrictAddressFamilies")
        .into_iter()
        .collect();
    assert!(
        families.is_subset(&af),
        "socket families {families:?}, unit allows {af:?}"
    );
}

#[test]
fn the_system_units_filters_admit_a_sandboxed_call_as_root() {
    filters_admit_a_sandboxed_call(As::Root, &read("agentd.service"));
}

#[test]
fn the_user_units_filters_admit_a_sandboxed_call_as_a_user() {
    if test_user().is_none() {
        eprintln!("skipped: needs root to create the test user");
        return;
    }
    filters_admit_a_sandboxed_call(As::User, &read("user/agentd.service"));
}
