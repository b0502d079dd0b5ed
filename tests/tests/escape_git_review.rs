//! Nothing a call does is hidden from the user's review through git: `info/exclude` and
//! `info/grafts` are read-only, and index bits, replace refs and a `shallow` file the call set
//! are told after the call. Run for real through the built `agentd sandbox`, as root and as an
//! unprivileged user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::{GIT, both, host_git, repo, sandbox};

both!(info_exclude_and_grafts_cannot_hide_a_planted_file, |who| {
    let ws = repo("review-info", who);
    for attempt in [
        "echo conftest.py >> .git/info/exclude",
        "echo x > .git/info/grafts",
        "rm -rf .git/info",
        "mv .git/info .git/info.old && mkdir .git/info && echo '*' > .git/info/exclude",
    ] {
        let run = sandbox(who, &ws.0, &[], attempt, &[]);
        assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
    }
    std::fs::write(ws.0.join("conftest.py"), "import os\n").unwrap();
    agentd_e2e::give(&ws.0.join("conftest.py"), who);
    assert!(
        host_git(&ws.0, who, &["status", "--porcelain"]).contains("conftest.py"),
        "the planted file still shows"
    );
});

both!(index_bits_and_replace_refs_a_call_sets_are_told, |who| {
    let ws = repo("review-bits", who);
    std::fs::write(ws.0.join("Makefile"), "test:\n\ttrue\n").unwrap();
    agentd_e2e::give(&ws.0.join("Makefile"), who);
    host_git(&ws.0, who, &["add", "Makefile"]);
    host_git(&ws.0, who, &["commit", "-qm", "make"]);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        &format!(
            "printf 'test:\\n\\tid\\n' > Makefile && {GIT} update-index --skip-worktree Makefile && echo hid"
        ),
        &[],
    );
    assert!(run.stdout.contains("hid"), "{run:?}");
    let status = host_git(&ws.0, who, &["status", "--porcelain"]);
    assert!(
        status.trim().is_empty(),
        "git status is fooled, so the check has to say so: {status}"
    );
    assert!(
        run.stdout.contains("skip-worktree") && run.stdout.contains("Makefile"),
        "{run:?}"
    );
    let replaced = sandbox(who, &ws.0, &[], &format!("{GIT} replace HEAD HEAD~1"), &[]);
    assert!(replaced.stdout.contains("refs/replace/"), "{replaced:?}");
    // Told once: the next call that changes nothing says nothing.
    let quiet = sandbox(who, &ws.0, &[], "true", &[]);
    assert!(!quiet.stdout.contains("skip-worktree"), "{quiet:?}");
});

both!(
    a_rebase_todo_the_call_gave_an_exec_line_runs_nothing_later,
    |who| {
        // Found by the fourth review: `exec` lines in a paused rebase's todo run, unsandboxed, at
        // the user's `git rebase --continue`.
        let ws = repo("review-rebase", who);
        std::fs::write(ws.0.join("b.txt"), "two\n").unwrap();
        agentd_e2e::give(&ws.0.join("b.txt"), who);
        host_git(&ws.0, who, &["add", "b.txt"]);
        host_git(&ws.0, who, &["commit", "-qm", "second"]);
        let marks = agentd_e2e::Dir::new("review-rebase-mark", who);
        let marker = marks.0.join("REBASE_RAN");
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "GIT_SEQUENCE_EDITOR='sed -i 1ibreak' {GIT} rebase -q -i HEAD~1; printf 'exec touch {}\\n' >> .git/rebase-merge/git-rebase-todo && echo planted",
                marker.display()
            ),
            &[],
        );
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(
            run.stdout.contains("rebase-merge") && run.stdout.contains("moved to"),
            "{run:?}"
        );
        // Whatever git answers (the rebase is no longer in progress): what matters is the marker.
        let _ = agentd_e2e::host_git_command(&ws.0, who)
            .args(["rebase", "--continue"])
            .env("GIT_EDITOR", "true")
            .output()
            .unwrap();
        assert!(!marker.exists(), "the planted exec ran on the host");
        // A name git never writes in its directory goes too.
        let odd = sandbox(who, &ws.0, &[], "echo x > .git/my-state && echo ok", &[]);
        assert!(
            odd.stdout.contains("ok") && odd.stdout.contains("moved to"),
            "{odd:?}"
        );
        assert!(!ws.0.join(".git/my-state").exists());
    }
);
