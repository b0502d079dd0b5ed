//! What a call leaves in a repository for the user's git to act on later, outside the sandbox:
//! a fresh repository's config whose values (not only names) reach outside it, the state of a
//! rebase or cherry-pick that names a program to run, a repository planted in the quarantine
//! itself. Each is a finding of a fresh attacker review, run for real through the built
//! `agentd sandbox`, as root and as an unprivileged user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::{
    Dir, GIT, both, give, host_git, host_git_command, later_git_status_runs_planted_code,
    quarantined, repo, sandbox,
};
use std::path::Path;

/// A repository with three commits on `main`, owned by `who`.
fn three_commits(label: &str, who: agentd_e2e::As) -> Dir {
    let ws = repo(label, who);
    for n in ["two", "three"] {
        std::fs::write(ws.0.join("a.txt"), format!("{n}\n")).unwrap();
        give(&ws.0.join("a.txt"), who);
        host_git(&ws.0, who, &["commit", "-qam", n]);
    }
    ws
}

/// A program in the workspace that leaves `marker` when it runs.
fn tool(marker: &Path) -> String {
    format!(
        "mkdir -p tools && printf '#!/bin/sh\\ntouch {}\\n' > tools/lint.sh && chmod +x tools/lint.sh",
        marker.display()
    )
}

both!(
    a_fresh_repository_whose_worktree_points_elsewhere_is_quarantined,
    |who| {
        let ws = Dir::new("leftover-worktree", who);
        std::fs::write(ws.0.join("app.py"), "print(1)\n").unwrap();
        give(&ws.0, who);
        let elsewhere = Dir::new("leftover-worktree-home", who);
        std::fs::write(elsewhere.0.join(".bashrc"), "# the user's\n").unwrap();
        give(&elsewhere.0, who);
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "{GIT} init -q . && {GIT} add app.py && {GIT} commit -qm wip && {GIT} config core.worktree {} && echo made",
                elsewhere.0.display()
            ),
            &[],
        );
        assert!(run.stdout.contains("made"), "{run:?}");
        assert!(
            quarantined(&ws.0).iter().any(|n| n.ends_with("config")),
            "the config with core.worktree stays: {run:?}"
        );
        let top = host_git(&ws.0, who, &["rev-parse", "--show-toplevel"]);
        assert_eq!(Path::new(top.trim()), ws.0.as_path(), "{run:?}");
        // The user's `git reset --hard` acts on the workspace, not elsewhere.
        host_git(&ws.0, who, &["reset", "-q", "--hard"]);
        assert_eq!(
            std::fs::read_to_string(elsewhere.0.join(".bashrc")).unwrap(),
            "# the user's\n"
        );
    }
);

both!(
    a_stopped_rebase_that_names_a_strategy_program_is_no_longer_in_progress,
    |who| {
        let ws = three_commits("leftover-strategy", who);
        let marks = Dir::new("leftover-strategy-mark", who);
        let marker = marks.0.join("RAN");
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "{} && GIT_SEQUENCE_EDITOR=\"sed -i '1i break'\" {GIT} rebase -q -i HEAD~2; echo x/../tools/lint.sh > .git/rebase-merge/strategy && echo stopped",
                tool(&marker)
            ),
            &[],
        );
        assert!(run.stdout.contains("stopped"), "{run:?}");
        assert!(
            quarantined(&ws.0)
                .iter()
                .any(|n| n.contains("rebase-merge")),
            "{run:?}"
        );
        let cont = host_git_command(&ws.0, who)
            .args(["rebase", "--continue"])
            .output()
            .unwrap();
        assert!(!marker.exists(), "the planted strategy ran: {cont:?}");
    }
);

both!(
    a_cherry_pick_whose_options_name_a_strategy_program_is_no_longer_in_progress,
    |who| {
        let ws = three_commits("leftover-opts", who);
        let marks = Dir::new("leftover-opts-mark", who);
        let marker = marks.0.join("RAN");
        // Two commits picked onto the first, the first one conflicting: the sequencer stops.
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "{} && {GIT} checkout -q -b side HEAD~2 && echo other > a.txt && {GIT} commit -qam other; {GIT} cherry-pick main~1 main; printf '[options]\\n\\tstrategy = x/../tools/lint.sh\\n' > .git/sequencer/opts && echo stopped",
                tool(&marker)
            ),
            &[],
        );
        assert!(run.stdout.contains("stopped"), "{run:?}");
        assert!(
            quarantined(&ws.0).iter().any(|n| n.contains("sequencer")),
            "{run:?}"
        );
        std::fs::write(ws.0.join("a.txt"), "resolved\n").unwrap();
        let _ = host_git_command(&ws.0, who).args(["add", "a.txt"]).output();
        let cont = host_git_command(&ws.0, who)
            .args(["cherry-pick", "--continue"])
            .env("GIT_EDITOR", "true")
            .output()
            .unwrap();
        assert!(!marker.exists(), "the planted strategy ran: {cont:?}");
    }
);

