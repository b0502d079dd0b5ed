//! Terminal output is inert: escape sequences in tool output or model text (an OSC 52 clipboard
//! write, cursor movement that erases the line showing what ran, a C1 CSI, a bidi override) are
//! printed escaped by `agentd sandbox` and by `agent run` in text mode, as root and as an
//! unprivileged user, while plain text, newlines and tabs pass unchanged; and JSON output keeps
//! the exact bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use agentd_e2e::both;
use agentd_e2e::mock_llm::{MockLlm, Reply, openai};
use agentd_e2e::{As, Dir, agent_against, sandbox};
use serde_json::{Value, json};

/// Bytes that act on a terminal, as `printf` writes them, and how they must be shown.
const ATTACKS: [(&str, &str); 7] = [
    // OSC 52: set the clipboard to "hello".
    (r"\033]52;c;aGVsbG8=\a", r"\x1b]52;c;aGVsbG8=\x07"),
    // Back to the start of the line, erase it, move up one line and erase that.
    (
        r"safe\r\033[2K\033[1A\033[2Kevil",
        r"safe\x0d\x1b[2K\x1b[1A\x1b[2Kevil",
    ),
    // U+009B, CSI on some terminals, in UTF-8.
    (r"\302\23331m", r"\u{9b}31m"),
    // U+202E RIGHT-TO-LEFT OVERRIDE.
    (r"ls \342\200\256txt.sh", r"ls \u{202e}txt.sh"),
    // Characters that show as nothing: a zero-width space and a byte-order mark inside a
    // command, and tag characters (an invisible "AB").
    (r"rm\342\200\213 -rf\357\273\277", r"rm\u{200b} -rf\u{feff}"),
    (
        r"ok\363\240\201\201\363\240\201\202",
        r"ok\u{e0041}\u{e0042}",
    ),
    // Backspaces over text, and a bell.
    (
        r"rm -rf x\b\b\b\b\b\b\b\bls\a",
        r"rm -rf x\x08\x08\x08\x08\x08\x08\x08\x08ls\x07",
    ),
];

/// What no inert output may contain: C0 controls but newline and tab, DEL, C1, bidi overrides,
/// and the invisible characters the attacks use.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| {
            matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200b}' | '\u{feff}'
                | '\u{e0000}'..='\u{e007f}')
        })
        .collect()
}

both!(sandbox_prints_control_sequences_escaped, |who| {
    let ws = Dir::new("term-ws", who);
    for (printf, shown) in ATTACKS {
        let run = sandbox(who, &ws.0, &[], &format!("printf '{printf}\\n'"), &[]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, format!("{shown}\n"), "{printf}");
        assert!(raw_controls(&run.stdout).is_empty(), "{:?}", run.stdout);
    }
    // Sanity, in the same set-up: plain text, tabs and newlines come through exactly.
    let run = sandbox(who, &ws.0, &[], r"printf 'a\tb\nünï 漢字\n'", &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "a\tb\nünï 漢字\n");
});

/// Runs `agent run` as `who` on a model that calls bash with `command`, then answers `answer`.
fn agent_run(who: As, command: &str, answer: &str, format: &str) -> (String, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let args = json!({ "command": command }).to_string();
    let mock = rt.block_on(MockLlm::start(vec![
        Reply::stream(vec![
            openai::tool(0, Some("call_1"), Some("bash"), &args),
            openai::finish("tool_calls"),
        ]),
        Reply::stream(vec![openai::text(answer), openai::finish("stop")]),
    ]));
    let ws = Dir::new("term-run-ws", who);
    let home = Dir::new("term-run-home", who);
    let config = home.0.join("config.toml");
    std::fs::write(&config, "").unwrap();
    let out = agent_against(who, &home.0, &mock.url())
        .args(["run", "-p", "go", "--dangerously-skip-permissions"])
        .args(["--output-format", format, "--workspace"])
        .arg(&ws.0)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The model's answer: an OSC 52 write and a line erase around innocent text.
const ANSWER: &str = "All good.\x1b]52;c;cm0gLXJmIH4=\x07\r\x1b[2KDone\u{9b}1A\u{202e}";
const ANSWER_SHOWN: &str = r"All good.\x1b]52;c;cm0gLXJmIH4=\x07\x0d\x1b[2KDone\u{9b}1A\u{202e}";

both!(
    agent_run_text_mode_prints_model_text_and_tool_output_escaped,
    |who| {
        let (stdout, stderr) =
            agent_run(who, r"printf 'ok\033]52;c;aGk=\a\r\033[2K'", ANSWER, "text");
        assert_eq!(stdout, format!("{ANSWER_SHOWN}\n"));
        // The call and its output's first line, on stderr.
        assert!(
            stderr.contains(r"ok\x1b]52;c;aGk=\x07\x0d\x1b[2K"),
            "{stderr}"
        );
        assert!(
            stderr.contains(r"printf 'ok\\033]52"),
            "the command is shown: {stderr}"
        );
        assert!(raw_controls(&stdout).is_empty(), "{stdout:?}");
        assert!(raw_controls(&stderr).is_empty(), "{stderr:?}");
    }
);

both!(agent_run_json_keeps_the_exact_bytes, |who| {
    let command = r"printf 'ok\033]52;c;aGk=\a\r\033[2K'";
    let (stdout, _) = agent_run(who, command, ANSWER, "json");
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["result"], ANSWER, "the answer, byte for byte");
    assert!(
        raw_controls(&stdout).is_empty(),
        "serde escapes them: {stdout:?}"
    );
    let (stdout, _) = agent_run(who, command, ANSWER, "stream-json");
    let mut texts = Vec::new();
    for line in stdout.lines() {
        strings(&serde_json::from_str(line).unwrap(), &mut texts);
    }
    assert!(
        texts
            .iter()
            .any(|t| t.contains("ok\x1b]52;c;aGk=\x07\r\x1b[2K")),
        "the tool output, exactly, in the events: {texts:?}"
    );
    assert!(
        raw_controls(&stdout).is_empty(),
        "serde escapes them: {stdout:?}"
    );
});

/// Every string in `v`.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}
