//! The pointer: moves, clicks (any button, up to three in a row, modifiers held), the wheel,
//! and drags along a path with mouse events or HTML5 drag and drop; not keys (see
//! `keyboard.rs`). Every event carries the modifiers of keys held by `key_down`.

use std::time::{Duration, Instant};

use cdp::domains::input::DispatchMouseEvent;
use serde_json::{Value, json};

use super::keyboard::button_bit;
use crate::BrowserError;
use crate::tab::{Tab, lock};

/// How far apart the moves of a drag are at most, in CSS pixels: drop zones between the ends
/// see the pointer pass over them.
const DRAG_STEP_PX: f64 = 20.0;
/// Moves per leg of a drag, at least and at most.
const DRAG_STEPS: (usize, usize) = (2, 10);
/// How long an HTML5 drag waits for the page to start dragging (`dragstart`).
const DRAG_START_WAIT: Duration = Duration::from_millis(1500);

impl Tab {
    /// Sends one input event. A dialog the event opens blocks the renderer, and with it the
    /// reply, so an opening dialog also ends the wait: the input was delivered.
    pub(super) async fn input<C: cdp::Command>(&self, command: C) -> Result<(), BrowserError> {
        let mut dialogs = self.session.subscribe(&["Page.javascriptDialogOpening"]);
        tokio::select! {
            reply = self.session.call(command) => reply.map(|_| ()).map_err(Into::into),
            event = dialogs.recv() => {
                if let Some(Ok(event)) = event {
                    self.note_dialog(&event);
                }
                Ok(())
            }
        }
    }

    /// Moves the pointer, with the held buttons and modifiers.
    pub(super) async fn mouse_move(&self, x: f64, y: f64) -> Result<(), BrowserError> {
        self.mouse_move_with(x, y, 0).await
    }

    pub(super) async fn mouse_move_with(
        &self,
        x: f64,
        y: f64,
        modifiers: i64,
    ) -> Result<(), BrowserError> {
        let (modifiers, buttons) = {
            let state = lock(&self.state);
            (modifiers | state.held.modifiers(), state.held.buttons())
        };
        self.trace(if buttons == 0 {
            super::Trace::Hover(x, y)
        } else {
            super::Trace::Drag(x, y)
        });
        self.input(DispatchMouseEvent {
            event_type: "mouseMoved".into(),
            x,
            y,
            modifiers: Some(modifiers),
            button: Some(held_button(buttons).into()),
            buttons: Some(buttons),
            ..Default::default()
        })
        .await
    }

    /// A click at a point: the move there, then `count` presses and releases in a row (a double
    /// or triple click: `clickCount` 1, 2, 3, as a person's clicks reach the page, `dblclick`
    /// after the second), all sent at once and answered in order. Awaiting each event before
    /// sending the next let the renderer start a frame between press and release, and every
    /// task the page ran next (its own follow-up work, and settling's quiet check) waited for
    /// that frame: ~10 ms on every click (measured in `bench act`). What a person's hand cannot
    /// do the same way: a dialog the press opens holds the release until it is answered, and the
    /// page then sees the release (a person's would go to the dialog).
    pub(super) async fn click_at(
        &self,
        x: f64,
        y: f64,
        button: &'static str,
        count: u8,
        modifiers: i64,
    ) -> Result<(), BrowserError> {
        if lock(&self.state).dialog.is_some() {
            return Ok(());
        }
        self.trace(super::Trace::Hover(x, y));
        for _ in 0..count {
            self.trace(super::Trace::Press(x, y));
        }
        let (modifiers, held) = {
            let state = lock(&self.state);
            (modifiers | state.held.modifiers(), state.held.buttons())
        };
        let event = |event_type: &str, button: &str, buttons: i64, click_count: Option<i64>| {
            DispatchMouseEvent {
                event_type: event_type.into(),
                x,
                y,
                modifiers: Some(modifiers),
                button: Some(button.into()),
                buttons: Some(buttons),
                click_count,
                ..Default::default()
            }
        };
        let mut events = vec![event("mouseMoved", held_button(held), held, None)];
        for n in 1..=i64::from(count) {
            events.push(event(
                "mousePressed",
                button,
                held | button_bit(button),
                Some(n),
            ));
            events.push(event("mouseReleased", button, held, Some(n)));
        }
        // Each is sent when first polled, and `join_all` polls them in order.
        let sent = futures_util::future::join_all(events.into_iter().map(|e| self.input(e))).await;
        sent.into_iter().collect()
    }

