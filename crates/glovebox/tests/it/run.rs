//! `glovebox run` as a user runs it: a model provider (a loopback server speaking the OpenAI
//! Chat Completions format) drives a real run on the form fixture; a provider that cannot start
//! fails the run with its own error.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use test_support::FixtureServer;

use crate::{data_dir, glovebox};

/// The scripted model: fills Name with Ada, submits, says done, from the page it is shown.
/// The model's state: requests so far, and each answer (tool and the page's status line) for
/// the failure messages.
type Model = (Arc<AtomicUsize>, Arc<Mutex<Vec<String>>>);

/// The last page a Chat Completions request shows the model (inside the untrusted markers), and
/// its frame id.
pub(crate) fn page_and_frame(body: &Value) -> (String, String) {
    let page = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .rfind(|t| t.contains("</untrusted nonce="))
        .unwrap_or_default()
        .to_owned();
    let frame = page
        .split("frame_id: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_default()
        .to_owned();
    (page, frame)
}

async fn chat(State((calls, said)): State<Model>, Json(body): Json<Value>) -> Json<Value> {
    let n = calls.fetch_add(1, Ordering::SeqCst);
    let (page, frame) = page_and_frame(&body);
    let r = |needle: &str| {
        page.split(needle)
            .nth(1)
            .and_then(|r| r.split([' ', ']']).next())
            .unwrap_or("e0")
            .to_owned()
    };
    let (tool, input) = if page.contains("Welcome, Ada!") {
        ("done", json!({"summary": "signed up"}))
    } else if page.contains("textbox \"Name\"") && !page.contains(": \"Ada\"") {
        (
            "act",
            json!({"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": r("textbox \"Name\" [")}, "text": "Ada", "intent": "name"}),
        )
    } else {
        (
            "act",
            json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": r("button \"Create account\" [")}, "intent": "submit"}),
        )
    };
    let status = page
        .lines()
        .find(|l| l.contains("status"))
        .unwrap_or_default()
        .trim()
        .to_owned();
    said.lock().unwrap().push(format!(
        "{tool} {} on [{status}]",
        input["type"].as_str().unwrap_or_default()
    ));
    Json(
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": format!("c{n}"), "type": "function", "function": {"name": tool, "arguments": input.to_string()}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10}}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_completes_a_task_with_a_model_provider_and_names_a_provider_that_cannot_start() {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let (calls, said) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Mutex::new(Vec::new())),
    );
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .with_state((calls.clone(), said.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let (dir, url, origin) = (
        data_dir("run-model"),
        fixtures.url("/form.html"),
        fixtures.origin(),
    );

    let run = {
        let (dir, url, origin, base) = (dir.clone(), url.clone(), origin.clone(), base.clone());
        tokio::task::spawn_blocking(move || {
            glovebox(&dir)
                .args([
                    "--trust",
                    &origin,
                    "run",
                    "Sign up as Ada",
                    "--url",
                    &url,
                    "--provider",
                    "openai_chat",
                    "--model",
                    "test-model",
                    "--base-url",
                    &base,
                ])
                .args(["--check-text", "Welcome, Ada!", "--json", "--report"])
                .env("GLOVEBOX_CONFIG", "/dev/null")
                .env("OPENAI_API_KEY", "sk-test")
                .output()
                .unwrap()
        })
    }
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let result: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(result["status"], "succeeded", "{result}");
    // One request per step: the page after the click already says Welcome (settling waited for
    // the form's fetch and its DOM update), so the model never submits twice.
    assert_eq!(
        result["report"]["model_requests"],
        3,
        "{result}\nthe model answered: {:?}",
        said.lock().unwrap()
    );
    assert_eq!(result["report"]["input_tokens"], 300, "{result}");
    // Where the run's time went, from its record: the parts are measured, not derived, and
    // never add up to more than the whole.
    let time = &result["report"]["time"];
    let ms = |k: &str| time[k].as_u64().unwrap_or_else(|| panic!("{k} in {time}"));
    assert!(
        ms("capture_ms") > 0 && ms("input_ms") > 0 && ms("model_ms") > 0,
        "{time}"
    );
    assert!(
        ms("model_ms") + ms("capture_ms") + ms("input_ms") + ms("page_wait_ms")
            <= ms("total_ms") + 5,
        "{time}"
    );
    assert_eq!(
        ms("runtime_ms"),
        ms("total_ms") - ms("model_ms") - ms("approval_ms") - ms("person_ms"),
        "{time}"
    );
    assert!(
        !stdout.contains("sk-test"),
        "the key never leaves the process"
    );
    assert_eq!(fixtures.writes().len(), 1);

    let failed = tokio::task::spawn_blocking(move || {
        glovebox(&dir)
            .args([
                "run",
                "x",
                "--url",
                &url,
                "--provider",
                "anthropic",
                "--model",
                "m",
                "--json",
            ])
            .env("GLOVEBOX_CONFIG", "/dev/null")
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(failed.status.code(), Some(2));
    let said: Value = serde_json::from_str(String::from_utf8_lossy(&failed.stdout).trim()).unwrap();
    assert_eq!(said["error"], "backend_unavailable", "{said}");
    assert_eq!(
        said["message"], "the anthropic provider cannot start: ANTHROPIC_API_KEY is not set",
        "no other provider was tried: {said}"
    );
}

/// The model of the secret test: types the placeholder into Password, then says done; keeps
/// every request it was sent.
async fn secret_model(
    State(seen): State<Arc<Mutex<Vec<String>>>>,
    Json(body): Json<Value>,
) -> Json<Value> {
    let whole = body.to_string();
    seen.lock().unwrap().push(whole);
    let (page, frame) = page_and_frame(&body);
    let field = page
        .split("textbox \"Password\" [")
        .nth(1)
        .and_then(|r| r.split([' ', ']']).next())
        .unwrap_or("e0");
    let (tool, input) = if page.contains("Welcome back") {
        ("done", json!({"summary": "signed in"}))
    } else {
        (
            "act",
            json!({"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": field},
                "text": "<secret>pw</secret>", "intent": "password"}),
        )
    };
    Json(
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": tool, "arguments": input.to_string()}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1}}),
    )
}

/// Issue 29: `glovebox run --secret NAME@ORIGIN` (the value from the environment) types the
/// value where the person named it, and the model's every request holds only the placeholder;
/// a `--secret` that cannot be read says how to write one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_types_a_secret_the_model_never_sees() {
    let secret = "pw-cli-4Kd9sQ";
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.html(
        "/login.html",
        r#"<!doctype html><title>Sign in</title><input type=password aria-label=Password id=p><p id=out>Signed out</p>
<script>p.addEventListener('input', () => { fetch('/typed?v=' + encodeURIComponent(p.value)).catch(() => {}); out.textContent = 'Welcome back ' + p.value; });</script>"#,
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(secret_model))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let (dir, url, origin) = (
        data_dir("run-secret"),
        fixtures.url("/login.html"),
        fixtures.origin(),
    );
    let run = {
        let (dir, url, origin) = (dir.clone(), url.clone(), origin.clone());
        tokio::task::spawn_blocking(move || {
            glovebox(&dir)
                .args(["--trust", &origin, "run", "Sign in", "--url", &url])
                .args([
                    "--provider",
                    "openai_chat",
                    "--model",
                    "m",
                    "--base-url",
                    &base,
                ])
                .args(["--secret", &format!("pw@{origin}")])
                .args(["--check-text", "Welcome back", "--json"])
                .env("GLOVEBOX_CONFIG", "/dev/null")
                .env("OPENAI_API_KEY", "sk-test")
                .env("pw", secret)
                .output()
                .unwrap()
        })
    }
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(result["status"], "succeeded", "{result}");
    assert!(
        fixtures
            .requests_to("/typed")
            .iter()
            .any(|r| r.query.as_deref() == Some(&format!("v={secret}"))),
        "the field got the value"
    );
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(
        seen[0].contains("<secret>pw</secret>"),
        "the model is told the placeholder: {}",
        seen[0]
    );
    for (i, request) in seen.iter().enumerate() {
        assert!(!request.contains(secret), "request {i}: {request}");
    }
    assert!(!stdout.contains(secret) && !stderr.contains(secret));

    let bad = tokio::task::spawn_blocking(move || {
        glovebox(&dir)
            .args(["run", "x", "--url", &url, "--secret", "pw=hunter22"])
            .env("GLOVEBOX_CONFIG", "/dev/null")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(!bad.status.success());
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.contains("NAME@ORIGIN=VALUE"), "{said}");
    assert!(!said.contains("hunter22"), "{said}");
}
