//! The person channel for approvals: a loopback HTTP endpoint guarded by a person token that is
//! shown to the person on the terminal and never to the model. `GET /api/approvals` lists what is
//! pending; `POST /api/approvals/{id}` with `{"decision": "approve_once" | "approve_for_task" |
//! "deny"}` resolves one. `glovebox approve` is a terminal client of it.
//!
//! The same channel is the host's for a person's own tabs: `POST /api/user-tabs` with
//! `{"url": …}` opens a tab as the person's (no session owns it; a session may claim it with
//! `tab_claim`), and `GET /api/user-tabs` lists the tabs no session owns.
//!
//! Host windows: `POST /api/host/windows` with `{"window_id": …, "renderer_instance_id": …}`
//! registers a desktop host's window and answers the one-time nonce its renderer presents on
//! the renderer WebSocket (`server` crate); a plain web client without the token cannot claim a
//! window.
//!
//! Access: `POST /api/access` with `{"session": …, "surface": "s1", "access": "full" | "observe" |
//! "off"}` is the person's switch for one tab of a session: `observe` answers questions and
//! refuses writes, `off` lists the tab without content or tool. No tool can change it.
//!
//! The console: `GET /` is the person's web console (embedded page, script and style; strict
//! CSP) — Resources by session and branch, a read-only preview of the exact page
//! (`GET /api/tabs/{id}/screenshot`), approval cards, the operation log. It authenticates with the
//! person token, which `serve` prints in the console URL's fragment (never sent to a server).
//!
//! The live view and real entry: `GET /api/tabs/{id}/view` is a WebSocket (`person_view.rs`):
//! the page's screencast frames, and the person's pointer, keys and navigations dispatched to
//! the page as theirs (acting input pauses the agent first).
//!
//! Control: `POST /api/tabs/{id}/take-over` blocks agent dispatch on the tab at once and answers
//! `paused` once the stop is confirmed (else `pause_failed`, still blocked; post again to
//! retry); `POST /api/tabs/{id}/hand-back` lets the agent continue (only when paused).
//!
//! Runs that need a person (a login, a CAPTCHA): `GET /api/runs/waiting` lists them,
//! `POST /api/runs/{id}/continue` continues one after the person did their part.
//!
//! The operation log: `GET /api/log?session=…&run=…&limit=…` (runs, actions with their receipt
//! states, approvals; the records `glovebox log` reads).
//!
//! Tabs: `GET /api/tabs` lists every tab record for the person — open, kept, restored,
//! closed by a person (listed as closed), restore failed — with the last restore;
//! `POST /api/tabs/{id}/close` is the person closing a page (it stays closed);
//! `POST /api/tabs/{id}/offer` offers a person's open tab to sessions (a kept tab a restore
//! brought back is nobody's to claim until then);
//! `POST /api/tabs/{id}/link` links a tab a page opened (a popup, listed with `opened_by` and
//! `linkable`) so a run may use it from the next turn (`Runtime::link_tab`);
//! `POST /api/tabs/{id}/preview` stores the preview preferences: `{"pinned": bool, "hidden": bool}`,
//! nothing else.
//! `POST /api/tabs/{id}/allow-origin` with `{"origin": "https://…"}` lets a tab that holds what
//! the agent typed (its entry's `network_hold`: where its requests may go, which origins were
//! refused and how often) reach that origin too, for as long as the hold lasts.
//!
//! Artifacts: `GET /api/artifacts/{id}` answers a file an agent downloaded (the id its receipt
//! named), as an attachment a browser saves and never renders.
//!
//! Turns: `GET /api/sessions` lists the sessions with their current turn; `POST /api/turn-end`
//! with `{}` (or `{"session": …}`) ends the current turn of every session whose client ends its
//! own turns (MCP, CLI; not host chat sessions), or of the one named: unmarked agent tabs close,
//! claims go back, marks of that turn expire at the next one. `glovebox turn-end` is its client,
//! for a client's turn-complete hook.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use runtime::{ApprovalDecision, Runtime, RuntimeError};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A person's decision as it arrives on the channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PersonDecision {
    /// This one action.
    ApproveOnce,
    /// Ordinary actions on this origin for the rest of the session (R3 still asks each time).
    ApproveForTask,
    /// Refuse.
    Deny,
}

