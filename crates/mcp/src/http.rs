//! MCP over streamable HTTP as a router: `/mcp`, which `server` mounts on its listener behind
//! its Host, Origin and token guards. A POST to `/mcp` is checked as a JSON-RPC message before
//! rmcp reads it (`jsonrpc.rs`): malformed JSON is 400 with -32700, a message that is not a
//! request 400 with -32600, a malformed `tools/call` 400 with -32602; a declared or actual body
//! over the limit is 413 at once, before the body is read.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use runtime::Runtime;

use crate::server::{GloveboxMcp, McpOptions};

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";

/// What the `/mcp` router needs from the listener it is mounted on.
#[derive(Debug, Clone)]
pub struct RouterOptions {
    /// The `Host` names the listener accepts (rmcp checks them again, as a second line).
    pub hosts: Vec<String>,
    /// The `Origin`s the listener accepts (likewise checked again).
    pub origins: Vec<String>,
    /// The largest `/mcp` body read.
    pub max_body_bytes: usize,
    /// Options every MCP session shares.
    pub mcp: McpOptions,
    /// How long a session lives with nothing of its client in flight (no request, no open
    /// stream) before it is closed as its client's `DELETE` would close it.
    pub session_expiry: std::time::Duration,
}

/// The `/mcp` route, and how to end its sessions.
pub struct McpRouter {
    pub router: axum::Router,
    /// Ends every MCP session (closing their Glovebox sessions) when called.
    pub stop: Box<dyn Fn() + Send + Sync>,
}

/// `mcp::router(runtime, options)`: the MCP tool router at [`MCP_PATH`], one Glovebox session per
/// MCP session.
pub fn router(runtime: Runtime, options: RouterOptions) -> McpRouter {
    let mcp_options = Arc::new(options.mcp.clone());
    let hosts = &options.hosts;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(
            hosts
                .iter()
                .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned())
                .chain(hosts.iter().cloned()),
        )
        .with_allowed_origins(options.origins.iter().cloned())
        .with_max_request_body_bytes(options.max_body_bytes);
    let cancel = config.cancellation_token.clone();
    // Sessions end when their client is gone (`Liveness`), not after rmcp's idle timer, which
    // counts a live client's open stream as idle.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = None;
    let sessions = Arc::new(sessions);
    let service = StreamableHttpService::new(
        move || Ok(GloveboxMcp::new(runtime.clone(), mcp_options.clone())),
        sessions.clone(),
        config,
    );
    let liveness = Arc::new(Liveness::default());
    let stopped = cancel.clone();
    tokio::spawn(reap(
        liveness.clone(),
        sessions,
        options.session_expiry,
        async move { stopped.cancelled().await },
    ));
    let router = axum::Router::new()
        .route_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(
            options.max_body_bytes,
            check_post,
        ))
        .layer(middleware::from_fn(session_ended))
        .layer(middleware::from_fn_with_state(liveness, track));
    McpRouter {
        router,
        stop: Box::new(move || cancel.cancel()),
    }
}

/// Which MCP sessions still have a client (issue 35: a client that crashed kept its session,
/// tabs and pending approvals for about five minutes): per session, its HTTP exchanges in
/// flight — an open stream counts until it ends — and when it was last heard from.
#[derive(Default)]
struct Liveness {
    sessions: std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, usize)>>,
}

