//! A person's live view of the exact page and their real entry into it (`004_…` Resources 与统一
//! 操作预览, 让出控制的规则). The view has its own CDP attachment to the tab's target (never an
//! agent's lease): a CDP screencast of the page, frames bounded in rate and single-flight (the
//! browser sends the next frame only once the previous one is acknowledged, and the
//! acknowledgement waits out the minimum interval), each frame carrying the tab's resource id,
//! the view's binding generation, a sequence number and its capture time.
//!
//! Human input through the view (the real entry) is dispatched to the page as the person's own.
//! Input that acts — a pointer press (a click, the start of a text selection), a wheel scroll, a
//! key that types or commands (not Tab or Shift+Tab, not a lone modifier), a navigation — first
//! blocks new agent dispatch on the page's input scope at once and asks the run to pause, the
//! same single stop request as "pause agent, I'll take over" (`control.rs`); hover, pointer
//! release and key release do not. The person's input is never delayed for it.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::RuntimeError;
use crate::control::Control;
use crate::runtime::Runtime;

/// At most this many frames a second reach a view.
pub const VIEW_MAX_FPS: u32 = 10;
/// How long a liveness probe of the page may take before the view counts as stalled.
const PROBE_DEADLINE: Duration = Duration::from_millis(1000);
/// The largest frame the screencast sends (CSS px; the page's own size when smaller). Frames are
/// sent at the page's own size below it: a smaller cap made Chromium scale each frame, which cost
/// more CPU than it saved (`glovebox bench console`: 0.79–0.86 against 0.58–0.65 cores).
const MAX_FRAME: (u32, u32) = (1600, 1200);
/// The longest URL a person may navigate to from the view.
const MAX_URL: usize = 2048;

/// One frame of a view.
#[derive(Debug, Clone, Serialize)]
pub struct ViewFrame {
    /// The tab record (`GET /api/tabs`).
    pub resource: String,
    /// The view's binding generation: a frame of an older one is dropped by the viewer.
    pub generation: u64,
    /// In capture order, from 1 per binding.
    pub seq: u64,
    /// Capture time (ms since the epoch, the browser's clock).
    pub captured_at: u64,
    /// JPEG, base64.
    pub data: String,
    /// The page's viewport in CSS px (pointer coordinates are in it).
    pub width: f64,
    pub height: f64,
    /// The page's scroll offset when captured (a marker drawn for an older offset is stale).
    pub scroll_x: f64,
    pub scroll_y: f64,
}

/// A pointer event of a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointerEvent {
    Down,
    Up,
    Move,
    Wheel,
}

/// A key event of a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyEvent {
    Down,
    Up,
}

/// A history move of a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMove {
    Back,
    Forward,
    Reload,
}

/// A person's input through the real entry, as the console sends it.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case", deny_unknown_fields)]
pub enum PersonInput {
    Pointer {
        event: PointerEvent,
        x: f64,
        y: f64,
        #[serde(default)]
        button: Option<String>,
        #[serde(default)]
        click_count: Option<i64>,
        #[serde(default)]
        delta_x: Option<f64>,
        #[serde(default)]
        delta_y: Option<f64>,
        #[serde(default)]
        modifiers: Option<i64>,
    },
    Key {
        event: KeyEvent,
        key: String,
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        key_code: Option<i64>,
        #[serde(default)]
        modifiers: Option<i64>,
    },
    Navigate {
        url: String,
    },
    History {
        to: HistoryMove,
    },
}

const MODIFIER_KEYS: [&str; 8] = ["Shift", "Control", "Alt", "Meta", "AltGraph", "CapsLock", "OS", "Fn"];

impl PersonInput {
    /// Whether this input acts on the page (a pause of the agent), or only looks (hover, release,
    /// focus moves with Tab, a lone modifier).
    pub fn acts(&self) -> bool {
        match self {
            Self::Pointer { event, .. } => matches!(event, PointerEvent::Down | PointerEvent::Wheel),
            Self::Key { event: KeyEvent::Up, .. } => false,
            Self::Key { key, .. } => key != "Tab" && !MODIFIER_KEYS.contains(&key.as_str()),
            Self::Navigate { .. } | Self::History { .. } => true,
        }
    }

