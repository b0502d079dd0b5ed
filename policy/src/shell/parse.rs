//! The tree walk: tree-sitter-bash syntax tree → findings.

use super::words::{Word, word_of};
use super::wrappers::expand_command;
use super::{Finding, MAX_DEPTH, RedirectUse};
use std::cell::RefCell;
use tree_sitter::{Node, Parser};

thread_local! {
    /// One parser per thread: making one costs more than parsing a short command.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn parse(text: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(text, None)
    })
}

/// Parses `text` and appends what it would do. `depth` counts the `sh -c` / `eval` levels above.
pub(super) fn analyze_text(text: &str, depth: usize, out: &mut Vec<Finding>) {
    if depth > MAX_DEPTH {
        out.push(Finding::Unresolved {
            what: text.to_owned(),
            why: "commands nested too deeply to follow",
        });
        return;
    }
    let Some(tree) = parse(text) else {
        out.push(Finding::Unresolved {
            what: text.to_owned(),
            why: "the shell parser failed",
        });
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.push(Finding::Unresolved {
            what: text.to_owned(),
            why: "the command has a syntax error or a construct the parser cannot resolve",
        });
    }
    // An explicit stack, not recursion: nesting depth is up to the input.
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        visit(node, text, depth, out);
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
}

fn source(node: Node<'_>, src: &str) -> String {
    src.get(node.byte_range()).unwrap_or("").to_owned()
}

fn visit(node: Node<'_>, src: &str, depth: usize, out: &mut Vec<Finding>) {
    match node.kind() {
        "command" => command(node, src, depth, out),
        "declaration_command" | "unset_command" => {
            // `export X=…`, `declare`, `local`, `readonly`, `unset`: the keyword is the command.
            let mut argv = Vec::new();
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                match child.kind() {
                    "variable_assignment" => {
                        check_assignment(child, src, out);
                        argv.push(Word {
                            text: source(child, src),
                            dynamic: false,
                            glob_at: None,
                            tilde: false,
                        });
                    }
                    _ if child.is_named() => argv.push(word_of(child, src)),
                    _ => argv.push(Word {
                        text: source(child, src),
                        dynamic: false,
                        glob_at: None,
                        tilde: false,
                    }),
                }
            }
            expand_command(argv, depth, out);
        }
        // Prefix assignments (`FOO=1 cmd`), `export X=…` and `A=1 B=2` are checked by their parent.
        "variable_assignment"
            if !node.parent().is_some_and(|p| {
                matches!(
                    p.kind(),
                    "command" | "declaration_command" | "variable_assignments"
                )
            }) =>
        {
            check_assignment(node, src, out);
        }
        "variable_assignments" => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                check_assignment(child, src, out);
            }
        }
        "file_redirect" => redirect(node, src, out),
        "ERROR" => out.push(Finding::Unresolved {
            what: source(node, src),
            why: "the parser could not read this part",
        }),
        _ if node.is_missing() => out.push(Finding::Unresolved {
            what: node.kind().to_owned(),
            why: "the command is incomplete",
        }),
        _ => {}
    }
}

fn command(node: Node<'_>, src: &str, depth: usize, out: &mut Vec<Finding>) {
    let mut argv = Vec::new();
    let mut cursor = node.walk();
    for (i, child) in node.children(&mut cursor).enumerate() {
        match node.field_name_for_child(i as u32) {
            Some("name") | Some("argument") => argv.push(word_of(child, src)),
            _ if child.kind() == "variable_assignment" => check_assignment(child, src, out),
            _ => {}
        }
    }
    if !argv.is_empty() {
        expand_command(argv, depth, out);
    }
}

/// Variables whose value changes what later commands run or load.
const DANGEROUS_VARIABLES: &[&str] = &[
    "PATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "IFS",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PAGER",
    "PAGER",
    "GIT_EXTERNAL_DIFF",
    "GIT_EDITOR",
    "EDITOR",
    "VISUAL",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "NODE_OPTIONS",
    "PERL5LIB",
    "PERL5OPT",
    "RUBYOPT",
    "RUSTC_WRAPPER",
    "RUSTC",
    "CARGO_HOME",
    "LESSOPEN",
    "MANPAGER",
    "BROWSER",
    "HOME",
    "TMPDIR",
];

/// Whether setting `name` changes what runs (including the `GIT_CONFIG_*` family).
pub(super) fn is_dangerous_variable(name: &str) -> bool {
    DANGEROUS_VARIABLES.contains(&name)
        || name.starts_with("GIT_CONFIG_")
        || name.starts_with("BASH_FUNC_")
}

fn check_assignment(node: Node<'_>, src: &str, out: &mut Vec<Finding>) {
    let name = node
        .child_by_field_name("name")
        .map(|n| source(n, src))
        .unwrap_or_default();
    if is_dangerous_variable(&name) {
        out.push(Finding::Unresolved {
            what: source(node, src),
            why: "it sets a variable that changes which programs run or how they behave",
        });
    }
}

fn redirect(node: Node<'_>, src: &str, out: &mut Vec<Finding>) {
    let Some(dest) = node.child_by_field_name("destination") else {
        return;
    };
    let mut op = String::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if !child.is_named() {
            op = source(child, src);
        }
    }
    let target = word_of(dest, src);
    // `2>&1`, `>&2`, `<&0`, `>&-`: duplicating or closing a descriptor opens no file.
    if (op == ">&" || op == "<&")
        && (target.text.chars().all(|c| c.is_ascii_digit()) || target.text == "-")
    {
        return;
    }
    let write = op != "<";
    out.push(Finding::Redirect(RedirectUse { target, write }));
}
