//! Test fixtures on loopback: an HTTP server for fixture pages with redirects, slow responses and a
//! request log. A dev-dependency only; nothing here reaches the internet.
//!
//! Each [`FixtureServer`] is its own origin (`http://127.0.0.1:<port>`); start several for
//! cross-origin tests. The request log lets a test prove that a refused action sent nothing.
//! [`fake::FakeAdapter`] is a surface adapter with no browser behind it.

pub mod fake;
#[cfg(unix)]
pub mod postgres;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::oneshot;

/// What a path answers with.
#[derive(Debug, Clone)]
pub enum Route {
    /// `200 text/html; charset=utf-8`.
    Html(String),
    /// `200` with any content type.
    Content { content_type: String, body: Vec<u8> },
    /// A redirect (301, 302, 303, 307 or 308) to `location`.
    Redirect { status: u16, location: String },
    /// A bare status with a text body.
    Status { status: u16, body: String },
    /// The inner route, answered after `delay`.
    Slow { delay: Duration, inner: Box<Route> },
    /// The inner route with extra response headers.
    WithHeaders {
        headers: Vec<(String, String)>,
        inner: Box<Route>,
    },
}

impl Route {
    /// A CSV file answered as an attachment named `filename` (a download, whatever links to it).
    pub fn attachment(filename: &str, body: &[u8]) -> Route {
        Route::WithHeaders {
            headers: vec![(
                "Content-Disposition".into(),
                format!("attachment; filename=\"{filename}\""),
            )],
            inner: Box::new(Route::Content {
                content_type: "text/csv".into(),
                body: body.to_vec(),
            }),
        }
    }
}

/// A page expression that keeps the page's main thread busy for `ms` milliseconds (what a page
/// stuck in a script looks like to every CDP call that needs that thread).
/// Where Debian keeps the widget libraries fixture pages load from `/lib/…` (jQuery, jQuery UI):
/// real widget code, served on loopback. `make test` installs them (`scripts/ensure-test-libs.sh`).
pub fn javascript_libs() -> PathBuf {
    let libs = PathBuf::from("/usr/share/javascript");
    assert!(
        libs.join("jquery-ui/jquery-ui.min.js").is_file()
            && libs.join("jquery/jquery.min.js").is_file(),
        "jQuery and jQuery UI are missing from {}: run scripts/ensure-test-libs.sh (make test does)",
        libs.display()
    );
    libs
}

pub fn busy_main_thread(ms: u64) -> String {
    format!("(() => {{ const t = Date.now(); while (Date.now() - t < {ms}) {{}} return 1; }})()")
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub at: Instant,
}

#[derive(Default)]
struct Shared {
    routes: Mutex<HashMap<String, Route>>,
    dirs: Mutex<Vec<(String, PathBuf)>>,
    log: Mutex<Vec<RequestRecord>>,
}

/// A fixture HTTP server on `127.0.0.1:<ephemeral port>`. Stops when dropped.
pub struct FixtureServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _shutdown: oneshot::Sender<()>,
}

