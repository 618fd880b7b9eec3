//! `select` on a native `<select>`: one option (v1), or exactly these options of a
//! multi-select (extended `values`); not custom list boxes, which are clicked like anything else.

use std::time::Instant;

use cdp::EventStream;
use protocol::{ActionKind, FrameId, Receipt};
use serde_json::{Value, json};

use super::element::{Need, Resolved};
use crate::BrowserError;
use crate::tab::Tab;

/// What to choose.
pub(super) enum Choice<'a> {
    /// One option, by value or label (v1: added to a multi-select's choice).
    One(&'a str),
    /// Exactly these options, and no others.
    Many(Vec<&'a str>),
}

impl Tab {
    /// Chooses options of a native `<select>` and verifies that they stay chosen. A missing
    /// option is an error listing the options; several values for a single-choice list too.
    pub(super) async fn select_options(
        &self,
        resolved: &Resolved,
        choice: Choice<'_>,
        viewport: (f64, f64),
        nav: &mut EventStream,
        until: Instant,
        frame: FrameId,
    ) -> Result<Receipt, BrowserError> {
        let kind = ActionKind::Select;
        self.actionable_point(resolved, Need::Focus, viewport, until)
            .await?;
        let facts = self.facts(resolved).await?;
        if facts.tag != "select" {
            return Err(BrowserError::NotActionable {
                reason: format!(
                    "{} is not a native <select>; click it to open its list, observe, then click the option",
                    resolved.label
                ),
            });
        }
        let chosen = match &choice {
            Choice::One(value) => {
                self.call_on(resolved, SELECT_JS, vec![json!(value)], false)
                    .await?
            }
            Choice::Many(values) => {
                if values.len() > 1 && !facts.multiple {
                    return Err(BrowserError::NotActionable {
                        reason: format!(
                            "{} takes one option, not {}; give one value",
                            resolved.label,
                            values.len()
                        ),
                    });
                }
                self.call_on(resolved, SELECT_MANY_JS, vec![json!(values)], false)
                    .await?
            }
        };
        if let Some(error) = chosen.get("error").and_then(Value::as_str) {
            return Err(BrowserError::NotActionable {
                reason: error.to_owned(),
            });
        }
        self.settle(nav, until).await;
        let held = match &choice {
            Choice::One(_) => {
                let wanted = chosen
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.facts(resolved).await?.value.as_deref() == Some(wanted)
            }
            Choice::Many(_) => {
                let mut now = self.call_on(resolved, SELECTED_JS, vec![], false).await?;
                let mut wanted = chosen.get("values").cloned().unwrap_or(Value::Null);
                sort(&mut now);
                sort(&mut wanted);
                now == wanted
            }
        };
        if held {
            Ok(Receipt::confirmed(kind, frame))
        } else {
            Ok(Receipt::failed(
                kind,
                frame,
                protocol::ErrorCode::InvalidAction,
                true,
                "the options did not stay selected",
            ))
        }
    }
}

fn sort(list: &mut Value) {
    if let Value::Array(items) = list {
        items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
}

const SELECT_JS: &str = include_str!("../js/select.js");

const SELECT_MANY_JS: &str = include_str!("../js/select-many.js");

const SELECTED_JS: &str = "function () { return [...this.selectedOptions].map((o) => o.value); }";