    fn check(&self) -> Result<(), RuntimeError> {
        let bad = |why: &str| Err(RuntimeError::InvalidAction(why.to_owned()));
        match self {
            Self::Pointer { x, y, delta_x, delta_y, button, click_count, modifiers, .. } => {
                let coordinate = |v: f64| v.is_finite() && (0.0..=100_000.0).contains(&v);
                if !coordinate(*x) || !coordinate(*y) {
                    return bad("a pointer position is a finite CSS px point inside the page");
                }
                if [delta_x, delta_y].into_iter().flatten().any(|d| !d.is_finite() || d.abs() > 100_000.0) {
                    return bad("a wheel delta is finite and at most 100000 px");
                }
                if button.as_deref().is_some_and(|b| !["none", "left", "middle", "right", "back", "forward"].contains(&b)) {
                    return bad("button is none, left, middle, right, back or forward");
                }
                if click_count.is_some_and(|c| !(0..=3).contains(&c)) || modifiers.is_some_and(|m| !(0..=15).contains(&m)) {
                    return bad("click_count is 0..3 and modifiers a bit set of 0..15");
                }
            }
            Self::Key { key, code, key_code, modifiers, .. } => {
                if key.is_empty() || key.len() > 32 || code.as_ref().is_some_and(|c| c.len() > 32) {
                    return bad("a key is named in at most 32 bytes");
                }
                if key_code.is_some_and(|c| !(0..=255).contains(&c)) || modifiers.is_some_and(|m| !(0..=15).contains(&m)) {
                    return bad("key_code is 0..255 and modifiers a bit set of 0..15");
                }
            }
            Self::Navigate { url } => {
                if url.len() > MAX_URL {
                    return bad("a URL is at most 2048 bytes");
                }
                let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
                if !matches!(scheme.as_deref(), Some("http" | "https")) {
                    return Err(RuntimeError::OriginDenied { reason: "a person's navigation from the console goes to an http or https URL".into() });
                }
            }
            Self::History { .. } => {}
        }
        Ok(())
    }
}

/// A person's live view of one tab (see the module docs). Detaches when dropped.
pub struct PersonView {
    entry: PersonEntry,
    frames: cdp::EventStream,
    generation: u64,
    seq: u64,
    casting: bool,
    /// The browser's id of the frame delivered last, not yet acknowledged.
    unacked: Option<i64>,
    last_delivered: Option<Instant>,
}

impl Runtime {
    /// Opens a person's view of a tab record that is open in this browser.
    pub async fn person_view(&self, resource: &str) -> Result<PersonView, RuntimeError> {
        let target = self.person_target(resource)?;
        let gone = || RuntimeError::Browser(browser::BrowserError::TargetLost { reason: "the tab is not open in this browser".into() });
        let browser = self.connection().browser();
        let session =
            tokio::time::timeout(Duration::from_secs(3), browser.attach(&cdp::TargetId(target.clone()))).await.map_err(|_| gone())?.map_err(|_| gone())?;
        let frames = session.subscribe(&["Page.screencastFrame"]);
        let generation = self.inner.view_generation.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let entry = PersonEntry { runtime: self.clone(), resource: resource.to_owned(), target, session };
        Ok(PersonView { entry, frames, generation, seq: 0, casting: false, unacked: None, last_delivered: None })
    }

    /// The live target of a tab record of this process (not one a person closed).
    pub(crate) fn person_target(&self, resource: &str) -> Result<String, RuntimeError> {
        let gone = || RuntimeError::Browser(browser::BrowserError::TargetLost { reason: "the tab is not open in this browser".into() });
        let record = self
            .inner
            .store
            .get_resource(&store::ResourceId::new(resource))
            .map_err(|_| RuntimeError::UnknownSurface { name: resource.to_owned(), known: "a tab of GET /api/tabs".into() })?;
        record
            .cdp_target_id
            .filter(|_| record.instance == Some(self.inner.instance) && !record.handle_lost && !record.closed_by_person)
            .map(|t| t.to_string())
            .ok_or_else(gone)
    }
}

