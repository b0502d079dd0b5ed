//! Reading the syntax tree cheaply. Two costs of tree-sitter's API dominate a walk once the text
//! is parsed, and both are avoidable without changing what is read:
//!
//! - `Node::kind()` looks the name up, measures the C string and checks it is UTF-8 on every
//!   call; the walk instead reads `kind_id()` (a table lookup in C) and maps it, through a table
//!   built once from the same names, to a [`Kind`].
//! - Asking a cursor for the sibling after the last child makes tree-sitter search the rest of
//!   the parent's hidden nodes before it answers no, which costs as much as a real step; a node
//!   knows how many (visible) children it has, so [`Children`] stops after the last one.

use std::sync::OnceLock;
use tree_sitter::{Node, TreeCursor};

/// The node kinds the analysis tells apart; every other kind is [`Kind::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    AnsiCString,
    ArithmeticExpansion,
    Array,
    BraceExpression,
    CStyleForStatement,
    Command,
    CommandName,
    CommandSubstitution,
    CompoundStatement,
    Concatenation,
    DeclarationCommand,
    Error,
    Expansion,
    FileRedirect,
    ForStatement,
    FunctionDefinition,
    HerestringRedirect,
    Number,
    Pipeline,
    ProcessSubstitution,
    RawString,
    SimpleExpansion,
    String,
    StringContent,
    Subscript,
    TestCommand,
    TranslatedString,
    UnsetCommand,
    VariableAssignment,
    WhileStatement,
    Word,
    Other,
}

impl Kind {
    /// The kind a node of this name is: the very names the walk used to compare `kind()` with.
    fn from_name(name: &str) -> Self {
        match name {
            "ansi_c_string" => Kind::AnsiCString,
            "arithmetic_expansion" => Kind::ArithmeticExpansion,
            "array" => Kind::Array,
            "brace_expression" => Kind::BraceExpression,
            "c_style_for_statement" => Kind::CStyleForStatement,
            "command" => Kind::Command,
            "command_name" => Kind::CommandName,
            "command_substitution" => Kind::CommandSubstitution,
            "compound_statement" => Kind::CompoundStatement,
            "concatenation" => Kind::Concatenation,
            "declaration_command" => Kind::DeclarationCommand,
            "ERROR" => Kind::Error,
            "expansion" => Kind::Expansion,
            "file_redirect" => Kind::FileRedirect,
            "for_statement" => Kind::ForStatement,
            "function_definition" => Kind::FunctionDefinition,
            "herestring_redirect" => Kind::HerestringRedirect,
            "number" => Kind::Number,
            "pipeline" => Kind::Pipeline,
            "process_substitution" => Kind::ProcessSubstitution,
            "raw_string" => Kind::RawString,
            "simple_expansion" => Kind::SimpleExpansion,
            "string" => Kind::String,
            "string_content" => Kind::StringContent,
            "subscript" => Kind::Subscript,
            "test_command" => Kind::TestCommand,
            "translated_string" => Kind::TranslatedString,
            "unset_command" => Kind::UnsetCommand,
            "variable_assignment" => Kind::VariableAssignment,
            "while_statement" => Kind::WhileStatement,
            "word" => Kind::Word,
            _ => Kind::Other,
        }
    }

    /// Whether a node of this kind is one word (or a piece of one): all the walk rates inside it
    /// is a substitution or an expansion, so it needs a `$`, `` ` ``, `<`, `>` or `[`.
    pub(crate) fn is_word_level(self) -> bool {
        matches!(
            self,
            Kind::CommandName
                | Kind::Word
                | Kind::Number
                | Kind::String
                | Kind::RawString
                | Kind::Concatenation
                | Kind::StringContent
        )
    }
}

/// What is read from the grammar once: the kind of every symbol id, and the field ids compared.
#[derive(Debug)]
struct Grammar {
    kinds: Vec<Kind>,
    name_field: Option<std::num::NonZeroU16>,
    argument_field: Option<std::num::NonZeroU16>,
}