impl Liveness {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, (std::time::Instant, usize)>>
    {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One exchange of a session in flight, until its response (a stream included) is done.
struct InFlight {
    liveness: Arc<Liveness>,
    session: String,
}

impl InFlight {
    fn start(liveness: &Arc<Liveness>, session: &str) -> InFlight {
        let mut sessions = liveness.lock();
        let entry = sessions
            .entry(session.to_owned())
            .or_insert((std::time::Instant::now(), 0));
        entry.0 = std::time::Instant::now();
        entry.1 += 1;
        InFlight {
            liveness: liveness.clone(),
            session: session.to_owned(),
        }
    }
}

impl Drop for InFlight {
    /// However the exchange ends — answered, its stream over, its client gone mid-stream.
    fn drop(&mut self) {
        if let Some(entry) = self.liveness.lock().get_mut(&self.session) {
            entry.0 = std::time::Instant::now();
            entry.1 = entry.1.saturating_sub(1);
        }
    }
}

/// Counts a session's exchange in flight from its request until its response body is done (or
/// dropped with its connection).
async fn track(State(liveness): State<Arc<Liveness>>, request: Request, next: Next) -> Response {
    let named = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let delete = request.method() == axum::http::Method::DELETE;
    // In flight from the request on (a call answered as one JSON body after a long run counts
    // while it runs), not only once the answer's head is out.
    let early = named
        .as_deref()
        .filter(|_| !delete)
        .map(|session| InFlight::start(&liveness, session));
    let response = next.run(request).await;
    // A new session is named in the answer to its `initialize`.
    let session = named.or_else(|| {
        response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    let Some(session) = session else {
        return response;
    };
    if delete {
        liveness.lock().remove(&session);
        return response;
    }
    let in_flight = early.unwrap_or_else(|| InFlight::start(&liveness, &session));
    let (parts, body) = response.into_parts();
    let body = futures_util::StreamExt::map(body.into_data_stream(), move |chunk| {
        let _held = &in_flight;
        chunk
    });
    Response::from_parts(parts, axum::body::Body::from_stream(body))
}

/// Closes every session with nothing in flight for `expiry`, as its client's `DELETE` would
/// (its Glovebox session ends: its tabs close, its approvals are withdrawn).
async fn reap(
    liveness: Arc<Liveness>,
    sessions: Arc<LocalSessionManager>,
    expiry: std::time::Duration,
    stop: impl std::future::Future<Output = ()>,
) {
    use rmcp::transport::streamable_http_server::session::SessionManager as _;
    let every = (expiry / 4).max(std::time::Duration::from_millis(250));
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = &mut stop => return,
        }
        let gone: Vec<String> = {
            let mut tracked = liveness.lock();
            let gone: Vec<String> = tracked
                .iter()
                .filter(|(_, (last, open))| *open == 0 && last.elapsed() >= expiry)
                .map(|(id, _)| id.clone())
                .collect();
            for id in &gone {
                tracked.remove(id);
            }
            gone
        };
        for id in gone {
            tracing::info!(session = %id, "an MCP session's client is gone; the session ends");
            let _ = sessions.close_session(&Arc::from(id.as_str())).await;
        }
    }
}

/// A session ended by `DELETE` is answered 204: rmcp answers 202, which clients (the official
/// Python SDK among them) take for a failed termination — MCP's DELETE is done when answered.
async fn session_ended(request: Request, next: Next) -> Response {
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// A POST's body is read (bounded) and checked as one JSON-RPC message before rmcp sees it.
async fn check_post(State(max): State<usize>, request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    match checked(request, max).await {
        Ok(request) => next.run(request).await,
        Err(refused) => refused,
    }
}

/// A JSON-RPC error as an HTTP answer (a dropped notification: 202 with no body, as MCP
/// answers a notification).
fn jsonrpc_refusal(status: StatusCode, answer: crate::jsonrpc::Answer) -> Response {
    if answer.is_silent() {
        return StatusCode::ACCEPTED.into_response();
    }
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        answer.0,
    )
        .into_response()
}

/// The request with its body read (bounded) and checked as one JSON-RPC message.
async fn checked(request: Request, max: usize) -> Result<Request, Response> {
    let too_large = || {
        jsonrpc_refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            crate::jsonrpc::error_line(
                &serde_json::Value::Null,
                -32600,
                format!("Invalid Request: the body is larger than {max} bytes"),
            ),
        )
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, max)
        .await
        .map_err(|_| too_large())?;
    crate::jsonrpc::check(&bytes)
        .map_err(|answer| jsonrpc_refusal(StatusCode::BAD_REQUEST, answer))?;
    Ok(Request::from_parts(parts, axum::body::Body::from(bytes)))
}
