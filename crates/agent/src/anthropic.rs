//! The Anthropic Messages API wire format (`POST /v1/messages`): tool use with our tools.

use serde_json::{Value, json};

use crate::provider::{Conversation, ModelTurn, Part, ProviderError, Role, Usage};

/// The request body.
pub(crate) fn request(model: &str, max_tokens: u32, c: &Conversation) -> Value {
    let mut messages: Vec<Value> = c
        .messages
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(text) => json!({"type": "text", "text": text}),
                    Part::ToolCall { id, name, input } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                    Part::ToolResult { id, content, is_error } => json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}),
                    Part::Image { mime, data } => json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}),
                    Part::Native(_) | Part::Acknowledged { .. } => Value::Null,
                })
                .filter(|b| !b.is_null())
                .collect();
            json!({"role": match m.role { Role::User => "user", Role::Assistant => "assistant" }, "content": content})
        })
        .collect();
    let tools: Vec<Value> = c
        .tools
        .iter()
        .map(|t| match &t.native {
            Some((native, _)) => native.clone(),
            None => json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}),
        })
        .collect();
    // Prompt caching: the tools and the system prompt are the same in every request of a run, and
    // the history up to the model's previous answer is the same in the next request (the latest
    // page is what the planner rewrites). A breakpoint after each lets the next request read
    // them from the cache (a prefix under the model's minimum is simply not cached).
    if let Some(i) = messages
        .len()
        .checked_sub(2)
        .filter(|i| messages[*i]["role"] == "assistant")
        && let Some(last) = messages[i]["content"]
            .as_array_mut()
            .and_then(|blocks| blocks.last_mut())
    {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    json!({
        "model": model,
        "max_tokens": max_tokens,
        "system": [{"type": "text", "text": c.system, "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
        "tools": tools,
        "stream": true,
        // One tool call per answer: the planner acts once per step.
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
    })
}

/// The response: `content[]` of `text` and `tool_use` blocks, and `usage`.
pub(crate) fn response(v: &Value) -> Result<ModelTurn, ProviderError> {
    let garbage = |why: &str| ProviderError::Garbage(why.to_owned());
    if v.get("type").and_then(Value::as_str) == Some("error") {
        let message = v
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("an error");
        return Err(ProviderError::Request(message.chars().take(300).collect()));
    }
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| garbage("no content array"))?;
    let mut turn = ModelTurn::default();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => turn.text.push_str(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => {
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| garbage("a tool_use without an id"))?;
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| garbage("a tool_use without a name"))?;
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                turn.tool_calls
                    .push((id.to_owned(), name.to_owned(), input));
            }
            _ => {} // thinking and other blocks are not for the planner
        }
    }
    let count = |k: &str| {
        v.pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    // Anthropic's `input_tokens` leaves out what was read from or written to the cache.
    let (read, write) = (
        count("cache_read_input_tokens"),
        count("cache_creation_input_tokens"),
    );
    turn.usage = Usage {
        input_tokens: count("input_tokens") + read + write,
        output_tokens: count("output_tokens"),
        cache_read_tokens: read,
        cache_write_tokens: write,
    };
    Ok(turn)
}

/// The message from the stream's events (`message_start`, `content_block_start`/`_delta`/`_stop`,
/// `message_delta`, `message_stop`; an `error` event is the error), assembled into the
/// non-streaming shape.
pub(crate) fn from_events(events: &[(String, Value)]) -> Result<Value, ProviderError> {
    let mut message: Option<Value> = None;
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    let mut stopped = false;
    for (event, data) in events {
        match data.get("type").and_then(Value::as_str).unwrap_or(event) {
            "message_start" => message = data.get("message").cloned(),
            "content_block_start" => {
                blocks.push(data.get("content_block").cloned().unwrap_or(Value::Null));
                partial.push(String::new());
            }
            "content_block_delta" => {
                let i = data
                    .get("index")
                    .and_then(Value::as_u64)
                    .map(|i| i as usize)
                    .filter(|i| *i < blocks.len())
                    .ok_or_else(|| {
                        ProviderError::Garbage("a delta for a block that did not start".into())
                    })?;
                let delta = data.get("delta").cloned().unwrap_or(Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = format!(
                            "{}{}",
                            blocks[i]["text"].as_str().unwrap_or_default(),
                            delta["text"].as_str().unwrap_or_default()
                        );
                        blocks[i]["text"] = json!(text);
                    }
                    Some("input_json_delta") => {
                        partial[i].push_str(delta["partial_json"].as_str().unwrap_or_default())
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let (Some(m), Some(out)) =
                    (message.as_mut(), data.pointer("/usage/output_tokens"))
                {
                    m["usage"]["output_tokens"] = out.clone();
                }
            }
            "message_stop" => stopped = true,
            "error" => {
                let why = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error event");
                return Err(ProviderError::Request(why.chars().take(300).collect()));
            }
            _ => {}
        }
    }
    let mut message =
        message.ok_or_else(|| ProviderError::Garbage("the stream has no message_start".into()))?;
    if !stopped {
        return Err(ProviderError::Request(
            "the stream broke off before message_stop".into(),
        ));
    }
    for (block, json_text) in blocks.iter_mut().zip(partial) {
        if block["type"] == "tool_use" && !json_text.is_empty() {
            block["input"] = serde_json::from_str(&json_text)
                .unwrap_or(Value::String(json_text.chars().take(2000).collect()));
        }
    }
    message["content"] = json!(blocks);
    Ok(message)
}
