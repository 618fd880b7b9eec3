//! The runtime against real Chromium and fixtures on loopback: one test per acceptance case of
//! `000_…` §12 that this crate owns.

mod cases;
mod direct;
mod lifecycle;
mod surfaces;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use runtime::{ApprovalDecision, EventKind, Runtime, RuntimeConfig};
use test_support::FixtureServer;

pub struct Env {
    pub runtime: Runtime,
    pub server: FixtureServer,
    pub session: String,
    pub data_dir: PathBuf,
}

pub fn data_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A runtime whose fixture origin is trusted (R1) when `trusted`.
pub async fn env(name: &str, trusted: bool) -> Env {
    let server = FixtureServer::start().await.unwrap();
    server.dir("/", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"));
    server.dir("/rt", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"));
    let data_dir = data_dir(name);
    let mut config = RuntimeConfig::new(&data_dir);
    if trusted {
        config.trust.trusted_origins.push(policy::Origin::parse(&server.origin()).unwrap());
    }
    config.approval_timeout = Duration::from_secs(20);
    let runtime = Runtime::start(config).await.expect("runtime starts");
    let session = runtime.create_session().await.unwrap();
    Env { runtime, server, session, data_dir }
}

/// Plays the person: answers approval requests with `decisions` in order, then stops listening.
/// Returns the approvals it saw.
pub fn person(runtime: &Runtime, decisions: Vec<ApprovalDecision>) -> Arc<std::sync::Mutex<Vec<runtime::ApprovalRequest>>> {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut events = runtime.subscribe_events();
    let runtime = runtime.clone();
    let log = seen.clone();
    tokio::spawn(async move {
        let mut decisions = decisions.into_iter();
        while let Ok(event) = events.recv().await {
            if let EventKind::ApprovalRequested { approval_id, .. } = event.kind {
                let pending = runtime.pending_approvals();
                if let Some(request) = pending.iter().find(|r| r.approval_id == approval_id) {
                    log.lock().unwrap().push(request.clone());
                }
                let Some(decision) = decisions.next() else { return };
                let _ = runtime.resolve_approval(&approval_id, decision);
            }
        }
    });
    seen
}

pub async fn wait_for<F: Fn(&EventKind) -> bool>(events: &mut tokio::sync::broadcast::Receiver<runtime::Event>, matches: F) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(event) = events.recv().await {
            if matches(&event.kind) {
                return;
            }
        }
    })
    .await
    .expect("the event came");
}
