//! Dispatch of every action (the extended set, `glovebox.actions/2`; a v1 action arrives
//! converted): clicks with buttons, counts, modifiers and download capture; hover with
//! modifiers; typing modes; keys held down; two-axis and element scrolls; multi-selects; drags;
//! uploads (into a file input, or through the file chooser a control opens); navigation and
//! waits. Targets may be refs or locators. Everything that can fail without touching the page
//! is checked first. Dialog answers go through `answer_dialog` (`mod.rs`).

use std::time::{Duration, Instant};

use protocol::extended::{DragMode, MouseButton, SelectChoice};
use protocol::{ActionKind, ExtendedAction, ExtendedKind, Receipt, Target};
use serde_json::Value;

use super::basic::chord;
use super::element::{Need, Resolved};
use super::files::{DownloadEnd, files_receipt};
use super::keyboard::single_key;
use super::select::Choice;
use super::{Dispatched, point_target};
use crate::ActOptions;
use crate::BrowserError;
use crate::capture::WorldState;
use crate::observe::ObservationRecord;
use crate::tab::{Tab, lock};

/// How long settling may take after a click that downloads (it starts no page load to follow).
const DOWNLOAD_SETTLE: Duration = Duration::from_millis(300);
/// Kept back from the deadline so a download that does not finish still yields a receipt.
const DOWNLOAD_MARGIN: Duration = Duration::from_millis(250);

