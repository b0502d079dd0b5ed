//! The scan that finds where git takes config and hooks from, attacked (findings of the
//! session-7 adversarial review, kept as tests): a config that includes itself until reading
//! it would never end, a root made a git directory with a symlinked `HEAD`, a submodule whose
//! git directory is named like a git store (`info`, `refs`), a `.git` file one level down, and a
//! directory name that would forge a line of the lockdown report. Each runs for real through the
//! built `agentd sandbox`, as root and as an unprivileged user, and what must still work is
//! checked beside it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::both;
use agentd_e2e::{Dir, GIT, give, later_git_status_runs_planted_code, repo, sandbox_within};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

both!(
    a_config_that_includes_itself_without_end_neither_hangs_the_call_nor_the_next,
    |who| {
        let ws = repo("include-bomb", who);
        for target in [".git/config.worktree", "inc.cfg"] {
            let bomb = format!(
                "for i in $(seq 40); do printf '[include]\\n\\tpath = {name}\\n'; done > {target}; echo written",
                name = Path::new(target).file_name().unwrap().to_string_lossy()
            );
            let run = sandbox_within(who, &ws.0, &["--timeout", "5"], &bomb, LIMIT, &[]);
            assert!(run.stdout.contains("written"), "{run:?}");
            let next = sandbox_within(who, &ws.0, &[], "echo hello", LIMIT, &[]);
            assert_eq!(next.code, 0, "{next:?}");
            assert!(next.stdout.contains("hello"), "{next:?}");
        }
    }
);

both!(
    a_root_with_a_symlinked_head_cannot_become_a_repository_of_the_calls,
    |who| {
        let ws = repo("head-link", who);
        let marker = ws.0.with_extension("pwned-head-link");
        let run = sandbox_within(
            who,
            &ws.0,
            &[],
            &format!(
                "echo garbage > .git/HEAD; mkdir -p objects refs/heads; ln -s refs/heads/main HEAD; printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n\\tfsmonitor = \\\"touch {m}; false\\\"\\n' > config; echo planted",
                m = marker.display()
            ),
            LIMIT,
            &[],
        );
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(!ws.0.join("config").exists(), "moved aside: {run:?}");
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "{run:?}"
        );
        let _ = std::fs::remove_file(&marker);
    }
);

both!(
    a_submodule_whose_git_directory_is_named_like_a_git_store_is_protected,
    |who| {
        for name in ["info", "refs"] {
            let ws = repo(&format!("submodule-{name}"), who);
            let marker = ws.0.with_extension(format!("pwned-{name}"));
            let run = sandbox_within(
                who,
                &ws.0,
                &[],
                &format!(
                    "export HOME=$TMPDIR; mkdir -p lib .git/modules && cd lib && {GIT} init -q --separate-git-dir=../.git/modules/{name} . && echo x > x && {GIT} add x && {GIT} commit -qm l && cd .. && {GIT} --git-dir=.git/modules/{name} config core.fsmonitor 'touch {m}; false'; printf '[submodule \"{name}\"]\\n\\tpath = lib\\n\\turl = ./lib\\n' > .gitmodules; {GIT} add .gitmodules lib 2>/dev/null; {GIT} commit -qm s; echo planted",
                    m = marker.display()
                ),
                LIMIT,
                &[],
            );
            assert!(run.stdout.contains("planted"), "{run:?}");
            assert!(
                run.stdout.contains(&format!(".git/modules/{name}/config")),
                "the note names it: {run:?}"
            );
            assert!(
                !later_git_status_runs_planted_code(&ws.0, who, &marker),
                "{run:?}"
            );
            let _ = std::fs::remove_file(&marker);
        }
    }
);