impl From<PersonDecision> for ApprovalDecision {
    fn from(d: PersonDecision) -> Self {
        match d {
            PersonDecision::ApproveOnce => ApprovalDecision::ApproveOnce,
            PersonDecision::ApproveForTask => ApprovalDecision::ApproveForTask,
            PersonDecision::Deny => ApprovalDecision::Deny,
        }
    }
}

#[derive(Clone)]
pub(crate) struct PersonState {
    pub(crate) runtime: Runtime,
    pub(crate) token: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionBody {
    decision: PersonDecision,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WindowBody {
    window_id: String,
    renderer_instance_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccessBody {
    session: String,
    surface: String,
    access: runtime::Access,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowOriginBody {
    origin: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TurnEndBody {
    #[serde(default)]
    session: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserTabBody {
    /// A page to open as the person's tab.
    #[serde(default)]
    url: Option<String>,
    /// Or one of the surfaces the person has open (`GET /api/surfaces`: a desktop's window).
    #[serde(default)]
    surface: Option<String>,
}

/// The person channel's routes and the console. Every `/api/` route of the channel needs the
/// person token, checked here once ([`require_person`]); the console's page, script and style
/// are public (the page asks for the token, which the console URL's fragment carries), and the
/// live view checks it in its first message (a browser sets no header on a WebSocket).
pub(crate) fn router(runtime: Runtime, token: String) -> axum::Router {
    let state = PersonState { runtime, token };
    let guarded = axum::Router::new()
        .route("/api/approvals", get(list))
        .route("/api/approvals/{id}", post(resolve))
        .route("/api/user-tabs", get(user_tabs).post(open_user_tab))
        .route("/api/surfaces", get(surfaces))
        .route("/api/sessions", get(sessions))
        .route("/api/turn-end", post(turn_end))
        .route("/api/host/windows", post(register_window))
        .route("/api/access", post(set_access))
        .route("/api/artifacts/{id}", get(artifact))
        .route("/api/tabs/{id}/screenshot", get(screenshot))
        .route("/api/tabs/{id}/take-over", post(take_over))
        .route("/api/tabs/{id}/hand-back", post(hand_back))
        .route("/api/runs/waiting", get(waiting_runs))
        .route("/api/runs/{id}/continue", post(continue_run))
        .route("/api/tabs", get(tabs))
        .route("/api/log", get(log))
        .route("/api/tabs/{id}/close", post(close_tab))
        .route("/api/tabs/{id}/offer", post(offer_tab))
        .route("/api/tabs/{id}/link", post(link_tab))
        .route("/api/tabs/{id}/preview", post(set_preview))
        .route("/api/tabs/{id}/allow-origin", post(allow_origin))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            require_person,
        ));
    axum::Router::new()
        .route("/", get(console_page))
        .route("/console.js", get(console_script))
        .route("/console.css", get(console_style))
        .route("/api/tabs/{id}/view", get(crate::person_view::view))
        .merge(guarded)
        .with_state(state)
}

/// The person token, or 401 before the route runs.
async fn require_person(
    State(state): State<PersonState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if authorised(request.headers(), &state.token) {
        next.run(request).await
    } else {
        unauthorised()
    }
}

fn authorised(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| crate::listener::constant_time_eq(given.as_bytes(), token.as_bytes()))
}

/// A runtime error as the channel answers it: the closed code and the message.
fn refusal(status: StatusCode, e: &RuntimeError) -> Response {
    (
        status,
        Json(json!({"error": e.code().as_str(), "message": e.to_string()})),
    )
        .into_response()
}

/// [`refusal`] with the status its code implies.
fn answer(e: &RuntimeError) -> Response {
    use protocol::ErrorCode as C;
    let status = match e.code() {
        C::UnknownSurface | C::AmbiguousSurface => StatusCode::NOT_FOUND,
        C::OriginDenied | C::CapabilityDenied => StatusCode::FORBIDDEN,
        C::BackendUnavailable | C::TargetLost | C::Timeout => StatusCode::BAD_GATEWAY,
        C::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    refusal(status, e)
}

fn unauthorised() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        Json(json!({"error": "the person token is required (Authorization: Bearer …)"})),
    )
        .into_response()
}

async fn list(State(state): State<PersonState>) -> Response {
    Json(json!({"pending": state.runtime.pending_approvals()})).into_response()
}

/// The JSON body, read only after the caller is known to be the person (so a stranger learns
/// nothing from parse errors): always a JSON object (serde would read a struct from an array
/// too, and `[]` was taken as an empty body: "every session" for a turn end), of the route's
/// type.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Box<Response>> {
    let refused = |why: String| -> Box<Response> {
        (StatusCode::BAD_REQUEST, Json(json!({"error": "invalid_action", "message": format!("the body is not valid: {why}")}))).into_response().into()
    };
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value @ serde_json::Value::Object(_)) => {
            serde_json::from_value(value).map_err(|e| refused(e.to_string()))
        }
        Ok(_) => Err(refused("it must be a JSON object".into())),
        Err(e) => Err(refused(e.to_string())),
    }
}

