//! The OpenAI-compatible Chat Completions wire format (`POST /v1/chat/completions`): function
//! calling, as OpenAI, vLLM, Ollama, llama.cpp server and OpenRouter speak it.

use serde_json::{Value, json};

use crate::provider::{Conversation, ModelTurn, Part, ProviderError, Role, Usage};

/// The request body.
pub(crate) fn request(model: &str, max_tokens: u32, c: &Conversation) -> Value {
    let mut messages = vec![json!({"role": "system", "content": c.system})];
    for m in &c.messages {
        match m.role {
            Role::User => {
                // Tool results are messages of their own, right after the assistant's call; an
                // image goes in the user message after them (tool messages carry text only).
                let mut text = String::new();
                let mut images = Vec::new();
                for p in &m.parts {
                    match p {
                        Part::ToolResult { id, content, .. } => messages.push(json!({"role": "tool", "tool_call_id": id, "content": content})),
                        Part::Text(t) => text.push_str(t),
                        Part::Image { mime, data } => images.push(json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})),
                        Part::ToolCall { .. } | Part::Native(_) | Part::Acknowledged { .. } => {}
                    }
                }
                if !images.is_empty() {
                    let mut content = vec![json!({"type": "text", "text": text})];
                    content.extend(images);
                    messages.push(json!({"role": "user", "content": content}));
                } else if !text.is_empty() {
                    messages.push(json!({"role": "user", "content": text}));
                }
            }
            Role::Assistant => {
                let text: String = m
                    .parts
                    .iter()
                    .filter_map(|p| {
                        if let Part::Text(t) = p {
                            Some(t.as_str())
                        } else {
                            None
                        }
                    })
                    .collect();
                let calls: Vec<Value> = m
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolCall { id, name, input } => {
                            Some(json!({"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}}))
                        }
                        _ => None,
                    })
                    .collect();
                let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    message["tool_calls"] = json!(calls);
                }
                messages.push(message);
            }
        }
    }
    let tools: Vec<Value> =
        c.tools.iter().map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}})).collect();
    json!({"model": model, "max_tokens": max_tokens, "messages": messages, "tools": tools, "tool_choice": "required", "parallel_tool_calls": false,
        "stream": true, "stream_options": {"include_usage": true}})
}

/// The response: `choices[0].message` with `content` and `tool_calls`, and `usage`.
pub(crate) fn response(v: &Value) -> Result<ModelTurn, ProviderError> {
    let garbage = |why: &str| ProviderError::Garbage(why.to_owned());
    if let Some(message) = v.pointer("/error/message").and_then(Value::as_str) {
        return Err(ProviderError::Request(message.chars().take(300).collect()));
    }
    let message = v
        .pointer("/choices/0/message")
        .ok_or_else(|| garbage("no choices[0].message"))?;
    let mut turn = ModelTurn {
        text: message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        ..ModelTurn::default()
    };
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| garbage("a tool call without an id"))?;
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| garbage("a tool call without a function name"))?;
        let arguments = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        // Arguments that are not JSON reach the planner as a string, which it refuses to the model.
        let input = serde_json::from_str(arguments)
            .unwrap_or(Value::String(arguments.chars().take(2000).collect()));
        turn.tool_calls
            .push((id.to_owned(), name.to_owned(), input));
    }
    let count = |k: &str| {
        v.pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    // OpenAI caches long prefixes by itself; `prompt_tokens` includes what it read from the cache.
    let cached = count("prompt_tokens_details/cached_tokens");
    turn.usage = Usage {
        input_tokens: count("prompt_tokens"),
        output_tokens: count("completion_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    };
    Ok(turn)
}

/// The completion from the stream's chunks (`choices[0].delta` with `content` and `tool_calls`
/// pieces by index, `usage` in the last chunk; `[DONE]` ends it), assembled into the
/// non-streaming shape.
pub(crate) fn from_events(events: &[(String, Value)]) -> Result<Value, ProviderError> {
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut usage = Value::Null;
    let mut any = false;
    for (_, chunk) in events {
        if let Some(message) = chunk.pointer("/error/message").and_then(Value::as_str) {
            return Err(ProviderError::Request(message.chars().take(300).collect()));
        }
        if chunk.get("usage").is_some_and(|u| !u.is_null()) {
            usage = chunk["usage"].clone();
        }
        let Some(delta) = chunk.pointer("/choices/0/delta") else {
            continue;
        };
        any = true;
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            content.push_str(text);
        }
        for piece in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let i = piece
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(calls.len() as u64) as usize;
            if i > 64 {
                return Err(ProviderError::Garbage(
                    "a tool call index out of range".into(),
                ));
            }
            while calls.len() <= i {
                calls.push(json!({"type": "function", "function": {"name": "", "arguments": ""}}));
            }
            if let Some(id) = piece.get("id").and_then(Value::as_str) {
                calls[i]["id"] = json!(id);
            }
            for field in ["name", "arguments"] {
                if let Some(part) = piece
                    .pointer(&format!("/function/{field}"))
                    .and_then(Value::as_str)
                {
                    let joined = format!(
                        "{}{part}",
                        calls[i]["function"][field].as_str().unwrap_or_default()
                    );
                    calls[i]["function"][field] = json!(joined);
                }
            }
        }
    }
    if !any {
        return Err(ProviderError::Garbage("the stream has no choices".into()));
    }
    let mut message = json!({"role": "assistant", "content": if content.is_empty() { Value::Null } else { json!(content) }});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    Ok(json!({"choices": [{"index": 0, "message": message}], "usage": usage}))
}
