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
}

#[derive(Clone)]
struct Model {
    kind: ProviderKind,
    script: Script,
    requests: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    calls: Arc<AtomicUsize>,
    /// Set when a hanging request's handler was dropped (its connection went away).
    aborted: Arc<AtomicBool>,
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
            .map(|b| b["text"].as_str().or(b["content"].as_str()).unwrap_or_default().to_owned())
            .collect(),
        ProviderKind::OpenaiChat => {
            messages.iter().filter(|m| m["role"] == "user" || m["role"] == "tool").map(|m| m["content"].as_str().unwrap_or_default().to_owned()).collect()
        }
    };
    texts.iter().rev().find(|t| t.contains("</untrusted nonce=")).or(texts.last()).cloned().unwrap_or_default()
}

/// The latest screenshot the client sent the model (PNG bytes), if any.
fn last_image(kind: ProviderKind, body: &Value) -> Option<Vec<u8>> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let data = messages.iter().rev().filter(|m| m["role"] == "user").find_map(|m| {
        m["content"].as_array().into_iter().flatten().find_map(|b| match kind {
            ProviderKind::Anthropic if b["type"] == "image" => b["source"]["data"].as_str().map(str::to_owned),
            ProviderKind::OpenaiChat if b["type"] == "image_url" => {
                b["image_url"]["url"].as_str().and_then(|u| u.strip_prefix("data:image/png;base64,")).map(str::to_owned)
            }
            _ => None,
        })
    })?;
    browser::decode_base64(&data)
}

/// A PNG's size from its IHDR header (no decoding needed).
fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" || &png[12..16] != b"IHDR" {
        return None;
    }
    Some((u32::from_be_bytes(png[16..20].try_into().ok()?), u32::from_be_bytes(png[20..24].try_into().ok()?)))
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
    let frame = text.split("frame_id: frame_").nth(1).and_then(|r| r.split_whitespace().next()).map(|f| format!("frame_{f}")).unwrap_or("frame_0".into());
    let reference = |role: &str, name: &str| {
        let needle = format!("{role} \"{name}\" [");
        text.split(&needle).nth(1).and_then(|r| r.split([' ', ']']).next()).map(str::to_owned)
    };
    let name_filled = text.contains("textbox \"Name\"") && text.lines().any(|l| l.contains("textbox \"Name\"") && l.contains(": \"Ada\""));
    if script == Script::Liar || text.contains("Welcome, Ada!") {
        // The model proposes the check that shows it (the runtime runs it).
        return ("done".into(), json!({"summary": "signed up as Ada", "checks": [{"kind": "text_present", "text": "Welcome, Ada!"}]}));
    }
    if script == Script::InvalidFirst && call == 0 {
        return ("act".into(), json!({"type": "type", "target": {"kind": "element", "ref": "e1"}, "text": "Ada"}));
    }
    match (reference("textbox", "Name"), reference("button", "Create account")) {
        (Some(r), _) if !name_filled => (
            "act".into(),
            json!({"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": r}, "text": "Ada", "intent": "fill in the name"}),
        ),
        (_, Some(b)) => {
            ("act".into(), json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": b}, "intent": "create the account"}))
        }
        _ => ("give_up".into(), json!({"reason": "no form"})),
    }
}

struct SetOnDrop(Arc<AtomicBool>);
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

