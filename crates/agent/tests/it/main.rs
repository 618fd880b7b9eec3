//! Runs driven by a model over each provider's wire format: loopback servers answer in the
//! documented response shapes (the model's moves scripted from the page it is shown), against
//! real Chromium and the form fixture. Only the runtime decides how each run ends.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{Accounting, Limits, ModelChoice, ModelPlanner, Provider, ProviderError, ProviderKind};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use protocol::{ReasonCode, RunStatus};
use runtime::{Assertion, RunRequest, Runtime, RuntimeConfig};
use serde_json::{Value, json};
use test_support::FixtureServer;

/// How the scripted model behaves.
#[derive(Clone, Copy, PartialEq)]
enum Script {
    /// Fill the form's Name with Ada, submit, then say done.
    SignUp,
    /// First an action the runtime cannot read, then as SignUp.
    InvalidFirst,
    /// Claim success at once.
    Liar,
    /// Answer 429 once, then as SignUp.
    RateLimitedOnce,
    /// Never answer (until the request goes away).
    Hang,
    /// Answer a body that is not the provider's shape.
    Garbage,
    /// The canvas target: look, find the red square in the screenshot, click it by point.
    Canvas,
    /// The canvas target through Anthropic's computer tool: click the square in the screenshot.
    Computer,
    /// Through `computer_20251124`: zoom into the square first, then click it.
    ComputerZoom,
    /// Through OpenAI's computer tool: one call with a batch, move then click.
    ComputerBatch,
    /// Through OpenAI's computer tool: a click with a pending safety check; then done, or give
    /// up when it was refused.
    SafetyCheck,
    /// Click a link the server answers as an attachment; once the receipt says the download was
    /// not captured, give up saying so.
    Download,
    /// Wait a moment, step after step (a long run, its history compacted), then give up.
    Wander,
    /// As SignUp, but the first `done` carries a summary longer than the runtime takes.
    LongSummaryFirst,
}

#[derive(Clone)]
struct Model {
    kind: ProviderKind,
    script: Script,
    /// Answer as server-sent events (each provider's streaming format).
    stream: bool,
    requests: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    calls: Arc<AtomicUsize>,
    /// Set when a hanging request's handler was dropped (its connection went away).
    aborted: Arc<AtomicBool>,
    /// Where the model saw the square before it zoomed.
    seen: Arc<Mutex<(f64, f64)>>,
}

/// The latest page the client showed the model (the only one still in the history), or the last
/// text when none is there.
fn last_text(kind: ProviderKind, body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let texts: Vec<String> = match kind {
        ProviderKind::Anthropic => messages
            .iter()
            .filter(|m| m["role"] == "user")
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .map(|b| {
                b["text"]
                    .as_str()
                    .or(b["content"].as_str())
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect(),
        ProviderKind::OpenaiChat => messages
            .iter()
            .filter(|m| m["role"] == "user" || m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect(),
        ProviderKind::OpenaiResponses => body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|item| match item["type"].as_str() {
                Some("function_call_output") => {
                    vec![item["output"].as_str().unwrap_or_default().to_owned()]
                }
                _ if item["role"] == "user" => item["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["text"].as_str().map(str::to_owned))
                    .collect(),
                _ => vec![],
            })
            .collect(),
    };
    texts
        .iter()
        .rev()
        .find(|t| t.contains("</untrusted nonce="))
        .or(texts.last())
        .cloned()
        .unwrap_or_default()
}

/// The latest screenshot the client sent the model (PNG bytes), if any.
fn last_image(kind: ProviderKind, body: &Value) -> Option<Vec<u8>> {
    if kind == ProviderKind::OpenaiResponses {
        let url = body["input"].as_array()?.iter().rev().find_map(|item| {
            match item["type"].as_str() {
                Some("computer_call_output") => {
                    item["output"]["image_url"].as_str().map(str::to_owned)
                }
                _ if item["role"] == "user" => item["content"]
                    .as_array()?
                    .iter()
                    .find_map(|c| c["image_url"].as_str().map(str::to_owned)),
                _ => None,
            }
        })?;
        return runtime::decode_base64(url.strip_prefix("data:image/png;base64,")?);
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let data = messages
        .iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .find_map(|m| {
            m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|b| match kind {
                    ProviderKind::Anthropic if b["type"] == "image" => {
                        b["source"]["data"].as_str().map(str::to_owned)
                    }
                    ProviderKind::OpenaiChat | ProviderKind::OpenaiResponses
                        if b["type"] == "image_url" =>
                    {
                        b["image_url"]["url"]
                            .as_str()
                            .and_then(|u| u.strip_prefix("data:image/png;base64,"))
                            .map(str::to_owned)
                    }
                    _ => None,
                })
        })?;
    runtime::decode_base64(&data)
}

/// A PNG's size from its IHDR header (no decoding needed).
fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" || &png[12..16] != b"IHDR" {
        return None;
    }
    Some((
        u32::from_be_bytes(png[16..20].try_into().ok()?),
        u32::from_be_bytes(png[20..24].try_into().ok()?),
    ))
}

/// Where the fixture's red square (CSS (300, 200)–(340, 240)) is in the screenshot's pixels, from
/// the sizes the page text states, as a vision model would read it off the image.
fn red_square(text: &str, png: &[u8]) -> Option<(f64, f64)> {
    let (width, height) = png_size(png)?;
    let stated = text.split("follows: ").nth(1)?;
    let (image, css) = stated.split_once(" image pixels for ")?;
    let css = css.split(" CSS pixels").next()?;
    let pair = |s: &str| -> Option<(f64, f64)> {
        let (a, b) = s.split_once('×')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    };
    let (iw, ih) = pair(image)?;
    let (cw, ch) = pair(css)?;
    if (iw, ih) != (f64::from(width), f64::from(height)) {
        return None; // the stated size is the image's
    }
    Some((320.0 * iw / cw, 220.0 * ih / ch))
}

/// The model's move for a page: (tool name, input).
fn decide(script: Script, call: usize, text: &str) -> (String, Value) {
    let frame = text
        .split("frame_id: frame_")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .map(|f| format!("frame_{f}"))
        .unwrap_or("frame_0".into());
    let reference = |role: &str, name: &str| {
        let needle = format!("{role} \"{name}\" [");
        text.split(&needle)
            .nth(1)
            .and_then(|r| r.split([' ', ']']).next())
            .map(str::to_owned)
    };
    let name_filled = text.contains("textbox \"Name\"")
        && text
            .lines()
            .any(|l| l.contains("textbox \"Name\"") && l.contains(": \"Ada\""));
    if script == Script::Liar || text.contains("Welcome, Ada!") {
        // The model proposes the check that shows it (the runtime runs it).
        return (
            "done".into(),
            json!({"summary": "signed up as Ada", "checks": [{"kind": "text_present", "text": "Welcome, Ada!"}]}),
        );
    }
    if script == Script::InvalidFirst && call == 0 {
        return (
            "act".into(),
            json!({"type": "type", "target": {"kind": "element", "ref": "e1"}, "text": "Ada"}),
        );
    }
    match (
        reference("textbox", "Name"),
        reference("button", "Create account"),
    ) {
        (Some(r), _) if !name_filled => (
            "act".into(),
            json!({"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": r}, "text": "Ada", "intent": "fill in the name"}),
        ),
        (_, Some(b)) => (
            "act".into(),
            json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": b}, "intent": "create the account"}),
        ),
        _ => ("give_up".into(), json!({"reason": "no form"})),
    }
}

