//! The one HTTP listener of `glovebox serve` and `glovebox mcp`: MCP at `/mcp` (the router
//! `mcp` builds), the person channel and console (`person.rs`), the live view
//! (`person_view.rs`) and the host API's renderer socket (`host.rs`). Loopback by default;
//! every request passes one guard first: a Host allowlist (DNS rebinding), an Origin check, and
//! who may call what — the bearer token for `/mcp` (required off loopback), the person token for
//! the person channel's `/api/` routes (the live view and the renderer socket authenticate in
//! their first message: a browser cannot set headers on a WebSocket), nothing for the console's
//! own page, script and style; body size limits.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use mcp::{McpOptions, PersonChannel};
use runtime::Runtime;
use tokio::task::JoinHandle;

use crate::HostOptions;

/// Why the listener could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listener could not bind.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    /// Binding beyond loopback needs a bearer token.
    #[error("binding {addr} (not loopback) needs a bearer token: set --token or GLOVEBOX_TOKEN")]
    TokenRequired { addr: String },
    /// The server task failed.
    #[error("the HTTP server failed: {0}")]
    Failed(String),
    /// I/O while serving.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

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
    /// Options every MCP session shares (the person channel is filled in by [`serve`]).
    pub mcp: McpOptions,
    /// What the host API needs besides the runtime.
    pub host: HostOptions,
    /// How long a client has to send a request's head (its line and headers): an idle or slow
    /// socket is closed after it.
    pub header_timeout: std::time::Duration,
    /// How long a client has to send a request's body once its head is in: a half-sent body is
    /// answered 408 after it.
    pub body_timeout: std::time::Duration,
    /// How long an MCP session lives with nothing of its client in flight (no request, no open
    /// stream): a client that vanished loses its session, tabs and approvals after it.
    pub mcp_session_expiry: std::time::Duration,
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
            host: HostOptions::default(),
            header_timeout: std::time::Duration::from_secs(10),
            body_timeout: std::time::Duration::from_secs(30),
            mcp_session_expiry: std::time::Duration::from_secs(60),
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
    pub async fn shutdown(self) -> Result<(), ServeError> {
        (self.stop)();
        match self.task.await {
            Ok(result) => Ok(result?),
            Err(e) => Err(ServeError::Failed(e.to_string())),
        }
    }

    /// Waits until the server stops by itself (it does not unless it fails).
    pub async fn wait(&mut self) -> Result<(), ServeError> {
        match (&mut self.task).await {
            Ok(result) => Ok(result?),
            Err(e) => Err(ServeError::Failed(e.to_string())),
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
    max_body_bytes: usize,
    body_timeout: std::time::Duration,
}

/// Compares secrets without an early exit on the first differing byte.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The host part of a `Host` header value (`[::1]:80` → `[::1]`, `a:80` → `a`), lowercased.
fn host_name(value: &str) -> String {
    let value = value.trim().to_ascii_lowercase();
    if value.starts_with('[') {
        return value
            .split(']')
            .next()
            .map(|h| format!("{h}]"))
            .unwrap_or(value);
    }
    value
        .rsplit_once(':')
        .map_or(value.clone(), |(h, _)| h.to_owned())
}

/// The port of a `Host` header value, if it names one (`[::1]:80` → 80, `a` → none).
fn host_port(value: &str) -> Option<u16> {
    let value = value.trim();
    let after_host = if value.starts_with('[') {
        value.split_once(']').map(|(_, rest)| rest)?
    } else {
        value
    };
    after_host
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({"error": message}))).into_response()
}

