//! The todo list: `write_todos` replaces it whole; at most one item is in progress; the list is
//! reminded to the model on each request (not stored in the history).

use protocol::session::{TodoItem, TodoStatus};
use serde::Deserialize;

/// Most items in the list.
pub const MAX_ITEMS: usize = 50;
/// Longest item text, characters.
const MAX_TEXT: usize = 500;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    todos: Vec<Item>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    content: String,
    active_form: String,
    status: TodoStatus,
}

/// The new list from `write_todos` arguments, or why it is refused (for the model to read).
pub fn parse(arguments: &str) -> Result<Vec<TodoItem>, String> {
    let args: Args = serde_json::from_str(arguments).map_err(|e| {
        format!(
            "The arguments of `write_todos` do not fit: {e}. Send {{\"todos\": [{{\"content\": \"Run the tests\", \"active_form\": \"Running the tests\", \"status\": \"in_progress\"}}]}} with status pending, in_progress or done."
        )
    })?;
    if args.todos.len() > MAX_ITEMS {
        return Err(format!(
            "The list has {} items; keep it to {MAX_ITEMS} or fewer.",
            args.todos.len()
        ));
    }
    let mut items = Vec::with_capacity(args.todos.len());
    for (i, item) in args.todos.into_iter().enumerate() {
        let content = item.content.trim().to_owned();
        if content.is_empty() {
            return Err(format!("Item {} has no content.", i + 1));
        }
        if content.chars().count() > MAX_TEXT || item.active_form.chars().count() > MAX_TEXT {
            return Err(format!(
                "Item {} is longer than {MAX_TEXT} characters.",
                i + 1
            ));
        }
        items.push(TodoItem {
            content,
            active_form: item.active_form.trim().to_owned(),
            status: item.status,
        });
    }
    let in_progress: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, t)| t.status == TodoStatus::InProgress)
        .map(|(i, _)| i + 1)
        .collect();
    if in_progress.len() > 1 {
        return Err(format!(
            "Items {in_progress:?} are all in_progress; exactly one item may be in progress at a time: finish one (done) or set the others back to pending."
        ));
    }
    Ok(items)
}

/// The reminder of the list, or `None` when it is empty.
pub fn reminder(items: &[TodoItem]) -> Option<String> {
    if items.is_empty() {
        return None;
    }
    let mut text = String::from("Your todo list (update it with write_todos as you go):\n");
    for t in items {
        let mark = match t.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Done => "[x]",
        };
        text.push_str(&format!("{mark} {}\n", t.content));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_item_in_progress_at_most_and_errors_say_what_to_send() {
        let ok = r#"{"todos": [
            {"content": "Read the failing test", "active_form": "Reading the failing test", "status": "done"},
            {"content": "Fix add()", "active_form": "Fixing add()", "status": "in_progress"},
            {"content": "Run the tests", "active_form": "Running the tests", "status": "pending"}]}"#;
        let items = parse(ok).unwrap_or_default();
        assert_eq!(items.len(), 3);
        assert_eq!(
            reminder(&items).unwrap_or_default(),
            "Your todo list (update it with write_todos as you go):\n[x] Read the failing test\n[>] Fix add()\n[ ] Run the tests\n"
        );
        let two = ok.replace("\"done\"", "\"in_progress\"");
        assert!(
            parse(&two)
                .unwrap_err()
                .contains("Items [1, 2] are all in_progress")
        );
        let bad_status = ok.replace("\"pending\"", "\"later\"");
        assert!(
            parse(&bad_status)
                .unwrap_err()
                .contains("pending, in_progress or done")
        );
        assert!(
            parse(r#"{"todos": [{"content": " ", "active_form": "", "status": "pending"}]}"#)
                .unwrap_err()
                .contains("Item 1 has no content")
        );
        assert_eq!(
            parse(r#"{"todos": []}"#).map(|v| v.len()),
            Ok(0),
            "an empty list clears it"
        );
        assert_eq!(reminder(&[]), None);
    }
}
