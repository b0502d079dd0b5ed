//! A call whose processes outlive its command, stuck in the kernel where SIGKILL cannot reach
//! them, must not have its workspace checked before they end (finding of the session-8 review):
//! a rename of `.git/commondir` queued behind the slow unlink of a heavily fragmented file (the
//! directory's lock held for seconds) landed after the check, and the user's next `git status`
//! ran the `core.fsmonitor` of the directory it named. The check now waits for the call's PID
//! namespace to be gone — the worker reports such a call as timed out, the supervisor looks at
//! the call's cgroup, and `agentd` waits for a late check before it exits. As root and as an
//! unprivileged user, through the built `agentd sandbox`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::both;
use agentd_e2e::{later_git_status_runs_planted_code, repo, sandbox_within};
use std::time::Duration;

/// Makes `.git/frag`, a file of many one-block extents (slow to delete), then at `$1` seconds
/// replaces it by a rename (the unlink runs holding `.git`'s lock) and queues the planting
/// rename behind it; both in the background, detached from the output, and exits.
const PLANT: &str = r#"
start=$(date +%s.%N)
python3 -c '
import os
fd = os.open(".git/frag", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(130000):
    os.posix_fallocate(fd, i * 8192, 4096)
os.close(fd)'
: > .git/small
mkdir -p .git/c && printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch MARKER; false"\n' > .git/c/config
ln -sfn ../objects .git/c/objects; ln -sfn ../refs .git/c/refs
echo c > .git/cd.tmp
ls -l .git/commondir 2>/dev/null
python3 -c "import time; time.sleep(max(0, $start + $1 - time.time()))"
mv -f .git/small .git/frag </dev/null >/dev/null 2>&1 &
sleep 0.2
mv -T .git/cd.tmp .git/commondir </dev/null >/dev/null 2>&1 &
sleep 0.2; echo exiting
"#;

both!(
    a_rename_queued_in_the_kernel_is_checked_after_it_lands,
    |who| {
        let ws = repo("lingering", who);
        let marker = ws.0.with_extension("pwned-lingering");
        let script = PLANT.replace("MARKER", &marker.display().to_string());
        std::fs::write(ws.0.join("plant.sh"), script).unwrap();
        agentd_e2e::give(&ws.0, who);
        let run = sandbox_within(
            who,
            &ws.0,
            &["--timeout", "6"],
            "bash plant.sh 4",
            Duration::from_secs(120),
            &[],
        );
        assert!(run.stdout.contains("exiting"), "{run:?}");
        // Whatever the file system's speed, once agentd has exited nothing of the call is
        // left to land, and what landed was checked.
        std::thread::sleep(Duration::from_millis(200));
        assert!(!ws.0.join(".git/commondir").exists(), "{run:?}");
        assert!(
            !later_git_status_runs_planted_code(&ws.0, who, &marker),
            "{run:?}"
        );
        let _ = std::fs::remove_file(&marker);
    }
);
