//! `Tab::act`: one protocol action, executed only against the element or point the model saw, on
//! the frame it saw, after Playwright-style actionability checks; then settle, verify, receipt,
//! and a fresh observation.
//!
//! Before anything is sent: the `expected_frame_id` must be the tab's latest observation; the page
//! must still show the same document, URL and viewport (size, scale, zoom, scroll); a ref must
//! still resolve to the same node with the same role and name. A failed check returns an error
//! and sends nothing. Actionability (visible, stable across two animation frames, enabled,
//! editable for text, in the viewport, and receiving the pointer at the click point) is retried
//! within the action's deadline; a covered element is refused with the covering element named.

use std::time::{Duration, Instant};

use cdp::domains::accessibility::GetPartialAxTree;
use cdp::domains::dom::{Focus, GetContentQuads, GetNodeForLocation, ResolveNode, ScrollIntoViewIfNeeded};
use cdp::domains::input::{DispatchKeyEvent, DispatchMouseEvent, InsertText};
use cdp::domains::page;
use cdp::domains::runtime::{CallArgument, CallFunctionOn};
use cdp::EventStream;
use protocol::{Action, ActionKind, AnyTarget, ElementRef, FrameId, Observation, PointTarget, Receipt};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::BrowserError;
use crate::capture::{WorldState, evaluate_in, world_context};
use crate::keys::{Chord, KeyDef, parse_chord};
use crate::observe::{ObservationRecord, ObserveOptions, RefBinding};
use crate::tab::{Dialog, Tab, lock};

const ACTIONABILITY_JS: &str = include_str!("js/actionability.js");
const DESCRIBE_JS: &str = include_str!("js/describe.js");
const CONTAINS_JS: &str = include_str!("js/contains.js");

/// How `type` enters text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Typing {
    /// Insert like a paste; fall back to keystrokes when the value did not take.
    #[default]
    Auto,
    /// Insert like a paste only.
    Paste,
    /// Real key events for every character (for pages that listen to keys).
    Keystrokes,
}

/// How to run an action.
#[derive(Debug, Clone)]
pub struct ActOptions {
    /// Deadline for checks, dispatch and settling together.
    pub deadline: Duration,
    /// The observation taken after the action.
    pub observe: ObserveOptions,
    pub typing: Typing,
}

impl Default for ActOptions {
    fn default() -> Self {
        ActOptions { deadline: Duration::from_secs(10), observe: ObserveOptions::default(), typing: Typing::Auto }
    }
}

/// What an action did.
#[derive(Debug)]
pub struct ActOutcome {
    pub receipt: Receipt,
    /// The fresh observation after the action (absent while a dialog blocks the page).
    pub observation: Option<Observation>,
    /// Tabs or popups the page opened during the action (never adopted).
    pub opened: Vec<String>,
    /// A dialog the action opened.
    pub dialog: Option<Dialog>,
}

#[derive(Debug, Deserialize)]
struct Facts {
    connected: bool,
    tag: String,
    input_type: String,
    disabled: bool,
    editable: bool,
    value: Option<String>,
    checked: Option<bool>,
    /// Scroll offset of the element's own frame.
    scroll_x: f64,
    scroll_y: f64,
}

