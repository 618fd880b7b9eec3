//! Settling after dispatch: follow a navigation the action requested to its load, else wait
//! briefly for the requests it started and for the DOM to go quiet. Never past the deadline;
//! not the dispatch itself.

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
];

/// How long settling waits for requests the action started.
const REQUEST_SETTLE: Duration = Duration::from_millis(500);
/// How long settling waits for the DOM to go quiet when nothing navigates.
const DOM_SETTLE: Duration = Duration::from_millis(300);
/// After requests the action started have finished: the page's own delay before the first
/// quiet check, so the code awaiting their responses has run.
const RESPONSE_GRACE_MS: u32 = 50;
/// How many times settling looks again for requests the page started while it waited.
const SETTLE_ROUNDS: usize = 3;

impl Tab {
    /// After dispatch: follow a navigation the action requested to its load; else wait for the
    /// requests it started (≤ 500 ms) and a short DOM-quiet window (≤ 300 ms). Never past `until`.
    pub(super) async fn settle(&self, events: &mut EventStream, until: Instant) {
        let started = Instant::now();
        let mut awaited = 0;
        let end = self.settle_inner(events, until, &mut awaited).await;
        let mut state = lock(&self.state);
        state.settled += started.elapsed();
        state.settled_by = end;
        state.awaited_requests += awaited;
    }

    async fn settle_inner(
        &self,
        events: &mut EventStream,
        until: Instant,
        awaited: &mut usize,
    ) -> SettleEnd {
        // Events the action caused were sent before its reply, so they are queued already.
        let mut navigating = false;
        // Where a navigation of the main frame got to: it loaded (or stopped loading), or it
        // stayed within the document (a fragment, `pushState`), which never fires a load.
        let mut arrived: Option<SettleEnd> = None;
        let mut in_flight = std::collections::HashSet::new();
        let (main_frame, periodic) = {
            let state = lock(&self.state);
            // Requests the page also sent before this action began: its own polling, which the
            // action neither started nor has to wait for (a busy page never goes quiet).
            let periodic: std::collections::HashSet<String> = match state.action_started {
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
        let take = |event: &cdp::Event,
                    navigating: &mut bool,
                    arrived: &mut Option<SettleEnd>,
                    in_flight: &mut std::collections::HashSet<String>,
                    awaited: &mut usize|
         -> bool {
            let id = event
                .params
                .get("requestId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let main =
                event.params.get("frameId").and_then(Value::as_str) == Some(main_frame.as_str());
            match event.method.as_str() {
                "Page.javascriptDialogOpening" => return true,
                "Page.navigatedWithinDocument" if main => *arrived = Some(SettleEnd::SameDocument),
                "Page.frameStoppedLoading" if main && *navigating => {
                    *arrived = Some(arrived.unwrap_or(SettleEnd::Loaded))
                }
                "Page.loadEventFired" if *navigating => *arrived = Some(SettleEnd::Loaded),
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
                    *navigating |= main;
                }
                "Network.requestWillBeSent" if is_periodic(event) => {}
                "Network.requestWillBeSent" => {
                    if id.as_ref().is_some_and(|id| !in_flight.contains(id)) {
                        *awaited += 1;
                    }
                    in_flight.extend(id);
                }
                "Network.loadingFinished" | "Network.loadingFailed" => {
                    if let Some(id) = id {
                        in_flight.remove(&id);
                    }
                }
                _ => {}
            }
            false
        };
        // A dialog the action opened is recorded here, at once: the tab's own event task may not
        // have got to it yet, and whatever reads the page next would block on the dialog.
        let dialog = |event: &cdp::Event| {
            if event.method == "Page.javascriptDialogOpening" {
                self.note_dialog(event);
            }
        };
        let requests_until =
            Instant::now() + REQUEST_SETTLE.min(until.saturating_duration_since(Instant::now()));
        for round in 0..SETTLE_ROUNDS {
            // Events the action (or, after the first round, the page meanwhile) caused.
            let mut started = false;
            while let Ok(Some(Ok(event))) =
                tokio::time::timeout(Duration::ZERO, events.recv()).await
            {
                dialog(&event);
                started |= event.method == "Network.requestWillBeSent" && !is_periodic(&event);
                if take(
                    &event,
                    &mut navigating,
                    &mut arrived,
                    &mut in_flight,
                    awaited,
                ) {
                    return SettleEnd::Dialog;
                }
            }
            if round > 0 && !started && !navigating {
                return SettleEnd::Quiet;
            }
            while !navigating && !in_flight.is_empty() {
                let left = requests_until.saturating_duration_since(Instant::now());
                match tokio::time::timeout(left, events.recv()).await {
                    Ok(Some(Ok(event))) => {
                        dialog(&event);
                        if take(
                            &event,
                            &mut navigating,
                            &mut arrived,
                            &mut in_flight,
                            awaited,
                        ) {
                            return SettleEnd::Dialog;
                        }
                    }
                    Ok(Some(Err(_))) => {}
                    Ok(None) | Err(_) => break,
                }
            }
            if navigating {
                let left = until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_secs(10));
                let waited = tokio::time::timeout(left, async {
                    while arrived.is_none() {
                        match events.recv().await {
                            Some(Ok(event)) => {
                                dialog(&event);
                                if take(
                                    &event,
                                    &mut navigating,
                                    &mut arrived,
                                    &mut in_flight,
                                    awaited,
                                ) {
                                    return SettleEnd::Dialog;
                                }
                            }
                            Some(Err(_)) => {}
                            None => return SettleEnd::Deadline,
                        }
                    }
                    arrived.unwrap_or(SettleEnd::Loaded)
                })
                .await
                .unwrap_or(SettleEnd::Deadline);
                if waited == SettleEnd::SameDocument {
                    // `hashchange` and `popstate` handlers run now: let their DOM updates land.
                    self.dom_quiet(until, 0, 0).await;
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
