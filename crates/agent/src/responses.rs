//! The OpenAI Responses API wire format (`POST /v1/responses`): our tools as function tools,
//! and the computer tool (`computer_call` items with one `action` or batched `actions[]`,
//! answered by `computer_call_output` with the next screenshot and the safety checks a person
//! acknowledged). Stateless: `store: false`, the whole conversation sent each time, the output
//! items of each answer (reasoning included, encrypted) passed back as they came.

use serde_json::{Value, json};

use crate::provider::{Conversation, ModelTurn, Part, ProviderError, Role, Usage};

/// The request body.
pub(crate) fn request(model: &str, max_tokens: u32, c: &Conversation) -> Value {
    let mut input = Vec::new();
    // Which call ids are computer calls (their results are `computer_call_output`).
    let mut computer_calls = std::collections::HashSet::new();
    for m in &c.messages {
        match m.role {
            Role::Assistant => {
                let native: Vec<&Value> = m
                    .parts
                    .iter()
                    .filter_map(|p| {
                        if let Part::Native(v) = p {
                            Some(v)
                        } else {
                            None
                        }
                    })
                    .collect();
                for p in &m.parts {
                    if let Part::ToolCall { id, name, .. } = p
                        && name == "computer"
                    {
                        computer_calls.insert(id.clone());
                    }
                }
                if !native.is_empty() {
                    input.extend(native.into_iter().cloned());
                    continue;
                }
                for p in &m.parts {
                    match p {
                        Part::Text(t) if !t.is_empty() => input.push(json!({"role": "assistant", "content": t})),
                        Part::ToolCall { id, name, input: args } => {
                            input.push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": args.to_string()}))
                        }
                        _ => {}
                    }
                }
            }
            Role::User => {
                let image = m.parts.iter().find_map(|p| {
                    if let Part::Image { mime, data } = p {
                        Some(format!("data:{mime};base64,{data}"))
                    } else {
                        None
                    }
                });
                let mut content = Vec::new();
                let mut image_used = false;
                for p in &m.parts {
                    match p {
                        Part::ToolResult {
                            id, content: text, ..
                        } if computer_calls.contains(id) => {
                            let acknowledged: Vec<Value> = m
                                .parts
                                .iter()
                                .filter_map(|p| match p {
                                    Part::Acknowledged { id: of, checks } if of == id => {
                                        Some(checks.clone())
                                    }
                                    _ => None,
                                })
                                .flatten()
                                .collect();
                            // A computer call's output is a screenshot; what happened goes beside it as text.
                            let mut output = json!({"type": "computer_call_output", "call_id": id});
                            if let Some(url) = &image {
                                output["output"] =
                                    json!({"type": "computer_screenshot", "image_url": url});
                                image_used = true;
                            }
                            if !acknowledged.is_empty() {
                                output["acknowledged_safety_checks"] = json!(acknowledged);
                            }
                            input.push(output);
                            content.push(json!({"type": "input_text", "text": text}));
                        }
                        Part::ToolResult {
                            id, content: text, ..
                        } => {
                            input.push(json!({"type": "function_call_output", "call_id": id, "output": text}));
                        }
                        Part::Text(t) => content.push(json!({"type": "input_text", "text": t})),
                        _ => {}
                    }
                }
                if let (Some(url), false) = (&image, image_used) {
                    content
                        .push(json!({"type": "input_image", "image_url": url, "detail": "high"}));
                }
                if !content.is_empty() {
                    input.push(json!({"role": "user", "content": content}));
                }
            }
        }
    }
    let computer = c.tools.iter().any(|t| t.native.is_some());
    let tools: Vec<Value> = c
        .tools
        .iter()
        .map(|t| match &t.native {
            Some((native, _)) => native.clone(),
            None => json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema, "strict": false}),
        })
        .collect();
    json!({
        "model": model,
        "instructions": c.system,
        "input": input,
        "tools": tools,
        // With the computer tool the model may also answer in text; the planner asks again.
        "tool_choice": if computer { "auto" } else { "required" },
        "parallel_tool_calls": false,
        "max_output_tokens": max_tokens,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "truncation": "auto",
        "stream": true,
    })
}

/// The response: `output[]` of `message`, `function_call`, `computer_call` and `reasoning`
/// items, and `usage`. A computer call becomes the tool call `computer` with its actions
/// (`action` or `actions[]`) and pending safety checks.
pub(crate) fn response(v: &Value) -> Result<ModelTurn, ProviderError> {
    let garbage = |why: &str| ProviderError::Garbage(why.to_owned());
    if let Some(message) = v.pointer("/error/message").and_then(Value::as_str) {
        return Err(ProviderError::Request(message.chars().take(300).collect()));
    }
    if v.get("status").and_then(Value::as_str) == Some("failed") {
        return Err(ProviderError::Request("the response failed".into()));
    }
    let output = v
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| garbage("no output array"))?;
    let mut turn = ModelTurn::default();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for c in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if c.get("type").and_then(Value::as_str) == Some("output_text") {
                        turn.text
                            .push_str(c.get("text").and_then(Value::as_str).unwrap_or_default());
                    }
                }
            }
            Some("function_call") => {
                let id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| garbage("a function_call without a call_id"))?;
                let name = item
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| garbage("a function_call without a name"))?;
                let arguments = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or("{}");
                let input = serde_json::from_str(arguments)
                    .unwrap_or(Value::String(arguments.chars().take(2000).collect()));
                turn.tool_calls
                    .push((id.to_owned(), name.to_owned(), input));
            }
            Some("computer_call") => {
                let id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| garbage("a computer_call without a call_id"))?;
                let actions = match (
                    item.get("actions").and_then(Value::as_array),
                    item.get("action"),
                ) {
                    (Some(batch), _) => batch.clone(),
                    (None, Some(one)) if one.is_object() => vec![one.clone()],
                    _ => return Err(garbage("a computer_call without an action")),
                };
                let checks = item
                    .get("pending_safety_checks")
                    .cloned()
                    .unwrap_or_else(|| json!([]));
                turn.tool_calls.push((
                    id.to_owned(),
                    "computer".into(),
                    json!({"actions": actions, "pending_safety_checks": checks}),
                ));
            }
            _ => {} // reasoning and others: passed back, not for the planner
        }
        turn.native.push(item.clone());
    }
    let count = |k: &str| {
        v.pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let cached = count("input_tokens_details/cached_tokens");
    turn.usage = Usage {
        input_tokens: count("input_tokens"),
        output_tokens: count("output_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    };
    Ok(turn)
}

/// The final response from the stream's events (`response.completed` carries it whole; a
/// `response.failed` or `error` event is the error).
pub(crate) fn from_events(events: &[(String, Value)]) -> Result<Value, ProviderError> {
    for (event, data) in events {
        let kind = data.get("type").and_then(Value::as_str).unwrap_or(event);
        match kind {
            "response.completed" | "response.incomplete" => {
                return data.get("response").cloned().ok_or_else(|| {
                    ProviderError::Garbage("a completed event without its response".into())
                });
            }
            "response.failed" => {
                let message = data
                    .pointer("/response/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("the response failed");
                return Err(ProviderError::Request(message.chars().take(300).collect()));
            }
            "error" => {
                let message = data
                    .pointer("/error/message")
                    .or(data.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("an error event");
                return Err(ProviderError::Request(message.chars().take(300).collect()));
            }
            _ => {}
        }
    }
    Err(ProviderError::Garbage(
        "the stream ended without a completed response".into(),
    ))
}
