//! The browser as a [`SurfaceAdapter`]: one Chromium connection (a launched local browser or a
//! remote CDP endpoint) whose page targets are the surfaces, and [`Tab`] as an attached
//! [`Surface`]. Every CDP call the runtime's lifecycle needs lives here: browser contexts,
//! target creation, listing and closing, the target watcher, attaching, window fitting, a
//! person's preview image, and a kept tab's cookies and local storage. The person's live view is
//! `person.rs`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cdp::domains::target;
use cdp::{Browser, CdpError, Connection, ConnectionOptions, LaunchOptions, Session, TargetId};
use protocol::extended::Locator;
use protocol::{ExtendedAction, Observation, Preview, SurfaceKind};
use serde_json::{Value, json};
use surface::{
    BoxFuture, FrameRecord, InputDomain, KeptSite, PersonCast, Reconnected, Surface,
    SurfaceAdapter, SurfaceError, SurfaceEvent, SurfaceEvents, SurfaceInfo, SurfaceMemory,
};

use crate::{
    ActOptions, ActOutcome, Dialog, LocatedFacts, ObservationRecord, ObserveOptions, Tab, TabMemory,
};

/// The most local-storage bytes saved per tab.
const LOCAL_STORAGE_MAX_BYTES: usize = 1 << 20;
/// How long one call of the lifecycle may wait for the browser.
const CALL_DEADLINE: Duration = Duration::from_secs(3);

/// Where the browser comes from.
#[derive(Debug, Clone)]
pub enum BrowserSource {
    /// Launch a local Chromium that dies with the adapter.
    Launch(LaunchOptions),
    /// Connect to a running browser (`ws://…` or `http://host:port`); only its own tabs are touched.
    Endpoint(String),
}

/// One browser connection as a source of tabs (see the module docs).
pub struct Chromium {
    source: BrowserSource,
    conn: Mutex<Option<Connection>>,
    process: Mutex<Option<Browser>>,
    /// Held for writing while a start in the background ([`Chromium::starting_in_background`])
    /// makes the first connection; every operation reads it first, so none sees a browser half
    /// set up, and none waits once it is up.
    starting: Arc<tokio::sync::RwLock<()>>,
    /// `connect` returns at once and the browser starts in the background.
    background: bool,
    /// Why the start in the background failed (until a reconnect succeeds).
    start_failed: Mutex<Option<String>>,
    /// [`SurfaceAdapter::shutdown`] was called: a start in the background that ends after it
    /// stops the browser it started instead of keeping it.
    shut_down: std::sync::atomic::AtomicBool,
    /// Every CDP command's round trip, over every connection this adapter has made.
    round_trips: Arc<surface::metrics::Histogram>,
    /// The browser's own frame around a page (its window's size minus the page viewport):
    /// [`HEADLESS_WINDOW_FRAME`] for a headless launch, else learned by the first
    /// [`Chromium::fit_viewport`] that resized (which also corrects a wrong one): tabs are
    /// created at the right window size and need no resize.
    window_frame: Mutex<Option<(i64, i64)>>,
    me: std::sync::Weak<Chromium>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl From<crate::BrowserError> for SurfaceError {
    fn from(e: crate::BrowserError) -> Self {
        use crate::BrowserError as B;
        match e {
            B::TargetLost { reason } => SurfaceError::TargetLost { reason },
            B::BackendUnavailable { reason } => SurfaceError::BackendUnavailable { reason },
            B::Unstable { what } => SurfaceError::Unstable { what },
            B::Stale { reason } => SurfaceError::Stale { reason },
            B::NotActionable { reason } => SurfaceError::NotActionable { reason },
            B::Timeout { what, after_ms } => SurfaceError::Timeout { what, after_ms },
            B::Internal { reason } => SurfaceError::Internal { reason },
        }
    }
}

fn cdp_error(e: CdpError) -> SurfaceError {
    crate::BrowserError::from(e).into()
}

/// Launches or connects to `source` (at start and on reconnect).
async fn open(
    source: &BrowserSource,
    round_trips: &Arc<surface::metrics::Histogram>,
) -> Result<(Connection, Option<Browser>), SurfaceError> {
    let unavailable = |e: String| SurfaceError::BackendUnavailable { reason: e };
    // Every command's round trip, for the operator's metrics.
    let timed = |conn: Connection| {
        let histogram = round_trips.clone();
        conn.time_round_trips(cdp::RoundTripHook(Arc::new(move |took| {
            histogram.observe(took)
        })));
        conn
    };
    match source {
        BrowserSource::Launch(options) => {
            let local = Browser::launch(options)
                .await
                .map_err(|e| unavailable(e.to_string()))?;
            let conn = local
                .connect(ConnectionOptions::default())
                .await
                .map(timed)
                .map_err(|e| unavailable(e.to_string()))?;
            // Its own browser: every window a tab opens is set up before it runs (a shared
            // browser's other pages are never touched, so its windows are not gated).
            // No download lands anywhere unless an action asked for it (`expect_download`, into
            // the run's folder): headless and headed Chromium alike would save into ~/Downloads.
            // Both asked at once: at start every round trip waits on a browser still starting.
            let browser = conn.browser();
            let (gated, denied) = tokio::join!(
                conn.gate_new_pages(),
                browser.send_raw(
                    "Browser.setDownloadBehavior",
                    serde_json::json!({"behavior": "deny"}),
                    conn.default_timeout(),
                )
            );
            gated.map_err(|e| unavailable(format!("cannot follow the windows tabs open: {e}")))?;
            denied.map_err(|e| unavailable(format!("cannot refuse unasked downloads: {e}")))?;
            Ok((conn, Some(local)))
        }
        BrowserSource::Endpoint(endpoint) => {
            let ws = cdp::endpoint::resolve(endpoint, Duration::from_secs(10))
                .await
                .map_err(|e| unavailable(e.to_string()))?;
            Ok((
                Connection::connect(&ws, ConnectionOptions::default())
                    .await
                    .map(timed)
                    .map_err(|e| unavailable(e.to_string()))?,
                None,
            ))
        }
    }
}

/// Headless Chromium's window frame (width, height): its window is its page viewport plus an
/// emulated toolbar. Measured on Debian's Chromium; a build that differs is fitted at its first
/// tab and remembered.
const HEADLESS_WINDOW_FRAME: (i64, i64) = (0, 87);

impl Chromium {
    /// An adapter for `source`, not yet connected ([`SurfaceAdapter::connect`]).
    pub fn new(source: BrowserSource) -> Arc<Chromium> {
        Self::build(source, false)
    }

