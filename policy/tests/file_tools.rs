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
        (Read, "../other/README.md", Allow),
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
