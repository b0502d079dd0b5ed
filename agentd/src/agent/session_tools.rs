//! Tools the session answers itself, without a worker: they touch nothing but the session's own
//! state — `write_todos` (the todo list) and `read_skill` (the body of a skill the session loaded
//! at its start, offered only when there are skills).

use super::dispatch::{Emit, Outcome};
use crate::context::skills::Skill;
use crate::context::todos;
use crate::providers::model::ToolSpec;
use protocol::event::{Event, TodoListChanged, ToolCall, ToolStatus};
use protocol::session::TodoItem;
use serde_json::json;
use std::sync::{Mutex, OnceLock};

/// The session's own tools and their state.
#[derive(Debug, Default)]
pub struct SessionTools {
    skills: OnceLock<Vec<Skill>>,
    spill: OnceLock<std::path::PathBuf>,
    todos: Mutex<Vec<TodoItem>>,
}

impl SessionTools {
    /// Sets the skills found at the session's start (once).
    pub fn set_skills(&self, skills: Vec<Skill>) {
        let _ = self.skills.set(skills);
    }

    /// Sets the folder big outputs are spilled to (once).
    pub fn set_spill_dir(&self, dir: std::path::PathBuf) {
        let _ = self.spill.set(dir);
    }

    /// The folder big outputs are spilled to, if the session has one.
    pub fn spill_dir(&self) -> Option<&std::path::Path> {
        self.spill.get().map(std::path::PathBuf::as_path)
    }

    /// The skills loaded.
    pub fn skills(&self) -> &[Skill] {
        self.skills.get().map_or(&[], Vec::as_slice)
    }

    /// The todo list now.
    pub fn todos(&self) -> Vec<TodoItem> {
        self.todos.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Restores the todo list of a resumed session.
    pub fn restore_todos(&self, items: Vec<TodoItem>) {
        if let Ok(mut t) = self.todos.lock() {
            *t = items;
        }
    }

    /// The tools offered: `write_todos`, and `read_skill` when there are skills.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = vec![ToolSpec {
            name: "write_todos".into(),
            description: "Replace your todo list (the whole list each time). Use it for work of several steps; exactly one item in_progress while you work.".into(),
            parameters: json!({
                "type": "object", "additionalProperties": false, "required": ["todos"],
                "properties": {"todos": {"type": "array", "maxItems": todos::MAX_ITEMS, "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["content", "active_form", "status"],
                    "properties": {
                        "content": {"type": "string", "minLength": 1, "description": "imperative: Run the tests"},
                        "active_form": {"type": "string", "description": "while doing it: Running the tests"},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}
                    }
                }}}
            }),
        }];
        if !self.skills().is_empty() {
            specs.push(ToolSpec {
                name: "read_skill".into(),
                description:
                    "Read the instructions of a skill listed in the system prompt, by name.".into(),
                parameters: json!({
                    "type": "object", "additionalProperties": false, "required": ["name"],
                    "properties": {"name": {"type": "string", "minLength": 1}}
                }),
            });
        }
        specs
    }

    /// Whether `name` is one of these tools in this session.
    pub fn answers(&self, name: &str) -> bool {
        name == "write_todos" || (name == "read_skill" && !self.skills().is_empty())
    }

    /// Answers `call` if it is one of these tools.
    pub fn handle(&self, call: &ToolCall, emit: &Emit) -> Option<Outcome> {
        let result = |ok: bool, content: String| Outcome {
            status: if ok {
                ToolStatus::Ok
            } else {
                ToolStatus::Error
            },
            content,
            exit_code: None,
            truncated: false,
        };
        match call.name.as_str() {
            "write_todos" => Some(match todos::parse(&call.arguments) {
                Ok(items) => {
                    if let Ok(mut t) = self.todos.lock() {
                        t.clone_from(&items);
                    }
                    let n = items.len();
                    emit(Event::TodoListChanged(TodoListChanged { items }));
                    result(true, format!("The todo list now has {n} items."))
                }
                Err(why) => result(false, why),
            }),
            "read_skill" if !self.skills().is_empty() => {
                let name = serde_json::from_str::<serde_json::Value>(&call.arguments)
                    .ok()
                    .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_owned))
                    .unwrap_or_default();
                Some(match self.skills().iter().find(|s| s.name == name) {
                    Some(skill) => match skill.body() {
                        Ok(body) => result(true, body),
                        Err(skipped) => {
                            result(false, format!("The skill cannot be read: {}", skipped.why))
                        }
                    },
                    None => {
                        let names: Vec<&str> =
                            self.skills().iter().map(|s| s.name.as_str()).collect();
                        result(
                            false,
                            format!(
                                "There is no skill named {name:?}. The skills are: {}.",
                                names.join(", ")
                            ),
                        )
                    }
                })
            }
            _ => None,
        }
    }
}