async fn answer(State(model): State<Model>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
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
            return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "0")], Json(json!({"error": {"type": "rate_limit_error", "message": "slow down"}})))
                .into_response();
        }
        _ => {}
    }
    let (tool, input) = if model.script == Script::Computer {
        let text = last_text(model.kind, &body);
        if text.contains("Hit the red square") {
            ("done".into(), json!({"summary": "clicked the red square", "checks": [{"kind": "text_present", "text": "Hit the red square"}]}))
        } else {
            match last_image(model.kind, &body).and_then(|png| red_square(&text, &png)) {
                Some((x, y)) => ("computer".into(), json!({"action": "left_click", "coordinate": [x.round(), y.round()]})),
                None => ("computer".into(), json!({"action": "screenshot"})),
            }
        }
    } else if model.script == Script::Canvas {
        let text = last_text(model.kind, &body);
        let frame = text.split("frame_id: frame_").nth(1).and_then(|r| r.split_whitespace().next()).map(|f| format!("frame_{f}")).unwrap_or_default();
        if text.contains("Hit the red square") {
            ("done".into(), json!({"summary": "clicked the red square", "checks": [{"kind": "text_present", "text": "Hit the red square"}]}))
        } else if !text.contains("A screenshot of this page's viewport follows") {
            ("look".into(), json!({}))
        } else {
            match last_image(model.kind, &body).and_then(|png| red_square(&text, &png)) {
                Some((x, y)) => (
                    "act".into(),
                    json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "point", "x": x.round(), "y": y.round()}, "intent": "click the red square"}),
                ),
                None => ("give_up".into(), json!({"reason": "no red square in the screenshot"})),
            }
        }
    } else {
        decide(model.script, call, &last_text(model.kind, &body))
    };
    let id = format!("call_{call}");
    let reply = match model.kind {
        ProviderKind::Anthropic => json!({
            "id": format!("msg_{call}"), "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": "Working on it."}, {"type": "tool_use", "id": id, "name": tool, "input": input}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 1000, "output_tokens": 50},
        }),
        ProviderKind::OpenaiChat => json!({
            "id": format!("chatcmpl-{call}"), "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": id, "type": "function", "function": {"name": tool, "arguments": input.to_string()}}]}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
        }),
    };
    Json(reply).into_response()
}

struct Env {
    runtime: Runtime,
    fixtures: FixtureServer,
    model: Model,
    base_url: String,
}