both!(a_rebase_stopped_at_a_conflict_stays_in_progress, |who| {
    let ws = three_commits("leftover-conflict", who);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        &format!(
            "{GIT} checkout -q -b side HEAD~2 && echo other > a.txt && {GIT} commit -qam other; {GIT} rebase -q main; test -d .git/rebase-merge && echo stopped"
        ),
        &[],
    );
    assert!(run.stdout.contains("stopped"), "{run:?}");
    assert!(quarantined(&ws.0).is_empty(), "{run:?}");
    let status = host_git(&ws.0, who, &["status"]);
    assert!(status.contains("rebase in progress"), "{status}");
});

both!(
    a_repository_planted_in_the_quarantine_runs_nothing_later,
    |who| {
        let ws = repo("leftover-quarantine", who);
        let marks = Dir::new("leftover-quarantine-mark", who);
        let marker = marks.0.join("RAN");
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "mkdir -p .agentd-quarantine/x && cd .agentd-quarantine/x && {GIT} init -q && {GIT} commit -q --allow-empty -m x && {GIT} config core.fsmonitor 'touch {}; false' && cd ../.. && {GIT} add .agentd-quarantine/x && echo planted",
                marker.display()
            ),
            &[],
        );
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(
            run.stdout.contains(".agentd-quarantine/x/.git/config"),
            "the check names the planted config: {run:?}"
        );
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "`git status` at the root ran the fsmonitor planted in the quarantine"
        );
        assert!(
            !later_git_status_runs_planted_code(&ws.0.join(".agentd-quarantine/x"), who, &marker),
            "`git status` in the planted repository ran its fsmonitor"
        );
    }
);

both!(
    an_object_of_the_users_history_rewritten_by_a_call_is_not_shown_as_history,
    |who| {
        let ws = repo("leftover-object", who);
        std::fs::write(ws.0.join("Makefile"), "all:\n\techo build\n").unwrap();
        give(&ws.0.join("Makefile"), who);
        host_git(&ws.0, who, &["add", "Makefile"]);
        host_git(&ws.0, who, &["commit", "-qm", "make"]);
        // The finding: the blob of the committed Makefile overwritten with another object.
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "b=$({GIT} rev-parse HEAD:Makefile) && n=$(printf 'all:\\n\\techo PLANTED\\n' | {GIT} hash-object -w --stdin) && chmod u+w .git/objects/${{b:0:2}}/${{b:2}} && cp -f .git/objects/${{n:0:2}}/${{n:2}} .git/objects/${{b:0:2}}/${{b:2}} && echo forged"
            ),
            &[],
        );
        assert!(run.stdout.contains("forged"), "{run:?}");
        assert!(
            run.stdout.contains("content is not what its name says"),
            "the check says what it moved: {run:?}"
        );
        let shown = host_git_command(&ws.0, who)
            .args(["show", "HEAD:Makefile"])
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&shown.stdout).contains("PLANTED"),
            "the user's commit shows the call's content: {shown:?}"
        );
    }
);

both!(objects_git_itself_writes_in_a_call_are_kept, |who| {
    let ws = repo("leftover-object-kept", who);
    // What git writes itself in a call (a commit, a repack, a commit-graph) is kept.
    let work = sandbox(
        who,
        &ws.0,
        &[],
        &format!(
            "echo hi > b.txt && {GIT} add b.txt && {GIT} commit -qm b && {GIT} repack -qa && {GIT} commit-graph write --reachable && echo done"
        ),
        &[],
    );
    assert!(work.stdout.contains("done"), "{work:?}");
    assert!(!work.stdout.contains("moved to"), "{work:?}");
    assert!(host_git(&ws.0, who, &["show", "HEAD:b.txt"]).contains("hi"));
});

both!(a_branch_moved_behind_the_users_back_is_told, |who| {
    let ws = repo("leftover-refs", who);
    host_git(&ws.0, who, &["branch", "release"]);
    let run = sandbox(
        who,
        &ws.0,
        &[],
        &format!(
            "echo planted > a.txt && {GIT} commit -qam wip && {GIT} branch -f release HEAD && {GIT} reset -q --hard HEAD~1 && echo moved"
        ),
        &[],
    );
    assert!(run.stdout.contains("moved"), "{run:?}");
    assert!(
        run.stdout.contains("refs/heads/release")
            && run.stdout.contains("not the branch checked out"),
        "{run:?}"
    );
});
