//! The system prompt: what the agent is, how to use its tools well (subagents among them), what
//! the sandbox does and what its refusals look like, then the user's and the project's
//! `AGENTS.md`, each labelled. A subagent gets a prompt of its own: its role, its read-only
//! tools, the same sandbox and the same `AGENTS.md`.

use super::instructions::{Instructions, Source};
use super::skills::{Skill, index};
use std::fmt::Write as _;
use std::path::Path;

/// The fixed part: the agent, the tools, the sandbox.
const BASE: &str = "\
You are a coding agent. You work in the repository at {workspace} on the user's task: read what \
you need, run commands, edit files, check your work by running the project's tests or build, and \
answer briefly when the task is done (without calling tools).

Tools:
- read_file reads a text file with line numbers; for long files pass offset and limit. Prefer it, \
list_dir, glob and grep to shell commands for looking at files.
- str_replace changes exact text that occurs once (or every occurrence with replace_all); read the \
file first and copy the text exactly, indentation included. write_file replaces a whole file: use \
it for new files.
- bash runs one command line with bash (no rc files, no aliases) in the repository, with stdout and \
stderr merged and capped, and a timeout: keep commands non-interactive and bounded (pass a test \
filter, pipe long output through head).
- write_todos keeps your plan for work of several steps: the whole list each time, one item \
in_progress while you work on it, marked done when it is.
Tool arguments are one JSON object. A tool error is an answer, not the end: read it and adjust.

Sandbox: every tool call runs in a fresh, locked-down process. It can write only inside the \
repository and its own temporary directory ($TMPDIR); the rest of the machine is read-only, homes \
and other users' files are hidden, .git/hooks and .git/config cannot be changed, and there is no \
network unless the user allowed it. \"Permission denied\", \"Read-only file system\" or \"Operation \
not permitted\" on something outside those limits is the sandbox, not a bug to work around: do \
not retry it another way; do the work inside the repository or tell the user what you need. Some \
calls wait for the user's approval, and a call the user or the policy refused says so: respect it.
";

/// What the main agent is told about `task`, when it is offered.
const SUBAGENTS: &str = "\
- task starts a subagent: a helper with a fresh context and read-only tools that investigates one \
question and answers with a report; only the report comes back to you. Use it to explore \
broadly (where is X defined, how does Y work, what uses Z) without filling your own context with \
everything read on the way, and start several in one message for independent questions: they run \
at the same time. Give each the whole task and say what its report must contain; it sees nothing \
of this conversation. It cannot change files: make the changes yourself.
";

/// A subagent's fixed part.
const SUBAGENT: &str = "\
You are a subagent: another agent gave you one task in the repository at {workspace}. Work on it \
alone — you cannot ask questions — and when you are done answer with a report (without calling \
tools): the facts found, with file paths and line numbers, and what you could not find out. Your \
final message is all the other agent will see of your work, so make it complete and concise; do \
not describe your steps.

You are read-only: read_file, list_dir, glob and grep look at files, and bash runs commands that \
do not change the repository (searches, builds into the temporary directory, tests that write \
nothing). You cannot edit files, keep a todo list or start subagents.

Sandbox: every tool call runs in a fresh, locked-down process. The repository and the rest of \
the machine are read-only; only your own temporary directory ($TMPDIR) is writable; homes and \
other users' files are hidden, and there is no network unless the user allowed it. \"Permission \
denied\", \"Read-only file system\" or \"Operation not permitted\" is the sandbox, not a bug to work \
around: do not retry it another way. Some calls wait for the user's approval, and a call the \
user or the policy refused says so: respect it.
";

/// The system prompt for a session in `workspace` with these `AGENTS.md` files and skills;
/// `subagents`: whether it is offered `task`.
pub fn system_prompt(
    workspace: &Path,
    instructions: &[Instructions],
    skills: &[Skill],
    subagents: bool,
) -> String {
    let mut prompt = BASE.replace("{workspace}", &workspace.display().to_string());
    if subagents {
        let tools_end = prompt
            .find("Tool arguments are one JSON object.")
            .unwrap_or(prompt.len());
        prompt.insert_str(tools_end, SUBAGENTS);
    }
    if !skills.is_empty() {
        let _ = write!(
            prompt,
            "\n# Skills\n\nInstructions for particular tasks; read one with read_skill when the task calls for it:\n{}",
            index(skills)
        );
    }
    push_instructions(&mut prompt, instructions);
    prompt
}

