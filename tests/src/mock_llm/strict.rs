//! The mock's strictness: before answering, each request is checked the way the real API checks
//! it, and refused with a 400 in that provider's own error shape and words — call/result pairing
//! and order, Anthropic's `tool_use`/`tool_result` adjacency and object inputs, Gemini's turn order
//! and schema subset, and that what the provider signed (Gemini `thoughtSignature`s, Anthropic
//! thinking blocks) comes back unchanged; the parameters and message shapes refused by model
//! name or shape are in [`params`]. The messages are the real APIs' (with indices).

mod params;
mod reasoning;

use super::Reply;
use serde_json::{Value, json};

/// What the mock has sent that a later request must carry back unchanged.
#[derive(Debug, Default)]
pub(super) struct Issued {
    /// Gemini function calls sent with a `thoughtSignature`: name, args, signature.
    gemini: Vec<(String, Value, String)>,
    /// Every Gemini `thoughtSignature` sent, on any part.
    gemini_signatures: Vec<String>,
    /// Anthropic thinking blocks sent with the `tool_use` ids of the same message.
    anthropic: Vec<(Vec<String>, Vec<Value>)>,
    /// OpenAI-format `reasoning_content` (DeepSeek) sent with the tool call ids of its message.
    reasoning: Vec<(Vec<String>, String)>,
}

/// The wire format a request path belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    OpenAi,
    Anthropic,
    Gemini,
}

pub(super) fn format_of(path: &str) -> Option<Format> {
    if path.ends_with("/chat/completions") {
        Some(Format::OpenAi)
    } else if path.ends_with("/messages") {
        Some(Format::Anthropic)
    } else if path.contains(":generateContent") || path.contains(":streamGenerateContent") {
        Some(Format::Gemini)
    } else {
        None
    }
}

/// Checks a request as the real API would; `Err` is the 400 it would answer.
pub(super) fn check(path: &str, body: &Value, issued: &Issued) -> Result<(), Reply> {
    match format_of(path) {
        Some(Format::OpenAi) => params::check_openai(body)
            .and_then(|()| check_openai(body))
            .and_then(|()| reasoning::check(body, issued)),
        Some(Format::Anthropic) => params::check_anthropic(body)
            .and_then(|()| super::prompt_cache::check(body).map_err(anthropic_error))
            .and_then(|()| check_anthropic(body, issued)),
        Some(Format::Gemini) => check_gemini(body, issued),
        None => Ok(()),
    }
}

fn bad_request(body: Value) -> Reply {
    Reply::Json {
        status: 400,
        headers: vec![],
        body: body.to_string(),
    }
}

fn openai_error(message: String, param: String) -> Reply {
    bad_request(
        json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": null}}),
    )
}

fn anthropic_error(message: String) -> Reply {
    bad_request(
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
    )
}

fn gemini_error(message: String) -> Reply {
    bad_request(json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}))
}

fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn check_openai(body: &Value) -> Result<(), Reply> {
    let msgs = array(body, "messages");
    let mut open: Option<(usize, Vec<&str>)> = None; // the last assistant's unanswered call ids
    for (i, m) in msgs.iter().enumerate() {
        let role = str_of(m, "role");
        if role == "tool" {
            let id = str_of(m, "tool_call_id");
            match open.as_mut() {
                None => return Err(openai_error(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.".into(),
                    format!("messages.[{i}].role"),
                )),
                Some((_, ids)) => match ids.iter().position(|x| *x == id) {
                    Some(p) => {
                        ids.remove(p);
                    }
                    None => return Err(openai_error(
                        format!("Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."),
                        format!("messages.[{i}].tool_call_id"),
                    )),
                },
            }
            continue;
        }
        if let Some((at, ids)) = open.take().filter(|(_, ids)| !ids.is_empty()) {
            return Err(openai_error(
                format!(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                    ids.join(", ")
                ),
                format!("messages.[{at}].role"),
            ));
        }
        if role == "assistant" && !array(m, "tool_calls").is_empty() {
            let ids = array(m, "tool_calls")
                .iter()
                .map(|c| str_of(c, "id"))
                .collect();
            open = Some((i, ids));
        }
    }
    match open.filter(|(_, ids)| !ids.is_empty()) {
        Some((at, ids)) => Err(openai_error(
            format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                ids.join(", ")
            ),
            format!("messages.[{at}].role"),
        )),
        None => Ok(()),
    }
}

/// A message's content blocks (text content counts as one text block).
fn blocks(m: &Value) -> Vec<Value> {
    match m.get("content") {
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        Some(Value::Array(blocks)) => blocks.clone(),
        _ => vec![],
    }
}

