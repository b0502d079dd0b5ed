//! Every repository in the workspace, at any depth, is protected like the top one: code planted
//! in a repository two or more levels down — one the call makes, one that was there, a bare
//! one — never runs at the user's later `git status`, at the root or inside it. Run for real
//! through the built `agentd sandbox` and `agent run --approval never`, as root and as an
//! unprivileged user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use agentd_e2e::{
    Dir, GIT, both, command_as, give, host_git, later_git_status_runs_planted_code, quarantined,
    repo, sandbox,
};

/// The command of the finding: a repository made two levels down, its fsmonitor set, and the
/// repository added to the parent's index as a gitlink.
fn plant_nested(marker: &std::path::Path) -> String {
    format!(
        "mkdir -p vendor/lib && cd vendor/lib && {GIT} init -q && {GIT} commit -q --allow-empty -m x && {GIT} config core.fsmonitor 'touch {m}; false' && printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout && cd ../.. && {GIT} add vendor/lib && echo planted",
        m = marker.display()
    )
}

both!(
    a_repository_planted_two_levels_down_runs_nothing_later,
    |who| {
        let ws = repo("depth-plant", who);
        let marks = Dir::new("depth-mark", who);
        let marker = marks.0.join("PWNED");
        let run = sandbox(who, &ws.0, &[], &plant_nested(&marker), &[]);
        assert!(run.stdout.contains("planted"), "{run:?}");
        assert!(
            run.stdout.contains("vendor/lib/.git/config") && run.stdout.contains("moved to"),
            "the check says what it moved: {run:?}"
        );
        let moved = quarantined(&ws.0);
        assert!(
            moved.iter().any(|n| n.contains("config")) && moved.iter().any(|n| n.contains("hooks")),
            "{moved:?}"
        );
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "`git status` at the root ran the planted fsmonitor"
        );
        assert!(
            !later_git_status_runs_planted_code(&ws.0.join("vendor/lib"), who, &marker),
            "`git status` inside the nested repository ran the planted fsmonitor"
        );
        // The repository still works, and the next call cannot plant in it either.
        assert!(host_git(&ws.0.join("vendor/lib"), who, &["log", "--oneline"]).contains('x'));
        let again = sandbox(
            who,
            &ws.0,
            &[],
            &format!("cd vendor/lib && {GIT} config core.pager evil"),
            &[],
        );
        assert!(!ws.0.join("vendor/lib/.git/config").exists() || again.code != 0);
        assert!(
            !later_git_status_runs_planted_code(&ws.0.join("vendor/lib"), who, &marker),
            "{again:?}"
        );
    }
);

both!(
    a_repository_that_was_there_at_any_depth_is_read_only,
    |who| {
        let ws = repo("depth-existing", who);
        let deep = ws.0.join("org/team/proj");
        std::fs::create_dir_all(&deep).unwrap();
        give(&ws.0.join("org"), who);
        give(&ws.0.join("org/team"), who);
        give(&deep, who);
        host_git(&deep, who, &["init", "-q", "-b", "main"]);
        host_git(&ws.0, who, &["init", "-q", "--bare", "srv/store.git"]);
        let config_before = std::fs::read_to_string(deep.join(".git/config")).unwrap();
        for attempt in [
            "echo 'touch /tmp/x' > org/team/proj/.git/hooks/pre-commit",
            "cd org/team/proj && git config core.fsmonitor evil",
            "echo '[core] pager = evil' >> org/team/proj/.git/config",
            "echo secret.py >> org/team/proj/.git/info/exclude",
            "rm -rf org/team/proj/.git/hooks",
            "mv org/team/proj/.git org/team/proj/old",
            "mv org/team org/t2",
            "echo evil > srv/store.git/hooks/post-update",
            "echo '[core] fsmonitor = x' >> srv/store.git/config",
        ] {
            let run = sandbox(who, &ws.0, &[], attempt, &[]);
            assert_ne!(run.code, 0, "`{attempt}` succeeded: {run:?}");
        }
        assert_eq!(
            std::fs::read_to_string(deep.join(".git/config")).unwrap(),
            config_before
        );
        assert!(!deep.join(".git/hooks/pre-commit").exists());
        assert!(!ws.0.join("srv/store.git/hooks/post-update").exists());
        // Work in it still works.
        let work = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "cd org/team/proj && echo hi > f && {GIT} add f && {GIT} commit -qm f && {GIT} log --oneline | wc -l"
            ),
            &[],
        );
        assert_eq!(work.code, 0, "{work:?}");
        assert_eq!(work.stdout.trim(), "1", "{work:?}");
    }
);