async fn resolve(
    State(state): State<PersonState>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let body: DecisionBody = match parse(&body) {
        Ok(b) => b,
        Err(refused) => return *refused,
    };
    let Ok(id) = protocol::ApprovalId::new(id) else {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "no such approval (approval ids look like approval_…)"})),
        )
            .into_response();
    };
    match state.runtime.resolve_approval(&id, body.decision.into()) {
        Ok(()) => {
            tracing::info!(approval = %id, decision = ?body.decision, "a person resolved an approval");
            Json(json!({"resolved": id, "decision": body.decision})).into_response()
        }
        Err(e) => (StatusCode::NOT_FOUND, Json(json!({"error": e.to_string()}))).into_response(),
    }
}

async fn user_tabs(State(state): State<PersonState>) -> Response {
    match state.runtime.user_tabs() {
        Ok(tabs) => Json(json!({"user_tabs": tabs})).into_response(),
        Err(e) => refusal(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

async fn open_user_tab(State(state): State<PersonState>, body: axum::body::Bytes) -> Response {
    let body: UserTabBody = match parse(&body) {
        Ok(b) => b,
        Err(refused) => return *refused,
    };
    let registered = match (&body.url, &body.surface) {
        (Some(url), None) => state.runtime.register_user_tab(url).await,
        (None, Some(surface)) => state.runtime.offer_surface(surface).await,
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": "give exactly one of url (a page to open) and surface (one of GET /api/surfaces)", "code": "invalid_action"})),
            )
                .into_response();
        }
    };
    match registered {
        Ok(tab) => {
            tracing::info!(tab = %tab, "a person offered a tab or window");
            Json(json!({"tab": tab})).into_response()
        }
        Err(e) => answer(&e),
    }
}

/// The surfaces the adapter lists (a desktop's windows), for a person choosing one to offer.
async fn surfaces(State(state): State<PersonState>) -> Response {
    match state.runtime.surfaces_for_person().await {
        Ok(surfaces) => Json(json!({"surfaces": surfaces})).into_response(),
        Err(e) => answer(&e),
    }
}

/// The console's page and assets (embedded in the binary; no build step). They hold no data: the
/// page reads everything from `/api/…` with the person token from its URL fragment.
fn asset(body: &'static str, mime: &'static str) -> Response {
    // Private like any byte a person sees, and the console's own: nothing but itself runs in it.
    let mut response = private_bytes(body, mime);
    let h = response.headers_mut();
    h.insert(
        axum::http::header::REFERRER_POLICY,
        axum::http::HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        axum::http::header::CONTENT_SECURITY_POLICY,
        axum::http::HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        "x-frame-options",
        axum::http::HeaderValue::from_static("DENY"),
    );
    response
}

async fn console_page() -> Response {
    asset(
        include_str!("console/index.html"),
        "text/html; charset=utf-8",
    )
}

async fn console_script() -> Response {
    asset(
        include_str!("console/console.js"),
        "text/javascript; charset=utf-8",
    )
}

async fn console_style() -> Response {
    asset(
        include_str!("console/console.css"),
        "text/css; charset=utf-8",
    )
}

/// Bytes for a person's eyes only, of `content_type`: never cached, never sniffed as
/// something else (a page's content is not run as the console's).
fn private_bytes(bytes: impl IntoResponse, content_type: &'static str) -> Response {
    let mut response = bytes.into_response();
    let h = response.headers_mut();
    h.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static(content_type),
    );
    h.insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    h.insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    );
    response
}

