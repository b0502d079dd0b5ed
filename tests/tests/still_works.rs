//! The "still works" suite: the everyday work of a coding agent — git, a Python venv, cargo, gcc,
//! npm, pytest, ps/pgrep, `$TMPDIR` — run for real through the built `agentd sandbox` and
//! `tool-worker` binaries, as root and as an unprivileged user. Each test checks the outcome (the
//! commit is in the log, the test passed, the binary ran), not just an exit code, so a sandbox
//! hardened too far fails here while `escape.rs` still passes.
//!
//! Everything is offline: no crate dependencies, no npm packages, pytest from the system.
//! `scripts/test.sh` installs what is missing (git, python3-venv, python3-pytest). Only a missing
//! node/npm skips its test, with a message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::both;
use agentd_e2e::{As, Dir, Run, command_for, give, sandbox, test_user};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A number no other test of this run uses, for markers and sleep durations.
fn unique() -> u32 {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Runs `command` in the sandbox and asserts that it exited 0.
fn run_ok(who: As, ws: &Path, args: &[&str], command: &str, env: &[(&str, &str)]) -> Run {
    let run = sandbox(who, ws, args, command, env);
    assert_eq!(run.code, 0, "`{command}` failed in the sandbox: {run:#?}");
    run
}

/// Writes `content` to `ws/rel` (creating parents), owned by `who`.
fn put(ws: &Path, rel: &str, content: &str, who: As) {
    let path = ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    give(ws, who);
}

/// `git` run by the test (root, outside the sandbox) in `repo`, to look at what the call left.
fn git_outside(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-c")
        .arg("safe.directory=*")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .expect("git is needed: scripts/test.sh installs it");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A home directory for the call with nothing in it, so what git finds there is what the test
/// put there (the machine's own `~/.gitconfig`, if any, is covered by its own tests below).
fn empty_home(who: As) -> Dir {
    Dir::new("home", who)
}

const GIT_IDENTITY: &str = "-c user.name=Still-Works -c user.email=still@works.invalid";

both!(git_init_add_commit_branch_and_stash, |who| {
    let ws = Dir::new("git", who);
    let home = empty_home(who);
    let home_s = home.0.to_str().unwrap();
    let run = run_ok(
        who,
        &ws.0,
        &[],
        &format!(
            "git init -q . && echo one > file.txt && git add file.txt \
             && git {GIT_IDENTITY} commit -q -m 'first commit' \
             && git checkout -q -b feature \
             && echo two >> file.txt && git {GIT_IDENTITY} stash -q && git stash list"
        ),
        &[("HOME", home_s)],
    );
    assert!(run.stdout.contains("stash@{0}"), "{run:#?}");
    // What git itself says afterwards, looked at from outside.
    let log = git_outside(&ws.0, &["log", "--format=%an <%ae> %s"]);
    assert_eq!(
        log.trim(),
        "Still-Works <still@works.invalid> first commit",
        "{run:#?}"
    );
    let branch = git_outside(&ws.0, &["rev-parse", "--abbrev-ref", "HEAD"]);
    assert_eq!(branch.trim(), "feature");
    let stash = git_outside(&ws.0, &["stash", "show", "-p", "stash@{0}"]);
    assert!(
        stash.contains("+two"),
        "the stash holds the change: {stash}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.0.join("file.txt")).unwrap(),
        "one\n",
        "the change was stashed away"
    );
    // git init wrote its hook samples and config: both must stay writable for git itself.
    assert!(ws.0.join(".git/config").is_file());
    assert!(ws.0.join(".git/hooks").is_dir());
});

both!(git_uses_a_gitconfig_granted_with_read_path, |who| {
    let ws = Dir::new("gitcfg", who);
    let home = empty_home(who);
    let n = unique();
    let cfg = home.0.join(".gitconfig");
    std::fs::write(
        &cfg,
        format!("[user]\n\tname = Granted-{n}\n\temail = granted@works.invalid\n"),
    )
    .unwrap();
    give(&home.0, who);
    run_ok(
        who,
        &ws.0,
        &["--read-path", cfg.to_str().unwrap()],
        "git init -q . && echo x > x && git add x && git commit -q -m granted",
        &[("HOME", home.0.to_str().unwrap())],
    );
    let log = git_outside(&ws.0, &["log", "--format=%an %s"]);
    assert_eq!(log.trim(), format!("Granted-{n} granted"));
});

// git treats an unreadable `~/.gitconfig` (EACCES from Landlock alone, before the mount
// namespace) as fatal — "unknown error occurred while reading the configuration files" — so git
// did not work for a user who has one (root on the build machines does) unless the config
// granted it. The mount namespace hides homes: git sees no file and goes on.
mod git_works_when_home_has_an_unreadable_gitconfig {
    use super::*;

    fn check(who: As) {
        let ws = Dir::new("gitcfg-hidden", who);
        let home = empty_home(who);
        std::fs::write(home.0.join(".gitconfig"), "[core]\n\tpager = cat\n").unwrap();
        give(&home.0, who);
        run_ok(
            who,
            &ws.0,
            &[],
            &format!("git init -q . && echo x > x && git add x && git {GIT_IDENTITY} commit -qm c"),
            &[("HOME", home.0.to_str().unwrap())],
        );
        assert_eq!(git_outside(&ws.0, &["log", "--format=%s"]).trim(), "c");
    }

    #[test]
    fn as_root() {
        check(As::Root);
    }

    #[test]
    fn as_unprivileged_user() {
        if test_user().is_none() {
            eprintln!("skipped: needs root to create the test user");
            return;
        }
        check(As::User);
    }
}

both!(a_python_venv_in_the_workspace_runs_python_and_pip, |who| {
    let ws = Dir::new("venv", who);
    let run = run_ok(
        who,
        &ws.0,
        &[],
        "python3 -m venv .venv && .venv/bin/python -c 'import sys; print(\"prefix=\" + sys.prefix)' \
         && .venv/bin/pip --version",
        &[],
    );
    let venv = ws.0.join(".venv");
    assert!(
        run.stdout.contains(&format!("prefix={}", venv.display())),
        "the venv's own python ran: {run:#?}"
    );
    assert!(
        run.stdout.contains("pip ") && run.stdout.contains(&venv.display().to_string()),
        "pip runs from the venv: {run:#?}"
    );
    assert!(venv.join("bin/python").exists());
});

both!(python3_m_pytest_collects_and_passes_a_test, |who| {
    let ws = Dir::new("pytest", who);
    put(
        &ws.0,
        "test_answer.py",
        "def answer():\n    return 6 * 7\n\n\ndef test_answer():\n    assert answer() == 42\n",
        who,
    );
    let run = run_ok(
        who,
        &ws.0,
        &[],
        "python3 -m pytest -v -p no:cacheprovider",
        &[],
    );
    assert!(
        run.stdout.contains("collected 1 item")
            && run.stdout.contains("test_answer.py::test_answer PASSED")
            && run.stdout.contains("1 passed"),
        "{run:#?}"
    );
    // And a failing test is reported as one: pytest really ran the assertion.
    put(
        &ws.0,
        "test_answer.py",
        "def test_answer():\n    assert 6 * 7 == 41\n",
        who,
    );
    let failed = sandbox(
        who,
        &ws.0,
        &[],
        "python3 -m pytest -q -p no:cacheprovider",
        &[],
    );
    assert_eq!(failed.code, 1, "{failed:#?}");
    assert!(failed.stdout.contains("1 failed"), "{failed:#?}");
});

/// Where `cargo` lives and what the sandbox must let it read: `$CARGO_HOME` and `$RUSTUP_HOME`
/// (default `~/.cargo`, `~/.rustup`) when they exist.
fn toolchain() -> Option<(PathBuf, Vec<PathBuf>)> {
    let path = std::env::var_os("PATH")?;
    let cargo = std::env::split_paths(&path)
        .map(|d| d.join("cargo"))
        .find(|p| p.is_file())?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let dir_of = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(default)))
            .filter(|d| d.is_dir())
    };
    let grants = [
        dir_of("CARGO_HOME", ".cargo"),
        dir_of("RUSTUP_HOME", ".rustup"),
    ]
    .into_iter()
    .flatten()
    .collect();
    Some((cargo, grants))
}

