//! A tab Glovebox attached to: its session, child frames, navigation epoch, isolated-world
//! contexts, console errors, and the read/write barrier that keeps observations and actions apart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cdp::domains::{log, page, runtime};
use cdp::{ChildTargets, Session, TargetId};
use serde::Deserialize;
use tokio::sync::RwLock;
use tokio::task::AbortHandle;

use crate::BrowserError;
use crate::console::ConsoleLog;
use crate::observe::ObservationRecord;

/// The name of Glovebox's isolated world in every frame.
pub(crate) const WORLD: &str = "glovebox";
pub(crate) const WORLD_JS: &str = include_str!("js/world.js");

#[derive(Debug, Default)]
pub(crate) struct TabState {
    /// The page's recent requests (method and URL, when sent), newest last, at most 64: one the
    /// page sent before an action began too is its own polling, not the action's.
    pub(crate) recent_requests: std::collections::VecDeque<(String, std::time::Instant)>,
    /// When the action in flight was dispatched.
    pub(crate) action_started: Option<std::time::Instant>,
    /// Bumped on every main-frame navigation, cross- or same-document.
    pub(crate) navigation_epoch: u64,
    pub(crate) main_frame_id: String,
    /// Execution context of the `glovebox` world per frame id.
    pub(crate) worlds: HashMap<String, i64>,
    pub(crate) console: ConsoleLog,
    /// Set when the target detached or crashed.
    pub(crate) lost: Option<String>,
    /// A JavaScript dialog (alert, confirm, prompt, beforeunload) open right now.
    pub(crate) dialog: Option<Dialog>,
    /// The open prompt's default text (what accepting it without text answers).
    pub(crate) dialog_default_prompt: Option<String>,
    /// Text this tab typed as secret; scrubbed from every later observation.
    pub(crate) secrets: policy::SecretRegistry,
    /// The refs given to the current document's nodes (stable across observations).
    pub(crate) refs: crate::observe::RefMemory,
    /// The document last found without jQuery, and when: its observations skip the main-world
    /// read of delegated handlers for a while (`observe::delegated_targets`).
    pub(crate) without_jquery: Option<(String, std::time::Instant)>,
    /// Tabs or windows this tab opened (target ids), newest last.
    pub(crate) opened: Vec<String>,
    /// Keys and mouse buttons held down across actions (`key_down`, a drag in progress).
    pub(crate) held: crate::act::Held,
    /// The session whose file choosers an `upload` is intercepting right now; interception is
    /// on only while an upload waits for its chooser (see `act/files.rs`).
    pub(crate) intercepting_choosers: Option<Session>,
    /// The input the current action sent, for its marker (`act/marker.rs`).
    pub(crate) trace: Vec<crate::act::Trace>,
    /// How long the current action waited for the page to settle.
    pub(crate) settled: std::time::Duration,
    /// Requests the action in flight's settling waited for.
    pub(crate) awaited_requests: usize,
    /// How the last settling of the action in flight ended.
    pub(crate) settled_by: crate::SettleEnd,
    /// Windows this page is expected to open — a modifier or middle click on a link (its
    /// `href`), a `Page.windowOpen` — not yet matched to the tab the browser made: URL and when.
    pub(crate) window_opens: Vec<(String, std::time::Instant)>,
    /// Page targets created without an opener (headless Chromium gives a modifier-click's tab
    /// none), not yet matched: target id, URL, when.
    pub(crate) orphans: Vec<(String, String, std::time::Instant)>,
    /// Downloads the page began during the action in flight (Chromium's guid, the file name the
    /// page suggested), at most 16.
    pub(crate) downloads_began: Vec<(String, String)>,
    /// WebSockets the page has open (request id, URL, whether a receipt named it yet), at most
    /// 64: the network boundary cannot block them, so a typing action refuses while one to an
    /// origin it may not reach is open.
    pub(crate) sockets: Vec<(String, String, bool)>,
    /// What a locator resolved to when the runtime judged the action (`Surface::locate`), kept
    /// for that action's dispatch (`act/locate.rs`).
    pub(crate) located: Option<crate::act::Located>,
}

pub use surface::Dialog;

