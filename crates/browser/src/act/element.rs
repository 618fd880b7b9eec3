//! Elements an action works on: a ref resolved to its exact live node (role and name
//! re-checked), the facts the checks need, and the actionability checks themselves (visible,
//! stable, enabled, editable, in view, receiving the pointer); not locators (see `locate.rs`).

use std::time::{Duration, Instant};

use cdp::Session;
use cdp::domains::accessibility::GetPartialAxTree;
use cdp::domains::dom::{GetContentQuads, GetNodeForLocation, ResolveNode, ScrollIntoViewIfNeeded};
use cdp::domains::runtime::{CallArgument, CallFunctionOn};
use protocol::ElementRef;
use serde::Deserialize;
use serde_json::Value;

use crate::BrowserError;
use crate::observe::{ObservationRecord, RefBinding};
use crate::tab::Tab;

const ACTIONABILITY_JS: &str = include_str!("../js/actionability.js");
const DESCRIBE_JS: &str = include_str!("../js/describe.js");
const CONTAINS_JS: &str = include_str!("../js/contains.js");
/// A ref's fingerprint and its facts, in one call (`[fingerprint, facts]`).
static FINGERPRINT_AND_FACTS_JS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "function () {{ return [({}).call(this), ({}).call(this)]; }}",
        crate::synth::FINGERPRINT_JS,
        ACTIONABILITY_JS
    )
});

#[derive(Debug, Clone, Deserialize)]
pub(super) struct Facts {
    pub(super) connected: bool,
    pub(super) tag: String,
    pub(super) input_type: String,
    pub(super) disabled: bool,
    pub(super) editable: bool,
    #[serde(default)]
    pub(super) multiple: bool,
    pub(super) value: Option<String>,
    /// The state a click on it promises to change: `checkbox` (flips), `radio` (becomes set),
    /// `pressed` (a toggle button flips); none for every other element.
    #[serde(default)]
    pub(super) toggle: Option<Toggle>,
    /// That state (only with `toggle`).
    pub(super) checked: Option<bool>,
    /// Scroll offset of the element's own frame.
    pub(super) scroll_x: f64,
    pub(super) scroll_y: f64,
}

/// The state a click on a control promises to change (see [`Facts::toggle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Toggle {
    Checkbox,
    Radio,
    Pressed,
}

/// What a single left click's receipt is, from the state its control promised to change, read
/// before and after: confirmed when it changed as promised (a radio: set), failed when it did
/// not, dispatched (effect not confirmed) for every element that promises nothing — a click
/// on a text field that opens a picker is not a failure (issue 36).
pub(super) fn click_verdict(
    toggle: Option<Toggle>,
    before: Option<bool>,
    after: Option<bool>,
) -> ClickVerdict {
    match (toggle, before, after) {
        (Some(Toggle::Radio), _, Some(true)) => ClickVerdict::Confirmed,
        (Some(_), Some(was), Some(now)) if now != was => ClickVerdict::Confirmed,
        (Some(_), Some(_), Some(_)) => ClickVerdict::Failed,
        _ => ClickVerdict::Dispatched,
    }
}

/// See [`click_verdict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClickVerdict {
    Confirmed,
    Failed,
    Dispatched,
}

/// A live element an action is about to touch, found by ref or by locator.
#[derive(Clone)]
pub(super) struct Resolved {
    /// How messages name it: `e12 button "Save"`, or `button "Save" (role locator)`.
    pub(super) label: String,
    /// The session of the element's frame (the tab's, or an out-of-process frame's).
    pub(super) session: Session,
    pub(super) backend_node_id: i64,
    pub(super) object_id: String,
    /// Where the element's frame viewport sits in the top-level viewport (out-of-process frames).
    pub(super) frame_offset: (f64, f64),
    /// The box when observed (refs only): an unmoved element needs no two-frame stability wait.
    pub(super) observed_bounds: Option<[f64; 4]>,
    pub(super) role: String,
    pub(super) name: String,
    /// Its facts as read moments ago in this action, for the next check that can use a read
    /// that recent (each read is used once; a retry reads afresh): every round trip before the
    /// dispatch is time on every action.
    pub(super) last_facts: std::sync::Arc<std::sync::Mutex<Option<Facts>>>,
}

