//! Layer 3's git reminder: the branch, and the files whose state changed since the last step.
//!
//! The supervisor never runs git on a workspace: a repository's config can make git run programs
//! (`core.fsmonitor`, external diff and textconv drivers), and the workspace is the model's to
//! write. The state is read by [`PROBE`], run as a bash call in a sandboxed worker like any tool
//! call (with those hooks turned off as well), and only after a step that ran a tool able to
//! change the workspace ([`needs_probe`]): a step of reads keeps the last state, so a session
//! that only reads runs no probe at all after its first.

use std::collections::BTreeMap;

/// The probe: prints `branch NAME`, then `status XY PATH` lines (`git status --porcelain=v1`)
/// and `numstat ADDED DELETED PATH` lines (`git diff --numstat`: how the content changed, so a
/// file modified again in a later step shows as changed although its status stays `M`), each
/// list cut to 200 lines. Prints nothing outside a work tree.
pub const PROBE: &str = "export GIT_OPTIONAL_LOCKS=0 GIT_PAGER=cat
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 0
printf 'branch %s\\n' \"$(git symbolic-ref --short -q HEAD || git rev-parse --short HEAD 2>/dev/null)\"
git -c core.fsmonitor=false status --porcelain=v1 --no-renames --untracked-files=normal 2>/dev/null | head -n 200 | sed 's/^/status /'
git -c core.fsmonitor=false diff --no-ext-diff --no-textconv --numstat 2>/dev/null | head -n 200 | sed 's/^/numstat /'
";

/// Tools whose call may change the workspace: after a step with one, the probe runs again.
const WRITERS: [&str; 3] = ["bash", "write_file", "str_replace"];

/// Whether a step that called `tools` (by name) may have changed what the probe reads.
pub fn needs_probe<'a>(mut tools: impl Iterator<Item = &'a str>) -> bool {
    tools.any(|t| WRITERS.contains(&t))
}

/// What the probe saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitState {
    /// The branch (or the short commit when detached); `None` outside a work tree.
    pub branch: Option<String>,
    /// Each path with a status or a content change: its status and numstat, as printed.
    pub files: BTreeMap<String, String>,
}

impl GitState {
    /// Reads the probe's output. Lines that are not the probe's are ignored (a repository's
    /// hooks cannot add any: none run, but the output is the sandbox's and is not trusted).
    pub fn parse(output: &str) -> GitState {
        let mut state = GitState::default();
        for line in output.lines() {
            if let Some(name) = line.strip_prefix("branch ") {
                let name = name.trim();
                if !name.is_empty() {
                    state.branch = Some(name.to_owned());
                }
            } else if let Some(rest) = line.strip_prefix("status ") {
                // "XY PATH": two status letters, a space, the path (quoted by git if unusual).
                if let (Some(xy), Some(path)) = (rest.get(..2), rest.get(3..)) {
                    state.note(path, xy);
                }
            } else if let Some(rest) = line.strip_prefix("numstat ") {
                let mut parts = rest.splitn(3, '\t');
                if let (Some(added), Some(deleted), Some(path)) =
                    (parts.next(), parts.next(), parts.next())
                {
                    state.note(path, &format!("+{added}-{deleted}"));
                }
            }
        }
        state
    }

    fn note(&mut self, path: &str, what: &str) {
        let entry = self.files.entry(path.to_owned()).or_default();
        if !entry.is_empty() {
            entry.push(' ');
        }
        entry.push_str(what);
    }

    /// The paths whose entry differs from `before`'s (changed, new, or gone: reverted or
    /// committed), in order.
    pub fn changed_since<'a>(&'a self, before: &'a GitState) -> Vec<&'a str> {
        let mut paths: Vec<&str> = self
            .files
            .iter()
            .filter(|(p, what)| before.files.get(*p) != Some(*what))
            .map(|(p, _)| p.as_str())
            .collect();
        paths.extend(
            before
                .files
                .keys()
                .filter(|p| !self.files.contains_key(*p))
                .map(String::as_str),
        );
        paths.sort_unstable();
        paths
    }
}

/// The most paths named in a reminder.
const MAX_PATHS: usize = 20;