fn grammar() -> &'static Grammar {
    static GRAMMAR: OnceLock<Grammar> = OnceLock::new();
    GRAMMAR.get_or_init(|| {
        let language: tree_sitter::Language = tree_sitter_bash::LANGUAGE.into();
        let count = u16::try_from(language.node_kind_count()).unwrap_or(u16::MAX);
        let kinds = (0..count)
            .map(|id| {
                language
                    .node_kind_for_id(id)
                    .map_or(Kind::Other, Kind::from_name)
            })
            .collect();
        Grammar {
            kinds,
            name_field: language.field_id_for_name("name"),
            argument_field: language.field_id_for_name("argument"),
        }
    })
}

/// The kind of `node`: what `Kind::from_name(node.kind())` says, by id. Ids past the table (the
/// `ERROR` symbol is `u16::MAX`) are read by name.
pub(crate) fn kind(node: Node<'_>) -> Kind {
    match grammar().kinds.get(usize::from(node.kind_id())) {
        Some(&kind) => kind,
        None => Kind::from_name(node.kind()),
    }
}

/// The ids of the `name` and `argument` fields of a command.
pub(crate) fn word_fields() -> (Option<std::num::NonZeroU16>, Option<std::num::NonZeroU16>) {
    let g = grammar();
    (g.name_field, g.argument_field)
}

/// The children of a node, in order, stopping after the last one (see the module's comment).
pub(crate) struct Children<'t> {
    cursor: TreeCursor<'t>,
    left: usize,
    started: bool,
}

impl<'t> Children<'t> {
    /// Every child of `node`, named or not.
    pub(crate) fn of(node: Node<'t>) -> Self {
        Self {
            left: node.child_count(),
            cursor: node.walk(),
            started: false,
        }
    }
}

impl std::fmt::Debug for Children<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Children")
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}

impl<'t> Iterator for Children<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        if self.left == 0 {
            return None;
        }
        let moved = if self.started {
            self.cursor.goto_next_sibling()
        } else {
            self.started = true;
            self.cursor.goto_first_child()
        };
        if !moved {
            self.left = 0;
            return None;
        }
        self.left -= 1;
        Some(self.cursor.node())
    }
}

/// Steps `cursor` to the node after the current one in a pre-order walk that does not enter the
/// current node, climbing as needed; `left` holds, per level entered, how many siblings remain
/// after the cursor's node. `false` when the walk is over.
pub(crate) fn step_over(cursor: &mut TreeCursor<'_>, left: &mut Vec<usize>) -> bool {
    loop {
        match left.last_mut() {
            None => return false,
            Some(0) => {
                left.pop();
                if !cursor.goto_parent() {
                    return false;
                }
            }
            Some(n) => {
                *n -= 1;
                if cursor.goto_next_sibling() {
                    return true;
                }
                // Fewer siblings than counted (never seen): climb as the plain walk would.
                *n = 0;
            }
        }
    }
}

