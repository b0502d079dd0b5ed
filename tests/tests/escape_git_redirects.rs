//! Where git takes config and hooks from, attacked again (findings of the session-8 adversarial
//! review, kept as tests): a submodule deeper than one level repointed at a git directory the
//! call made, a nested repository's `commondir`, a root that passes for a git directory with
//! `objects` and `refs` as files, a bare repository's worktrees, a hard link made with the
//! repository, a configured write path the call made a symlink, a config that is not UTF-8,
//! and symlinks that would have the supervisor list and name what lies outside the workspace.
//! Each runs for real through the built `agentd sandbox`, as root and as an unprivileged user,
//! with what must still work checked beside it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::both;
use agentd_e2e::{
    As, Dir, GIT, give, host_git, later_git_status_runs_planted_code, repo, sandbox_within,
};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// `printf` text for a config whose `core.fsmonitor` touches `marker`.
fn fsmonitor_config(marker: &Path) -> String {
    format!(
        "[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tfsmonitor = \\\"touch {}; false\\\"\\n",
        marker.display()
    )
}

/// A repository with one commit, to be used as a submodule's source.
fn source_repo(who: As) -> Dir {
    repo("redirect-src", who)
}

both!(
    a_submodule_deeper_down_cannot_be_pointed_at_a_git_dir_the_call_made,
    |who| {
        let (ws, _src) = with_deep_submodule("deep-submodule", who);
        let marker = ws.0.with_extension("pwned-deep-submodule");
        let attack = format!(
            "cp -a .git/modules/vendor/lib .git/evil; rm -rf .git/evil/hooks; printf '{config}\\tworktree = ../../vendor/lib\\n' > .git/evil/config; printf 'gitdir: ../../.git/evil\\n' > vendor/lib/.git; echo planted",
            config = fsmonitor_config(&marker)
        );
        let run = sandbox_within(who, &ws.0, &[], &attack, LIMIT, &[]);
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert_eq!(
            std::fs::read_to_string(ws.0.join("vendor/lib/.git")).unwrap(),
            "gitdir: ../../.git/modules/vendor/lib\n",
            "{run:?}"
        );
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "{run:?}"
        );
        let still = sandbox_within(who, &ws.0, &[], "cat vendor/lib/a.txt", LIMIT, &[]);
        assert!(still.stdout.contains("one"), "{still:?}");
    }
);

both!(a_nested_repositorys_commondir_cannot_redirect_it, |who| {
    let ws = repo("nested-commondir", who);
    let lib = ws.0.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("l.txt"), "l\n").unwrap();
    give(&ws.0, who);
    host_git(&lib, who, &["init", "-q", "-b", "main"]);
    host_git(&lib, who, &["add", "l.txt"]);
    host_git(&lib, who, &["commit", "-qm", "lib"]);
    host_git(&ws.0, who, &["add", "lib"]);
    host_git(&ws.0, who, &["commit", "-qm", "nested"]);
    let marker = ws.0.with_extension("pwned-commondir");
    let attack = format!(
        "mkdir -p .git/x/common && cp -r lib/.git/objects lib/.git/refs .git/x/common/ && printf '{config}' > .git/x/common/config && echo ../../.git/x/common > lib/.git/commondir; echo planted",
        config = fsmonitor_config(&marker)
    );
    let run = sandbox_within(who, &ws.0, &[], &attack, LIMIT, &[]);
    assert!(run.stdout.contains("planted"), "{run:?}");
    assert!(!lib.join(".git/commondir").exists(), "moved aside: {run:?}");
    assert!(run.stdout.contains("lib/.git/commondir"), "{run:?}");
    assert!(
        !later_git_status_runs_planted_code(&ws.0, who, &marker),
        "{run:?}"
    );
});

