//! Settling after dispatch: follow a navigation the action requested to its load, else wait
//! briefly for the requests it started and for the DOM to go quiet. Never past the deadline;
//! not the dispatch itself.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use cdp::EventStream;
use serde_json::Value;

use crate::SettleEnd;
use crate::capture::world_context;
use crate::tab::{Tab, lock};

/// Events an action subscribes to before dispatch, so settling sees what the action caused.
pub(super) const NAVIGATION_EVENTS: &[&str] = &[
    "Page.frameRequestedNavigation",
    "Page.frameStartedLoading",
    "Page.loadEventFired",
    "Page.frameStoppedLoading",
    "Page.navigatedWithinDocument",
    "Page.javascriptDialogOpening",
    "Network.requestWillBeSent",
    "Network.loadingFinished",
    "Network.loadingFailed",
    "Network.responseReceived",
    "Page.downloadWillBegin",
];

/// How long settling waits for requests the action started.
const REQUEST_SETTLE: Duration = Duration::from_millis(500);
/// How long settling waits for the DOM to go quiet when nothing navigates.
const DOM_SETTLE: Duration = Duration::from_millis(300);
/// After requests the action started have finished: the page's own delay before the first
/// quiet check, so the code awaiting their responses has run.
const RESPONSE_GRACE_MS: u32 = 50;
/// How long settling waits for Chromium to announce a download after the main frame's document
/// request was cancelled without a document (it came 2–8 ms after the frame stopped loading).
const DOWNLOAD_GRACE: Duration = Duration::from_millis(250);
/// How many times settling looks again for requests the page started while it waited.
const SETTLE_ROUNDS: usize = 3;

/// What settling has seen of the action's effects so far.
#[derive(Default)]
struct Progress {
    /// The main frame began navigating.
    navigating: bool,
    /// Where that navigation got to: it loaded (or stopped loading), or it stayed within the
    /// document (a fragment, `pushState`), which never fires a load.
    arrived: Option<SettleEnd>,
    /// Requests the action (or the page after it) started that have not ended.
    in_flight: HashSet<String>,
    /// How many requests settling waited for.
    awaited: usize,
    /// The main frame's document requests.
    documents: HashSet<String>,
    /// The last of them was cancelled without a document, not for a 204 or 205: a download
    /// (Chromium hands the response to its download manager and announces it a few ms after the
    /// frame stops loading), or a navigation the page stopped.
    document_cancelled: bool,
    /// The page began a download (noted on the tab).
    download_began: bool,
}

impl Tab {
    /// After dispatch: follow a navigation the action requested to its load; else wait for the
    /// requests it started (≤ 500 ms) and a short DOM-quiet window (≤ 300 ms). Never past `until`.
    pub(super) async fn settle(&self, events: &mut EventStream, until: Instant) {
        let started = Instant::now();
        let mut progress = Progress::default();
        let end = self.settle_inner(events, until, &mut progress).await;
        let mut state = lock(&self.state);
        state.settled += started.elapsed();
        state.settled_by = end;
        state.awaited_requests += progress.awaited;
    }