impl Tab {
    pub(super) async fn dispatch(
        &self,
        action: &ExtendedAction,
        record: &ObservationRecord,
        now: &WorldState,
        options: &ActOptions,
        until: Instant,
    ) -> Result<Dispatched, BrowserError> {
        let frame = action.expected_frame_id().clone();
        let viewport = (now.width, now.height);
        // Checks that need nothing from the page come first.
        let upload = match action {
            ExtendedAction::Upload(a) => {
                let root = options
                    .uploads
                    .as_ref()
                    .ok_or_else(|| BrowserError::NotActionable {
                        reason: "this run offers no files for upload".into(),
                    })?;
                let paths = a
                    .files
                    .as_slice()
                    .iter()
                    .map(|f| root.authorise(f))
                    .collect::<Result<Vec<_>, _>>();
                Some(paths.map_err(|e| BrowserError::NotActionable {
                    reason: e.to_string(),
                })?)
            }
            _ => None,
        };
        if let ExtendedAction::Click(a) = action
            && a.expect_download
            && options.downloads.is_none()
        {
            return Err(BrowserError::NotActionable {
                reason: "this run does not capture downloads; click without expect_download".into(),
            });
        }
        let key = match action {
            ExtendedAction::KeyDown(a) | ExtendedAction::KeyUp(a) => {
                let def = single_key(a.key.as_str())?;
                let held = lock(&self.state).held.holds_key(&def);
                match action {
                    ExtendedAction::KeyDown(_) if held => {
                        return Err(BrowserError::NotActionable {
                            reason: format!(
                                "{} is held down already; release it with key_up first",
                                def.key
                            ),
                        });
                    }
                    ExtendedAction::KeyUp(_) if !held => {
                        return Err(BrowserError::NotActionable {
                            reason: format!("{} is not held down (key_down it first)", def.key),
                        });
                    }
                    _ => Some(def),
                }
            }
            _ => None,
        };
        crate::capture::to_front_if_hidden(self, now).await?;
        let mut nav = self.session.subscribe(super::settle::NAVIGATION_EVENTS);
        match action {
            ExtendedAction::Click(a) => {
                let element = self.resolve_target(record, &a.target).await?;
                let point = self
                    .target_point(
                        record,
                        now,
                        &a.target,
                        element.as_ref(),
                        Need::Pointer,
                        until,
                    )
                    .await?;
                let capture = match (&options.downloads, a.expect_download) {
                    (Some(dir), true) => Some(self.arm_download(dir).await?),
                    _ => None,
                };
                let settle_until = if capture.is_some() {
                    (Instant::now() + DOWNLOAD_SETTLE).min(until)
                } else {
                    until
                };
                // A modifier or middle click on a link opens it in a tab the browser gives no
                // opener: expect the link's URL, so the outcome can name that tab.
                if (!a.modifiers.is_empty() || button(a.button) == "middle")
                    && let Some(el) = element.as_ref()
                    && let Ok(Value::String(href)) =
                        self.call_on(el, LINK_HREF_JS, vec![], false).await
                {
                    let mut state = lock(&self.state);
                    if state.window_opens.len() < 16 {
                        state.window_opens.push((href, Instant::now()));
                    }
                }
                let (pressed, bits) = self.modifiers_down(&a.modifiers).await?;
                let clicked = self
                    .click_and_verify(
                        element.as_ref(),
                        point,
                        button(a.button),
                        a.click_count.get(),
                        bits,
                        &mut nav,
                        settle_until,
                        frame.clone(),
                    )
                    .await;
                let released = self.modifiers_up(&pressed, bits).await;
                let receipt = clicked?;
                released?;
                let Some(capture) = capture else {
                    return Ok(receipt.into());
                };
                let wait_until = until
                    .checked_sub(DOWNLOAD_MARGIN)
                    .unwrap_or(until)
                    .max(Instant::now());
                let kind = ActionKind::Click;
                Ok(match self.await_download(capture, wait_until).await {
                    DownloadEnd::Completed(info) => Dispatched {
                        receipt: Receipt::confirmed(kind, frame),
                        downloads: vec![info],
                    },
                    DownloadEnd::Canceled => Receipt::failed(
                        kind,
                        frame,
                        protocol::ErrorCode::InvalidAction,
                        true,
                        "the download was canceled",
                    )
                    .into(),
                    DownloadEnd::NotFinished { began: true } => Receipt::unknown(
                        kind,
                        frame,
                        "the download did not finish before the deadline",
                    )
                    .into(),
                    DownloadEnd::NotFinished { began: false } => Receipt::failed(
                        kind,
                        frame,
                        protocol::ErrorCode::InvalidAction,
                        true,
                        "the click started no download",
                    )
                    .into(),
                })
            }
            ExtendedAction::Hover(a) => {
                let element = self.resolve_target(record, &a.target).await?;
                let (x, y) = self
                    .target_point(
                        record,
                        now,
                        &a.target,
                        element.as_ref(),
                        Need::Pointer,
                        until,
                    )
                    .await?;
                let (pressed, bits) = self.modifiers_down(&a.modifiers).await?;
                let moved = self.mouse_move_with(x, y, bits).await;
                self.settle(&mut nav, until).await;
                let released = self.modifiers_up(&pressed, bits).await;
                moved?;
                released?;
                Ok(Receipt::dispatched(ActionKind::Hover, frame).into())
            }
            ExtendedAction::Type(a) => {
                let resolved = self.resolve_spec(record, &a.target).await?;
                Ok(self
                    .type_text(
                        &resolved,
                        a.text.as_str(),
                        a.mode.into(),
                        viewport,
                        &mut nav,
                        until,
                        frame,
                    )
                    .await?
                    .into())
            }
            ExtendedAction::Press(a) => {
                let chord = chord(a.key.as_str())?;
                let resolved = self.resolve_spec(record, &a.target).await?;
                self.trace(super::Trace::Keys(a.key.as_str().to_owned()));
                Ok(self
                    .press_key(&resolved, &chord, viewport, &mut nav, until, frame)
                    .await?
                    .into())
            }
            ExtendedAction::KeyDown(a) | ExtendedAction::KeyUp(a) => {
                let def = key.ok_or_else(|| BrowserError::Internal {
                    reason: "a key action without its key".into(),
                })?;
                if let Some(spec) = &a.target {
                    let resolved = self.resolve_spec(record, spec).await?;
                    self.actionable_point(&resolved, Need::Focus, viewport, until)
                        .await?;
                    self.focus(&resolved).await?;
                }
                let arrow = if matches!(action, ExtendedAction::KeyDown(_)) {
                    "↓"
                } else {
                    "↑"
                };
                self.trace(super::Trace::Keys(format!("{arrow}{}", def.key)));
                if matches!(action, ExtendedAction::KeyDown(_)) {
                    self.key_down(&def).await?;
                } else {
                    self.key_up(&def).await?;
                }
                self.settle(&mut nav, until).await;
                Ok(Receipt::dispatched(action.kind(), frame).into())
            }
            ExtendedAction::Scroll(a) => {
                let (dx, dy) = (f64::from(a.delta.x_px()), f64::from(a.delta.y_px()));
                let (point, element) = match &a.target {
                    Some(spec) => {
                        let resolved = self.resolve_spec(record, spec).await?;
                        (
                            self.actionable_point(&resolved, Need::Pointer, viewport, until)
                                .await?,
                            Some(resolved),
                        )
                    }
                    None => ((now.width / 2.0, now.height / 2.0), None),
                };
                let before = self.scroll_offsets(element.as_ref()).await;
                self.wheel(point.0, point.1, dx, dy).await?;
                self.settle(&mut nav, until).await;
                let kind = ActionKind::Scroll;
                if (dx == 0.0 && dy == 0.0)
                    || self.scrolled(now, element.as_ref(), &before, until).await?
                {
                    return Ok(Receipt::confirmed(kind, frame).into());
                }
                Ok(Receipt::failed(
                    kind,
                    frame,
                    protocol::ErrorCode::InvalidAction,
                    true,
                    "nothing scrolled (already at its end, or nothing scrollable under the pointer)",
                )
                .into())
            }
            ExtendedAction::Select(a) => {
                let resolved = self.resolve_spec(record, &a.target).await?;
                let choice = match &a.choice {
                    SelectChoice::One(value) => Choice::One(value.as_str()),
                    SelectChoice::Many(values) => {
                        Choice::Many(values.as_slice().iter().map(|v| v.as_str()).collect())
                    }
                };
                Ok(self
                    .select_options(&resolved, choice, viewport, &mut nav, until, frame)
                    .await?
                    .into())
            }
            ExtendedAction::Drag(a) => {
                let source = self.resolve_target(record, &a.source).await?;
                let destination = self.resolve_target(record, &a.destination).await?;
                // The destination first: scrolling it into view must not move the source afterwards.
                let to = self
                    .target_point(
                        record,
                        now,
                        &a.destination,
                        destination.as_ref(),
                        Need::Focus,
                        until,
                    )
                    .await?;
                let from = self
                    .target_point(
                        record,
                        now,
                        &a.source,
                        source.as_ref(),
                        Need::Pointer,
                        until,
                    )
                    .await?;
                // Past the middle: with no offset given, a drop onto an element lands beyond its
                // centre in the direction of travel, as a person drops onto a sortable item
                // (jQuery UI and its kind move an item once the pointer passes the other's
                // middle; exactly on it, nothing decides). See [`drop_onto`].
                let mut landing = (to, None);
                if let Some(d) = &destination {
                    let extent = self.quad_extent(d).await?;
                    let again = extent.map(|(l, t, r, b)| {
                        (
                            (l + r) / 2.0 + d.frame_offset.0,
                            (t + b) / 2.0 + d.frame_offset.1,
                        )
                    });
                    if again.is_none_or(|(x, y)| (x - to.0).abs() > 1.0 || (y - to.1).abs() > 1.0) {
                        return Err(BrowserError::NotActionable {
                            reason: format!("{} and its source cannot both be in view", d.label),
                        });
                    }
                    if let Some((l, t, r, b)) = extent {
                        landing = drop_onto(from, to, (r - l, b - t));
                    }
                }
                let (to, approach) = match a.end_offset {
                    Some(o) => (
                        (to.0 + f64::from(o.x.get()), to.1 + f64::from(o.y.get())),
                        None,
                    ),
                    None => landing,
                };
                let inside = |(x, y): (f64, f64)| {
                    (0.0..now.width).contains(&x) && (0.0..now.height).contains(&y)
                };
                if !inside(to) {
                    return Err(BrowserError::NotActionable {
                        reason: format!(
                            "the drop point ({:.0}, {:.0}) is outside the viewport",
                            to.0, to.1
                        ),
                    });
                }
                let via: Vec<(f64, f64)> = a
                    .path
                    .as_slice()
                    .iter()
                    .map(|p| (f64::from(p.x), f64::from(p.y)))
                    .chain(approach)
                    .collect();
                if let Some(p) = via.iter().find(|p| !inside(**p)) {
                    return Err(BrowserError::NotActionable {
                        reason: format!(
                            "path point ({:.0}, {:.0}) is outside the viewport",
                            p.0, p.1
                        ),
                    });
                }
                let kind = ExtendedKind::Drag;
                match a.mode {
                    DragMode::Mouse => self.drag_mouse(from, &via, to).await?,
                    DragMode::Html5 => {
                        self.trace(super::Trace::Press(from.0, from.1));
                        for p in via.iter().chain([&to]) {
                            self.trace(super::Trace::Drag(p.0, p.1));
                        }
                        if !self.drag_html5(from, &via, to, until).await? {
                            self.settle(&mut nav, until).await;
                            return Ok(Receipt::failed(
                                kind,
                                frame,
                                protocol::ErrorCode::InvalidAction,
                                true,
                                "the page started no HTML5 drag from the source (is it draggable?)",
                            )
                            .into());
                        }
                    }
                }
                self.settle(&mut nav, until).await;
                Ok(Receipt::dispatched(kind, frame).into())
            }
            ExtendedAction::Upload(a) => {
                let paths = upload.unwrap_or_default();
                let resolved = self.resolve_spec(record, &a.target).await?;
                let facts = self.facts(&resolved).await?;
                if facts.tag != "input" || facts.input_type != "file" {
                    // A control that opens a file chooser (see `files.rs`).
                    let point = self
                        .actionable_point(&resolved, Need::Pointer, viewport, until)
                        .await?;
                    return Ok(self
                        .upload_through_chooser(&resolved, point, &paths, &mut nav, until, frame)
                        .await?
                        .into());
                }
                if facts.disabled {
                    return Err(BrowserError::NotActionable {
                        reason: format!("{} is disabled", resolved.label),
                    });
                }
                if paths.len() > 1 && !facts.multiple {
                    return Err(BrowserError::NotActionable {
                        reason: format!("{} takes one file, not {}", resolved.label, paths.len()),
                    });
                }
                let names = self.set_files(&resolved, &paths).await?;
                self.settle(&mut nav, until).await;
                Ok(files_receipt(names, &paths, frame).into())
            }
            ExtendedAction::Navigate(a) => {
                Ok(self.navigate(a.url.as_str(), until, frame).await?.into())
            }
            ExtendedAction::Wait(a) => {
                let waited = self
                    .wait(
                        Duration::from_millis(u64::from(a.duration_ms.get())),
                        until,
                        frame,
                    )
                    .await;
                // A wait sends nothing: a tab that died meanwhile is lost, not waited on
                // (issue 35: it answered `confirmed` with no page after it).
                self.check_alive()?;
                Ok(waited.into())
            }
            ExtendedAction::Dialog(_) => Err(BrowserError::Internal {
                reason: "dialog answers go through answer_dialog".into(),
            }),
        }
    }

