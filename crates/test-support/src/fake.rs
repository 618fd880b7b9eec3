//! A fake surface adapter with no browser: the proof that the runtime's one path
//! (lease, freshness, approval, act, receipt, turn end) runs through `surface::SurfaceAdapter`
//! alone. Each surface is a page with one button, `Add one`, and a count; every observation
//! issues a new frame; every call is counted, so a test can see that a refused action sent
//! nothing. Its page lives on an untrusted origin, so a click needs a person's approval.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::extended::Locator;
use protocol::{
    ElementRef, ExtendedAction, ExtendedKind, FrameId, InteractiveElement, Observation,
    ObservationParts, Preview, ProducerCuts, Receipt, SurfaceKind, TabId, TargetIdentity, Viewport,
};
use surface::{
    ActOptions, ActOutcome, ActTiming, BoxFuture, Dialog, FrameRecord, InputDomain, LocatedFacts,
    ObserveOptions, PersonCast, Reconnected, Surface, SurfaceAdapter, SurfaceError, SurfaceEvents,
    SurfaceInfo, SurfaceMemory, TargetFacts, TargetStructure,
};

/// The fake page's address (an origin nobody trusts).
pub const FAKE_URL: &str = "https://fake.example/";

/// Where the fake page's link leads (another origin nobody trusts).
pub const OTHER_URL: &str = "https://other.example/page";

/// What the fake did, for a test's assertions.
#[derive(Debug, Default)]
pub struct FakeLog {
    /// Surfaces opened, by id.
    pub opened: Vec<String>,
    /// Surfaces closed, by id.
    pub closed: Vec<String>,
    /// Actions dispatched (their kinds), in order: a refused action is never here.
    pub acted: Vec<String>,
    /// Observations taken.
    pub observed: u64,
    /// How many secrets the runtime asked the surfaces to take out of what they report.
    pub scrubbed: usize,
}

/// The fake adapter (see the module docs).
#[derive(Default)]
pub struct FakeAdapter {
    next: AtomicU64,
    down: AtomicBool,
    /// The backend died: its next reconnect is a relaunch (a new backend, no old context).
    crashed: AtomicBool,
    /// The isolation contexts the backend has now (a relaunch loses them all).
    contexts: Mutex<Vec<String>>,
    /// How long creating a context takes.
    context_delay: Mutex<Duration>,
    surfaces: Mutex<HashMap<String, Arc<FakeSurface>>>,
    log: Arc<Mutex<FakeLog>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl FakeAdapter {
    pub fn new() -> Arc<FakeAdapter> {
        Arc::new(FakeAdapter::default())
    }

    /// What the fake did so far.
    pub fn log(&self) -> std::sync::MutexGuard<'_, FakeLog> {
        lock(&self.log)
    }

    /// The count the page of surface `id` shows.
    pub fn count(&self, id: &str) -> Option<u64> {
        lock(&self.surfaces)
            .get(id)
            .map(|s| s.count.load(Ordering::SeqCst))
    }

    /// Takes the backend down (or up again): calls fail with `backend_unavailable`.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// The backend dies: calls fail until the runtime reconnects, which relaunches it with none
    /// of its surfaces or contexts.
    pub fn crash(&self) {
        self.down.store(true, Ordering::SeqCst);
        self.crashed.store(true, Ordering::SeqCst);
        lock(&self.contexts).clear();
        lock(&self.surfaces).clear();
    }

    /// Creating a context takes this long from now on.
    pub fn set_context_delay(&self, delay: Duration) {
        *lock(&self.context_delay) = delay;
    }

    fn up(&self) -> Result<(), SurfaceError> {
        if self.down.load(Ordering::SeqCst) {
            Err(SurfaceError::unavailable("the fake backend is down"))
        } else {
            Ok(())
        }
    }
}

/// One fake page.
pub struct FakeSurface {
    id: String,
    count: AtomicU64,
    frames: AtomicU64,
    latest: Mutex<Option<Arc<FakeFrame>>>,
    log: Arc<Mutex<FakeLog>>,
}

/// The record of a fake observation.
#[derive(Debug)]
pub struct FakeFrame {
    frame_id: FrameId,
    targets: HashMap<String, TargetFacts>,
}

impl FrameRecord for FakeFrame {
    fn frame_id(&self) -> &FrameId {
        &self.frame_id
    }
    fn document_url(&self) -> &str {
        FAKE_URL
    }
    fn canvas_share(&self) -> f64 {
        0.0
    }
    fn has_screenshot(&self) -> bool {
        false
    }
    fn target(&self, element: &ElementRef) -> Option<&TargetFacts> {
        self.targets.get(element.as_str())
    }
    fn targets(&self) -> Box<dyn Iterator<Item = &TargetFacts> + '_> {
        Box::new(self.targets.values())
    }
}

