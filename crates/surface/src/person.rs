//! A person's input through the real entry of a live view, as the console sends it, and the
//! frames a view shows. Surface-neutral: a tab, a desktop and a guest take the same input; each
//! adapter dispatches it its own way (`SurfaceAdapter::person_view`).

use serde::Deserialize;

/// The longest URL a person may navigate to from the view.
const MAX_URL: usize = 2048;

/// Why a person's input was refused; nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PersonInputRefused {
    #[error("{0}")]
    Invalid(String),
    #[error("a person's navigation from the console goes to an http or https URL")]
    Scheme,
}

/// One frame of a surface's live picture, as the adapter captured it.
#[derive(Debug, Clone)]
pub struct CastFrame {
    /// Capture time (ms since the epoch, the backend's clock), when it says.
    pub captured_at: Option<u64>,
    /// JPEG, base64.
    pub data: String,
    /// The viewport in CSS px (pointer coordinates are in it).
    pub width: f64,
    pub height: f64,
    /// The scroll offset when captured.
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

const MODIFIER_KEYS: [&str; 8] = [
    "Shift", "Control", "Alt", "Meta", "AltGraph", "CapsLock", "OS", "Fn",
];

impl PersonInput {
    /// Whether this input acts on the page (a pause of the agent), or only looks (hover, release,
    /// focus moves with Tab, a lone modifier).
    pub fn acts(&self) -> bool {
        match self {
            Self::Pointer { event, .. } => {
                matches!(event, PointerEvent::Down | PointerEvent::Wheel)
            }
            Self::Key {
                event: KeyEvent::Up,
                ..
            } => false,
            Self::Key { key, .. } => key != "Tab" && !MODIFIER_KEYS.contains(&key.as_str()),
            Self::Navigate { .. } | Self::History { .. } => true,
        }
    }