async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    // The probes answer anyone (their text is "ok", "ready" or why not): an orchestrator names
    // this server by an address no allowlist knows. They read nothing a request sends.
    if request.method() == axum::http::Method::GET
        && crate::operator::PROBE_PATHS.contains(&request.uri().path())
    {
        return next.run(request).await;
    }
    let headers: &HeaderMap = request.headers();
    let path = request.uri().path();
    let bearer_ok = guard.token.as_ref().is_some_and(|token| {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes()))
    });
    // A scraper with the token is the operator's (a rebound page cannot know it), whatever name
    // it reached this server by; without a token the metrics are guarded like the rest.
    let scraper = path == crate::operator::METRICS_PATH && bearer_ok;
    // One Host and at most one Origin: with two, which one a check read is a guess.
    if headers.get_all(header::HOST).iter().count() > 1
        || headers.get_all(header::ORIGIN).iter().count() > 1
    {
        return refuse(
            StatusCode::BAD_REQUEST,
            "a request has one Host header and at most one Origin header",
        );
    }
    // An absolute-form target (`POST http://other/mcp`) is for a proxy: this server is none,
    // and its authority would be judged instead of the Host header's.
    if request.uri().scheme().is_some() || request.uri().authority().is_some() {
        return refuse(
            StatusCode::BAD_REQUEST,
            "the request target is a path (this server is not a proxy)",
        );
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(|v| (host_name(v), host_port(v), v.trim().to_ascii_lowercase()));
    match &host {
        _ if scraper => {}
        // The name is ours and so is the port (HTTP leaves out port 80), or an allowed host:port.
        Some((name, port, _)) if guard.hosts.contains(name) && port.unwrap_or(80) == guard.port => {
        }
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
        let origin = origin
            .to_str()
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_ascii_lowercase();
        // The server's own origin (its console page, the only content it serves) is same-origin:
        // the Host was checked above, so this cannot be a rebound name.
        let own = host
            .as_ref()
            .is_some_and(|(_, _, whole)| origin == format!("http://{whole}"));
        if !own && !guard.origins.contains(&origin) {
            tracing::warn!(%origin, "refused a request from a foreign Origin");
            return refuse(
                StatusCode::FORBIDDEN,
                "Origin not allowed; add it with --allow-client-origin (GLOVEBOX_ALLOWED_CLIENT_ORIGINS)",
            );
        }
    }
    // The person channel has its own token; the bearer token guards MCP and the metrics.
    if (path.starts_with(mcp::MCP_PATH) || path == crate::operator::METRICS_PATH)
        && guard.token.is_some()
        && !bearer_ok
    {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "a bearer token is required (Authorization: Bearer …)",
        );
    }
    // A body arrives whole within its time (a half-sent one held a task and a socket forever):
    // read here, bounded, and handed on.
    match read_body(request, guard.max_body_bytes, guard.body_timeout).await {
        Ok(request) => next.run(request).await,
        Err(refused) => refused,
    }
}

/// `request` with its body read whole within `within` (a request that declares none passes as
/// it is); 408 when it does not arrive in time, 413 past `max`.
async fn read_body(
    request: Request,
    max: usize,
    within: std::time::Duration,
) -> Result<Request, Response> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let chunked = request.headers().contains_key(header::TRANSFER_ENCODING);
    // Nothing to wait for; or more than the limit declared, which the route refuses at once in
    // its own words (MCP's a JSON-RPC error) before any of it is read.
    if (declared.is_none_or(|n| n == 0) && !chunked) || declared.is_some_and(|n| n > max as u64) {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    match tokio::time::timeout(within, axum::body::to_bytes(body, max)).await {
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, axum::body::Body::from(bytes))),
        Ok(Err(_)) => Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the body is larger than {max} bytes"),
        )),
        Err(_) => Err(refuse(
            StatusCode::REQUEST_TIMEOUT,
            &format!("the body did not arrive within {} s", within.as_secs_f64()),
        )),
    }
}

