//! The tools the model is offered, their JSON Schemas, and turning a call's raw arguments into a
//! typed [`ToolRequest`] — or into a message the model can read and recover from: arguments that
//! are not JSON (with the parser's line and column), an unknown tool (with the real ones), a
//! schema violation (naming the field and what was expected).

use crate::providers::model::ToolSpec;
use protocol::worker::*;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// The tools, in the order the model sees them.
pub fn specs() -> &'static [ToolSpec] {
    static SPECS: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        let spec = |name: &str, description: &str, parameters: Value| ToolSpec { name: name.into(), description: description.into(), parameters };
        let path = json!({"type": "string", "minLength": 1, "description": "relative to the workspace, or absolute"});
        vec![
            spec("bash", "Run a command with bash (bash -c, no rc files) in the workspace. Output is stdout and stderr merged, capped.", json!({
                "type": "object", "additionalProperties": false, "required": ["command"],
                "properties": {"command": {"type": "string", "minLength": 1}}
            })),
            spec("read_file", "Read a text file with line numbers; use offset and limit for long files.", json!({
                "type": "object", "additionalProperties": false, "required": ["path"],
                "properties": {"path": path, "offset": {"type": "integer", "minimum": 1}, "limit": {"type": "integer", "minimum": 1}}
            })),
            spec("write_file", "Create or overwrite a file with the whole content given.", json!({
                "type": "object", "additionalProperties": false, "required": ["path", "content"],
                "properties": {"path": path, "content": {"type": "string"}}
            })),
            spec("str_replace", "Replace exact text in a file; it must occur once unless replace_all is true.", json!({
                "type": "object", "additionalProperties": false, "required": ["path", "old", "new"],
                "properties": {"path": path, "old": {"type": "string", "minLength": 1}, "new": {"type": "string"}, "replace_all": {"type": "boolean"}}
            })),
            spec("list_dir", "List a directory (the workspace by default).", json!({
                "type": "object", "additionalProperties": false,
                "properties": {"path": path}
            })),
            spec("glob", "Find files by glob pattern, e.g. src/**/*.rs, honouring .gitignore.", json!({
                "type": "object", "additionalProperties": false, "required": ["pattern"],
                "properties": {"pattern": {"type": "string", "minLength": 1}, "path": path}
            })),
            spec("grep", "Search file contents with a regular expression, honouring .gitignore.", json!({
                "type": "object", "additionalProperties": false, "required": ["pattern"],
                "properties": {"pattern": {"type": "string", "minLength": 1}, "path": path, "glob": {"type": "string"},
                               "ignore_case": {"type": "boolean"}, "max_matches": {"type": "integer", "minimum": 1}}
            })),
        ]
    })
}

fn validators() -> &'static Vec<(String, Result<jsonschema::Validator, String>)> {
    static V: OnceLock<Vec<(String, Result<jsonschema::Validator, String>)>> = OnceLock::new();
    V.get_or_init(|| {
        specs()
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    jsonschema::validator_for(&s.parameters).map_err(|e| e.to_string()),
                )
            })
            .collect()
    })
}

/// The names of the tools, for messages.
pub fn names() -> String {
    specs()
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Turns a call into a request, or explains to the model why it cannot.
pub fn to_request(name: &str, arguments: &str) -> Result<ToolRequest, String> {
    let Some((_, validator)) = validators().iter().find(|(n, _)| n == name) else {
        return Err(format!(
            "There is no tool named `{name}`. The tools are: {}.",
            names()
        ));
    };
    let validator = validator
        .as_ref()
        .map_err(|e| format!("internal error: the schema of `{name}` does not compile: {e}"))?;
    let args = check_args(name, validator, arguments)?;
    let s = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
    let n = |k: &str| args.get(k).and_then(Value::as_u64);
    let b = |k: &str| args.get(k).and_then(Value::as_bool).unwrap_or(false);
    let req = |k: &str| s(k).unwrap_or_default();
    Ok(match name {
        "bash" => ToolRequest::Bash(BashRequest {
            command: req("command"),
        }),
        "read_file" => ToolRequest::ReadFile(ReadFileRequest {
            path: req("path"),
            offset: n("offset"),
            limit: n("limit"),
        }),
        "write_file" => ToolRequest::WriteFile(WriteFileRequest {
            path: req("path"),
            content: req("content"),
        }),
        "str_replace" => ToolRequest::StrReplace(StrReplaceRequest {
            path: req("path"),
            old: req("old"),
            new: req("new"),
            replace_all: b("replace_all"),
        }),
        "list_dir" => ToolRequest::ListDir(ListDirRequest { path: s("path") }),
        "glob" => ToolRequest::Glob(GlobRequest {
            pattern: req("pattern"),
            path: s("path"),
        }),
        "grep" => ToolRequest::Grep(GrepRequest {
            pattern: req("pattern"),
            path: s("path"),
            glob: s("glob"),
            ignore_case: b("ignore_case"),
            max_matches: n("max_matches"),
        }),
        other => {
            return Err(format!(
                "There is no tool named `{other}`. The tools are: {}.",
                names()
            ));
        }
    })
}

/// A call's arguments, parsed and checked against its tool's schema, or a message the model can
/// act on: the parser's line and column, each field that does not fit, and an example.
pub fn check_args(
    name: &str,
    validator: &jsonschema::Validator,
    arguments: &str,
) -> Result<Value, String> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let args: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "The arguments of `{name}` are not valid JSON ({e}). Send one JSON object, e.g. {}.",
            example(name)
        )
    })?;
    let problems: Vec<String> = validator
        .iter_errors(&args)
        .map(|e| {
            let at = e.instance_path.to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("`{}`: {e}", at.trim_start_matches('/'))
            }
        })
        .collect();
    if !problems.is_empty() {
        return Err(format!(
            "The arguments of `{name}` do not fit its schema: {}. Expected e.g. {}.",
            problems.join("; "),
            example(name)
        ));
    }
    Ok(args)
}