    /// An adapter whose `connect` returns at once and starts the browser in the background: a
    /// server answers its clients (an MCP `initialize`) without waiting for Chromium, and the
    /// first operation that needs the browser waits for it (or gets the reason it failed, and
    /// the next one tries again).
    pub fn starting_in_background(source: BrowserSource) -> Arc<Chromium> {
        Self::build(source, true)
    }

    fn build(source: BrowserSource, background: bool) -> Arc<Chromium> {
        // Known before any window exists: the first tab's window is made at the size that
        // fits, not resized after (~10–20 ms of a cold start).
        let window_frame = match &source {
            // The headless shell draws no toolbar: its window is its page.
            BrowserSource::Launch(options) if options.headless => Some(
                if cdp::launch::find_chromium(options.executable.as_deref())
                    .is_ok_and(|found| cdp::launch::is_headless_shell(&found))
                {
                    (0, 0)
                } else {
                    HEADLESS_WINDOW_FRAME
                },
            ),
            _ => None,
        };
        Arc::new_cyclic(|me| Chromium {
            source,
            conn: Mutex::default(),
            process: Mutex::default(),
            starting: Arc::default(),
            background,
            start_failed: Mutex::default(),
            shut_down: Default::default(),
            round_trips: Arc::default(),
            window_frame: Mutex::new(window_frame),
            me: me.clone(),
        })
    }

    /// Waits while the first connection is being made in the background.
    async fn ready(&self) {
        drop(self.starting.read().await);
    }

    /// A local headless Chromium with its profiles under `data_dir` (the embedded default).
    pub fn local(data_dir: impl Into<std::path::PathBuf>) -> Arc<Chromium> {
        Chromium::new(BrowserSource::Launch(LaunchOptions::new(data_dir)))
    }

    /// Where the browser comes from.
    pub fn source(&self) -> &BrowserSource {
        &self.source
    }

    /// The current connection (for the adapter's own benchmarks and tests).
    pub fn connection(&self) -> Result<Connection, SurfaceError> {
        if let Some(conn) = lock(&self.conn).clone() {
            return Ok(conn);
        }
        Err(match lock(&self.start_failed).clone() {
            Some(why) => SurfaceError::unavailable(format!("the browser did not start: {why}")),
            None => SurfaceError::unavailable("the browser is not connected yet"),
        })
    }

    pub(crate) fn with_process<T>(&self, f: impl FnOnce(&Browser) -> T) -> Option<T> {
        lock(&self.process).as_ref().map(f)
    }

    fn browser(&self) -> Result<Session, SurfaceError> {
        Ok(self.connection()?.browser())
    }

    /// The window size a new tab is created with: the configured viewport plus the browser's
    /// frame, once that is known (`None`: the browser's default, fitted after).
    fn new_window_size(&self) -> Option<(u32, u32)> {
        let BrowserSource::Launch(options) = &self.source else {
            return None;
        };
        let (frame_w, frame_h) = (*lock(&self.window_frame))?;
        let width = u32::try_from(i64::from(options.window_size.0) + frame_w).ok()?;
        let height = u32::try_from(i64::from(options.window_size.1) + frame_h).ok()?;
        Some((width, height))
    }

