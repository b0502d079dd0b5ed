//! The tree walk: tree-sitter-bash syntax tree → findings.

use super::bashisms;
use super::nodes::{self, Children, Kind};
use super::words::{Binding, Word, plain_words, word_of};
use super::wrappers::expand_command;
use super::{Finding, MAX_DEPTH, MAX_FINDINGS, RedirectUse, Walk};
use crate::specs::scripts::is_harmless_variable;
use std::cell::RefCell;
use tree_sitter::{Node, Parser, TreeCursor};

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

/// Parses `text` and appends what it would do. `walk.depth` counts the `sh -c` / `eval` levels
/// above.
pub(super) fn analyze_text(text: &str, walk: &mut Walk<'_>) {
    if walk.depth > MAX_DEPTH {
        walk.out.push(Finding::unresolved(
            text,
            "commands nested too deeply to follow",
        ));
        return;
    }
    // Outside the subset where the parser reads what bash reads, nothing can be allowed; the
    // text is still rated, so a deny found in it stays a deny.
    if let Err(outside) = super::gate::check(text) {
        let (what, why) = super::gate::explain(text, &outside);
        walk.out.push(Finding::Unresolved {
            what,
            why: why.into(),
        });
    }
    // Bash joins line continuations before it reads words; so do we (or ask).
    let joined = match super::continuation::join(text) {
        Ok(joined) => joined,
        Err(why) => {
            walk.out.push(Finding::unresolved(text, why));
            return;
        }
    };
    let text = joined.as_ref();
    let Some(tree) = parse(text) else {
        walk.out
            .push(Finding::unresolved(text, "the shell parser failed"));
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        walk.out.push(Finding::unresolved(
            text,
            "the command has a syntax error or a construct the parser cannot resolve",
        ));
    }
    if text.contains("\\\n") && !continuations_are_quoted(root, text) {
        walk.out.push(Finding::unresolved(
            text,
            "a line continuation the policy cannot place",
        ));
    }
    // A fresh scope per text: an `sh -c` payload does not see the loop variables around it.
    let saved = std::mem::take(&mut walk.scope);
    // One cursor walks the whole tree in source order (pre-order), without recursion: nesting
    // depth is up to the input, and a cursor per node would cost more than the visit. `left`
    // counts the siblings still to come on each level (see `nodes`).
    let mut cursor = root.walk();
    let mut left = Vec::with_capacity(16);
    loop {
        if walk.out.len() >= MAX_FINDINGS {
            walk.out.push(Finding::unresolved(
                text,
                "the command holds more than 1000 parts to rate",
            ));
            break;
        }
        let node = cursor.node();
        let kind = nodes::kind(node);
        visit(node, kind, text, walk, &mut cursor);
        let enter = (walk.posix || holds_more(node, kind, text))
            && nodes::step_into(&mut cursor, &mut left);
        if !enter && !nodes::step_over(&mut cursor, &mut left) {
            break;
        }
    }
    walk.scope = saved;
}

/// Whether every backslash-newline left after joining lies where bash keeps it: in single
/// quotes, `$'…'`, a comment or a here-document body.
fn continuations_are_quoted(root: Node<'_>, text: &str) -> bool {
    let mut at = 0;
    while let Some(pos) = text[at..].find("\\\n") {
        let start = at + pos;
        let Some(node) = root.descendant_for_byte_range(start, start + 2) else {
            return false;
        };
        let mut n = Some(node);
        let mut kept = false;
        while let Some(x) = n {
            if matches!(
                x.kind(),
                "raw_string" | "ansi_c_string" | "comment" | "heredoc_body" | "heredoc_content"
            ) {
                kept = true;
                break;
            }
            n = x.parent();
        }
        if !kept {
            return false;
        }
        at = start + 2;
    }
    true
}

/// Whether the walk must look inside `node` after visiting it.
///
/// A simple command's name, arguments and prefix assignments are read by [`command`] itself, a
/// redirection by [`redirect`], a word by [`word_of`]; anything else inside them that the walk
/// rates — a substitution or expansion (`$`, `` ` ``), a redirection or process substitution
/// (`<`, `>`), a subscript or `[[ ]]` (`[`), a parse error or a missing token — needs one of
/// those characters or an error in the subtree (a redirection's own `<` or `>` does not count:
/// its process substitution needs a `(`). Plain commands and words are most of a compound
/// command's tree, and stepping through their pieces was a third of the walk.
fn holds_more(node: Node<'_>, kind: Kind, src: &str) -> bool {
    let triggers: &[u8] = match kind {
        Kind::Command => b"$`<>[",
        Kind::FileRedirect => b"$`([",
        _ if kind.is_word_level() => b"$`<>[",
        _ => return true,
    };
    node.has_error()
        || src
            .get(node.byte_range())
            .is_none_or(|t| t.bytes().any(|b| triggers.contains(&b)))
}

pub(super) fn source(node: Node<'_>, src: &str) -> String {
    src.get(node.byte_range()).unwrap_or("").to_owned()
}

