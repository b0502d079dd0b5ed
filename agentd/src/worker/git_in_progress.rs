//! The state of a rebase, cherry-pick, revert or `git am` in progress: what git acts on at the
//! user's next `git rebase --continue` (or `--abort`, or `git status`), outside the sandbox.
//!
//! A call may leave such an operation stopped (a conflict, a `break`), and git keeps its state
//! in the git directory, which must stay writable for git to work. Several of its files make
//! git run something: a todo list's `exec` line, a `strategy` file naming `x/../tools/run.sh`
//! (git runs `git-merge-<strategy>`), `sequencer/opts` (a config file whose `strategy` does the
//! same), an `apply-opt` handing `git apply` an option that writes where it is told. A list of
//! such files would never be complete, so it is turned around: a state directory a call changed
//! is kept only if **every** entry is one git itself writes there ([`REBASE_MERGE`],
//! [`REBASE_APPLY`], [`SEQUENCER`], read from what git 2.47 writes) and every entry git reads
//! as an instruction holds only known-inert values. Anything else and the whole directory is
//! moved aside: the operation is then no longer in progress, and nothing runs.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use tool_worker::lockdown::mounts::gitconfig;

/// The directories of an operation in progress, in a git directory.
pub const STATE_DIRS: &[&str] = &["rebase-merge", "rebase-apply", "sequencer"];

/// What an interactive or merge-based rebase writes in `rebase-merge/` (git's `sequencer.c`,
/// `builtin/rebase.c`).
const REBASE_MERGE: &[&str] = &[
    "allow_rerere_autoupdate",
    "amend",
    "author-script",
    "autostash",
    "cdate_is_adate",
    "current-fixups",
    "done",
    "drop_redundant_commits",
    "end",
    "git-rebase-todo",
    "git-rebase-todo.backup",
    "gpg_sign_opt",
    "head-name",
    "ignore_date",
    "interactive",
    "keep_redundant_commits",
    "message",
    "message-fixup",
    "message-squash",
    "msgnum",
    "no-reschedule-failed-exec",
    "onto",
    "orig-head",
    "patch",
    "quiet",
    "refs-to-update",
    "reschedule-failed-exec",
    "rewritten-list",
    "rewritten-pending",
    "signoff",
    "squash-onto",
    "stopped-sha",
    "strategy",
    "strategy_opts",
    "verbose",
];

/// What `git am` and `git rebase --apply` write in `rebase-apply/` (`builtin/am.c`), besides
/// the numbered patches.
const REBASE_APPLY: &[&str] = &[
    "abort-safety",
    "apply-opt",
    "applying",
    "author-script",
    "autostash",
    "dirtyindex",
    "final-commit",
    "head-name",
    "info",
    "keep",
    "keepcr",
    "last",
    "messageid",
    "msg",
    "msg-clean",
    "next",
    "onto",
    "orig-head",
    "original-commit",
    "patch",
    "patch-merge-index",
    "quiet",
    "quoted-cr",
    "rebasing",
    "rerere-autoupdate",
    "rewritten",
    "scissors",
    "sign",
    "threeway",
    "utf8",
];

/// What a cherry-pick or revert of several commits writes in `sequencer/`.
const SEQUENCER: &[&str] = &["abort-safety", "head", "opts", "todo", "done"];

/// The todo commands that run nothing but git's own steps (`git help rebase`, "INTERACTIVE
/// MODE"): `exec`/`x` is not among them.
const TODO_COMMANDS: &[&str] = &[
    "pick",
    "p",
    "reword",
    "r",
    "edit",
    "e",
    "squash",
    "s",
    "fixup",
    "f",
    "drop",
    "d",
    "label",
    "l",
    "reset",
    "t",
    "merge",
    "m",
    "break",
    "b",
    "update-ref",
    "u",
    "noop",
    "revert",
];

/// The merge strategies built into git (`git help merge`, "MERGE STRATEGIES"): any other name
/// makes git run a program `git-merge-<name>`.
const BUILTIN_STRATEGIES: &[&str] = &["ort", "recursive", "resolve", "octopus", "ours", "subtree"];

/// The keys of `sequencer/opts` (`[options]`, git's `sequencer.c` `populate_opts_cb`) that
/// change nothing but how commits are made.
const SEQUENCER_OPTS: &[&str] = &[
    "allow-empty",
    "allow-empty-message",
    "allow-ff",
    "allow-rerere-auto",
    "default-msg-cleanup",
    "drop-redundant-commits",
    "edit",
    "explicit-cleanup",
    "gpg-sign",
    "keep-redundant-commits",
    "mainline",
    "no-commit",
    "record-origin",
    "signoff",
    "strategy",
    "strategy-option",
];

/// The options `git apply` takes from `rebase-apply/apply-opt` that write nothing and run
/// nothing (`git help apply`): not `--build-fake-ancestor=<file>`, not `--directory`.
const APPLY_OPTS: &[&str] = &[
    "--whitespace=",
    "--ignore-whitespace",
    "--ignore-space-change",
    "--reject",
    "--exclude=",
    "--include=",
    "-C",
    "-p",
];

/// Most bytes of a state file read.
const MAX_FILE: u64 = 4 << 20;

/// Why the state directory `dir` (one of [`STATE_DIRS`]) is not inert, or `None` when every
/// entry is one git writes there, with values known to run nothing.
pub fn not_inert(dir: &Path) -> Option<String> {
    let kind = dir.file_name()?.to_str()?;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return Some(format!("it cannot be read ({e})")),
    };
    for entry in entries.take(4096) {
        let Ok(entry) = entry else {
            return Some("it cannot be read".to_owned());
        };
        let name = entry.file_name();
        if let Some(why) = entry_not_inert(kind, &name, &entry.path()) {
            return Some(format!(
                "its {} {why}",
                crate::inert::inert_line(&name.to_string_lossy())
            ));
        }
    }
    None
}

