//! The runtime against real Chromium and fixtures on loopback: one test per acceptance case of
//! `000_…` §12 that this crate owns (`cases`), one per lifecycle test of `002_…`'s plan
//! (`seed_002`), and the debugger-lease rules (`debugger`).

mod cases;
mod debugger;
mod direct;
mod fake_adapter;
mod faults;
mod hostile;
mod lifecycle;
mod needs_user;
mod one_path;
mod pool;
mod script;
mod seed_002;
mod surfaces;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use runtime::{
    ApprovalDecision, EventKind, PlanFuture, PlanInput, Planner, PlannerStep, Runtime,
    RuntimeConfig,
};
use test_support::FixtureServer;
use tokio::sync::Notify;

pub struct Env {
    pub runtime: Runtime,
    /// The browser beneath the runtime, for the tests' own checks of it and faults in it.
    pub browser: Arc<browser::Chromium>,
    pub server: FixtureServer,
    pub session: protocol::SessionId,
    pub data_dir: PathBuf,
}

pub fn data_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("runtime-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A runtime whose fixture origin is trusted (R1) when `trusted`.
pub async fn env(name: &str, trusted: bool) -> Env {
    env_with(name, trusted, |_| {}).await
}

/// [`env`] with the configuration adjusted by `adjust`.
pub async fn env_with(name: &str, trusted: bool, adjust: impl FnOnce(&mut RuntimeConfig)) -> Env {
    env_on(name, trusted, None, adjust).await
}

/// [`env_with`] on the browser `source` names (a local launch when `None`).
pub async fn env_on(
    name: &str,
    trusted: bool,
    source: Option<browser::BrowserSource>,
    adjust: impl FnOnce(&mut RuntimeConfig),
) -> Env {
    let server = FixtureServer::start().await.unwrap();
    server.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    server.dir(
        "/rt",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
    );
    let data_dir = data_dir(name);
    let mut config = RuntimeConfig::new(&data_dir);
    if trusted {
        config
            .trust
            .trusted_origins
            .push(policy::Origin::parse(&server.origin()).unwrap());
    }
    config.approval_timeout = Duration::from_secs(20);
    // These tests kill the browser to see what fails while it is away, and reconnect by hand
    // (the automatic relaunch and restore are tested against the binary, `glovebox` faults).
    config.relaunch_dead_browser = false;
    adjust(&mut config);
    let browser =
        browser::Chromium::new(source.unwrap_or_else(|| {
            browser::BrowserSource::Launch(browser::LaunchOptions::new(&data_dir))
        }));
    let runtime = Runtime::start(config, browser.clone())
        .await
        .expect("runtime starts");
    let session = runtime.create_session().await.unwrap();
    Env {
        runtime,
        browser,
        server,
        session,
        data_dir,
    }
}

/// Plays the person: answers approval requests with `decisions` in order, then stops listening.
/// Returns the approvals it saw.
pub fn person(
    runtime: &Runtime,
    decisions: Vec<ApprovalDecision>,
) -> Arc<std::sync::Mutex<Vec<runtime::ApprovalRequest>>> {
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
                let Some(decision) = decisions.next() else {
                    return;
                };
                let _ = runtime.resolve_approval(&approval_id, decision);
            }
        }
    });
    seen
}

pub async fn wait_for<F: Fn(&EventKind) -> bool>(
    events: &mut tokio::sync::broadcast::Receiver<runtime::Event>,
    matches: F,
) {
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

/// Polls `check` until it holds, for up to 20 s (a deadline, not a timing assertion).
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The browser's own view of page targets whose URL contains `url_part`: (open, attached).
pub async fn page_targets(env: &Env, url_part: &str) -> (usize, usize) {
    let targets = env
        .browser
        .connection()
        .unwrap()
        .browser()
        .call(cdp::domains::target::GetTargets {})
        .await
        .unwrap()
        .target_infos;
    let pages: Vec<_> = targets
        .iter()
        .filter(|t| t.target_type == "page" && t.url.contains(url_part))
        .collect();
    (pages.len(), pages.iter().filter(|t| t.attached).count())
}

/// Observes the primary surface until the element named `name` is in it (a user's tab loads in
/// its own time: registering it does not wait for the load).
pub async fn observe_until(
    runtime: &Runtime,
    session: &protocol::SessionId,
    name: &str,
) -> protocol::Observation {
    for _ in 0..100 {
        // A page still loading may be refused as unstable (elements added while it was read):
        // that is the observation's own answer, and the next try reads the settled page.
        match runtime.observe(session, None, &Default::default()).await {
            Ok(o) if o.interactive_elements().iter().any(|e| e.name() == name) => return o,
            Ok(_) | Err(runtime::RuntimeError::Surface(surface::SurfaceError::Unstable { .. })) => {
            }
            Err(other) => panic!("observing for {name:?}: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name:?} never appeared");
}

/// The frame of an observation, and an action on the element named `name` in it.
pub fn click(observation: &protocol::Observation, name: &str) -> protocol::ExtendedAction {
    let element = observation
        .interactive_elements()
        .iter()
        .find(|e| e.name() == name)
        .unwrap_or_else(|| panic!("no {name:?} in {}", observation.aria_snapshot()))
        .element()
        .as_str()
        .to_owned();
    protocol::validate_extended_action(&serde_json::json!({"type": "click", "expected_frame_id": observation.frame_id().as_str(), "target": {"kind": "element", "ref": element}, "intent": "test"})).unwrap()
}

/// Freezes (SIGSTOP) or thaws (SIGCONT) the browser the runtime launched: CDP commands get no
/// answer while it is frozen — a hung browser, for real.
pub fn freeze_browser(runtime: &Runtime, frozen: bool) {
    let pid = runtime.browser_pid().expect("a launched browser");
    let signal = if frozen { libc::SIGSTOP } else { libc::SIGCONT };
    // SAFETY: signalling the browser process this test's runtime launched.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// A planner that holds its run (and so its tab's leases) until `release` is notified; it
/// notifies `started` when the run is under way.
pub struct Gate {
    pub started: Arc<Notify>,
    pub release: Arc<Notify>,
}

impl Planner for Gate {
    fn next(&mut self, _input: PlanInput) -> PlanFuture<'_> {
        let (started, release) = (self.started.clone(), self.release.clone());
        Box::pin(async move {
            started.notify_one();
            release.notified().await;
            Ok(PlannerStep::GiveUp {
                summary: "released".into(),
            })
        })
    }
}

/// Opens a tab as the tests' person allows it: on an origin nobody trusts, loading the page is a
/// navigation a person approves (once; later actions there still ask).
pub async fn open(
    runtime: &Runtime,
    session: &protocol::SessionId,
    url: &str,
) -> Result<runtime::SurfaceId, runtime::RuntimeError> {
    match runtime.open_tab(session, url, Duration::ZERO).await {
        Err(runtime::RuntimeError::NeedsApproval { approval_id, .. }) => {
            runtime.resolve_approval(&approval_id, ApprovalDecision::ApproveOnce)?;
            runtime.open_tab(session, url, Duration::ZERO).await
        }
        other => other,
    }
}