impl FakeSurface {
    fn capture(&self) -> Result<Observation, SurfaceError> {
        let n = self.frames.fetch_add(1, Ordering::SeqCst) + 1;
        let frame_id =
            FrameId::new(format!("frame_fake{n:04}")).map_err(|e| SurfaceError::Internal {
                reason: e.to_string(),
            })?;
        let count = self.count.load(Ordering::SeqCst);
        let button = TargetFacts {
            role: "button".into(),
            name: "Add one".into(),
            bounds: [10.0, 10.0, 80.0, 24.0],
            secret_field: false,
            frame: false,
            structure: TargetStructure {
                document_origin: "https://fake.example".into(),
                ..TargetStructure::default()
            },
        };
        // A link to another origin: activating it reaches two origins (the page's and its own).
        let link = TargetFacts {
            role: "link".into(),
            name: "Visit other".into(),
            bounds: [10.0, 40.0, 80.0, 20.0],
            secret_field: false,
            frame: false,
            structure: TargetStructure {
                document_origin: "https://fake.example".into(),
                href: Some(OTHER_URL.into()),
                ..TargetStructure::default()
            },
        };
        *lock(&self.latest) = Some(Arc::new(FakeFrame {
            frame_id: frame_id.clone(),
            targets: HashMap::from([("e1".to_owned(), button), ("e2".to_owned(), link)]),
        }));
        lock(&self.log).observed += 1;
        let element = |id: &str| {
            ElementRef::new(id).map_err(|e| SurfaceError::Internal {
                reason: e.to_string(),
            })
        };
        let tab = TabId::new(self.id.clone()).map_err(|e| SurfaceError::Internal {
            reason: e.to_string(),
        })?;
        Ok(Observation::bounded(ObservationParts {
            frame_id,
            content_epoch: count,
            captured_at: 0,
            target: TargetIdentity::web_tab(tab),
            url: FAKE_URL.into(),
            origin: "https://fake.example".into(),
            title: "Fake".into(),
            viewport: Viewport {
                width: 800.0,
                height: 600.0,
                device_scale_factor: 1.0,
                page_zoom: 1.0,
                scroll_x: 0.0,
                scroll_y: 0.0,
            },
            screenshot: None,
            aria_snapshot: format!(
                "button \"Add one\" [e1]\n\"{count} clicks\"\nlink \"Visit other\" [e2]\n"
            ),
            interactive_elements: vec![
                InteractiveElement::new(
                    element("e1")?,
                    "button",
                    "Add one",
                    false,
                    Vec::new(),
                    None,
                )
                .shown_in_snapshot(true),
                InteractiveElement::new(
                    element("e2")?,
                    "link",
                    "Visit other",
                    false,
                    Vec::new(),
                    None,
                )
                .shown_in_snapshot(true),
            ],
            console_errors: Vec::new(),
            cut: ProducerCuts::default(),
        }))
    }
}

impl Surface for FakeSurface {
    fn id(&self) -> &str {
        &self.id
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn lost(&self) -> Option<String> {
        None
    }
    fn observe<'a>(
        &'a self,
        _options: &'a ObserveOptions,
    ) -> BoxFuture<'a, Result<Observation, SurfaceError>> {
        Box::pin(async move { self.capture() })
    }
    fn preview(&self, _deadline: Duration) -> BoxFuture<'_, Preview> {
        Box::pin(async move { Preview::unavailable("Fake", "https://fake.example", 0) })
    }
    fn act<'a>(
        &'a self,
        action: &'a ExtendedAction,
        _options: &'a ActOptions,
    ) -> BoxFuture<'a, Result<ActOutcome, SurfaceError>> {
        Box::pin(async move {
            let latest = lock(&self.latest)
                .clone()
                .ok_or_else(|| SurfaceError::Stale {
                    reason: "not observed".into(),
                })?;
            // The adapter checks freshness again at dispatch, as the browser does.
            if &latest.frame_id != action.expected_frame_id() {
                return Err(SurfaceError::Stale {
                    reason: "not the latest frame".into(),
                });
            }
            let kind: ExtendedKind = action.kind();
            lock(&self.log).acted.push(kind.as_str().to_owned());
            let on_button = action.targets().next().is_some_and(
                |t| matches!(t, protocol::TargetRef::Ref(e) if e.element.as_str() == "e1"),
            );
            if matches!(action, ExtendedAction::Click(_)) && on_button {
                self.count.fetch_add(1, Ordering::SeqCst);
            }
            let receipt = Receipt::confirmed(kind, action.expected_frame_id().clone());
            let observation = self.capture().ok();
            Ok(ActOutcome {
                action: kind,
                receipt,
                observation,
                opened: Vec::new(),
                dialog: None,
                downloads: Vec::new(),
                marker: None,
                timing: ActTiming::default(),
                blocked: Vec::new(),
            })
        })
    }
    fn latest_frame(&self) -> Option<Arc<dyn FrameRecord>> {
        lock(&self.latest)
            .clone()
            .map(|f| f as Arc<dyn FrameRecord>)
    }
    fn locate<'a>(
        &'a self,
        _frame: &'a dyn FrameRecord,
        _locator: &'a Locator,
    ) -> BoxFuture<'a, Option<LocatedFacts>> {
        Box::pin(async { None })
    }
    fn release_input(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async { Ok(()) })
    }
    fn dialog(&self) -> Option<Dialog> {
        None
    }
    fn detach(&self, _deadline: Duration) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async { Ok(()) })
    }
    fn memory(&self) -> SurfaceMemory {
        SurfaceMemory(Arc::new(()))
    }
    fn scrub(&self, secrets: &[String]) {
        // The fake's page shows no text of anyone's: only the call is noted.
        lock(&self.log).scrubbed += secrets.len();
    }
}