/// Steps `cursor` into the first child of its node; `false` (and no move) when it has none.
pub(crate) fn step_into(cursor: &mut TreeCursor<'_>, left: &mut Vec<usize>) -> bool {
    let count = cursor.node().child_count();
    if count == 0 || !cursor.goto_first_child() {
        return false;
    }
    left.push(count - 1);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Option<tree_sitter::Tree> {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .ok()?;
        parser.parse(text, None)
    }

    /// Every command of the test tables, as text.
    fn corpus() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        let mut out = Vec::new();
        for file in [
            "cases.txt",
            "bypasses.txt",
            "harmless.txt",
            "issue10.txt",
            "adversarial.txt",
            "agent-harmless.txt",
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap_or_default();
            out.extend(
                text.lines()
                    .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                    .map(|l| l.replace('⏎', "\n")),
            );
        }
        out.push(
            "for (( i=0; i<3; i++ )); do a[$i]=$(( i * 2 )); done; [[ -v x ]] && f() { :; }".into(),
        );
        out.push("echo {1..3} $\"hi\"; unset x".into());
        for plain in [
            "tail -20 -n5 a,b c:d e@f +g %h 1.5 2abc 0x1f -- ./x_y/z .. / // - x-y 1:2 @ + % , _",
            "2abc -x",
            "123 4",
            "% x",
            "@ y",
            "+x y",
            "- z",
            "-- z",
            ": z",
            ". x",
            "x\ty  \t z",
            "a:b:c%d+e,f@g",
        ] {
            out.push(plain.into());
            out.push(format!("ls; {plain} && cat x | {plain}"));
        }
        out.push("echo $'\\x41' $\"t\" <<< x &> f |& cat <(ls) {a,b} ${x[1]}; while :; do :; done; ls \"".into());
        out
    }

    #[test]
    fn kinds_by_id_are_kinds_by_name() {
        let texts = corpus();
        assert!(texts.len() > 1000, "the tables were not found");
        let mut seen = std::collections::HashSet::new();
        for text in &texts {
            let Some(tree) = parse(text) else { continue };
            let mut cursor = tree.walk();
            'walk: loop {
                let node = cursor.node();
                assert_eq!(kind(node), Kind::from_name(node.kind()), "{text:?}");
                seen.insert(kind(node));
                if cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break 'walk;
                    }
                }
            }
        }
        assert!(seen.len() >= 30, "{seen:?}");
        // Every kind has a symbol in the grammar (a misspelt name would never match).
        let table: std::collections::HashSet<Kind> = grammar().kinds.iter().copied().collect();
        assert_eq!(table.len() + 1, 32, "ERROR is past the table: {table:?}");
    }

    #[test]
    fn plain_commands_read_from_their_text_have_the_words_of_their_nodes() {
        let scope = crate::shell::words::Scope::default();
        let (name, argument) = word_fields();
        let mut plain = 0;
        for text in corpus() {
            let Some(tree) = parse(&text) else { continue };
            let mut cursor = tree.walk();
            'walk: loop {
                let node = cursor.node();
                if kind(node) == Kind::Command
                    && !node.has_error()
                    && let Some(fast) = text
                        .get(node.byte_range())
                        .and_then(crate::shell::words::plain_words)
                {
                    let mut c = node.walk();
                    let mut slow = Vec::new();
                    let mut others = 0;
                    if c.goto_first_child() {
                        loop {
                            let field = c.field_id();
                            if field.is_some() && (field == name || field == argument) {
                                slow.push(crate::shell::words::word_of(c.node(), &text, &scope));
                            } else {
                                others += 1;
                            }
                            if !c.goto_next_sibling() {
                                break;
                            }
                        }
                    }
                    assert_eq!(fast, slow, "{text:?}");
                    assert_eq!(others, 0, "{text:?}");
                    plain += 1;
                }
                if cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break 'walk;
                    }
                }
            }
        }
        assert!(plain > 1000, "only {plain} plain commands");
    }

    #[test]
    fn counted_steps_visit_what_the_plain_walk_visits() {
        for text in corpus() {
            let Some(tree) = parse(&text) else { continue };
            let mut plain = Vec::new();
            let mut cursor = tree.walk();
            'walk: loop {
                let node = cursor.node();
                plain.push(node.id());
                let mut c = node.walk();
                let listed: Vec<usize> = node.children(&mut c).map(|n| n.id()).collect();
                let ours: Vec<usize> = Children::of(node).map(|n| n.id()).collect();
                assert_eq!(listed, ours, "{text:?}");
                if cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break 'walk;
                    }
                }
            }
            let mut counted = Vec::new();
            let mut cursor = tree.walk();
            let mut left = Vec::new();
            loop {
                counted.push(cursor.node().id());
                if !step_into(&mut cursor, &mut left) && !step_over(&mut cursor, &mut left) {
                    break;
                }
            }
            assert_eq!(plain, counted, "{text:?}");
        }
    }
}
