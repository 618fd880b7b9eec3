//! The task set's apps on loopback: their pages, the files they offer for download, and the
//! records the harness judges an attempt by — every request, and every submission an app makes
//! (`POST /submit` from `apps/common.js`). Nothing here is shown to the runtime or the planner:
//! the ground truth is the app's side of the conversation.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::tasks::{Check, TaskSet};

/// One request the apps received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
}

/// What the apps recorded during one attempt.
#[derive(Debug, Default)]
struct Records {
    requests: Vec<Request>,
    /// Each submission's JSON object (`form` and its fields).
    submissions: Vec<serde_json::Map<String, Value>>,
    /// Submissions refused on purpose (`?flaky=1`: the first one of an attempt).
    refused: u32,
    /// A draft kept by the app's server (`/draft`), as a browser crash would not lose it.
    draft: Option<Value>,
}

#[derive(Clone)]
struct Shared {
    files: Arc<BTreeMap<String, Vec<u8>>>,
    records: Arc<Mutex<Records>>,
}

/// The apps' server; stops when dropped.
pub struct Apps {
    origin: String,
    records: Arc<Mutex<Records>>,
    files: Arc<BTreeMap<String, Vec<u8>>>,
    task: tokio::task::AbortHandle,
}

impl Drop for Apps {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn records(r: &Mutex<Records>) -> std::sync::MutexGuard<'_, Records> {
    r.lock().unwrap_or_else(|p| p.into_inner())
}

impl Apps {
    pub async fn serve(set: &TaskSet) -> anyhow::Result<Apps> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let origin = format!("http://{}", listener.local_addr()?);
        let shared = Shared {
            files: Arc::new(set.files.clone()),
            records: Arc::default(),
        };
        let app = Router::new()
            .route("/apps/{name}", get(app_page))
            .route("/download/{name}", get(download))
            .route("/submit", post(submit))
            .route("/draft", get(get_draft).post(put_draft))
            .route("/health", get(|| async { "ok" }))
            .fallback(other)
            .layer(axum::middleware::from_fn_with_state(shared.clone(), record))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        })
        .abort_handle();
        Ok(Apps {
            origin,
            records: shared.records,
            files: shared.files,
            task,
        })
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The URL of a task's app with a case's query.
    pub fn url(&self, app: &str, query: &str) -> String {
        let base = if app.contains("://") {
            app.to_owned()
        } else {
            format!("{}/apps/{app}", self.origin)
        };
        if query.is_empty() {
            base
        } else if base.contains('?') {
            format!("{base}&{query}")
        } else {
            format!("{base}?{query}")
        }
    }

    /// Forgets the last attempt: a fresh reset.
    pub fn reset(&self) {
        *records(&self.records) = Records::default();
    }

    /// Submissions the apps refused on purpose this attempt (a busy server).
    pub fn refusals(&self) -> u64 {
        u64::from(records(&self.records).refused)
    }

    /// The submissions so far (for the report's record of an attempt).
    pub fn submissions(&self) -> Vec<Value> {
        records(&self.records)
            .submissions
            .iter()
            .cloned()
            .map(Value::Object)
            .collect()
    }

    /// Judges the checks against what the apps recorded and the run's downloads (bytes by name
    /// as the browser saved them). Each failed check says why.
    pub fn judge(&self, checks: &[Check], downloads: &[Vec<u8>]) -> Vec<String> {
        let r = records(&self.records);
        let mut failed = Vec::new();
        for check in checks {
            match check {
                Check::Submitted { form, fields } => {
                    let matches = r.submissions.iter().any(|s| {
                        s.get("form").and_then(Value::as_str) == Some(form.as_str())
                            && fields.iter().all(|(k, v)| match s.get(k) {
                                Some(Value::String(got)) => got.trim() == v,
                                Some(other) => {
                                    *other
                                        == serde_json::from_str::<Value>(v).unwrap_or(Value::Null)
                                }
                                None => false,
                            })
                    });
                    if !matches {
                        let seen: Vec<String> = r
                            .submissions
                            .iter()
                            .filter(|s| {
                                s.get("form").and_then(Value::as_str) == Some(form.as_str())
                            })
                            .map(|s| Value::Object(s.clone()).to_string())
                            .collect();
                        failed.push(if seen.is_empty() {
                            format!("no {form} submission")
                        } else {
                            format!(
                                "no {form} submission with {fields:?} (got {})",
                                seen.join(", ")
                            )
                        });
                    }
                }
                Check::NotSubmitted { form } => {
                    let any = r.submissions.iter().find(|s| {
                        form.as_deref()
                            .is_none_or(|f| s.get("form").and_then(Value::as_str) == Some(f))
                    });
                    if let Some(s) = any {
                        failed.push(format!(
                            "a submission that must not happen: {}",
                            Value::Object(s.clone())
                        ));
                    }
                }
                Check::NoRequest { path_prefix } => {
                    if let Some(req) = r.requests.iter().find(|q| q.path.starts_with(path_prefix)) {
                        failed.push(format!("a request to {} {}", req.method, req.path));
                    }
                }
                // The guest's own records are read by the VM harness (`eval::Guests::judge`).
                Check::GuestFile { .. } | Check::NoGuestFile { .. } => {}
                Check::Downloaded { name } => {
                    let want = self.files.get(&format!("downloads/{name}"));
                    if !downloads.iter().any(|d| Some(d) == want) {
                        failed.push(format!(
                            "no download with the bytes of {name} ({} downloads)",
                            downloads.len()
                        ));
                    }
                }
            }
        }
        failed
    }
}