impl SurfaceAdapter for FakeAdapter {
    fn kind(&self) -> SurfaceKind {
        SurfaceKind::WebTab
    }
    fn connect(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move { self.up() })
    }
    fn closed_reason(&self) -> Option<String> {
        self.up().err().map(|e| e.to_string())
    }
    fn process_dead(&self) -> bool {
        false
    }
    fn pid(&self) -> Option<u32> {
        None
    }
    fn launched(&self) -> bool {
        false
    }
    fn reconnect(&self) -> BoxFuture<'_, Result<Reconnected, SurfaceError>> {
        Box::pin(async move {
            // A relaunch installs its connection at once (as the browser adapter does); the
            // contexts come after, from the runtime.
            if self.crashed.swap(false, Ordering::SeqCst) {
                self.down.store(false, Ordering::SeqCst);
                return Ok(Reconnected::Relaunched);
            }
            self.up().map(|()| Reconnected::Same)
        })
    }
    fn shutdown(&self) {}
    fn events(&self) -> BoxFuture<'_, Option<SurfaceEvents>> {
        Box::pin(async { None })
    }
    fn create_context(
        &self,
        _with_connection: bool,
    ) -> BoxFuture<'_, Result<String, SurfaceError>> {
        Box::pin(async move {
            self.up()?;
            let delay = *lock(&self.context_delay);
            tokio::time::sleep(delay).await;
            let context = format!("context{}", self.next.fetch_add(1, Ordering::SeqCst));
            lock(&self.contexts).push(context.clone());
            Ok(context)
        })
    }
    fn dispose_context_if_empty(&self, _context: String) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn open(
        &self,
        context: Option<String>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            self.up()?;
            // As Chromium answers a context of a browser that is gone.
            if let Some(context) = context
                && !lock(&self.contexts).contains(&context)
            {
                return Err(SurfaceError::Internal {
                    reason: format!("Failed to find browser context {context}"),
                });
            }
            let id = format!("FAKE{}", self.next.fetch_add(1, Ordering::SeqCst));
            let surface = Arc::new(FakeSurface {
                id: id.clone(),
                count: AtomicU64::new(0),
                frames: AtomicU64::new(0),
                latest: Mutex::default(),
                log: self.log.clone(),
            });
            lock(&self.surfaces).insert(id.clone(), surface.clone());
            lock(&self.log).opened.push(id);
            Ok(surface as Arc<dyn Surface>)
        })
    }
    fn open_detached(
        &self,
        _url: String,
        context: Option<String>,
        _background: bool,
    ) -> BoxFuture<'_, Result<String, SurfaceError>> {
        Box::pin(async move { Ok(self.open(context).await?.id().to_owned()) })
    }
    fn attach(
        &self,
        id: String,
        _memory: Option<SurfaceMemory>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            self.up()?;
            lock(&self.surfaces)
                .get(&id)
                .cloned()
                .map(|s| s as Arc<dyn Surface>)
                .ok_or_else(|| SurfaceError::lost("no such fake surface"))
        })
    }
    fn list(&self) -> BoxFuture<'_, Result<Vec<SurfaceInfo>, SurfaceError>> {
        Box::pin(async move {
            self.up()?;
            Ok(lock(&self.surfaces)
                .keys()
                .map(|id| SurfaceInfo {
                    id: id.clone(),
                    top_level: true,
                    url: FAKE_URL.into(),
                    title: "Fake".into(),
                    context: None,
                    input: vec![protocol::InputRoute::BackgroundInput],
                    kind: protocol::SurfaceKind::WebTab,
                    opener: None,
                })
                .collect())
        })
    }
    fn close(&self, id: String, _deadline: Duration) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let closed = lock(&self.surfaces).remove(&id).is_some();
            if closed {
                lock(&self.log).closed.push(id);
            }
            closed
        })
    }
    fn input_domain(&self, id: &str) -> InputDomain {
        InputDomain(format!("fake:{id}"))
    }
    fn person_image(&self, _id: String) -> BoxFuture<'_, Result<Vec<u8>, SurfaceError>> {
        Box::pin(async { Err(SurfaceError::unavailable("the fake has no picture")) })
    }
    fn person_view(&self, _id: String) -> BoxFuture<'_, Result<Box<dyn PersonCast>, SurfaceError>> {
        Box::pin(async { Err(SurfaceError::unavailable("the fake has no picture")) })
    }
}
