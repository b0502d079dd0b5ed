//! Arbitrary command text never panics the policy and is rated quickly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use policy::{Context, Policy, Verdict};
use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

fn policy() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| Policy::builtin().unwrap())
}

fn ctx() -> Context<'static> {
    Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    }
}

/// CPU time of this thread: unlike wall time, it does not grow when other processes on a shared
/// machine take the core.
fn thread_cpu() -> Duration {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).unwrap();
    Duration::new(ts.tv_sec() as u64, ts.tv_nsec() as u32)
}

/// Rates `text`, returning the verdict and the CPU time it took. The first verdict on a thread
/// builds the thread's parser and the rules' lazy matchers; that one-time cost is paid before
/// measuring, since the bound is about every verdict after start-up.
fn rate(text: &str) -> (Verdict, Duration) {
    thread_local! { static WARM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) }; }
    if !WARM.with(|w| w.replace(true)) {
        policy().check_bash("ls -la && cat x | grep y; rm z > /dev/null", &ctx());
    }
    let start = thread_cpu();
    let d = policy().check_bash(text, &ctx());
    (d.verdict, thread_cpu() - start)
}

/// A bound against blow-ups (exponential parses, unbounded recursion), not a speed goal — those
/// live in `benches/verdict.rs`. Thread CPU time, with a wide margin: the worst case here takes
/// ~6 ms in a debug build on an idle machine, and CPU time still stretches on a loaded one.
const LIMIT: Duration = if cfg!(debug_assertions) {
    Duration::from_millis(100)
} else {
    Duration::from_millis(10)
};

/// Shell-ish fragments, so generated text exercises the grammar rather than only plain words.
fn shellish() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just("rm".to_owned()),
        Just("ls".to_owned()),
        Just(" ".to_owned()),
        Just(";".to_owned()),
        Just("&&".to_owned()),
        Just("|".to_owned()),
        Just("$(".to_owned()),
        Just(")".to_owned()),
        Just("`".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("<(".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("(".to_owned()),
        Just("$'\\x72'".to_owned()),
        Just("bash -c ".to_owned()),
        Just("eval ".to_owned()),
        Just("> /etc/x".to_owned()),
        Just("<<EOF\n".to_owned()),
        Just("\n".to_owned()),
        Just("env ".to_owned()),
        Just("find . -exec ".to_owned()),
        Just("if ".to_owned()),
        Just("then ".to_owned()),
        Just("fi".to_owned()),
        Just("$X".to_owned()),
        Just("*".to_owned()),
        "[a-z]{1,6}",
    ];
    proptest::collection::vec(atoms, 0..60).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_gets_a_verdict_quickly(text in any::<String>()) {
        let (_, took) = rate(&text);
        prop_assert!(took < LIMIT, "{:?} took {took:?}", text);
    }

    #[test]
    fn shell_like_text_gets_a_verdict_quickly(text in shellish()) {
        let (_, took) = rate(&text);
        prop_assert!(took < LIMIT, "{:?} took {took:?}", text);
    }

    #[test]
    fn arbitrary_bytes_as_lossy_text_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let text = String::from_utf8_lossy(&bytes);
        let (_, took) = rate(&text);
        prop_assert!(took < LIMIT);
    }

    #[test]
    fn a_denied_command_stays_denied_after_any_allowed_prefix(prefix in prop_oneof![Just("ls"), Just("git status"), Just("echo hi"), Just("cat x")], sep in prop_oneof![Just("; "), Just(" && "), Just(" || "), Just(" | "), Just(" & "), Just("\n")]) {
        let (v, _) = rate(&format!("{prefix}{sep}rm -rf /"));
        prop_assert_eq!(v, Verdict::Deny);
    }
}

#[test]
fn adversarial_inputs_are_rated_within_the_limit() {
    let nested_parens = format!("{}ls{}", "(".repeat(4000), ")".repeat(4000));
    let nested_subst = format!("{}ls{}", "$(".repeat(3000), ")".repeat(3000));
    let nested_c = (0..5).fold("rm x".to_owned(), |acc, _| {
        format!("bash -c {}", shell_quote(&acc))
    });
    let nested_eval = format!("{}rm x", "eval ".repeat(20));
    let many_cmds = "ls; ".repeat(2400);
    let most_cmds = "ls; ".repeat(250);
    let compound = r#"cd src && grep -rn "fn main" . | sort | uniq -c > /dev/null; git status --short && cargo test -p policy -- --nocapture 2>&1 | tail -n 20 || echo "tests failed: $(date +%s)" >&2; ls -la"#;
    let near_cap = [compound; 50].join("\n");
    let long_word = "a".repeat(9_999);
    let quotes = "'\"".repeat(4_000);
    let megabytes = "x".repeat(4 << 20);
    let binary: String = (0..9_000u32)
        .map(|i| char::from_u32(i % 0x2000 + 1).unwrap_or('?'))
        .collect();
    let cases: [(&str, &str); 11] = [
        ("9k of ordinary commands", &near_cap),
        ("250 commands", &most_cmds),
        ("nested parens", &nested_parens),
        ("nested substitutions", &nested_subst),
        ("5 levels of bash -c", &nested_c),
        ("20 levels of eval", &nested_eval),
        ("2400 commands", &many_cmds),
        ("one long word", &long_word),
        ("unbalanced quotes", &quotes),
        ("4 MiB", &megabytes),
        ("control characters", &binary),
    ];
    for (name, text) in cases {
        let (verdict, took) = rate(text);
        assert!(took < LIMIT, "{name} took {took:?}");
        match name {
            "5 levels of bash -c" => {
                assert_eq!(verdict, Verdict::Deny, "rm is found 5 levels down")
            }
            "20 levels of eval" => assert_ne!(
                verdict,
                Verdict::Allow,
                "nesting past the limit is never allowed"
            ),
            // Ordinary text near the length cap is analysed in full, not refused for its size.
            "9k of ordinary commands" => assert_eq!(
                verdict,
                Verdict::Ask,
                "it holds `cargo test … > /dev/null` and `$(date)`"
            ),
            _ => {}
        }
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
