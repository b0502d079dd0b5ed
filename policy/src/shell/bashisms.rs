//! Bash's corners that evaluate code, and what only bash reads the way we do.
//!
//! Bash evaluates arithmetic in `$(( ))`, `(( ))`, `for (( ))`, array subscripts, substring
//! offsets and `[[ … -eq … ]]` operands, and a variable's value is itself evaluated there: a value
//! `a[$(cmd)]` runs `cmd`. `${!name}` (indirection) and `${name@P}` (prompt expansion) evaluate
//! values too, and `test -v 'a[$(cmd)]'` evaluates the subscript of the name it checks.

use super::nodes::Kind;
use crate::specs::scripts::{is_harmless_variable, is_identifier};
use tree_sitter::Node;

fn text<'a>(node: Node<'_>, src: &'a str) -> &'a str {
    src.get(node.byte_range()).unwrap_or("")
}

/// Why `node` (not a simple command) can run code hidden in a value, if it can.
pub(crate) fn evaluates_code(node: Node<'_>, kind: Kind, src: &str) -> Option<&'static str> {
    match kind {
        Kind::ArithmeticExpansion if mentions_names(node) => {
            Some("arithmetic on variables can run commands hidden in their values")
        }
        Kind::CompoundStatement if text(node, src).starts_with("((") && mentions_names(node) => {
            Some("arithmetic on variables can run commands hidden in their values")
        }
        Kind::CStyleForStatement if mentions_names(node) => {
            Some("arithmetic on variables can run commands hidden in their values")
        }
        Kind::TestCommand => test_evaluates(node, src),
        Kind::Subscript => {
            let index = node
                .child_by_field_name("index")
                .map_or("", |i| text(i, src));
            (!(matches!(index, "@" | "*") || index.bytes().all(|b| b.is_ascii_digit())))
                .then_some("an array subscript is evaluated as arithmetic and can run commands")
        }
        Kind::Expansion => expansion_evaluates(text(node, src)),
        _ => None,
    }
}

/// `[[ … -eq … ]]` evaluates its operands as arithmetic (`[` and `test` do not); `-v` and `-R`
/// evaluate a subscript in the name they check.
fn test_evaluates(node: Node<'_>, src: &str) -> Option<&'static str> {
    let double = text(node, src).starts_with("[[");
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "test_operator" {
            let op = text(n, src);
            if double && matches!(op, "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge") {
                return Some(
                    "[[ ]] arithmetic comparisons can run commands hidden in variable values",
                );
            }
            if matches!(op, "-v" | "-R") {
                let operand = n.next_named_sibling().map_or("", |o| text(o, src));
                if !is_identifier(operand) {
                    return Some("`-v` evaluates a subscript in the name it checks");
                }
            }
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    None
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

/// `${…}` forms that only substitute text pass: `${x}`, `${#x}`, `${x:-w}`, `${x#p}`, `${x/p/r}`,
/// `${x^^}`, `${x:1:2}` with literal numbers. Indirection, `@` transformations, substring
/// offsets with names and assignments to names that matter do not.
fn expansion_evaluates(t: &str) -> Option<&'static str> {
    let Some(inner) = t.strip_prefix("${").and_then(|r| r.strip_suffix('}')) else {
        return Some("an expansion the policy cannot read");
    };
    if inner.starts_with('!') {
        return Some("`${!name}` evaluates the value of a variable as a name (and its subscript)");
    }
    let inner = inner
        .strip_prefix('#')
        .filter(|r| !r.is_empty())
        .unwrap_or(inner);
    let name_len = if inner.starts_with(|c: char| c.is_ascii_digit()) {
        inner.bytes().take_while(u8::is_ascii_digit).count()
    } else if inner.starts_with(['@', '*', '#', '?', '$', '-']) {
        1
    } else {
        inner
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count()
    };
    let (name, rest) = inner.split_at(name_len.min(inner.len()));
    if name.is_empty() {
        return Some("an expansion the policy cannot read");
    }
    if rest.is_empty() {
        return None;
    }
    let plain_ops = [":-", ":+", "-", "+", "#", "%", "/", "^", ",", ":?", "?"];
    if rest.starts_with('@') {
        return Some("`${name@…}` transforms a value, and `@P` runs the commands in it");
    }
    if rest.starts_with(":=") || rest.starts_with('=') {
        return (!is_harmless_variable(name))
            .then_some("`${name:=…}` assigns a variable that may be in the environment");
    }
    if plain_ops.iter().any(|op| rest.starts_with(op)) {
        return None;
    }
    if let Some(offsets) = rest.strip_prefix(':') {
        let literal = offsets.split(':').all(|part| {
            let part = part.trim().trim_start_matches('-').trim();
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit())
        });
        return (!literal)
            .then_some("a substring offset is evaluated as arithmetic and can run commands");
    }
    Some("an expansion the policy cannot read")
}

/// Why `node` reads so differently in a POSIX shell that a worker not running bash would run
/// something else, if it does: `$'\''…'` (dash ends the quote at `\'`) and `<`/`>` in `[[ ]]`
/// (a redirection in dash). Rare in real commands, and asked whatever the shell.
pub(crate) fn splits_in_posix(node: Node<'_>, kind: Kind, src: &str) -> Option<&'static str> {
    if !matches!(kind, Kind::AnsiCString | Kind::TestCommand) {
        return None;
    }
    let t = text(node, src);
    match kind {
        Kind::AnsiCString if t.contains("\\'") => Some(
            "`$'…\\'…'` ends at a different quote in sh than in bash; the policy does not rely on which shell runs it",
        ),
        Kind::TestCommand if t.starts_with("[[") && (t.contains(" > ") || t.contains(" < ")) => {
            Some(
                "`<` and `>` in `[[ ]]` are redirections in sh; the policy does not rely on which shell runs it",
            )
        }
        _ => None,
    }
}

/// Why `node` means something else, or nothing, to a POSIX shell, if it does (for a worker
/// without bash: every such construct asks).
pub(crate) fn bash_only(node: Node<'_>, kind: Kind, src: &str) -> Option<&'static str> {
    let t = text(node, src);
    let why = "a bash construct, and the shell that runs the command is not bash";
    match kind {
        Kind::AnsiCString
        | Kind::TranslatedString
        | Kind::ProcessSubstitution
        | Kind::HerestringRedirect
        | Kind::Array
        | Kind::Subscript
        | Kind::CStyleForStatement
        | Kind::BraceExpression => Some(why),
        Kind::TestCommand if t.starts_with("[[") => Some(why),
        Kind::CompoundStatement if t.starts_with("((") => Some(why),
        Kind::FunctionDefinition if t.starts_with("function") => Some(why),
        Kind::Expansion if t.contains(['@', '/', '^', ',', '!']) || t.contains(":0") => Some(why),
        Kind::FileRedirect if t.starts_with("&>") => Some(why),
        Kind::Pipeline if t.contains("|&") => Some(why),
        Kind::Word | Kind::Concatenation if t.starts_with('{') && t.contains(',') => Some(why),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansions_that_only_substitute_pass() {
        for ok in [
            "${x}", "${#x}", "${x:-a}", "${x#*/}", "${x%%.*}", "${x/a/b}", "${x^^}", "${1}",
            "${@}", "${#}", "${x:1:2}", "${x: -3}", "${f:=1}",
        ] {
            assert_eq!(expansion_evaluates(ok), None, "{ok}");
        }
        for bad in [
            "${!x}",
            "${x@P}",
            "${x@Q}",
            "${x:o}",
            "${x:1:n}",
            "${PATH:=/tmp}",
            "${x[$(id)]}",
        ] {
            assert!(expansion_evaluates(bad).is_some(), "{bad}");
        }
    }
}