/// The result of a call the output token limit cut off (followed by what is wrong with its
/// arguments, when something is).
pub const CUT_OFF: &str = "Your message was cut off by the output token limit while this call was \
    being written, so it was not run: its arguments may be incomplete. Make the call again with \
    shorter arguments (write a large file in several steps).";

fn example(name: &str) -> &'static str {
    match name {
        "bash" => r#"{"command": "ls -la"}"#,
        "read_file" => r#"{"path": "src/main.rs"}"#,
        "write_file" => r#"{"path": "notes.md", "content": "…"}"#,
        "str_replace" => r#"{"path": "src/lib.rs", "old": "a - b", "new": "a + b"}"#,
        "list_dir" => r#"{"path": "src"}"#,
        "glob" => r#"{"pattern": "**/*.rs"}"#,
        "task" => {
            r#"{"description": "find the config loader", "prompt": "Find where … is read and report the file and function."}"#
        }
        _ => r#"{"pattern": "fn main"}"#,
    }
}

/// The tools that change files: not offered to a read-only session.
pub const WRITERS: [&str; 2] = ["write_file", "str_replace"];

/// The tools offered to a session whose sandbox is `profile`: all of them, but for a read-only
/// session, whose workers could not write anyway, the tools that only write.
pub fn offered(profile: protocol::worker::SandboxProfile) -> Vec<ToolSpec> {
    let read_only = profile == protocol::worker::SandboxProfile::ReadOnly;
    specs()
        .iter()
        .filter(|t| !(read_only && WRITERS.contains(&t.name.as_str())))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_compiles_and_valid_calls_become_requests() {
        assert!(validators().iter().all(|(_, v)| v.is_ok()));
        assert_eq!(
            to_request("bash", r#"{"command":"ls"}"#),
            Ok(ToolRequest::Bash(BashRequest {
                command: "ls".into()
            }))
        );
        assert_eq!(
            to_request("list_dir", ""),
            Ok(ToolRequest::ListDir(ListDirRequest { path: None }))
        );
        assert!(
            matches!(to_request("grep", r#"{"pattern":"x","ignore_case":true}"#), Ok(ToolRequest::Grep(g)) if g.ignore_case)
        );
    }

    #[test]
    fn bad_calls_are_explained() {
        let e = to_request("bash", r#"{"command": "ls""#).unwrap_err();
        assert!(e.contains("not valid JSON") && e.contains("line 1"), "{e}");
        let e = to_request("rm_rf", "{}").unwrap_err();
        assert!(
            e.contains("no tool named `rm_rf`") && e.contains("bash, read_file, write_file"),
            "{e}"
        );
        let e = to_request("read_file", r#"{"path": 42}"#).unwrap_err();
        assert!(e.contains("`path`") && e.contains("string"), "{e}");
        let e = to_request("bash", r#"{"cmd": "ls"}"#).unwrap_err();
        assert!(e.contains("command") && e.contains("required"), "{e}");
        let e = to_request("read_file", r#"{"path": "a", "offset": 0}"#).unwrap_err();
        assert!(e.contains("`offset`"), "{e}");
    }
}