both!(
    a_root_with_objects_and_refs_as_files_passes_for_a_git_directory_and_is_protected,
    |who| {
        let ws = repo("root-files", who);
        let marker = ws.0.with_extension("pwned-root-files");
        let attack = format!(
            "printf 'ref: refs/heads/main\\n' > HEAD; printf '#!/bin/sh\\n' > objects; cp objects refs; chmod +x objects refs; printf '{config}\\tworktree = .\\n' > config; echo broken > .git/HEAD; echo planted",
            config = fsmonitor_config(&marker)
        );
        let run = sandbox_within(who, &ws.0, &[], &attack, LIMIT, &[]);
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(!ws.0.join("config").exists(), "moved aside: {run:?}");
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "{run:?}"
        );
    }
);

both!(
    the_common_directory_of_a_bare_repository_with_worktrees_is_protected,
    |who| {
        let src = source_repo(who);
        let ws = Dir::new("bare-worktrees", who);
        let src_path = src.0.display().to_string();
        host_git(&ws.0, who, &["clone", "-q", "--bare", &src_path, ".bare"]);
        host_git(
            &ws.0,
            who,
            &["--git-dir=.bare", "worktree", "add", "-q", "main"],
        );
        let marker = ws.0.with_extension("pwned-bare");
        let attack = format!(
            "{GIT} config -f .bare/config core.fsmonitor 'touch {m}; false'; echo config=$?; printf '#!/bin/sh\\ntouch {m}\\n' > .bare/hooks/pre-commit; echo hook=$?; cat main/a.txt",
            m = marker.display()
        );
        let run = sandbox_within(who, &ws.0, &[], &attack, LIMIT, &[]);
        assert!(run.stdout.contains("one"), "the worktree reads: {run:?}");
        assert!(!run.stdout.contains("config=0"), "{run:?}");
        assert!(!run.stdout.contains("hook=0"), "{run:?}");
        assert!(
            !later_git_status_runs_planted_code(&ws.0.join("main"), who, &marker),
            "{run:?}"
        );
    }
);

both!(
    a_hard_link_made_with_the_repository_refuses_the_next_call,
    |who| {
        let ws = Dir::new("hard-link", who);
        let made = sandbox_within(
            who,
            &ws.0,
            &[],
            &format!("{GIT} init -q . && ln .git/config notes.txt && echo made"),
            LIMIT,
            &[],
        );
        assert!(made.stdout.contains("made"), "{made:?}");
        let marker = ws.0.with_extension("pwned-hard-link");
        let attack = format!(
            "printf '[core]\\n\\tfsmonitor = \"touch {m}; false\"\\n' >> notes.txt; echo appended",
            m = marker.display()
        );
        let run = sandbox_within(who, &ws.0, &[], &attack, LIMIT, &[]);
        assert_eq!(run.code, 125, "refused: {run:?}");
        assert!(!run.stdout.contains("appended"), "{run:?}");
        assert!(run.stderr.contains("hard link"), "{run:?}");
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "{run:?}"
        );
        std::fs::remove_file(ws.0.join("notes.txt")).unwrap();
        let after = sandbox_within(who, &ws.0, &[], "echo fine", LIMIT, &[]);
        assert_eq!(after.code, 0, "once the link is gone: {after:?}");
    }
);

