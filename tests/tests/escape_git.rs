//! The sandbox's protected paths, attacked: code planted now that git or an editor would run
//! later, outside the sandbox. Every attempt must fail (or be moved out of the way after the
//! call, and said so), run for real through the built `agentd sandbox` as root and as an
//! unprivileged user, beside git work that must still succeed. Several attempts here come from
//! adversarial reviews of the sandbox (their findings, kept as tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::both;
use agentd_e2e::{Dir, GIT, give, host_git, later_git_status_runs_planted_code, repo, sandbox};
use std::time::{Duration, Instant};

both!(code_cannot_be_planted_in_git_hooks_or_config, |who| {
    let ws = repo("hooks", who);
    let config_before = std::fs::read_to_string(ws.0.join(".git/config")).unwrap();
    let attempts = [
        "echo 'touch /tmp/pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "cp /bin/true .git/hooks/post-checkout",
        "rm -rf .git/hooks",
        "mv .git/hooks .git/hooks.old && mkdir .git/hooks && echo evil > .git/hooks/pre-commit",
        "git config core.hooksPath /tmp",
        "git config core.fsmonitor 'touch /tmp/pwned'",
        "git config alias.st '!touch /tmp/pwned'",
        "echo '[core]' >> .git/config",
        "python3 -c 'open(\".git/config\", \"a\").write(\"[core]\\n\\tpager = evil\\n\")'",
        "cp .git/config c && echo '[core] hooksPath = x' >> c && mv c .git/config",
        "mv .git .git.old && git init -q && echo evil > .git/hooks/pre-commit",
        "rm -rf .git",
    ];
    for attempt in attempts {
        let run = sandbox(who, &ws.0, &[], attempt, &[]);
        assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        let hooks: Vec<String> = std::fs::read_dir(ws.0.join(".git/hooks"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.ends_with(".sample"))
                    .collect()
            })
            .unwrap_or_default();
        assert!(hooks.is_empty(), "`{attempt}` planted {hooks:?}");
        assert_eq!(
            std::fs::read_to_string(ws.0.join(".git/config")).unwrap(),
            config_before,
            "`{attempt}` changed .git/config"
        );
        assert!(ws.0.join(".git").is_dir(), "`{attempt}` moved .git");
    }
});

