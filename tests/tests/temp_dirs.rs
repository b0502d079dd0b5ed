//! Temp dirs another local user cannot steer: for every temp-dir creator a binary reaches
//! (`agentd sandbox`, and `agent run` with its pool of workers), another uid pre-makes the names
//! a predictable scheme would use — a directory of theirs, a symlink to their directory, a
//! symlink to a victim's directory, a file — in a shared sticky directory (our `TMPDIR`, like
//! /tmp). Each run must still succeed (a call writes and reads its `TMPDIR`: the sanity check in
//! the same set-up), in a directory that is private (0700, owned by the uid the call runs as),
//! while nothing lands where the planted names point, and nothing is left behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod daemon;

use agentd_e2e::both;
use agentd_e2e::mock_llm::{MockLlm, openai};
use agentd_e2e::{As, Dir, command_as, sandbox, test_user};
use serde_json::json;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The call writes and reads back a file in its TMPDIR, and says where that was and what it was.
const PROBE: &str = "echo \"tmp=$TMPDIR\"; stat -c 'call=%a:%u' \"$TMPDIR\"; \
    stat -c 'parent=%a:%u' \"$(dirname \"$TMPDIR\")\"; \
    echo written > \"$TMPDIR/out\" && echo \"read=$(cat \"$TMPDIR/out\")\"";

/// The uid `who` runs as.
fn uid_of(who: As) -> u32 {
    match who {
        As::Root => nix::unistd::geteuid().as_raw(),
        As::User => test_user().unwrap().uid,
    }
}

/// Another local user than `who`: the test user against root, `nobody` against the test user.
fn other_uid(who: As) -> u32 {
    match who {
        As::Root => test_user().map_or(65534, |u| u.uid),
        As::User => 65534,
    }
}

/// What another user can leave at a name before we use it.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// A directory of theirs, open to all.
    Dir,
    /// A symlink to a directory of theirs.
    LinkToTheirs,
    /// A symlink to a directory of the victim's (ours).
    LinkToVictim,
    /// A plain file.
    File,
}

const SHAPES: [Shape; 4] = [
    Shape::Dir,
    Shape::LinkToTheirs,
    Shape::LinkToVictim,
    Shape::File,
];

/// A shared sticky TMPDIR, the other user's own directory in it, and a directory of the victim's.
struct Scene {
    who: As,
    shared: Dir,
    theirs: PathBuf,
    victim: Dir,
    planted: Vec<(PathBuf, Shape)>,
}

impl Scene {
    fn new(who: As) -> Self {
        let shared = Dir::new("shared-tmp", As::Root);
        std::fs::set_permissions(&shared.0, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let theirs = shared.0.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
        chown(&theirs, other_uid(who));
        let victim = Dir::new("victim", who);
        Scene {
            who,
            shared,
            theirs,
            victim,
            planted: Vec::new(),
        }
    }

    /// The other user puts `shape` at `name` in the shared directory.
    fn plant(&mut self, name: &str, shape: Shape) {
        let path = self.shared.0.join(name);
        match shape {
            Shape::Dir => {
                std::fs::create_dir(&path).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
            }
            Shape::LinkToTheirs => std::os::unix::fs::symlink(&self.theirs, &path).unwrap(),
            Shape::LinkToVictim => std::os::unix::fs::symlink(&self.victim.0, &path).unwrap(),
            Shape::File => std::fs::write(&path, "theirs").unwrap(),
        }
        chown(&path, other_uid(self.who));
        self.planted.push((path, shape));
    }

    fn tmpdir(&self) -> String {
        self.shared.0.display().to_string()
    }

    /// The call ran, in a private temp dir of its own under the shared one; nothing reached
    /// the other user's directory or the victim's; the planted entries are untouched; and the
    /// temp dir is gone.
    fn check(&self, output: &str) {
        assert!(output.contains("read=written"), "the call ran: {output}");
        let tmp = PathBuf::from(field(output, "tmp="));
        assert!(tmp.starts_with(&self.shared.0), "{}", tmp.display());
        for (path, _) in &self.planted {
            assert!(
                !tmp.starts_with(path),
                "the call's TMPDIR {} is under the planted {}",
                tmp.display(),
                path.display()
            );
        }
        let uid = uid_of(self.who);
        assert_eq!(field(output, "call="), format!("700:{uid}"), "{output}");
        assert_eq!(
            std::fs::read_dir(&self.theirs).unwrap().count(),
            0,
            "nothing in the other user's directory"
        );
        assert_eq!(
            std::fs::read_dir(&self.victim.0).unwrap().count(),
            0,
            "nothing in the victim's directory"
        );
        for (path, shape) in &self.planted {
            let meta = std::fs::symlink_metadata(path).unwrap();
            assert_eq!(meta.uid(), other_uid(self.who), "{}", path.display());
            match shape {
                Shape::Dir => assert_eq!(std::fs::read_dir(path).unwrap().count(), 0),
                Shape::LinkToTheirs | Shape::LinkToVictim => assert!(meta.is_symlink()),
                Shape::File => assert_eq!(std::fs::read_to_string(path).unwrap(), "theirs"),
            }
        }
        assert!(
            !tmp.exists(),
            "the call's temp dir {} is removed",
            tmp.display()
        );
        let planted: Vec<&Path> = self.planted.iter().map(|(p, _)| p.as_path()).collect();
        let left: Vec<PathBuf> = std::fs::read_dir(&self.shared.0)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| *p != self.theirs && !planted.contains(&p.as_path()))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
}

fn field<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no `{key}` in {text:?}"))
}