/// The real entry of a view: input, liveness and control state; cheap to clone, so input can be
/// dispatched in order beside the frames.
#[derive(Clone)]
pub struct PersonEntry {
    runtime: Runtime,
    resource: String,
    target: String,
    session: cdp::Session,
}

impl PersonView {
    /// The view's real entry.
    pub fn entry(&self) -> PersonEntry {
        self.entry.clone()
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Starts (or resumes) the screencast: while the view is shown and on screen.
    pub async fn start(&mut self) -> Result<(), RuntimeError> {
        if self.casting {
            return Ok(());
        }
        let params = json!({"format": "jpeg", "quality": 60, "maxWidth": MAX_FRAME.0, "maxHeight": MAX_FRAME.1, "everyNthFrame": 1});
        self.entry.session.send_raw("Page.startScreencast", params, Duration::from_secs(3)).await.map_err(browser::BrowserError::from)?;
        self.casting = true;
        Ok(())
    }

    /// Stops the screencast (the view is hidden or off screen): no capture costs the page.
    pub async fn stop(&mut self) -> Result<(), RuntimeError> {
        if !self.casting {
            return Ok(());
        }
        self.casting = false;
        self.unacked = None;
        self.entry.session.send_raw("Page.stopScreencast", json!({}), Duration::from_secs(3)).await.map_err(browser::BrowserError::from)?;
        Ok(())
    }

    /// The next frame (waits while the screencast is stopped or the page does not change). The
    /// previous frame is acknowledged first, no sooner than the minimum interval after it was
    /// delivered, so frames are single-flight and at most [`VIEW_MAX_FPS`] a second.
    pub async fn next_frame(&mut self) -> Result<ViewFrame, RuntimeError> {
        loop {
            // Cancel-safe: the frame stays unacknowledged until the acknowledgement was sent.
            if let Some(id) = self.unacked {
                if let Some(last) = self.last_delivered {
                    let interval = Duration::from_millis(1000 / u64::from(VIEW_MAX_FPS));
                    tokio::time::sleep(interval.saturating_sub(last.elapsed())).await;
                }
                let _ = self.entry.session.send_raw("Page.screencastFrameAck", json!({"sessionId": id}), Duration::from_secs(3)).await;
                self.unacked = None;
            }
            if !self.casting {
                std::future::pending::<()>().await;
            }
            let event = match self.frames.recv().await {
                Some(Ok(event)) => event,
                Some(Err(_lagged)) => continue,
                None => return Err(RuntimeError::Browser(browser::BrowserError::TargetLost { reason: "the browser connection closed".into() })),
            };
            let p = &event.params;
            let Some(id) = p["sessionId"].as_i64() else { continue };
            self.unacked = Some(id);
            if !self.casting {
                continue;
            }
            let Some(data) = p["data"].as_str() else { continue };
            let m = &p["metadata"];
            self.seq += 1;
            self.last_delivered = Some(Instant::now());
            let captured_at = m["timestamp"].as_f64().map(|t| (t * 1000.0) as u64).unwrap_or_else(crate::runtime::now_ms);
            return Ok(ViewFrame {
                resource: self.entry.resource.clone(),
                generation: self.generation,
                seq: self.seq,
                captured_at,
                data: data.to_owned(),
                width: m["deviceWidth"].as_f64().unwrap_or(0.0),
                height: m["deviceHeight"].as_f64().unwrap_or(0.0),
                scroll_x: m["scrollOffsetX"].as_f64().unwrap_or(0.0),
                scroll_y: m["scrollOffsetY"].as_f64().unwrap_or(0.0),
            });
        }
    }
}

impl PersonEntry {
    /// Whether the page answers within a second (a page that does not paint because it is stuck
    /// is "last frame", not "live"; a page that does not change is live).
    pub async fn alive(&self) -> bool {
        self.runtime.person_target(&self.resource).is_ok()
            && tokio::time::timeout(PROBE_DEADLINE, self.session.send_raw("Page.getLayoutMetrics", json!({}), PROBE_DEADLINE)).await.is_ok_and(|r| r.is_ok())
    }

