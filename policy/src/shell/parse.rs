//! The tree walk: tree-sitter-bash syntax tree → findings.

use super::words::{Word, word_of};
use super::wrappers::expand_command;
use super::{Finding, MAX_DEPTH, MAX_FINDINGS, RedirectUse};
use std::cell::RefCell;
use tree_sitter::{Node, Parser};

thread_local! {
    /// One parser per thread: making one costs more than parsing a short command.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// The text the parser sees: every non-ASCII byte replaced by `a`.
///
/// tree-sitter-bash's C scanner calls `isdigit()` on the lookahead code point (scanner.c, brace
/// expansion), which is undefined behaviour for values over 255: glibc indexes its ctype table out
/// of bounds, and arbitrary Unicode input was seen to crash the process. In bash, non-ASCII
/// characters are ordinary word characters, as `a` is, so the tree has the same shape and the same
/// byte offsets; word values are read from the original text.
fn ascii_view(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_ascii() {
        return std::borrow::Cow::Borrowed(text);
    }
    let bytes: Vec<u8> = text
        .bytes()
        .map(|b| if b.is_ascii() { b } else { b'a' })
        .collect();
    // Every byte is ASCII now, so this cannot fail; fall back to a harmless text if it did.
    std::borrow::Cow::Owned(String::from_utf8(bytes).unwrap_or_default())
}

/// Work budget of one parse, in units of 100 parser operations (tree-sitter calls the progress
/// callback that often). A count, not a clock, so a verdict does not depend on the machine's load.
/// Ordinary commands of 10,000 characters use a fraction of it; pathological text (thousands of
/// unbalanced quotes) sends tree-sitter's error recovery past it and is rated ask unparsed.
pub const PARSE_BUDGET: u32 = 150;

/// Parses `text`, or returns `None` if the parser gave up or ran past [`PARSE_BUDGET`].
fn parse(text: &str) -> Option<tree_sitter::Tree> {
    parse_counting(text).0
}

/// Like `parse`, also returning how many progress callbacks (100 operations each) it used.
pub fn parse_counting(text: &str) -> (Option<tree_sitter::Tree>, u32) {
    let view = ascii_view(text);
    let bytes = view.as_bytes();
    let mut used = 0u32;
    let tree = PARSER.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        let parser = slot.as_mut()?;
        let mut progress = |_: &tree_sitter::ParseState| {
            used += 1;
            used > PARSE_BUDGET
        };
        let options = tree_sitter::ParseOptions::new().progress_callback(&mut progress);
        let mut input = |offset: usize, _: tree_sitter::Point| bytes.get(offset..).unwrap_or(&[]);
        let tree = parser.parse_with_options(&mut input, None, Some(options));
        if tree.is_none() {
            // A cancelled parse keeps its state for resuming; we never resume.
            parser.reset();
        }
        tree
    });
    (tree, used)
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
            what: excerpt_of(text),
            why: "the command has a syntax error or a construct the parser cannot resolve",
        });
    }
    // One cursor walks the whole tree in source order (pre-order), without recursion: nesting
    // depth is up to the input, and a cursor per node would cost more than the visit.
    let mut cursor = root.walk();
    loop {
        if out.len() >= MAX_FINDINGS {
            out.push(Finding::Unresolved {
                what: excerpt_of(text),
                why: "the command holds more than 1000 parts to rate",
            });
            return;
        }
        let node = cursor.node();
        visit(node, text, depth, out);
        if holds_more(node, text) && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// Whether the walk must look inside `node` after visiting it.
///
/// A simple command's name, arguments and prefix assignments are read by [`command`] itself;
/// anything else inside one that the walk rates — a substitution or expansion (`$`, `` ` ``), a
/// redirection or process substitution (`<`, `>`), a subscript or `[[ ]]` (`[`), a parse error or
/// a missing token — needs one of those characters or an error in the subtree. Plain commands are
/// most of a compound command's tree, and stepping through their words was a third of the walk.
fn holds_more(node: Node<'_>, src: &str) -> bool {
    node.kind() != "command"
        || node.has_error()
        || src.get(node.byte_range()).is_none_or(|t| {
            t.bytes()
                .any(|b| matches!(b, b'$' | b'`' | b'<' | b'>' | b'['))
        })
}

fn source(node: Node<'_>, src: &str) -> String {
    src.get(node.byte_range()).unwrap_or("").to_owned()
}

/// The start of a node's text, for messages: never a copy of a large input.
fn excerpt(node: Node<'_>, src: &str) -> String {
    excerpt_of(src.get(node.byte_range()).unwrap_or(""))
}

/// At most 120 bytes of `text`, cut at a character boundary: what messages and reasons quote.
pub(crate) fn excerpt_of(text: &str) -> String {
    const MAX: usize = 120;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
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
        // Arithmetic evaluates variable values as expressions, recursively, and an array subscript
        // in such a value runs command substitutions: `x='a[$(rm -rf ~)]'; (( x ))` runs rm.
        "arithmetic_expansion" if mentions_names(node) => out.push(Finding::Unresolved {
            what: excerpt(node, src),
            why: "arithmetic on variables can run commands hidden in their values",
        }),
        "compound_statement"
            if node.child(0).is_some_and(|c| c.kind() == "((") && mentions_names(node) =>
        {
            out.push(Finding::Unresolved {
                what: excerpt(node, src),
                why: "arithmetic on variables can run commands hidden in their values",
            })
        }
        "test_command" if has_arithmetic_test(node, src) => out.push(Finding::Unresolved {
            what: excerpt(node, src),
            why: "[[ ]] arithmetic comparisons can run commands hidden in variable values",
        }),
        "subscript" => out.push(Finding::Unresolved {
            what: excerpt(node, src),
            why: "an array subscript is evaluated as arithmetic and can run commands",
        }),
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

/// Whether an arithmetic node refers to anything but number literals.
fn mentions_names(node: Node<'_>) -> bool {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if matches!(
            n.kind(),
            "variable_name"
                | "simple_expansion"
                | "expansion"
                | "subscript"
                | "word"
                | "command_substitution"
        ) {
            return true;
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    false
}

fn has_arithmetic_test(node: Node<'_>, src: &str) -> bool {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "test_operator"
            && matches!(
                src.get(n.byte_range()),
                Some("-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge")
            )
        {
            return true;
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    false
}

fn command(node: Node<'_>, src: &str, depth: usize, out: &mut Vec<Finding>) {
    let mut argv = Vec::new();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            let child = cursor.node();
            match cursor.field_name() {
                Some("name") | Some("argument") => argv.push(word_of(child, src)),
                _ if child.kind() == "variable_assignment" => check_assignment(child, src, out),
                _ => {}
            }
            if !cursor.goto_next_sibling() {
                break;
            }
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
            what: excerpt(node, src),
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