    /// One press or release, tracked as held until released.
    async fn mouse_button(
        &self,
        x: f64,
        y: f64,
        button: &'static str,
        pressed: bool,
        count: i64,
        modifiers: i64,
    ) -> Result<(), BrowserError> {
        let (modifiers, buttons) = {
            let mut state = lock(&self.state);
            if pressed {
                state.trace.push(super::Trace::Press(x, y));
                state.held.press_button(button, x, y);
            } else {
                state.held.release_button(button);
            }
            (modifiers | state.held.modifiers(), state.held.buttons())
        };
        let sent = self
            .input(DispatchMouseEvent {
                event_type: if pressed {
                    "mousePressed"
                } else {
                    "mouseReleased"
                }
                .into(),
                x,
                y,
                modifiers: Some(modifiers),
                button: Some(button.into()),
                buttons: Some(buttons | if pressed { button_bit(button) } else { 0 }),
                click_count: Some(count),
                ..Default::default()
            })
            .await;
        if sent.is_err() && pressed {
            lock(&self.state).held.release_button(button);
        }
        sent
    }

    /// One wheel turn at a point.
    pub(super) async fn wheel(
        &self,
        x: f64,
        y: f64,
        delta_x: f64,
        delta_y: f64,
    ) -> Result<(), BrowserError> {
        let modifiers = lock(&self.state).held.modifiers();
        self.trace(super::Trace::Wheel(x, y, delta_x, delta_y));
        self.input(DispatchMouseEvent {
            event_type: "mouseWheel".into(),
            x,
            y,
            modifiers: Some(modifiers),
            delta_x: Some(delta_x),
            delta_y: Some(delta_y),
            ..Default::default()
        })
        .await
    }

    /// A pointer drag: move to `from`, press, move through `via` to `to` in small steps,
    /// release. The release is attempted even when a move fails, so no button stays down.
    pub(super) async fn drag_mouse(
        &self,
        from: (f64, f64),
        via: &[(f64, f64)],
        to: (f64, f64),
    ) -> Result<(), BrowserError> {
        self.mouse_move(from.0, from.1).await?;
        self.mouse_button(from.0, from.1, "left", true, 1, 0)
            .await?;
        let moved = self.move_along(from, via, to).await;
        let released = self.mouse_button(to.0, to.1, "left", false, 1, 0).await;
        moved.and(released)
    }

    /// Moves through `via` to `to` from `from`, in steps of at most [`DRAG_STEP_PX`].
    async fn move_along(
        &self,
        from: (f64, f64),
        via: &[(f64, f64)],
        to: (f64, f64),
    ) -> Result<(), BrowserError> {
        let mut at = from;
        for next in via.iter().copied().chain(std::iter::once(to)) {
            for (x, y) in steps(at, next) {
                if lock(&self.state).dialog.is_some() {
                    return Ok(());
                }
                self.mouse_move(x, y).await?;
            }
            at = next;
        }
        Ok(())
    }