/// Whether `who` can execute `path` at all (every directory above it searchable).
fn can_execute(who: As, path: &Path) -> bool {
    if who == As::Root || test_user().is_none() {
        return true;
    }
    command_for("test", who)
        .arg("-x")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

both!(cargo_build_and_cargo_test_of_a_small_crate, |who| {
    let (cargo, grants) = toolchain().expect("the suite runs under cargo, so cargo is on PATH");
    if !can_execute(who, &cargo) {
        // A rustup toolchain under /root (mode 0700) is root's alone; the user variant runs
        // where the toolchain is installed system-wide.
        eprintln!(
            "skipped: the test user cannot reach {} (a toolchain in root's home)",
            cargo.display()
        );
        return;
    }
    let ws = Dir::new("cargo", who);
    put(
        &ws.0,
        "Cargo.toml",
        "[package]\nname = \"still_works\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        who,
    );
    put(
        &ws.0,
        "src/lib.rs",
        "pub fn answer() -> u32 {\n    6 * 7\n}\n\n#[cfg(test)]\nmod tests {\n    \
         #[test]\n    fn answer_is_42() {\n        assert_eq!(super::answer(), 42);\n    }\n}\n",
        who,
    );
    let mut args = Vec::new();
    for g in &grants {
        args.extend(["--read-path", g.to_str().unwrap()]);
    }
    let bin = cargo.parent().unwrap().display().to_string();
    let run = run_ok(
        who,
        &ws.0,
        &args,
        &format!("export PATH={bin}:$PATH; cargo build 2>&1 && cargo test 2>&1"),
        &[],
    );
    assert!(
        run.stdout.contains("Compiling still_works")
            && run.stdout.contains("test tests::answer_is_42 ... ok")
            && run.stdout.contains("test result: ok. 1 passed"),
        "{run:#?}"
    );
    assert!(ws.0.join("target/debug/libstill_works.rlib").is_file());
});

both!(gcc_compiles_a_c_file_that_then_runs, |who| {
    let ws = Dir::new("gcc", who);
    let n = unique();
    put(
        &ws.0,
        "hello.c",
        &format!(
            "#include <stdio.h>\nint main(void) {{ printf(\"hello %d from {n}\\n\", 6 * 7); return 0; }}\n"
        ),
        who,
    );
    let run = run_ok(
        who,
        &ws.0,
        &[],
        "gcc -Wall -o hello hello.c && ./hello",
        &[],
    );
    assert_eq!(run.stdout.trim(), format!("hello 42 from {n}"), "{run:#?}");
    assert!(ws.0.join("hello").is_file());
});

both!(npm_test_of_a_small_package, |who| {
    let found = |bin: &str| {
        ["/usr/local/bin", "/usr/bin", "/bin"]
            .iter()
            .any(|d| Path::new(d).join(bin).is_file())
    };
    if !found("node") || !found("npm") {
        eprintln!("skipped: node or npm is not installed");
        return;
    }
    let ws = Dir::new("npm", who);
    let n = unique();
    put(
        &ws.0,
        "package.json",
        "{\"name\": \"still-works\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node test.js\"}}\n",
        who,
    );
    put(
        &ws.0,
        "test.js",
        &format!(
            "const assert = require('assert');\nassert.strictEqual(6 * 7, 42);\n\
             console.log('node test {n} passed');\n"
        ),
        who,
    );
    let run = run_ok(who, &ws.0, &[], "npm test 2>&1", &[]);
    assert!(
        run.stdout.contains("> still-works@1.0.0 test")
            && run.stdout.contains(&format!("node test {n} passed")),
        "{run:#?}"
    );
});

/// Starts `sleep <unique>` in the background and reports, as `key=value` lines, the shell's `$!`,
/// what `pgrep -f` finds and what `ps` lists for that sleep.
fn sleep_seen_by_ps(who: As) -> (String, Run) {
    let ws = Dir::new("ps", who);
    let duration = format!("{}.{}", 3000 + unique(), std::process::id());
    let pattern = format!("^sleep {}$", duration.replace('.', "\\."));
    let run = run_ok(
        who,
        &ws.0,
        &[],
        &format!(
            "sleep {duration} & p=$!; echo \"shell=$p\"; \
             echo \"pgrep=$(pgrep -f '{pattern}' | tr '\\n' ' ')\"; \
             ps -eo pid=,args= | awk '$2 == \"sleep\" && $3 == \"{duration}\" {{ print \"ps=\" $1 }}'; \
             echo \"ps-p=$(ps -o pid=,comm= -p \"$p\")\"; \
             kill \"$p\""
        ),
        &[],
    );
    (duration, run)
}

/// The value of `key=` in the call's output.
fn value<'a>(run: &'a Run, key: &str) -> &'a str {
    run.stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {run:#?}"))
        .trim()
}