/// One attached tab. Cheap to share behind an `Arc`; dropping it stops event tracking.
pub struct Tab {
    pub(crate) session: Session,
    target_id: TargetId,
    pub(crate) children: ChildTargets,
    pub(crate) state: Arc<Mutex<TabState>>,
    /// Observation capture holds it shared, actions exclusively: they never overlap.
    pub(crate) barrier: RwLock<()>,
    pub(crate) latest: Mutex<Option<Arc<ObservationRecord>>>,
    events: AbortHandle,
    /// The network boundary of agent actions (`guard.rs`).
    pub(crate) guard: crate::guard::Guard,
    guard_task: AbortHandle,
    /// The windows this tab opens are set up by its guard before they run (on a connection
    /// whose new pages are gated: a browser Glovebox launched).
    _popups: Option<cdp::OpenerWatch>,
}

impl Drop for Tab {
    fn drop(&mut self) {
        self.events.abort();
        self.guard_task.abort();
    }
}

impl std::fmt::Debug for Tab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tab")
            .field("target_id", &self.target_id)
            .finish()
    }
}

#[derive(Deserialize)]
struct ContextAux {
    #[serde(rename = "frameId")]
    frame_id: Option<String>,
}

/// What a tab remembers across a detach and the next attach to the same target: the latest
/// observation (its frame id and refs stay valid while the page is unchanged — an action still
/// checks the document, URL and viewport against it), the text typed as secret (scrubbed from
/// every later observation), the navigation epoch and the console errors collected so far.
/// Console errors, dialogs and popups that happen while no session is attached are not seen.
#[derive(Clone, Default)]
pub struct TabMemory {
    latest: Option<Arc<ObservationRecord>>,
    secrets: policy::SecretRegistry,
    refs: crate::observe::RefMemory,
    navigation_epoch: u64,
    console: ConsoleLog,
    /// The network boundary's hold on a tab the agent typed into (`guard.rs`).
    hold: Option<crate::guard::Held>,
}

impl std::fmt::Debug for TabMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets never reach a log.
        f.debug_struct("TabMemory")
            .field(
                "latest",
                &self.latest.as_ref().map(|r| r.frame_id.as_str().to_owned()),
            )
            .field("navigation_epoch", &self.navigation_epoch)
            .finish_non_exhaustive()
    }
}

impl Tab {
    /// Starts tracking an attached page session: enables the domains Glovebox needs, installs the
    /// isolated world in every current and future document, and follows child frames.
    pub async fn attach(session: Session) -> Result<Tab, BrowserError> {
        Tab::resume(session, TabMemory::default()).await
    }