    /// The viewport point of a target: an element's actionable centre, or a checked point.
    async fn target_point(
        &self,
        record: &ObservationRecord,
        now: &WorldState,
        target: &Target,
        element: Option<&Resolved>,
        need: Need,
        until: Instant,
    ) -> Result<(f64, f64), BrowserError> {
        match (element, target) {
            (Some(r), _) => {
                self.actionable_point(r, need, (now.width, now.height), until)
                    .await
            }
            (None, Target::Point(p)) => point_target(record, now, *p),
            (None, _) => Err(BrowserError::Internal {
                reason: "an element target was not resolved".into(),
            }),
        }
    }

    /// Whether the page (or the element, or one of its ancestors) scrolled since `now` /
    /// `before`. The wheel scrolls asynchronously, so a few animation frames are given.
    pub(super) async fn scrolled(
        &self,
        now: &WorldState,
        element: Option<&Resolved>,
        before: &Value,
        until: Instant,
    ) -> Result<bool, BrowserError> {
        for _ in 0..5 {
            let after = self.read_world_now().await?;
            if after.scroll_x != now.scroll_x || after.scroll_y != now.scroll_y {
                return Ok(true);
            }
            if element.is_some() && self.scroll_offsets(element).await != *before {
                return Ok(true);
            }
            if Instant::now() >= until {
                break;
            }
            self.read_after_frame().await;
        }
        Ok(false)
    }