both!(ps_and_pgrep_see_the_calls_own_sleep, |who| {
    let (_, run) = sleep_seen_by_ps(who);
    let pgrep: Vec<&str> = value(&run, "pgrep").split_whitespace().collect();
    assert_eq!(pgrep.len(), 1, "pgrep -f finds the sleep, once: {run:#?}");
    assert_eq!(
        value(&run, "ps"),
        pgrep[0],
        "ps lists the same sleep that pgrep found: {run:#?}"
    );
});

// The call is in its own PID namespace; with the host's /proc, `$!` (a namespace pid, e.g. 2)
// was not the pid ps and pgrep print (a host pid), and `ps -p $!` or `kill $(pgrep …)` named
// some other process. The fresh /proc of the call's mount namespace makes them agree.
mod ps_and_pgrep_agree_with_the_shells_pid {
    use super::*;

    fn check(who: As) {
        let (_, run) = sleep_seen_by_ps(who);
        let shell = value(&run, "shell");
        assert_eq!(value(&run, "pgrep"), shell, "{run:#?}");
        assert_eq!(value(&run, "ps"), shell, "{run:#?}");
        assert_eq!(value(&run, "ps-p"), format!("{shell} sleep"), "{run:#?}");
    }

    #[test]
    fn as_root() {
        check(As::Root);
    }