impl Resolved {
    /// The facts read moments ago in this action, if any (see [`Resolved::last_facts`]).
    pub(super) fn take_facts(&self) -> Option<Facts> {
        crate::tab::lock(&self.last_facts).take()
    }

    fn keep_facts(&self, facts: Facts) {
        *crate::tab::lock(&self.last_facts) = Some(facts);
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Need {
    /// Pointer input: must receive the pointer at its centre.
    Pointer,
    /// Keyboard or programmatic input: visible, stable, enabled.
    Focus,
    /// Text entry: also editable.
    Edit,
}

impl Tab {
    /// A ref of `record` to its live node, or `Stale` if it is gone or is no longer what was seen.
    /// A frame element's ref is refused: it names a frame to enter, not a target.
    pub(super) async fn resolve(
        &self,
        record: &ObservationRecord,
        element: &ElementRef,
    ) -> Result<Resolved, BrowserError> {
        let binding = binding_of(record, element)?;
        if binding.frame {
            let r = element.as_str();
            return Err(BrowserError::NotActionable {
                reason: format!(
                    "{r} is a frame (iframe \"{}\"), not something to act on: target an element inside it with a locator that enters it, e.g. {{\"kind\":\"role\",\"role\":\"button\",\"name\":\"…\",\"frame\":[{{\"kind\":\"element\",\"ref\":\"{r}\"}}]}}, or with the element's own ref",
                    binding.name
                ),
            });
        }
        self.resolve_binding(element, binding).await
    }

    /// A frame element's ref of `record` to its live node, for a frame step.
    pub(super) async fn resolve_frame(
        &self,
        record: &ObservationRecord,
        element: &ElementRef,
    ) -> Result<Resolved, BrowserError> {
        let binding = binding_of(record, element)?;
        if !binding.frame {
            return Err(BrowserError::NotActionable {
                reason: format!(
                    "{} ({} \"{}\") is not a frame; a frame step names an iframe's ref",
                    element.as_str(),
                    binding.role,
                    binding.name
                ),
            });
        }
        self.resolve_binding(element, binding).await
    }

    async fn resolve_binding(
        &self,
        element: &ElementRef,
        binding: RefBinding,
    ) -> Result<Resolved, BrowserError> {
        let label = format!(
            "{} ({} \"{}\")",
            element.as_str(),
            binding.role,
            binding.name
        );
        let gone = |why: &str| BrowserError::Stale {
            reason: format!("{label} {why}"),
        };
        // After a detach and resume the observed session is gone; the same frame's live one serves.
        let session = &self.live_session(&binding.session);
        let ax_check = async {
            match binding.fingerprint {
                Some(_) => None,
                None => Some(
                    session
                        .call(GetPartialAxTree {
                            backend_node_id: Some(binding.backend_node_id),
                            fetch_relatives: Some(false),
                        })
                        .await,
                ),
            }
        };
        let (object, ax) = tokio::join!(
            session.call(ResolveNode {
                backend_node_id: Some(binding.backend_node_id),
                execution_context_id: None
            }),
            ax_check,
        );
        let object = object.map_err(|_| gone("is no longer in the page"))?;
        let object_id = object
            .object
            .object_id
            .ok_or_else(|| gone("is no longer in the page"))?;
        if let Some(ax) = ax {
            let ax = ax.map_err(|_| gone("is no longer in the page"))?;
            let node = ax
                .nodes
                .iter()
                .find(|n| n.backend_dom_node_id == Some(binding.backend_node_id))
                .or(ax.nodes.first());
            let role = node
                .and_then(|n| n.role.as_ref())
                .and_then(|r| r.text())
                .unwrap_or_default();
            let name = node
                .and_then(|n| n.name.as_ref())
                .and_then(|r| r.text())
                .map(|n| crate::model::fold(&n))
                .unwrap_or_default();
            if role != binding.ax_role || name != binding.ax_name {
                return Err(BrowserError::Stale {
                    reason: format!(
                        "{} changed: it was {} \"{}\", it is now {} \"{}\"",
                        element.as_str(),
                        binding.ax_role,
                        binding.ax_name,
                        role,
                        name
                    ),
                });
            }
        }
        let resolved = Resolved {
            label: format!("{} {} \"{}\"", element.as_str(), binding.role, binding.name),
            session: session.clone(),
            backend_node_id: binding.backend_node_id,
            object_id,
            frame_offset: binding.frame_offset,
            observed_bounds: Some(binding.bounds),
            role: binding.role.clone(),
            name: binding.name.clone(),
            last_facts: Default::default(),
        };
        // The fingerprint (what the element was when observed) and the facts the checks read
        // next, in one round trip.
        let (now, facts) = match &binding.fingerprint {
            Some(_) => {
                let both = self
                    .call_on(&resolved, &FINGERPRINT_AND_FACTS_JS, vec![], false)
                    .await?;
                let (now, facts) = serde_json::from_value::<(Value, Facts)>(both).map_err(|e| {
                    BrowserError::Internal {
                        reason: format!("element facts did not decode: {e}"),
                    }
                })?;
                (Some(now), facts)
            }
            None => (None, self.facts(&resolved).await?),
        };
        if let (Some(expected), Some(now)) = (&binding.fingerprint, now)
            && now.as_str() != Some(expected.as_str())
        {
            return Err(BrowserError::Stale {
                reason: format!(
                    "{} changed since it was observed as {} \"{}\"",
                    element.as_str(),
                    binding.role,
                    binding.name
                ),
            });
        }
        if !facts.connected {
            return Err(gone("was removed from the page"));
        }
        resolved.keep_facts(facts);
        Ok(resolved)
    }

    pub(super) async fn call_on(
        &self,
        r: &Resolved,
        function: &str,
        args: Vec<Value>,
        await_promise: bool,
    ) -> Result<Value, BrowserError> {
        let reply = r
            .session
            .call(CallFunctionOn {
                function_declaration: function.to_owned(),
                object_id: Some(r.object_id.clone()),
                arguments: args
                    .into_iter()
                    .map(|v| CallArgument {
                        value: Some(v),
                        object_id: None,
                    })
                    .collect(),
                return_by_value: Some(true),
                await_promise: Some(await_promise),
                ..Default::default()
            })
            .await?;
        if let Some(exception) = reply.exception_details {
            return Err(BrowserError::Internal {
                reason: format!("element script failed: {}", exception.message()),
            });
        }
        Ok(reply.result.value.unwrap_or(Value::Null))
    }

    pub(super) async fn facts(&self, r: &Resolved) -> Result<Facts, BrowserError> {
        let value = self.call_on(r, ACTIONABILITY_JS, vec![], false).await?;
        serde_json::from_value(value).map_err(|e| BrowserError::Internal {
            reason: format!("element facts did not decode: {e}"),
        })
    }

    /// Waits (within `until`) for the element to be visible, stable, enabled, in view and — for
    /// pointer input — the one receiving the pointer. Returns the point in top-level viewport pixels.
    pub(super) async fn actionable_point(
        &self,
        r: &Resolved,
        need: Need,
        viewport: (f64, f64),
        until: Instant,
    ) -> Result<(f64, f64), BrowserError> {
        let label = r.label.clone();
        let mut attempt = 0u32;
        // A pass that stalls (a loaded machine, a busy page) ends a little before the action's
        // deadline, so the refusal names the last reason seen instead of running into a timeout.
        let stop = until
            - Duration::from_millis(150).min(until.saturating_duration_since(Instant::now()) / 10);
        let mut seen: Option<String> = None;
        loop {
            let checked = Instant::now();
            let pass = match tokio::time::timeout_at(
                stop.into(),
                self.check_once(r, need, &label, viewport),
            )
            .await
            {
                Ok(pass) => pass?,
                Err(_) => match seen {
                    Some(reason) => return Err(BrowserError::NotActionable { reason }),
                    None => {
                        return Err(BrowserError::Timeout {
                            what: format!("checking that {label} can be acted on"),
                            after_ms: checked.elapsed().as_millis() as u64,
                        });
                    }
                },
            };
            let last_reason = match pass {
                Pass::Ready(point) => return Ok(point),
                Pass::Retry(reason) => reason,
            };
            seen = Some(last_reason.clone());
            attempt += 1;
            let pause = Duration::from_millis([0, 20, 50, 100, 100, 250][attempt.min(5) as usize]);
            // Stop while there is still time for one more pass and the refusal, so a slow machine
            // reports why (covered, disabled) rather than running into the action's deadline.
            let one_pass = checked.elapsed().max(Duration::from_millis(25)) * 2;
            if Instant::now() + pause + one_pass >= until {
                return Err(BrowserError::NotActionable {
                    reason: last_reason,
                });
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// One pass of the checks: `Ready(point)`, `Retry(reason)`, or `Err` to give up.
    async fn check_once(
        &self,
        r: &Resolved,
        need: Need,
        label: &str,
        viewport: (f64, f64),
    ) -> Result<Pass, BrowserError> {
        let facts = match r.take_facts() {
            Some(facts) => facts,
            None => self.facts(r).await?,
        };
        if !facts.connected {
            return Err(BrowserError::Stale {
                reason: format!("{label} was removed from the page"),
            });
        }
        if facts.disabled {
            return Ok(Pass::Retry(format!("{label} is disabled")));
        }
        if need == Need::Edit && !facts.editable && !is_settable_input(&facts) {
            return Err(BrowserError::NotActionable {
                reason: format!("{label} is not editable"),
            });
        }
        let session = &r.session;
        let Some(first) = self.quad_centre(r).await? else {
            return Ok(Pass::Retry(format!("{label} is not visible")));
        };
        let (ox, oy) = r.frame_offset;
        // Stable: where it was when observed (an earlier frame), or the same box across two
        // animation frames now.
        let unmoved = r.observed_bounds.is_some_and(|[bx, by, bw, bh]| {
            (first.0 + ox - (bx + bw / 2.0)).abs() <= 0.5
                && (first.1 + oy - (by + bh / 2.0)).abs() <= 0.5
        });
        let second = if unmoved {
            first
        } else {
            self.call_on(r, "function () { return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true)))); }", vec![], true)
                .await?;
            let Some(second) = self.quad_centre(r).await? else {
                return Ok(Pass::Retry(format!("{label} is not visible")));
            };
            if (first.0 - second.0).abs() > 0.5 || (first.1 - second.1).abs() > 0.5 {
                return Ok(Pass::Retry(format!("{label} is moving")));
            }
            second
        };
        let (x, y) = (second.0 + ox, second.1 + oy);
        let (width, height) = viewport;
        if !(0.0..width).contains(&x) || !(0.0..height).contains(&y) {
            session
                .call(ScrollIntoViewIfNeeded {
                    backend_node_id: Some(r.backend_node_id),
                    object_id: None,
                })
                .await?;
            return Ok(Pass::Retry(format!("{label} is outside the viewport")));
        }
        if need == Need::Pointer {
            // The hit test takes document coordinates of the node's own frame.
            let (hx, hy) = (second.0 + facts.scroll_x, second.1 + facts.scroll_y);
            let hit = match session
                .call(GetNodeForLocation {
                    x: hx.round() as i64,
                    y: hy.round() as i64,
                    include_user_agent_shadow_dom: Some(false),
                    ignore_pointer_events_none: Some(false),
                })
                .await
            {
                Ok(hit) => hit,
                Err(cdp::CdpError::Protocol { .. }) => {
                    return Ok(Pass::Retry(format!(
                        "nothing receives the pointer at the centre of {label}"
                    )));
                }
                Err(e) => return Err(e.into()),
            };
            if hit.backend_node_id != r.backend_node_id {
                let hit_object = session
                    .call(ResolveNode {
                        backend_node_id: Some(hit.backend_node_id),
                        execution_context_id: None,
                    })
                    .await?;
                let hit_id = hit_object.object.object_id.unwrap_or_default();
                let inside = session
                    .call(CallFunctionOn {
                        function_declaration: CONTAINS_JS.to_owned(),
                        object_id: Some(r.object_id.clone()),
                        arguments: vec![CallArgument {
                            value: None,
                            object_id: Some(hit_id.clone()),
                        }],
                        return_by_value: Some(true),
                        ..Default::default()
                    })
                    .await?;
                if inside.result.value != Some(Value::Bool(true)) {
                    let described = session
                        .call(CallFunctionOn {
                            function_declaration: DESCRIBE_JS.to_owned(),
                            object_id: Some(hit_id),
                            return_by_value: Some(true),
                            ..Default::default()
                        })
                        .await?;
                    let covering = described
                        .result
                        .value
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_else(|| "another element".into());
                    return Ok(Pass::Retry(format!("{label} is covered by {covering}")));
                }
            }
        }
        // What the control's state was just before the dispatch, for the click's verdict.
        r.keep_facts(facts);
        Ok(Pass::Ready((x, y)))
    }

    pub(super) async fn quad_centre(
        &self,
        r: &Resolved,
    ) -> Result<Option<(f64, f64)>, BrowserError> {
        Ok(self
            .quad_extent(r)
            .await?
            .map(|(l, t, rt, b)| ((l + rt) / 2.0, (t + b) / 2.0)))
    }

    /// The first visible content quad's extent (left, top, right, bottom), frame-local.
    pub(super) async fn quad_extent(
        &self,
        r: &Resolved,
    ) -> Result<Option<(f64, f64, f64, f64)>, BrowserError> {
        let quads = match r
            .session
            .call(GetContentQuads {
                backend_node_id: Some(r.backend_node_id),
                object_id: None,
            })
            .await
        {
            Ok(q) => q.quads,
            Err(cdp::CdpError::Protocol { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(quads.iter().filter(|q| q.len() == 8).find_map(|q| {
            let area = ((q[0] * q[3] - q[2] * q[1])
                + (q[2] * q[5] - q[4] * q[3])
                + (q[4] * q[7] - q[6] * q[5])
                + (q[6] * q[1] - q[0] * q[7]))
                .abs()
                / 2.0;
            (area > 0.99).then(|| {
                let xs = [q[0], q[2], q[4], q[6]];
                let ys = [q[1], q[3], q[5], q[7]];
                (
                    xs.iter().copied().fold(f64::INFINITY, f64::min),
                    ys.iter().copied().fold(f64::INFINITY, f64::min),
                    xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    ys.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                )
            })
        }))
    }
}

pub(super) fn is_settable_input(facts: &Facts) -> bool {
    facts.tag == "input"
        && matches!(
            facts.input_type.as_str(),
            "date" | "time" | "datetime-local" | "month" | "week" | "color" | "range"
        )
}

/// The binding of a ref of `record`, or `Stale` when that observation did not issue it.
fn binding_of(
    record: &ObservationRecord,
    element: &ElementRef,
) -> Result<RefBinding, BrowserError> {
    record
        .binding(element)
        .cloned()
        .ok_or_else(|| BrowserError::Stale {
            reason: format!(
                "{} is not a ref of frame {}",
                element.as_str(),
                record.frame_id.as_str()
            ),
        })
}

/// Describes any element object for a message (`div#consent-banner "Accept cookies"`).
pub(super) async fn describe(session: &Session, object_id: &str) -> String {
    let described = session
        .call(CallFunctionOn {
            function_declaration: DESCRIBE_JS.to_owned(),
            object_id: Some(object_id.to_owned()),
            return_by_value: Some(true),
            ..Default::default()
        })
        .await;
    described
        .ok()
        .and_then(|d| d.result.value)
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "an element".into())
}

/// The outcome of one actionability pass; only the retry loop turns `Retry` into an error.
enum Pass {
    /// Actionable at this point (top-level viewport pixels).
    Ready((f64, f64)),
    /// Not yet: why (retried until the deadline, then reported).
    Retry(String),
}

#[cfg(test)]
mod tests {
    use super::{ClickVerdict as V, Toggle as T, click_verdict};

    /// Issue 36: only a control that promises a state is ever `failed` for not changing it.
    #[test]
    fn a_click_fails_only_a_control_that_promised_a_change() {
        for (toggle, before, after, verdict) in [
            (Some(T::Checkbox), Some(false), Some(true), V::Confirmed),
            (Some(T::Checkbox), Some(true), Some(false), V::Confirmed),
            (Some(T::Checkbox), Some(false), Some(false), V::Failed),
            (Some(T::Pressed), Some(false), Some(true), V::Confirmed),
            (Some(T::Pressed), Some(true), Some(true), V::Failed),
            (Some(T::Radio), Some(false), Some(true), V::Confirmed),
            // A radio already set stays set: that is what clicking it does.
            (Some(T::Radio), Some(true), Some(true), V::Confirmed),
            (Some(T::Radio), Some(false), Some(false), V::Failed),
            // The state could not be read after: not confirmed, not failed.
            (Some(T::Checkbox), Some(false), None, V::Dispatched),
            // No promise (a text field, a link, a plain button): dispatched, whatever happened.
            (None, None, None, V::Dispatched),
            (None, Some(false), Some(false), V::Dispatched),
        ] {
            assert_eq!(
                click_verdict(toggle, before, after),
                verdict,
                "{toggle:?} {before:?} → {after:?}"
            );
        }
    }
}
