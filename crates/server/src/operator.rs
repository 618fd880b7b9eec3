//! What an operator's tools reach: `/metrics` (Prometheus text format; the bearer token of
//! `/mcp` when one is set), `/healthz` (the process answers) and `/readyz` (the runtime can
//! serve: its backend connected, its records readable). The probes say nothing but that, so
//! the listener lets them through whatever their `Host` (a kubelet names the pod's address).

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use runtime::Runtime;

/// The metrics route.
pub(crate) const METRICS_PATH: &str = "/metrics";
/// The probes, open to any caller.
pub(crate) const PROBE_PATHS: [&str; 2] = ["/healthz", "/readyz"];

pub(crate) fn router(runtime: Runtime) -> axum::Router {
    axum::Router::new()
        .route(METRICS_PATH, get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(runtime)
}

async fn metrics(State(runtime): State<Runtime>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        runtime.metrics_text(),
    )
        .into_response()
}

async fn ready(State(runtime): State<Runtime>) -> Response {
    match runtime.readiness() {
        Ok(()) => (StatusCode::OK, "ready\n").into_response(),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {}\n", why.0),
        )
            .into_response(),
    }
}
