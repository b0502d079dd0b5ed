//! Building a policy from config text: extending and replacing the defaults, and errors that name
//! the file, the line and the rule.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use policy::{Access, Context, Policy, PolicyError, Verdict};
use std::path::Path;

fn ctx() -> Context<'static> {
    Context {
        workspace: Path::new("/work/project"),
        home: Some(Path::new("/home/dev")),
    }
}

#[test]
fn config_rules_extend_the_defaults_and_the_last_match_wins() {
    let text = r#"
[policy]
bash = [
  { pattern = "cargo build*", action = "allow" },
  { pattern = "git status*", action = "deny" },
]
"#;
    let p = Policy::from_config(text, "/etc/agentd/config.toml").unwrap();
    assert_eq!(
        p.check_bash("cargo build --release", &ctx()).verdict,
        Verdict::Allow
    );
    let d = p.check_bash("git status", &ctx());
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(
        d.reason.contains("/etc/agentd/config.toml:5"),
        "the reason names file and line: {}",
        d.reason
    );
    // Built-ins are still there.
    assert_eq!(p.check_bash("rm -rf /", &ctx()).verdict, Verdict::Deny);
    assert_eq!(p.check_bash("ls", &ctx()).verdict, Verdict::Allow);
}

#[test]
fn replace_drops_the_built_in_rules() {
    let text = r#"
[policy]
defaults = "replace"
default = "deny"
bash = [{ pattern = "ls *", action = "allow" }]
"#;
    let p = Policy::from_config(text, "c.toml").unwrap();
    assert_eq!(p.check_bash("ls -la", &ctx()).verdict, Verdict::Allow);
    assert_eq!(p.check_bash("cat x", &ctx()).verdict, Verdict::Deny);
    assert_eq!(
        p.check_path(Access::Read, "src/lib.rs", &ctx()).verdict,
        Verdict::Deny
    );
}

#[test]
fn array_of_tables_syntax_works_too() {
    let text = "[policy]\n[[policy.bash]]\npattern = \"make *\"\naction = \"allow\"\n";
    let p = Policy::from_config(text, "c.toml").unwrap();
    assert_eq!(p.check_bash("make -j4", &ctx()).verdict, Verdict::Allow);
}

#[test]
fn other_sections_of_the_config_file_are_left_to_their_owner() {
    let text = "[daemon]\nsocket = \"/run/x.sock\"\n[policy]\ndefault = \"ask\"\n";
    assert!(Policy::from_config(text, "c.toml").is_ok());
}

