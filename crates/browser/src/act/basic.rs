//! The bodies of the basic actions — navigating, waiting, clicking an element with its
//! checked-state verification, typing, pressing — that `dispatch.rs` calls; not the choice of
//! body for an action (see `dispatch.rs`).

use std::time::{Duration, Instant};

use cdp::EventStream;
use cdp::domains::dom::Focus;
use cdp::domains::page;
use protocol::{ActionKind, FrameId, Receipt};

use super::element::{Need, Resolved};
use super::same_document_url;
use crate::BrowserError;
use crate::Typing;
use crate::keys::{Chord, parse_chord};
use crate::tab::Tab;

impl Tab {
    /// `navigate`: loads `url` in this tab (the scheme checked again here), waits for its load
    /// within the deadline, and confirms where it landed.
    pub(super) async fn navigate(
        &self,
        url: &str,
        until: Instant,
        frame: FrameId,
    ) -> Result<Receipt, BrowserError> {
        let kind = ActionKind::Navigate;
        policy::check_navigation(url, &policy::NavigationPolicy::default()).map_err(|e| {
            BrowserError::NotActionable {
                reason: e.to_string(),
            }
        })?;
        let mut loads = self.session.subscribe(&["Page.loadEventFired"]);
        let reply = self
            .session
            .call(page::Navigate {
                url: url.to_owned(),
                frame_id: None,
            })
            .await?;
        if let Some(error) = reply.error_text {
            return Ok(Receipt::failed(
                kind,
                frame,
                protocol::ErrorCode::InvalidAction,
                true,
                format!("navigation failed: {error}"),
            ));
        }
        if reply.loader_id.is_some() {
            let left = until.saturating_duration_since(Instant::now());
            if tokio::time::timeout(left, loads.recv()).await.is_err() {
                return Ok(Receipt::unknown(
                    kind,
                    frame,
                    "the page did not finish loading before the deadline",
                ));
            }
        }
        let after = self.read_world_now().await?;
        if same_document_url(&after.url, url) {
            Ok(Receipt::confirmed(kind, frame))
        } else {
            Ok(Receipt::unknown(
                kind,
                frame,
                format!("landed on {}", policy::redact_url(&after.url)),
            ))
        }
    }

    /// `wait`: lets the page run for `duration` (cut at the deadline).
    pub(super) async fn wait(&self, duration: Duration, until: Instant, frame: FrameId) -> Receipt {
        tokio::time::sleep(duration.min(until.saturating_duration_since(Instant::now()))).await;
        Receipt::confirmed(ActionKind::Wait, frame)
    }

    /// Clicks at `(x, y)` (`count` times, `button`, with `modifiers` bits); a control that
    /// promises a state a click changes (a checkbox, radio or switch, native or ARIA; a toggle
    /// button) is verified by it (`element::click_verdict`), other clicks have no own effect to
    /// check and are `dispatched`.
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
        let before = match element {
            // The state the actionability check read just before (else read now).
            Some(r) if button == "left" && count == 1 => match r.take_facts() {
                Some(facts) => Some(facts),
                None => self.facts(r).await.ok(),
            }
            .and_then(|f| f.toggle.map(|t| (t, f.checked))),
            _ => None,
        };
        self.click_at(x, y, button, count, modifiers).await?;
        self.settle(nav, until).await;
        if let (Some(r), Some((toggle, was))) = (element, before)
            && let Ok(facts) = self.facts(r).await
        {
            use super::element::{ClickVerdict, click_verdict};
            return Ok(match click_verdict(Some(toggle), was, facts.checked) {
                ClickVerdict::Confirmed => Receipt::confirmed(kind, frame),
                ClickVerdict::Failed => Receipt::failed(
                    kind,
                    frame,
                    protocol::ErrorCode::InvalidAction,
                    true,
                    "clicked, but the control's checked or pressed state did not change",
                ),
                ClickVerdict::Dispatched => Receipt::dispatched(kind, frame),
            });
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
        frame: FrameId,
    ) -> Result<Receipt, BrowserError> {
        let kind = ActionKind::Type;
        self.actionable_point(resolved, Need::Edit, viewport, until)
            .await?;
        let facts = self.facts(resolved).await?;
        self.register_secret_if_needed(resolved, text).await;
        let value = self.enter_text(resolved, &facts, text, typing).await?;
        // The field's box for the marker (never its content).
        if let Ok(reply) = resolved
            .session
            .call(cdp::domains::dom::GetBoxModel {
                backend_node_id: Some(resolved.backend_node_id),
                object_id: None,
            })
            .await
            && let [x1, y1, x2, _, _, y3, ..] = reply.model.border[..]
        {
            let (ox, oy) = resolved.frame_offset;
            self.trace(super::Trace::Field([x1 + ox, y1 + oy, x2 - x1, y3 - y1]));
        }
        self.settle(nav, until).await;
        if value.as_deref() == Some(text)
            || (facts.editable
                && facts.tag != "input"
                && facts.tag != "textarea"
                && value.as_deref().map(str::trim_end) == Some(text.trim_end()))
        {
            Ok(Receipt::confirmed(kind, frame))
        } else {
            let got = value.map_or(0, |v| v.chars().count());
            Ok(Receipt::failed(
                kind,
                frame,
                protocol::ErrorCode::InvalidAction,
                true,
                format!(
                    "the field holds {got} characters after typing, not the {} typed",
                    text.chars().count()
                ),
            ))
        }
    }

    /// Focuses the element and presses a key or chord.
    pub(super) async fn press_key(
        &self,
        resolved: &Resolved,
        chord: &Chord,
        viewport: (f64, f64),
        nav: &mut EventStream,
        until: Instant,
        frame: FrameId,
    ) -> Result<Receipt, BrowserError> {
        let kind = ActionKind::Press;
        self.actionable_point(resolved, Need::Focus, viewport, until)
            .await?;
        self.focus(resolved).await?;
        self.press_chord(chord).await?;
        self.settle(nav, until).await;
        Ok(Receipt::dispatched(kind, frame))
    }

    /// Focuses the element. One that cannot take focus (a clickable `div`, a disabled field) is
    /// the wrong element for a key: said as such, nothing sent.
    pub(super) async fn focus(&self, r: &Resolved) -> Result<(), BrowserError> {
        match r
            .session
            .call(Focus {
                backend_node_id: Some(r.backend_node_id),
                object_id: None,
            })
            .await
        {
            Ok(_) => Ok(()),
            Err(cdp::CdpError::Protocol { message, .. }) => Err(BrowserError::NotActionable {
                reason: format!(
                    "the element cannot take focus ({message}), so no key goes to it: press keys on a field, button or link, or click this element"
                ),
            }),
            Err(e) => Err(e.into()),
        }
    }
}

/// A `press` key or chord, or an error naming the accepted forms.
pub(super) fn chord(key: &str) -> Result<Chord, BrowserError> {
    parse_chord(key).ok_or_else(|| BrowserError::NotActionable {
        reason: format!("unknown key {key:?}: use names like Enter, Tab, Escape, ArrowDown, Control+A, Shift+Tab, or one character"),
    })
}