both!(
    a_configured_path_the_call_made_a_symlink_is_refused,
    |who| {
        let ws = Dir::new("steered-root", who);
        let outside = Dir::new("steered-outside", who);
        std::fs::write(outside.0.join("file"), "orig\n").unwrap();
        give(&outside.0, who);
        let made = sandbox_within(
            who,
            &ws.0,
            &[],
            &format!("ln -s {} cache && echo made", outside.0.display()),
            LIMIT,
            &[],
        );
        assert!(made.stdout.contains("made"), "{made:?}");
        let cache = ws.0.join("cache").display().to_string();
        for flag in ["--write-path", "--read-path"] {
            let run = sandbox_within(
                who,
                &ws.0,
                &[flag, &cache],
                "echo PWNED > cache/file; chmod 0777 cache/file; cat cache/file; echo ran",
                LIMIT,
                &[],
            );
            assert_eq!(run.code, 125, "{flag}: {run:?}");
            assert!(run.stderr.contains("symlink"), "{flag}: {run:?}");
            assert!(!run.stdout.contains("ran"), "{flag}: {run:?}");
        }
        assert_eq!(
            std::fs::read_to_string(outside.0.join("file")).unwrap(),
            "orig\n"
        );
        let mode = std::fs::metadata(outside.0.join("file"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
        // A write path that is no symlink still works.
        let real = Dir::new("steered-real", who);
        let real_path = real.0.display().to_string();
        let ok = sandbox_within(
            who,
            &ws.0,
            &["--write-path", &real_path],
            &format!("echo kept > {real_path}/x && cat {real_path}/x"),
            LIMIT,
            &[],
        );
        assert!(ok.stdout.contains("kept"), "{ok:?}");
    }
);

both!(
    a_config_that_is_not_utf8_still_protects_its_hooks_path,
    |who| {
        let ws = repo("latin1", who);
        host_git(&ws.0, who, &["config", "core.hooksPath", ".githooks"]);
        std::fs::create_dir_all(ws.0.join(".githooks")).unwrap();
        std::fs::write(ws.0.join(".githooks/pre-commit"), "#!/bin/sh\n").unwrap();
        let mut config = std::fs::read(ws.0.join(".git/config")).unwrap();
        config.extend_from_slice(b"[user]\n\tname = Jos\xe9\n");
        std::fs::write(ws.0.join(".git/config"), config).unwrap();
        give(&ws.0, who);
        let run = sandbox_within(
            who,
            &ws.0,
            &[],
            "echo 'touch /tmp/pwned' >> .githooks/pre-commit; echo rc=$?; cat a.txt",
            LIMIT,
            &[],
        );
        assert!(run.stdout.contains("one"), "{run:?}");
        assert!(!run.stdout.contains("rc=0"), "{run:?}");
        assert_eq!(
            std::fs::read_to_string(ws.0.join(".githooks/pre-commit")).unwrap(),
            "#!/bin/sh\n"
        );
    }
);

both!(
    the_supervisor_neither_lists_nor_names_what_lies_behind_a_symlink,
    |who| {
        // The supervisor's own (0700, under /tmp, which the call's view hides): the call may not
        // list it, and the supervisor, which can, must not do it for the call.
        let secret = Dir::new("redirect-secret", who);
        for name in ["victimproj-a/hooks", "victimproj-b/hooks"] {
            std::fs::create_dir_all(secret.0.join(name)).unwrap();
        }
        std::fs::write(secret.0.join("victimproj-a/config"), "[core]\n").unwrap();
        give(&secret.0, who);
        std::fs::set_permissions(&secret.0, std::fs::Permissions::from_mode(0o700)).unwrap();
        let ws = repo("symlink-oracle", who);
        let s = secret.0.display();
        let attack = format!(
            "ln -s {s} .git/modules; ln -s {s} .git/worktrees; ln -s / L; printf '[include]\\n\\tpath = ../L{s}/victimproj-a/config\\n' > .git/config.worktree; mkdir -p sub && ln -s {s} sub/deep; echo planted"
        );
        let run = sandbox_within(who, &ws.0, &[], &attack, LIMIT, &[]);
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(
            !run.stdout.contains("victimproj") && !run.stderr.contains("victimproj"),
            "a name from behind the symlinks reached the result: {run:?}"
        );
        let next = sandbox_within(who, &ws.0, &["--verbose"], "echo next", LIMIT, &[]);
        assert!(next.stdout.contains("next"), "{next:?}");
        assert!(
            !next.stdout.contains("victimproj") && !next.stderr.contains("victimproj"),
            "{next:?}"
        );
    }
);

both!(
    a_workspace_a_call_opened_to_other_users_is_closed_again,
    |who| {
        let ws = repo("opened", who);
        let acl = "import os, struct\nb = struct.pack('<I', 2)\nfor t, p, i in [(1, 7, 2**32 - 1), (2, 7, 4242), (4, 5, 2**32 - 1), (16, 7, 2**32 - 1), (32, 5, 2**32 - 1)]:\n    b += struct.pack('<HHI', t, p, i)\nos.setxattr('.git/modules', 'system.posix_acl_access', b)\nprint('acl set')\n";
        let run = sandbox_within(
            who,
            &ws.0,
            &[],
            &format!(
                "chmod 0777 . .git && mkdir -p .git/modules && python3 -c \"{}\"; echo opened",
                acl.replace('"', "\\\"")
            ),
            LIMIT,
            &[],
        );
        assert!(run.stdout.contains("opened"), "{run:?}");
        for dir in [ws.0.clone(), ws.0.join(".git")] {
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode & 0o022, 0, "{}: {mode:o}: {run:?}", dir.display());
        }
        assert!(run.stdout.contains("to other users"), "{run:?}");
        if run.stdout.contains("acl set") {
            let listed = std::process::Command::new("python3")
                .args([
                    "-c",
                    &format!(
                        "import os; print(os.listxattr('{}'))",
                        ws.0.join(".git/modules").display()
                    ),
                ])
                .output()
                .unwrap();
            let listed = String::from_utf8_lossy(&listed.stdout);
            assert!(!listed.contains("posix_acl_access"), "{listed}: {run:?}");
        }
        // The workspace still works for the call that comes next.
        let next = sandbox_within(
            who,
            &ws.0,
            &[],
            "echo next > n.txt && cat n.txt",
            LIMIT,
            &[],
        );
        assert!(next.stdout.contains("next"), "{next:?}");
    }
);

/// A workspace with a submodule at `vendor/lib` (its git directory in `.git/modules`).
fn with_deep_submodule(label: &str, who: As) -> (Dir, Dir) {
    let src = source_repo(who);
    let ws = repo(label, who);
    let src_path = src.0.display().to_string();
    host_git(
        &ws.0,
        who,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &src_path,
            "vendor/lib",
        ],
    );
    host_git(&ws.0, who, &["commit", "-qm", "submodule"]);
    (ws, src)
}

