//! The network boundary of agent actions (design: "agent-caused requests to origins outside the
//! grant are blocked at the network layer"). While an agent's action runs on a tab — from its
//! dispatch until its settling ends, and for [`TAIL`] after, for what its handlers start late —
//! every request of the tab is paused through CDP `Fetch` and judged:
//!
//! - to an origin the action may reach (the page's own, its frame's, trusted ones, those granted
//!   for the run, a destination a person approved): it goes on;
//! - a plain `GET` of a static subresource without a query (an image, a style sheet, a font, a
//!   script, media) goes on wherever it goes: a page loads those on its own, and they carry no
//!   data from it;
//! - anything else — a navigation, a form post, a `fetch`/XHR, a beacon or ping, an event
//!   stream, a redirect hop (each is paused again) — is failed (`BlockedByClient`) and reported.
//!
//! The window also ends when the tab's main frame commits a new document: that page's own loads
//! are its own (the navigation request itself, and each of its redirects, were judged).
//!
//! An out-of-process (cross-site) iframe, and the page's service worker, send their
//! requests on their own debugger sessions: the window covers each of the tab's such sessions
//! too — those attached when it opens, and one that attaches during it, before it is let run
//! ([`Guard::preparer`]). So a message the action makes the page post to its service worker
//! cannot have the worker send the data on.
//!
//! Once an action types into the tab (`ActOptions::guard_typed`), the tab is *held*: what the
//! agent typed is in the page (and its storage carries it across documents), and a page's own
//! script can send it at any time — an `input` listener's image path, a timer, the next page of
//! the site. From that action's dispatch on, and while the main frame is on an origin typed
//! into, every request of the tab and its judged children goes only to the origins judged for
//! the actions on it (the page's own, trusted ones, those a person approved, those a person
//! allowed for the tab) — static subresources included, actions or none. The hold pauses while
//! the main frame is on another web origin (that navigation was itself judged) and is in force
//! again when it comes back to one typed into, whose storage still has the text; an opaque
//! document (`data:`, `about:`) keeps it as it is. What it refuses is listed in the next
//! action's receipt and counted per origin for the person (`Guard::network_hold`). While the
//! hold is in force the runtime keeps the tab attached (`Surface::network_hold`). A WebSocket
//! is not an interceptable request: typing refuses while one to an origin the hold does not
//! allow is open, the document typed into is closed to new ones by a Content-Security-Policy
//! before the text is in it (`Tab::seal_sockets`), and one a later document of the origin opens
//! is named in the next receipt.
//!
//! A window the tab opens (`window.open`, a `target=_blank` link or form, `noopener` ones
//! too) is covered like one of its frames: on a connection whose new pages are gated (a browser
//! Glovebox launched, `cdp::Connection::gate_new_pages`), it is paused before it runs and
//! [`Guard::popup_hook`] turns interception on for it (while a window or a hold is in force),
//! follows its own frames and the windows it opens in turn, and then lets it run; its requests
//! are judged with the tab's.
//!
//! Outside those windows and holds the tab's traffic is not touched: what a page's own scripts
//! do without an agent action is the page's. Service workers are bypassed for the tab and its
//! frames, so the page's requests cannot be served around it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cdp::{ChildTarget, ChildView, Session, SessionId};
use serde_json::{Value, json};

/// How long after an action's settling its requests are still judged.
pub const TAIL: Duration = Duration::from_secs(2);

pub use surface::BlockedRequest;

/// A tab that holds what the agent typed (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The origins typed into: the hold is in force while the main frame is on one of them
    /// (their storage keeps what was typed; a page of the origin reads it back).
    origins: Vec<policy::Origin>,
    /// The main frame is on one of `origins` (or on an opaque document since).
    active: bool,
    /// Where the tab's requests may go while held.
    allowed: Vec<policy::Origin>,
    /// Origins refused while held, with counts (at most 32 origins).
    refused: Vec<(String, u64)>,
}