async fn record(
    State(shared): State<Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    records(&shared.records).requests.push(Request {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
    });
    next.run(request).await
}

fn typed(content_type: &'static str, body: Vec<u8>) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn app_page(State(shared): State<Shared>, Path(name): Path<String>) -> Response {
    match shared.files.get(&format!("apps/{name}")) {
        Some(body) if name.ends_with(".js") => {
            typed("text/javascript; charset=utf-8", body.clone())
        }
        Some(body) => typed("text/html; charset=utf-8", body.clone()),
        None => (StatusCode::NOT_FOUND, "no such app").into_response(),
    }
}

async fn download(State(shared): State<Shared>, Path(name): Path<String>) -> Response {
    let Some(body) = shared.files.get(&format!("downloads/{name}")) else {
        return (StatusCode::NOT_FOUND, "no such file").into_response();
    };
    let mut response = typed("application/octet-stream", body.clone());
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// An app's submission: a JSON object with a `form`. `?flaky=1` refuses the first of an attempt
/// (503, "busy"), `?down=1` every one: what the recovery tasks are made of.
async fn submit(
    State(shared): State<Shared>,
    Query(query): Query<BTreeMap<String, String>>,
    body: Bytes,
) -> Response {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "a JSON object").into_response();
    };
    let mut r = records(&shared.records);
    if query.contains_key("down") || (query.contains_key("flaky") && r.refused == 0) {
        r.refused += 1;
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"error": "busy"})),
        )
            .into_response();
    }
    r.submissions.push(fields);
    axum::Json(json!({"ok": true})).into_response()
}

async fn get_draft(State(shared): State<Shared>) -> Response {
    axum::Json(
        records(&shared.records)
            .draft
            .clone()
            .unwrap_or(Value::Null),
    )
    .into_response()
}

async fn put_draft(State(shared): State<Shared>, body: Bytes) -> Response {
    let Ok(draft) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "JSON").into_response();
    };
    records(&shared.records).draft = Some(draft);
    axum::Json(json!({"ok": true})).into_response()
}

/// Anything else (an injected page's "collect" endpoint): recorded, and not found.
async fn other(_method: Method, _uri: Uri, _headers: HeaderMap) -> Response {
    (StatusCode::NOT_FOUND, "not found").into_response()
}