/// Serves `app` on `listener` until `stop` says so: axum's own loop, with a deadline on every
/// request's head (hyper's, which needs a timer axum's loop does not give it) and each
/// connection's peer address for `ConnectInfo` (an MCP session names its client by it).
async fn accept_loop(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    mut stop: tokio::sync::watch::Receiver<bool>,
    header_timeout: std::time::Duration,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt as _;
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            accepted = listener.accept() => Some(accepted),
            stopped = stop.wait_for(|stop| *stop) => {
                drop(stopped);
                None
            }
        };
        let Some(accepted) = accepted else { break };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors and the like: said, and tried again shortly.
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let app = app.clone();
        let service = hyper::service::service_fn(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                request
                    .extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                app.clone().oneshot(request.map(axum::body::Body::new))
            },
        );
        let mut stop = stop.clone();
        connections.spawn(async move {
            // HTTP/1.1 only (as before): its head has a deadline from the first moment the
            // connection waits for one, an idle socket's included.
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let mut connection = std::pin::pin!(connection);
            let stopping = tokio::select! {
                _ = connection.as_mut() => false,
                stopped = stop.wait_for(|stop| *stop) => {
                    let stopping = stopped.is_ok();
                    drop(stopped);
                    stopping
                }
            };
            if stopping {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        });
    }
    // Stopping: each connection finishes what it was answering (bounded), as axum's graceful
    // shutdown does.
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(std::time::Duration::from_secs(10), drained)
        .await
        .is_err()
    {
        tracing::warn!("connections still open 10 s after the stop were dropped");
    }
    Ok(())
}

/// Binds and serves; returns once listening.
pub async fn serve(runtime: Runtime, options: HttpOptions) -> Result<HttpServer, ServeError> {
    let loopback = options.bind.ip().is_loopback();
    if !loopback && options.token.as_deref().is_none_or(str::is_empty) {
        return Err(ServeError::TokenRequired {
            addr: options.bind.to_string(),
        });
    }
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.bind.to_string(),
            source,
        })?;
    let local_addr = listener.local_addr()?;
    let port = local_addr.port();
    // No agent's action may load this server (its console, its person channel).
    runtime.listening_at(local_addr);

    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()];
    if !loopback && !local_addr.ip().is_unspecified() {
        hosts.push(host_name(&local_addr.to_string()));
    }
    hosts.extend(options.allowed_hosts.iter().map(|h| host_name(h)));
    let mut origins: Vec<String> = vec![
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    origins.extend(
        options
            .allowed_origins
            .iter()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase()),
    );

    let person_token = options
        .person_token
        .clone()
        .unwrap_or_else(|| mcp::random_token(24));
    let person_host = if loopback {
        local_addr.to_string()
    } else {
        format!("127.0.0.1:{port}")
    };
    let person = PersonChannel {
        base_url: format!("http://{person_host}"),
        token: person_token.clone(),
    };
    let mcp = mcp::router(
        runtime.clone(),
        mcp::RouterOptions {
            hosts: hosts.clone(),
            origins: origins.clone(),
            max_body_bytes: options.max_body_bytes,
            mcp: McpOptions {
                person: Some(person.clone()),
                ..options.mcp.clone()
            },
            session_expiry: options.mcp_session_expiry,
        },
    );
    let host_ports: Vec<String> = options
        .allowed_hosts
        .iter()
        .filter(|h| host_port(h).is_some())
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    let guard_state = Guard {
        hosts: Arc::new(hosts),
        port,
        host_ports: Arc::new(host_ports),
        origins: Arc::new(origins),
        token: options.token.map(Arc::new),
        max_body_bytes: options.max_body_bytes,
        body_timeout: options.body_timeout,
    };
    let app = mcp
        .router
        .merge(crate::person::router(runtime.clone(), person_token))
        .merge(crate::operator::router(runtime.clone()))
        .merge(crate::host::router(runtime, options.host))
        .layer(axum::extract::DefaultBodyLimit::max(options.max_body_bytes))
        .layer(middleware::from_fn_with_state(guard_state, guard));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let header_timeout = options.header_timeout;
    let task = tokio::spawn(accept_loop(listener, app, stop_rx, header_timeout));
    let stop_mcp = mcp.stop;
    let stop = Box::new(move || {
        stop_mcp();
        let _ = stop_tx.send(true);
    });
    tracing::info!(%local_addr, "listening: MCP on /mcp, the person channel and console on /");
    Ok(HttpServer {
        local_addr,
        person,
        stop,
        task,
    })
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