/// A read-only image of a tab's viewport for the console's preview (JPEG).
async fn screenshot(State(state): State<PersonState>, Path(id): Path<String>) -> Response {
    match state.runtime.person_screenshot(&id).await {
        Ok(bytes) => private_bytes(bytes, "image/jpeg"),
        Err(e) => answer(&e),
    }
}

/// The operation log (`?session=…&run=…&limit=…`), oldest first, as `glovebox log --json` prints it.
async fn log(
    State(state): State<PersonState>,
    query: Result<
        axum::extract::Query<runtime::LogQuery>,
        axum::extract::rejection::QueryRejection,
    >,
) -> Response {
    let query = match query {
        Ok(axum::extract::Query(q)) => q,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": "invalid_action", "message": e.body_text()})),
            )
                .into_response();
        }
    };
    match state.runtime.log(&query) {
        Ok(entries) => Json(json!({"entries": entries})).into_response(),
        Err(e) => answer(&e),
    }
}

/// "Pause agent, I'll take over" (and its retry): answers the state reached (`paused`, or
/// `pause_failed` with agent dispatch still blocked).
async fn take_over(State(state): State<PersonState>, Path(id): Path<String>) -> Response {
    match state.runtime.take_over(&id).await {
        Ok(control) => Json(json!({"tab": id, "control": control})).into_response(),
        Err(e) => answer(&e),
    }
}

/// "Let the agent continue": only once the pause is confirmed.
async fn hand_back(State(state): State<PersonState>, Path(id): Path<String>) -> Response {
    match state.runtime.hand_back(&id) {
        Ok(()) => {
            Json(json!({"tab": id, "control": state.runtime.control_of(&id)})).into_response()
        }
        Err(e) => answer(&e),
    }
}

async fn waiting_runs(State(state): State<PersonState>) -> Response {
    Json(json!({"waiting": state.runtime.waiting_runs()})).into_response()
}

async fn continue_run(State(state): State<PersonState>, Path(id): Path<String>) -> Response {
    match state.runtime.continue_run(&id) {
        Ok(()) => Json(json!({"continued": id})).into_response(),
        Err(e) => answer(&e),
    }
}

async fn tabs(State(state): State<PersonState>) -> Response {
    match state.runtime.tabs_for_person() {
        Ok(tabs) => Json(json!({"tabs": tabs, "last_restore": state.runtime.last_restore()}))
            .into_response(),
        Err(e) => answer(&e),
    }
}

async fn close_tab(State(state): State<PersonState>, Path(id): Path<String>) -> Response {
    match state.runtime.close_by_person(&id).await {
        Ok(()) => Json(json!({"closed": id})).into_response(),
        Err(e) => answer(&e),
    }
}

/// A person offers one of their open tabs to sessions (a kept tab a restore brought back).
async fn offer_tab(State(state): State<PersonState>, Path(id): Path<String>) -> Response {
    match state.runtime.offer_tab(&id) {
        Ok(()) => Json(json!({"offered": id})).into_response(),
        Err(e) => answer(&e),
    }
}

/// A person links a tab a page opened (a popup) so a run may use it from the next turn.
async fn link_tab(State(state): State<PersonState>, Path(id): Path<String>) -> Response {
    match state.runtime.link_tab(&id).await {
        Ok(linked) => Json(json!({"linked": linked})).into_response(),
        Err(e) => answer(&e),
    }
}

async fn set_preview(
    State(state): State<PersonState>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let preview: runtime::PreviewPrefs = match parse(&body) {
        Ok(v) => v,
        Err(refused) => return *refused,
    };
    match state.runtime.set_preview(&id, &preview) {
        Ok(()) => Json(json!({"tab": id, "preview": preview})).into_response(),
        Err(e) => answer(&e),
    }
}

/// A person lets a held tab reach one more origin (see the module docs).
async fn allow_origin(
    State(state): State<PersonState>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let body: AllowOriginBody = match parse(&body) {
        Ok(v) => v,
        Err(refused) => return *refused,
    };
    match state.runtime.allow_origin_for_tab(&id, &body.origin) {
        Ok(hold) => Json(json!({"tab": id, "network_hold": hold})).into_response(),
        Err(e) => answer(&e),
    }
}