both!(git_still_works_with_its_hooks_and_config_protected, |who| {
    let ws = repo("git-works", who);
    let run = sandbox(
        who,
        &ws.0,
        &["--verbose"],
        &format!(
            "echo two >> a.txt && {GIT} add a.txt && {GIT} commit -qm second && {GIT} checkout -qb feature && echo three >> a.txt && {GIT} stash -q && {GIT} log --oneline | wc -l && {GIT} stash list | wc -l && {GIT} branch --show-current"
        ),
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().map(str::trim).collect();
    assert_eq!(lines, ["2", "1", "feature"], "{run:?}");
    assert_eq!(
        host_git(&ws.0, who, &["rev-list", "--count", "main"]).trim(),
        "2"
    );
    assert!(
        run.stderr.contains("protected (read-only):")
            && run.stderr.contains(".git/hooks")
            && run.stderr.contains(".git/config"),
        "the lockdown report names what was protected: {}",
        run.stderr
    );
});

both!(editor_settings_and_submodule_hooks_are_protected, |who| {
    let ws = repo("editor", who);
    for dir in [".vscode", ".idea", ".git/modules/lib/hooks"] {
        std::fs::create_dir_all(ws.0.join(dir)).unwrap();
    }
    std::fs::write(ws.0.join(".git/modules/lib/config"), "[core]\n").unwrap();
    give(&ws.0, who);
    let attempts = [
        "echo '{\"tasks\": []}' > .vscode/tasks.json",
        "echo x > .idea/workspace.xml",
        "echo evil > .git/modules/lib/hooks/pre-commit",
        "echo '[core] hooksPath = /x' >> .git/modules/lib/config",
        "mv .git/modules/lib .git/modules/lib2",
        "rm -rf .vscode",
    ];
    for attempt in attempts {
        let run = sandbox(who, &ws.0, &[], attempt, &[]);
        assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
    }
    assert!(!ws.0.join(".vscode/tasks.json").exists());
    assert!(!ws.0.join(".idea/workspace.xml").exists());
    assert!(!ws.0.join(".git/modules/lib/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(ws.0.join(".git/modules/lib/config")).unwrap(),
        "[core]\n"
    );
    let sane = sandbox(
        who,
        &ws.0,
        &[],
        "mkdir -p src && echo ok > src/x && cat src/x",
        &[],
    );
    assert_eq!(sane.stdout.trim(), "ok", "{sane:?}");
});

both!(
    git_cannot_be_redirected_to_a_config_or_hooks_the_call_wrote,
    |who| {
        // Found by an adversarial review: git takes config and hooks from `commondir`,
        // `config.worktree`, a `.git` file's `gitdir:` and `core.hooksPath` too.
        let ws = repo("redirect", who);
        host_git(&ws.0, who, &["config", "extensions.worktreeConfig", "true"]);
        // `commondir` does not exist, so it cannot be mounted over: the supervisor moves what the call
        // created out of git's way after the call, and says so.
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "mkdir -p .evil && cp -r .git/objects .git/refs .evil/ && printf '[core]\\n\\tfsmonitor = evil\\n' > .evil/config && echo ../.evil > .git/commondir && echo written",
            &[],
        );
        assert!(run.stdout.contains("written"), "{run:?}");
        assert!(
            run.stdout.contains(".git/commondir") && run.stdout.contains("moved to"),
            "{run:?}"
        );
        // The commondir, and the config of the directory it named, which the scan follows.
        let quarantined: Vec<String> = std::fs::read_dir(ws.0.join(".agentd-quarantine"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            quarantined.iter().any(|n| n.contains("commondir")) && quarantined.len() <= 2,
            "{quarantined:?}: {run:?}"
        );
        assert!(!ws.0.join(".evil/config").exists(), "{run:?}");
        for attempt in [
            "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config.worktree",
            "rm -f .git/config.worktree && echo x > .git/config.worktree",
        ] {
            let run = sandbox(who, &ws.0, &[], attempt, &[]);
            assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        }
        assert!(!ws.0.join(".git/commondir").exists());
        assert_eq!(
            std::fs::read_to_string(ws.0.join(".git/config.worktree")).unwrap(),
            "",
            "an empty config.worktree is made so it can be protected"
        );
        // A repository without `.git/hooks`, and one whose hooks live in the workspace.
        std::fs::remove_dir_all(ws.0.join(".git/hooks")).unwrap();
        host_git(&ws.0, who, &["config", "core.hooksPath", ".husky"]);
        std::fs::create_dir(ws.0.join(".husky")).unwrap();
        give(&ws.0, who);
        for attempt in [
            "echo evil > .git/hooks/pre-commit",
            "echo evil > .husky/pre-commit",
            "rm -rf .husky",
        ] {
            let run = sandbox(who, &ws.0, &[], attempt, &[]);
            assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        }
        assert!(!ws.0.join(".git/hooks/pre-commit").exists());
        assert!(!ws.0.join(".husky/pre-commit").exists());
        let sane = sandbox(
            who,
            &ws.0,
            &[],
            &format!("{GIT} status --short && echo fine"),
            &[],
        );
        assert!(sane.stdout.contains("fine"), "{sane:?}");
    }
);

both!(a_linked_worktrees_git_file_cannot_be_rewritten, |who| {
    let main = repo("wt-main", who);
    let wt = main.0.with_file_name(format!(
        "{}-linked",
        main.0.file_name().unwrap().to_string_lossy()
    ));
    host_git(
        &main.0,
        who,
        &["worktree", "add", "-q", wt.to_str().unwrap(), "-b", "side"],
    );
    let before = std::fs::read_to_string(wt.join(".git")).unwrap();
    let run = sandbox(
        who,
        &wt,
        &[],
        "echo 'gitdir: .evil' > .git; rm -f .git; mv .git g2; echo done",
        &[],
    );
    let after = std::fs::read_to_string(wt.join(".git")).ok();
    let _ = std::fs::remove_dir_all(&wt);
    assert!(run.stdout.contains("done"), "{run:?}");
    assert_eq!(after.as_deref(), Some(before.as_str()), "{run:?}");
});

both!(
    too_many_protected_paths_refuse_the_call_quickly_and_by_name,
    |who| {
        let ws = repo("many", who);
        // Each submodule directory is a protected `hooks` and a pin: 1,200 mounts, past the 1,024.
        for i in 0..600 {
            std::fs::create_dir_all(ws.0.join(format!(".git/modules/m{i}/hooks"))).unwrap();
        }
        give(&ws.0, who);
        let start = Instant::now();
        let run = sandbox(who, &ws.0, &[], "echo ran", &[]);
        assert_eq!(run.code, 125, "{run:?}");
        assert!(run.stderr.contains("too many protected paths"), "{run:?}");
        assert!(
            start.elapsed() < Duration::from_secs(8),
            "{:?}",
            start.elapsed()
        );
    }
);

both!(
    protected_paths_a_call_creates_are_moved_out_of_the_way,
    |who| {
        let ws = repo("created", who);
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "mkdir .vscode && echo '{\"tasks\": []}' > .vscode/tasks.json && mkdir -p .git/modules/x/hooks && echo evil > .git/modules/x/hooks/pre-commit && echo made",
            &[],
        );
        assert!(run.stdout.contains("made"), "{run:?}");
        assert!(!ws.0.join(".vscode").exists(), "{run:?}");
        assert!(!ws.0.join(".git/modules/x/hooks").exists(), "{run:?}");
        let kept: Vec<String> = std::fs::read_dir(ws.0.join(".agentd-quarantine"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(kept.len(), 2, "{kept:?}");
        // A repository the call makes itself keeps what `git init` made, which runs nothing (so
        // nothing is said); the next call cannot touch it.
        let fresh = Dir::new("fresh-repo", who);
        let run = sandbox(
            who,
            &fresh.0,
            &[],
            &format!("{GIT} init -q && echo inited"),
            &[],
        );
        assert!(run.stdout.contains("inited"), "{run:?}");
        assert!(fresh.0.join(".git/config").is_file() && fresh.0.join(".git/hooks").is_dir());
        assert!(!run.stdout.contains("moved to"), "{run:?}");
        let next = sandbox(who, &fresh.0, &[], "echo evil > .git/hooks/pre-commit", &[]);
        assert_ne!(next.code, 0, "{next:?}");
    }
);

both!(the_quarantine_moves_names_never_what_they_point_to, |who| {
    // From a second adversarial review: the check after a call compared resolved paths and
    // renamed through symlinks, so a symlink named like a protected path made the supervisor
    // move its target (the repository, a hook, a file outside the workspace).
    let ws = repo("qnames", who);
    std::fs::write(ws.0.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    let outside = Dir::new("qnames-outside", who);
    std::fs::write(outside.0.join("key"), "SECRET").unwrap();
    give(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        &format!(
            "ln -s .git .idea; ln -s .git/hooks/pre-commit .vscode; ln -s {}/key .git/commondir; echo linked",
            outside.0.display()
        ),
        &[],
    );
    assert!(run.stdout.contains("linked"), "{run:?}");
    assert!(
        ws.0.join(".git/HEAD").is_file(),
        "the repository stays: {run:?}"
    );
    assert!(
        ws.0.join(".git/hooks/pre-commit").is_file(),
        "the hook stays: {run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.0.join("key")).unwrap(),
        "SECRET"
    );
    for name in [".idea", ".vscode", ".git/commondir"] {
        assert!(
            std::fs::symlink_metadata(ws.0.join(name)).is_err(),
            "{name} was left: {run:?}"
        );
    }
    let moved: Vec<_> = std::fs::read_dir(ws.0.join(".agentd-quarantine"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(moved.len(), 3, "{moved:?}");
    assert!(moved.iter().all(|p| {
        std::fs::symlink_metadata(p)
            .unwrap()
            .file_type()
            .is_symlink()
    }));
});

both!(an_included_config_in_the_workspace_is_protected, |who| {
    let ws = repo("include", who);
    host_git(
        &ws.0,
        who,
        &["config", "include.path", "../.gitconfig.local"],
    );
    std::fs::write(ws.0.join(".gitconfig.local"), "[core]\n").unwrap();
    give(&ws.0, who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        "printf '\\tfsmonitor = evil\\n' >> .gitconfig.local",
        &[],
    );
    assert_ne!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(ws.0.join(".gitconfig.local")).unwrap(),
        "[core]\n"
    );
});

both!(
    a_nested_repository_cannot_carry_config_into_the_parents_git_status,
    |who| {
        let ws = repo("nested", who);
        let marker = ws.0.with_extension("pwned-nested");
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "{GIT} init -q -b main sub && cd sub && {GIT} commit -q --allow-empty -m s && cd .. && {GIT} add sub 2>/dev/null; printf '[core]\\n\\tfsmonitor = \\\"touch {m} #\\\"\\n' >> sub/.git/config; echo planted",
                m = marker.display()
            ),
            &[],
        );
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(
            run.stdout.contains("sub/.git/config"),
            "the note names it: {run:?}"
        );
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "{run:?}"
        );
        let _ = std::fs::remove_file(&marker);
    }
);

both!(a_submodule_nested_in_the_modules_tree_is_protected, |who| {
    let ws = repo("submod", who);
    for dir in [
        ".git/modules/vendor/lib/hooks",
        ".git/modules/a/modules/b/hooks",
    ] {
        std::fs::create_dir_all(ws.0.join(dir)).unwrap();
    }
    std::fs::write(ws.0.join(".git/modules/vendor/lib/config"), "[core]\n").unwrap();
    std::fs::write(ws.0.join(".git/modules/a/modules/b/config"), "[core]\n").unwrap();
    give(&ws.0, who);
    for attempt in [
        "echo '\tfsmonitor = x' >> .git/modules/vendor/lib/config",
        "echo '\tfsmonitor = x' >> .git/modules/a/modules/b/config",
        "echo evil > .git/modules/vendor/lib/hooks/pre-commit",
    ] {
        let run = sandbox(who, &ws.0, &[], attempt, &[]);
        assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.0.join(".git/modules/vendor/lib/config")).unwrap(),
        "[core]\n"
    );
});

both!(
    a_broken_head_cannot_make_the_workspace_root_a_repository_of_the_calls,
    |who| {
        let ws = repo("bare-root", who);
        let marker = ws.0.with_extension("pwned-root");
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "cp -r .git/objects .git/refs .git/HEAD .git/index . && echo x > .git/HEAD && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = %s\\n\\tfsmonitor = \\\"touch {m} #\\\"\\n' \"$PWD\" > config; echo planted",
                m = marker.display()
            ),
            &[],
        );
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(
            !ws.0.join("config").exists(),
            "the root's config is moved aside: {run:?}"
        );
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "{run:?}"
        );
        let _ = std::fs::remove_file(&marker);
    }
);