both!(
    a_submodule_hidden_from_gitmodules_is_still_found_in_the_index,
    |who| {
        for hide in [
            format!("{GIT} config -f .gitmodules --remove-section submodule.vendor/lib"),
            "printf '# caf\\351\\n' >> .gitmodules".to_owned(),
        ] {
            let (ws, _src) = with_deep_submodule("hidden-submodule", who);
            let hidden = sandbox_within(
                who,
                &ws.0,
                &[],
                &format!("{hide} && echo hidden"),
                LIMIT,
                &[],
            );
            assert!(hidden.stdout.contains("hidden"), "{hidden:?}");
            let marker = ws.0.with_extension("pwned-hidden-submodule");
            let attack = format!(
                "cp -a .git/modules/vendor/lib .evil; printf '{config}\\tworktree = ../vendor/lib\\n' > .evil/config; printf 'gitdir: ../../.evil\\n' > vendor/lib/.git; echo planted",
                config = fsmonitor_config(&marker)
            );
            let run = sandbox_within(who, &ws.0, &[], &attack, LIMIT, &[]);
            assert!(run.stdout.contains("planted"), "{hide}: {run:?}");
            assert_eq!(
                std::fs::read_to_string(ws.0.join("vendor/lib/.git")).unwrap(),
                "gitdir: ../../.git/modules/vendor/lib\n",
                "{hide}: {run:?}"
            );
            assert!(
                !later_git_status_runs_planted_code(&ws.0, who, &marker),
                "{hide}: {run:?}"
            );
        }
    }
);

both!(
    a_git_file_naming_a_directory_that_is_not_utf8_is_still_followed,
    |who| {
        let ws = repo("gitdir-bytes", who);
        let marker = ws.0.with_extension("pwned-gitdir-bytes");
        let attack = format!(
            "d=\"$PWD/$(printf '.e\\377v')\"; {GIT} init -q --separate-git-dir=\"$d\" sub && cd sub && echo s > s && {GIT} add s && {GIT} commit -qm s && {GIT} config core.fsmonitor 'touch {m}; false' && cd .. && {GIT} add sub 2>/dev/null; echo planted",
            m = marker.display()
        );
        let run = sandbox_within(who, &ws.0, &[], &attack, LIMIT, &[]);
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "{run:?}"
        );
    }
);