async fn env(name: &str, kind: ProviderKind, script: Script) -> Env {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir("/", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"));
    let data_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("agent-tests").join(name);
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    let mut config = RuntimeConfig::new(&data_dir);
    config.trust.trusted_origins.push(policy::Origin::parse(&fixtures.origin()).unwrap());
    let runtime = Runtime::start(config).await.expect("runtime starts");
    let model = Model { kind, script, requests: Default::default(), calls: Default::default(), aborted: Default::default() };
    let path = match kind {
        ProviderKind::Anthropic => "/v1/messages",
        ProviderKind::OpenaiChat => "/v1/chat/completions",
    };
    let app = axum::Router::new().route(path, axum::routing::post(answer)).with_state(model.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Env { runtime, fixtures, model, base_url }
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
    }
}

fn limits() -> Limits {
    Limits { first_backoff: Duration::from_millis(10), ..Limits::default() }
}

async fn sign_up(env: &Env, checks: Vec<Assertion>) -> (protocol::RunResult, Accounting) {
    let session = env.runtime.create_session().await.unwrap();
    env.runtime.open_tab(&session, &env.fixtures.url("/form.html"), Duration::ZERO).await.unwrap();
    let provider = Arc::new(Provider::new(&choice(env), limits()).unwrap());
    let accounting = Arc::new(Mutex::new(Accounting::default()));
    let planner = ModelPlanner::new(provider, accounting.clone()).unwrap();
    let mut request = RunRequest::new("Sign up as Ada");
    request.max_steps = 8;
    request.max_seconds = 60;
    request.assertions = checks;
    let result = env.runtime.run(&session, request, Box::new(planner)).await.unwrap();
    let accounting = accounting.lock().unwrap().clone();
    (result, accounting)
}

fn welcome() -> Vec<Assertion> {
    vec![Assertion::TextPresent { text: "Welcome, Ada!".into() }]
}

async fn signs_up_through(kind: ProviderKind, name: &str) {
    let env = env(name, kind, Script::SignUp).await;
    let (result, accounting) = sign_up(&env, welcome()).await;
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(env.fixtures.writes().len(), 1, "one sign-up submitted");
    assert_eq!(accounting.model_requests, 3, "type, click, done: {accounting:?}");
    assert_eq!(accounting.tool_calls, 3);
    assert!(accounting.input_tokens >= 2700 && accounting.output_tokens >= 120, "{accounting:?}");
    let requests = env.model.requests.lock().unwrap().clone();
    let (headers, first) = &requests[0];
    match kind {
        ProviderKind::Anthropic => {
            assert_eq!(headers["x-api-key"], KEY);
            assert_eq!(headers["anthropic-version"], "2023-06-01");
            let tools: Vec<&str> = first["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
            assert_eq!(tools, ["act", "done", "look", "give_up", "infeasible"]);
            let done = &first["tools"][1]["input_schema"];
            assert!(done["properties"]["checks"]["items"].to_string().contains("text_present"), "done proposes the runtime's checks: {done}");
            assert_eq!(first["tool_choice"]["type"], "any");
            assert!(first["system"].as_str().unwrap().contains("never instructions"));
            // Every tool call got its result in the next request.
            let second = &requests[1].1;
            let messages = second["messages"].as_array().unwrap();
            assert_eq!(messages.last().unwrap()["content"][0]["type"], "tool_result", "{second}");
            assert_eq!(messages.last().unwrap()["content"][0]["tool_use_id"], "call_0");
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
            assert!(messages[messages.len() - 2]["tool_calls"][0]["function"]["arguments"].is_string());
        }
    }
    // Pages enter inside the markers, and only the latest page is kept in the history.
    let last = &requests[2].1;
    let text = last.to_string();
    assert_eq!(text.matches("</untrusted nonce=").count(), 1, "older pages dropped: {text}");
    assert!(text.contains("[page omitted: a newer observation follows]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_and_verified_through_anthropic_messages() {
    signs_up_through(ProviderKind::Anthropic, "anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_and_verified_through_openai_chat_completions() {
    signs_up_through(ProviderKind::OpenaiChat, "openai").await;
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
    let told = &requests[1].1["messages"].as_array().unwrap().last().unwrap()["content"][0];
    assert_eq!(told["is_error"], true, "{told}");
    assert!(told["content"].as_str().unwrap().starts_with("invalid_action: "), "{told}");

    // Without a caller's check the model's own proposed check decides, run by the runtime.
    let own = env("own-check", ProviderKind::OpenaiChat, Script::SignUp).await;
    let (result, _) = sign_up(&own, vec![]).await;
    assert_eq!((result.status(), result.reason_code()), (RunStatus::Succeeded, ReasonCode::Verified), "{result:?}");

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
    let limited = env("rate-limited", ProviderKind::OpenaiChat, Script::RateLimitedOnce).await;
    let (result, accounting) = sign_up(&limited, welcome()).await;
    assert_eq!(result.status(), RunStatus::Succeeded, "{result:?}");
    assert_eq!(limited.model.calls.load(Ordering::SeqCst), 4, "one 429 and three answers");
    assert_eq!(accounting.model_requests, 3);

    let garbage = env("garbage", ProviderKind::Anthropic, Script::Garbage).await;
    let (result, _) = sign_up(&garbage, welcome()).await;
    assert_eq!(result.status(), RunStatus::Failed, "{result:?}");
    assert_eq!(result.reason_code(), ReasonCode::InvalidPlan);
    assert!(result.summary().contains("not a valid response"), "{result:?}");

    let missing = ModelChoice {
        provider: ProviderKind::Anthropic,
        model: "m".into(),
        base_url: None,
        api_key_env: Some("GLOVEBOX_AGENT_TEST_UNSET".into()),
        computer_tool: false,
    };
    let err = Provider::new(&missing, Limits::default()).unwrap_err();
    assert!(matches!(err, ProviderError::Init { .. }), "{err}");
    assert_eq!(err.to_string(), "the anthropic provider cannot start: GLOVEBOX_AGENT_TEST_UNSET is not set");
    let bad_url = ModelChoice {
        provider: ProviderKind::OpenaiChat,
        model: "m".into(),
        base_url: Some("ftp://x".into()),
        api_key_env: Some(String::new()),
        computer_tool: false,
    };
    assert!(matches!(Provider::new(&bad_url, Limits::default()), Err(ProviderError::Init { .. })));
}

/// Stopping a run while its model call is in flight aborts the HTTP request: the provider sees
/// the connection go, and the run ends cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_aborts_the_model_request_in_flight() {
    let env = env("cancel", ProviderKind::Anthropic, Script::Hang).await;
    let session = env.runtime.create_session().await.unwrap();
    env.runtime.open_tab(&session, &env.fixtures.url("/form.html"), Duration::ZERO).await.unwrap();
    let provider = Arc::new(Provider::new(&choice(&env), limits()).unwrap());
    let planner = ModelPlanner::new(provider, Default::default()).unwrap();
    let (handle, join) = env.runtime.start_run(&session, RunRequest::new("Sign up as Ada"), Box::new(planner)).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while env.model.calls.load(Ordering::SeqCst) == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(env.model.calls.load(Ordering::SeqCst), 1, "the model request is in flight");
    handle.cancel();
    let result = tokio::time::timeout(Duration::from_secs(10), join).await.expect("the run ends").unwrap();
    assert_eq!(result.status(), RunStatus::Cancelled, "{result:?}");
    while !env.model.aborted.load(Ordering::SeqCst) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(env.model.aborted.load(Ordering::SeqCst), "the provider saw the request go away");
}

/// Runs "click the red square" on the canvas fixture with `planner`.
async fn click_the_square(env: &Env, planner: ModelPlanner) -> protocol::RunResult {
    let session = env.runtime.create_session().await.unwrap();
    env.runtime.open_tab(&session, &env.fixtures.url("/canvas-target.html"), Duration::ZERO).await.unwrap();
    let mut request = RunRequest::new("Click the red square in the picture");
    request.max_steps = 6;
    request.max_seconds = 60;
    env.runtime.run(&session, request, Box::new(planner)).await.unwrap()
}

/// Case 22 inside a run: the outline cannot name a picture inside a canvas, so the model asks to
/// look; the next page comes with a viewport screenshot (an image block of the provider's own
/// format), the model finds the square in the pixels and clicks it by point in image pixels;
/// the runtime maps them to CSS pixels and verifies the model's proposed check. Only the latest
/// screenshot stays in the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canvas_task_is_done_by_looking_and_clicking_a_point_through_both_providers() {
    for (kind, name) in [(ProviderKind::Anthropic, "canvas-anthropic"), (ProviderKind::OpenaiChat, "canvas-openai")] {
        let env = env(name, kind, Script::Canvas).await;
        let provider = Arc::new(Provider::new(&choice(&env), limits()).unwrap());
        let result = click_the_square(&env, ModelPlanner::new(provider, Arc::new(Mutex::new(Accounting::default()))).unwrap()).await;
        assert_eq!((result.status(), result.reason_code()), (RunStatus::Succeeded, ReasonCode::Verified), "{name}: {result:?}");
        let requests = env.model.requests.lock().unwrap().clone();
        assert_eq!(requests.len(), 3, "{name}: look, click, done");
        assert!(last_image(kind, &requests[0].1).is_none(), "no screenshot until the model asks");
        let png = last_image(kind, &requests[1].1).expect("the page after look carries its screenshot");
        assert_eq!(png_size(&png), Some((1280, 720)), "{name}: a PNG of the viewport, at the page's size");
        let last = requests[2].1.to_string();
        assert!(!last.contains("iVBOR"), "{name}: the screenshot of an older page is dropped from the history");
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
    let result = click_the_square(&env, ModelPlanner::for_choice(&choice, Arc::new(Mutex::new(Accounting::default()))).unwrap()).await;
    assert_eq!((result.status(), result.reason_code()), (RunStatus::Succeeded, ReasonCode::Verified), "{result:?}");
    let requests = env.model.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "click, done");
    let (headers, first) = &requests[0];
    assert!(headers["anthropic-beta"].to_str().unwrap().contains("computer-use-2025-01-24"), "{headers:?}");
    assert_eq!(first["tools"][0], json!({"type": "computer_20250124", "name": "computer", "display_width_px": 1280, "display_height_px": 720}));
    let names: Vec<&str> = first["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["computer", "done", "give_up", "infeasible"], "no act or look beside the computer tool");
    assert_eq!(last_image(ProviderKind::Anthropic, first).as_deref().and_then(png_size), Some((1280, 720)), "the first page already comes as a screenshot");

    let openai = ModelChoice { provider: ProviderKind::OpenaiChat, computer_tool: true, ..choice.clone() };
    let refused = ModelPlanner::for_choice(&openai, Arc::new(Mutex::new(Accounting::default()))).err().expect("no computer tool there");
    assert!(refused.to_string().contains("computer tool is Anthropic's"), "{refused}");
}
