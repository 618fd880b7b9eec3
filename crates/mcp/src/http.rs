//! `glovebox serve`: MCP over streamable HTTP at `/mcp`, and the person channel at
//! `/api/approvals`, on one listener. Loopback by default; a Host allowlist (DNS rebinding), an
//! Origin check, a bearer token (required off loopback), body size limits, and the per-session
//! rate bound of the handler. A POST to `/mcp` is checked as a JSON-RPC message before rmcp
//! reads it (`jsonrpc.rs`): malformed JSON is 400 with -32700, a message that is not a request
//! 400 with -32600, a malformed `tools/call` 400 with -32602; a declared or actual body over the
//! limit is 413 at once, before the body is read.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use runtime::Runtime;
use tokio::task::JoinHandle;

use crate::McpError;
use crate::person::PersonChannel;
use crate::server::{GloveboxMcp, McpOptions};

/// How `serve` listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen; `127.0.0.1:7777` by default.
    pub bind: SocketAddr,
    /// Bearer token for `/mcp`. Required when `bind` is not loopback.
    pub token: Option<String>,
    /// Token of the person channel; a random one when `None`.
    pub person_token: Option<String>,
    /// Extra `Host` names accepted besides loopback names (e.g. the machine's DNS name).
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call (`Origin` header); requests without `Origin` pass.
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Options every session shares (the person channel is filled in by `serve_http`).
    pub mcp: McpOptions,
    /// More routes on the same listener, behind the same Host and Origin guards (the host
    /// API's renderer WebSocket).
    pub routes: Option<axum::Router>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 7777)),
            token: None,
            person_token: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: 1 << 20,
            mcp: McpOptions::default(),
            routes: None,
        }
    }
}

/// A running HTTP server.
pub struct HttpServer {
    /// The address it listens on.
    pub local_addr: SocketAddr,
    /// The person channel (its token is for the person's terminal, never for a model).
    pub person: PersonChannel,
    stop: Box<dyn Fn() + Send + Sync>,
    task: JoinHandle<std::io::Result<()>>,
}

impl HttpServer {
    /// `http://host:port/mcp`
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.local_addr)
    }

    /// Stops accepting, ends every MCP session (closing their Glovebox sessions) and waits.
    pub async fn shutdown(self) -> Result<(), McpError> {
        (self.stop)();
        match self.task.await {
            Ok(result) => Ok(result?),
            Err(e) => Err(McpError::Transport(e.to_string())),
        }
    }

    /// Waits until the server stops by itself (it does not unless it fails).
    pub async fn wait(&mut self) -> Result<(), McpError> {
        match (&mut self.task).await {
            Ok(result) => Ok(result?),
            Err(e) => Err(McpError::Transport(e.to_string())),
        }
    }
}

#[derive(Clone)]
struct Guard {
    hosts: Arc<Vec<String>>,
    /// The port this server listens on: a `Host` must name it (or an `--allow-host` with its
    /// own port), so a page served on another local port cannot reach this one by name.
    port: u16,
    /// `--allow-host` entries that name their port (`name:port`), lowercased.
    host_ports: Arc<Vec<String>>,
    origins: Arc<Vec<String>>,
    token: Option<Arc<String>>,
    /// The largest `/mcp` body read.
    max_body_bytes: usize,
}

/// Compares secrets without an early exit on the first differing byte.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The host part of a `Host` header value (`[::1]:80` → `[::1]`, `a:80` → `a`), lowercased.
fn host_name(value: &str) -> String {
    let value = value.trim().to_ascii_lowercase();
    if value.starts_with('[') {
        return value.split(']').next().map(|h| format!("{h}]")).unwrap_or(value);
    }
    value.rsplit_once(':').map_or(value.clone(), |(h, _)| h.to_owned())
}

/// The port of a `Host` header value, if it names one (`[::1]:80` → 80, `a` → none).
fn host_port(value: &str) -> Option<u16> {
    let value = value.trim();
    let after_host = if value.starts_with('[') { value.split_once(']').map(|(_, rest)| rest)? } else { value };
    after_host.rsplit_once(':').and_then(|(_, port)| port.parse().ok())
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({"error": message}))).into_response()
}