/// The reminder for a request: the branch, and what changed since the state `before` (none at
/// the session's first probe). `None` outside a work tree.
pub fn reminder(before: Option<&GitState>, now: &GitState) -> Option<String> {
    let branch = now.branch.as_deref()?;
    let mut text = format!("Git branch: {}", crate::inert::inert(branch));
    if let Some(old) = before.and_then(|b| b.branch.as_deref())
        && old != branch
    {
        text.push_str(&format!(" (was {})", crate::inert::inert(old)));
    }
    text.push('\n');
    let Some(before) = before else {
        if !now.files.is_empty() {
            text.push_str(&format!(
                "{} file(s) differ from HEAD (git status).\n",
                now.files.len()
            ));
        }
        return Some(text);
    };
    let changed = now.changed_since(before);
    if !changed.is_empty() {
        let shown: Vec<String> = changed
            .iter()
            .take(MAX_PATHS)
            .map(|p| crate::inert::inert(p).into_owned())
            .collect();
        text.push_str(&format!(
            "Changed since the last step: {}",
            shown.join(", ")
        ));
        if changed.len() > MAX_PATHS {
            text.push_str(&format!(" and {} more", changed.len() - MAX_PATHS));
        }
        text.push('\n');
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(dir: &std::path::Path) -> String {
        let out = std::process::Command::new("bash")
            .args(["-c", PROBE])
            .current_dir(dir)
            .env("HOME", dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("bash runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn the_probe_reads_branch_and_changes_and_a_later_edit_of_a_modified_file_shows() {
        if std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: no git");
            return;
        }
        let dir = std::env::temp_dir().join(format!("agentd-gitstate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        assert_eq!(
            GitState::parse(&probe(&dir)),
            GitState::default(),
            "not a repo"
        );
        assert_eq!(reminder(None, &GitState::default()), None);

        git(&dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.py"), "one\n").expect("write");
        git(&dir, &["add", "a.py"]);
        git(&dir, &["commit", "-q", "-m", "init"]);
        let first = GitState::parse(&probe(&dir));
        assert_eq!(first.branch.as_deref(), Some("main"));
        assert!(first.files.is_empty(), "{first:?}");

        std::fs::write(dir.join("a.py"), "one\ntwo\n").expect("write");
        std::fs::write(dir.join("new.txt"), "x").expect("write");
        let second = GitState::parse(&probe(&dir));
        assert_eq!(second.changed_since(&first), ["a.py", "new.txt"]);
        let text = reminder(Some(&first), &second).unwrap_or_default();
        assert!(text.contains("Git branch: main"), "{text}");
        assert!(
            text.contains("Changed since the last step: a.py, new.txt"),
            "{text}"
        );

        // Modified again: still ` M`, but its numstat moved.
        std::fs::write(dir.join("a.py"), "one\ntwo\nthree\n").expect("write");
        let third = GitState::parse(&probe(&dir));
        assert_eq!(third.changed_since(&second), ["a.py"]);

        // Nothing changed: nothing to say but the branch.
        let same = GitState::parse(&probe(&dir));
        assert!(same.changed_since(&third).is_empty());
        assert_eq!(
            reminder(Some(&third), &same).as_deref(),
            Some("Git branch: main\n")
        );

        // A new branch, and a file committed away (gone from the status).
        git(&dir, &["checkout", "-q", "-b", "fix"]);
        git(&dir, &["add", "a.py"]);
        git(&dir, &["commit", "-q", "-m", "a"]);
        let fourth = GitState::parse(&probe(&dir));
        let text = reminder(Some(&same), &fourth).unwrap_or_default();
        assert!(text.starts_with("Git branch: fix (was main)"), "{text}");
        assert!(text.contains("a.py"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_repository_config_cannot_make_the_probe_run_a_program() {
        if std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_err()
        {
            return;
        }
        let dir = std::env::temp_dir().join(format!("agentd-gitstate-fsm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        git(&dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.txt"), "one\n").expect("write");
        git(&dir, &["add", "a.txt"]);
        git(&dir, &["commit", "-q", "-m", "init"]);
        std::fs::write(dir.join("a.txt"), "two\n").expect("write");
        let mark = dir.join("planted-ran");
        let planted = format!("touch '{}'", mark.display());
        git(&dir, &["config", "core.fsmonitor", &planted]);
        git(&dir, &["config", "diff.external", &planted]);
        let state = GitState::parse(&probe(&dir));
        assert_eq!(state.changed_since(&GitState::default()), ["a.txt"]);
        assert!(!mark.exists(), "a hook the repository planted ran");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_steps_that_can_write_run_the_probe_and_odd_output_is_ignored() {
        assert!(needs_probe(["read_file", "bash"].into_iter()));
        assert!(needs_probe(["str_replace"].into_iter()));
        assert!(!needs_probe(
            ["read_file", "grep", "write_todos"].into_iter()
        ));
        let state = GitState::parse("noise\nbranch \nstatus M\nnumstat 1\t2\n");
        assert_eq!(state, GitState::default());
        let shown = reminder(None, &GitState::parse("branch \u{1b}[2Jmain\n")).unwrap_or_default();
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
    }
}