    /// The tab's control state for the person.
    pub fn control(&self) -> Control {
        self.runtime.control_of(&self.resource)
    }

    /// A person's input, dispatched to the page as theirs. Input that acts blocks the agent's
    /// dispatch on this page first (see the module docs); the answer is the control state after.
    pub async fn input(&self, input: PersonInput) -> Result<Control, RuntimeError> {
        input.check()?;
        if input.acts() {
            self.runtime.person_acts(&self.resource, &self.target);
        }
        let call = |method: &'static str, params: Value| async move {
            self.session.send_raw(method, params, Duration::from_secs(5)).await.map_err(|e| RuntimeError::Browser(browser::BrowserError::from(e)))
        };
        match input {
            PersonInput::Pointer { event, x, y, button, click_count, delta_x, delta_y, modifiers } => {
                let kind = match event {
                    PointerEvent::Down => "mousePressed",
                    PointerEvent::Up => "mouseReleased",
                    PointerEvent::Move => "mouseMoved",
                    PointerEvent::Wheel => "mouseWheel",
                };
                let mut params = json!({"type": kind, "x": x, "y": y, "modifiers": modifiers.unwrap_or(0)});
                if matches!(event, PointerEvent::Down | PointerEvent::Up) {
                    params["button"] = json!(button.unwrap_or_else(|| "left".into()));
                    params["clickCount"] = json!(click_count.unwrap_or(1));
                }
                if event == PointerEvent::Wheel {
                    params["deltaX"] = json!(delta_x.unwrap_or(0.0));
                    params["deltaY"] = json!(delta_y.unwrap_or(0.0));
                }
                call("Input.dispatchMouseEvent", params).await?;
            }
            PersonInput::Key { event, key, code, key_code, modifiers } => {
                let modifiers = modifiers.unwrap_or(0);
                // A printable key types its character unless a command modifier (Ctrl, Alt, Meta) is held.
                let text = match key.as_str() {
                    "Enter" => Some("\r".to_owned()),
                    k if k.chars().count() == 1 && modifiers & 0b0111 == 0 => Some(k.to_owned()),
                    _ => None,
                };
                let mut params = json!({"key": key, "modifiers": modifiers});
                if let Some(code) = code {
                    params["code"] = json!(code);
                }
                if let Some(c) = key_code {
                    params["windowsVirtualKeyCode"] = json!(c);
                }
                match event {
                    KeyEvent::Down => {
                        params["type"] = json!(if text.is_some() { "keyDown" } else { "rawKeyDown" });
                        if let Some(text) = text {
                            params["text"] = json!(text);
                            params["unmodifiedText"] = json!(text);
                        }
                    }
                    KeyEvent::Up => params["type"] = json!("keyUp"),
                }
                call("Input.dispatchKeyEvent", params).await?;
            }
            PersonInput::Navigate { url } => {
                call("Page.navigate", json!({"url": url})).await?;
            }
            PersonInput::History { to: HistoryMove::Reload } => {
                call("Page.reload", json!({})).await?;
            }
            PersonInput::History { to } => {
                let history = call("Page.getNavigationHistory", json!({})).await?;
                let current = history["currentIndex"].as_i64().unwrap_or(0);
                let index = current + if to == HistoryMove::Back { -1 } else { 1 };
                if let Some(entry) = history["entries"].as_array().and_then(|e| usize::try_from(index).ok().and_then(|i| e.get(i))) {
                    call("Page.navigateToHistoryEntry", json!({"entryId": entry["id"]})).await?;
                }
            }
        }
        Ok(self.control())
    }
}

