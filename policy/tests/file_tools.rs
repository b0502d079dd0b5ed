//! The built-in policy for file tools, by path and by tool.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use policy::{Access, Context, Policy, Verdict};
use protocol::worker::*;
use std::path::Path;

fn ctx() -> Context<'static> {
    Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    }
}

#[test]
fn builtin_path_table() {
    use Access::{Read, Write};
    use Verdict::{Allow, Ask, Deny};
    let p = Policy::builtin().unwrap();
    let cases = [
        (Read, "src/lib.rs", Allow),
        (Read, "./README.md", Allow),
        (Read, "/work/project/Cargo.toml", Allow),
        (Read, "/usr/include/stdio.h", Allow),
        // Outside the workspace and the known-safe read paths (issue 21: reads by allowlist).
        (Read, "../other/README.md", Ask),
        (Read, "~/.ssh/id_rsa", Ask),
        (Read, "~/.ssh", Ask),
        (Read, "/home/dev/.aws/credentials", Ask),
        (Read, "src/../../../home/dev/.ssh/config", Ask),
        (Read, ".env", Ask),
        (Read, "deploy/.env.production", Ask),
        (Read, "~/.agents/env", Ask),
        (Read, "/etc/shadow", Ask),
        (Read, "/etc/ssh/ssh_host_ed25519_key", Ask),
        (Read, "/etc/ssh/ssh_host_ed25519_key.pub", Allow),
        (Write, "src/lib.rs", Allow),
        (Write, "new/dir/file.txt", Allow),
        (Write, ".git/hooks/pre-commit", Ask),
        (Write, ".git/config", Ask),
        (Write, "../outside.txt", Ask),
        (Write, "/tmp/x", Ask),
        (Write, "~/.ssh/authorized_keys", Deny),
        (Write, "~/.bashrc", Deny),
        (Write, "/etc/passwd", Deny),
        (Write, "/usr/local/bin/tool", Deny),
        (Write, "src/../../../../etc/cron.d/x", Deny),
        // Git reads configuration and runs hooks from every repository under the workspace.
        (Write, "sub/.git/config", Ask),
        (Write, "vendor/lib/.git/hooks/post-checkout", Ask),
        (Write, ".git/modules/m/config", Ask),
        (Write, ".git/modules/a/modules/b/hooks/pre-commit", Ask),
        (Write, ".git/worktrees/w/config.worktree", Ask),
        (Write, ".git/commondir", Ask),
        (Write, "sub/.git", Ask),
        (Write, "bare/HEAD", Ask),
        (Write, "x/commondir", Ask),
        (Write, ".husky/pre-commit", Ask),
        (Write, ".githooks/pre-push", Ask),
        (Write, ".gitmodules", Ask),
        (Write, "src/git/config.rs", Allow),
        (Write, "docs/.gitkeep", Allow),
        // Another process's view of the filesystem and its secrets.
        (Read, "/proc/self/root/home/dev/.ssh/id_rsa", Ask),
        (Read, "/proc/1/environ", Ask),
        (Read, "/proc/self/cwd/.env", Ask),
        (Read, "/proc/cpuinfo", Allow),
    ];
    for (access, path, want) in cases {
        let d = p.check_path(access, path, &ctx());
        assert_eq!(d.verdict, want, "{access:?} {path}: {}", d.reason);
    }
}

#[test]
fn each_tool_is_rated_by_its_access() {
    let p = Policy::builtin().unwrap();
    let c = ctx();
    let tools = [
        (
            ToolRequest::Bash(BashRequest {
                command: "rm -rf /".into(),
            }),
            Verdict::Deny,
        ),
        (
            ToolRequest::ReadFile(ReadFileRequest {
                path: "~/.ssh/id_rsa".into(),
                offset: None,
                limit: None,
            }),
            Verdict::Ask,
        ),
        (
            ToolRequest::WriteFile(WriteFileRequest {
                path: "src/x.rs".into(),
                content: String::new(),
            }),
            Verdict::Allow,
        ),
        (
            ToolRequest::StrReplace(StrReplaceRequest {
                path: "/etc/hosts".into(),
                old: "a".into(),
                new: "b".into(),
                replace_all: false,
            }),
            Verdict::Deny,
        ),
        (
            ToolRequest::ListDir(ListDirRequest { path: None }),
            Verdict::Allow,
        ),
        (
            ToolRequest::Glob(GlobRequest {
                pattern: "**/*.rs".into(),
                path: Some("~/.aws".into()),
            }),
            Verdict::Ask,
        ),
        (
            ToolRequest::Grep(GrepRequest {
                pattern: "x".into(),
                path: None,
                glob: None,
                ignore_case: false,
                max_matches: None,
            }),
            Verdict::Allow,
        ),
    ];
    for (tool, want) in tools {
        let d = p.check_tool(&tool, &c);
        assert_eq!(d.verdict, want, "{tool:?}: {}", d.reason);
    }
}