struct SetOnDrop(Arc<AtomicBool>);
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

async fn answer(
    State(model): State<Model>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    model.requests.lock().unwrap().push((headers, body.clone()));
    let call = model.calls.fetch_add(1, Ordering::SeqCst);
    match model.script {
        Script::Hang => {
            let _flag = SetOnDrop(model.aborted.clone());
            tokio::time::sleep(Duration::from_secs(60)).await;
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        Script::Garbage => return (StatusCode::OK, "{\"unexpected\": true}").into_response(),
        Script::RateLimitedOnce if call == 0 => {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "0")],
                Json(json!({"error": {"type": "rate_limit_error", "message": "slow down"}})),
            )
                .into_response();
        }
        _ => {}
    }
    let text = last_text(model.kind, &body);
    let square = || last_image(model.kind, &body).and_then(|png| red_square(&text, &png));
    let hit = text.contains("Hit the red square");
    let done = || {
        (
            "done".to_owned(),
            json!({"summary": "clicked the red square", "checks": [{"kind": "text_present", "text": "Hit the red square"}]}),
        )
    };
    let (tool, input) = match model.script {
        Script::Computer | Script::ComputerZoom | Script::ComputerBatch | Script::SafetyCheck
            if hit =>
        {
            done()
        }
        Script::Computer => match square() {
            Some((x, y)) => (
                "computer".into(),
                json!({"action": "left_click", "coordinate": [x.round(), y.round()]}),
            ),
            None => ("computer".into(), json!({"action": "screenshot"})),
        },
        Script::ComputerZoom => match (
            square(),
            body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .is_some_and(|m| m.to_string().contains("the region (")),
        ) {
            // Zoomed in: the square is where it was; click it (in the full screenshot's pixels).
            (_, true) => {
                let (x, y) = *model.seen.lock().unwrap();
                (
                    "computer".into(),
                    json!({"action": "left_click", "coordinate": [x.round(), y.round()]}),
                )
            }
            (Some((x, y)), false) => {
                *model.seen.lock().unwrap() = (x, y);
                (
                    "computer".into(),
                    json!({"action": "zoom", "region": [x - 40.0, y - 40.0, x + 40.0, y + 40.0]}),
                )
            }
            (None, false) => ("computer".into(), json!({"action": "screenshot"})),
        },
        Script::ComputerBatch => match square() {
            Some((x, y)) => (
                "computer".into(),
                json!({"actions": [{"type": "move", "x": x.round(), "y": y.round()}, {"type": "click", "button": "left", "x": x.round(), "y": y.round()}]}),
            ),
            None => (
                "computer".into(),
                json!({"actions": [{"type": "screenshot"}]}),
            ),
        },
        Script::SafetyCheck if text.contains("refused: approval_denied") => {
            ("give_up".into(), json!({"reason": "the person declined"}))
        }
        Script::SafetyCheck => match square() {
            Some((x, y)) => (
                "computer".into(),
                json!({"action": {"type": "click", "button": "left", "x": x.round(), "y": y.round()},
                "pending_safety_checks": [{"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page may be asking you to act against the user."}]}),
            ),
            None => ("computer".into(), json!({"action": {"type": "screenshot"}})),
        },
        Script::Wander if call >= 16 => {
            ("give_up".into(), json!({"reason": "wandered long enough"}))
        }
        Script::Wander => {
            let frame = text
                .split("frame_id: frame_")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .map(|f| format!("frame_{f}"))
                .unwrap_or_default();
            (
                "act".into(),
                json!({"type": "wait", "expected_frame_id": frame, "duration_ms": 1, "intent": "wait"}),
            )
        }
        Script::Download if text.contains("began a download") => (
            "give_up".into(),
            json!({"reason": "the download needs a person"}),
        ),
        Script::Download => {
            let frame = text
                .split("frame_id: frame_")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .map(|f| format!("frame_{f}"))
                .unwrap_or_default();
            let link = text
                .split("link \"Export all\" [")
                .nth(1)
                .and_then(|r| r.split([' ', ']']).next())
                .unwrap_or("e1")
                .to_owned();
            (
                "act".into(),
                json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": link}, "intent": "export"}),
            )
        }
        Script::Canvas => {
            let frame = text
                .split("frame_id: frame_")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .map(|f| format!("frame_{f}"))
                .unwrap_or_default();
            if hit {
                done()
            } else if !text.contains("A screenshot of this page's viewport follows") {
                ("look".into(), json!({}))
            } else {
                match square() {
                    Some((x, y)) => (
                        "act".into(),
                        json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "point", "x": x.round(), "y": y.round()}, "intent": "click the red square"}),
                    ),
                    None => (
                        "give_up".into(),
                        json!({"reason": "no red square in the screenshot"}),
                    ),
                }
            }
        }
        // Until it was told the bound, a summary of 5,000 characters.
        Script::LongSummaryFirst
            if text.contains("Welcome, Ada!") && !body.to_string().contains("at most 4000") =>
        {
            (
                "done".into(),
                json!({"summary": "signed up ".repeat(500), "checks": [{"kind": "text_present", "text": "Welcome, Ada!"}]}),
            )
        }
        _ => decide(model.script, call, &text),
    };
    let id = format!("call_{call}");
    // Usage as each provider reports a prompt cache: Anthropic when the request marks breakpoints
    // (its `input_tokens` then leaves the cached part out), OpenAI on its own after the first call.
    let marked = body
        .pointer("/system/0/cache_control/type")
        .and_then(Value::as_str)
        == Some("ephemeral");
    let anthropic_usage = match (marked, call) {
        (false, _) => json!({"input_tokens": 1000, "output_tokens": 50}),
        (true, 0) => {
            json!({"input_tokens": 200, "cache_creation_input_tokens": 800, "cache_read_input_tokens": 0, "output_tokens": 50})
        }
        (true, _) => {
            json!({"input_tokens": 100, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 800, "output_tokens": 50})
        }
    };
    let cached = |n: u64| if call == 0 { 0 } else { n };
    let reply = match model.kind {
        ProviderKind::Anthropic => json!({
            "id": format!("msg_{call}"), "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": "Working on it."}, {"type": "tool_use", "id": id, "name": tool, "input": input}],
            "stop_reason": "tool_use", "usage": anthropic_usage,
        }),
        ProviderKind::OpenaiChat => json!({
            "id": format!("chatcmpl-{call}"), "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": id, "type": "function", "function": {"name": tool, "arguments": input.to_string()}}]}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940, "prompt_tokens_details": {"cached_tokens": cached(512)}},
        }),
        ProviderKind::OpenaiResponses => {
            let item = if tool == "computer" {
                let mut item = json!({"type": "computer_call", "id": format!("cu_{call}"), "call_id": id, "status": "completed",
                    "pending_safety_checks": input.get("pending_safety_checks").cloned().unwrap_or(json!([]))});
                match (input.get("actions"), input.get("action")) {
                    (Some(batch), _) => item["actions"] = batch.clone(),
                    (_, Some(one)) => item["action"] = one.clone(),
                    _ => {}
                }
                item
            } else {
                json!({"type": "function_call", "id": format!("fc_{call}"), "call_id": id, "name": tool, "arguments": input.to_string(), "status": "completed"})
            };
            json!({"id": format!("resp_{call}"), "object": "response", "status": "completed", "model": body["model"],
                "output": [{"type": "reasoning", "id": format!("rs_{call}"), "summary": [], "encrypted_content": format!("opaque-{call}")}, item],
                "usage": {"input_tokens": 800, "output_tokens": 30, "total_tokens": 830, "input_tokens_details": {"cached_tokens": cached(256)}}})
        }
    };
    if model.stream {
        return sse(model.kind, &reply);
    }
    Json(reply).into_response()
}