    /// Sizes a new tab's window so that its page viewport (`innerWidth` × `innerHeight`) is the
    /// configured size: a window's size includes the browser's own frame (about 87 px in headless
    /// Chromium), so a point computed from the configured size would miss. Done on the blank tab,
    /// before its first observation. The frame learned here sizes later tabs' windows at their
    /// creation ([`Chromium::new_window_size`]), which then fit at the first check.
    /// Best effort: a browser that refuses keeps its size, and observations report the real one.
    async fn fit_viewport(&self, tab: &Tab) {
        let BrowserSource::Launch(options) = &self.source else {
            return;
        };
        let Ok(browser) = self.browser() else { return };
        let (want_w, want_h) = (
            i64::from(options.window_size.0),
            i64::from(options.window_size.1),
        );
        let inner = || async {
            let reply = tab
                .session()
                .call(cdp::domains::runtime::Evaluate::value(
                    "[innerWidth, innerHeight]",
                ))
                .await
                .ok()?;
            let v = reply.result.value?;
            Some((v.get(0)?.as_i64()?, v.get(1)?.as_i64()?))
        };
        let Some((w, h)) = inner().await else { return };
        if (w, h) == (want_w, want_h) {
            return;
        }
        let Ok(window) = browser
            .call(cdp::domains::browser::GetWindowForTarget {
                target_id: tab.target_id().clone(),
            })
            .await
        else {
            return;
        };
        let (Some(bw), Some(bh)) = (window.bounds.width, window.bounds.height) else {
            return;
        };
        if bw >= w && bh >= h {
            *lock(&self.window_frame) = Some((bw - w, bh - h));
        }
        let bounds = cdp::domains::browser::Bounds {
            width: Some(bw + want_w - w),
            height: Some(bh + want_h - h),
            ..Default::default()
        };
        if let Err(e) = browser
            .call(cdp::domains::browser::SetWindowBounds {
                window_id: window.window_id,
                bounds,
            })
            .await
        {
            tracing::debug!(error = %e, "the browser kept its window size");
            return;
        }
        // The resize lands asynchronously; the first observation must see the final size.
        for _ in 0..50 {
            if inner().await == Some((want_w, want_h)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tracing::debug!(
            want_w,
            want_h,
            "the page viewport did not reach the configured size"
        );
    }

    async fn attach_tab(
        &self,
        id: String,
        memory: Option<SurfaceMemory>,
    ) -> Result<Arc<dyn Surface>, SurfaceError> {
        let browser = self.browser()?;
        let page = browser.attach(&TargetId(id)).await.map_err(|e| match e {
            // `Target.attachToTarget` refuses only a target it does not know: the tab is gone.
            CdpError::Protocol { .. } => SurfaceError::lost("the tab is gone"),
            other => cdp_error(other),
        })?;
        let session_id = page.id().cloned();
        let memory = memory
            .and_then(|m| m.0.downcast_ref::<TabMemory>().cloned())
            .unwrap_or_default();
        match Tab::resume(page, memory).await {
            Ok(tab) => Ok(Arc::new(tab)),
            Err(e) => {
                // Half set up: do not leave the session behind.
                if let Some(id) = session_id {
                    let _ = browser
                        .call_with(target::DetachFromTarget { session_id: id }, CALL_DEADLINE)
                        .await;
                }
                Err(e.into())
            }
        }
    }

    async fn close_target(&self, id: String, deadline: Duration) -> bool {
        let Ok(browser) = self.browser() else {
            return false;
        };
        // One deadline for the whole close, whatever state the browser is in (a frozen browser
        // answers nothing; without it each step would wait out the default command timeout).
        let deadline = tokio::time::Instant::now() + deadline;
        let mut destroyed = browser.subscribe(&["Target.targetDestroyed"]);
        // Destruction events flow only with target discovery on (idempotent).
        if tokio::time::timeout_at(
            deadline,
            browser.call(target::SetDiscoverTargets { discover: true }),
        )
        .await
        .is_err()
        {
            return false;
        }
        let reply = tokio::time::timeout_at(
            deadline,
            browser.call(target::CloseTarget {
                target_id: TargetId(id.clone()),
            }),
        )
        .await;
        match reply {
            Ok(Ok(_)) => {}
            // Refused: closed only if the browser no longer lists the target (a fact, not the
            // wording of its error).
            Ok(Err(CdpError::Protocol { .. })) => {
                let listed =
                    tokio::time::timeout_at(deadline, browser.call(target::GetTargets {})).await;
                return matches!(listed, Ok(Ok(reply)) if !reply.target_infos.iter().any(|t| t.target_id.as_ref().is_some_and(|t| t.0 == id)));
            }
            _ => return false,
        }
        let gone = tokio::time::timeout_at(deadline, async {
            while let Some(event) = destroyed.recv().await {
                if let Ok(event) = event
                    && event.params.get("targetId").and_then(Value::as_str) == Some(id.as_str())
                {
                    return true;
                }
            }
            false
        })
        .await;
        matches!(gone, Ok(true))
    }

    async fn screenshot(&self, id: String) -> Result<Vec<u8>, SurfaceError> {
        let gone = || SurfaceError::lost("the tab is not open in this browser");
        let browser = self.browser()?;
        let session = tokio::time::timeout(CALL_DEADLINE, browser.attach(&TargetId(id)))
            .await
            .map_err(|_| gone())?
            .map_err(|_| gone())?;
        let shot = tokio::time::timeout(
            Duration::from_secs(5),
            session.call(cdp::domains::page::CaptureScreenshot {
                format: Some("jpeg".into()),
                quality: Some(70),
                clip: None,
                optimize_for_speed: Some(true),
            }),
        )
        .await;
        if let Some(id) = session.id() {
            let _ = browser
                .call(target::DetachFromTarget {
                    session_id: id.clone(),
                })
                .await;
        }
        let shot = shot
            .map_err(|_| SurfaceError::Timeout {
                what: "a preview image".into(),
                after_ms: 5000,
            })?
            .map_err(cdp_error)?;
        surface::decode_base64(&shot.data).ok_or_else(|| SurfaceError::Internal {
            reason: "the browser sent an image that is not base64".into(),
        })
    }

    async fn keep(
        &self,
        context: Option<String>,
        url: &str,
        tab: Option<&dyn Surface>,
        previous: Option<KeptSite>,
    ) -> Option<KeptSite> {
        let (Some(host), Ok(origin)) = (host_of(url), policy::Origin::parse(url)) else {
            return None;
        };
        let origin = origin.serialize_web();
        let browser = self.browser().ok()?;
        let cookies = match tokio::time::timeout(
            CALL_DEADLINE,
            browser.call(cdp::domains::storage::GetCookies {
                browser_context_id: context,
            }),
        )
        .await
        {
            Ok(Ok(reply)) => reply.cookies,
            _ => return None,
        };
        let cookies: Vec<Value> = cookies
            .iter()
            .filter(|c| c["domain"].as_str().is_some_and(|d| cookie_for(d, &host)))
            .map(cookie_param)
            .collect();
        let mut local_storage = previous
            .filter(|p| p.origin == origin)
            .and_then(|p| p.state.get("local_storage").cloned())
            .unwrap_or_else(|| json!([]));
        // Only a tab of this adapter holds a CDP session to read its origin's local storage.
        if let Some(tab) = tab.and_then(|t| self.own_tab(t)) {
            let read = cdp::domains::runtime::Evaluate {
                expression: format!(
                    "(() => {{ try {{ const s = JSON.stringify(Object.entries(localStorage)); return s.length <= {LOCAL_STORAGE_MAX_BYTES} ? s : '[]'; }} catch (e) {{ return '[]'; }} }})()"
                ),
                return_by_value: Some(true),
                ..Default::default()
            };
            if let Ok(Ok(reply)) =
                tokio::time::timeout(CALL_DEADLINE, tab.session().call(read)).await
                && let Some(items) = reply
                    .result
                    .value
                    .as_ref()
                    .and_then(Value::as_str)
                    .and_then(|s| serde_json::from_str::<Vec<(String, String)>>(s).ok())
            {
                local_storage = json!(items);
            }
        }
        let mut state = serde_json::Map::new();
        state.insert("cookies".into(), Value::Array(cookies));
        state.insert("local_storage".into(), local_storage);
        Some(KeptSite { origin, state })
    }

    /// The [`Tab`] behind a surface this adapter attached.
    fn own_tab<'a>(&self, surface: &'a dyn Surface) -> Option<&'a Tab> {
        surface.as_any().downcast_ref::<Tab>()
    }

