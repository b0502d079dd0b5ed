//! What an approval shows, the same for the REPL's `allow? [y/a/n]` and for `agent run`'s
//! prompt on the terminal: a person must read exactly what would run, and nothing the model
//! wrote may pass for the prompt itself.
//!
//! So the title is the client's own words ([`title`]: `? approve` and the tool's name, one
//! line); everything the model chose — the command, a path, the raw arguments, the reason that
//! quotes them — goes through [`crate::inert::exact`] (anything not printable and visible is
//! escaped, a newline shows as `⏎`); a command is shown whole, one numbered line per line of
//! it ([`numbered`]); and every screen line of model text starts with a gutter of ours, because
//! we wrap it ourselves to the terminal's width: a line the terminal wrapped would start at
//! column 0 with whatever the model padded up to the edge, say `? approve bash git log`.

use crate::inert::exact;
use protocol::event::ToolCall;
use std::os::fd::AsFd;

/// The width assumed when the terminal does not say, and the least ever used.
const DEFAULT_WIDTH: usize = 80;
const MIN_WIDTH: usize = 40;
/// Characters of the tool's name shown in the title at most.
const NAME_CHARS: usize = 40;

/// The columns of the terminal at `fd`; [`DEFAULT_WIDTH`] when it is not one.
pub fn columns(fd: impl AsFd) -> usize {
    use std::os::fd::AsRawFd;
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct we own; the fd is borrowed for the
    // call and an fd that is not a terminal makes it fail with ENOTTY, touching nothing.
    let rc = unsafe { libc::ioctl(fd.as_fd().as_raw_fd(), libc::TIOCGWINSZ, &mut size) };
    if rc != 0 || size.ws_col == 0 {
        return DEFAULT_WIDTH;
    }
    usize::from(size.ws_col).max(MIN_WIDTH)
}

/// What the call acts on, whole and unescaped: bash's command, a file tool's path (and
/// pattern), else the raw arguments.
pub fn subject(call: &ToolCall) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    let text = |key: &str| args.get(key).and_then(|v| v.as_str());
    match (text("command"), text("pattern"), text("path")) {
        (Some(command), _, _) => command.to_owned(),
        (None, Some(pattern), path) => format!("{pattern} {}", path.unwrap_or("")),
        (None, None, Some(path)) => path.to_owned(),
        _ => call.arguments.clone(),
    }
}

/// The prompt's title: `? approve` and the tool's name, escaped and cut — the only line of an
/// approval that starts with `?`.
pub fn title(tool: &str) -> String {
    let name = exact(tool);
    let mut short: String = name.chars().take(NAME_CHARS).collect();
    if name.chars().count() > NAME_CHARS {
        short.push('…');
    }
    format!("? approve {short}")
}

/// `text` whole, one numbered line per line of it (`  12 │ …`), each [`exact`] and wrapped to
/// `width` columns with a gutter of ours on the lines it goes on (`     ┆ …`).
pub fn numbered(text: &str, width: usize) -> Vec<String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let digits = lines.len().to_string().len();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let first = format!("  {:>digits$} │ ", i + 1);
        let rest = format!("  {:>digits$} ┆ ", "");
        out.extend(wrapped(&first, &rest, &exact(line), width));
    }
    out
}

/// A field of the prompt: `label` then `text` [`exact`], wrapped to `width` with a gutter of
/// ours (`    ┆ …`) on the lines it goes on.
pub fn field(label: &str, text: &str, width: usize) -> Vec<String> {
    wrapped(label, "    ┆ ", &exact(text), width)
}