/// A subagent's system prompt: its role and read-only tools, the sandbox, and the same
/// `AGENTS.md` files as its parent's.
pub fn subagent_prompt(workspace: &Path, instructions: &[Instructions]) -> String {
    let mut prompt = SUBAGENT.replace("{workspace}", &workspace.display().to_string());
    push_instructions(&mut prompt, instructions);
    prompt
}

/// Appends each `AGENTS.md`, under a heading that says whose it is.
fn push_instructions(prompt: &mut String, instructions: &[Instructions]) {
    for i in instructions {
        let whose = match i.source {
            Source::User => "the user's own instructions, for every project",
            Source::Workspace => "this project's instructions",
        };
        let _ = write!(
            prompt,
            "\n# AGENTS.md: {whose} ({})\n\n{}\n",
            i.path.display(),
            i.text.trim_end()
        );
        if i.truncated {
            let _ = writeln!(
                prompt,
                "[… cut at {} KiB; read the rest with read_file if it is in the repository]",
                super::instructions::MAX_INSTRUCTIONS_BYTES / 1024
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn names_the_workspace_and_labels_each_agents_md_user_first() {
        let file = |source, path: &str, text: &str| Instructions {
            source,
            path: PathBuf::from(path),
            text: text.into(),
            truncated: false,
        };
        let prompt = system_prompt(
            Path::new("/home/ana/proj"),
            &[
                file(
                    Source::User,
                    "/home/ana/.agents/AGENTS.md",
                    "Use British spelling.\n",
                ),
                file(
                    Source::Workspace,
                    "/home/ana/proj/AGENTS.md",
                    "Run `make test`.\n",
                ),
            ],
            &[Skill {
                name: "release".into(),
                description: "cut a release".into(),
                path: PathBuf::from("/home/ana/proj/.agents/skills/release/SKILL.md"),
            }],
            true,
        );
        assert!(
            prompt.contains("read_skill when the task calls for it:\n- release: cut a release\n")
        );
        assert!(prompt.contains("repository at /home/ana/proj "));
        assert!(
            prompt.contains("Permission denied"),
            "says what the sandbox's refusals look like"
        );
        let user = prompt
            .find("the user's own instructions")
            .unwrap_or(usize::MAX);
        let project = prompt.find("this project's instructions").unwrap_or(0);
        assert!(user < project, "the user's first:\n{prompt}");
        assert!(prompt.contains("(/home/ana/proj/AGENTS.md)\n\nRun `make test`."));
        assert!(!system_prompt(Path::new("/w"), &[], &[], true).contains("AGENTS.md"));
        let subagents = prompt
            .find("- task starts a subagent")
            .unwrap_or(usize::MAX);
        assert!(
            subagents
                < prompt
                    .find("Tool arguments are one JSON object")
                    .unwrap_or(0),
            "task is described among the tools:\n{prompt}"
        );
        assert!(!system_prompt(Path::new("/w"), &[], &[], false).contains("task starts"));
    }

    #[test]
    fn a_subagent_is_told_it_is_one_reads_only_and_gets_the_same_agents_md() {
        let project = Instructions {
            source: Source::Workspace,
            path: PathBuf::from("/w/AGENTS.md"),
            text: "Run `make test`.".into(),
            truncated: false,
        };
        let prompt = subagent_prompt(Path::new("/w"), &[project]);
        assert!(prompt.starts_with("You are a subagent"), "{prompt}");
        assert!(prompt.contains("repository at /w.") && prompt.contains("read-only"));
        assert!(prompt.contains("Permission"), "the sandbox's refusals");
        assert!(
            prompt.contains("(/w/AGENTS.md)\n\nRun `make test`."),
            "{prompt}"
        );
        assert!(!prompt.contains("write_todos") && !prompt.contains("str_replace"));
    }
}