    /// An HTML5 drag and drop: with drags intercepted (`Input.setInterceptDrags`), press on
    /// `from` and move until the page starts a drag (`Input.dragIntercepted` carries its data),
    /// then `dragEnter`/`dragOver` through `via` to `to` and `drop` there
    /// (`Input.dispatchDragEvent`), so the page's `dragstart`, `dragenter`, `dragover` and
    /// `drop` handlers all run. `Ok(false)`: the page never started a drag (the source is not
    /// draggable); the button is released.
    pub(super) async fn drag_html5(
        &self,
        from: (f64, f64),
        via: &[(f64, f64)],
        to: (f64, f64),
        until: Instant,
    ) -> Result<bool, BrowserError> {
        let timeout = self.session.connection().default_timeout();
        let mut intercepted = self.session.subscribe(&["Input.dragIntercepted"]);
        self.session
            .send_raw(
                "Input.setInterceptDrags",
                json!({ "enabled": true }),
                timeout,
            )
            .await?;
        let result: Result<bool, BrowserError> = async {
            self.mouse_move(from.0, from.1).await?;
            self.mouse_button(from.0, from.1, "left", true, 1, 0)
                .await?;
            // The drag starts once the pointer leaves the press point by a few pixels.
            let first = via.first().copied().unwrap_or(to);
            let wait_until = (Instant::now() + DRAG_START_WAIT).min(until);
            let mut data = None;
            for (x, y) in steps(from, first) {
                self.mouse_move(x, y).await?;
                if let Ok(Some(Ok(event))) =
                    tokio::time::timeout(Duration::ZERO, intercepted.recv()).await
                {
                    data = event.params.get("data").cloned();
                    break;
                }
            }
            if data.is_none() {
                let left = wait_until.saturating_duration_since(Instant::now());
                if let Ok(Some(Ok(event))) = tokio::time::timeout(left, intercepted.recv()).await {
                    data = event.params.get("data").cloned();
                }
            }
            let Some(data) = data else {
                self.mouse_button(first.0, first.1, "left", false, 1, 0)
                    .await?;
                return Ok(false);
            };
            let mut points: Vec<(f64, f64)> = Vec::new();
            let mut at = from;
            for next in via.iter().copied().chain(std::iter::once(to)) {
                points.extend(steps(at, next));
                at = next;
            }
            let modifiers = lock(&self.state).held.modifiers();
            for (i, (x, y)) in points.iter().enumerate() {
                let kind = if i == 0 { "dragEnter" } else { "dragOver" };
                self.drag_event(kind, *x, *y, &data, modifiers).await?;
            }
            self.drag_event("dragOver", to.0, to.1, &data, modifiers)
                .await?;
            self.drag_event("drop", to.0, to.1, &data, modifiers)
                .await?;
            self.mouse_button(to.0, to.1, "left", false, 1, 0).await?;
            Ok(true)
        }
        .await;
        let reset = self
            .session
            .send_raw(
                "Input.setInterceptDrags",
                json!({ "enabled": false }),
                timeout,
            )
            .await;
        if result.is_err() {
            // Whatever failed, no button stays down.
            let held = lock(&self.state).held.buttons();
            if held & 1 != 0 {
                let _ = self.mouse_button(to.0, to.1, "left", false, 1, 0).await;
            }
        }
        let started = result?;
        reset?;
        Ok(started)
    }

    async fn drag_event(
        &self,
        kind: &str,
        x: f64,
        y: f64,
        data: &Value,
        modifiers: i64,
    ) -> Result<(), BrowserError> {
        let timeout = self.session.connection().default_timeout();
        let params = json!({ "type": kind, "x": x, "y": y, "data": data, "modifiers": modifiers });
        let mut dialogs = self.session.subscribe(&["Page.javascriptDialogOpening"]);
        tokio::select! {
            reply = self.session.send_raw("Input.dispatchDragEvent", params, timeout) => reply.map(|_| ()).map_err(Into::into),
            _ = dialogs.recv() => Ok(()),
        }
    }
}

/// The points of one leg, excluding `from` and ending exactly at `to`.
fn steps(from: (f64, f64), to: (f64, f64)) -> Vec<(f64, f64)> {
    let distance = (to.0 - from.0).hypot(to.1 - from.1);
    let n = ((distance / DRAG_STEP_PX).ceil() as usize).clamp(DRAG_STEPS.0, DRAG_STEPS.1);
    (1..=n)
        .map(|i| {
            let t = i as f64 / n as f64;
            (from.0 + (to.0 - from.0) * t, from.1 + (to.1 - from.1) * t)
        })
        .collect()
}

/// The button a move names while `buttons` are held (`none` when none is).
fn held_button(buttons: i64) -> &'static str {
    match buttons {
        0 => "none",
        b if b & 1 != 0 => "left",
        b if b & 2 != 0 => "right",
        _ => "middle",
    }
}

#[cfg(test)]
mod tests {
    use super::steps;

    #[test]
    fn drag_legs_end_on_their_point_in_bounded_steps() {
        let s = steps((0.0, 0.0), (100.0, 0.0));
        assert_eq!(s.len(), 5);
        assert_eq!(s.last(), Some(&(100.0, 0.0)));
        assert_eq!(steps((0.0, 0.0), (1.0, 1.0)).len(), 2);
        assert_eq!(steps((0.0, 0.0), (0.0, 5000.0)).len(), 10);
    }
}