#[derive(Debug, Default)]
struct State {
    /// Origins requests may reach in the current window; `None` while nothing is armed.
    allowed: Option<Vec<policy::Origin>>,
    /// Set once an action typed into the tab; in force while `active`.
    held: Option<Held>,
    /// Between `arm` and the end of the action's settling.
    acting: bool,
    /// When the current window ends (set when an action's settling ends).
    disarm_at: Option<tokio::time::Instant>,
    /// How much longer than [`TAIL`] the current window lasts (it opened windows).
    tail_extra: Duration,
    enabled: bool,
    /// The child sessions (iframes, service workers) interception is on for (the
    /// tab's own is `enabled`).
    fetching: HashSet<SessionId>,
    blocked: Vec<BlockedRequest>,
}

impl State {
    /// The hold, while in force.
    fn holding(&self) -> Option<&Held> {
        self.held.as_ref().filter(|h| h.active)
    }

    fn holding_mut(&mut self) -> Option<&mut Held> {
        self.held.as_mut().filter(|h| h.active)
    }
}

/// One tab's guard: its `Fetch.requestPaused` handler, armed per action.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    session: Session,
    state: Arc<Mutex<State>>,
    /// Wakes the task when a window's end is set.
    wake: Arc<tokio::sync::Notify>,
    /// The tab's out-of-process frames and workers (set once, when the tab attaches them).
    children: Arc<OnceLock<ChildView>>,
    /// Held from a change of `enabled` until its `Fetch.enable`/`disable` commands are sent, so a
    /// window's end and the next window's start reach each session in the order they happened.
    io: Arc<tokio::sync::Mutex<()>>,
    /// The windows the tab opened (and theirs), each set up before it ran (`popup_hook`).
    popups: Popups,
}

/// A window the tab (or one of its windows) opened, as the new-page gate handed it over: its
/// session (attached before it ran), its own out-of-process frames, and the watch that sets up
/// the windows it opens in turn.
struct Popup {
    target: ChildTarget,
    children: Option<cdp::ChildTargets>,
    _opens: cdp::OpenerWatch,
}

/// A window outlives the tab that opened it (a turn's end closes the opener; the window is its
/// session's own tab by then): when the opener's guard goes, interception of the window's
/// sessions ends with it — no request of the window is left paused with nobody to answer it.
impl Drop for Popup {
    fn drop(&mut self) {
        let mut sessions = vec![self.target.session.clone()];
        if let Some(children) = &self.children {
            sessions.extend(children.list().into_iter().map(|c| c.session));
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                for session in sessions {
                    let _ = session
                        .send_raw("Fetch.disable", json!({}), Duration::from_secs(5))
                        .await;
                }
            });
        }
    }
}

impl std::fmt::Debug for Popup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Popup")
            .field("session", &self.target.session)
            .finish_non_exhaustive()
    }
}

type Popups = Arc<Mutex<Vec<Popup>>>;

/// At most this many windows of a tab are followed (the oldest is let go first).
const MAX_POPUPS: usize = 32;

/// The sessions a window must cover besides the tab's own: its judged out-of-process frames and
/// workers, the windows it opened and theirs.
fn covered(children: &OnceLock<ChildView>, popups: &Mutex<Vec<Popup>>) -> Vec<ChildTarget> {
    let mut all: Vec<ChildTarget> = children
        .get()
        .map(ChildView::list)
        .unwrap_or_default()
        .into_iter()
        .filter(judged_child)
        .collect();
    for popup in popups.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        all.push(popup.target.clone());
        if let Some(children) = &popup.children {
            all.extend(children.list().into_iter().filter(judged_child));
        }
    }
    all
}

/// The covered session with this id, if it is one (see [`covered`]).
fn covered_session(
    children: &OnceLock<ChildView>,
    popups: &Mutex<Vec<Popup>>,
    id: &SessionId,
) -> Option<Session> {
    if let Some(child) = children.get().and_then(|c| c.get(id)) {
        return Some(child.session);
    }
    popups
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find_map(|p| {
            if p.target.session.id() == Some(id) {
                Some(p.target.session.clone())
            } else {
                p.children.as_ref()?.view().get(id).map(|c| c.session)
            }
        })
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Static subresources a page loads by itself.
const STATIC: &[&str] = &[
    "Image",
    "Stylesheet",
    "Font",
    "Script",
    "Media",
    "TextTrack",
    "Manifest",
];

/// Turns interception on for `session` (the tab's, one of its iframes', or a worker's of its
/// own); for a frame, service workers are bypassed too. A session that is gone already answers
/// an error at once.
async fn intercept(session: &Session, frame: bool) -> Result<(), cdp::CdpError> {
    let bypass = async {
        if !frame {
            return Ok(());
        }
        // A window in a process of its own (a `noopener` link) that waits for the debugger
        // answers this only once it runs, which it does only after this hook: waiting the whole
        // 5 s for the reply held every such click that long. The command is sent at once and
        // applies when the window starts; a reply that does not come soon is not waited for.
        match tokio::time::timeout(
            Duration::from_millis(300),
            session.send_raw(
                "Network.setBypassServiceWorker",
                json!({"bypass": true}),
                Duration::from_secs(5),
            ),
        )
        .await
        {
            Ok(reply) => reply.map(|_| ()),
            Err(_) => Ok(()),
        }
    };
    let fetch = session.send_raw(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}),
        Duration::from_secs(5),
    );
    let (b, f) = tokio::join!(bypass, fetch);
    b.and(f).map(|_| ())
}