struct Resolved {
    element: ElementRef,
    binding: RefBinding,
    object_id: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Need {
    /// Pointer input: must receive the pointer at its centre.
    Pointer,
    /// Keyboard or programmatic input: visible, stable, enabled.
    Focus,
    /// Text entry: also editable.
    Edit,
}

const NAVIGATION_EVENTS: &[&str] = &[
    "Page.frameRequestedNavigation",
    "Page.frameStartedLoading",
    "Page.loadEventFired",
    "Page.javascriptDialogOpening",
    "Network.requestWillBeSent",
    "Network.loadingFinished",
    "Network.loadingFailed",
];

/// How long settling waits for requests the action started.
const REQUEST_SETTLE: Duration = Duration::from_millis(500);
/// How long settling waits for the DOM to go quiet when nothing navigates.
const DOM_SETTLE: Duration = Duration::from_millis(300);

impl Tab {
    /// Runs one action. `Err` means nothing was sent (stale frame, stale ref, not actionable,
    /// invalid); `Ok` carries a receipt that says what happened after dispatch.
    pub async fn act(&self, action: &Action, options: &ActOptions) -> Result<ActOutcome, BrowserError> {
        self.check_alive()?;
        let started = Instant::now();
        let until = started + options.deadline;
        let opened_before = lock(&self.state).opened.len();
        let receipt = {
            let _write = tokio::time::timeout(options.deadline, self.barrier.write())
                .await
                .map_err(|_| BrowserError::Timeout { what: "waiting for the tab's write barrier".into(), after_ms: options.deadline.as_millis() as u64 })?;
            if let Some(dialog) = lock(&self.state).dialog.clone() {
                return Err(BrowserError::NotActionable {
                    reason: format!("a {} dialog is open (\"{}\"); accept or dismiss it first", dialog.kind, dialog.message),
                });
            }
            let record = self.latest_observation().ok_or_else(|| BrowserError::Stale { reason: "this tab has not been observed yet".into() })?;
            check_frame(&record.frame_id, action.expected_frame_id())?;
            let now = self.read_world_now().await?;
            check_world(&record, &now)?;
            match tokio::time::timeout_at(until.into(), self.dispatch(action, &record, &now, options, until)).await {
                Ok(result) => result?,
                Err(_) => return Err(BrowserError::Timeout { what: format!("{} action", action.kind().as_str()), after_ms: options.deadline.as_millis() as u64 }),
            }
        };
        let (opened, dialog) = {
            let state = lock(&self.state);
            (state.opened[opened_before.min(state.opened.len())..].to_vec(), state.dialog.clone())
        };
        let observation = if dialog.is_none() && self.check_alive().is_ok() { self.observe(&options.observe).await.ok() } else { None };
        Ok(ActOutcome { receipt, observation, opened, dialog })
    }

    async fn read_world_now(&self) -> Result<WorldState, BrowserError> {
        let context = world_context(self).await?;
        let value = evaluate_in(&self.session, context, "globalThis.__glovebox.read()").await?;
        serde_json::from_value(value).map_err(|e| BrowserError::Internal { reason: format!("world state did not decode: {e}") })
    }