/// Reads are allowed by allowlist (issue 21): credential files no rule names ask, because they
/// lie outside the known-safe read paths; the system trees, toolchains and caches stay allowed.
#[test]
fn reads_outside_the_known_safe_paths_ask() {
    use Verdict::{Allow, Ask};
    let p = Policy::builtin().unwrap();
    let cases = [
        ("~/.vault-token", Ask),
        ("~/.cache/huggingface/token", Ask),
        ("~/.claude/.credentials.json", Ask),
        ("~/.m2/settings.xml", Ask),
        ("~/.cargo/credentials.toml", Ask),
        ("~/.cargo/config.toml", Ask),
        ("~/.gradle/gradle.properties", Ask),
        ("/run/secrets/db_password", Ask),
        ("/var/run/secrets/kubernetes.io/serviceaccount/token", Ask),
        ("/var/lib/docker/x", Ask),
        ("/root/.bash_history", Ask),
        ("/tmp/krb5cc_1000", Ask),
        ("/srv/app/config.yml", Ask),
        ("/etc/kubernetes/admin.conf", Ask),
        ("/etc/ssl/private/server.key", Ask),
        ("/etc/gshadow", Ask),
        ("/etc/apt/auth.conf", Ask),
        ("/etc/myapp/db.conf", Ask),
        ("/dev/sda", Ask),
        ("/dev/shm/x", Ask),
        ("/proc/kcore", Ask),
        ("/usr/include/stdio.h", Allow),
        ("/usr/local/lib/python3.12/site-packages/x.py", Allow),
        ("/lib/x86_64-linux-gnu/libc.so.6", Allow),
        ("/opt/toolchain/bin/cc", Allow),
        ("/etc/os-release", Allow),
        ("/etc/passwd", Allow),
        ("/etc/hosts", Allow),
        ("/etc/ssl/certs/ca-certificates.crt", Allow),
        ("/proc/cpuinfo", Allow),
        ("/proc/self/status", Allow),
        ("/dev/null", Allow),
        (
            "~/.cargo/registry/src/index.crates.io-x/serde-1.0.0/src/lib.rs",
            Allow,
        ),
        (
            "~/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/lib/rustlib/src/rust/library/core/src/lib.rs",
            Allow,
        ),
        ("~/go/pkg/mod/golang.org/x/text@v0.1.0/doc.go", Allow),
        // An allowed cache does not allow its neighbours, nor `..` out of it.
        ("~/.cargo/registry/src/../../credentials.toml", Ask),
    ];
    let mut wrong = Vec::new();
    for (path, want) in cases {
        let d = p.check_path(Access::Read, path, &ctx());
        if d.verdict != want {
            wrong.push(format!(
                "{path}: want {want}, got {} ({})",
                d.verdict, d.reason
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let d = p.check_path(Access::Read, "~/.vault-token", &ctx());
    assert!(
        d.reason.contains("/home/dev/.vault-token")
            && d.reason.contains("outside the known-safe read paths"),
        "the reason names the path and why: {}",
        d.reason
    );
}

/// A deny rule of the user's still denies; a read rule of the user's extends the allowlist.
#[test]
fn the_users_read_rules_extend_the_allowlist() {
    let p = Policy::from_config(
        r#"[policy]
read = [
  { path = "~/notes/**", action = "allow" },
  { path = "~/.ssh/**", action = "deny" },
]"#,
        "c.toml",
    )
    .unwrap();
    let c = ctx();
    assert_eq!(
        p.check_path(Access::Read, "~/notes/a.md", &c).verdict,
        Verdict::Allow
    );
    assert_eq!(
        p.check_path(Access::Read, "~/.ssh/id_rsa", &c).verdict,
        Verdict::Deny
    );
    assert_eq!(
        p.check_path(Access::Read, "~/other.md", &c).verdict,
        Verdict::Ask
    );
    assert_eq!(
        p.check_bash("grep -r x ~/notes", &c).verdict,
        Verdict::Allow
    );
    assert_eq!(p.check_bash("cat ~/.ssh/config", &c).verdict, Verdict::Deny);
}

/// `list_dir` and `glob` read names: only a rule naming the path asks. `grep` reads every file
/// under its path, so a tree that holds a secret or leaves the known-safe paths asks.
#[test]
fn file_tools_read_names_or_trees() {
    let p = Policy::builtin().unwrap();
    let c = ctx();
    let grep = |path: &str| {
        ToolRequest::Grep(GrepRequest {
            pattern: "token".into(),
            path: Some(path.into()),
            glob: None,
            ignore_case: false,
            max_matches: None,
        })
    };
    let list = |path: &str| {
        ToolRequest::ListDir(ListDirRequest {
            path: Some(path.into()),
        })
    };
    let cases = [
        (list("~"), Verdict::Allow),
        (list("/run/secrets"), Verdict::Allow),
        (list("~/.ssh"), Verdict::Ask),
        (grep("~"), Verdict::Ask),
        (grep("/run/secrets"), Verdict::Ask),
        (grep("/"), Verdict::Ask),
        (grep("/proc"), Verdict::Ask),
        (grep("/usr/include"), Verdict::Allow),
        (grep("src"), Verdict::Allow),
    ];
    for (tool, want) in cases {
        let d = p.check_tool(&tool, &c);
        assert_eq!(d.verdict, want, "{tool:?}: {}", d.reason);
    }
}