/// The start of a node's text, for messages: never a copy of a large input.
pub(super) fn excerpt(node: Node<'_>, src: &str) -> String {
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

/// Rates `node` itself; the cursor is at `node` on entry and on return.
fn visit(node: Node<'_>, kind: Kind, src: &str, walk: &mut Walk<'_>, cursor: &mut TreeCursor<'_>) {
    if walk.posix
        && let Some(why) = bashisms::bash_only(node, kind, src)
    {
        walk.out.push(Finding::unresolved(&excerpt(node, src), why));
    }
    if let Some(why) = bashisms::splits_in_posix(node, kind, src) {
        walk.out.push(Finding::unresolved(&excerpt(node, src), why));
    }
    match kind {
        Kind::Command => command(node, src, walk, cursor),
        Kind::DeclarationCommand => declaration(node, src, walk),
        Kind::UnsetCommand => {
            let argv = words_of(node, src, walk);
            expand_command(argv, walk);
        }
        // Prefix assignments (`FOO=1 cmd`) and `export X=…` are checked by their parent.
        Kind::VariableAssignment
            if !node.parent().is_some_and(|p| {
                matches!(nodes::kind(p), Kind::Command | Kind::DeclarationCommand)
            }) =>
        {
            standalone_assignment(node, src, walk);
        }
        Kind::ForStatement => for_loop(node, src, walk),
        Kind::FileRedirect => redirect(node, src, walk),
        Kind::Error => walk.out.push(Finding::unresolved(
            &source(node, src),
            "the parser could not read this part",
        )),
        _ if node.is_missing() => walk.out.push(Finding::unresolved(
            node.kind(),
            "the command is incomplete",
        )),
        _ => {
            if let Some(why) = bashisms::evaluates_code(node, kind, src) {
                walk.out.push(Finding::unresolved(&excerpt(node, src), why));
            }
        }
    }
}

/// The words of a node's named children (and keywords), for declaration and unset commands.
fn words_of(node: Node<'_>, src: &str, walk: &Walk<'_>) -> Vec<Word> {
    let mut argv = Vec::new();
    for child in Children::of(node) {
        match child.kind() {
            "variable_assignment" | "variable_name" => argv.push(Word::literal(source(child, src))),
            _ if child.is_named() => argv.push(word_of(child, src, &walk.scope)),
            _ => argv.push(Word::literal(source(child, src))),
        }
    }
    argv
}

/// `export NAME=value …` with allowlisted names is harmless; `declare`, `local`, `readonly`,
/// `typeset` and any other `export` are rated as commands (no spec: ask).
fn declaration(node: Node<'_>, src: &str, walk: &mut Walk<'_>) {
    let argv = words_of(node, src, walk);
    let keyword = argv.first().map(|w| w.text.as_str());
    let mut cursor = node.walk();
    let all_allowed = keyword == Some("export")
        && argv.len() > 1
        && node.named_children(&mut cursor).all(|c| {
            c.kind() == "variable_assignment" && assignment_is_allowed_export(c, src, walk)
        });
    if !all_allowed {
        expand_command(argv, walk);
    }
}

fn assignment_is_allowed_export(node: Node<'_>, src: &str, walk: &Walk<'_>) -> bool {
    let name = node
        .child_by_field_name("name")
        .map(|n| source(n, src))
        .unwrap_or_default();
    let value = node
        .child_by_field_name("value")
        .map(|v| word_of(v, src, &walk.scope));
    match value {
        None => super::env::is_allowed(&name),
        Some(v) => !v.may_differ() && super::env::is_allowed_with(&name, &v.text),
    }
}

/// `x=1` on its own: harmless for a plain lower-case name or an allowlisted one; any other name
/// may be exported already and change what later commands run (`PATH=.`, `GIT_DIR=…`).
fn standalone_assignment(node: Node<'_>, src: &str, walk: &mut Walk<'_>) {
    let name = node
        .child_by_field_name("name")
        .map(|n| source(n, src))
        .unwrap_or_default();
    if !is_harmless_variable(&name) {
        walk.out.push(Finding::unresolved(
            &excerpt(node, src),
            "it assigns a variable that may be in the environment of later commands (only plain lower-case names and LANG, LC_*, TZ, … are harmless)",
        ));
    }
}

/// `for NAME in WORDS; do BODY; done`: NAME must be harmless; inside BODY, `"$NAME"` is one of
/// WORDS when they are literals or one pattern, and NAME is not assigned there.
fn for_loop(node: Node<'_>, src: &str, walk: &mut Walk<'_>) {
    let Some(var) = node.child_by_field_name("variable") else {
        return;
    };
    let name = source(var, src);
    if !is_harmless_variable(&name) {
        walk.out.push(Finding::unresolved(
            &excerpt(node, src),
            "the loop assigns a variable that may be in the environment of the commands it runs",
        ));
        return;
    }
    let Some(body) = node.child_by_field_name("body") else {
        return;
    };
    let body_text = src.get(body.byte_range()).unwrap_or("");
    if !only_expanded(body_text, &name) {
        return;
    }
    let mut cursor = node.walk();
    let values: Vec<Word> = node
        .children_by_field_name("value", &mut cursor)
        .map(|v| word_of(v, src, &walk.scope))
        .collect();
    let value = match values.as_slice() {
        [one] if !one.dynamic => one.clone(),
        many if !many.is_empty()
            && many.iter().all(|w| {
                !w.may_differ() && !w.text.contains([',', '{', '}', '*', '?', '[', '\\'])
            }) =>
        {
            let text = format!(
                "{{{}}}",
                many.iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            );
            Word {
                text,
                glob_at: Some(0),
                ..Word::default()
            }
        }
        _ => return,
    };
    walk.scope.bindings.push(Binding {
        name,
        value,
        body: body.byte_range(),
    });
}

/// Whether every mention of `name` in `body` is an expansion (`$name`, `${name}`).
fn only_expanded(body: &str, name: &str) -> bool {
    let b = body.as_bytes();
    let mut at = 0;
    while let Some(pos) = body[at..].find(name) {
        let start = at + pos;
        let end = start + name.len();
        let word_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let whole =
            (start == 0 || !word_char(b[start - 1])) && b.get(end).is_none_or(|&c| !word_char(c));
        if whole {
            let expanded = (start >= 1 && b[start - 1] == b'$')
                || (start >= 2 && &b[start - 2..start] == b"${" && b.get(end) == Some(&b'}'));
            if !expanded {
                return false;
            }
        }
        at = end;
    }
    true
}

/// A simple command: its words, read with the walk's cursor (at `node` on entry and on return),
/// and its prefix assignments.
fn command(node: Node<'_>, src: &str, walk: &mut Walk<'_>, cursor: &mut TreeCursor<'_>) {
    // Most commands are plain words: read them from the text, not node by node (same words).
    let plain = (!node.has_error())
        .then(|| src.get(node.byte_range()).and_then(plain_words))
        .flatten();
    let argv = match plain {
        Some(argv) => argv,
        None => command_words(node, src, walk, cursor),
    };
    if argv.is_empty() {
        return;
    }
    walk.in_loop = argv[0].text == "cd" && in_loop_or_function(node);
    walk.stdin_paths = if argv[0].text == "xargs" {
        super::wrappers::reads_paths_from(node, src)
    } else {
        None
    };
    expand_command(argv, walk);
    walk.in_loop = false;
    walk.stdin_paths = None;
}

/// The words of a simple command, node by node (the cursor is at `node` on entry and on
/// return), and its prefix assignments checked.
fn command_words(
    node: Node<'_>,
    src: &str,
    walk: &mut Walk<'_>,
    cursor: &mut TreeCursor<'_>,
) -> Vec<Word> {
    let count = node.child_count();
    let mut argv = Vec::with_capacity(count);
    let (name_field, argument_field) = nodes::word_fields();
    if count > 0 && cursor.goto_first_child() {
        for i in 0..count {
            if i > 0 && !cursor.goto_next_sibling() {
                break;
            }
            let child = cursor.node();
            let field = cursor.field_id();
            if field.is_some() && (field == name_field || field == argument_field) {
                argv.push(word_of(child, src, &walk.scope));
            } else if nodes::kind(child) == Kind::VariableAssignment {
                prefix_assignment(child, src, walk);
            }
        }
        cursor.goto_parent();
    }
    argv
}

/// `NAME=value cmd`: only allowlisted names with plain values.
fn prefix_assignment(node: Node<'_>, src: &str, walk: &mut Walk<'_>) {
    if assignment_is_allowed_export(node, src, walk) {
        return;
    }
    walk.out.push(Finding::unresolved(
        &excerpt(node, src),
        "it sets a variable for the command; only LANG, LC_*, TZ, NO_COLOR, TERM, RUST_BACKTRACE and a few others cannot change what runs (PYTHONPATH=. and NODE_PATH=. pass: the directory the command runs in)",
    ));
}

/// Whether `node` runs inside a loop or a function body, where a `cd` may apply to commands
/// written before it.
fn in_loop_or_function(node: Node<'_>) -> bool {
    let mut n = node.parent();
    while let Some(p) = n {
        if matches!(
            p.kind(),
            "for_statement" | "c_style_for_statement" | "while_statement" | "function_definition"
        ) {
            return true;
        }
        n = p.parent();
    }
    false
}

fn redirect(node: Node<'_>, src: &str, walk: &mut Walk<'_>) {
    let Some(dest) = node.child_by_field_name("destination") else {
        return;
    };
    let mut op = "";
    for child in Children::of(node) {
        if !child.is_named() {
            op = src.get(child.byte_range()).unwrap_or("");
        }
    }
    let target = word_of(dest, src, &walk.scope);
    // `2>&1`, `>&2`, `<&0`, `>&-`: duplicating or closing a descriptor opens no file.
    if (op == ">&" || op == "<&")
        && (target.text.chars().all(|c| c.is_ascii_digit()) || target.text == "-")
    {
        return;
    }
    let write = op != "<";
    walk.out
        .push(Finding::Redirect(RedirectUse { target, write }));
}
