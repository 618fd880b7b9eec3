//! The Anthropic Messages API wire format (`POST /v1/messages`): tool use with our tools.

use serde_json::{Value, json};

use crate::provider::{Conversation, ModelTurn, Part, ProviderError, Role, Usage};

/// The request body.
pub(crate) fn request(model: &str, max_tokens: u32, c: &Conversation) -> Value {
    let messages: Vec<Value> = c
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
                })
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
    json!({
        "model": model,
        "max_tokens": max_tokens,
        "system": c.system,
        "messages": messages,
        "tools": tools,
        // One tool call per answer: the planner acts once per step.
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
    })
}

/// The response: `content[]` of `text` and `tool_use` blocks, and `usage`.
pub(crate) fn response(v: &Value) -> Result<ModelTurn, ProviderError> {
    let garbage = |why: &str| ProviderError::Garbage(why.to_owned());
    if v.get("type").and_then(Value::as_str) == Some("error") {
        let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("an error");
        return Err(ProviderError::Request(message.chars().take(300).collect()));
    }
    let content = v.get("content").and_then(Value::as_array).ok_or_else(|| garbage("no content array"))?;
    let mut turn = ModelTurn { text: String::new(), tool_calls: Vec::new(), usage: Usage::default() };
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => turn.text.push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).ok_or_else(|| garbage("a tool_use without an id"))?;
                let name = block.get("name").and_then(Value::as_str).ok_or_else(|| garbage("a tool_use without a name"))?;
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                turn.tool_calls.push((id.to_owned(), name.to_owned(), input));
            }
            _ => {} // thinking and other blocks are not for the planner
        }
    }
    let count = |k: &str| v.pointer(&format!("/usage/{k}")).and_then(Value::as_u64).unwrap_or(0);
    turn.usage = Usage { input_tokens: count("input_tokens"), output_tokens: count("output_tokens") };
    Ok(turn)
}