/// Whether `child` sends requests of its own that a window must judge: an out-of-process frame,
/// or the service worker the tab is attached to (a dedicated worker's requests are its frame's,
/// judged with them; a shared worker is the browser's target, not the tab's child).
fn judged_child(child: &ChildTarget) -> bool {
    matches!(
        child.info.target_type.as_str(),
        "iframe" | "service_worker" | "page"
    )
}

/// A frame's session (an out-of-process frame, or a window the tab opened): service workers are
/// bypassed for it.
fn is_frame(child: &ChildTarget) -> bool {
    matches!(child.info.target_type.as_str(), "iframe" | "page")
}

impl Guard {
    /// Starts answering paused requests of `session` (nothing is paused until armed). The same
    /// task ends a window when its tail runs out (no timer outlives the tab).
    pub(crate) fn start(session: Session) -> (Guard, tokio::task::AbortHandle) {
        let state = Arc::new(Mutex::new(State::default()));
        let mut events = session.subscribe(&["Fetch.requestPaused", "Page.frameNavigated"]);
        // Paused requests of the tab's children (filtered below to this tab's own).
        let mut child_events = session
            .connection()
            .subscribe(cdp::EventFilter::default().methods(["Fetch.requestPaused"]));
        let wake = Arc::new(tokio::sync::Notify::new());
        let children: Arc<OnceLock<ChildView>> = Arc::default();
        let io: Arc<tokio::sync::Mutex<()>> = Arc::default();
        let popups: Popups = Arc::default();
        let guard = Guard {
            session: session.clone(),
            state: state.clone(),
            wake: wake.clone(),
            children: children.clone(),
            io: io.clone(),
            popups: popups.clone(),
        };
        let task = tokio::spawn(async move {
            loop {
                let until = lock(&state).disarm_at;
                let tail = async {
                    match until {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                let item = tokio::select! {
                    item = events.recv() => item.map(|i| (i, None)),
                    Some(item) = child_events.recv() => {
                        let Ok(event) = item else { continue };
                        let child = event.session_id.as_ref().filter(|id| Some(*id) != session.id()).and_then(|id| covered_session(&children, &popups, id));
                        match child {
                            Some(child) => Some((Ok(event), Some(child))),
                            None => continue,
                        }
                    }
                    () = wake.notified() => continue,
                    () = tail => {
                        let _io = io.lock().await;
                        let disable = {
                            let mut s = lock(&state);
                            let due = s.disarm_at.is_some_and(|at| at <= tokio::time::Instant::now());
                            if due {
                                s.disarm_at = None;
                                s.allowed = None;
                            }
                            // A held tab stays intercepted past its windows.
                            let off = due && s.holding().is_none() && s.enabled;
                            if off {
                                s.enabled = false;
                            }
                            off.then(|| std::mem::take(&mut s.fetching))
                        };
                        if let Some(covered) = disable {
                            let covered = covered.into_iter().map(|id| session.child(id, None));
                            let disables = std::iter::once(session.clone()).chain(covered).map(|s| async move {
                                let _ = s.send_raw("Fetch.disable", json!({}), Duration::from_secs(5)).await;
                            });
                            futures_util::future::join_all(disables).await;
                        }
                        continue;
                    }
                };
                let Some((item, from)) = item else { break };
                let Ok(event) = item else { continue };
                if event.method == "Page.frameNavigated" {
                    // A new document in the main frame: the action's page is gone, and a hold
                    // ends once the frame is on another web origin.
                    if event.params.pointer("/frame/parentId").is_none() {
                        let url = event.params.pointer("/frame/url").and_then(Value::as_str).unwrap_or_default();
                        let mut s = lock(&state);
                        s.allowed = None;
                        if let Ok(now_on) = policy::Origin::parse(url)
                            && matches!(now_on.scheme(), policy::Scheme::Http | policy::Scheme::Https)
                            && let Some(held) = &mut s.held
                        {
                            let was = std::mem::replace(&mut held.active, held.origins.contains(&now_on));
                            if was && !held.active {
                                tracing::debug!(origin = %now_on.serialize_web(), "the tab left the origins it was typed into; its hold pauses");
                                if !s.acting && s.disarm_at.is_none() {
                                    // Interception ends at the task's next turn.
                                    s.disarm_at = Some(tokio::time::Instant::now());
                                }
                            }
                        }
                    }
                    continue;
                }
                let verdict = judge(&state, &event.params);
                // Answered on the session that paused it.
                let session = from.unwrap_or_else(|| session.clone());
                let id = event.params.get("requestId").and_then(Value::as_str).unwrap_or_default().to_owned();
                // Answered at once, off this loop: a slow reply never holds the next request.
                tokio::spawn(async move {
                    let (method, params) = match verdict {
                        None => ("Fetch.continueRequest", json!({"requestId": id})),
                        Some(_) => ("Fetch.failRequest", json!({"requestId": id, "errorReason": "BlockedByClient"})),
                    };
                    let _ = session.send_raw(method, params, Duration::from_secs(5)).await;
                });
            }
        })
        .abort_handle();
        (guard, task)
    }

    /// Judges every request from now on against `allowed` (plus the request's own exceptions).
    /// `typed_into`: the action types into the document at this URL, and the tab is held from
    /// now on. A held tab's list grows with each action's: what a person approved for one
    /// action on it, its requests may reach.
    pub(crate) async fn arm(
        &self,
        allowed: Vec<policy::Origin>,
        typed_into: Option<&str>,
    ) -> Result<(), crate::BrowserError> {
        let _io = self.io.lock().await;
        let enable = {
            let mut state = lock(&self.state);
            if let Some(url) = typed_into {
                let held = state.held.get_or_insert_with(|| Held {
                    origins: Vec::new(),
                    active: true,
                    allowed: Vec::new(),
                    refused: Vec::new(),
                });
                held.active = true;
                if let Ok(origin) = policy::Origin::parse(url)
                    && !held.origins.contains(&origin)
                    && held.origins.len() < 16
                {
                    held.origins.push(origin);
                }
            }
            if let Some(held) = state.holding_mut() {
                for origin in &allowed {
                    if !held.allowed.contains(origin) {
                        held.allowed.push(origin.clone());
                    }
                }
            }
            state.allowed = Some(allowed);
            state.disarm_at = None;
            state.acting = true;
            !std::mem::replace(&mut state.enabled, true)
        };
        if enable && let Err(e) = intercept(&self.session, true).await {
            lock(&self.state).enabled = false;
            return Err(e.into());
        }
        // The children already there; one that attaches from now on is covered before it runs.
        let uncovered: Vec<ChildTarget> = {
            let all = covered(&self.children, &self.popups);
            let fetching = &lock(&self.state).fetching;
            all.into_iter()
                .filter(|c| c.session.id().is_some_and(|id| !fetching.contains(id)))
                .collect()
        };
        let enabled = futures_util::future::join_all(
            uncovered
                .iter()
                .map(|c| async move { (c, intercept(&c.session, is_frame(c)).await) }),
        )
        .await;
        for (child, result) in enabled {
            match result {
                Ok(()) => {
                    lock(&self.state)
                        .fetching
                        .extend(child.session.id().cloned());
                }
                // Gone meanwhile: it sends nothing more.
                Err(
                    cdp::CdpError::Protocol { .. }
                    | cdp::CdpError::Detached { .. }
                    | cdp::CdpError::Closed { .. },
                ) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Follows the tab's child sessions (its out-of-process frames), once they are tracked.
    pub(crate) fn watch_children(&self, children: ChildView) {
        let _ = self.children.set(children);
    }

    /// What runs for each child session as it attaches, before it runs: an iframe or worker that
    /// attaches while a window is open has interception on before its first request.
    pub(crate) fn preparer(&self) -> cdp::Prepare {
        preparer(self.state.clone(), self.io.clone())
    }

    /// What runs for each window the tab opens, before it runs (the new-page gate's hook,
    /// `cdp::Connection::watch_opener`): the window is followed like one of the tab's frames —
    /// its requests are judged with the tab's while a window or a hold is in force, interception
    /// on before its first request — and so are its own frames and the windows it opens. It
    /// holds the guard weakly: the connection keeps it, the tab does not.
    pub(crate) fn popup_hook(&self) -> cdp::Prepare {
        popup_hook(
            Arc::downgrade(&self.state),
            Arc::downgrade(&self.io),
            Arc::downgrade(&self.popups),
        )
    }

    /// Ends the window [`TAIL`] from now, unless another action arms it meanwhile (the guard's
    /// task sees the new deadline at its next event; a window armed meanwhile clears it).
    pub(crate) fn disarm_later(&self) {
        {
            let mut state = lock(&self.state);
            state.acting = false;
            let extra = std::mem::take(&mut state.tail_extra);
            state.disarm_at = Some(tokio::time::Instant::now() + TAIL + extra);
        }
        // Wake the task so it waits for the new deadline.
        self.wake.notify_one();
    }

    /// Waits (up to `within`) until each window of `opened` (target ids the action opened) has
    /// been set up by [`Guard::popup_hook`], then keeps the action's window open [`TAIL`] longer
    /// than it would: on a loaded machine the browser hands a new window over, and the window
    /// sends its first request, well after the action settled, and a window an action opened is
    /// inside its window (issue 29; a form posted into a new window reached the attacker once,
    /// under `make test`'s load, when its request came after the tail).
    pub(crate) async fn await_windows(&self, opened: &[String], within: Duration) {
        // A browser whose new pages are not gated (a shared endpoint) sets none up.
        if !self.session.connection().gates_new_pages() {
            return;
        }
        let until = tokio::time::Instant::now() + within;
        loop {
            let set_up = {
                let popups = self.popups.lock().unwrap_or_else(|p| p.into_inner());
                opened.iter().all(|id| {
                    popups
                        .iter()
                        .any(|p| p.target.info.target_id.as_ref().is_some_and(|t| t.0 == *id))
                })
            };
            if set_up || tokio::time::Instant::now() >= until {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        lock(&self.state).tail_extra = TAIL;
    }

    /// Ends the window [`TAIL`] after the returned value is dropped, however the action ended
    /// (a failed or timed-out dispatch included): a guard is never left armed.
    pub(crate) fn disarm_on_drop(&self) -> Disarm<'_> {
        Disarm(self)
    }

    /// The requests refused since the last call.
    pub(crate) fn take_blocked(&self) -> Vec<BlockedRequest> {
        std::mem::take(&mut lock(&self.state).blocked)
    }

    /// The hold, to carry across a detach (`TabMemory`).
    pub(crate) fn hold(&self) -> Option<Held> {
        lock(&self.state).held.clone()
    }

    /// Whether the tab holds typed text, and where its requests may go meanwhile.
    pub(crate) fn held_allowed(&self) -> Option<Vec<policy::Origin>> {
        lock(&self.state).holding().map(|h| h.allowed.clone())
    }

    /// The hold as the person sees it.
    pub(crate) fn network_hold(&self) -> Option<surface::NetworkHold> {
        let state = lock(&self.state);
        let held = state.holding()?;
        Some(surface::NetworkHold {
            origins: held
                .origins
                .iter()
                .map(policy::Origin::serialize_web)
                .collect(),
            allowed: held
                .allowed
                .iter()
                .map(policy::Origin::serialize_web)
                .collect(),
            refused: held
                .refused
                .iter()
                .map(|(origin, requests)| surface::RefusedOrigin {
                    origin: origin.clone(),
                    requests: *requests,
                })
                .collect(),
        })
    }

    /// Holds again what a former attachment held: interception is on before the page is
    /// observed or acted on.
    pub(crate) async fn restore(&self, held: Held) -> Result<(), crate::BrowserError> {
        let allowed = held.active.then(|| held.allowed.clone());
        lock(&self.state).held = Some(held);
        if let Some(allowed) = allowed {
            self.arm(allowed, None).await?;
            self.disarm_later();
        }
        Ok(())
    }

    /// Lets the held tab's requests reach `origin` too (a person allowed it for this tab).
    /// `false`: the tab holds nothing, nothing to change.
    pub(crate) fn allow(&self, origin: &policy::Origin) -> bool {
        let mut state = lock(&self.state);
        match state.holding_mut() {
            Some(held) => {
                if !held.allowed.contains(origin) {
                    held.allowed.push(origin.clone());
                }
                let web = origin.serialize_web();
                held.refused.retain(|(o, _)| *o != web);
                true
            }
            None => false,
        }
    }
}

fn preparer(state: Arc<Mutex<State>>, io: Arc<tokio::sync::Mutex<()>>) -> cdp::Prepare {
    Arc::new(move |child: ChildTarget| {
        let (state, io) = (state.clone(), io.clone());
        Box::pin(async move {
            if judged_child(&child) {
                cover(&state, &io, &child).await;
            }
        })
    })
}

/// Turns interception on for `child` if the guard is enabled (a window or a hold is in force).
async fn cover(state: &Mutex<State>, io: &tokio::sync::Mutex<()>, child: &ChildTarget) {
    let Some(id) = child.session.id().cloned() else {
        return;
    };
    let _io = io.lock().await;
    if !lock(state).enabled {
        return;
    }
    match intercept(&child.session, is_frame(child)).await {
        Ok(()) => {
            lock(state).fetching.insert(id);
        }
        Err(e) => {
            tracing::warn!(error = %e, "request interception could not be turned on for a new frame, worker or window")
        }
    }
}

type WeakParts = (
    std::sync::Weak<Mutex<State>>,
    std::sync::Weak<tokio::sync::Mutex<()>>,
    std::sync::Weak<Mutex<Vec<Popup>>>,
);

fn popup_hook(
    state: std::sync::Weak<Mutex<State>>,
    io: std::sync::Weak<tokio::sync::Mutex<()>>,
    popups: std::sync::Weak<Mutex<Vec<Popup>>>,
) -> cdp::Prepare {
    let parts: WeakParts = (state, io, popups);
    Arc::new(move |window: ChildTarget| {
        let (state, io, popups) = parts.clone();
        Box::pin(async move {
            let (Some(state), Some(io), Some(list)) =
                (state.upgrade(), io.upgrade(), popups.upgrade())
            else {
                return;
            };
            tracing::debug!(opener = ?window.info.opener_id, "a window the tab opened is followed before it runs");
            cover(&state, &io, &window).await;
            // Its own out-of-process frames, and the windows it opens in turn.
            let children = cdp::ChildTargets::enable_with(
                &window.session,
                Some(preparer(state.clone(), io.clone())),
            )
            .await
            .ok();
            let opens = match window.session.target_id() {
                Some(target) => window.session.connection().watch_opener(
                    target.clone(),
                    popup_hook(
                        Arc::downgrade(&state),
                        Arc::downgrade(&io),
                        Arc::downgrade(&list),
                    ),
                ),
                None => return,
            };
            let mut list = list.lock().unwrap_or_else(|p| p.into_inner());
            if list.len() >= MAX_POPUPS {
                list.remove(0);
            }
            list.push(Popup {
                target: window,
                children,
                _opens: opens,
            });
        })
    })
}

/// Ends its guard's window when dropped (`Guard::disarm_on_drop`).
pub(crate) struct Disarm<'a>(&'a Guard);

impl Drop for Disarm<'_> {
    fn drop(&mut self) {
        self.0.disarm_later();
    }
}

/// A WebSocket origin as the web origin of its page's scheme (`ws://h:p` → `http://h:p`); `None`
/// for any other.
pub(crate) fn as_web(origin: &policy::Origin) -> Option<policy::Origin> {
    let (from, to) = match origin.scheme() {
        policy::Scheme::Ws => ("ws://", "http://"),
        policy::Scheme::Wss => ("wss://", "https://"),
        _ => return None,
    };
    let web = origin.serialize_web();
    policy::Origin::parse(&format!("{to}{}", web.strip_prefix(from)?)).ok()
}

/// `None` to let the request go, `Some` when it is refused (and recorded).
fn judge(state: &Mutex<State>, params: &Value) -> Option<BlockedRequest> {
    let url = params
        .pointer("/request/url")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let method = params
        .pointer("/request/method")
        .and_then(Value::as_str)
        .unwrap_or("GET");
    let kind = params
        .get("resourceType")
        .and_then(Value::as_str)
        .unwrap_or("Other");
    let mut state = lock(state);
    if state.allowed.is_none() && state.holding().is_none() {
        return None;
    }
    // Only web requests reach an origin (data:, blob: and the like stay in the browser).
    let scheme = url
        .split(':')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if !matches!(scheme.as_str(), "http" | "https" | "ws" | "wss") {
        return None;
    }
    // A web request whose origin cannot be read is refused: while armed, the guard fails closed.
    let origin = policy::Origin::parse(url).ok();
    if let Some(origin) = &origin {
        // A WebSocket's origin is its page's scheme's (`ws` is judged as `http`).
        let web = as_web(origin);
        let origin = web.as_ref().unwrap_or(origin);
        let reaches = |list: Option<&Vec<policy::Origin>>| list.is_some_and(|l| l.contains(origin));
        if reaches(state.allowed.as_ref()) || reaches(state.holding().map(|h| &h.allowed)) {
            return None;
        }
        // A static subresource carries nothing of the page's — unless the page holds typed
        // text: a keylogger writes it into an image's path.
        let plain = method.eq_ignore_ascii_case("GET") && !url.contains('?');
        if plain && STATIC.contains(&kind) && state.holding().is_none() {
            return None;
        }
    }
    let blocked = BlockedRequest {
        method: method.to_owned(),
        url: policy::redact_url(url),
        origin: origin.map_or_else(|| "(unreadable)".to_owned(), |o| o.serialize_web()),
        resource_type: kind.to_owned(),
    };
    tracing::info!(method = %blocked.method, url = %blocked.url, kind = %blocked.resource_type, "a request outside the action's origins was blocked");
    if state.blocked.len() < 64 {
        state.blocked.push(blocked.clone());
    }
    if let Some(held) = state.holding_mut() {
        let full = held.refused.len() >= 32;
        match held.refused.iter_mut().find(|(o, _)| *o == blocked.origin) {
            Some((_, n)) => *n += 1,
            None if !full => held.refused.push((blocked.origin.clone(), 1)),
            None => {}
        }
    }
    Some(blocked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paused(url: &str, method: &str, kind: &str) -> Value {
        json!({"requestId": "1", "request": {"url": url, "method": method}, "resourceType": kind})
    }

    #[test]
    fn requests_are_judged_by_origin_method_and_kind() {
        let state = Mutex::new(State {
            allowed: Some(vec![policy::Origin::parse("http://app.test").unwrap()]),
            ..State::default()
        });
        assert!(
            judge(&state, &paused("http://app.test/api", "POST", "Fetch")).is_none(),
            "the page's own origin"
        );
        assert!(
            judge(&state, &paused("https://cdn.test/lib.js", "GET", "Script")).is_none(),
            "a static subresource"
        );
        assert!(judge(&state, &paused("data:text/plain,x", "GET", "Fetch")).is_none());
        for (url, method, kind) in [
            ("https://evil.test/steal", "POST", "Document"),
            ("https://evil.test/collect?d=secret", "GET", "Image"),
            ("https://evil.test/b", "POST", "Ping"),
            ("https://evil.test/x", "GET", "XHR"),
            ("https://evil.test/", "GET", "Document"),
        ] {
            let blocked = judge(&state, &paused(url, method, kind))
                .unwrap_or_else(|| panic!("{url} {kind} passed"));
            assert_eq!(blocked.origin, "https://evil.test");
            assert!(!blocked.url.contains("secret"), "redacted: {}", blocked.url);
        }
        assert_eq!(lock(&state).blocked.len(), 5);
        // Fail closed: a web URL whose origin cannot be read is refused, even a "static" GET.
        let unreadable = judge(
            &state,
            &paused("http://exa mple.test/x.png", "GET", "Image"),
        );
        assert!(
            unreadable.is_some_and(|b| b.origin == "(unreadable)"),
            "an unreadable origin passed"
        );
        let idle = Mutex::new(State::default());
        assert!(
            judge(&idle, &paused("https://evil.test/steal", "POST", "Fetch")).is_none(),
            "nothing is judged while unarmed"
        );
    }
}