    /// Scroll offsets of an element and its ancestors (`Null` without one).
    async fn scroll_offsets(&self, element: Option<&Resolved>) -> Value {
        match element {
            Some(r) => self
                .call_on(r, SCROLL_OFFSETS_JS, vec![], false)
                .await
                .unwrap_or(Value::Null),
            None => Value::Null,
        }
    }

    /// Waits one animation frame of the page (bounded), for asynchronous scrolling.
    async fn read_after_frame(&self) {
        let Ok(context) = crate::capture::world_context(self).await else {
            return;
        };
        let wait = self.session.call(cdp::domains::runtime::Evaluate {
            expression: "new Promise((r) => requestAnimationFrame(() => r(true)))".into(),
            context_id: Some(context),
            return_by_value: Some(true),
            await_promise: Some(true),
            ..Default::default()
        });
        let _ = tokio::time::timeout(Duration::from_millis(100), wait).await;
    }
}

/// The URL of the link an element is in, if any.
const LINK_HREF_JS: &str =
    "function() { const a = this.closest && this.closest('a[href]'); return a ? a.href : null; }";

fn button(b: MouseButton) -> &'static str {
    match b {
        MouseButton::Left => "left",
        MouseButton::Right => "right",
        MouseButton::Middle => "middle",
    }
}