    /// Refuses what no page should receive from a person's view, before anything is sent.
    pub fn check(&self) -> Result<(), PersonInputRefused> {
        let bad = |why: &str| Err(PersonInputRefused::Invalid(why.to_owned()));
        match self {
            Self::Pointer {
                x,
                y,
                delta_x,
                delta_y,
                button,
                click_count,
                modifiers,
                ..
            } => {
                let coordinate = |v: f64| v.is_finite() && (0.0..=100_000.0).contains(&v);
                if !coordinate(*x) || !coordinate(*y) {
                    return bad("a pointer position is a finite CSS px point inside the page");
                }
                if [delta_x, delta_y]
                    .into_iter()
                    .flatten()
                    .any(|d| !d.is_finite() || d.abs() > 100_000.0)
                {
                    return bad("a wheel delta is finite and at most 100000 px");
                }
                if button.as_deref().is_some_and(|b| {
                    !["none", "left", "middle", "right", "back", "forward"].contains(&b)
                }) {
                    return bad("button is none, left, middle, right, back or forward");
                }
                if click_count.is_some_and(|c| !(0..=3).contains(&c))
                    || modifiers.is_some_and(|m| !(0..=15).contains(&m))
                {
                    return bad("click_count is 0..3 and modifiers a bit set of 0..15");
                }
            }
            Self::Key {
                key,
                code,
                key_code,
                modifiers,
                ..
            } => {
                if key.is_empty() || key.len() > 32 || code.as_ref().is_some_and(|c| c.len() > 32) {
                    return bad("a key is named in at most 32 bytes");
                }
                if key_code.is_some_and(|c| !(0..=255).contains(&c))
                    || modifiers.is_some_and(|m| !(0..=15).contains(&m))
                {
                    return bad("key_code is 0..255 and modifiers a bit set of 0..15");
                }
            }
            Self::Navigate { url } => {
                if url.len() > MAX_URL {
                    return bad("a URL is at most 2048 bytes");
                }
                let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
                if !matches!(scheme.as_deref(), Some("http" | "https")) {
                    return Err(PersonInputRefused::Scheme);
                }
            }
            Self::History { .. } => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PersonInputRefused as C;
    use serde_json::{Value, json};

    fn input(v: Value) -> PersonInput {
        serde_json::from_value(v).unwrap()
    }

    /// `004_…` 让出控制的规则: pointer down (a click, the start of a selection), wheel, typing and
    /// command keys, navigation pause the agent; hover, release, Tab/Shift+Tab and lone modifiers
    /// do not.
    #[test]
    fn only_input_that_acts_pauses_the_agent() {
        let acts = |v: Value| input(v).acts();
        assert!(acts(
            json!({"input": "pointer", "event": "down", "x": 1.0, "y": 2.0})
        ));
        assert!(acts(
            json!({"input": "pointer", "event": "wheel", "x": 1.0, "y": 2.0, "delta_y": 100.0})
        ));
        assert!(!acts(
            json!({"input": "pointer", "event": "move", "x": 1.0, "y": 2.0})
        ));
        assert!(!acts(
            json!({"input": "pointer", "event": "up", "x": 1.0, "y": 2.0})
        ));
        assert!(acts(json!({"input": "key", "event": "down", "key": "a"})));
        assert!(acts(
            json!({"input": "key", "event": "down", "key": "Enter"})
        ));
        assert!(acts(
            json!({"input": "key", "event": "down", "key": "a", "modifiers": 2})
        ));
        for key in ["Tab", "Shift", "Control", "Alt", "Meta"] {
            assert!(
                !acts(json!({"input": "key", "event": "down", "key": key, "modifiers": 8})),
                "{key}"
            );
        }
        assert!(!acts(json!({"input": "key", "event": "up", "key": "a"})));
        assert!(acts(
            json!({"input": "navigate", "url": "https://example.com/"})
        ));
        assert!(acts(json!({"input": "history", "to": "back"})));
    }

    #[test]
    fn bad_input_is_refused_with_a_closed_code_before_anything_is_sent() {
        let code = |v: Value| input(v).check().unwrap_err();
        assert!(matches!(
            code(json!({"input": "pointer", "event": "down", "x": -1.0, "y": 2.0})),
            C::Invalid(_)
        ));
        assert!(matches!(
            code(json!({"input": "pointer", "event": "down", "x": 1.0, "y": 1e9})),
            C::Invalid(_)
        ));
        assert!(matches!(
            code(
                json!({"input": "pointer", "event": "down", "x": 1.0, "y": 1.0, "button": "fourth"})
            ),
            C::Invalid(_)
        ));
        assert!(matches!(
            code(
                json!({"input": "pointer", "event": "down", "x": 1.0, "y": 1.0, "click_count": 9})
            ),
            C::Invalid(_)
        ));
        assert!(matches!(
            code(json!({"input": "key", "event": "down", "key": ""})),
            C::Invalid(_)
        ));
        assert!(matches!(
            code(json!({"input": "key", "event": "down", "key": "x".repeat(40)})),
            C::Invalid(_)
        ));
        assert!(matches!(
            code(json!({"input": "navigate", "url": "javascript:alert(1)"})),
            C::Scheme
        ));
        assert!(matches!(
            code(json!({"input": "navigate", "url": "file:///etc/passwd"})),
            C::Scheme
        ));
        assert!(matches!(
            code(
                json!({"input": "navigate", "url": format!("https://a.example/{}", "x".repeat(3000))})
            ),
            C::Invalid(_)
        ));
        assert!(
            input(json!({"input": "navigate", "url": "HTTPS://a.example/"}))
                .check()
                .is_ok()
        );
        // Unknown fields and kinds do not parse at all.
        assert!(
            serde_json::from_value::<PersonInput>(
                json!({"input": "pointer", "event": "down", "x": 1.0, "y": 1.0, "extra": 1})
            )
            .is_err()
        );
        assert!(
            serde_json::from_value::<PersonInput>(json!({"input": "script", "code": "1"})).is_err()
        );
    }
}