    async fn dispatch(&self, action: &Action, record: &ObservationRecord, now: &WorldState, options: &ActOptions, until: Instant) -> Result<Receipt, BrowserError> {
        let kind = action.kind();
        let frame = action.expected_frame_id().clone();
        // A background tab defers dialogs and throttles timers: the leased tab acts in front.
        if now.hidden {
            self.session.call(page::BringToFront {}).await?;
        }
        let mut nav = self.session.subscribe(NAVIGATION_EVENTS);
        match action {
            Action::Click { target, .. } | Action::Hover { target, .. } => {
                let (x, y, before) = match target {
                    AnyTarget::Element(t) => {
                        let resolved = self.resolve(record, &t.element).await?;
                        let (x, y) = self.actionable_point(&resolved, Need::Pointer, (now.width, now.height), until).await?;
                        (x, y, Some(resolved))
                    }
                    AnyTarget::Point(p) => {
                        let (x, y) = point_target(record, now, *p)?;
                        (x, y, None)
                    }
                };
                let checked_before = match &before {
                    Some(r) => self.facts(r).await.ok().and_then(|f| f.checked),
                    None => None,
                };
                if kind == ActionKind::Hover {
                    self.mouse_move(x, y).await?;
                    self.settle(&mut nav, until).await;
                    return Ok(Receipt::dispatched(kind, frame));
                }
                // Move, press and release go out together: a move waits for the next frame in the
                // renderer, and awaiting it alone would add that frame to every click.
                let (moved, clicked) = tokio::join!(self.mouse_move(x, y), self.mouse_click(x, y, "left", 1));
                moved?;
                clicked?;
                self.settle(&mut nav, until).await;
                // A checkbox or radio is verified by its state; other clicks have no own effect to check.
                if let (Some(r), Some(was)) = (before, checked_before) {
                    if let Ok(facts) = self.facts(&r).await {
                        if facts.checked == Some(!was) || (facts.checked == Some(true) && facts.input_type == "radio") {
                            return Ok(Receipt::confirmed(kind, frame));
                        }
                        return Ok(Receipt::failed(kind, frame, protocol::ErrorCode::InvalidAction, true, "clicked, but the control's checked state did not change"));
                    }
                }
                Ok(Receipt::dispatched(kind, frame))
            }
            Action::Type { target, text, .. } => {
                let resolved = self.resolve(record, &target.element).await?;
                self.actionable_point(&resolved, Need::Edit, (now.width, now.height), until).await?;
                let facts = self.facts(&resolved).await?;
                self.register_secret_if_needed(&resolved, text.as_str()).await;
                let value = self.enter_text(&resolved, &facts, text.as_str(), options.typing).await?;
                self.settle(&mut nav, until).await;
                if value.as_deref() == Some(text.as_str()) || (facts.editable && facts.tag != "input" && facts.tag != "textarea" && value.as_deref().map(str::trim_end) == Some(text.as_str().trim_end())) {
                    Ok(Receipt::confirmed(kind, frame))
                } else {
                    let got = value.map_or(0, |v| v.chars().count());
                    Ok(Receipt::failed(kind, frame, protocol::ErrorCode::InvalidAction, true, format!("the field holds {got} characters after typing, not the {} typed", text.as_str().chars().count())))
                }
            }
            Action::Press { target, key, .. } => {
                let chord = parse_chord(key.as_str()).ok_or_else(|| BrowserError::NotActionable {
                    reason: format!("unknown key {:?}: use names like Enter, Tab, Escape, ArrowDown, Control+A, Shift+Tab, or one character", key.as_str()),
                })?;
                let resolved = self.resolve(record, &target.element).await?;
                self.actionable_point(&resolved, Need::Focus, (now.width, now.height), until).await?;
                resolved.binding.session.call(Focus { backend_node_id: Some(resolved.binding.backend_node_id), object_id: None }).await?;
                self.press_chord(&chord).await?;
                self.settle(&mut nav, until).await;
                Ok(Receipt::dispatched(kind, frame))
            }
            Action::Scroll { delta_y, .. } => {
                let (x, y) = (now.width / 2.0, now.height / 2.0);
                self.session
                    .call(DispatchMouseEvent { event_type: "mouseWheel".into(), x, y, delta_x: Some(0.0), delta_y: Some(f64::from(delta_y.get())), ..Default::default() })
                    .await?;
                self.settle(&mut nav, until).await;
                let after = self.read_world_now().await?;
                if after.scroll_y != now.scroll_y || delta_y.get() == 0 {
                    Ok(Receipt::confirmed(kind, frame))
                } else {
                    Ok(Receipt::failed(kind, frame, protocol::ErrorCode::InvalidAction, true, "the page did not scroll (already at its end, or nothing scrollable under the centre)"))
                }
            }
            Action::Select { target, value, .. } => {
                let resolved = self.resolve(record, &target.element).await?;
                self.actionable_point(&resolved, Need::Focus, (now.width, now.height), until).await?;
                let facts = self.facts(&resolved).await?;
                if facts.tag != "select" {
                    return Err(BrowserError::NotActionable {
                        reason: format!(
                            "{} {} \"{}\" is not a native <select>; click it to open its list, observe, then click the option",
                            resolved.element.as_str(),
                            resolved.binding.role,
                            resolved.binding.name
                        ),
                    });
                }
                let chosen = self.call_on(&resolved, SELECT_JS, vec![json!(value.as_str())], false).await?;
                match chosen.get("error").and_then(Value::as_str) {
                    Some(error) => Err(BrowserError::NotActionable { reason: error.to_owned() }),
                    None => {
                        self.settle(&mut nav, until).await;
                        let facts = self.facts(&resolved).await?;
                        let wanted = chosen.get("value").and_then(Value::as_str).unwrap_or_default();
                        if facts.value.as_deref() == Some(wanted) {
                            Ok(Receipt::confirmed(kind, frame))
                        } else {
                            Ok(Receipt::failed(kind, frame, protocol::ErrorCode::InvalidAction, true, "the option did not stay selected"))
                        }
                    }
                }
            }
            Action::Navigate { url, .. } => {
                policy::check_navigation(url.as_str(), &policy::NavigationPolicy::default())
                    .map_err(|e| BrowserError::NotActionable { reason: e.to_string() })?;
                let mut loads = self.session.subscribe(&["Page.loadEventFired"]);
                let reply = self.session.call(page::Navigate { url: url.as_str().to_owned(), frame_id: None }).await?;
                if let Some(error) = reply.error_text {
                    return Ok(Receipt::failed(kind, frame, protocol::ErrorCode::InvalidAction, true, format!("navigation failed: {error}")));
                }
                if reply.loader_id.is_some() {
                    let left = until.saturating_duration_since(Instant::now());
                    if tokio::time::timeout(left, loads.recv()).await.is_err() {
                        return Ok(Receipt::unknown(kind, frame, "the page did not finish loading before the deadline"));
                    }
                }
                let after = self.read_world_now().await?;
                if same_document_url(&after.url, url.as_str()) {
                    Ok(Receipt::confirmed(kind, frame))
                } else {
                    Ok(Receipt::unknown(kind, frame, format!("landed on {}", policy::redact_url(&after.url))))
                }
            }
            Action::Wait { duration_ms, .. } => {
                let wanted = Duration::from_millis(u64::from(duration_ms.get()));
                tokio::time::sleep(wanted.min(until.saturating_duration_since(Instant::now()))).await;
                Ok(Receipt::confirmed(kind, frame))
            }
        }
    }

