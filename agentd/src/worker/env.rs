//! The tool's environment, built from an allowlist: never the supervisor's keys or config.

use protocol::worker::EnvVar;
use std::path::Path;

/// The PATH tools get when the supervisor's own is not used.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The environment of a tool call: fixed values, plus `extra` names copied from the supervisor's
/// environment when set there (the configured pass-through list).
pub fn tool_env(home: Option<&Path>, tmp_dir: &Path, extra: &[String]) -> Vec<EnvVar> {
    let var = |name: &str, value: String| EnvVar {
        name: name.to_owned(),
        value,
    };
    let mut env = vec![
        var("PATH", DEFAULT_PATH.to_owned()),
        var(
            "HOME",
            home.map(|h| h.display().to_string())
                .unwrap_or_else(|| tmp_dir.display().to_string()),
        ),
        var(
            "LANG",
            std::env::var("LANG")
                .ok()
                .filter(|l| !l.is_empty())
                .unwrap_or_else(|| "C.UTF-8".into()),
        ),
        var("TERM", "dumb".into()),
        var("TMPDIR", tmp_dir.display().to_string()),
        var("NO_COLOR", "1".into()),
        var("PAGER", "cat".into()),
        var("GIT_PAGER", "cat".into()),
        // An agent edits and re-runs within a second; Python's bytecode cache, keyed on mtime in
        // whole seconds and size, would then run the old code after a same-size edit.
        var("PYTHONDONTWRITEBYTECODE", "1".into()),
    ];
    for name in extra {
        if let Ok(value) = std::env::var(name)
            && !env.iter().any(|v| &v.name == name)
        {
            env.push(var(name, value));
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowlisted_names_pass() {
        // SAFETY: a test-only variable set before any thread reads the environment in this test.
        unsafe { std::env::set_var("AGENTD_TEST_SECRET_KEY", "sk-secret") };
        let env = tool_env(
            Some(Path::new("/home/u")),
            Path::new("/tmp/x"),
            &["LANG".into()],
        );
        assert!(
            env.iter()
                .all(|v| v.name != "AGENTD_TEST_SECRET_KEY" && !v.value.contains("sk-secret"))
        );
        let names: Vec<&str> = env.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "HOME",
                "LANG",
                "TERM",
                "TMPDIR",
                "NO_COLOR",
                "PAGER",
                "GIT_PAGER",
                "PYTHONDONTWRITEBYTECODE"
            ]
        );
        let passed = tool_env(
            None,
            Path::new("/tmp/x"),
            &["AGENTD_TEST_SECRET_KEY".into()],
        );
        assert!(
            passed.iter().any(|v| v.name == "AGENTD_TEST_SECRET_KEY"),
            "configured names do pass"
        );
    }
}