both!(
    hooks_paths_git_would_read_are_protected_however_they_are_written,
    |who| {
        let ws = repo("hookspath", who);
        for dir in [".githooks", ".husky"] {
            std::fs::create_dir(ws.0.join(dir)).unwrap();
            std::fs::write(ws.0.join(dir).join("pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        }
        std::fs::write(
            ws.0.join("shared.cfg"),
            "[include]path = deeper.cfg ; more\n",
        )
        .unwrap();
        std::fs::write(
            ws.0.join("deeper.cfg"),
            "[core]\n\thooksPath = .husky # team hooks\n",
        )
        .unwrap();
        give(&ws.0, who);
        host_git(&ws.0, who, &["config", "include.path", "../shared.cfg"]);
        let config = ws.0.join(".git/config");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(
            &config,
            format!("{text}[core]\n\thooksPath = .githooks ; shared hooks\n"),
        )
        .unwrap();
        for attempt in [
            "echo 'touch /tmp/x' >> .githooks/pre-commit",
            "echo 'touch /tmp/x' >> .husky/pre-commit",
            "echo '[core] fsmonitor = x' >> deeper.cfg",
            "echo '[core] fsmonitor = x' >> shared.cfg",
        ] {
            let run = sandbox(who, &ws.0, &[], attempt, &[]);
            assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        }
    }
);

both!(
    a_fifo_or_a_device_where_a_config_is_read_cannot_hang_the_supervisor,
    |who| {
        let ws = repo("fifo-config", who);
        let start = Instant::now();
        let run = sandbox(
            who,
            &ws.0,
            &["--timeout", "5"],
            "mkfifo .git/config.worktree; mkdir .evil; echo ../.evil > .git/commondir; echo done",
            &[],
        );
        assert!(run.stdout.contains("done"), "{run:?}");
        assert!(
            start.elapsed() < Duration::from_secs(8),
            "{:?}: {run:?}",
            start.elapsed()
        );
        assert!(!ws.0.join(".git/commondir").exists(), "still moved aside");
        let fresh = Dir::new("fifo-gitfile", who);
        std::fs::create_dir(fresh.0.join("g")).unwrap();
        nix::unistd::mkfifo(
            &fresh.0.join("g/config"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        std::fs::write(fresh.0.join(".git"), "gitdir: g\n").unwrap();
        give(&fresh.0, who);
        let start = Instant::now();
        let run = sandbox(who, &fresh.0, &["--timeout", "5"], "echo ran", &[]);
        assert!(run.stdout.contains("ran"), "{run:?}");
        assert!(start.elapsed() < Duration::from_secs(8), "{run:?}");
        // A config that is a symlink to an endless device is not read (it once filled memory).
        let zero = Dir::new("zero-config", who);
        let start = Instant::now();
        let run = sandbox(
            who,
            &zero.0,
            &["--timeout", "5"],
            "mkdir -p .git && ln -s /dev/zero .git/config && echo done",
            &[],
        );
        assert!(run.stdout.contains("done"), "{run:?}");
        assert!(start.elapsed() < Duration::from_secs(8), "{run:?}");
    }
);

both!(
    a_blocked_quarantine_does_not_leave_the_path_in_place,
    |who| {
        let ws = repo("qblocked", who);
        let run = sandbox(
            who,
            &ws.0,
            &[],
            "echo x > .agentd-quarantine; mkdir .evil; echo ../.evil > .git/commondir; echo planted",
            &[],
        );
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(!ws.0.join(".git/commondir").exists(), "{run:?}");
        let aside: Vec<_> = std::fs::read_dir(ws.0.join(".git"))
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".agentd-quarantined-")
            })
            .collect();
        assert_eq!(aside.len(), 1, "{run:?}");
    }
);
