//! The home's symlinks into the workspace (issue 19): with `~/.bashrc -> ~/dotfiles/bashrc` and
//! the workspace `~/dotfiles`, one call appending to `bashrc` planted what the user's next
//! interactive shell runs on the host; `~/.config/nvim` pointing into the workspace, what the
//! next editor runs. What such a link leads to is read-only to every call, and the rest of the
//! workspace stays writable; a link that cannot be protected so (the workspace *is* what it
//! leads to) refuses the workspace as broad, naming the link. Each runs for real through the
//! built binaries, as root and as an unprivileged user, and a root daemon's session of that
//! user scans the user's own home, as the user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::mock_llm::MockLlm;
use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
use agentd_e2e::{As, Dir, agent_against, both, give, sandbox_within, test_user};
use daemon::{Daemon, Place, as_user};
use serde_json::json;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// `root/home` and the workspace `root/dotfiles` with `bashrc` and `nvim/init.lua`, the home's
/// `.bashrc` and `.config/nvim` linked into it; all given to `who`.
fn dotfiles(root: &Dir, who: As) -> (PathBuf, PathBuf) {
    let (home, ws) = (root.0.join("home"), root.0.join("dotfiles"));
    std::fs::create_dir_all(home.join(".config")).unwrap();
    std::fs::create_dir_all(ws.join("nvim")).unwrap();
    std::fs::write(ws.join("bashrc"), "# mine\n").unwrap();
    std::fs::write(ws.join("nvim/init.lua"), "-- mine\n").unwrap();
    symlink(ws.join("bashrc"), home.join(".bashrc")).unwrap();
    symlink(ws.join("nvim"), home.join(".config/nvim")).unwrap();
    give(&root.0, who);
    (home, ws)
}

both!(
    what_the_homes_links_lead_to_in_the_workspace_is_read_only,
    |who| {
        let root = Dir::new("dotlinks", who);
        let (home, ws) = dotfiles(&root, who);
        let home_var = home.display().to_string();
        let attack = "echo 'echo DOTFILE-BASHRC-RAN' >> bashrc; echo bashrc=$?; \
                      echo 'vim.cmd(\"!touch /tmp/x\")' > nvim/init.lua; echo init=$?; \
                      echo notes > notes.txt && echo wrote-notes";
        let run = sandbox_within(who, &ws, &[], attack, LIMIT, &[("HOME", &home_var)]);
        let all = format!("{}{}", run.stdout, run.stderr);
        for refused in ["bashrc=1", "init=1"] {
            assert!(all.contains(refused), "{refused} in: {all}");
        }
        assert!(
            all.contains("Read-only file system") || all.contains("Permission denied"),
            "{all}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.join("bashrc")).unwrap(),
            "# mine\n"
        );
        assert_eq!(
            std::fs::read_to_string(ws.join("nvim/init.lua")).unwrap(),
            "-- mine\n"
        );
        // The rest of the workspace is the call's to write.
        assert!(all.contains("wrote-notes"), "{all}");
        assert_eq!(
            std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
            "notes\n"
        );
    }
);