    /// Puts saved cookies into `context` and saved local storage on its origin, through a
    /// short-lived page whose one request is answered here (the site is not loaded).
    async fn seed(&self, kept: &KeptSite, context: Option<String>) -> Result<(), SurfaceError> {
        let failed = |why: String| SurfaceError::Internal { reason: why };
        let browser = self.browser()?;
        let cookies = kept
            .state
            .get("cookies")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let local_storage: Vec<(String, String)> = kept
            .state
            .get("local_storage")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        if !cookies.is_empty() {
            browser
                .call(cdp::domains::storage::SetCookies {
                    cookies,
                    browser_context_id: context.clone(),
                })
                .await
                .map_err(|e| failed(format!("its cookies could not be set: {e}")))?;
        }
        if local_storage.is_empty() || policy::Origin::parse(&kept.origin).is_err() {
            return Ok(());
        }
        let page = browser
            .create_page("about:blank", context)
            .await
            .map_err(|e| failed(format!("no page to seed its storage: {e}")))?;
        let seeded = async {
            let seed_url = format!("{}/__glovebox_restore__", kept.origin);
            let mut paused = page.subscribe(&["Fetch.requestPaused"]);
            page.call(cdp::domains::storage::FetchEnable {
                patterns: vec![
                    json!({"urlPattern": format!("{seed_url}*"), "requestStage": "Request"}),
                ],
            })
            .await
            .map_err(|e| e.to_string())?;
            let navigate = page.call(cdp::domains::page::Navigate {
                url: seed_url,
                frame_id: None,
            });
            let answer = async {
                while let Some(Ok(event)) = paused.recv().await {
                    if let Some(id) = event.params.get("requestId").and_then(Value::as_str) {
                        let _ = page
                            .call(cdp::domains::storage::FulfillRequest {
                                request_id: id.to_owned(),
                                response_code: 200,
                                response_headers: vec![
                                    json!({"name": "Content-Type", "value": "text/html"}),
                                ],
                                body: String::new(),
                            })
                            .await;
                        return;
                    }
                }
            };
            let (navigated, ()) = tokio::join!(navigate, answer);
            navigated.map_err(|e| e.to_string())?;
            let items = serde_json::to_string(&local_storage).map_err(|e| e.to_string())?;
            let write = cdp::domains::runtime::Evaluate {
                expression: format!(
                    "(() => {{ for (const [k, v] of {items}) localStorage.setItem(k, v); return localStorage.length; }})()"
                ),
                return_by_value: Some(true),
                ..Default::default()
            };
            let reply = page.call(write).await.map_err(|e| e.to_string())?;
            if reply.exception_details.is_some() {
                return Err("the page refused its local storage".to_owned());
            }
            Ok::<(), String>(())
        };
        let result = tokio::time::timeout(Duration::from_secs(5), seeded)
            .await
            .unwrap_or_else(|_| Err("seeding its storage timed out".into()));
        let _ = page.close_target().await;
        result.map_err(|e| failed(format!("its local storage could not be restored: {e}")))
    }
}

/// A target as the runtime sees it; a title Chromium made up from the URL is no title.
fn info_of(t: target::TargetInfo) -> Option<SurfaceInfo> {
    let id = t.target_id?.0;
    // While a page has no title, Chromium reports its URL (without the scheme) as the title.
    let untitled = t
        .url
        .split_once("://")
        .is_some_and(|(_, rest)| rest == t.title)
        || t.title == t.url;
    Some(SurfaceInfo {
        id,
        top_level: t.target_type == "page",
        title: if untitled { String::new() } else { t.title },
        url: t.url,
        context: t.browser_context_id,
        opener: t.opener_id.map(|o| o.0),
        // Input goes to the tab over CDP, whatever holds the screen's focus.
        input: vec![protocol::InputRoute::BackgroundInput],
        kind: protocol::SurfaceKind::WebTab,
    })
}

fn host_of(url: &str) -> Option<String> {
    let origin = policy::Origin::parse(url).ok()?.serialize_web();
    let authority = origin.split("://").nth(1)?;
    Some(match authority.strip_prefix('[') {
        Some(v6) => format!("[{}]", v6.split(']').next().unwrap_or_default()),
        None => authority.split(':').next().unwrap_or_default().to_owned(),
    })
}

/// Whether a cookie of `domain` is sent to `host`.
fn cookie_for(domain: &str, host: &str) -> bool {
    let domain = domain.trim_start_matches('.');
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// The `CookieParam` that recreates a reported cookie (only the fields `setCookies` takes).
fn cookie_param(cookie: &Value) -> Value {
    let mut param = serde_json::Map::new();
    for key in [
        "name",
        "value",
        "domain",
        "path",
        "secure",
        "httpOnly",
        "sameSite",
        "priority",
        "sourceScheme",
        "sourcePort",
    ] {
        if let Some(v) = cookie.get(key) {
            param.insert(key.to_owned(), v.clone());
        }
    }
    if cookie.get("session") != Some(&json!(true))
        && let Some(expires) = cookie
            .get("expires")
            .filter(|e| e.as_f64().is_some_and(|e| e > 0.0))
    {
        param.insert("expires".into(), expires.clone());
    }
    Value::Object(param)
}

impl SurfaceAdapter for Chromium {
    fn kind(&self) -> SurfaceKind {
        SurfaceKind::WebTab
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            if !self.background {
                let (conn, local) = open(&self.source, &self.round_trips).await?;
                *lock(&self.conn) = Some(conn);
                *lock(&self.process) = local;
                return Ok(());
            }
            let Some(me) = self.me.upgrade() else {
                return Err(SurfaceError::unavailable("the adapter is gone"));
            };
            // Taken before returning: an operation that comes first waits for the start.
            let starting = self.starting.clone().write_owned().await;
            tokio::spawn(async move {
                match open(&me.source, &me.round_trips).await {
                    Ok((conn, local)) => {
                        // Checked under the connection's lock, which `shutdown` takes after
                        // setting the flag: one of the two stops the browser.
                        let mut slot = lock(&me.conn);
                        if me.shut_down.load(std::sync::atomic::Ordering::SeqCst) {
                            drop(slot);
                            *lock(&me.start_failed) =
                                Some("the browser was shut down as it started".into());
                            conn.close();
                            drop(local);
                        } else {
                            *slot = Some(conn);
                            *lock(&me.process) = local;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the browser did not start; the next operation tries again");
                        *lock(&me.start_failed) = Some(e.to_string());
                    }
                }
                drop(starting);
            });
            Ok(())
        })
    }

    fn backend_metrics(&self) -> surface::metrics::BackendMetrics {
        surface::metrics::BackendMetrics {
            protocol: "cdp",
            // Up: a connection made and open (not one still starting in the background).
            connected: lock(&self.conn)
                .as_ref()
                .is_some_and(|c| c.closed_reason().is_none())
                && lock(&self.start_failed).is_none(),
            round_trips: Some(self.round_trips.snapshot()),
            pool: None,
        }
    }

    fn closed_reason(&self) -> Option<String> {
        if let Some(failed) = lock(&self.start_failed).clone() {
            return Some(failed);
        }
        if self.starting.try_read().is_err() {
            // Starting in the background: not closed; operations wait for it.
            return None;
        }
        match &*lock(&self.conn) {
            Some(conn) => conn.closed_reason(),
            None => Some("the browser is not connected yet".into()),
        }
    }

    fn process_dead(&self) -> bool {
        self.pid().is_some_and(|pid| {
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
        })
    }

    fn pid(&self) -> Option<u32> {
        lock(&self.process).as_ref().map(Browser::pid)
    }

    fn launched(&self) -> bool {
        // Known from the source, also while a start in the background is under way.
        matches!(self.source, BrowserSource::Launch(_))
    }

    fn reconnect(&self) -> BoxFuture<'_, Result<Reconnected, SurfaceError>> {
        Box::pin(async move {
            self.ready().await;
            let (conn, local) = open(&self.source, &self.round_trips).await?;
            let relaunched = local.is_some();
            *lock(&self.start_failed) = None;
            *lock(&self.conn) = Some(conn);
            if relaunched {
                // Dropping the old process stops what is left of it.
                *lock(&self.process) = local;
                Ok(Reconnected::Relaunched)
            } else {
                Ok(Reconnected::Same)
            }
        })
    }

