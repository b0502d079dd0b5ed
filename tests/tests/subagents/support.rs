//! What the subagent suite shares: scripted replies, `agent run` with every event printed, and
//! the requests and results of each conversation the mock saw.

use agentd_e2e::mock_llm::openai::{finish, tool};
use agentd_e2e::mock_llm::{MockLlm, Recorded, Reply, first_user_message};
use agentd_e2e::{As, Dir, agent_against};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// One message calling each `(id, tool, arguments)`, in order.
pub fn calls(list: &[(&str, &str, Value)]) -> Reply {
    let mut chunks: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(i, (id, name, args))| tool(i as u64, Some(id), Some(name), &args.to_string()))
        .collect();
    chunks.push(finish("tool_calls"));
    Reply::stream(chunks)
}

/// A `task` call's arguments.
pub fn task(description: &str, prompt: &str) -> Value {
    json!({"description": description, "prompt": prompt})
}

/// A config file allowing the bash commands that match `patterns`, plus `extra` TOML.
pub fn config(dir: &Dir, patterns: &[&str], extra: &str) -> String {
    let rules: Vec<String> = patterns
        .iter()
        .map(|p| format!("{{ pattern = \"{p}\", action = \"allow\" }}"))
        .collect();
    let path = dir.0.join("config.toml");
    std::fs::write(
        &path,
        format!("[policy]\nbash = [{}]\n{extra}", rules.join(", ")),
    )
    .unwrap();
    path.display().to_string()
}

/// `agent run` as `who` against `mock` in `ws`, printing every event (`stream-json`), its
/// sessions kept under `home`.
pub fn agent(who: As, mock: &MockLlm, ws: &Path, home: &Path, args: &[&str]) -> Command {
    let mut cmd = agent_against(who, home, &mock.url());
    cmd.args(["run", "--output-format", "stream-json", "--workspace"])
        .arg(ws)
        .arg("--state-dir")
        .arg(home.join("state"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// What a finished `agent run` printed.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Every event envelope.
    pub events: Vec<Value>,
    /// Its stderr.
    pub stderr: String,
}

impl Run {
    pub fn of(child: Child) -> Self {
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            events: String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The session's id.
    pub fn session(&self) -> String {
        self.events[0]["session"].as_str().unwrap().to_owned()
    }

    /// The top-level events.
    pub fn top(&self) -> impl Iterator<Item = &Value> {
        self.events.iter().map(|e| &e["event"])
    }

    /// The events of the subagent started by call `id`.
    pub fn of_subagent<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a Value> {
        self.top()
            .filter(move |e| e["type"] == "subagent" && e["call_id"] == id)
            .map(|e| &e["event"])
    }

    /// The `tool_call_finished` content of the parent's call `id`.
    pub fn result_of(&self, id: &str) -> String {
        self.top()
            .find(|e| e["type"] == "tool_call_finished" && e["call_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}: {:#?}", self.events))["content"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// The requests of the conversation whose first user message contains `key` (`None`: the
/// parent's, which contains none of `keys`).
pub fn requests_of(mock: &MockLlm, key: Option<&str>, keys: &[&str]) -> Vec<Recorded> {
    mock.requests()
        .into_iter()
        .filter(|r| {
            let first = first_user_message(&r.body).unwrap_or_default();
            match key {
                Some(k) => first.contains(k),
                None => keys.iter().all(|k| !first.contains(k)),
            }
        })
        .collect()
}

pub fn tool_names(request: &Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The content of the result of call `id` in `request`'s history.
pub fn result_in(request: &Recorded, id: &str) -> String {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id} in {}", request.raw_body))["content"]
        .as_str()
        .unwrap()
        .to_owned()
}