both!(
    a_link_to_a_file_not_made_yet_is_moved_aside_after_the_call_that_makes_it,
    |who| {
        let root = Dir::new("dotlinks-missing", who);
        let (home, ws) = dotfiles(&root, who);
        symlink(ws.join("profile"), home.join(".profile")).unwrap();
        let state = Dir::new("dotlinks-state", who);
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mock = rt.block_on(MockLlm::start(vec![
            bash(
                "call_1",
                "echo 'echo DOTFILE-PROFILE-RAN' > profile; echo made > made.txt",
            ),
            answer("done"),
        ]));
        let out = agent_against(who, &home, &mock.url())
            .args(["run", "-p", "work", "--dangerously-skip-permissions"])
            .arg("--workspace")
            .arg(&ws)
            .arg("--state-dir")
            .arg(&state.0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(mock.requests().len(), 2, "{err}");
        assert!(
            !ws.join("profile").exists(),
            "the profile the call made is left where ~/.profile leads"
        );
        assert!(
            ws.join(".agentd-quarantine").is_dir(),
            "moved aside, for the user to see"
        );
        assert_eq!(
            std::fs::read_to_string(ws.join("made.txt")).unwrap(),
            "made\n"
        );
    }
);

/// `agentd sandbox` in `ws` with HOME `home` is refused as broad, naming `link`; no call ran.
fn assert_refused(who: As, home: &Path, ws: &Path, link: &Path) {
    let marker = ws.join("ran");
    let home_var = home.display().to_string();
    let run = sandbox_within(who, ws, &[], "touch ran", LIMIT, &[("HOME", &home_var)]);
    assert_ne!(run.code, 0, "{run:?}");
    let named = format!("workspace {} is too broad", ws.display());
    let link = link.display().to_string();
    for part in [named.as_str(), link.as_str(), "--allow-broad-workspace"] {
        assert!(run.stderr.contains(part), "{part:?} in: {}", run.stderr);
    }
    assert!(!marker.exists(), "a call ran");
}

both!(
    a_workspace_that_is_what_a_link_leads_to_is_refused_naming_the_link,
    |who| {
        let root = Dir::new("dotlinks-root", who);
        let (home, ws) = dotfiles(&root, who);
        // The workspace is the editor's config itself: it cannot be made read-only.
        let nvim = ws.join("nvim");
        assert_refused(who, &home, &nvim, &home.join(".config/nvim"));
        // A link through a symlink inside the workspace, which a call could point elsewhere.
        symlink("nvim", ws.join("editor")).unwrap();
        std::fs::remove_file(home.join(".config/nvim")).unwrap();
        symlink(ws.join("editor"), home.join(".config/nvim")).unwrap();
        give(&root.0, who);
        assert_refused(who, &home, &ws, &home.join(".config/nvim"));
        // Allowed: it runs, with the warning's reason left to the log.
        let home_var = home.display().to_string();
        let run = sandbox_within(
            who,
            &ws,
            &["--allow-broad-workspace"],
            "echo allowed",
            LIMIT,
            &[("HOME", &home_var)],
        );
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.stdout.contains("allowed"), "{run:?}");
    }
);

/// A link put in the test user's own home for one test, removed when dropped (other tests share
/// that home; a link left behind would lead nowhere they work).
struct HomeLink(PathBuf);

impl Drop for HomeLink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_root_daemon_protects_what_the_session_owners_home_links_to() {
    let Some(user) = test_user() else {
        eprintln!("skipped: needs root to create the test user");
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        bash(
            "call_1",
            "echo 'echo DOTFILE-RC-RAN' >> rc; echo notes > notes.txt",
        ),
        answer("done"),
    ]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    // The dotfiles in a directory only the user may enter: the daemon reads as the user.
    let private = Dir::new("dotlinks-daemon", As::User);
    std::fs::set_permissions(&private.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    let ws = private.0.join("dotfiles");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("rc"), "# mine\n").unwrap();
    give(&private.0, As::User);
    let name = format!(".{}rc", agentd_e2e::unique("agentd-e2e-dotlink"));
    let link = HomeLink(user.home.join(name));
    symlink(ws.join("rc"), &link.0).unwrap();
    let frames = as_user(
        &place.socket,
        &[
            json!({"type": "create_session", "workspace": ws, "model": null,
                "approval": "skip_permissions", "max_steps": null, "title": null}),
            json!({"type": "attach_session", "session": "$SESSION", "after_seq": null}),
            json!({"type": "send_message", "session": "$SESSION", "text": "go"}),
        ],
    );
    let last = frames.last().unwrap();
    assert_eq!(last["event"]["type"], "turn_finished", "{frames:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "notes\n",
        "the call ran and wrote the workspace"
    );
    assert_eq!(std::fs::read_to_string(ws.join("rc")).unwrap(), "# mine\n");
}