    fn shutdown(&self) {
        self.shut_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(conn) = &*lock(&self.conn) {
            conn.close();
        }
        // Dropping a launched browser stops its process group.
        let launched = lock(&self.process).take();
        drop(launched);
    }

    fn events(&self) -> BoxFuture<'_, Option<SurfaceEvents>> {
        Box::pin(async move {
            self.ready().await;
            let browser = self.browser().ok()?;
            // A new target is told as a change too: a window a tab opened is named with its
            // opener from its first moment.
            let mut events = browser.subscribe(&[
                "Target.targetCreated",
                "Target.targetInfoChanged",
                "Target.targetDestroyed",
            ]);
            browser
                .call(target::SetDiscoverTargets { discover: true })
                .await
                .ok()?;
            let (tx, rx) = tokio::sync::mpsc::channel(1024);
            tokio::spawn(async move {
                while let Some(event) = events.recv().await {
                    let Ok(event) = event else { continue };
                    let forwarded = match event.method.as_str() {
                        "Target.targetCreated" | "Target.targetInfoChanged" => event
                            .parse::<target::TargetInfoEvent>()
                            .and_then(|e| info_of(e.target_info))
                            .map(SurfaceEvent::Changed),
                        _ => event
                            .params
                            .get("targetId")
                            .and_then(Value::as_str)
                            .map(|t| SurfaceEvent::Destroyed(t.to_owned())),
                    };
                    if let Some(forwarded) = forwarded
                        && tx.send(forwarded).await.is_err()
                    {
                        return;
                    }
                }
            });
            Some(rx)
        })
    }

    fn create_context(&self, with_connection: bool) -> BoxFuture<'_, Result<String, SurfaceError>> {
        Box::pin(async move {
            self.ready().await;
            let reply = self
                .browser()?
                .call(target::CreateBrowserContext {
                    dispose_on_detach: Some(with_connection),
                })
                .await
                .map_err(cdp_error)?;
            // Glovebox's own context refuses downloads nobody asked for, as a launched browser's
            // default context does.
            self.browser()?
                .send_raw(
                    "Browser.setDownloadBehavior",
                    serde_json::json!({"behavior": "deny", "browserContextId": reply.browser_context_id}),
                    self.connection()?.default_timeout(),
                )
                .await
                .map_err(cdp_error)?;
            Ok(reply.browser_context_id)
        })
    }

    fn dispose_context_if_empty(&self, context: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.ready().await;
            let Ok(browser) = self.browser() else { return };
            // Disposing the context would close every page in it, and handoff and deliverable
            // pages stay for the user: while any page is left the context stays (it goes with
            // the connection, being `disposeOnDetach`).
            let left = match browser.call(target::GetTargets {}).await {
                Ok(reply) => reply.target_infos.iter().any(|t| {
                    t.target_type == "page"
                        && t.browser_context_id.as_deref() == Some(context.as_str())
                }),
                Err(_) => false,
            };
            if !left {
                let _ = browser
                    .call(target::DisposeBrowserContext {
                        browser_context_id: context,
                    })
                    .await;
            }
        })
    }

    fn open(
        &self,
        context: Option<String>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            self.ready().await;
            let tab = Tab::open(&self.browser()?, context, self.new_window_size()).await?;
            self.fit_viewport(&tab).await;
            Ok(Arc::new(tab) as Arc<dyn Surface>)
        })
    }

    fn open_detached(
        &self,
        url: String,
        context: Option<String>,
        background: bool,
    ) -> BoxFuture<'_, Result<String, SurfaceError>> {
        Box::pin(async move {
            self.ready().await;
            let created = self
                .browser()?
                .call(target::CreateTarget {
                    url,
                    browser_context_id: context,
                    new_window: Some(true),
                    background: background.then_some(true),
                    width: None,
                    height: None,
                })
                .await
                .map_err(cdp_error)?;
            Ok(created.target_id.0)
        })
    }

    fn attach(
        &self,
        id: String,
        memory: Option<SurfaceMemory>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            self.ready().await;
            self.attach_tab(id, memory).await
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SurfaceInfo>, SurfaceError>> {
        Box::pin(async move {
            self.ready().await;
            let reply = tokio::time::timeout(
                Duration::from_secs(5),
                self.browser()?.call(target::GetTargets {}),
            )
            .await
            .map_err(|_| SurfaceError::Timeout {
                what: "listing the browser's tabs".into(),
                after_ms: 5000,
            })?
            .map_err(cdp_error)?;
            Ok(reply.target_infos.into_iter().filter_map(info_of).collect())
        })
    }

    fn close(&self, id: String, deadline: Duration) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            self.ready().await;
            self.close_target(id, deadline).await
        })
    }

    fn input_domain(&self, id: &str) -> InputDomain {
        // CDP's Input domain dispatches to one target: a tab is its own input domain.
        InputDomain(format!("tab:{id}"))
    }

    fn control_endpoints(&self) -> Vec<String> {
        // The DevTools endpoint: the launched browser's (none when it is driven over its pipe),
        // or the remote one connected to.
        let mut endpoints: Vec<String> = lock(&self.process)
            .as_ref()
            .and_then(|b| b.ws_url().map(str::to_owned))
            .into_iter()
            .collect();
        if let BrowserSource::Endpoint(endpoint) = &self.source {
            endpoints.push(endpoint.clone());
        }
        endpoints
            .iter()
            .map(|e| {
                e.replacen("ws://", "http://", 1)
                    .replacen("wss://", "https://", 1)
            })
            .collect()
    }

    fn person_image(&self, id: String) -> BoxFuture<'_, Result<Vec<u8>, SurfaceError>> {
        Box::pin(async move {
            self.ready().await;
            self.screenshot(id).await
        })
    }

    fn person_view(&self, id: String) -> BoxFuture<'_, Result<Box<dyn PersonCast>, SurfaceError>> {
        Box::pin(async move {
            self.ready().await;
            Ok(
                Box::new(crate::person::Screencast::open(self.browser()?, id).await?)
                    as Box<dyn PersonCast>,
            )
        })
    }

    fn keep_site<'a>(
        &'a self,
        context: Option<String>,
        url: &'a str,
        surface: Option<&'a dyn Surface>,
        previous: Option<KeptSite>,
    ) -> BoxFuture<'a, Option<KeptSite>> {
        Box::pin(async move {
            self.ready().await;
            self.keep(context, url, surface, previous).await
        })
    }

    fn restore_site<'a>(
        &'a self,
        kept: &'a KeptSite,
        context: Option<String>,
    ) -> BoxFuture<'a, Result<(), SurfaceError>> {
        Box::pin(async move {
            self.ready().await;
            self.seed(kept, context).await
        })
    }
}