// `agentd sandbox` used `$TMPDIR/agentd-<uid>` (made with `create_dir_all`) and call dirs in it.
both!(sandbox_is_not_steered_by_planted_temp_paths, |who| {
    for shape in SHAPES {
        let mut scene = Scene::new(who);
        scene.plant(&format!("agentd-{}", uid_of(who)), shape);
        let ws = Dir::new("tmp-ws", who);
        let tmpdir = scene.tmpdir();
        let run = sandbox(who, &ws.0, &[], PROBE, &[("TMPDIR", tmpdir.as_str())]);
        assert_eq!(run.code, 0, "{shape:?}: {run:?}");
        scene.check(&run.stdout);
    }
});

/// The pids the next processes are likely to get.
fn next_pids(n: u32) -> std::ops::Range<u32> {
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    last + 1..last + 1 + n
}

/// Runs `agent run` as `who` with `TMPDIR` = `tmpdir`, on a model that calls bash once with
/// `command` and then answers; returns the tool result the model was sent, and agent's stderr.
fn agent_run_bash(who: As, tmpdir: &str, command: &str) -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let args = json!({ "command": command }).to_string();
    let mock = rt.block_on(MockLlm::start(vec![
        agentd_e2e::mock_llm::Reply::stream(vec![
            openai::tool(0, Some("call_1"), Some("bash"), &args),
            openai::finish("tool_calls"),
        ]),
        agentd_e2e::mock_llm::Reply::stream(vec![openai::text("done"), openai::finish("stop")]),
    ]));
    let ws = Dir::new("tmp-run-ws", who);
    let home = Dir::new("tmp-run-home", who);
    let config = home.0.join("config.toml");
    std::fs::write(&config, "").unwrap();
    let out = command_as(
        "agent",
        who,
        &[
            ("HOME", home.0.to_str().unwrap()),
            ("TMPDIR", tmpdir),
            ("PROVIDER", "openai"),
            ("BASE_URL", mock.url().as_str()),
            ("API_KEY", "sk-e2e"),
            ("MODEL", "mock-model"),
        ],
    )
    .args([
        "run",
        "-p",
        "go",
        "--dangerously-skip-permissions",
        "--workspace",
    ])
    .arg(&ws.0)
    .arg("--config")
    .arg(&config)
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{stderr}");
    let sent: serde_json::Value = serde_json::from_str(&requests[1].raw_body).unwrap();
    let messages = sent["messages"].as_array().unwrap();
    messages
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool result in {sent}"))
        .to_owned()
}

// `agent run` used `$TMPDIR/agentd-run-<pid>` (made with `create_dir_all`) and `call-<n>` in it,
// for the workers of its pool. The next few hundred pids get every shape in turn.
both!(agent_run_is_not_steered_by_planted_temp_paths, |who| {
    let mut scene = Scene::new(who);
    for pid in next_pids(400) {
        scene.plant(&format!("agentd-run-{pid}"), SHAPES[pid as usize % 4]);
    }
    let output = agent_run_bash(who, &scene.tmpdir(), PROBE);
    // (The session's root, seen from inside the call, is the mount point the call's mount
    // namespace made for its temp dir in the empty /tmp, 0755 so the path can be walked; on the
    // host it is made by the same `PrivateDir` as the call's, whose 0700 is checked above.)
    scene.check(&output);
});