    /// A ref of `record` to its live node, or `Stale` if it is gone or is no longer what was seen.
    async fn resolve(&self, record: &ObservationRecord, element: &ElementRef) -> Result<Resolved, BrowserError> {
        let binding = record.binding(element).cloned().ok_or_else(|| BrowserError::Stale {
            reason: format!("{} is not a ref of frame {}", element.as_str(), record.frame_id.as_str()),
        })?;
        let label = format!("{} ({} \"{}\")", element.as_str(), binding.role, binding.name);
        let gone = |why: &str| BrowserError::Stale { reason: format!("{label} {why}") };
        let session = &binding.session;
        let (object, ax) = tokio::join!(
            session.call(ResolveNode { backend_node_id: Some(binding.backend_node_id), execution_context_id: None }),
            session.call(GetPartialAxTree { backend_node_id: Some(binding.backend_node_id), fetch_relatives: Some(false) }),
        );
        let object = object.map_err(|_| gone("is no longer in the page"))?;
        let object_id = object.object.object_id.ok_or_else(|| gone("is no longer in the page"))?;
        let ax = ax.map_err(|_| gone("is no longer in the page"))?;
        let node = ax.nodes.iter().find(|n| n.backend_dom_node_id == Some(binding.backend_node_id)).or(ax.nodes.first());
        let role = node.and_then(|n| n.role.as_ref()).and_then(|r| r.text()).unwrap_or_default();
        let name = node.and_then(|n| n.name.as_ref()).and_then(|r| r.text()).map(|n| crate::model::fold(&n)).unwrap_or_default();
        if role != binding.ax_role || name != binding.ax_name {
            return Err(BrowserError::Stale {
                reason: format!("{} changed: it was {} \"{}\", it is now {} \"{}\"", element.as_str(), binding.ax_role, binding.ax_name, role, name),
            });
        }
        let resolved = Resolved { element: element.clone(), binding, object_id };
        let facts = self.facts(&resolved).await?;
        if !facts.connected {
            return Err(gone("was removed from the page"));
        }
        Ok(resolved)
    }

    async fn call_on(&self, r: &Resolved, function: &str, args: Vec<Value>, await_promise: bool) -> Result<Value, BrowserError> {
        let reply = r
            .binding
            .session
            .call(CallFunctionOn {
                function_declaration: function.to_owned(),
                object_id: Some(r.object_id.clone()),
                arguments: args.into_iter().map(|v| CallArgument { value: Some(v), object_id: None }).collect(),
                return_by_value: Some(true),
                await_promise: Some(await_promise),
                ..Default::default()
            })
            .await?;
        if let Some(exception) = reply.exception_details {
            return Err(BrowserError::Internal { reason: format!("element script failed: {}", exception.message()) });
        }
        Ok(reply.result.value.unwrap_or(Value::Null))
    }

    async fn facts(&self, r: &Resolved) -> Result<Facts, BrowserError> {
        let value = self.call_on(r, ACTIONABILITY_JS, vec![], false).await?;
        serde_json::from_value(value).map_err(|e| BrowserError::Internal { reason: format!("element facts did not decode: {e}") })
    }