fn entry_not_inert(kind: &str, name: &OsStr, path: &Path) -> Option<String> {
    let known = match kind {
        "rebase-merge" => REBASE_MERGE,
        "rebase-apply" => REBASE_APPLY,
        _ => SEQUENCER,
    };
    let patch = kind == "rebase-apply"
        && !name.is_empty()
        && name.as_bytes().iter().all(u8::is_ascii_digit);
    let Some(name) = name.to_str().filter(|n| patch || known.contains(n)) else {
        return Some("is not a file git writes there".to_owned());
    };
    let text = || {
        super::fresh_repo::read_no_symlinks(path, MAX_FILE)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let rule: Option<fn(&str) -> bool> = match (kind, name) {
        (_, "git-rebase-todo" | "git-rebase-todo.backup" | "done" | "todo") => Some(todo_is_inert),
        ("rebase-merge", "strategy") => Some(|t| BUILTIN_STRATEGIES.contains(&t.trim())),
        ("rebase-merge", "strategy_opts") => Some(plain_words),
        ("rebase-apply", "apply-opt") => Some(apply_opts_are_inert),
        ("sequencer", "opts") => Some(opts_are_inert),
        _ => None,
    };
    let rule = rule?;
    match text() {
        Some(t) if rule(&t) => None,
        Some(_) => Some("holds what git would run or act on".to_owned()),
        None => Some("is not a regular file of a bounded size".to_owned()),
    }
}

/// Whether every line of a todo list is a comment or a command that runs nothing: a line that
/// begins with anything but a letter is not a command git runs.
fn todo_is_inert(text: &str) -> bool {
    text.lines().all(|line| {
        let line = line.trim_start();
        let word = line.split_whitespace().next().unwrap_or("");
        !line.starts_with(|c: char| c.is_ascii_alphabetic()) || TODO_COMMANDS.contains(&word)
    })
}

/// Words of letters, digits and `=-_.:/'"` (strategy options such as `"theirs"`,
/// `subtree=lib`): nothing a shell or an option parser would take as more.
fn plain_words(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || " \n=-_.:/'\"".contains(c))
}

fn apply_opts_are_inert(text: &str) -> bool {
    plain_words(text)
        && text.split_whitespace().all(|word| {
            let word = word.trim_matches(|c| c == '\'' || c == '"');
            APPLY_OPTS.iter().any(|o| word.starts_with(o))
        })
}

fn opts_are_inert(text: &str) -> bool {
    !text.contains(char::REPLACEMENT_CHARACTER)
        && gitconfig::parse(text).iter().all(|e| {
            e.section == "options"
                && SEQUENCER_OPTS.contains(&e.key.as_str())
                && plain_words(&e.value)
                && (e.key != "strategy" || BUILTIN_STRATEGIES.contains(&e.value.trim()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(label: &str, kind: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let base = std::env::temp_dir()
            .join(format!(
                "agentd-git-in-progress-{label}-{}",
                std::process::id()
            ))
            .join(kind);
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        for (name, text) in files {
            std::fs::write(base.join(name), text).unwrap();
        }
        base
    }

    #[test]
    fn what_git_writes_for_a_stopped_rebase_is_inert() {
        let d = dir(
            "rebase",
            "rebase-merge",
            &[
                (
                    "git-rebase-todo",
                    "pick 1a2b x\n# exec y\nbreak\nupdate-ref refs/heads/s\n",
                ),
                ("done", "pick 0f0f y\n"),
                ("strategy", "ort\n"),
                ("strategy_opts", "\"theirs\"\n"),
                ("head-name", "refs/heads/side\n"),
                ("author-script", "GIT_AUTHOR_NAME='a'\n"),
            ],
        );
        assert_eq!(not_inert(&d), None);
        let d = dir(
            "am",
            "rebase-apply",
            &[
                ("0001", "From x"),
                ("apply-opt", ""),
                ("next", "1"),
                ("last", "2"),
            ],
        );
        assert_eq!(not_inert(&d), None);
        let d = dir(
            "seq",
            "sequencer",
            &[
                ("todo", "pick 1a2b x\n"),
                (
                    "opts",
                    "[options]\n\tsignoff = true\n\tstrategy = ort\n\tstrategy-option = theirs\n",
                ),
            ],
        );
        assert_eq!(not_inert(&d), None);
    }

    #[test]
    fn anything_that_would_run_or_that_git_does_not_write_is_not() {
        for (kind, file, text) in [
            ("rebase-merge", "git-rebase-todo", "pick 1a x\nexec id\n"),
            ("rebase-merge", "git-rebase-todo", "pick 1a x\nx id\n"),
            ("rebase-merge", "strategy", "x/../tools/lint.sh\n"),
            ("rebase-merge", "strategy_opts", "$(id)"),
            ("rebase-merge", "my-state", ""),
            ("sequencer", "opts", "[options]\n\tstrategy = x/../t.sh\n"),
            ("sequencer", "opts", "[core]\n\tfsmonitor = id\n"),
            ("sequencer", "todo", "pick 1a x\nexec id\n"),
            (
                "rebase-apply",
                "apply-opt",
                "--build-fake-ancestor=/home/u/.bashrc",
            ),
        ] {
            let d = dir("bad", kind, &[(file, text)]);
            assert!(not_inert(&d).is_some(), "{kind}/{file}: {text}");
        }
    }
}