    /// [`Tab::attach`] to a target this process was attached to before, carrying what the
    /// earlier attachment remembered (see [`TabMemory`]).
    pub async fn resume(session: Session, memory: TabMemory) -> Result<Tab, BrowserError> {
        let target_id = session
            .target_id()
            .cloned()
            .ok_or_else(|| BrowserError::Internal {
                reason: "a tab needs a target session".into(),
            })?;
        let state = Arc::new(Mutex::new(TabState {
            navigation_epoch: memory.navigation_epoch,
            secrets: memory.secrets,
            refs: memory.refs,
            console: memory.console,
            ..TabState::default()
        }));
        // Subscribe before enabling so the initial context announcements are not missed.
        let mut events = session.subscribe(&[
            "Page.frameNavigated",
            "Page.navigatedWithinDocument",
            "Runtime.executionContextCreated",
            "Runtime.executionContextDestroyed",
            "Runtime.executionContextsCleared",
            "Runtime.consoleAPICalled",
            "Runtime.exceptionThrown",
            "Log.entryAdded",
            "Inspector.detached",
            "Inspector.targetCrashed",
            "Page.javascriptDialogOpening",
            "Page.javascriptDialogClosed",
            "Page.windowOpen",
            "Page.downloadWillBegin",
            "Network.requestWillBeSent",
            "Network.webSocketCreated",
            "Network.webSocketClosed",
        ]);
        // Popups are announced at the browser level, with this tab as their opener.
        // So is the end of this session, whoever ended it (a detach from outside leaves the tab
        // open but this attachment dead).
        let mut opened = session
            .connection()
            .subscribe(cdp::EventFilter::session(None).methods([
                "Target.targetCreated",
                "Target.targetInfoChanged",
                "Target.detachedFromTarget",
            ]));
        let tracked = state.clone();
        let me = target_id.0.clone();
        let my_session = session.id().map(|id| id.0.clone());
        let events_task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    item = events.recv() => match item {
                        Some(Ok(event)) => on_event(&tracked, &event),
                        Some(Err(lagged)) => tracing::debug!(%lagged, "tab event stream lagged"),
                        None => break,
                    },
                    item = opened.recv() => match item {
                        Some(Ok(event)) if event.method == "Target.detachedFromTarget" => {
                            if my_session.is_some() && event.params.get("sessionId").and_then(serde_json::Value::as_str) == my_session.as_deref() {
                                lock(&tracked).lost.get_or_insert_with(|| "the debugger session was detached".to_owned());
                                break;
                            }
                        }
                        Some(Ok(event)) => {
                            if let Some(created) = event.parse::<cdp::domains::target::TargetInfoEvent>()
                                && let Some(id) = created.target_info.target_id.clone()
                                && id.0 != me
                            {
                                let info = &created.target_info;
                                let mut state = lock(&tracked);
                                if info.opener_id.as_ref().is_some_and(|o| o.0 == me) {
                                    if event.method == "Target.targetCreated" {
                                        state.opened.push(id.0);
                                        // The window it asked for, named by its opener.
                                        if !state.window_opens.is_empty() {
                                            state.window_opens.remove(0);
                                        }
                                    }
                                } else if info.opener_id.is_none() && info.target_type == "page" && !state.opened.contains(&id.0) {
                                    note_orphan(&mut state, id.0, info.url.clone());
                                }
                            }
                        }
                        Some(Err(_)) => {}
                        None => break,
                    },
                }
            }
            lock(&tracked).lost.get_or_insert_with(|| "the browser connection closed".to_owned());
        })
        .abort_handle();
        // The guard first: a frame that attaches while an action's window is open is covered
        // before it runs.
        let (guard, guard_task) = crate::guard::Guard::start(session.clone());
        // Sent together (a new tab's renderer answers them only once it runs; one after the
        // other they cost a wait each) and processed in this order, child auto-attach last.
        let browser = session.connection().browser();
        let (d, p, r, l, n, w, tree, children) = tokio::join!(
            browser.call(cdp::domains::target::SetDiscoverTargets { discover: true }),
            session.call(page::Enable {}),
            session.call(runtime::Enable {}),
            session.call(log::Enable {}),
            // Request tracking lets an action settle on the requests it started.
            session.call(cdp::domains::network::Enable {}),
            session.call(page::AddScriptToEvaluateOnNewDocument {
                source: WORLD_JS.to_owned(),
                world_name: Some(WORLD.to_owned()),
                run_immediately: Some(true),
            }),
            session.call(page::GetFrameTree {}),
            ChildTargets::enable_with(&session, Some(guard.preparer())),
        );
        let set_up = (|| {
            d?;
            p?;
            r?;
            l?;
            n?;
            w?;
            let tree = tree?;
            Ok::<_, cdp::CdpError>((tree, children?))
        })();
        let children = match set_up {
            Ok((tree, children)) => {
                lock(&state).main_frame_id = tree.frame_tree.frame.id;
                children
            }
            Err(e) => {
                guard_task.abort();
                return Err(e.into());
            }
        };
        guard.watch_children(children.view());
        let conn = session.connection();
        let popups = conn
            .gates_new_pages()
            .then(|| conn.watch_opener(target_id.clone(), guard.popup_hook()));
        // A tab typed into before this attachment is held again before anything else happens.
        if let Some(held) = memory.hold
            && let Err(e) = guard.restore(held).await
        {
            guard_task.abort();
            return Err(e);
        }
        Ok(Tab {
            session,
            target_id,
            children,
            state,
            barrier: RwLock::new(()),
            latest: Mutex::new(memory.latest),
            events: events_task,
            guard,
            guard_task,
            _popups: popups,
        })
    }

    /// The live session of the frame `observed` belonged to: this attachment's own session for
    /// the tab, the current child session for an out-of-process frame (backend node ids outlive
    /// sessions; session ids do not). A frame that is gone keeps its dead session, so its
    /// nodes resolve to `Stale`.
    pub(crate) fn live_session(&self, observed: &Session) -> Session {
        if observed.id() == self.session.id() {
            return observed.clone();
        }
        match observed.target_id() {
            Some(target) if *target == self.target_id => self.session.clone(),
            Some(target) => self
                .children
                .list()
                .into_iter()
                .find(|c| c.info.target_id.as_ref() == Some(target))
                .map_or_else(|| observed.clone(), |c| c.session),
            None => observed.clone(),
        }
    }

    /// What this attachment remembers, for the next [`Tab::resume`] of the same target.
    pub fn memory(&self) -> TabMemory {
        let state = lock(&self.state);
        TabMemory {
            latest: lock(&self.latest).clone(),
            secrets: state.secrets.clone(),
            refs: state.refs.clone(),
            navigation_epoch: state.navigation_epoch,
            console: state.console.clone(),
            hold: self.guard.hold(),
        }
    }

    /// Ends this attachment without closing the tab: lets go of held keys and buttons, stops
    /// Glovebox's world observers (a world outlives its session) and detaches the session, all
    /// within `deadline`. The page keeps running; [`Tab::resume`] attaches again. A session that
    /// is already gone (the target closed, the connection dropped) counts as detached.
    pub async fn detach(&self, deadline: Duration) -> Result<(), BrowserError> {
        let _ = tokio::time::timeout(deadline, self.release_input()).await;
        let contexts: Vec<i64> = lock(&self.state).worlds.values().copied().collect();
        let stops = contexts.into_iter().map(|context| {
            let session = &self.session;
            async move {
                let stop = runtime::Evaluate {
                    expression: "globalThis.__glovebox && globalThis.__glovebox.stop && globalThis.__glovebox.stop()".into(),
                    context_id: Some(context),
                    silent: Some(true),
                    ..Default::default()
                };
                let _ = session.call_with(stop, deadline).await;
            }
        });
        let _ = tokio::time::timeout(deadline, futures_util::future::join_all(stops)).await;
        let Some(id) = self.session.id().cloned() else {
            return Ok(());
        };
        let browser = self.session.connection().browser();
        match browser
            .call_with(
                cdp::domains::target::DetachFromTarget { session_id: id },
                deadline,
            )
            .await
        {
            // `Target.detachFromTarget` answers an error only when it knows no such session (it
            // detached already, or its target is gone); a closed connection took its sessions
            // with it. Each of these is detached.
            Ok(_)
            | Err(
                cdp::CdpError::Protocol { .. }
                | cdp::CdpError::Closed { .. }
                | cdp::CdpError::Detached { .. },
            ) => Ok(()),
            // No answer in time: the session may still be attached. The caller keeps a record.
            Err(e) => Err(e.into()),
        }
    }

    /// Creates a new tab (in `browser_context_id` when given, in a window of `window` — width,
    /// height — when given), attaches to it and tracks it.
    pub async fn open(
        browser: &Session,
        browser_context_id: Option<String>,
        window: Option<(u32, u32)>,
    ) -> Result<Tab, BrowserError> {
        let session = browser
            .create_page_sized("about:blank", browser_context_id, window)
            .await?;
        Tab::attach(session).await
    }

    /// The CDP session of the tab's main frame.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The CDP target id of the tab.
    pub fn target_id(&self) -> &TargetId {
        &self.target_id
    }

    /// The current navigation epoch (bumped by every main-frame navigation).
    pub fn navigation_epoch(&self) -> u64 {
        lock(&self.state).navigation_epoch
    }

    /// Navigates and waits for the `load` event, bounded by `deadline`.
    ///
    /// A helper for set-up and tests; the `navigate` action of the protocol adds policy checks on top.
    pub async fn goto(&self, url: &str, deadline: Duration) -> Result<(), BrowserError> {
        let _write = self.barrier.write().await;
        let mut loads = self.session.subscribe(&["Page.loadEventFired"]);
        let reply = self
            .session
            .call(page::Navigate {
                url: url.to_owned(),
                frame_id: None,
            })
            .await?;
        if let Some(error) = reply.error_text {
            return Err(BrowserError::Internal {
                reason: format!("navigation failed: {error}"),
            });
        }
        if reply.loader_id.is_none() {
            // Same-document navigation: no load event follows.
            return Ok(());
        }
        match tokio::time::timeout(deadline, loads.recv()).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(self.lost_error()),
            Err(_) => Err(BrowserError::Timeout {
                what: format!("loading {url}"),
                after_ms: deadline.as_millis() as u64,
            }),
        }
    }

    /// How many out-of-process child frames are attached right now.
    pub fn child_frame_count(&self) -> usize {
        self.children
            .list()
            .iter()
            .filter(|c| c.info.target_type == "iframe")
            .count()
    }

    /// Records a `Page.javascriptDialogOpening` seen by an operation before the tab's own event
    /// task got to it (the same update, so whichever comes first wins and the other is a no-op).
    pub(crate) fn note_dialog(&self, event: &cdp::Event) {
        if let Some(opening) = event.parse::<cdp::domains::page::JavascriptDialogOpening>() {
            let mut state = lock(&self.state);
            if state.dialog.is_none() {
                state.dialog = Some(Dialog {
                    kind: opening.dialog_type,
                    message: opening.message,
                });
                state.dialog_default_prompt = opening.default_prompt;
            }
        }
    }

    /// The dialog open right now, if any.
    pub fn dialog(&self) -> Option<Dialog> {
        lock(&self.state).dialog.clone()
    }

    /// Accepts or dismisses the open dialog (with text for a prompt).
    pub async fn handle_dialog(
        &self,
        accept: bool,
        prompt_text: Option<String>,
    ) -> Result<(), BrowserError> {
        if lock(&self.state).dialog.is_none() {
            return Err(BrowserError::NotActionable {
                reason: "no dialog is open".into(),
            });
        }
        self.session
            .call(page::HandleJavaScriptDialog {
                accept,
                prompt_text,
            })
            .await?;
        lock(&self.state).dialog = None;
        Ok(())
    }

    /// Targets (tabs, popups) this tab opened since it was attached.
    pub fn opened_targets(&self) -> Vec<String> {
        lock(&self.state).opened.clone()
    }

    /// Forgets collected console errors (e.g. at a run's start).
    pub fn clear_console(&self) {
        lock(&self.state).console.clear();
    }

    /// Why this attachment no longer works (the target closed or crashed, the session was
    /// detached from outside, the connection dropped), or `None` while it does.
    pub fn lost(&self) -> Option<String> {
        lock(&self.state).lost.clone()
    }

    pub(crate) fn check_alive(&self) -> Result<(), BrowserError> {
        match &lock(&self.state).lost {
            Some(reason) => Err(BrowserError::TargetLost {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn lost_error(&self) -> BrowserError {
        let reason = lock(&self.state)
            .lost
            .clone()
            .unwrap_or_else(|| "the tab's event stream ended".into());
        BrowserError::TargetLost { reason }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// How long a window this page asked for and a tab without an opener wait to be matched.
const WINDOW_MATCH: std::time::Duration = std::time::Duration::from_secs(5);

/// A page target without an opener: the tab a window this page asked for became, when its URL
/// is the one asked for within a few seconds (headless Chromium names no opener for a
/// modifier-click's tab). Anything else stays unattributed: never another tab's window.
fn note_orphan(state: &mut TabState, id: String, url: String) {
    let now = std::time::Instant::now();
    state
        .orphans
        .retain(|(other, _, at)| *other != id && now.duration_since(*at) < WINDOW_MATCH);
    state
        .window_opens
        .retain(|(_, at)| now.duration_since(*at) < WINDOW_MATCH);
    if let Some(i) = state
        .window_opens
        .iter()
        .position(|(wanted, _)| !url.is_empty() && *wanted == url)
    {
        state.window_opens.remove(i);
        state.opened.push(id);
    } else if state.orphans.len() < 16 {
        state.orphans.push((id, url, now));
    }
}

/// Records a `Page.downloadWillBegin`: from the tab's own event task, or from an action's settling
/// that saw it first (the same download once, by its guid).
pub(crate) fn note_download(state: &mut TabState, event: &cdp::Event) {
    let text = |k: &str| {
        event
            .params
            .get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let guid = text("guid");
    if state.downloads_began.len() < 16 && !state.downloads_began.iter().any(|(g, _)| *g == guid) {
        state
            .downloads_began
            .push((guid, text("suggestedFilename")));
    }
}

fn on_event(state: &Mutex<TabState>, event: &cdp::Event) {
    let mut state = lock(state);
    match event.method.as_str() {
        "Page.windowOpen" => {
            if let Some(open) = event.parse::<page::WindowOpen>() {
                let now = std::time::Instant::now();
                state
                    .orphans
                    .retain(|(_, _, at)| now.duration_since(*at) < WINDOW_MATCH);
                match state
                    .orphans
                    .iter()
                    .position(|(_, url, _)| *url == open.url)
                {
                    Some(i) => {
                        let (id, _, _) = state.orphans.remove(i);
                        state.opened.push(id);
                    }
                    None if state.window_opens.len() < 16 => {
                        state.window_opens.push((open.url, now))
                    }
                    None => {}
                }
            }
        }
        "Page.downloadWillBegin" => note_download(&mut state, event),
        "Network.requestWillBeSent" => {
            if let Some(key) = request_key(&event.params) {
                if state.recent_requests.len() >= 64 {
                    state.recent_requests.pop_front();
                }
                state
                    .recent_requests
                    .push_back((key, std::time::Instant::now()));
            }
        }
        "Network.webSocketCreated" => {
            let text = |k: &str| {
                event
                    .params
                    .get(k)
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            };
            if let (Some(id), Some(url)) = (text("requestId"), text("url"))
                && state.sockets.len() < 64
            {
                state.sockets.push((id, url, false));
            }
        }
        "Network.webSocketClosed" => {
            if let Some(id) = event.params.get("requestId").and_then(|v| v.as_str()) {
                state.sockets.retain(|(open, _, _)| open != id);
            }
        }
        "Page.frameNavigated" => {
            if let Some(nav) = event.parse::<page::FrameNavigated>()
                && nav.frame.parent_id.is_none()
            {
                state.navigation_epoch += 1;
                state.main_frame_id = nav.frame.id;
                state.console.clear();
            }
        }
        "Page.navigatedWithinDocument" => {
            if let Some(nav) = event.parse::<page::NavigatedWithinDocument>()
                && nav.frame_id == state.main_frame_id
            {
                state.navigation_epoch += 1;
            }
        }
        "Runtime.executionContextCreated" => {
            if let Some(created) = event.parse::<runtime::ExecutionContextCreated>()
                && created.context.name == WORLD
            {
                let aux = created
                    .context
                    .aux_data
                    .and_then(|a| serde_json::from_value::<ContextAux>(a).ok());
                if let Some(frame) = aux.and_then(|a| a.frame_id) {
                    state.worlds.insert(frame, created.context.id);
                }
            }
        }
        "Runtime.executionContextDestroyed" => {
            if let Some(destroyed) = event.parse::<runtime::ExecutionContextDestroyed>() {
                state
                    .worlds
                    .retain(|_, id| *id != destroyed.execution_context_id);
            }
        }
        "Runtime.executionContextsCleared" => state.worlds.clear(),
        "Runtime.consoleAPICalled" => {
            if let Some(called) = event.parse::<runtime::ConsoleApiCalled>()
                && (called.kind == "error" || called.kind == "assert")
            {
                let text = called
                    .args
                    .iter()
                    .map(|a| match &a.value {
                        Some(serde_json::Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                        None => a.description.clone().unwrap_or_default(),
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                state.console.push(&text);
            }
        }
        "Runtime.exceptionThrown" => {
            if let Some(thrown) = event.parse::<runtime::ExceptionThrown>() {
                state.console.push(&thrown.exception_details.message());
            }
        }
        "Log.entryAdded" => {
            if let Some(added) = event.parse::<log::EntryAdded>() {
                // Every page without a favicon logs its 404; it tells the model nothing.
                let favicon = added
                    .entry
                    .url
                    .as_deref()
                    .is_some_and(|u| u.ends_with("/favicon.ico"));
                if added.entry.level == "error" && !favicon {
                    let text = match added.entry.url {
                        Some(url) => format!("{} ({})", added.entry.text, policy::redact_url(&url)),
                        None => added.entry.text,
                    };
                    state.console.push(&text);
                }
            }
        }
        "Page.javascriptDialogOpening" => {
            if let Some(opening) = event.parse::<page::JavascriptDialogOpening>() {
                state.dialog = Some(Dialog {
                    kind: opening.dialog_type,
                    message: opening.message,
                });
                state.dialog_default_prompt = opening.default_prompt;
            }
        }
        "Page.javascriptDialogClosed" => state.dialog = None,
        "Inspector.detached" | "Inspector.targetCrashed" => {
            state
                .lost
                .get_or_insert_with(|| format!("{} ", event.method).trim().to_owned());
        }
        _ => {}
    }
}

/// A request's identity for telling the page's periodic requests from an action's: its method
/// and URL.
pub(crate) fn request_key(params: &serde_json::Value) -> Option<String> {
    let request = params.get("request")?;
    // Without the query: a poll that busts caches (`?t=…`) is the same poll.
    let url = request.get("url")?.as_str()?;
    Some(format!(
        "{} {}",
        request.get("method")?.as_str()?,
        url.split(['?', '#']).next().unwrap_or(url)
    ))
}