    #[test]
    fn as_unprivileged_user() {
        if test_user().is_none() {
            eprintln!("skipped: needs root to create the test user");
            return;
        }
        check(As::User);
    }
}

both!(
    a_file_in_tmpdir_reads_back_and_is_gone_after_the_call,
    |who| {
        let ws = Dir::new("tmpdir", who);
        let n = unique();
        let run = run_ok(
            who,
            &ws.0,
            &[],
            &format!(
                "echo \"tmpdir=$TMPDIR\"; echo direct-{n} > \"$TMPDIR/direct.txt\" \
             && cat \"$TMPDIR/direct.txt\" && f=$(mktemp) && echo \"mktemp=$f\" \
             && echo made-{n} > \"$f\" && cat \"$f\""
            ),
            &[],
        );
        assert!(
            run.stdout.contains(&format!("direct-{n}"))
                && run.stdout.contains(&format!("made-{n}")),
            "{run:#?}"
        );
        let tmpdir = PathBuf::from(value(&run, "tmpdir"));
        let made = PathBuf::from(value(&run, "mktemp"));
        assert!(made.starts_with(&tmpdir), "mktemp honours TMPDIR: {run:#?}");
        assert!(
            tmpdir.is_absolute() && tmpdir != Path::new("/tmp") && !tmpdir.starts_with(&ws.0),
            "TMPDIR is a private directory outside the workspace: {run:#?}"
        );
        assert!(
            !tmpdir.exists(),
            "the call's TMPDIR is removed after it: {}",
            tmpdir.display()
        );
    }
);