both!(
    a_configured_path_below_a_symlink_the_call_made_is_refused_and_one_outside_works,
    |who| {
        let ws = Dir::new("steered-parent", who);
        let outside = Dir::new("steered-parent-out", who);
        std::fs::create_dir_all(outside.0.join("bin")).unwrap();
        give(&outside.0, who);
        let made = sandbox_within(
            who,
            &ws.0,
            &[],
            &format!("ln -s {} build && echo made", outside.0.display()),
            LIMIT,
            &[],
        );
        assert!(made.stdout.contains("made"), "{made:?}");
        let nested = ws.0.join("build/bin").display().to_string();
        let run = sandbox_within(
            who,
            &ws.0,
            &["--write-path", &nested],
            "touch build/bin/x; echo ran",
            LIMIT,
            &[],
        );
        assert_eq!(run.code, 125, "{run:?}");
        assert!(!outside.0.join("bin/x").exists(), "{run:?}");
        // The user's own symlink outside every writable root is followed, as it always was.
        let real = Dir::new("user-cache", who);
        let link = real.0.with_extension("link");
        std::os::unix::fs::symlink(&real.0, &link).unwrap();
        let link_arg = link.display().to_string();
        let ok = sandbox_within(
            who,
            &ws.0,
            &["--write-path", &link_arg],
            &format!(
                "echo kept > {}/f && cat {}/f",
                real.0.display(),
                real.0.display()
            ),
            LIMIT,
            &[],
        );
        let _ = std::fs::remove_file(&link);
        assert!(ok.stdout.contains("kept"), "{ok:?}");
    }
);

both!(a_gitlink_moved_into_a_shared_index_is_still_found, |who| {
    let ws = repo("split-index", who);
    let marker = ws.0.with_extension("pwned-split-index");
    let attack = format!(
        "set -e; mkdir -p vendor/lib; {GIT} init -q --bare evilgit; {GIT} -C evilgit config core.bare false; {GIT} config -f evilgit/config core.worktree ../vendor/lib; printf 'gitdir: ../../evilgit\\n' > vendor/lib/.git; echo x > vendor/lib/f; {GIT} -C vendor/lib add f; {GIT} -C vendor/lib commit -qm x; {GIT} update-index --add --cacheinfo 160000,$({GIT} -C vendor/lib rev-parse HEAD),vendor/lib; {GIT} update-index --split-index; echo b > b; {GIT} add b; {GIT} config -f evilgit/config core.fsmonitor 'touch {m}; false'; echo planted",
        m = marker.display()
    );
    let run = sandbox_within(who, &ws.0, &[], &attack, LIMIT, &[]);
    assert!(run.stdout.contains("planted"), "{run:?}");
    assert!(
        !later_git_status_runs_planted_code(&ws.0, who, &marker),
        "{run:?}"
    );
});

both!(
    a_git_directory_a_git_file_names_is_closed_again_too,
    |who| {
        let ws = Dir::new("bare-opened", who);
        host_git(&ws.0, who, &["init", "-q", "--bare", ".bare"]);
        host_git(
            &ws.0,
            who,
            &["config", "-f", ".bare/config", "core.bare", "false"],
        );
        std::fs::write(ws.0.join(".git"), "gitdir: ./.bare\n").unwrap();
        give(&ws.0, who);
        let run = sandbox_within(
            who,
            &ws.0,
            &[],
            "chmod 0777 .bare .bare/hooks; echo opened",
            LIMIT,
            &[],
        );
        assert!(run.stdout.contains("opened"), "{run:?}");
        for dir in [".bare", ".bare/hooks"] {
            let mode = std::fs::metadata(ws.0.join(dir))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o022, 0, "{dir}: {mode:o}: {run:?}");
        }
    }
);