    /// Waits (within `until`) for the element to be visible, stable, enabled, in view and — for
    /// pointer input — the one receiving the pointer. Returns the point in top-level viewport pixels.
    async fn actionable_point(&self, r: &Resolved, need: Need, viewport: (f64, f64), until: Instant) -> Result<(f64, f64), BrowserError> {
        let label = format!("{} {} \"{}\"", r.element.as_str(), r.binding.role, r.binding.name);
        let mut attempt = 0u32;
        loop {
            let last_reason = match self.check_once(r, need, &label, viewport).await? {
                Ok(point) => return Ok(point),
                Err(reason) => reason,
            };
            attempt += 1;
            let pause = Duration::from_millis([0, 20, 50, 100, 100, 250][attempt.min(5) as usize]);
            if Instant::now() + pause >= until {
                return Err(BrowserError::NotActionable { reason: last_reason });
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// One pass of the checks: `Ok(Ok(point))`, `Ok(Err(reason))` to retry, `Err` to give up.
    async fn check_once(&self, r: &Resolved, need: Need, label: &str, viewport: (f64, f64)) -> Result<Result<(f64, f64), String>, BrowserError> {
        let facts = self.facts(r).await?;
        if !facts.connected {
            return Err(BrowserError::Stale { reason: format!("{label} was removed from the page") });
        }
        if facts.disabled {
            return Ok(Err(format!("{label} is disabled")));
        }
        if need == Need::Edit && !facts.editable && !is_settable_input(&facts) {
            return Err(BrowserError::NotActionable { reason: format!("{label} is not editable") });
        }
        let session = &r.binding.session;
        let Some(first) = self.quad_centre(r).await? else { return Ok(Err(format!("{label} is not visible"))) };
        let (ox, oy) = r.binding.frame_offset;
        // Stable: where it was when observed (an earlier frame), or the same box across two
        // animation frames now.
        let [bx, by, bw, bh] = r.binding.bounds;
        let unmoved = (first.0 + ox - (bx + bw / 2.0)).abs() <= 0.5 && (first.1 + oy - (by + bh / 2.0)).abs() <= 0.5;
        let second = if unmoved {
            first
        } else {
            self.call_on(r, "function () { return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true)))); }", vec![], true).await?;
            let Some(second) = self.quad_centre(r).await? else { return Ok(Err(format!("{label} is not visible"))) };
            if (first.0 - second.0).abs() > 0.5 || (first.1 - second.1).abs() > 0.5 {
                return Ok(Err(format!("{label} is moving")));
            }
            second
        };
        let (x, y) = (second.0 + ox, second.1 + oy);
        let (width, height) = viewport;
        if !(0.0..width).contains(&x) || !(0.0..height).contains(&y) {
            session.call(ScrollIntoViewIfNeeded { backend_node_id: Some(r.binding.backend_node_id), object_id: None }).await?;
            return Ok(Err(format!("{label} is outside the viewport")));
        }
        if need == Need::Pointer {
            // The hit test takes document coordinates of the node's own frame.
            let (hx, hy) = (second.0 + facts.scroll_x, second.1 + facts.scroll_y);
            let hit = match session
                .call(GetNodeForLocation { x: hx.round() as i64, y: hy.round() as i64, include_user_agent_shadow_dom: Some(false), ignore_pointer_events_none: Some(false) })
                .await
            {
                Ok(hit) => hit,
                Err(cdp::CdpError::Protocol { .. }) => return Ok(Err(format!("nothing receives the pointer at the centre of {label}"))),
                Err(e) => return Err(e.into()),
            };
            if hit.backend_node_id != r.binding.backend_node_id {
                let hit_object = session.call(ResolveNode { backend_node_id: Some(hit.backend_node_id), execution_context_id: None }).await?;
                let hit_id = hit_object.object.object_id.unwrap_or_default();
                let inside = session
                    .call(CallFunctionOn {
                        function_declaration: CONTAINS_JS.to_owned(),
                        object_id: Some(r.object_id.clone()),
                        arguments: vec![CallArgument { value: None, object_id: Some(hit_id.clone()) }],
                        return_by_value: Some(true),
                        ..Default::default()
                    })
                    .await?;
                if inside.result.value != Some(Value::Bool(true)) {
                    let described = session
                        .call(CallFunctionOn { function_declaration: DESCRIBE_JS.to_owned(), object_id: Some(hit_id), return_by_value: Some(true), ..Default::default() })
                        .await?;
                    let covering = described.result.value.and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_else(|| "another element".into());
                    return Ok(Err(format!("{label} is covered by {covering}")));
                }
            }
        }
        Ok(Ok((x, y)))
    }

    async fn quad_centre(&self, r: &Resolved) -> Result<Option<(f64, f64)>, BrowserError> {
        let quads = match r.binding.session.call(GetContentQuads { backend_node_id: Some(r.binding.backend_node_id), object_id: None }).await {
            Ok(q) => q.quads,
            Err(cdp::CdpError::Protocol { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(quads.iter().filter(|q| q.len() == 8).find_map(|q| {
            let area = ((q[0] * q[3] - q[2] * q[1]) + (q[2] * q[5] - q[4] * q[3]) + (q[4] * q[7] - q[6] * q[5]) + (q[6] * q[1] - q[0] * q[7])).abs() / 2.0;
            (area > 0.99).then(|| ((q[0] + q[2] + q[4] + q[6]) / 4.0, (q[1] + q[3] + q[5] + q[7]) / 4.0))
        }))
    }

    /// Sends one input event. A dialog the event opens blocks the renderer, and with it the
    /// reply, so an opening dialog also ends the wait: the input was delivered.
    async fn input<C: cdp::Command>(&self, command: C) -> Result<(), BrowserError> {
        let mut dialogs = self.session.subscribe(&["Page.javascriptDialogOpening"]);
        tokio::select! {
            reply = self.session.call(command) => reply.map(|_| ()).map_err(Into::into),
            _ = dialogs.recv() => Ok(()),
        }
    }

    async fn mouse_move(&self, x: f64, y: f64) -> Result<(), BrowserError> {
        self.input(DispatchMouseEvent { event_type: "mouseMoved".into(), x, y, button: Some("none".into()), ..Default::default() }).await
    }

    async fn mouse_click(&self, x: f64, y: f64, button: &str, count: i64) -> Result<(), BrowserError> {
        for event_type in ["mousePressed", "mouseReleased"] {
            if lock(&self.state).dialog.is_some() {
                break;
            }
            self.input(DispatchMouseEvent {
                    event_type: event_type.into(),
                    x,
                    y,
                    button: Some(button.into()),
                    buttons: Some(if event_type == "mousePressed" { 1 } else { 0 }),
                    click_count: Some(count),
                    ..Default::default()
                })
                .await?;
        }
        Ok(())
    }

    async fn key(&self, event_type: &str, def: &KeyDef, modifiers: i64, with_text: bool) -> Result<(), BrowserError> {
        if lock(&self.state).dialog.is_some() {
            return Ok(());
        }
        self.input(DispatchKeyEvent {
                event_type: event_type.into(),
                modifiers: Some(modifiers),
                text: if with_text { def.text.clone() } else { None },
                unmodified_text: if with_text { def.text.clone() } else { None },
                key: Some(def.key.clone()),
                code: Some(def.code.clone()),
                windows_virtual_key_code: Some(def.key_code),
                ..Default::default()
            })
            .await
    }

    async fn press_chord(&self, chord: &Chord) -> Result<(), BrowserError> {
        let mut held = 0;
        for (bit, def) in &chord.modifiers {
            held |= bit;
            self.key("rawKeyDown", def, held, false).await?;
        }
        // Text is typed only without Control, Alt or Meta (those make shortcuts, not characters).
        let types = chord.key.text.is_some() && held & (crate::keys::CONTROL | crate::keys::ALT | crate::keys::META) == 0;
        self.key(if types { "keyDown" } else { "rawKeyDown" }, &chord.key, held, types).await?;
        self.key("keyUp", &chord.key, held, false).await?;
        for (bit, def) in chord.modifiers.iter().rev() {
            held &= !bit;
            self.key("keyUp", def, held, false).await?;
        }
        Ok(())
    }

    /// Replaces the field's content with `text`; returns the value it then holds.
    async fn enter_text(&self, r: &Resolved, facts: &Facts, text: &str, typing: Typing) -> Result<Option<String>, BrowserError> {
        r.binding.session.call(Focus { backend_node_id: Some(r.binding.backend_node_id), object_id: None }).await?;
        if is_settable_input(facts) {
            // Native date, time and similar inputs take ISO values; no keystrokes can reach them reliably.
            self.call_on(r, SET_VALUE_JS, vec![json!(text)], false).await?;
            return Ok(self.facts(r).await?.value);
        }
        if typing != Typing::Keystrokes {
            self.call_on(r, SELECT_ALL_JS, vec![], false).await?;
            if text.is_empty() {
                self.press_chord(&parse_chord("Backspace").expect("a known key")).await?;
            } else {
                self.session.call(InsertText { text: text.to_owned() }).await?;
            }
            self.call_on(r, CHANGE_JS, vec![], false).await?;
            let value = self.facts(r).await?.value;
            if value.as_deref() == Some(text) || typing == Typing::Paste {
                return Ok(value);
            }
        }
        // Keystrokes: clear, then one key per character.
        self.call_on(r, SELECT_ALL_JS, vec![], false).await?;
        self.press_chord(&parse_chord("Backspace").expect("a known key")).await?;
        for c in text.chars() {
            let chord = match c {
                '\n' => parse_chord("Enter"),
                '\t' => parse_chord("Tab"),
                _ => None,
            };
            match chord {
                Some(chord) => self.press_chord(&chord).await?,
                None => {
                    let def = KeyDef { key: c.to_string(), code: String::new(), key_code: 0, text: Some(c.to_string()) };
                    self.key("keyDown", &def, 0, true).await?;
                    self.key("keyUp", &def, 0, false).await?;
                }
            }
        }
        self.call_on(r, CHANGE_JS, vec![], false).await?;
        Ok(self.facts(r).await?.value)
    }

    /// Text typed into a secret field is scrubbed from every later observation of this tab.
    async fn register_secret_if_needed(&self, r: &Resolved, text: &str) {
        let Ok(attrs) = self.call_on(r, ATTRS_JS, vec![], false).await else { return };
        let get = |k: &str| attrs.get(k).and_then(Value::as_str);
        let facts = policy::FieldFacts {
            tag: get("tag"),
            input_type: get("type"),
            autocomplete: get("autocomplete"),
            name: get("name"),
            id: get("id"),
            aria_label: get("aria_label"),
            label: Some(r.binding.name.as_str()),
            placeholder: get("placeholder"),
            role: Some(r.binding.role.as_str()),
        };
        if policy::classify_field(&facts).is_secret() {
            // Shorter than the registry's minimum cannot be scrubbed safely from text; the field's
            // own value is redacted by its classification anyway.
            let _ = lock(&self.state).secrets.add(text);
        }
    }

    /// After dispatch: follow a navigation the action requested to its load; else wait for the
    /// requests it started (≤ 500 ms) and a short DOM-quiet window (≤ 300 ms). Never past `until`.
    async fn settle(&self, events: &mut EventStream, until: Instant) {
        // Events the action caused were sent before its reply, so they are queued already.
        let mut navigating = false;
        let mut in_flight = std::collections::HashSet::new();
        let main_frame = lock(&self.state).main_frame_id.clone();
        let take = |event: &cdp::Event, navigating: &mut bool, in_flight: &mut std::collections::HashSet<String>| -> bool {
            let id = event.params.get("requestId").and_then(Value::as_str).map(str::to_owned);
            match event.method.as_str() {
                "Page.javascriptDialogOpening" => return true,
                "Page.frameRequestedNavigation" | "Page.frameStartedLoading" => {
                    *navigating |= event.params.get("frameId").and_then(Value::as_str) == Some(main_frame.as_str());
                }
                "Network.requestWillBeSent" => {
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
        while let Ok(Some(Ok(event))) = tokio::time::timeout(Duration::ZERO, events.recv()).await {
            if take(&event, &mut navigating, &mut in_flight) {
                return;
            }
        }
        if navigating {
            let left = until.saturating_duration_since(Instant::now()).min(Duration::from_secs(10));
            let _ = tokio::time::timeout(left, async {
                while let Some(Ok(event)) = events.recv().await {
                    if event.method == "Page.loadEventFired" || event.method == "Page.javascriptDialogOpening" {
                        break;
                    }
                }
            })
            .await;
            return;
        }
        let requests_until = Instant::now() + REQUEST_SETTLE.min(until.saturating_duration_since(Instant::now()));
        while !in_flight.is_empty() {
            let left = requests_until.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, events.recv()).await {
                Ok(Some(Ok(event))) => {
                    if take(&event, &mut navigating, &mut in_flight) {
                        return;
                    }
                }
                Ok(Some(Err(_))) => {}
                Ok(None) | Err(_) => break,
            }
        }
        self.dom_quiet(until).await;
    }

    /// Waits until neither structure nor text changed across one trip through the page's task
    /// queue (a zero-delay timer), at most 300 ms. Later asynchronous work is covered by the
    /// request tracking before it; anything slower shows up in the next observation.
    async fn dom_quiet(&self, until: Instant) {
        let quiet_until = Instant::now() + DOM_SETTLE.min(until.saturating_duration_since(Instant::now()));
        let Ok(context) = world_context(self).await else { return };
        let read = |delay_ms: u32| {
            let expression = format!(
                "new Promise(r => setTimeout(() => {{ const s = globalThis.__glovebox.read(); r([s.structural, s.text]); }}, {delay_ms}))"
            );
            tokio::time::timeout(
                Duration::from_millis(200),
                self.session.call(cdp::domains::runtime::Evaluate {
                    expression,
                    context_id: Some(context),
                    return_by_value: Some(true),
                    await_promise: Some(true),
                    ..Default::default()
                }),
            )
        };
        let Ok(Ok(first)) = read(0).await else { return };
        let mut last = first.result.value;
        while Instant::now() < quiet_until {
            if lock(&self.state).dialog.is_some() {
                return;
            }
            let Ok(Ok(reply)) = read(0).await else { return };
            let epochs = reply.result.value;
            if epochs.is_some() && epochs == last {
                return;
            }
            last = epochs;
        }
    }
}

fn check_frame(latest: &FrameId, expected: &FrameId) -> Result<(), BrowserError> {
    if latest != expected {
        return Err(BrowserError::Stale {
            reason: format!("frame {} is not the latest observation of this tab (that is {})", expected.as_str(), latest.as_str()),
        });
    }
    Ok(())
}

/// The page must still show what was observed: same document, URL and viewport.
fn check_world(record: &ObservationRecord, now: &WorldState) -> Result<(), BrowserError> {
    let was = &record.world;
    let reason = if was.doc != now.doc || was.url != now.url {
        Some("the page navigated since that observation")
    } else if was.width != now.width || was.height != now.height {
        Some("the viewport was resized since that observation")
    } else if was.dpr != now.dpr || was.scale != now.scale {
        Some("the device scale or zoom changed since that observation")
    } else if was.scroll_x != now.scroll_x || was.scroll_y != now.scroll_y {
        Some("the page scrolled since that observation")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(BrowserError::Stale { reason: reason.into() }),
        None => Ok(()),
    }
}

/// A point target: only from an observation that had a screenshot, inside its viewport, and only
/// while the page's structure is what the screenshot showed.
fn point_target(record: &ObservationRecord, now: &WorldState, point: PointTarget) -> Result<(f64, f64), BrowserError> {
    if record.screenshot_size.is_none() {
        return Err(BrowserError::NotActionable {
            reason: "a point target needs an observation with a screenshot; observe with a screenshot and use its frame_id".into(),
        });
    }
    protocol::coords::check_point_target(point, &record.viewport)
        .map_err(|e| BrowserError::NotActionable { reason: format!("point ({}, {}) is not in the viewport: {e}", point.x, point.y) })?;
    if record.world.structural != now.structural {
        return Err(BrowserError::Stale { reason: "the page's elements changed since the screenshot".into() });
    }
    Ok((f64::from(point.x), f64::from(point.y)))
}

fn is_settable_input(facts: &Facts) -> bool {
    facts.tag == "input" && matches!(facts.input_type.as_str(), "date" | "time" | "datetime-local" | "month" | "week" | "color" | "range")
}

fn same_document_url(landed: &str, wanted: &str) -> bool {
    let strip = |u: &str| u.split('#').next().unwrap_or(u).trim_end_matches('/').to_owned();
    strip(landed) == strip(wanted)
}

const SELECT_ALL_JS: &str = "function () { if (typeof this.select === 'function') { this.select(); return; } \
    if (this.isContentEditable) { const r = document.createRange(); r.selectNodeContents(this); const s = getSelection(); s.removeAllRanges(); s.addRange(r); } }";
const CHANGE_JS: &str = "function () { if (!this.isContentEditable) this.dispatchEvent(new Event('change', { bubbles: true })); }";
const SET_VALUE_JS: &str = "function (v) { this.value = v; this.dispatchEvent(new Event('input', { bubbles: true })); this.dispatchEvent(new Event('change', { bubbles: true })); }";
const ATTRS_JS: &str = "function () { const a = (n) => this.getAttribute ? this.getAttribute(n) : null; \
    return { tag: (this.tagName || '').toLowerCase(), type: a('type'), autocomplete: a('autocomplete'), name: a('name'), id: a('id'), aria_label: a('aria-label'), placeholder: a('placeholder') }; }";
const SELECT_JS: &str = r#"function (wanted) {
  const options = [...this.options];
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const match = options.find((o) => o.value === wanted) || options.find((o) => norm(o.label) === norm(wanted)) || options.find((o) => norm(o.textContent) === norm(wanted));
  if (!match) {
    const listed = options.slice(0, 20).map((o) => JSON.stringify(norm(o.label) || o.value)).join(', ');
    return { error: 'no option ' + JSON.stringify(wanted) + ' in this list; its options are: ' + listed + (options.length > 20 ? ', …' : '') };
  }
  if (match.disabled) return { error: 'option ' + JSON.stringify(norm(match.label)) + ' is disabled' };
  if (!this.multiple) this.value = match.value; else match.selected = true;
  this.dispatchEvent(new Event('input', { bubbles: true }));
  this.dispatchEvent(new Event('change', { bubbles: true }));
  return { value: this.value };
}"#;