/// `reply` as the provider streams it: the events its documentation lists, tool input split
/// across deltas.
fn sse(kind: ProviderKind, reply: &Value) -> Response {
    let mut events: Vec<(String, Value)> = Vec::new();
    match kind {
        ProviderKind::Anthropic => {
            let mut start = reply.clone();
            start["content"] = json!([]);
            start["usage"]["output_tokens"] = json!(1);
            events.push((
                "message_start".into(),
                json!({"type": "message_start", "message": start}),
            ));
            for (i, block) in reply["content"].as_array().unwrap().iter().enumerate() {
                if block["type"] == "text" {
                    events.push((
                        "content_block_start".into(),
                        json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
                    ));
                    for piece in ["Working ", "on it."] {
                        events.push((
                            "content_block_delta".into(),
                            json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}}),
                        ));
                    }
                } else {
                    let start = json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}});
                    events.push((
                        "content_block_start".into(),
                        json!({"type": "content_block_start", "index": i, "content_block": start}),
                    ));
                    let input = block["input"].to_string();
                    let (a, b) = input.split_at(input.len() / 2);
                    for piece in [a, b] {
                        events.push((
                            "content_block_delta".into(),
                            json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}}),
                        ));
                    }
                }
                events.push((
                    "content_block_stop".into(),
                    json!({"type": "content_block_stop", "index": i}),
                ));
            }
            events.push(("message_delta".into(), json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 50}})));
            events.push(("message_stop".into(), json!({"type": "message_stop"})));
        }
        ProviderKind::OpenaiChat => {
            let call = &reply["choices"][0]["message"]["tool_calls"][0];
            let arguments = call["function"]["arguments"].as_str().unwrap();
            let (a, b) = arguments.split_at(arguments.len() / 2);
            let chunk = |delta: Value| json!({"id": reply["id"], "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
            events.push((
                String::new(),
                chunk(json!({"role": "assistant", "content": null})),
            ));
            events.push((
                String::new(),
                chunk(
                    json!({"tool_calls": [{"index": 0, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": a}}]}),
                ),
            ));
            events.push((
                String::new(),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]})),
            ));
            events.push((String::new(), json!({"id": reply["id"], "object": "chat.completion.chunk", "choices": [], "usage": reply["usage"]})));
        }
        ProviderKind::OpenaiResponses => {
            events
                .push(("response.created".into(), json!({"type": "response.created", "response": {"id": reply["id"], "status": "in_progress", "output": []}})));
            for (i, item) in reply["output"].as_array().unwrap().iter().enumerate() {
                events.push((
                    "response.output_item.added".into(),
                    json!({"type": "response.output_item.added", "output_index": i, "item": item}),
                ));
                events.push((
                    "response.output_item.done".into(),
                    json!({"type": "response.output_item.done", "output_index": i, "item": item}),
                ));
            }
            events.push((
                "response.completed".into(),
                json!({"type": "response.completed", "response": reply}),
            ));
        }
    }
    let mut body = String::new();
    for (event, data) in events {
        if !event.is_empty() {
            body.push_str(&format!("event: {event}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    if kind == ProviderKind::OpenaiChat {
        body.push_str("data: [DONE]\n\n");
    }
    (
        StatusCode::OK,
        [("content-type", "text/event-stream")],
        body,
    )
        .into_response()
}

struct Env {
    runtime: Runtime,
    /// The browser beneath the runtime, for the tests' own checks of it.
    browser: std::sync::Arc<browser::Chromium>,
    fixtures: FixtureServer,
    model: Model,
    base_url: String,
}

async fn env(name: &str, kind: ProviderKind, script: Script) -> Env {
    env_streaming(name, kind, script, false).await
}

async fn env_streaming(name: &str, kind: ProviderKind, script: Script, stream: bool) -> Env {
    env_with(name, kind, script, stream, &[]).await
}

/// Chromium started with `flags` beside the usual ones.
async fn env_with(
    name: &str,
    kind: ProviderKind,
    script: Script,
    stream: bool,
    flags: &[&str],
) -> Env {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let data_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("agent-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    let mut config = RuntimeConfig::new(&data_dir);
    config
        .trust
        .trusted_origins
        .push(policy::Origin::parse(&fixtures.origin()).unwrap());
    let mut launch = browser::LaunchOptions::new(&data_dir);
    launch
        .extra_args
        .extend(flags.iter().map(|f| f.to_string()));
    let browser = browser::Chromium::new(browser::BrowserSource::Launch(launch));
    let runtime = Runtime::start(config, browser.clone())
        .await
        .expect("runtime starts");
    let model = Model {
        kind,
        script,
        stream,
        requests: Default::default(),
        calls: Default::default(),
        aborted: Default::default(),
        seen: Default::default(),
    };
    let path = match kind {
        ProviderKind::Anthropic => "/v1/messages",
        ProviderKind::OpenaiChat => "/v1/chat/completions",
        ProviderKind::OpenaiResponses => "/v1/responses",
    };
    let app = axum::Router::new()
        .route(path, axum::routing::post(answer))
        .with_state(model.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Env {
        runtime,
        browser,
        fixtures,
        model,
        base_url,
    }
}

/// The environment variable the tests' key lives in (set once; never read back in a log).
const KEY_ENV: &str = "GLOVEBOX_AGENT_TEST_KEY";
const KEY: &str = "sk-test-0123456789";

fn choice(env: &Env) -> ModelChoice {
    // SAFETY: every test sets the same variable to the same value before reading it; nothing
    // else in this process reads or writes it.
    unsafe { std::env::set_var(KEY_ENV, KEY) };
    ModelChoice {
        provider: env.model.kind,
        model: "test-model".into(),
        base_url: Some(env.base_url.clone()),
        api_key_env: Some(KEY_ENV.into()),
        computer_tool: false,
        computer_tool_version: None,
    }
}

fn limits() -> Limits {
    Limits {
        first_backoff: Duration::from_millis(10),
        ..Limits::default()
    }
}

async fn sign_up(env: &Env, checks: Vec<Assertion>) -> (protocol::RunResult, Accounting) {
    let session = env.runtime.create_session().await.unwrap();
    env.runtime
        .open_tab(&session, &env.fixtures.url("/form.html"), Duration::ZERO)
        .await
        .unwrap();
    let provider = Arc::new(Provider::new(&choice(env), limits()).unwrap());
    let accounting = Arc::new(Mutex::new(Accounting::default()));
    let planner = ModelPlanner::new(provider, accounting.clone()).unwrap();
    let mut request = RunRequest::new("Sign up as Ada");
    request.max_steps = 8;
    request.max_seconds = 60;
    request.assertions = checks;
    let result = env
        .runtime
        .run(&session, request, Box::new(planner))
        .await
        .unwrap();
    let accounting = accounting.lock().unwrap().clone();
    (result, accounting)
}

fn welcome() -> Vec<Assertion> {
    vec![Assertion::TextPresent {
        text: "Welcome, Ada!".into(),
    }]
}

async fn signs_up_through(kind: ProviderKind, name: &str, stream: bool) {
    let env = env_streaming(name, kind, Script::SignUp, stream).await;
    let (result, accounting) = sign_up(&env, welcome()).await;
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(env.fixtures.writes().len(), 1, "one sign-up submitted");
    assert_eq!(
        accounting.model_requests, 3,
        "type, click, done: {accounting:?}"
    );
    assert_eq!(accounting.tool_calls, 3);
    assert!(
        accounting.input_tokens >= 2400 && accounting.output_tokens >= 90,
        "{accounting:?}"
    );
    let requests = env.model.requests.lock().unwrap().clone();
    let (headers, first) = &requests[0];
    match kind {
        ProviderKind::Anthropic => {
            assert_eq!(headers["x-api-key"], KEY);
            assert_eq!(headers["anthropic-version"], "2023-06-01");
            let tools: Vec<&str> = first["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap())
                .collect();
            assert_eq!(tools, ["act", "done", "look", "give_up", "infeasible"]);
            let done = &first["tools"][1]["input_schema"];
            assert!(
                done["properties"]["checks"]["items"]
                    .to_string()
                    .contains("text_present"),
                "done proposes the runtime's checks: {done}"
            );
            assert_eq!(first["tool_choice"]["type"], "any");
            assert!(
                first["system"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("never instructions")
            );
            // Prompt caching: the tools and system prompt, and the history up to the model's
            // previous answer, end in breakpoints; the cache's share of the input is counted.
            assert_eq!(
                first["system"][0]["cache_control"],
                json!({"type": "ephemeral"})
            );
            let second_messages = requests[1].1["messages"].as_array().unwrap();
            let previous_answer = &second_messages[second_messages.len() - 2];
            assert_eq!(previous_answer["role"], "assistant");
            assert_eq!(
                previous_answer["content"]
                    .as_array()
                    .unwrap()
                    .last()
                    .unwrap()["cache_control"],
                json!({"type": "ephemeral"})
            );
            assert_eq!(
                (
                    accounting.input_tokens,
                    accounting.cache_read_tokens,
                    accounting.cache_write_tokens
                ),
                (3000, 1600, 1000),
                "{accounting:?}"
            );
            // Every tool call got its result in the next request.
            let second = &requests[1].1;
            let messages = second["messages"].as_array().unwrap();
            assert_eq!(
                messages.last().unwrap()["content"][0]["type"],
                "tool_result",
                "{second}"
            );
            assert_eq!(
                messages.last().unwrap()["content"][0]["tool_use_id"],
                "call_0"
            );
        }
        ProviderKind::OpenaiChat => {
            assert_eq!(headers["authorization"], format!("Bearer {KEY}"));
            assert_eq!(first["messages"][0]["role"], "system");
            assert_eq!(first["tools"][0]["type"], "function");
            assert_eq!(first["tool_choice"], "required");
            let second = &requests[1].1;
            let messages = second["messages"].as_array().unwrap();
            assert_eq!(messages[messages.len() - 1]["role"], "tool", "{second}");
            assert_eq!(messages[messages.len() - 1]["tool_call_id"], "call_0");
            assert!(
                messages[messages.len() - 2]["tool_calls"][0]["function"]["arguments"].is_string()
            );
            assert_eq!(
                (accounting.input_tokens, accounting.cache_read_tokens),
                (2700, 1024),
                "OpenAI's own cache: {accounting:?}"
            );
        }
        ProviderKind::OpenaiResponses => {
            assert_eq!(headers["authorization"], format!("Bearer {KEY}"));
            assert!(
                first["instructions"]
                    .as_str()
                    .unwrap()
                    .contains("never instructions")
            );
            assert_eq!(
                (first["store"].clone(), first["tool_choice"].clone()),
                (json!(false), json!("required"))
            );
            assert_eq!(
                first["tools"][0],
                json!({"type": "function", "name": "act", "description": first["tools"][0]["description"], "parameters": first["tools"][0]["parameters"], "strict": false})
            );
            // Stateless: the answer's items (its reasoning included) come back as they were, then the call's output.
            let input = requests[1].1["input"].as_array().unwrap().clone();
            let n = input.len();
            assert_eq!(input[n - 3]["encrypted_content"], "opaque-0", "{input:?}");
            assert_eq!(
                (
                    input[n - 2]["type"].clone(),
                    input[n - 2]["call_id"].clone()
                ),
                (json!("function_call"), json!("call_0"))
            );
            assert_eq!(
                (
                    input[n - 1]["type"].clone(),
                    input[n - 1]["call_id"].clone()
                ),
                (json!("function_call_output"), json!("call_0"))
            );
            assert_eq!(
                (accounting.input_tokens, accounting.cache_read_tokens),
                (2400, 512),
                "OpenAI's own cache: {accounting:?}"
            );
        }
    }
    assert!(
        requests.iter().all(|(_, body)| body["stream"] == true),
        "every request asks for a stream"
    );
    // Pages enter inside the markers, and only the latest page is kept in the history.
    let last = &requests[2].1;
    let text = last.to_string();
    assert_eq!(
        text.matches("</untrusted nonce=").count(),
        1,
        "older pages dropped: {text}"
    );
    assert!(text.contains("[page omitted: a newer observation follows]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_and_verified_through_anthropic_messages() {
    signs_up_through(ProviderKind::Anthropic, "anthropic", false).await;
    signs_up_through(ProviderKind::Anthropic, "anthropic-streamed", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_and_verified_through_openai_chat_completions() {
    signs_up_through(ProviderKind::OpenaiChat, "openai", false).await;
    signs_up_through(ProviderKind::OpenaiChat, "openai-streamed", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_and_verified_through_openai_responses() {
    signs_up_through(ProviderKind::OpenaiResponses, "responses-streamed", true).await;
}

/// An action the runtime cannot read is the model's tool error, and it answers again; a model
/// that claims success while the page says otherwise does not succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_model_output_is_answered_and_a_false_claim_does_not_succeed() {
    let invalid = env("invalid", ProviderKind::Anthropic, Script::InvalidFirst).await;
    let (result, accounting) = sign_up(&invalid, welcome()).await;
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(accounting.invalid_answers, 1, "{accounting:?}");
    let requests = invalid.model.requests.lock().unwrap().clone();
    let told = &requests[1].1["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"][0];
    assert_eq!(told["is_error"], true, "{told}");
    assert!(
        told["content"]
            .as_str()
            .unwrap()
            .starts_with("invalid_action: "),
        "{told}"
    );

    // Without a caller's check the model's own proposed check decides, run by the runtime.
    let own = env("own-check", ProviderKind::OpenaiChat, Script::SignUp).await;
    let (result, _) = sign_up(&own, vec![]).await;
    assert_eq!(
        (result.status(), result.reason_code()),
        (RunStatus::Succeeded, ReasonCode::Verified),
        "{result:?}"
    );

    // A summary longer than a run's record takes is the model's tool error, answered with the
    // bound; it answers again within it.
    let long = env(
        "long-summary",
        ProviderKind::OpenaiChat,
        Script::LongSummaryFirst,
    )
    .await;
    let (result, accounting) = sign_up(&long, welcome()).await;
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(accounting.invalid_answers, 1, "{accounting:?}");
    assert!(
        long.model
            .requests
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .1
            .to_string()
            .contains("has 5000 characters; at most 4000"),
        "the model was told the bound"
    );

    let liar = env("liar", ProviderKind::OpenaiChat, Script::Liar).await;
    let (result, _) = sign_up(&liar, welcome()).await;
    assert_eq!(result.status(), RunStatus::Failed, "{result:?}");
    assert_eq!(result.reason_code(), ReasonCode::VerificationFailed);
    assert!(liar.fixtures.writes().is_empty());
}

/// 429 is retried (honouring `retry-after`); an answer that is not the provider's shape ends the
/// run as an invalid plan; a provider that cannot start fails with its own error and nothing
/// else is tried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_retried_garbage_ends_the_run_and_a_missing_key_is_named() {
    let limited = env(
        "rate-limited",
        ProviderKind::OpenaiChat,
        Script::RateLimitedOnce,
    )
    .await;
    let (result, accounting) = sign_up(&limited, welcome()).await;
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(
        limited.model.calls.load(Ordering::SeqCst),
        4,
        "one 429 and three answers"
    );
    assert_eq!(accounting.model_requests, 3);

    let garbage = env("garbage", ProviderKind::Anthropic, Script::Garbage).await;
    let (result, _) = sign_up(&garbage, welcome()).await;
    assert_eq!(result.status(), RunStatus::Failed, "{result:?}");
    assert_eq!(result.reason_code(), ReasonCode::InvalidPlan);
    assert!(
        result.summary().contains("not a valid response"),
        "{result:?}"
    );

    let missing = ModelChoice {
        provider: ProviderKind::Anthropic,
        model: "m".into(),
        base_url: None,
        api_key_env: Some("GLOVEBOX_AGENT_TEST_UNSET".into()),
        computer_tool: false,
        computer_tool_version: None,
    };
    let err = Provider::new(&missing, Limits::default()).unwrap_err();
    assert!(matches!(err, ProviderError::Init { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "the anthropic provider cannot start: GLOVEBOX_AGENT_TEST_UNSET is not set"
    );
    let bad_url = ModelChoice {
        provider: ProviderKind::OpenaiChat,
        model: "m".into(),
        base_url: Some("ftp://x".into()),
        api_key_env: Some(String::new()),
        computer_tool: false,
        computer_tool_version: None,
    };
    assert!(matches!(
        Provider::new(&bad_url, Limits::default()),
        Err(ProviderError::Init { .. })
    ));
}

/// Stopping a run while its model call is in flight aborts the HTTP request: the provider sees
/// the connection go, and the run ends cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_aborts_the_model_request_in_flight() {
    let env = env("cancel", ProviderKind::Anthropic, Script::Hang).await;
    let session = env.runtime.create_session().await.unwrap();
    env.runtime
        .open_tab(&session, &env.fixtures.url("/form.html"), Duration::ZERO)
        .await
        .unwrap();
    let provider = Arc::new(Provider::new(&choice(&env), limits()).unwrap());
    let planner = ModelPlanner::new(provider, Default::default()).unwrap();
    let (handle, join) = env
        .runtime
        .start_run(
            &session,
            RunRequest::new("Sign up as Ada"),
            Box::new(planner),
        )
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while env.model.calls.load(Ordering::SeqCst) == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        env.model.calls.load(Ordering::SeqCst),
        1,
        "the model request is in flight"
    );
    handle.cancel();
    let result = tokio::time::timeout(Duration::from_secs(10), join)
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(result.status(), RunStatus::Cancelled, "{result:?}");
    while !env.model.aborted.load(Ordering::SeqCst) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        env.model.aborted.load(Ordering::SeqCst),
        "the provider saw the request go away"
    );
}

/// Runs "click the red square" on the canvas fixture with `planner`.
/// What the action's receipt says beyond its state reaches the model, inside the untrusted
/// markers: here, a download the page began that nobody asked Glovebox to capture.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_reads_what_the_receipt_says_inside_the_markers() {
    let env = env("receipt-detail", ProviderKind::Anthropic, Script::Download).await;
    env.fixtures.route(
        "/export",
        test_support::Route::attachment("export.csv", b"a,b\n"),
    );
    env.fixtures.html(
        "/export.html",
        r#"<!doctype html><title>Export</title><a href="/export">Export all</a>"#,
    );
    let session = env.runtime.create_session().await.unwrap();
    env.runtime
        .open_tab(&session, &env.fixtures.url("/export.html"), Duration::ZERO)
        .await
        .unwrap();
    let planner = ModelPlanner::new(
        Arc::new(Provider::new(&choice(&env), limits()).unwrap()),
        Default::default(),
    )
    .unwrap();
    let mut request = RunRequest::new("Export all the rows");
    request.max_steps = 4;
    request.max_seconds = 60;
    let result = env
        .runtime
        .run(&session, request, Box::new(planner))
        .await
        .unwrap();
    assert!(
        result.summary().contains("the download needs a person"),
        "{result:?}"
    );
    let requests = env.model.requests.lock().unwrap().clone();
    let told = last_text(ProviderKind::Anthropic, &requests[1].1);
    let receipt = told
        .split("receipt: ")
        .nth(1)
        .unwrap_or_else(|| panic!("the receipt's detail is there: {told}"));
    assert!(
        receipt.starts_with("<untrusted nonce=")
            && receipt.contains(r#"began a download ("export.csv")"#),
        "{told}"
    );
}

async fn click_the_square(env: &Env, planner: ModelPlanner) -> protocol::RunResult {
    let session = env.runtime.create_session().await.unwrap();
    env.runtime
        .open_tab(
            &session,
            &env.fixtures.url("/canvas-target.html"),
            Duration::ZERO,
        )
        .await
        .unwrap();
    let mut request = RunRequest::new("Click the red square in the picture");
    request.max_steps = 6;
    request.max_seconds = 60;
    env.runtime
        .run(&session, request, Box::new(planner))
        .await
        .unwrap()
}

/// Case 22 inside a run: the outline cannot name a picture inside a canvas, so the model asks to
/// look; the next page comes with a viewport screenshot (an image block of the provider's own
/// format), the model finds the square in the pixels and clicks it by point in image pixels;
/// the runtime maps them to CSS pixels and verifies the model's proposed check. Only the latest
/// screenshot stays in the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canvas_task_is_done_by_looking_and_clicking_a_point_through_both_providers() {
    for (kind, name) in [
        (ProviderKind::Anthropic, "canvas-anthropic"),
        (ProviderKind::OpenaiChat, "canvas-openai"),
    ] {
        let env = env(name, kind, Script::Canvas).await;
        let provider = Arc::new(Provider::new(&choice(&env), limits()).unwrap());
        let result = click_the_square(
            &env,
            ModelPlanner::new(provider, Arc::new(Mutex::new(Accounting::default()))).unwrap(),
        )
        .await;
        assert_eq!(
            (result.status(), result.reason_code()),
            (RunStatus::Succeeded, ReasonCode::Verified),
            "{name}: {result:?}"
        );
        let requests = env.model.requests.lock().unwrap().clone();
        assert_eq!(requests.len(), 3, "{name}: look, click, done");
        assert!(
            last_image(kind, &requests[0].1).is_none(),
            "no screenshot until the model asks"
        );
        let png =
            last_image(kind, &requests[1].1).expect("the page after look carries its screenshot");
        assert_eq!(
            png_size(&png),
            Some((1280, 720)),
            "{name}: a PNG of the viewport, at the page's size"
        );
        let last = requests[2].1.to_string();
        assert!(
            !last.contains("iVBOR"),
            "{name}: the screenshot of an older page is dropped from the history"
        );
    }
}

/// The same task through Anthropic's own computer tool (`computer_20250124`, with its beta):
/// every page comes as a screenshot sized to the tool's display, the model's `left_click` at
/// image coordinates becomes a protocol click on the one path, and the runtime verifies. A
/// provider without such a tool says so when the planner is made, before any run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canvas_task_through_anthropics_computer_tool() {
    let env = env("computer", ProviderKind::Anthropic, Script::Computer).await;
    let mut choice = choice(&env);
    choice.computer_tool = true;
    let result = click_the_square(
        &env,
        ModelPlanner::for_choice(&choice, Arc::new(Mutex::new(Accounting::default()))).unwrap(),
    )
    .await;
    assert_eq!(
        (result.status(), result.reason_code()),
        (RunStatus::Succeeded, ReasonCode::Verified),
        "{result:?}"
    );
    let requests = env.model.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "click, done");
    let (headers, first) = &requests[0];
    assert!(
        headers["anthropic-beta"]
            .to_str()
            .unwrap()
            .contains("computer-use-2025-01-24"),
        "{headers:?}"
    );
    assert_eq!(
        first["tools"][0],
        json!({"type": "computer_20250124", "name": "computer", "display_width_px": 1280, "display_height_px": 720})
    );
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["computer", "done", "give_up", "infeasible"],
        "no act or look beside the computer tool"
    );
    assert_eq!(
        last_image(ProviderKind::Anthropic, first)
            .as_deref()
            .and_then(png_size),
        Some((1280, 720)),
        "the first page already comes as a screenshot"
    );

    let openai = ModelChoice {
        provider: ProviderKind::OpenaiChat,
        computer_tool: true,
        ..choice.clone()
    };
    let refused = ModelPlanner::for_choice(&openai, Arc::new(Mutex::new(Accounting::default())))
        .err()
        .expect("no computer tool there");
    assert!(
        refused
            .to_string()
            .contains("openai_chat has no computer tool"),
        "{refused}"
    );
    let wrong = ModelChoice {
        computer_tool_version: Some(agent::ComputerTool::OpenAi),
        ..choice.clone()
    };
    assert!(
        ModelPlanner::for_choice(&wrong, Default::default()).is_err(),
        "OpenAI's tool is not Anthropic's"
    );
}

/// Attaches the test's own CDP session to the page at `url` and pinch-zooms it by 1.25 (in a
/// 1280×720 window of a display at DPR 2: 1024×576 CSS pixels shown, 2560×1440 screenshots).
/// The zoom lasts while the returned session is attached.
async fn scaled(env: &Env, url: &str) -> cdp::Session {
    let connection = env.browser.connection().unwrap();
    let targets = connection
        .browser()
        .call(cdp::domains::target::GetTargets {})
        .await
        .unwrap();
    let target = targets
        .target_infos
        .iter()
        .find(|t| t.url == url)
        .and_then(|t| t.target_id.clone())
        .expect("the tab's target");
    let page = connection.browser().attach(&target).await.unwrap();
    page.send_raw(
        "Emulation.setPageScaleFactor",
        json!({"pageScaleFactor": 1.25}),
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    page
}

/// A display at two device pixels per CSS pixel.
const DPR2: &[&str] = &["--force-device-scale-factor=2"];

/// Runs "click the red square" on the canvas fixture at DPR 2 and zoom 1.25 with the computer
/// tool `tool`.
async fn click_the_scaled_square(
    env: &Env,
    tool: agent::ComputerTool,
) -> (protocol::RunResult, Accounting) {
    let session = env.runtime.create_session().await.unwrap();
    let url = env.fixtures.url("/canvas-target.html");
    env.runtime
        .open_tab(&session, &url, Duration::ZERO)
        .await
        .unwrap();
    let _page = scaled(env, &url).await;
    let mut choice = choice(env);
    choice.computer_tool = true;
    choice.computer_tool_version = Some(tool);
    let accounting = Arc::new(Mutex::new(Accounting::default()));
    let planner = ModelPlanner::for_choice(&choice, accounting.clone()).unwrap();
    let mut request = RunRequest::new("Click the red square in the picture");
    request.max_steps = 6;
    request.max_seconds = 60;
    let result = env
        .runtime
        .run(&session, request, Box::new(planner))
        .await
        .unwrap();
    let accounting = accounting.lock().unwrap().clone();
    (result, accounting)
}

/// Case 22 through each provider's computer tool on a scaled page (DPR 2, zoom 1.25, a
/// 2560×1440 capture): the screenshot is fitted to the provider's bound, the model reads the
/// square's pixels off the image it saw, and the click lands on the right CSS pixel (the page
/// itself reports the hit, and the runtime verifies it). Anthropic's newer tool zooms first (the
/// crop comes from the full-resolution capture); OpenAI's batch (move, click) runs as two
/// actions on the one path with one model request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scaled_canvas_task_through_each_computer_tool() {
    // Anthropic computer_20250124: 2560×1440 fitted to 1280×720.
    let env = env_with(
        "computer-scaled-0124",
        ProviderKind::Anthropic,
        Script::Computer,
        true,
        DPR2,
    )
    .await;
    let (result, _) = click_the_scaled_square(&env, agent::ComputerTool::Anthropic20250124).await;
    let requests = env.model.requests.lock().unwrap().clone();
    assert_eq!(
        (result.status(), result.reason_code()),
        (RunStatus::Succeeded, ReasonCode::Verified),
        "{result:?} {}",
        last_text(ProviderKind::Anthropic, &requests.last().unwrap().1)
    );
    assert_eq!(
        requests[0].1["tools"][0]["display_width_px"], 1280,
        "the display is the image the model sees"
    );
    assert_eq!(
        last_image(ProviderKind::Anthropic, &requests[0].1)
            .as_deref()
            .and_then(png_size),
        Some((1280, 720))
    );
    assert!(
        last_text(ProviderKind::Anthropic, &requests[0].1)
            .contains("1280×720 image pixels for 1024×576 CSS pixels")
    );

    // Anthropic computer_20251124: zoom, then click.
    let env = env_with(
        "computer-scaled-1124",
        ProviderKind::Anthropic,
        Script::ComputerZoom,
        true,
        DPR2,
    )
    .await;
    let (result, accounting) =
        click_the_scaled_square(&env, agent::ComputerTool::Anthropic20251124).await;
    assert_eq!(
        (result.status(), result.reason_code()),
        (RunStatus::Succeeded, ReasonCode::Verified),
        "{result:?}"
    );
    let requests = env.model.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3, "zoom, click, done");
    let (headers, first) = &requests[0];
    assert!(
        headers["anthropic-beta"]
            .to_str()
            .unwrap()
            .contains("computer-use-2025-11-24"),
        "{headers:?}"
    );
    assert_eq!(
        (
            first["tools"][0]["type"].clone(),
            first["tools"][0]["enable_zoom"].clone()
        ),
        (json!("computer_20251124"), json!(true))
    );
    // The zoom's answer: an 80×80 region of the 1280×720 image, cropped from the 2560×1440
    // capture at its full resolution, the square's red in its middle; the page's screenshot
    // stays beside it.
    let zoomed = last_image(ProviderKind::Anthropic, &requests[1].1).unwrap();
    assert_eq!(png_size(&zoomed), Some((160, 160)), "full resolution");
    let images = requests[1]
        .1
        .to_string()
        .matches("\"type\":\"image\"")
        .count();
    assert_eq!(images, 2, "the page's screenshot and the zoom");
    assert_eq!(
        accounting.images, 3,
        "two pages and one zoom: {accounting:?}"
    );

    // OpenAI Responses computer tool: one batched call (move, click), two actions, one request.
    let env = env_with(
        "computer-scaled-openai",
        ProviderKind::OpenaiResponses,
        Script::ComputerBatch,
        true,
        DPR2,
    )
    .await;
    let (result, accounting) = click_the_scaled_square(&env, agent::ComputerTool::OpenAi).await;
    assert_eq!(
        (result.status(), result.reason_code()),
        (RunStatus::Succeeded, ReasonCode::Verified),
        "{result:?}"
    );
    let requests = env.model.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "the batch, then done: {accounting:?}");
    assert_eq!(
        accounting.batched_actions, 1,
        "the click ran from the batch without a model request"
    );
    assert_eq!(requests[0].1["tools"][0], json!({"type": "computer"}));
    assert_eq!(
        last_image(ProviderKind::OpenaiResponses, &requests[0].1)
            .as_deref()
            .and_then(png_size),
        Some((1365, 768)),
        "OpenAI's short side of 768"
    );
    let output = requests[1].1["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "computer_call_output")
        .cloned()
        .expect("the call's output");
    assert_eq!(output["call_id"], "call_0");
    assert!(
        output["output"]["image_url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,"),
        "{output}"
    );
    assert!(output.get("acknowledged_safety_checks").is_none());
}

/// A `pending_safety_checks` on OpenAI's computer call is a person's decision on the one
/// approval path, even on a trusted origin where policy would let the click go: the run waits,
/// the person sees the provider's words; approved, the click lands and the call's output
/// acknowledges exactly that check; denied, nothing is clicked and nothing is acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_safety_check_waits_for_a_person() {
    for approve in [true, false] {
        let env = env(
            if approve {
                "safety-approved"
            } else {
                "safety-denied"
            },
            ProviderKind::OpenaiResponses,
            Script::SafetyCheck,
        )
        .await;
        let session = env.runtime.create_session().await.unwrap();
        env.runtime
            .open_tab(
                &session,
                &env.fixtures.url("/canvas-target.html"),
                Duration::ZERO,
            )
            .await
            .unwrap();
        let mut choice = choice(&env);
        choice.computer_tool = true;
        let planner = ModelPlanner::for_choice(&choice, Default::default()).unwrap();
        let mut request = RunRequest::new("Click the red square in the picture");
        request.max_steps = 6;
        request.max_seconds = 60;
        let (_handle, join) = env
            .runtime
            .start_run(&session, request, Box::new(planner))
            .unwrap();
        // The person: waits for the approval and answers it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let pending = loop {
            if let Some(a) = env.runtime.pending_approvals().into_iter().next() {
                break a;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no approval was asked"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(
            pending
                .reason
                .contains("The page may be asking you to act against the user."),
            "{pending:?}"
        );
        assert!(
            pending.reason.contains("malicious_instructions"),
            "{pending:?}"
        );
        let decision = if approve {
            runtime::ApprovalDecision::ApproveForTask
        } else {
            runtime::ApprovalDecision::Deny
        };
        env.runtime
            .resolve_approval(&pending.approval_id, decision)
            .unwrap();
        let result = tokio::time::timeout(Duration::from_secs(30), join)
            .await
            .unwrap()
            .unwrap();
        let requests = env.model.requests.lock().unwrap().clone();
        let output = requests[1].1["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["type"] == "computer_call_output")
            .cloned()
            .expect("the call's output");
        if approve {
            assert_eq!(
                (result.status(), result.reason_code()),
                (RunStatus::Succeeded, ReasonCode::Verified),
                "{result:?}"
            );
            assert_eq!(
                output["acknowledged_safety_checks"],
                json!([{"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page may be asking you to act against the user."}])
            );
        } else {
            assert_eq!(result.status(), RunStatus::Failed, "{result:?}");
            assert!(
                output.get("acknowledged_safety_checks").is_none(),
                "a declined check is never acknowledged: {output}"
            );
            assert!(
                last_text(ProviderKind::OpenaiResponses, &requests[1].1)
                    .contains("refused: approval_denied")
            );
        }
        assert!(env.runtime.pending_approvals().is_empty());
    }
}

/// Regression (issue 28): the history's compaction kept only the first 2,000 of up to 8,000 task
/// characters, so a long run forgot the end of its task. The compacted history the provider is
/// sent keeps the whole task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_history_keeps_the_whole_task() {
    let env = env("compaction-task", ProviderKind::Anthropic, Script::Wander).await;
    let session = env.runtime.create_session().await.unwrap();
    env.runtime
        .open_tab(&session, &env.fixtures.url("/form.html"), Duration::ZERO)
        .await
        .unwrap();
    let planner = ModelPlanner::new(
        Arc::new(Provider::new(&choice(&env), limits()).unwrap()),
        Default::default(),
    )
    .unwrap();
    let task = format!(
        "{}and at the very end: the last instruction is ZEBRA-7.",
        "Fill in the form with care. ".repeat(280)
    );
    assert!(task.chars().count() > 7_000 && task.chars().count() <= 8_000);
    let mut request = RunRequest::new(task.clone());
    request.max_steps = 30;
    request.max_seconds = 120;
    let result = env
        .runtime
        .run(&session, request, Box::new(planner))
        .await
        .unwrap();
    assert!(
        result.summary().contains("wandered long enough"),
        "{result:?}"
    );
    let requests = env.model.requests.lock().unwrap().clone();
    let last = &requests.last().unwrap().1;
    let first = last["messages"][0]["content"].to_string();
    assert!(
        first.contains("was compacted"),
        "the history was compacted by the last request: {first:.300}"
    );
    assert!(
        first.contains("the last instruction is ZEBRA-7."),
        "the compacted history keeps the task's end"
    );
}

/// Issue 29: the key goes only where the person configured it. A provider's redirect is not
/// followed (reqwest strips `Authorization` across hosts but not `x-api-key`: the key reached
/// the other host), and a base URL is `https://` except to this machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_never_follows_a_redirect_and_plain_http_is_only_for_loopback() {
    let elsewhere: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
    let seen = elsewhere.clone();
    let other = axum::Router::new().fallback(move |headers: HeaderMap| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(headers);
            StatusCode::OK
        }
    });
    let other_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other_url = format!(
        "http://{}/v1/messages",
        other_listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(other_listener, other).await });
    let redirecting = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(move || {
            let to = other_url.clone();
            async move { (StatusCode::TEMPORARY_REDIRECT, [("location", to)]).into_response() }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, redirecting).await });
    // SAFETY: as in `choice`.
    unsafe { std::env::set_var(KEY_ENV, KEY) };
    let mut choice = ModelChoice {
        provider: ProviderKind::Anthropic,
        model: "test-model".into(),
        base_url: Some(base_url),
        api_key_env: Some(KEY_ENV.into()),
        computer_tool: false,
        computer_tool_version: None,
    };
    let provider = Provider::new(&choice, limits()).unwrap();
    let conversation = agent::Conversation {
        system: "s".into(),
        messages: Vec::new(),
        tools: Vec::new(),
    };
    let err = provider.turn(&conversation).await.unwrap_err();
    assert!(err.to_string().contains("redirect"), "{err}");
    assert!(
        elsewhere.lock().unwrap().is_empty(),
        "nothing, and no key, reached the other address"
    );

    for (base, ok) in [
        ("http://api.example.com", false),
        ("http://10.0.0.5:8080/v1", false),
        ("https://api.example.com", true),
        ("http://localhost:11434", true),
        ("http://[::1]:8000", true),
    ] {
        choice.base_url = Some(base.into());
        let made = Provider::new(&choice, limits());
        assert_eq!(made.is_ok(), ok, "{base}: {:?}", made.err());
    }
}