/// The call builds a tree deeper than the supervisor's descriptor limit in its TMPDIR, one
/// `mkdir d && cd d` at a time (a shell holds no descriptor per level), and writes a MiB at the
/// bottom; it says where its TMPDIR was.
const DEEP_TREE: &str = "echo \"tmp=$TMPDIR\"; cd \"$TMPDIR\" || exit 1; i=0; \
    while [ $i -lt 600 ]; do mkdir d && cd d || exit 1; i=$((i + 1)); done; \
    head -c 1048576 /dev/zero > payload && echo \"depth=$i\"";

/// The descriptor limit (soft) `agentd sandbox` runs under: far less than the tree is deep. (The
/// hard limit stays: the worker raises its own soft limit to the call's `open_files`.)
const LOW_NOFILE: u64 = 256;

// The call's temp dir was removed with `std::fs::remove_dir_all`, which keeps a descriptor open
// per level: a tree deeper than the supervisor's RLIMIT_NOFILE failed with EMFILE and the whole
// temp dir stayed in the host's /tmp, with whatever the call wrote at the bottom.
both!(a_temp_dir_deeper_than_the_fd_limit_is_removed, |who| {
    use std::os::unix::process::CommandExt;
    let shared = Dir::new("deep-tmp", As::Root);
    std::fs::set_permissions(&shared.0, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let ws = Dir::new("deep-ws", who);
    let tmpdir = shared.0.display().to_string();
    let mut cmd =
        agentd_e2e::sandbox_command(who, &ws.0, &[], DEEP_TREE, &[("TMPDIR", tmpdir.as_str())]);
    let limit = nix::sys::resource::Resource::RLIMIT_NOFILE;
    let (_, hard) = nix::sys::resource::getrlimit(limit).unwrap();
    // SAFETY: the closure runs in the forked child before exec and only makes the setrlimit
    // syscall (async-signal-safe): no allocation, no lock.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::resource::setrlimit(limit, LOW_NOFILE, hard).map_err(std::io::Error::from)
        });
    }
    let run = agentd_e2e::Run::from(cmd.output().unwrap());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(field(&run.stdout, "depth="), "600", "{run:?}");
    let tmp = PathBuf::from(field(&run.stdout, "tmp="));
    assert!(tmp.starts_with(&shared.0), "{}", tmp.display());
    assert!(
        !tmp.exists(),
        "the call's temp dir {} is removed: {}",
        tmp.display(),
        run.stderr
    );
    assert!(
        !run.stderr.contains("cannot remove temp dir"),
        "{}",
        run.stderr
    );
    let left: Vec<PathBuf> = std::fs::read_dir(&shared.0)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
});

/// The call leaves its TMPDIR as hard to remove as a process of its uid can make it: a directory
/// it cannot read or search, one it cannot write in, and the TMPDIR itself mode 000.
const LOCKED_TREE: &str = "echo \"tmp=$TMPDIR\"; cd \"$TMPDIR\" || exit 1; \
    mkdir -p a/b/c && echo x > a/b/c/f && echo x > a/f && \
    chmod 000 a/b/c && chmod 500 a/b && chmod 300 a && chmod 000 \"$TMPDIR\" && echo locked";

