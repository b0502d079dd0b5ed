use super::*;

fn outside(text: &str) -> Option<Construct> {
    check(text).err().map(|o| o.construct)
}

#[test]
fn ordinary_commands_are_inside() {
    for text in [
        "ls -la",
        "grep -rn \"fn main\" src | sort | uniq -c > /dev/null",
        "echo \"${HOME:-/tmp}/x\" ${#x} ${x%.rs} ${x//a/b} ${@:2} ${x: -3} ${a[0]} ${x:-$y}",
        "echo $'a\\tb' $\"t\" 'a\u{0b}b' \"é\" ü x$ \"y$\"",
        "cat <<EOF\nhi $USER $(date)\nEOF\necho done",
        "cat <<'EOF' | sed 's/a/b/'\n`x` $(y) \\\\ z\nEOF",
        "cat <<-\"EOF\"\n\tx\n\tEOF",
        "echo $(( 1 + 2 )); for ((i=0;i<3;i++)); do :; done",
        "echo \"built `date`\" # a comment",
        "case x in a) ls;; esac",
        "ls \\\n -la",
        "echo \"$(echo \"a b\")\" <(ls) >(cat)",
    ] {
        assert_eq!(check(text), Ok(()), "{text:?}");
    }
}

#[test]
fn the_issues_examples_are_outside_and_named() {
    let cases: &[(&str, Construct, usize)] = &[
        (
            "ls -la \r# || rm -rf ~/project",
            Construct::Byte(Context::Unquoted),
            7,
        ),
        (
            "echo ok \\\r\nrm -rf ~/project",
            Construct::Byte(Context::Unquoted),
            9,
        ),
        (
            "cat <<E\"O\"F \nhi\nEOF\ncurl x|sh\nE\"O\"F",
            Construct::HeredocDelimiter,
            6,
        ),
        ("cat <<$'EOF'\nEOF\n", Construct::HeredocDelimiter, 6),
        ("cat <<E'O'F\nEOF\n", Construct::HeredocDelimiter, 6),
        (
            "cat <<EOF\n`rm -rf ~/p`\nEOF",
            Construct::HeredocBackquote,
            10,
        ),
        (
            "echo \"${HOME#$(rm -rf ~/project)}\"",
            Construct::ParamOperand,
            13,
        ),
        ("echo ${y:-`id`}", Construct::ParamOperand, 10),
        ("echo ${HOME,$(id)}", Construct::ParamOperand, 12),
    ];
    for &(text, construct, at) in cases {
        assert_eq!(check(text), Err(Outside { at, construct }), "{text:?}");
    }
}

#[test]
fn other_corners_are_outside() {
    for text in [
        "echo a\u{0c}b",
        "echo \"\r\"",
        "echo $'\r'",
        "echo a\0b",
        "echo ${!x}",
        "echo ${x@P}",
        "echo ${x[i]}",
        "echo \"$'x'\"",
        "echo $/",
        "echo `echo '`'`",
        "echo $(ls # )\n)",
        "echo $(case x in x) ls;; esac)",
        "cat <<EOF; echo \"a\nb\"\nEOF\nEOF",
        "cat <<EOF\na",
        "cat <<EOF\na\\\nEOF",
        "((ls); echo)",
        "echo $((`id`))",
        "echo 'x",
        "echo x\\",
    ] {
        assert!(outside(text).is_some(), "{text:?}");
    }
}

#[test]
fn reasons_escape_what_they_quote() {
    let text = "ls -la \r# || rm -rf ~/project";
    let o = check(text).unwrap_err();
    let (what, why) = explain(text, &o);
    assert_eq!(what, "\\r# || rm -rf ~/project");
    assert!(why.contains("byte 7"), "{why}");
    assert_eq!(escape("a\u{202e}b\x1b", 10), "a\\u{202e}b\\x1b");
}

#[test]
fn what_the_differential_check_found_is_outside() {
    for (text, construct) in [
        ("printf x a 0# echo q", Construct::HashAfterNumber),
        ("echo $((1))#x", Construct::HashAfterNumber),
        ("echo a\\\tb", Construct::EscapedTab),
        ("cat <<'EOF'\na\\\nb\nEOF", Construct::HeredocContinuation),
        ("cat <<EOF\nEOF'\nEOF", Construct::HeredocDelimiterPrefix),
        ("echo ${x#a]b}", Construct::ParamOperand),
        ("echo `echo a(b`", Construct::Unterminated("( … )")),
    ] {
        assert_eq!(outside(text), Some(construct), "{text:?}");
    }
    // A `#` elsewhere inside a word is text to both.
    assert_eq!(check("sed s#a#b# x; echo a#b ${#x} $#"), Ok(()));
}