impl Drop for PersonView {
    fn drop(&mut self) {
        let (browser, id, casting) = (self.entry.runtime.connection().browser(), self.entry.session.id().cloned(), self.casting);
        let session = self.entry.session.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if casting {
                    let _ = session.send_raw("Page.stopScreencast", json!({}), Duration::from_secs(2)).await;
                }
                if let Some(id) = id {
                    let _ = browser.call(cdp::domains::target::DetachFromTarget { session_id: id }).await;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(v: Value) -> PersonInput {
        serde_json::from_value(v).unwrap()
    }

    /// `004_…` 让出控制的规则: pointer down (a click, the start of a selection), wheel, typing and
    /// command keys, navigation pause the agent; hover, release, Tab/Shift+Tab and lone modifiers
    /// do not.
    #[test]
    fn only_input_that_acts_pauses_the_agent() {
        let acts = |v: Value| input(v).acts();
        assert!(acts(json!({"input": "pointer", "event": "down", "x": 1.0, "y": 2.0})));
        assert!(acts(json!({"input": "pointer", "event": "wheel", "x": 1.0, "y": 2.0, "delta_y": 100.0})));
        assert!(!acts(json!({"input": "pointer", "event": "move", "x": 1.0, "y": 2.0})));
        assert!(!acts(json!({"input": "pointer", "event": "up", "x": 1.0, "y": 2.0})));
        assert!(acts(json!({"input": "key", "event": "down", "key": "a"})));
        assert!(acts(json!({"input": "key", "event": "down", "key": "Enter"})));
        assert!(acts(json!({"input": "key", "event": "down", "key": "a", "modifiers": 2})));
        for key in ["Tab", "Shift", "Control", "Alt", "Meta"] {
            assert!(!acts(json!({"input": "key", "event": "down", "key": key, "modifiers": 8})), "{key}");
        }
        assert!(!acts(json!({"input": "key", "event": "up", "key": "a"})));
        assert!(acts(json!({"input": "navigate", "url": "https://example.com/"})));
        assert!(acts(json!({"input": "history", "to": "back"})));
    }

    #[test]
    fn bad_input_is_refused_with_a_closed_code_before_anything_is_sent() {
        let code = |v: Value| input(v).check().unwrap_err().code();
        use protocol::ErrorCode as C;
        assert_eq!(code(json!({"input": "pointer", "event": "down", "x": -1.0, "y": 2.0})), C::InvalidAction);
        assert_eq!(code(json!({"input": "pointer", "event": "down", "x": 1.0, "y": 1e9})), C::InvalidAction);
        assert_eq!(code(json!({"input": "pointer", "event": "down", "x": 1.0, "y": 1.0, "button": "fourth"})), C::InvalidAction);
        assert_eq!(code(json!({"input": "pointer", "event": "down", "x": 1.0, "y": 1.0, "click_count": 9})), C::InvalidAction);
        assert_eq!(code(json!({"input": "key", "event": "down", "key": ""})), C::InvalidAction);
        assert_eq!(code(json!({"input": "key", "event": "down", "key": "x".repeat(40)})), C::InvalidAction);
        assert_eq!(code(json!({"input": "navigate", "url": "javascript:alert(1)"})), C::OriginDenied);
        assert_eq!(code(json!({"input": "navigate", "url": "file:///etc/passwd"})), C::OriginDenied);
        assert_eq!(code(json!({"input": "navigate", "url": format!("https://a.example/{}", "x".repeat(3000))})), C::InvalidAction);
        assert!(input(json!({"input": "navigate", "url": "HTTPS://a.example/"})).check().is_ok());
        // Unknown fields and kinds do not parse at all.
        assert!(serde_json::from_value::<PersonInput>(json!({"input": "pointer", "event": "down", "x": 1.0, "y": 1.0, "extra": 1})).is_err());
        assert!(serde_json::from_value::<PersonInput>(json!({"input": "script", "code": "1"})).is_err());
    }
}