/// `text` (one line, already escaped) after `first`, cut into pieces that fit in `width`
/// columns, each later piece after `rest`. A character outside ASCII is counted two columns,
/// the most a terminal gives one, so that the terminal never wraps a line of ours itself.
fn wrapped(first: &str, rest: &str, text: &str, width: usize) -> Vec<String> {
    let cells = |c: char| if c.is_ascii() { 1 } else { 2 };
    let mut out = Vec::new();
    let mut line = first.to_owned();
    let mut used = first.chars().map(cells).sum::<usize>();
    let mut empty = true;
    for c in text.chars() {
        if used + cells(c) > width && !empty {
            out.push(std::mem::replace(&mut line, rest.to_owned()));
            used = rest.chars().map(cells).sum();
        }
        line.push(c);
        used += cells(c);
        empty = false;
    }
    out.push(line);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ids::ToolCallId;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: ToolCallId::generated(0),
            name: name.into(),
            arguments: args.to_string(),
        }
    }

    #[test]
    fn a_forged_title_after_newlines_is_a_numbered_line_of_the_command() {
        let command = format!("{}? approve bash git log --oneline -5", "\n".repeat(45));
        let shown = numbered(&command, 200);
        assert_eq!(shown.len(), 46, "one numbered line per line: {shown:#?}");
        assert_eq!(shown[0], "   1 │ ");
        assert_eq!(shown[45], "  46 │ ? approve bash git log --oneline -5");
        assert!(shown.iter().all(|l| l.starts_with("  ")), "{shown:#?}");
    }

    #[test]
    fn controls_and_invisible_characters_are_shown_escaped_on_one_line() {
        let cases = [
            ("rm\u{200b} -rf /", r"rm\u{200b} -rf /"),
            ("a\rb\x1b[2Kc", r"a\x0db\x1b[2Kc"),
            ("ls \u{202e}txt.sh", r"ls \u{202e}txt.sh"),
            ("tag\u{e0041}", r"tag\u{e0041}"),
            ("nb\u{a0}sp", r"nb\u{a0}sp"),
            ("fill\u{3164}er", r"fill\u{3164}er"),
            ("vs\u{fe0f}", r"vs\u{fe0f}"),
            ("tab\there", r"tab\x09here"),
            ("a⏎b", r"a\u{23ce}b"),
            ("soft\u{ad}hyphen", r"soft\u{ad}hyphen"),
            ("private\u{e000}", r"private\u{e000}"),
        ];
        for (raw, shown) in cases {
            assert_eq!(numbered(raw, 200), [format!("  1 │ {shown}")], "{raw:?}");
        }
        assert_eq!(field("  why: ", "a\nb", 200), ["  why: a⏎b"]);
        // Text that is plain stays as it is, in any script.
        let plain = "grep -n 'ünïcödé 漢字 é' src/*.rs | head -5";
        assert_eq!(numbered(plain, 200), [format!("  1 │ {plain}")]);
    }

    #[test]
    fn a_long_line_is_wrapped_by_us_and_each_piece_starts_with_our_gutter() {
        // Padded so that a terminal 80 wide would start a line with the forged title.
        let command = format!("echo {}? approve bash git log", " ".repeat(69));
        let shown = numbered(&command, 80);
        assert!(shown.len() > 1, "{shown:#?}");
        assert!(shown.iter().all(|l| l.chars().count() <= 80), "{shown:#?}");
        assert!(shown[0].starts_with("  1 │ echo"), "{shown:#?}");
        assert!(
            shown[1..].iter().all(|l| l.starts_with("    ┆ ")),
            "{shown:#?}"
        );
        assert_eq!(
            shown.concat().replace("    ┆ ", "").replace("  1 │ ", ""),
            command
        );
        let cells = |l: &String| {
            l.chars()
                .map(|c| if c.is_ascii() { 1 } else { 2 })
                .sum::<usize>()
        };
        let wide = numbered(&"漢".repeat(100), 80);
        assert!(
            wide.len() > 2 && wide.iter().all(|l| cells(l) <= 80),
            "{wide:#?}"
        );
    }

    #[test]
    fn the_title_is_ours_with_the_tool_name_escaped_and_cut() {
        assert_eq!(title("bash"), "? approve bash");
        assert_eq!(title("x\ny"), "? approve x⏎y");
        assert_eq!(title(&"n".repeat(100)).chars().count(), 10 + NAME_CHARS + 1);
    }

    #[test]
    fn the_subject_is_what_the_call_acts_on_whole() {
        let bash = call("bash", serde_json::json!({"command": "\n  ls\n"}));
        assert_eq!(subject(&bash), "\n  ls\n", "not trimmed");
        let grep = call("grep", serde_json::json!({"pattern": "fn", "path": "src"}));
        assert_eq!(subject(&grep), "fn src");
        let read = call("read_file", serde_json::json!({"path": "a\u{200b}.py"}));
        assert_eq!(subject(&read), "a\u{200b}.py");
        let other = ToolCall {
            id: ToolCallId::generated(0),
            name: "x".into(),
            arguments: "{broken".into(),
        };
        assert_eq!(subject(&other), "{broken");
    }
}