impl FrameRecord for ObservationRecord {
    fn frame_id(&self) -> &protocol::FrameId {
        &self.frame_id
    }

    fn document_url(&self) -> &str {
        ObservationRecord::document_url(self)
    }

    fn canvas_share(&self) -> f64 {
        ObservationRecord::canvas_share(self)
    }

    fn has_screenshot(&self) -> bool {
        ObservationRecord::has_screenshot(self)
    }

    fn target(&self, element: &protocol::ElementRef) -> Option<&surface::TargetFacts> {
        self.binding(element).map(|b| &b.facts)
    }

    fn targets(&self) -> Box<dyn Iterator<Item = &surface::TargetFacts> + '_> {
        Box::new(self.refs.values().map(|b| &b.facts))
    }
}

impl Surface for Tab {
    fn id(&self) -> &str {
        &self.target_id().0
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn lost(&self) -> Option<String> {
        Tab::lost(self)
    }

    fn observe<'a>(
        &'a self,
        options: &'a ObserveOptions,
    ) -> BoxFuture<'a, Result<Observation, SurfaceError>> {
        Box::pin(async move { Ok(Tab::observe(self, options).await?) })
    }

    fn preview(&self, deadline: Duration) -> BoxFuture<'_, Preview> {
        Box::pin(Tab::preview(self, deadline))
    }

    fn act<'a>(
        &'a self,
        action: &'a ExtendedAction,
        options: &'a ActOptions,
    ) -> BoxFuture<'a, Result<ActOutcome, SurfaceError>> {
        Box::pin(async move { Ok(Tab::act(self, action, options).await?) })
    }

    fn latest_frame(&self) -> Option<Arc<dyn FrameRecord>> {
        self.latest_observation().map(|r| r as Arc<dyn FrameRecord>)
    }

    fn locate<'a>(
        &'a self,
        frame: &'a dyn FrameRecord,
        locator: &'a Locator,
    ) -> BoxFuture<'a, Option<LocatedFacts>> {
        Box::pin(async move {
            // Only a record this tab issued can resolve a locator in its document.
            let record = self
                .latest_observation()
                .filter(|r| &r.frame_id == frame.frame_id())?;
            self.locator_facts(&record, locator).await
        })
    }

    fn release_input(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move { Ok(Tab::release_input(self).await?) })
    }

    fn dialog(&self) -> Option<Dialog> {
        Tab::dialog(self)
    }

    fn detach(&self, deadline: Duration) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move { Ok(Tab::detach(self, deadline).await?) })
    }

    fn memory(&self) -> SurfaceMemory {
        SurfaceMemory(Arc::new(Tab::memory(self)))
    }

    fn scrub(&self, secrets: &[String]) {
        // The tab's registry is what every observation, preview and screenshot mask reads, and
        // what its memory carries to the next attachment.
        let mut state = crate::tab::lock(&self.state);
        for secret in secrets {
            let _ = state.secrets.add(secret);
        }
    }

    fn network_hold(&self) -> Option<surface::NetworkHold> {
        self.guard.network_hold()
    }

    fn allow_origin(&self, origin: &policy::Origin) -> bool {
        self.guard.allow(origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_follow_their_domain() {
        assert!(cookie_for(".example.com", "shop.example.com"));
        assert!(cookie_for("example.com", "example.com"));
        assert!(!cookie_for("example.com", "badexample.com"));
        assert_eq!(
            host_of("http://127.0.0.1:8080/x").as_deref(),
            Some("127.0.0.1")
        );
        let param = cookie_param(
            &json!({"name": "a", "value": "b", "domain": "x", "path": "/", "size": 2, "session": true, "expires": -1}),
        );
        assert_eq!(
            param,
            json!({"name": "a", "value": "b", "domain": "x", "path": "/"})
        );
    }

    #[test]
    fn a_title_chromium_made_from_the_url_is_no_title() {
        let info = |url: &str, title: &str| target::TargetInfo {
            target_id: Some(TargetId("t".into())),
            target_type: "page".into(),
            url: url.into(),
            title: title.into(),
            ..Default::default()
        };
        assert_eq!(
            info_of(info("http://a.test/x", "a.test/x")).unwrap().title,
            ""
        );
        assert_eq!(
            info_of(info("about:blank", "about:blank")).unwrap().title,
            ""
        );
        assert_eq!(
            info_of(info("http://a.test/x", "Inbox")).unwrap().title,
            "Inbox"
        );
    }
}
