//! `git config` reads a key or lists keys, or sets, unsets, renames and edits them, by how many
//! operands it is given and which action: only the reading forms pass. Read from git 2.47.3's
//! `git config -h` (installed): the old forms (`git config KEY`, `--get`, `--list`) and 2.46's
//! subcommands (`git config get KEY`, `git config list`).

use super::Parsed;
use super::getopt::Problem;

const GETS: &[&str] = &["--get", "--get-all", "--get-regexp", "--get-urlmatch"];

/// Whether the command line only reads configuration.
pub(super) fn check(parsed: &Parsed<'_>) -> Result<(), Problem> {
    let ops: Vec<&str> = parsed.operands.iter().map(|a| a.text).collect();
    let gets = |names: &[&str]| names.iter().any(|n| parsed.has(n));
    let listing = gets(&["-l", "--list"]);
    let reads = match ops.as_slice() {
        _ if parsed.operands.iter().any(|a| a.word.may_differ()) => false,
        _ if gets(GETS) => ops.len() <= 2,
        [] => listing,
        ["list"] => !gets(GETS),
        ["get", key] => is_key(key),
        [key] => !listing && is_key(key),
        _ => false,
    };
    if reads {
        return Ok(());
    }
    Err(Problem::new(
        &ops.join(" "),
        "`git config` here would set, unset or edit configuration (reading is `git config KEY`, \
         `--get KEY` or `--list`)",
    ))
}

/// `section.key` or `section.sub.key`: not one of the subcommand words.
fn is_key(text: &str) -> bool {
    text.contains('.') && !text.starts_with('-')
}