impl FixtureServer {
    /// Starts a server with no routes (every path is 404 until added).
    pub async fn start() -> std::io::Result<FixtureServer> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let (shutdown, stop) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stop.await;
                })
                .await;
        });
        Ok(FixtureServer {
            addr,
            shared,
            _shutdown: shutdown,
        })
    }

    /// Starts `n` servers: `n` distinct origins.
    pub async fn origins(n: usize) -> std::io::Result<Vec<FixtureServer>> {
        let mut servers = Vec::with_capacity(n);
        for _ in 0..n {
            servers.push(FixtureServer::start().await?);
        }
        Ok(servers)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr.port())
    }

    /// The port this server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.origin(), path)
    }

    /// The same path under another host name (e.g. `localhost`, or a name mapped to 127.0.0.1 with
    /// Chromium's `--host-resolver-rules`), which makes a different site for site isolation.
    pub fn url_on_host(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.addr.port())
    }

    /// Serves `html` at `path`.
    pub fn html(&self, path: &str, html: impl Into<String>) -> &Self {
        self.route(path, Route::Html(html.into()))
    }

    /// Serves `route` at `path` (exact match, query ignored).
    pub fn route(&self, path: &str, route: Route) -> &Self {
        lock(&self.shared.routes).insert(path.to_owned(), route);
        self
    }

    /// Redirects `from` to `to` with a 302.
    pub fn redirect(&self, from: &str, to: &str) -> &Self {
        self.route(
            from,
            Route::Redirect {
                status: 302,
                location: to.to_owned(),
            },
        )
    }

    /// Serves `html` at `path` after `delay`.
    pub fn slow(&self, path: &str, delay: Duration, html: impl Into<String>) -> &Self {
        self.route(
            path,
            Route::Slow {
                delay,
                inner: Box::new(Route::Html(html.into())),
            },
        )
    }

    /// Serves the files under `folder` at `prefix/…`.
    pub fn dir(&self, prefix: &str, folder: impl Into<PathBuf>) -> &Self {
        lock(&self.shared.dirs).push((prefix.trim_end_matches('/').to_owned(), folder.into()));
        self
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.log).clone()
    }

    /// Requests for exactly `path`.
    pub fn requests_to(&self, path: &str) -> Vec<RequestRecord> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// Requests other than GET/HEAD/OPTIONS: the ones that could change something.
    pub fn writes(&self) -> Vec<RequestRecord> {
        self.requests()
            .into_iter()
            .filter(|r| !matches!(r.method.as_str(), "GET" | "HEAD" | "OPTIONS"))
            .collect()
    }

    /// Forgets the request log.
    pub fn clear_log(&self) {
        lock(&self.shared.log).clear();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 16 << 20)
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    let headers = parts
        .headers
        .iter()
        .filter_map(|(k, v)| {
            v.to_str()
                .ok()
                .map(|v| (k.as_str().to_owned(), v.to_owned()))
        })
        .collect();
    lock(&shared.log).push(RequestRecord {
        method: parts.method.as_str().to_owned(),
        path: path.clone(),
        query: parts.uri.query().map(str::to_owned),
        headers,
        body,
        at: Instant::now(),
    });
    let route = lock(&shared.routes).get(&path).cloned();
    match route {
        Some(route) => answer(route).await,
        None => serve_file(&shared, &path).await,
    }
}

async fn answer(route: Route) -> Response {
    let mut route = route;
    let mut extra = Vec::new();
    loop {
        match route {
            Route::Slow { delay, inner } => {
                tokio::time::sleep(delay).await;
                route = *inner;
            }
            Route::WithHeaders { headers, inner } => {
                extra.extend(headers);
                route = *inner;
            }
            _ => break,
        }
    }
    let mut response = match route {
        Route::Html(html) => {
            ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
        }
        Route::Content { content_type, body } => {
            let mut response = Response::new(Body::from(body));
            if let Ok(value) = HeaderValue::from_str(&content_type) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            response
        }
        Route::Redirect { status, location } => {
            let mut headers = HeaderMap::new();
            if let Ok(value) = HeaderValue::from_str(&location) {
                headers.insert(header::LOCATION, value);
            }
            (
                StatusCode::from_u16(status).unwrap_or(StatusCode::FOUND),
                headers,
            )
                .into_response()
        }
        Route::Status { status, body } => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body,
        )
            .into_response(),
        Route::Slow { .. } | Route::WithHeaders { .. } => {
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    };
    for (name, value) in extra {
        if let (Ok(name), Ok(value)) = (
            header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

async fn serve_file(shared: &Shared, path: &str) -> Response {
    let dirs = lock(&shared.dirs).clone();
    for (prefix, folder) in dirs {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        let relative = Path::new(rest.trim_start_matches('/'));
        if relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return StatusCode::FORBIDDEN.into_response();
        }
        if let Ok(bytes) = tokio::fs::read(folder.join(relative)).await {
            let content_type = match relative.extension().and_then(|e| e.to_str()) {
                Some("html" | "htm") => "text/html; charset=utf-8",
                Some("js") => "text/javascript",
                Some("css") => "text/css",
                Some("png") => "image/png",
                Some("svg") => "image/svg+xml",
                Some("json") => "application/json",
                _ => "application/octet-stream",
            };
            return ([(header::CONTENT_TYPE, content_type)], bytes).into_response();
        }
    }
    (StatusCode::NOT_FOUND, "no fixture at this path").into_response()
}