// For an unprivileged supervisor (the call runs as its uid), `remove_dir_all` met EACCES and
// left the tree.
both!(a_temp_dir_the_call_locked_is_removed, |who| {
    let shared = Dir::new("locked-tmp", As::Root);
    std::fs::set_permissions(&shared.0, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let ws = Dir::new("locked-ws", who);
    let tmpdir = shared.0.display().to_string();
    let run = sandbox(who, &ws.0, &[], LOCKED_TREE, &[("TMPDIR", tmpdir.as_str())]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("locked"), "{run:?}");
    let tmp = PathBuf::from(field(&run.stdout, "tmp="));
    assert!(
        !tmp.exists(),
        "the call's temp dir {} is removed: {}",
        tmp.display(),
        run.stderr
    );
    let left: Vec<PathBuf> = std::fs::read_dir(&shared.0)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
});

/// The root of a session's temp dirs, from a call's `TMPDIR` (`<tmp>/<root>/run-…/call-…`).
fn user_root_of(call_tmp: &Path) -> PathBuf {
    let tmp = std::env::temp_dir();
    call_tmp
        .ancestors()
        .find(|a| a.parent() == Some(tmp.as_path()))
        .unwrap_or_else(|| panic!("{} is not under {}", call_tmp.display(), tmp.display()))
        .to_owned()
}

/// The `TMPDIR` of a call the session made, as the call wrote it in the workspace.
fn call_tmp(ws: &Path) -> PathBuf {
    let text = std::fs::read_to_string(ws.join("where.txt")).expect("the call ran");
    std::fs::remove_file(ws.join("where.txt")).unwrap();
    PathBuf::from(text.trim())
}

// Sessions' temp roots were `/tmp/agentd-run-<random>`, one per session, owned by its user:
// `ls -l /tmp` told who used agentd and when each session started. Now each user has one root,
// named by 128 random bits alone, 0700: its name is 32 hex digits and nothing else (no
// separator, so no field: no user name, uid or time), it differs between two users at the same
// moment and between one user's roots one after the other (so it is no function of the uid or of
// the time), and another user can list neither it nor what is in it.
#[test]
fn a_users_temp_root_names_nothing_and_no_other_user_can_list_it() {
    use agentd_e2e::mock_llm::openai::{answer_reply as answer, bash_reply as bash};
    use daemon::{Client, Daemon, Place, as_user, wait_for};
    let Some(user) = test_user() else {
        eprintln!("skipped: needs root to create the test user");
        return;
    };
    let write_tmp = "echo \"$TMPDIR\" > where.txt";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockLlm::start(vec![
        bash("call_1", write_tmp),
        answer("done"),
        bash("call_2", write_tmp),
        answer("done"),
        bash("call_3", write_tmp),
        answer("done"),
    ]));
    let place = Place::new("");
    let _d = Daemon::start(&place, &mock.url());
    // Once it answers, the daemon has given the socket its own mode: open it to the user.
    rt.block_on(async {
        let mut c = Client::connect(&place.socket, protocol::Encoding::Json).await;
        c.ask(protocol::control::Request::Status).await;
    });
    std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let ws = Dir::new("troot-ws", As::User);
    let session = json!({"type": "create_session", "workspace": ws.0, "model": null,
        "approval": "skip_permissions", "max_steps": null, "title": null});
    let run = [
        session.clone(),
        json!({"type": "attach_session", "session": "$SESSION", "after_seq": null}),
        json!({"type": "send_message", "session": "$SESSION", "text": "go"}),
    ];
    let frames = as_user(&place.socket, &run);
    assert_eq!(
        frames.last().unwrap()["event"]["reason"],
        "done",
        "{frames:?}"
    );
    let first = user_root_of(&call_tmp(&ws.0));

    let name = first.file_name().unwrap().to_str().unwrap().to_owned();
    assert_eq!(name.len(), 32, "{name}");
    assert!(
        name.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')),
        "{name}"
    );
    assert!(
        !name.contains(&user.name) && !name.contains("agentd"),
        "{name}"
    );
    let meta = std::fs::symlink_metadata(&first).unwrap();
    assert!(meta.is_dir());
    assert_eq!((meta.uid(), meta.mode() & 0o7777), (user.uid, 0o700));
    // Another user (nobody) can list neither the root nor the session's directory in it.
    let session_dir = std::fs::read_dir(&first)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for dir in [&first, &session_dir] {
        let ls = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "ls"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(!ls.status.success(), "nobody listed {}", dir.display());
        assert!(
            String::from_utf8_lossy(&ls.stderr).contains("Permission denied"),
            "{ls:?}"
        );
    }

    // Root's session, at the same moment: a root of its own, named otherwise.
    let root_ws = Dir::new("troot-root-ws", As::Root);
    let theirs = rt.block_on(async {
        let mut c = Client::connect(&place.socket, protocol::Encoding::Json).await;
        let id = c.create(&root_ws.0, "skip_permissions").await;
        c.attach(&id, None).await;
        c.send(&id, "go").await;
        c.until_turn_finished().await;
        user_root_of(&call_tmp(&root_ws.0))
    });
    assert_ne!(theirs, first);
    assert_eq!(std::fs::symlink_metadata(&theirs).unwrap().uid(), 0);

    // The user's session ends: their root goes with it; the next one is named anew.
    let id = frames
        .iter()
        .find_map(|f| f["body"]["id"].as_str())
        .unwrap()
        .to_owned();
    as_user(
        &place.socket,
        &[json!({"type": "delete_session", "session": id})],
    );
    wait_for("the user's root is removed with their last session", || {
        std::fs::symlink_metadata(&first).is_err()
    });
    as_user(&place.socket, &run);
    let second = user_root_of(&call_tmp(&ws.0));
    assert_ne!(second, first, "not a function of the uid");
}