fn check_anthropic(body: &Value, issued: &Issued) -> Result<(), Reply> {
    let msgs = array(body, "messages");
    for (i, m) in msgs.iter().enumerate() {
        let role = str_of(m, "role");
        if role != "user" && role != "assistant" {
            return Err(anthropic_error(format!(
                "messages.{i}.role: Unexpected role \"{role}\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role."
            )));
        }
        let content = blocks(m);
        if content.is_empty() && !(role == "assistant" && i + 1 == msgs.len()) {
            return Err(anthropic_error(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
            )));
        }
        let uses: Vec<&str> = content
            .iter()
            .filter(|b| str_of(b, "type") == "tool_use")
            .map(|b| str_of(b, "id"))
            .collect();
        for (j, b) in content.iter().enumerate() {
            if str_of(b, "type") == "tool_use" && !b["input"].is_object() {
                return Err(anthropic_error(format!(
                    "messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
                )));
            }
        }
        let previous = i
            .checked_sub(1)
            .map(|p| blocks(&msgs[p]))
            .unwrap_or_default();
        let previous_uses: Vec<&str> = previous
            .iter()
            .filter(|b| str_of(b, "type") == "tool_use")
            .map(|b| str_of(b, "id"))
            .collect();
        for (j, b) in content.iter().enumerate() {
            let id = str_of(b, "tool_use_id");
            if str_of(b, "type") == "tool_result" && !previous_uses.contains(&id) {
                return Err(anthropic_error(format!(
                    "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                )));
            }
        }
        if !uses.is_empty() {
            let next = msgs.get(i + 1).map(blocks).unwrap_or_default();
            let answered: Vec<&str> = next
                .iter()
                .filter(|b| str_of(b, "type") == "tool_result")
                .map(|b| str_of(b, "tool_use_id"))
                .collect();
            let missing: Vec<&str> = uses
                .iter()
                .copied()
                .filter(|u| !answered.contains(u))
                .collect();
            if !missing.is_empty() {
                return Err(anthropic_error(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    missing.join(", ")
                )));
            }
        }
    }
    check_thinking(msgs, issued)
}

/// Thinking blocks the mock sent must come back unchanged; the last assistant message of a tool
/// loop must start with its own.
fn check_thinking(msgs: &[Value], issued: &Issued) -> Result<(), Reply> {
    let last_assistant = msgs.iter().rposition(|m| str_of(m, "role") == "assistant");
    for (ids, expected) in &issued.anthropic {
        let found = msgs.iter().position(|m| {
            str_of(m, "role") == "assistant"
                && blocks(m).iter().any(|b| {
                    str_of(b, "type") == "tool_use" && ids.iter().any(|id| id == str_of(b, "id"))
                })
        });
        let Some(i) = found else { continue };
        let content = blocks(&msgs[i]);
        let sent: Vec<(usize, &Value)> = content
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(str_of(b, "type"), "thinking" | "redacted_thinking"))
            .collect();
        if sent.is_empty() {
            if Some(i) == last_assistant {
                let found = str_of(&content[0], "type");
                return Err(anthropic_error(format!(
                    "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
                )));
            }
            continue; // earlier turns' thinking may be left out
        }
        for (k, (j, block)) in sent.iter().enumerate() {
            if expected.get(k) != Some(*block) {
                return Err(anthropic_error(format!(
                    "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                )));
            }
        }
    }
    Ok(())
}

/// The fields of Gemini's `Schema` (an OpenAPI 3.0 subset); anything else in `parameters` is a 400.
const GEMINI_SCHEMA_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

fn schema_errors(schema: &Value, at: &str, out: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        return;
    };
    for (key, value) in map {
        if !GEMINI_SCHEMA_FIELDS.contains(&key.as_str()) {
            out.push(format!(
                "Invalid JSON payload received. Unknown name \"{key}\" at '{at}': Cannot find field."
            ));
            continue;
        }
        match key.as_str() {
            "properties" => {
                for (k, (_, p)) in value.as_object().into_iter().flatten().enumerate() {
                    schema_errors(p, &format!("{at}.properties[{k}].value"), out);
                }
            }
            "items" => schema_errors(value, &format!("{at}.items"), out),
            "anyOf" => {
                for (k, s) in value.as_array().into_iter().flatten().enumerate() {
                    schema_errors(s, &format!("{at}.any_of[{k}]"), out);
                }
            }
            _ => {}
        }
    }
}

fn check_gemini(body: &Value, issued: &Issued) -> Result<(), Reply> {
    let mut problems = Vec::new();
    for (t, tool) in array(body, "tools").iter().enumerate() {
        for (d, decl) in array(tool, "functionDeclarations").iter().enumerate() {
            if let Some(p) = decl.get("parameters") {
                let at = format!("tools[{t}].function_declarations[{d}].parameters");
                schema_errors(p, &at, &mut problems);
            }
        }
    }
    if !problems.is_empty() {
        return Err(gemini_error(problems.join("\n")));
    }
    let contents = array(body, "contents");
    let count = |c: &Value, kind: &str| {
        array(c, "parts")
            .iter()
            .filter(|p| p.get(kind).is_some())
            .count()
    };
    for (i, c) in contents.iter().enumerate() {
        let role = str_of(c, "role");
        if role != "user" && role != "model" {
            return Err(gemini_error("Please use a valid role: user, model.".into()));
        }
        let previous = i.checked_sub(1).map(|p| &contents[p]);
        if count(c, "functionCall") > 0 && previous.is_none_or(|p| str_of(p, "role") != "user") {
            return Err(gemini_error("Please ensure that function call turn comes immediately after a user turn or after a function response turn.".into()));
        }
        let responses = count(c, "functionResponse");
        if responses > 0 {
            let calls = previous
                .filter(|p| str_of(p, "role") == "model")
                .map_or(0, |p| count(p, "functionCall"));
            if calls == 0 {
                return Err(gemini_error("Please ensure that function response turn comes immediately after a function call turn.".into()));
            }
            if calls != responses {
                return Err(gemini_error("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.".into()));
            }
        }
    }
    check_signatures(contents, issued)
}

/// In the current turn (after the last user content with text), the first call of each model
/// step must carry the signature the mock sent with it; a signature the mock never sent is
/// corrupt.
fn check_signatures(contents: &[Value], issued: &Issued) -> Result<(), Reply> {
    let turn_start = contents
        .iter()
        .rposition(|c| {
            str_of(c, "role") == "user" && array(c, "parts").iter().any(|p| p.get("text").is_some())
        })
        .unwrap_or(0);
    for (i, c) in contents.iter().enumerate() {
        for (position, part) in array(c, "parts").iter().enumerate() {
            let sent = part.get("thoughtSignature").and_then(Value::as_str);
            if let Some(sig) = sent
                && !issued.gemini_signatures.iter().any(|s| s == sig)
            {
                return Err(gemini_error("Corrupted thought signature.".into()));
            }
            let Some(call) = part.get("functionCall") else {
                continue;
            };
            let first_call = array(c, "parts")
                .iter()
                .position(|p| p.get("functionCall").is_some())
                == Some(position);
            let (name, args) = (str_of(call, "name"), &call["args"]);
            let expected: Vec<&str> = issued
                .gemini
                .iter()
                .filter(|(n, a, _)| n == name && a == args)
                .map(|(_, _, s)| s.as_str())
                .collect();
            if i > turn_start && first_call && !expected.is_empty() {
                match sent {
                    None => {
                        return Err(gemini_error(format!(
                            "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{name}` , position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                            position + 1
                        )));
                    }
                    Some(sig) if !expected.contains(&sig) => {
                        return Err(gemini_error("Corrupted thought signature.".into()));
                    }
                    Some(_) => {}
                }
            }
        }
    }
    Ok(())
}

/// Notes what a reply hands the client that must come back: Gemini signatures on calls, and
/// Anthropic thinking blocks (whole, streamed deltas applied) with their message's tool ids.
pub(super) fn record(issued: &mut Issued, reply: &Reply) {
    let values: Vec<Value> = match reply {
        Reply::Json {
            status: 200, body, ..
        } => serde_json::from_str(body).into_iter().collect(),
        Reply::Sse { events, .. } | Reply::Thinking { events, .. } => events
            .iter()
            .filter_map(|e| serde_json::from_str(e).ok())
            .collect(),
        _ => return,
    };
    reasoning::record(issued, &values);
    let mut thinking: Vec<(u64, Value)> = Vec::new();
    let mut tool_ids = Vec::new();
    for v in &values {
        for part in v
            .pointer("/candidates/0/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(sig) = part.get("thoughtSignature").and_then(Value::as_str) else {
                continue;
            };
            issued.gemini_signatures.push(sig.to_owned());
            if let Some(call) = part.get("functionCall") {
                issued.gemini.push((
                    str_of(call, "name").to_owned(),
                    call["args"].clone(),
                    sig.to_owned(),
                ));
            }
        }
        let whole = array(v, "content")
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, b)| (i as u64, b));
        let started = v
            .get("content_block")
            .cloned()
            .map(|b| (v["index"].as_u64().unwrap_or(0), b));
        for (index, block) in whole.chain(started) {
            match str_of(&block, "type") {
                "tool_use" => tool_ids.push(str_of(&block, "id").to_owned()),
                "thinking" | "redacted_thinking" => thinking.push((index, block)),
                _ => {}
            }
        }
        let index = v["index"].as_u64().unwrap_or(0);
        let field = match str_of(&v["delta"], "type") {
            "thinking_delta" => "thinking",
            "signature_delta" => "signature",
            _ => continue,
        };
        if let Some((_, block)) = thinking.iter_mut().find(|(i, _)| *i == index) {
            let so_far = str_of(block, field).to_owned();
            block[field] = json!(format!("{so_far}{}", str_of(&v["delta"], field)));
        }
    }
    if !thinking.is_empty() {
        issued
            .anthropic
            .push((tool_ids, thinking.into_iter().map(|(_, b)| b).collect()));
    }
}