    async fn settle_inner(
        &self,
        events: &mut EventStream,
        until: Instant,
        progress: &mut Progress,
    ) -> SettleEnd {
        // Events the action caused were sent before its reply, so they are queued already.
        let (main_frame, periodic) = {
            let state = lock(&self.state);
            // Requests the page also sent before this action began: its own polling, which the
            // action neither started nor has to wait for (a busy page never goes quiet).
            let periodic: HashSet<String> = match state.action_started {
                Some(started) => state
                    .recent_requests
                    .iter()
                    .filter(|(_, at)| *at < started)
                    .map(|(k, _)| k.clone())
                    .collect(),
                None => Default::default(),
            };
            (state.main_frame_id.clone(), periodic)
        };
        let is_periodic = |event: &cdp::Event| {
            crate::tab::request_key(&event.params).is_some_and(|k| periodic.contains(&k))
        };
        // Takes one event into `progress`; true when a dialog opened (settling ends there: whatever
        // reads the page next would block on it). A dialog or a download the action began is
        // recorded on the tab at once: the tab's own event task may not have got to it yet.
        let take = |event: &cdp::Event, progress: &mut Progress| -> bool {
            let id = event
                .params
                .get("requestId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let main =
                event.params.get("frameId").and_then(Value::as_str) == Some(main_frame.as_str());
            match event.method.as_str() {
                "Page.javascriptDialogOpening" => {
                    self.note_dialog(event);
                    return true;
                }
                "Page.downloadWillBegin" => {
                    crate::tab::note_download(&mut lock(&self.state), event);
                    progress.download_began = true;
                }
                "Page.navigatedWithinDocument" if main => {
                    progress.arrived = Some(SettleEnd::SameDocument)
                }
                "Page.frameStoppedLoading" if main && progress.navigating => {
                    progress.arrived = Some(progress.arrived.unwrap_or(SettleEnd::Loaded))
                }
                "Page.loadEventFired" if progress.navigating => {
                    progress.arrived = Some(SettleEnd::Loaded)
                }
                // A navigation requested into another tab or window (a Ctrl-, Shift- or middle-click
                // on a link: disposition newTab/newWindow), or a download, leaves this page as it
                // is: waiting for its load here stalled the action until its deadline.
                "Page.frameRequestedNavigation"
                    if event
                        .params
                        .get("disposition")
                        .and_then(Value::as_str)
                        .is_some_and(|d| d != "currentTab") => {}
                "Page.frameRequestedNavigation" | "Page.frameStartedLoading" => {
                    progress.navigating |= main;
                }
                "Network.requestWillBeSent" => {
                    // A document of the main frame is a navigation, never the page's polling,
                    // even to a URL it asked for before (the same export link, clicked again).
                    let document = main
                        && event.params.get("type").and_then(Value::as_str) == Some("Document");
                    if let Some(id) = id {
                        if document {
                            progress.documents.insert(id.clone());
                        }
                        if !is_periodic(event) && progress.in_flight.insert(id) {
                            progress.awaited += 1;
                        }
                    }
                }
                // A 204 or 205 is cancelled too, and never a download.
                "Network.responseReceived" => {
                    let status = event
                        .params
                        .pointer("/response/status")
                        .and_then(Value::as_u64);
                    if let Some(id) = id
                        && matches!(status, Some(204 | 205))
                    {
                        progress.documents.remove(&id);
                    }
                }
                "Network.loadingFinished" | "Network.loadingFailed" => {
                    if let Some(id) = id {
                        progress.in_flight.remove(&id);
                        if progress.documents.contains(&id) {
                            // The last document request decides (a later navigation that loads
                            // replaced a cancelled one).
                            progress.document_cancelled = event.method == "Network.loadingFailed"
                                && event.params.get("canceled").and_then(Value::as_bool)
                                    == Some(true);
                        }
                    }
                }
                _ => {}
            }
            false
        };
        let requests_until =
            Instant::now() + REQUEST_SETTLE.min(until.saturating_duration_since(Instant::now()));
        for round in 0..SETTLE_ROUNDS {
            // Events the action (or, after the first round, the page meanwhile) caused.
            let mut started = false;
            while let Ok(Some(Ok(event))) =
                tokio::time::timeout(Duration::ZERO, events.recv()).await
            {
                started |= event.method == "Network.requestWillBeSent" && !is_periodic(&event);
                if take(&event, progress) {
                    return SettleEnd::Dialog;
                }
            }
            if round > 0 && !started && !progress.navigating {
                return SettleEnd::Quiet;
            }
            while !progress.navigating && !progress.in_flight.is_empty() {
                let left = requests_until.saturating_duration_since(Instant::now());
                match tokio::time::timeout(left, events.recv()).await {
                    Ok(Some(Ok(event))) => {
                        if take(&event, progress) {
                            return SettleEnd::Dialog;
                        }
                    }
                    Ok(Some(Err(_))) => {}
                    Ok(None) | Err(_) => break,
                }
            }
            if progress.navigating {
                let left = until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_secs(10));
                let waited = tokio::time::timeout(left, async {
                    while progress.arrived.is_none() {
                        match events.recv().await {
                            Some(Ok(event)) => {
                                if take(&event, progress) {
                                    return SettleEnd::Dialog;
                                }
                            }
                            Some(Err(_)) => {}
                            None => return SettleEnd::Deadline,
                        }
                    }
                    progress.arrived.unwrap_or(SettleEnd::Loaded)
                })
                .await
                .unwrap_or(SettleEnd::Deadline);
                match waited {
                    // `hashchange` and `popstate` handlers run now: let their DOM updates land.
                    SettleEnd::SameDocument => self.dom_quiet(until, 0, 0).await,
                    // The document never came: if that was a download, Chromium announces it
                    // just after the frame stops loading, and the receipt is to name it.
                    SettleEnd::Loaded
                        if progress.document_cancelled && !progress.download_began =>
                    {
                        let left = until
                            .saturating_duration_since(Instant::now())
                            .min(DOWNLOAD_GRACE);
                        let dialog = tokio::time::timeout(left, async {
                            while !progress.download_began {
                                match events.recv().await {
                                    Some(Ok(event)) => {
                                        if take(&event, progress) {
                                            return true;
                                        }
                                    }
                                    Some(Err(_)) => {}
                                    None => break,
                                }
                            }
                            false
                        })
                        .await;
                        if dialog == Ok(true) {
                            return SettleEnd::Dialog;
                        }
                    }
                    _ => {}
                }
                return waited;
            }
            // A request's end reaches us from the network side before the page has run the code
            // that waits on it (`await fetch(…)` then a DOM update): give the page that moment first.
            self.dom_quiet(until, if started { RESPONSE_GRACE_MS } else { 0 }, 0)
                .await;
            // The quiet check went through the page's task queue, so a request the action's
            // handlers started has been reported by now even when its event came after the
            // input's reply (the renderer sends it on another channel): the next round looks.
            if Instant::now() >= requests_until {
                return SettleEnd::Quiet;
            }
        }
        SettleEnd::Quiet
    }