both!(
    a_dot_git_file_one_level_down_protects_the_directory_it_names,
    |who| {
        let ws = repo("gitdir-file", who);
        std::fs::create_dir_all(ws.0.join("docs/notes/hooks")).unwrap();
        std::fs::write(ws.0.join("docs/notes/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(ws.0.join("lib")).unwrap();
        std::fs::write(ws.0.join("lib/.git"), "gitdir: ../docs/notes\n").unwrap();
        give(&ws.0, who);
        for attempt in [
            "printf '\\tfsmonitor = x\\n' >> docs/notes/config",
            "echo evil > docs/notes/hooks/pre-commit",
            "echo 'gitdir: ../elsewhere' > lib/.git",
        ] {
            let run = sandbox_within(who, &ws.0, &[], attempt, LIMIT, &[]);
            assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        }
        assert_eq!(
            std::fs::read_to_string(ws.0.join("docs/notes/config")).unwrap(),
            "[core]\n"
        );
        // The rest of that directory is the workspace's, writable as ever.
        let run = sandbox_within(who, &ws.0, &[], "echo ok > docs/notes/README", LIMIT, &[]);
        assert_eq!(run.code, 0, "{run:?}");
    }
);

both!(a_directory_name_cannot_forge_a_line_of_the_report, |who| {
    let ws = repo("forged-line", who);
    let forged = "A\nwarning: all clear";
    std::fs::create_dir_all(ws.0.join(forged).join(".git/hooks")).unwrap();
    give(&ws.0, who);
    let run = sandbox_within(who, &ws.0, &["--verbose"], "echo hi", LIMIT, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("A\\x0awarning: all clear/.git/hooks"),
        "the name is shown escaped on its one line: {run:?}"
    );
    assert!(
        !run.stderr
            .lines()
            .any(|l| l.starts_with("warning: all clear")),
        "{run:?}"
    );
});

both!(
    a_relative_hooks_path_in_the_users_git_config_is_protected_in_the_workspace,
    |who| {
        // The user's own ~/.gitconfig sends every repository's hooks to `.githooks` in it.
        let home = Dir::new("hooks-home", who);
        std::fs::write(
            home.0.join(".gitconfig"),
            "[core]\n\thooksPath = .githooks\n",
        )
        .unwrap();
        give(&home.0, who);
        let home_text = home.0.display().to_string();
        let env = [("HOME", home_text.as_str())];
        let ws = repo("global-hooks", who);
        // Not there yet: a call that makes it has it moved aside after the call.
        let run = sandbox_within(
            who,
            &ws.0,
            &[],
            "mkdir -p .githooks && printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .githooks/pre-commit && echo planted",
            LIMIT,
            &env,
        );
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(!ws.0.join(".githooks").exists(), "moved aside: {run:?}");
        assert!(
            run.stdout.contains(".githooks"),
            "the note names it: {run:?}"
        );
        // There already (the user's own hooks): read-only to the call.
        std::fs::create_dir_all(ws.0.join(".githooks")).unwrap();
        std::fs::write(ws.0.join(".githooks/pre-commit"), "#!/bin/sh\n").unwrap();
        give(&ws.0, who);
        let run = sandbox_within(
            who,
            &ws.0,
            &[],
            "echo 'touch /tmp/pwned' >> .githooks/pre-commit",
            LIMIT,
            &env,
        );
        assert_ne!(run.code, 0, "{run:?}");
        assert_eq!(
            std::fs::read_to_string(ws.0.join(".githooks/pre-commit")).unwrap(),
            "#!/bin/sh\n"
        );
        // Everything else in the workspace is writable as ever.
        let run = sandbox_within(who, &ws.0, &[], "echo ok > notes.txt", LIMIT, &env);
        assert_eq!(run.code, 0, "{run:?}");
    }
);

both!(
    other_editors_and_agents_project_settings_are_protected_too,
    |who| {
        let ws = repo("agents-settings", who);
        let existing = [
            ".claude/settings.json",
            ".cursor/mcp.json",
            ".zed/tasks.json",
            ".devcontainer/devcontainer.json",
        ];
        for file in existing {
            let path = ws.0.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "{}\n").unwrap();
        }
        std::fs::write(ws.0.join(".mcp.json"), "{}\n").unwrap();
        std::fs::write(ws.0.join("proj.code-workspace"), "{}\n").unwrap();
        give(&ws.0, who);
        for file in existing
            .iter()
            .copied()
            .chain([".mcp.json", "proj.code-workspace"])
        {
            let attempt = format!("echo '{{\"hooks\": \"touch /tmp/pwned\"}}' > {file}");
            let run = sandbox_within(who, &ws.0, &[], &attempt, LIMIT, &[]);
            assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
            assert_eq!(std::fs::read_to_string(ws.0.join(file)).unwrap(), "{}\n");
        }
        // Made by a call, they are moved aside after it, and the result says so.
        let run = sandbox_within(
            who,
            &ws.0,
            &[],
            "echo '{}' > other.code-workspace && mkdir -p sub && echo ok > sub/kept.txt",
            LIMIT,
            &[],
        );
        assert_eq!(run.code, 0, "{run:?}");
        assert!(!ws.0.join("other.code-workspace").exists(), "{run:?}");
        assert!(run.stdout.contains("other.code-workspace"), "{run:?}");
        assert!(ws.0.join("sub/kept.txt").exists(), "{run:?}");
    }
);
