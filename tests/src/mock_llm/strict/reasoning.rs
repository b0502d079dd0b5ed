//! DeepSeek's thinking mode over the OpenAI chat-completions format: the model's
//! `reasoning_content` must come back on the assistant message of a tool step, or the request is
//! refused. "Since the tool invocation process in thinking mode requires users to pass back
//! reasoning_content to the API, if your code does not correctly pass back reasoning_content, the
//! API will return a 400 error" (<https://api-docs.deepseek.com/guides/thinking_mode#tool-calls>);
//! the answer is the API's own, quoted in abhigyanpatwari/GitNexus#43.
//!
//! The rule applies to the tool steps whose reply carried `reasoning_content` (a server that
//! sends none — OpenAI itself — wants none back), and the text must be the one sent.

use super::{Issued, array, openai_error, str_of};
use crate::mock_llm::Reply;
use serde_json::Value;

/// Notes the `reasoning_content` of a streamed or whole OpenAI-format reply, with the ids of the
/// tool calls it came with.
pub(super) fn record(issued: &mut Issued, values: &[Value]) {
    let mut text = String::new();
    let mut ids = Vec::new();
    for v in values {
        let Some(choice) = array(v, "choices").first() else {
            continue;
        };
        let message = choice
            .get("delta")
            .or_else(|| choice.get("message"))
            .unwrap_or(&Value::Null);
        text.push_str(str_of(message, "reasoning_content"));
        for call in array(message, "tool_calls") {
            let id = str_of(call, "id");
            if !id.is_empty() {
                ids.push(id.to_owned());
            }
        }
    }
    if !text.is_empty() && !ids.is_empty() {
        issued.reasoning.push((ids, text));
    }
}

/// Refuses a request whose tool step left out (or changed) the `reasoning_content` it came with.
pub(super) fn check(body: &Value, issued: &Issued) -> Result<(), Reply> {
    for (i, m) in array(body, "messages").iter().enumerate() {
        if str_of(m, "role") != "assistant" {
            continue;
        }
        let ids: Vec<&str> = array(m, "tool_calls")
            .iter()
            .map(|c| str_of(c, "id"))
            .collect();
        let sent = issued
            .reasoning
            .iter()
            .find(|(issued_ids, _)| issued_ids.iter().any(|id| ids.contains(&id.as_str())));
        if let Some((_, text)) = sent
            && m.get("reasoning_content").and_then(Value::as_str) != Some(text.as_str())
        {
            return Err(openai_error(
                format!(
                    "Missing `reasoning_content` field in the assistant message at message index {i}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
                ),
                format!("messages.[{i}].reasoning_content"),
            ));
        }
    }
    Ok(())
}