#[test]
fn a_bad_glob_names_file_line_list_index_and_pattern() {
    let text = "[policy]\nbash = [\n  { pattern = \"ls *\", action = \"allow\" },\n  { pattern = \"rm [\", action = \"deny\" },\n]\n";
    let err = Policy::from_config(text, "/home/dev/.config/agentd/config.toml").unwrap_err();
    match &err {
        PolicyError::Rule {
            file,
            line,
            list,
            pattern,
            ..
        } => {
            assert_eq!(file, "/home/dev/.config/agentd/config.toml");
            assert_eq!(*line, 4);
            assert_eq!(*list, "bash");
            assert_eq!(pattern, "rm [");
        }
        other => panic!("expected a rule error, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.starts_with("/home/dev/.config/agentd/config.toml:4: bash rule"),
        "{msg}"
    );
    assert!(msg.contains("unclosed character class"), "{msg}");
}

#[test]
fn an_unknown_key_is_an_error_with_its_name_and_line() {
    let text = "[policy]\ndefault = \"ask\"\nbash = [{ pattern = \"ls\", acton = \"allow\" }]\n";
    let err = Policy::from_config(text, "c.toml").unwrap_err().to_string();
    assert!(err.starts_with("c.toml:3:"), "{err}");
    assert!(err.contains("acton"), "{err}");
    let err = Policy::from_config("[policy]\ndefualt = \"ask\"\n", "c.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("c.toml:2:") && err.contains("defualt"),
        "{err}"
    );
}

#[test]
fn a_misspelt_verdict_lists_the_real_ones() {
    let err = Policy::from_config(
        "[policy]\nread = [{ path = \"**\", action = \"alow\" }]\n",
        "c.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("c.toml:2:"), "{err}");
    assert!(
        err.contains("alow") && err.contains("allow") && err.contains("deny"),
        "{err}"
    );
}

#[test]
fn bad_values_outside_rules_are_named() {
    let err = Policy::from_config("[policy]\n\ndefaults = \"merge\"\n", "c.toml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "c.toml:3: policy.defaults: \"merge\" is not a choice; use \"extend\" or \"replace\""
    );
    let err = Policy::from_config("[policy]\nnetwork = \"ask\"\n", "c.toml").unwrap_err();
    assert!(
        err.to_string().starts_with("c.toml:2: policy.network"),
        "{err}"
    );
    let err = Policy::from_config(
        "[policy]\nwrite = [{ path = \"~bob/x\", action = \"deny\" }]\n",
        "c.toml",
    )
    .unwrap_err();
    assert!(err.to_string().contains("~user"), "{err}");
    let err = Policy::from_config(
        "[policy]\nbash = [{ pattern = \"  \", action = \"deny\" }]\n",
        "c.toml",
    )
    .unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
}

#[test]
fn broken_toml_is_a_syntax_error_with_line_and_column() {
    let err = Policy::from_config("[policy]\ndefault = \n", "c.toml").unwrap_err();
    assert!(
        matches!(err, PolicyError::Syntax { line: 2, .. }),
        "{err:?}"
    );
}

#[test]
fn network_defaults_to_deny_and_can_be_allowed() {
    assert_eq!(Policy::builtin().unwrap().network(), Verdict::Deny);
    assert_eq!(
        Policy::from_config("[policy]\nnetwork = \"allow\"\n", "c")
            .unwrap()
            .network(),
        Verdict::Allow
    );
}

#[test]
fn path_rules_are_relative_to_workspace_home_or_root() {
    let text = r#"
[policy]
read = [
  { path = "secrets/**", action = "deny" },
  { path = "~/notes/*.md", action = "deny" },
  { path = "/opt/vendor/**", action = "ask" },
]
"#;
    let p = Policy::from_config(text, "c.toml").unwrap();
    let c = ctx();
    assert_eq!(
        p.check_path(Access::Read, "secrets/key.txt", &c).verdict,
        Verdict::Deny
    );
    assert_eq!(
        p.check_path(Access::Read, "/work/project/secrets", &c)
            .verdict,
        Verdict::Deny
    );
    assert_eq!(
        p.check_path(Access::Read, "src/secrets/key.txt", &c)
            .verdict,
        Verdict::Allow
    );
    assert_eq!(
        p.check_path(Access::Read, "~/notes/a.md", &c).verdict,
        Verdict::Deny
    );
    // `*` stays in one component: the deny rule does not match, and the path, in a home
    // directory, is outside the known-safe read paths, so it gets the default.
    let d = p.check_path(Access::Read, "/home/dev/notes/sub/a.md", &c);
    assert_eq!(d.verdict, Verdict::Ask, "{}", d.reason);
    assert!(
        d.reason.contains("outside the known-safe read paths"),
        "{}",
        d.reason
    );
    assert_eq!(
        p.check_path(Access::Read, "/opt/vendor/lib/x.so", &c)
            .verdict,
        Verdict::Ask
    );
}

#[test]
fn an_argument_naming_a_denied_path_denies_even_beside_parts_that_ask() {
    // Arguments are rated as paths only when they could still change the verdict: with a read
    // rule that denies, a part that merely asks must not stop them being looked at.
    let text = r#"
[policy]
read = [{ path = "secrets/**", action = "deny" }]
"#;
    let p = Policy::from_config(text, "c.toml").unwrap();
    let c = ctx();
    for command in [
        "cat secrets/key.txt",
        "echo $(date); cat secrets/key.txt",
        "cat secrets/key.txt; echo $(date)",
        "ls > out.txt && grep -r token secrets/key.txt",
    ] {
        let d = p.check_bash(command, &c);
        assert_eq!(d.verdict, Verdict::Deny, "{command}: {}", d.reason);
        assert!(
            d.reason.contains("secrets/key.txt"),
            "{command}: {}",
            d.reason
        );
    }
    // With the built-in rules a protected path asks, so a part that asks already decides.
    let builtin = Policy::builtin().unwrap();
    for command in ["cat ~/.ssh/id_rsa", "echo $(date); cat ~/.ssh/id_rsa"] {
        assert_eq!(
            builtin.check_bash(command, &c).verdict,
            Verdict::Ask,
            "{command}"
        );
    }
    assert_eq!(
        builtin.check_bash("cat README.md; ls src", &c).verdict,
        Verdict::Allow
    );
}

#[test]
fn project_code_can_be_set_to_ask() {
    let p = Policy::from_config("[policy]\nproject_code = \"ask\"\n", "c.toml").unwrap();
    for command in [
        "cargo test",
        "npm run lint",
        "pytest -q",
        "make test",
        "go vet ./...",
    ] {
        let d = p.check_bash(command, &ctx());
        assert_eq!(d.verdict, Verdict::Ask, "{command}: {}", d.reason);
        assert!(d.reason.contains("project"), "{}", d.reason);
    }
    assert_eq!(p.check_bash("git status", &ctx()).verdict, Verdict::Allow);
    assert_eq!(
        p.check_bash("cargo --version", &ctx()).verdict,
        Verdict::Allow
    );
    let err = Policy::from_config("[policy]\nproject_code = \"deny\"\n", "c.toml").unwrap_err();
    assert!(err.to_string().contains("project_code"), "{err}");
}

#[test]
fn config_rules_come_before_specs() {
    let text = r#"
[policy]
bash = [
  { pattern = "sort *", action = "allow" },
  { pattern = "git log *", action = "ask" },
]
"#;
    let p = Policy::from_config(text, "c.toml").unwrap();
    assert_eq!(
        p.check_bash("sort -o out in", &ctx()).verdict,
        Verdict::Allow
    );
    assert_eq!(
        p.check_bash("git log --oneline", &ctx()).verdict,
        Verdict::Ask
    );
    assert_eq!(
        p.check_bash("sort $X", &ctx()).verdict,
        Verdict::Ask,
        "a rule's allow is capped by uncertain arguments"
    );
}

/// `npx NAME` downloads NAME when it is not installed: without the network (the default) the
/// worker cannot, so only what is installed runs; with it, npx asks unless told not to install.
#[test]
fn npx_asks_where_tool_calls_have_the_network() {
    let offline = Policy::builtin().unwrap();
    assert_eq!(
        offline.check_bash("npx tsc --noEmit", &ctx()).verdict,
        Verdict::Allow
    );
    let online = Policy::from_config("[policy]\nnetwork = \"allow\"\n", "c").unwrap();
    let d = online.check_bash("npx tsc --noEmit", &ctx());
    assert_eq!(d.verdict, Verdict::Ask, "{}", d.reason);
    assert!(d.reason.contains("--no-install"), "{}", d.reason);
    assert_eq!(
        online
            .check_bash("npx --no-install tsc --noEmit", &ctx())
            .verdict,
        Verdict::Allow
    );
}