async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let headers: &HeaderMap = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).map(|v| (host_name(v), host_port(v), v.trim().to_ascii_lowercase()));
    match &host {
        // The name is ours and so is the port (HTTP leaves out port 80), or an allowed host:port.
        Some((name, port, _)) if guard.hosts.contains(name) && port.unwrap_or(80) == guard.port => {}
        Some((_, _, whole)) if guard.host_ports.contains(whole) => {}
        _ => {
            tracing::warn!(host = ?headers.get(header::HOST), "refused a request with a foreign Host header");
            return refuse(
                StatusCode::FORBIDDEN,
                "Host not allowed (DNS rebinding protection): it must name this server and its port; add another with --allow-host",
            );
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default().trim_end_matches('/').to_ascii_lowercase();
        // The server's own origin (its console page, the only content it serves) is same-origin:
        // the Host was checked above, so this cannot be a rebound name.
        let own = host.as_ref().is_some_and(|(_, _, whole)| origin == format!("http://{whole}"));
        if !own && !guard.origins.contains(&origin) {
            tracing::warn!(%origin, "refused a request from a foreign Origin");
            return refuse(StatusCode::FORBIDDEN, "Origin not allowed; add it with --allow-client-origin (GLOVEBOX_ALLOWED_CLIENT_ORIGINS)");
        }
    }
    // The person channel has its own token; the bearer token guards MCP.
    if request.uri().path().starts_with("/mcp")
        && let Some(token) = &guard.token
    {
        let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
            return refuse(StatusCode::UNAUTHORIZED, "a bearer token is required (Authorization: Bearer …)");
        }
    }
    if request.method() == axum::http::Method::POST && request.uri().path() == "/mcp" {
        return match checked(request, guard.max_body_bytes).await {
            Ok(request) => next.run(request).await,
            Err(refused) => refused,
        };
    }
    next.run(request).await
}

/// A JSON-RPC error as an HTTP answer.
fn jsonrpc_refusal(status: StatusCode, answer: crate::jsonrpc::Answer) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], answer.0).into_response()
}

/// The request with its body read (bounded) and checked as one JSON-RPC message.
async fn checked(request: Request, max: usize) -> Result<Request, Response> {
    let too_large = || {
        jsonrpc_refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            crate::jsonrpc::error_line(&serde_json::Value::Null, -32600, format!("Invalid Request: the body is larger than {max} bytes")),
        )
    };
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, max).await.map_err(|_| too_large())?;
    crate::jsonrpc::check(&bytes).map_err(|answer| jsonrpc_refusal(StatusCode::BAD_REQUEST, answer))?;
    Ok(Request::from_parts(parts, axum::body::Body::from(bytes)))
}

/// Binds and serves; returns once listening.
pub async fn serve_http(runtime: Runtime, mut options: HttpOptions) -> Result<HttpServer, McpError> {
    let loopback = options.bind.ip().is_loopback();
    if !loopback && options.token.as_deref().is_none_or(str::is_empty) {
        return Err(McpError::TokenRequired { addr: options.bind.to_string() });
    }
    let listener = tokio::net::TcpListener::bind(options.bind).await.map_err(|source| McpError::Bind { addr: options.bind.to_string(), source })?;
    let local_addr = listener.local_addr()?;
    let port = local_addr.port();

    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()];
    if !loopback && !local_addr.ip().is_unspecified() {
        hosts.push(host_name(&local_addr.to_string()));
    }
    hosts.extend(options.allowed_hosts.iter().map(|h| host_name(h)));
    let mut origins: Vec<String> = vec![format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}"), format!("http://[::1]:{port}")];
    origins.extend(options.allowed_origins.iter().map(|o| o.trim_end_matches('/').to_ascii_lowercase()));

    let person_token = options.person_token.clone().unwrap_or_else(|| crate::random_token(24));
    let person_host = if loopback { local_addr.to_string() } else { format!("127.0.0.1:{port}") };
    let person = PersonChannel { base_url: format!("http://{person_host}"), token: person_token.clone() };
    options.mcp.person = Some(person.clone());
    let mcp_options = Arc::new(options.mcp.clone());

    // rmcp's own Host/Origin checks stay on as a second line, with the same lists.
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts.iter().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned()).chain(hosts.iter().cloned()))
        .with_allowed_origins(origins.iter().cloned())
        .with_max_request_body_bytes(options.max_body_bytes);
    let cancel = config.cancellation_token.clone();
    let factory_runtime = runtime.clone();
    let service = StreamableHttpService::new(
        move || Ok(GloveboxMcp::new(factory_runtime.clone(), mcp_options.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let host_ports: Vec<String> = options.allowed_hosts.iter().filter(|h| host_port(h).is_some()).map(|h| h.trim().to_ascii_lowercase()).collect();
    let guard_state = Guard {
        hosts: Arc::new(hosts),
        port,
        host_ports: Arc::new(host_ports),
        origins: Arc::new(origins),
        token: options.token.map(Arc::new),
        max_body_bytes: options.max_body_bytes,
    };
    let mut app = axum::Router::new().route_service("/mcp", service).merge(crate::person::router(runtime, person_token));
    if let Some(routes) = options.routes.take() {
        app = app.merge(routes);
    }
    let app = app.layer(axum::extract::DefaultBodyLimit::max(options.max_body_bytes)).layer(middleware::from_fn_with_state(guard_state, guard));

    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop_rx.wait_for(|stop| *stop).await;
            })
            .await
    });
    let stop = Box::new(move || {
        cancel.cancel();
        let _ = stop_tx.send(true);
    });
    tracing::info!(%local_addr, "MCP listening on /mcp");
    Ok(HttpServer { local_addr, person, stop, task })
}

#[cfg(test)]
mod tests {
    use super::host_name;

    #[test]
    fn host_names() {
        assert_eq!(host_name("127.0.0.1:7777"), "127.0.0.1");
        assert_eq!(host_name("LocalHost"), "localhost");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("evil.example:7777"), "evil.example");
    }
}