both!(
    a_repository_the_call_makes_with_only_what_git_init_writes_is_kept,
    |who| {
        let ws = repo("depth-clean", who);
        let run = sandbox(
            who,
            &ws.0,
            &[],
            &format!(
                "mkdir -p a/b && cd a/b && {GIT} init -q && {GIT} commit -q --allow-empty -m x && echo made"
            ),
            &[],
        );
        assert!(run.stdout.contains("made"), "{run:?}");
        assert!(
            !run.stdout.contains("moved to"),
            "nothing to quarantine: {run:?}"
        );
        assert!(ws.0.join("a/b/.git/config").is_file());
        assert!(quarantined(&ws.0).is_empty());
        // And from the next call on it is protected like the others.
        let next = sandbox(
            who,
            &ws.0,
            &[],
            "echo '[core] fsmonitor = x' >> a/b/.git/config",
            &[],
        );
        assert_ne!(next.code, 0, "{next:?}");
    }
);

/// A reply in OpenAI's streamed format in which the model calls these tools.
fn calls(calls: &[(&str, serde_json::Value)]) -> Reply {
    let mut chunks: Vec<serde_json::Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            openai::tool(
                i as u64,
                Some(&format!("call_{name}_{i}")),
                Some(name),
                &args.to_string(),
            )
        })
        .collect();
    chunks.push(openai::finish("tool_calls"));
    chunks.push(openai::usage(100, 20));
    Reply::stream(chunks)
}

fn answer(text: &str) -> Reply {
    Reply::stream(vec![
        openai::text(text),
        openai::finish("stop"),
        openai::usage(100, 20),
    ])
}

both!(
    two_allowed_calls_of_an_unattended_run_plant_nothing_that_runs,
    |who| {
        // The finding end to end: `--approval never`, two calls the policy allows (write a
        // Makefile, `make test`), and the user's `git status` afterwards.
        let ws = repo("depth-run", who);
        let marks = Dir::new("depth-run-mark", who);
        let marker = marks.0.join("PWNED");
        let recipe = plant_nested(&marker).replace('\'', "'\\''");
        let makefile = format!("test:\n\tsh -c '{recipe}'\n");
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mock = rt.block_on(MockLlm::start(vec![
            calls(&[(
                "write_file",
                serde_json::json!({"path": "Makefile", "content": makefile}),
            )]),
            calls(&[("bash", serde_json::json!({"command": "make test"}))]),
            answer("done"),
        ]));
        let home = Dir::new("depth-run-home", who);
        let config = home.0.join("config.toml");
        std::fs::write(
        &config,
        "[policy]\nbash = [{ pattern = \"make test\", action = \"allow\" }]\nwrite = [{ path = \"Makefile\", action = \"allow\" }]\n",
    )
    .unwrap();
        give(&config, who);
        let tmp = Dir::new("depth-run-tmp", who);
        let (home_dir, tmp_dir) = (home.0.display().to_string(), tmp.0.display().to_string());
        let out = command_as(
            "agent",
            who,
            &[
                ("HOME", home_dir.as_str()),
                ("TMPDIR", tmp_dir.as_str()),
                ("PROVIDER", "openai"),
                ("BASE_URL", mock.url().as_str()),
                ("API_KEY", "sk-e2e"),
                ("MODEL", "mock-model"),
            ],
        )
        .args([
            "run",
            "-p",
            "run the tests",
            "--approval",
            "never",
            "--workspace",
        ])
        .arg(&ws.0)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        let sent = serde_json::to_string(&mock.requests()[2].body).unwrap();
        assert!(sent.contains("planted"), "make test ran: {sent}");
        assert!(
            sent.contains("vendor/lib/.git/config") && sent.contains("moved to"),
            "the model is told: {sent}"
        );
        assert!(!later_git_status_runs_planted_code(&ws.0, who, &marker));
        assert!(!later_git_status_runs_planted_code(
            &ws.0.join("vendor/lib"),
            who,
            &marker
        ));
    }
);
