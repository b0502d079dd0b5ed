//! The call's `/proc` (and `/sys`), read for what tells about the host: the kernel files Docker
//! masks (moby `oci/defaults.go`), the kernel's config, and the files only root may read, which a
//! root call (uid 0 without capabilities) could read before. Run for real through the built
//! `agentd sandbox`, as root and as an unprivileged user, beside the `/proc` files tools need.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::both;
use agentd_e2e::{Dir, sandbox};

/// Docker's masked paths (moby `oci/defaults.go` and the current engine's two more), the kernel
/// files the issue found a root call reading, and the owner-only files of `/proc` this machine
/// has (found here, on the host, by their mode).
fn masked() -> Vec<String> {
    let mut paths: Vec<String> = [
        "/proc/asound",
        "/proc/acpi",
        "/proc/interrupts",
        "/proc/kcore",
        "/proc/keys",
        "/proc/latency_stats",
        "/proc/timer_list",
        "/proc/timer_stats",
        "/proc/sched_debug",
        "/proc/scsi",
        "/sys/firmware",
        "/sys/devices/virtual/powercap",
        "/proc/config.gz",
        "/proc/slabinfo",
        "/proc/vmallocinfo",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    // The suite's own look at the host, not the worker's code: what root alone may read.
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        use std::os::unix::fs::PermissionsExt;
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta = entry.metadata();
        if !name.bytes().all(|b| b.is_ascii_digit())
            && entry.file_type().is_ok_and(|t| t.is_file())
            && meta.is_ok_and(|m| m.permissions().mode() & 0o444 == 0o400)
        {
            paths.push(format!("/proc/{name}"));
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

both!(
    masked_kernel_files_read_empty_and_proc_still_serves_tools,
    |who| {
        let ws = Dir::new("proc", who);
        let paths = masked();
        assert!(
            paths.iter().any(|p| p == "/proc/slabinfo"),
            "the list covers what root calls read before: {paths:?}"
        );
        // Each path: the bytes a read gets (a directory: its listing), 0 when it fails.
        let script: String = paths
        .iter()
        .map(|p| {
            format!(
                "if [ -d {p} ]; then n=$(ls -A {p} 2>/dev/null | wc -c); else n=$(head -c 4096 {p} 2>/dev/null | wc -c); fi; echo \"{p} $n\"\n"
            )
        })
        .collect();
        let run = sandbox(who, &ws.0, &[], &script, &[]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let read: Vec<&str> = run.stdout.lines().filter(|l| !l.ends_with(" 0")).collect();
        assert!(read.is_empty(), "these gave the call something: {read:?}");
        assert_eq!(run.stdout.lines().count(), paths.len(), "{}", run.stdout);

        // What tools need from /proc still works.
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "grep -m1 ^Name: /proc/self/status && grep -c ^processor /proc/cpuinfo && grep -m1 ^MemTotal: /proc/meminfo && ps -e -o pid,comm",
            &[],
        );
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        for want in ["Name:", "MemTotal:", "PID", "ps"] {
            assert!(run.stdout.contains(want), "{want}: {}", run.stdout);
        }
    }
);

both!(
    the_read_only_proc_paths_cannot_be_written_even_where_their_mode_allows,
    |who| {
        let ws = Dir::new("proc-ro", who);
        // The mount that holds each path says so, whatever Landlock (the other layer) would
        // refuse too: the deepest mount point on the way to it, and its options.
        let script = r#"for p in /proc/sys /proc/bus /proc/fs /proc/irq /proc/sysrq-trigger /proc/self/oom_score_adj; do
  [ -e $p ] || continue
  o=$(awk -v p="$p" '($5 == "/" || $5 == p || index(p, $5 "/") == 1) && length($5) > n { n = length($5); o = $6 } END { print o }' /proc/self/mountinfo)
  case ",$o," in *,ro,*) echo "$p ro" ;; *) echo "$p writable ($o)" ;; esac
done"#;
        let run = sandbox(who, &ws.0, &[], script, &[]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("/proc/sys ro"), "{}", run.stdout);
        assert!(!run.stdout.contains("writable"), "{}", run.stdout);
    }
);