    /// Waits until neither structure nor text changed across `gap_ms` (0: one trip through the
    /// page's task queue, a zero-delay timer), at most 300 ms. After an action, later
    /// asynchronous work is covered by the request tracking before it; anything slower shows up
    /// in the next observation. One round trip: the page itself reads its change counters after
    /// `first_delay_ms`, then again every `gap_ms`, until two reads agree or the window ends. A
    /// dialog the page opens meanwhile blocks it: the wait ends there, and the dialog is noted.
    pub(crate) async fn dom_quiet(&self, until: Instant, first_delay_ms: u32, gap_ms: u32) {
        let window = DOM_SETTLE.min(until.saturating_duration_since(Instant::now()));
        let Ok(context) = world_context(self).await else {
            return;
        };
        let expression = format!(
            "new Promise(r => {{ const end = performance.now() + {}; let last = null; \
             const look = () => {{ try {{ const s = globalThis.__glovebox.read(); const now = s.structural + ':' + s.text; \
             if (now === last || performance.now() >= end) r(true); else {{ last = now; setTimeout(look, {gap_ms}); }} }} catch (e) {{ r(false); }} }}; \
             setTimeout(look, {first_delay_ms}); }})",
            window.as_millis()
        );
        let mut dialogs = self.session.subscribe(&["Page.javascriptDialogOpening"]);
        // One that opened before the subscription blocks the page as well: nothing to wait for.
        if lock(&self.state).dialog.is_some() {
            return;
        }
        let quiet = tokio::time::timeout(
            window + Duration::from_millis(first_delay_ms.into()) + Duration::from_millis(50),
            self.session.call(cdp::domains::runtime::Evaluate {
                expression,
                context_id: Some(context),
                return_by_value: Some(true),
                await_promise: Some(true),
                ..Default::default()
            }),
        );
        tokio::select! {
            _ = quiet => {}
            event = dialogs.recv() => {
                if let Some(Ok(event)) = event {
                    self.note_dialog(&event);
                }
            }
        }
    }
}