/// A stored artifact (a file an agent downloaded) for the person: always as an attachment of
/// type `application/octet-stream` with `nosniff`, so content a page produced is saved, never
/// rendered on this origin.
async fn artifact(State(state): State<PersonState>, Path(id): Path<String>) -> Response {
    let not_found = || {
        (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "unknown_surface", "message": "no such artifact"})),
        )
            .into_response()
    };
    let Ok(artifact_id) = protocol::ArtifactId::new(id) else {
        return not_found();
    };
    let Ok((bytes, meta)) = state.runtime.artifacts().read_by_id(&artifact_id) else {
        return not_found();
    };
    let name: String = meta
        .as_ref()
        .map_or("download", |m| m.name.as_str())
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "._- ".contains(*c))
        .collect();
    let name = if name.trim().is_empty() {
        "download".to_owned()
    } else {
        name
    };
    let mut response = private_bytes(bytes, "application/octet-stream");
    let h = response.headers_mut();
    if let Ok(v) = axum::http::HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        h.insert(axum::http::header::CONTENT_DISPOSITION, v);
    }
    if let Some(mime) = meta
        .as_ref()
        .and_then(|m| axum::http::HeaderValue::from_str(&m.mime).ok())
    {
        h.insert("x-glovebox-mime", mime);
    }
    response
}

async fn sessions(State(state): State<PersonState>) -> Response {
    Json(json!({"sessions": state.runtime.sessions()})).into_response()
}

async fn turn_end(State(state): State<PersonState>, body: axum::body::Bytes) -> Response {
    let body: TurnEndBody = if body.iter().all(u8::is_ascii_whitespace) {
        TurnEndBody::default()
    } else {
        match parse(&body) {
            Ok(b) => b,
            Err(refused) => return *refused,
        }
    };
    let only =
        match body.session.map(protocol::SessionId::new).transpose() {
            Ok(only) => only,
            Err(e) => return (
                StatusCode::NOT_FOUND,
                Json(
                    json!({"error": "unknown_surface", "message": format!("no such session: {e}")}),
                ),
            )
                .into_response(),
        };
    match state.runtime.end_turns(only.as_ref()).await {
        Ok(ended) => {
            let ok = ended.iter().all(|t| t.report.ok);
            tracing::info!(sessions = ended.len(), ok, "turn end");
            Json(json!({"ok": ok, "ended": ended})).into_response()
        }
        Err(e) => {
            let status = if e.code() == protocol::ErrorCode::UnknownSurface {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            };
            refusal(status, &e)
        }
    }
}

async fn register_window(State(state): State<PersonState>, body: axum::body::Bytes) -> Response {
    let body: WindowBody = match parse(&body) {
        Ok(b) => b,
        Err(refused) => return *refused,
    };
    match state
        .runtime
        .register_window(&body.window_id, &body.renderer_instance_id)
    {
        Ok(ticket) => {
            tracing::info!(window = %ticket.window_id, "a host registered a window");
            Json(ticket).into_response()
        }
        Err(e) => refusal(StatusCode::BAD_REQUEST, &e),
    }
}

async fn set_access(State(state): State<PersonState>, body: axum::body::Bytes) -> Response {
    let body: AccessBody = match parse(&body) {
        Ok(b) => b,
        Err(refused) => return *refused,
    };
    let refused = |e: RuntimeError| {
        let status = if e.code() == protocol::ErrorCode::UnknownSurface {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::BAD_REQUEST
        };
        refusal(status, &e)
    };
    let named = protocol::SessionId::new(body.session)
        .map_err(|e| RuntimeError::UnknownSession(e.to_string()))
        .and_then(|session| {
            let name = protocol::SurfaceName::new(body.surface)
                .map_err(|e| RuntimeError::InvalidAction(e.to_string()))?;
            Ok((session, name))
        });
    let (session, name) = match named {
        Ok(n) => n,
        Err(e) => return refused(e),
    };
    match state
        .runtime
        .surface_id(&session, &name)
        .and_then(|surface| state.runtime.set_access(&session, surface, body.access))
    {
        Ok(()) => {
            tracing::info!(session = %session, surface = %name, access = ?body.access, "a person set a tab's access");
            Json(json!({"session": session, "surface": name.as_str(), "access": body.access}))
                .into_response()
        }
        Err(e) => refused(e),
    }
}