/// The scroll offsets of the element and of every scrollable ancestor (the wheel scrolls the
/// innermost one that can move).
const SCROLL_OFFSETS_JS: &str = "function () { const out = []; for (let e = this; e; e = e.parentElement) out.push(e.scrollLeft, e.scrollTop); return out; }";

/// Where a drag onto an element of `size` centred at `centre` ends, and the point it comes in
/// through, when the action gives no `end_offset`: past the centre in the direction of travel,
/// as a person drops onto a sortable item.
/// - Travel mostly along y: a quarter of the height beyond the centre.
/// - Travel mostly along x: a quarter of the width beyond it, coming in with a short vertical
///   leg (down when moving right, up when moving left) that ends an eighth of the height past
///   the centre. jQuery UI's sortable judges a floated row by vertical motion once the dragged
///   item is lifted out of the flow (its `float` is then `none`), as a person's hand always has
///   some; libraries that judge by x see the pointer already past the middle.
pub(super) fn drop_onto(
    from: (f64, f64),
    centre: (f64, f64),
    size: (f64, f64),
) -> ((f64, f64), Option<(f64, f64)>) {
    let (dx, dy) = (centre.0 - from.0, centre.1 - from.1);
    if dx.abs() < 1.0 && dy.abs() < 1.0 {
        (centre, None)
    } else if dy.abs() >= dx.abs() {
        ((centre.0, centre.1 + dy.signum() * size.1 / 4.0), None)
    } else {
        let x = centre.0 + dx.signum() * size.0 / 4.0;
        let leg = dx.signum() * size.1 / 8.0;
        ((x, centre.1 + leg), Some((x, centre.1 - leg)))
    }
}

#[cfg(test)]
mod tests {
    use super::drop_onto;

    #[test]
    fn a_drop_onto_an_element_lands_past_its_middle_in_the_direction_of_travel() {
        // Down a list: a quarter of the height below the centre, no extra leg.
        assert_eq!(
            drop_onto((50.0, 10.0), (50.0, 100.0), (80.0, 40.0)),
            ((50.0, 110.0), None)
        );
        // Up: above it.
        assert_eq!(
            drop_onto((50.0, 200.0), (50.0, 100.0), (80.0, 40.0)).0,
            (50.0, 90.0)
        );
        // Right along a row: past the centre, coming in downwards.
        assert_eq!(
            drop_onto((10.0, 100.0), (200.0, 100.0), (80.0, 40.0)),
            ((220.0, 105.0), Some((220.0, 95.0)))
        );
        // Left: coming in upwards.
        assert_eq!(
            drop_onto((400.0, 100.0), (200.0, 100.0), (80.0, 40.0)),
            ((180.0, 95.0), Some((180.0, 105.0)))
        );
        // No travel: the centre.
        assert_eq!(
            drop_onto((200.0, 100.0), (200.0, 100.0), (80.0, 40.0)),
            ((200.0, 100.0), None)
        );
    }
}
