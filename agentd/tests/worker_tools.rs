//! Every tool through a real tool-worker (the built binary), from the supervisor's API: results,
//! confinement by the kernel rather than by path strings, and workers that fail in every way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd::worker::{WorkerError, run_tool};
use protocol::worker::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod common;
use common::{Dirs as Fixture, worker};

impl Fixture {
    /// One call through a fresh worker in this sandbox.
    async fn run(&self, tool: ToolRequest) -> ToolResult {
        run_tool(&worker(), &self.spec(), tool, |_| {})
            .await
            .unwrap()
    }
}

fn read(path: &str) -> ToolRequest {
    ToolRequest::ReadFile(ReadFileRequest {
        path: path.into(),
        offset: None,
        limit: None,
    })
}

fn write(path: &str, content: &str) -> ToolRequest {
    ToolRequest::WriteFile(WriteFileRequest {
        path: path.into(),
        content: content.into(),
    })
}

fn replace(path: &str, old: &str, new: &str, all: bool) -> ToolRequest {
    ToolRequest::StrReplace(StrReplaceRequest {
        path: path.into(),
        old: old.into(),
        new: new.into(),
        replace_all: all,
    })
}

#[tokio::test]
async fn read_file_numbers_lines_pages_and_refuses_binary() {
    let f = Fixture::new("tools-read");
    std::fs::write(f.ws.join("a.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    std::fs::write(f.ws.join("bin.dat"), [0u8, 1, 2, 3]).unwrap();
    let r = f.run(read("a.txt")).await;
    assert!(!r.is_error);
    assert_eq!(
        r.content,
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"
    );
    let r = f
        .run(ToolRequest::ReadFile(ReadFileRequest {
            path: "a.txt".into(),
            offset: Some(2),
            limit: Some(2),
        }))
        .await;
    assert_eq!(
        r.content,
        "     2\ttwo\n     3\tthree\n[… more lines follow; read on with offset 4]"
    );
    let r = f.run(read("bin.dat")).await;
    assert!(
        r.is_error && r.content.contains("looks binary"),
        "{}",
        r.content
    );
    let r = f.run(read("missing.txt")).await;
    assert!(
        r.is_error && r.content.contains("missing.txt: no such file"),
        "{}",
        r.content
    );
    let r = f.run(read(".")).await;
    assert!(
        r.is_error && r.content.contains("is a directory"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn write_file_creates_parents_keeps_mode_and_leaves_no_temp_file() {
    let f = Fixture::new("tools-write");
    let r = f.run(write("deep/er/new.txt", "hello\n")).await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("deep/er/new.txt")).unwrap(),
        "hello\n"
    );
    std::fs::write(f.ws.join("run.sh"), "old").unwrap();
    std::fs::set_permissions(f.ws.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    f.run(write("run.sh", "#!/bin/sh\necho new\n")).await;
    let meta = std::fs::metadata(f.ws.join("run.sh")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o750);
    let leftovers: Vec<_> = std::fs::read_dir(&f.ws)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[tokio::test]
async fn str_replace_needs_exactly_one_match_unless_replace_all() {
    let f = Fixture::new("tools-edit");
    std::fs::write(
        f.ws.join("lib.rs"),
        "fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n// a - b\n",
    )
    .unwrap();
    let r = f.run(replace("lib.rs", "a - b", "a + b", false)).await;
    assert!(
        r.is_error && r.content.contains("occurs 2 times"),
        "{}",
        r.content
    );
    let r = f
        .run(replace("lib.rs", "    a - b\n", "    a + b\n", false))
        .await;
    assert!(!r.is_error, "{}", r.content);
    assert!(
        r.content.contains("@@ line 2 @@\n-    a - b\n+    a + b"),
        "{}",
        r.content
    );
    assert!(
        std::fs::read_to_string(f.ws.join("lib.rs"))
            .unwrap()
            .contains("    a + b\n")
    );
    let r = f.run(replace("lib.rs", "a * b", "x", false)).await;
    assert!(
        r.is_error && r.content.contains("not found"),
        "{}",
        r.content
    );
    let r = f.run(replace("lib.rs", "a", "A", true)).await;
    assert!(
        !r.is_error && r.content.contains("occurrences"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn list_glob_and_grep_honour_gitignore() {
    let f = Fixture::new("tools-search");
    for (path, text) in [
        ("src/main.rs", "fn main() {}\n"),
        ("src/lib.rs", "pub fn lib() {}\n"),
        ("target/gen.rs", "fn main() {}\n"),
        (".gitignore", "target/\n"),
    ] {
        std::fs::create_dir_all(f.ws.join(path).parent().unwrap()).unwrap();
        std::fs::write(f.ws.join(path), text).unwrap();
    }
    std::process::Command::new("git")
        .arg("init")
        .arg("-q")
        .arg(&f.ws)
        .status()
        .unwrap();
    let r = f
        .run(ToolRequest::ListDir(ListDirRequest { path: None }))
        .await;
    assert!(
        r.content.contains("src/") && r.content.contains(".gitignore"),
        "{}",
        r.content
    );
    let r = f
        .run(ToolRequest::Glob(GlobRequest {
            pattern: "**/*.rs".into(),
            path: None,
        }))
        .await;
    assert!(
        r.content.contains("src/main.rs") && r.content.contains("src/lib.rs"),
        "{}",
        r.content
    );
    assert!(
        !r.content.contains("target/gen.rs"),
        "ignored files are skipped: {}",
        r.content
    );
    let r = f
        .run(ToolRequest::Grep(GrepRequest {
            pattern: r"fn \w+\(\)".into(),
            path: None,
            glob: Some("*.rs".into()),
            ignore_case: false,
            max_matches: None,
        }))
        .await;
    assert!(
        r.content.contains("src/main.rs:1:fn main() {}"),
        "{}",
        r.content
    );
    assert!(!r.content.contains("target/"), "{}", r.content);
    let r = f
        .run(ToolRequest::Grep(GrepRequest {
            pattern: "(".into(),
            path: None,
            glob: None,
            ignore_case: false,
            max_matches: None,
        }))
        .await;
    assert!(
        r.is_error && r.content.contains("invalid regular expression"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn file_tools_are_confined_by_the_kernel_not_by_path_strings() {
    let f = Fixture::new("tools-confine");
    std::fs::write(f.root.join("outside.txt"), "OUTSIDE-SECRET\n").unwrap();
    std::os::unix::fs::symlink(f.root.join("outside.txt"), f.ws.join("link.txt")).unwrap();
    let outside = f.root.join("outside.txt").display().to_string();
    // The scratch root is under /tmp, which the mount namespace hides (no such file); Landlock
    // would refuse it too (permission denied).
    let refused = |content: &str| {
        content.contains("permission denied") || content.contains("no such file or directory")
    };
    for path in ["../outside.txt", outside.as_str(), "link.txt"] {
        let r = f.run(read(path)).await;
        assert!(r.is_error && refused(&r.content), "{path}: {}", r.content);
        assert!(!r.content.contains("OUTSIDE-SECRET"));
    }
    for path in [
        "../written.txt",
        &f.root.join("written2.txt").display().to_string(),
    ] {
        let r = f.run(write(path, "x")).await;
        assert!(
            r.is_error && (refused(&r.content) || r.content.contains("Read-only file system")),
            "{path}: {}",
            r.content
        );
    }
    assert!(!f.root.join("written.txt").exists() && !f.root.join("written2.txt").exists());
    let r = f
        .run(replace("link.txt", "OUTSIDE", "CHANGED", false))
        .await;
    assert!(r.is_error, "{}", r.content);
    assert_eq!(
        std::fs::read_to_string(f.root.join("outside.txt")).unwrap(),
        "OUTSIDE-SECRET\n"
    );
}

#[tokio::test]
async fn bash_output_streams_in_chunks_and_failures_are_results() {
    let f = Fixture::new("tools-bash");
    let mut chunks = Vec::new();
    let tool = ToolRequest::Bash(BashRequest {
        command: "echo one; sleep 0.3; echo two >&2; exit 3".into(),
    });
    let r = run_tool(&worker(), &f.spec(), tool, |c| chunks.push(c.to_owned()))
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(3));
    assert!(r.is_error);
    assert_eq!(
        r.content, "one\ntwo\n",
        "stdout and stderr merged in arrival order"
    );
    assert!(chunks.len() >= 2, "output arrived as it came: {chunks:?}");
    assert_eq!(r.lockdown.landlock, LandlockStatus::FullyEnforced);
    assert!(r.lockdown.seccomp && r.lockdown.no_new_privs && r.lockdown.capabilities_cleared);
}

#[tokio::test]
async fn bash_runs_commands_as_bash_reads_them_with_no_start_up_code_and_default_signals() {
    let f = Fixture::new("tools-shell");
    let rc = f.ws.join("rc");
    std::fs::write(&rc, "echo START-UP FILE RAN\n").unwrap();
    let mut spec = f.spec();
    for (name, value) in [
        ("BASH_ENV", rc.display().to_string()),
        ("ENV", rc.display().to_string()),
        (
            "BASH_FUNC_ls%%",
            "() { echo EXPORTED FUNCTION RAN; }".to_owned(),
        ),
        ("SHELLOPTS", "xtrace".to_owned()),
        ("PS4", "$(echo TRACE PROMPT RAN)".to_owned()),
    ] {
        spec.env.push(EnvVar {
            name: name.into(),
            value,
        });
    }
    // `$'…'` is ANSI-C quoting to bash (dash would print the quotes), `[[` is bash's test, a
    // broken pipe ends `yes` quietly (SIGPIPE is not left ignored by the worker), and nothing of
    // the start-up variables runs.
    let command = r"echo $'a\tb'; [[ x < y ]] && echo ordered; yes | head -1; ls -d /; echo $0";
    let tool = ToolRequest::Bash(BashRequest {
        command: command.into(),
    });
    let r = run_tool(&worker(), &spec, tool, |_| {}).await.unwrap();
    assert_eq!(r.content, "a\tb\nordered\ny\n/\nbash\n", "{r:?}");
    assert_eq!(r.exit_code, Some(0));
}

fn fake_worker(dir: &Path, name: &str, script: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test]
async fn workers_that_die_garble_or_fail_lockdown_become_errors_not_hangs() {
    let f = Fixture::new("tools-broken");
    let tool = || {
        ToolRequest::Bash(BashRequest {
            command: "true".into(),
        })
    };
    let dies = fake_worker(&f.root, "dies", "exit 7");
    match run_tool(&dies, &f.spec(), tool(), |_| {}).await {
        Err(WorkerError::Died { status, .. }) => assert!(status.contains('7'), "{status}"),
        other => panic!("expected Died, got {other:?}"),
    }
    let garbles = fake_worker(
        &f.root,
        "garbles",
        r"printf '\000\000\000\003abc' >&0; sleep 5",
    );
    assert!(matches!(
        run_tool(&garbles, &f.spec(), tool(), |_| {}).await,
        Err(WorkerError::Protocol(_))
    ));
    let missing = f.root.join("no-such-worker");
    assert!(matches!(
        run_tool(&missing, &f.spec(), tool(), |_| {}).await,
        Err(WorkerError::Spawn { .. })
    ));
    let mut spec = f.spec();
    spec.workspace = f.root.join("no-such-workspace");
    match run_tool(&worker(), &spec, tool(), |_| {}).await {
        Err(WorkerError::Lockdown(failure)) => {
            assert!(failure.message.contains("no-such-workspace"), "{failure:?}")
        }
        other => panic!("expected a lockdown failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_worker_that_never_answers_is_killed_and_reported() {
    let f = Fixture::new("tools-hung");
    // A duration no other process on the machine has, so the check below is this worker's.
    let sleep = format!("sleep 60.{}", std::process::id());
    let hangs = fake_worker(&f.root, "hangs", &format!("exec {sleep}"));
    let start = std::time::Instant::now();
    let outcome = run_tool(
        &hangs,
        &f.spec(),
        ToolRequest::Bash(BashRequest {
            command: "true".into(),
        }),
        |_| {},
    )
    .await;
    assert!(matches!(outcome, Err(WorkerError::Hung(_))), "{outcome:?}");
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    assert!(agentd_e2e_free_of(&sleep), "the hung worker was killed");
}

/// No process runs `pattern` any more.
fn agentd_e2e_free_of(pattern: &str) -> bool {
    std::thread::sleep(std::time::Duration::from_millis(200));
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .all(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| {
                    !String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(pattern)
                })
                .unwrap_or(true)
        })
}
