//! The eight `glovebox.actions/1` actions, and the bodies the extended set shares with them
//! (typing, pressing, clicking an element with its checked-state verification); not the
//! extended-only actions (see `extended.rs`).

use std::time::{Duration, Instant};

use cdp::EventStream;
use cdp::domains::dom::Focus;
use cdp::domains::page;
use protocol::{Action, ActionKind, AnyTarget, FrameId, Receipt};

use super::element::{Need, Resolved};
use super::select::Choice;
use super::{ActOptions, Typing, point_target, same_document_url};
use crate::BrowserError;
use crate::capture::WorldState;
use crate::keys::{Chord, parse_chord};
use crate::observe::ObservationRecord;
use crate::tab::Tab;

impl Tab {
    pub(super) async fn dispatch(
        &self,
        action: &Action,
        record: &ObservationRecord,
        now: &WorldState,
        options: &ActOptions,
        until: Instant,
    ) -> Result<Receipt, BrowserError> {
        let kind = action.kind();
        let frame = action.expected_frame_id().clone();
        let viewport = (now.width, now.height);
        // A background tab defers dialogs and throttles timers: the leased tab acts in front.
        if now.hidden {
            self.session.call(page::BringToFront {}).await?;
        }
        let mut nav = self.session.subscribe(super::settle::NAVIGATION_EVENTS);
        match action {
            Action::Click { target, .. } | Action::Hover { target, .. } => {
                let (x, y, before) = match target {
                    AnyTarget::Element(t) => {
                        let resolved = self.resolve(record, &t.element).await?;
                        let (x, y) = self.actionable_point(&resolved, Need::Pointer, viewport, until).await?;
                        (x, y, Some(resolved))
                    }
                    AnyTarget::Point(p) => {
                        let (x, y) = point_target(record, now, *p)?;
                        (x, y, None)
                    }
                };
                if kind == ActionKind::Hover {
                    self.mouse_move(x, y).await?;
                    self.settle(&mut nav, until).await;
                    return Ok(Receipt::dispatched(kind, frame));
                }
                self.click_and_verify(before.as_ref(), (x, y), "left", 1, 0, &mut nav, until, frame).await
            }
            Action::Type { target, text, .. } => {
                let resolved = self.resolve(record, &target.element).await?;
                self.type_text(&resolved, text.as_str(), options.typing, viewport, &mut nav, until, kind, frame).await
            }
            Action::Press { target, key, .. } => {
                let chord = chord(key.as_str())?;
                let resolved = self.resolve(record, &target.element).await?;
                self.press_key(&resolved, &chord, viewport, &mut nav, until, kind, frame).await
            }
            Action::Scroll { delta_y, .. } => {
                let (x, y) = (now.width / 2.0, now.height / 2.0);
                self.wheel(x, y, 0.0, f64::from(delta_y.get())).await?;
                self.settle(&mut nav, until).await;
                if delta_y.get() == 0 || self.scrolled(now, None, &serde_json::Value::Null, until).await? {
                    Ok(Receipt::confirmed(kind, frame))
                } else {
                    Ok(Receipt::failed(
                        kind,
                        frame,
                        protocol::ErrorCode::InvalidAction,
                        true,
                        "the page did not scroll (already at its end, or nothing scrollable under the centre)",
                    ))
                }
            }
            Action::Select { target, value, .. } => {
                let resolved = self.resolve(record, &target.element).await?;
                self.select_options(&resolved, Choice::One(value.as_str()), viewport, &mut nav, until, kind, frame).await
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

    /// Clicks at `(x, y)` (`count` times, `button`, with `modifiers` bits); an element that is a
    /// checkbox or radio is verified by its checked state, other clicks have no own effect to check.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn click_and_verify(
        &self,
        element: Option<&Resolved>,
        (x, y): (f64, f64),
        button: &'static str,
        count: u8,
        modifiers: i64,
        nav: &mut EventStream,
        until: Instant,
        frame: FrameId,
    ) -> Result<Receipt, BrowserError> {
        let kind = ActionKind::Click;
        let checked_before = match element {
            Some(r) if button == "left" && count == 1 => self.facts(r).await.ok().and_then(|f| f.checked),
            _ => None,
        };
        // Move, press and release go out together: a move waits for the next frame in the
        // renderer, and awaiting it alone would add that frame to every click.
        let (moved, clicked) = tokio::join!(self.mouse_move_with(x, y, modifiers), self.mouse_click(x, y, button, count, modifiers));
        moved?;
        clicked?;
        self.settle(nav, until).await;
        if let (Some(r), Some(was)) = (element, checked_before)
            && let Ok(facts) = self.facts(r).await {
                if facts.checked == Some(!was) || (facts.checked == Some(true) && facts.input_type == "radio") {
                    return Ok(Receipt::confirmed(kind, frame));
                }
                return Ok(Receipt::failed(kind, frame, protocol::ErrorCode::InvalidAction, true, "clicked, but the control's checked state did not change"));
            }
        Ok(Receipt::dispatched(kind, frame))
    }

    /// Replaces an editable element's text and verifies the value it then holds.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn type_text(
        &self,
        resolved: &Resolved,
        text: &str,
        typing: Typing,
        viewport: (f64, f64),
        nav: &mut EventStream,
        until: Instant,
        kind: ActionKind,
        frame: FrameId,
    ) -> Result<Receipt, BrowserError> {
        self.actionable_point(resolved, Need::Edit, viewport, until).await?;
        let facts = self.facts(resolved).await?;
        self.register_secret_if_needed(resolved, text).await;
        let value = self.enter_text(resolved, &facts, text, typing).await?;
        self.settle(nav, until).await;
        if value.as_deref() == Some(text)
            || (facts.editable && facts.tag != "input" && facts.tag != "textarea" && value.as_deref().map(str::trim_end) == Some(text.trim_end()))
        {
            Ok(Receipt::confirmed(kind, frame))
        } else {
            let got = value.map_or(0, |v| v.chars().count());
            Ok(Receipt::failed(
                kind,
                frame,
                protocol::ErrorCode::InvalidAction,
                true,
                format!("the field holds {got} characters after typing, not the {} typed", text.chars().count()),
            ))
        }
    }

    /// Focuses the element and presses a key or chord.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn press_key(
        &self,
        resolved: &Resolved,
        chord: &Chord,
        viewport: (f64, f64),
        nav: &mut EventStream,
        until: Instant,
        kind: ActionKind,
        frame: FrameId,
    ) -> Result<Receipt, BrowserError> {
        self.actionable_point(resolved, Need::Focus, viewport, until).await?;
        self.focus(resolved).await?;
        self.press_chord(chord).await?;
        self.settle(nav, until).await;
        Ok(Receipt::dispatched(kind, frame))
    }

    pub(super) async fn focus(&self, r: &Resolved) -> Result<(), BrowserError> {
        r.session.call(Focus { backend_node_id: Some(r.backend_node_id), object_id: None }).await?;
        Ok(())
    }
}

/// A `press` key or chord, or an error naming the accepted forms.
pub(super) fn chord(key: &str) -> Result<Chord, BrowserError> {
    parse_chord(key).ok_or_else(|| BrowserError::NotActionable {
        reason: format!("unknown key {key:?}: use names like Enter, Tab, Escape, ArrowDown, Control+A, Shift+Tab, or one character"),
    })
}
