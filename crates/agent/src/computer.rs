//! Providers' own computer tools, translated into protocol actions: Anthropic's
//! `computer_20250124` and `computer_20251124` (with zoom), and OpenAI's Responses `computer`
//! tool (`computer_call` with one `action` or batched `actions[]`). Each pointer or keyboard
//! action becomes one action of the extended set, with points in the screenshot's pixels
//! (mapped to CSS pixels by `runtime::points_from_screenshot`); what cannot be done exactly is a
//! [`ComputerError`] the model hears. Nothing here sends anything: the planner performs each
//! action on the runtime's one path.

use serde_json::{Value, json};

/// Which computer tool a planner offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputerTool {
    /// Anthropic `computer_20250124` (beta `computer-use-2025-01-24`).
    #[serde(rename = "computer_20250124")]
    Anthropic20250124,
    /// Anthropic `computer_20251124` (beta `computer-use-2025-11-24`), zoom enabled.
    #[serde(rename = "computer_20251124")]
    Anthropic20251124,
    /// OpenAI Responses `computer` (batched `actions[]`).
    #[serde(rename = "openai_computer")]
    OpenAi,
    /// OpenAI Responses `computer_use_preview` (one `action` per call, display size and
    /// environment stated).
    #[serde(rename = "openai_computer_use_preview")]
    OpenAiPreview,
}

impl ComputerTool {
    /// The tool for `model` of `provider` when the configuration names no version: Anthropic's
    /// newest for the models that take it (Opus 4.5 and later), the older otherwise; OpenAI's
    /// preview tool for `computer-use-preview` models, the batched one otherwise.
    pub fn default_for(provider: crate::ProviderKind, model: &str) -> Option<ComputerTool> {
        match provider {
            crate::ProviderKind::Anthropic => {
                let newest = ["opus-4-5", "opus-4-6", "opus-5", "sonnet-4-6", "sonnet-5"]
                    .iter()
                    .any(|m| model.contains(m));
                Some(if newest {
                    ComputerTool::Anthropic20251124
                } else {
                    ComputerTool::Anthropic20250124
                })
            }
            crate::ProviderKind::OpenaiResponses => {
                Some(if model.contains("computer-use-preview") {
                    ComputerTool::OpenAiPreview
                } else {
                    ComputerTool::OpenAi
                })
            }
            crate::ProviderKind::OpenaiChat => None,
        }
    }

    /// Whether `provider` speaks this tool.
    pub fn fits(self, provider: crate::ProviderKind) -> bool {
        matches!(
            (self, provider),
            (
                ComputerTool::Anthropic20250124 | ComputerTool::Anthropic20251124,
                crate::ProviderKind::Anthropic
            ) | (
                ComputerTool::OpenAi | ComputerTool::OpenAiPreview,
                crate::ProviderKind::OpenaiResponses
            )
        )
    }

    /// The tool's definition for a display of `width`×`height` (the screenshot the model sees),
    /// and the beta header it needs.
    pub(crate) fn definition(self, width: u32, height: u32) -> (Value, Option<&'static str>) {
        match self {
            ComputerTool::Anthropic20250124 => (
                json!({"type": "computer_20250124", "name": "computer", "display_width_px": width, "display_height_px": height}),
                Some("computer-use-2025-01-24"),
            ),
            ComputerTool::Anthropic20251124 => (
                json!({"type": "computer_20251124", "name": "computer", "display_width_px": width, "display_height_px": height, "enable_zoom": true}),
                Some("computer-use-2025-11-24"),
            ),
            ComputerTool::OpenAi => (json!({"type": "computer"}), None),
            ComputerTool::OpenAiPreview => (
                json!({"type": "computer_use_preview", "display_width": width, "display_height": height, "environment": "browser"}),
                None,
            ),
        }
    }

    /// The largest screenshot sent (width, height, pixels): the provider's own bound, so the
    /// model's coordinates are in the image it actually saw, never one it rescaled.
    pub(crate) fn image_bounds(self) -> (u32, u32, u64) {
        match self {
            // Anthropic scales anything over 1568 px or ~1.15 MP; its computer tool is most
            // accurate at or below WXGA.
            ComputerTool::Anthropic20250124 | ComputerTool::Anthropic20251124 => {
                (1280, 800, 1_150_000)
            }
            // OpenAI's high detail: within 2048 px, the short side at most 768.
            ComputerTool::OpenAi | ComputerTool::OpenAiPreview => (2048, 768, 2048 * 768),
        }
    }

    pub(crate) fn is_openai(self) -> bool {
        matches!(self, ComputerTool::OpenAi | ComputerTool::OpenAiPreview)
    }
}

/// What one computer action asks of the planner.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Computed {
    /// A new screenshot (the next observation comes with one).
    Look,
    /// One protocol action, points still in the screenshot's pixels, its frame set when sent.
    Act(Value),
    /// A region of the current screenshot `(x0, y0, x1, y1)` at full resolution, answered from
    /// the screenshot the model's page came with (a read: nothing is sent to the page).
    Zoom((f64, f64, f64, f64)),
    /// Answered at once with this text (the cursor's position, a press noted).
    Answer(String),
}

/// Why a computer action is not one Glovebox performs (the model hears it and chooses again).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ComputerError {
    #[error("a computer call names its action")]
    NoAction,
    #[error("{action} needs {field}")]
    Needs { action: String, field: &'static str },
    #[error("{0} goes to the focused element, and nothing is focused: click the field first")]
    NothingFocused(String),
    #[error("the key {0:?} is not one Glovebox can press")]
    UnknownKey(String),
    #[error("a key action needs a key, e.g. \"Return\" or \"ctrl+a\"")]
    NoKey,
    #[error("{0}")]
    Unsupported(String),
    #[error("there is no computer action {0:?}")]
    Unknown(String),
}

/// The pointer as the model moved it (image pixels): where it is, and where the left button
/// went down if it is held (`left_mouse_down` … `left_mouse_up` become one drag or click).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Pointer {
    pub(crate) at: Option<(f64, f64)>,
    pub(crate) pressed: Option<(f64, f64)>,
}

/// One key name (xdotool's, or OpenAI's upper-case names) as Glovebox names it.
fn key_name(k: &str) -> Result<String, ComputerError> {
    Ok(match k.to_ascii_lowercase().as_str() {
        "ctrl" | "control" | "control_l" | "control_r" => "Control".into(),
        "alt" | "alt_l" | "alt_r" | "option" => "Alt".into(),
        "shift" | "shift_l" | "shift_r" => "Shift".into(),
        "super" | "super_l" | "super_r" | "cmd" | "meta" | "win" => "Meta".into(),
        "return" | "enter" | "kp_enter" => "Enter".into(),
        "backspace" => "Backspace".into(),
        "escape" | "esc" => "Escape".into(),
        "tab" => "Tab".into(),
        "delete" | "del" => "Delete".into(),
        "home" => "Home".into(),
        "end" => "End".into(),
        "page_up" | "pageup" | "prior" => "PageUp".into(),
        "page_down" | "pagedown" | "next" => "PageDown".into(),
        "up" | "arrowup" => "ArrowUp".into(),
        "down" | "arrowdown" => "ArrowDown".into(),
        "left" | "arrowleft" => "ArrowLeft".into(),
        "right" | "arrowright" => "ArrowRight".into(),
        "space" => "Space".into(),
        f if f.len() <= 3
            && f.starts_with('f')
            && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) =>
        {
            f.to_ascii_uppercase()
        }
        _ if k.chars().count() == 1 => k.to_owned(),
        _ => return Err(ComputerError::UnknownKey(k.to_owned())),
    })
}

/// A key or chord in xdotool syntax (`ctrl+a`, `Return`, `shift+Tab`) as Glovebox names it.
pub(crate) fn xdotool_chord(keys: &str) -> Result<String, ComputerError> {
    chord(keys.split('+'))
}

fn chord<'a>(keys: impl Iterator<Item = &'a str>) -> Result<String, ComputerError> {
    let parts = keys
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(key_name)
        .collect::<Result<Vec<String>, ComputerError>>()?;
    if parts.is_empty() {
        return Err(ComputerError::NoKey);
    }
    Ok(parts.join("+"))
}

/// Modifiers named in a click's or scroll's `text` (`"shift"`, `"ctrl+alt"`).
fn modifiers(text: Option<&str>) -> Result<Vec<&'static str>, ComputerError> {
    let mut held = Vec::new();
    for k in text
        .unwrap_or_default()
        .split('+')
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        let m = match key_name(k)?.as_str() {
            "Control" => "Control",
            "Alt" => "Alt",
            "Shift" => "Shift",
            "Meta" => "Meta",
            _ => {
                return Err(ComputerError::Unsupported(format!(
                    "{k:?} is not a modifier; a click holds only ctrl, alt, shift or super"
                )));
            }
        };
        if !held.contains(&m) {
            held.push(m);
        }
    }
    Ok(held)
}

fn point(x: f64, y: f64) -> Value {
    json!({"kind": "point", "x": x, "y": y})
}

fn focused_target(focused: Option<&str>, action: &str) -> Result<Value, ComputerError> {
    focused
        .map(|r| json!({"kind": "element", "ref": r}))
        .ok_or_else(|| ComputerError::NothingFocused(action.to_owned()))
}

fn click(at: (f64, f64), button: &str, count: u8, held: &[&str], intent: &str) -> Computed {
    let mut a = json!({"type": "click", "target": point(at.0, at.1), "intent": intent});
    if button != "left" {
        a["button"] = json!(button);
    }
    if count > 1 {
        a["click_count"] = json!(count);
    }
    if !held.is_empty() {
        a["modifiers"] = json!(held);
    }
    Computed::Act(a)
}

fn scroll(dx: f64, dy: f64, intent: &str) -> Computed {
    let mut a = json!({"type": "scroll", "intent": intent});
    if dx != 0.0 {
        a["delta_x"] = json!(dx.round());
    }
    if dy != 0.0 {
        a["delta_y"] = json!(dy.round());
    }
    Computed::Act(a)
}

/// An Anthropic computer action (`computer_20250124`, or `computer_20251124` with `zoom`) as
/// the steps it takes: usually one; `hold_key` is a key down, a wait and a key up. Typing and
/// keys go to the focused element. `scale` is image pixels per CSS pixel (for scroll amounts).
pub(crate) fn anthropic(
    input: &Value,
    focused: Option<&str>,
    pointer: &mut Pointer,
    zoom: bool,
) -> Result<Vec<Computed>, ComputerError> {
    let action = input
        .get("action")
        .and_then(Value::as_str)
        .ok_or(ComputerError::NoAction)?;
    let needs = |field: &'static str| ComputerError::Needs {
        action: action.to_owned(),
        field,
    };
    let coordinate = |key: &'static str| -> Result<(f64, f64), ComputerError> {
        let c = input
            .get(key)
            .and_then(Value::as_array)
            .filter(|c| c.len() == 2)
            .ok_or_else(|| needs(key))?;
        Ok((
            c[0].as_f64().ok_or_else(|| needs(key))?,
            c[1].as_f64().ok_or_else(|| needs(key))?,
        ))
    };
    // A click without a coordinate clicks where the pointer is.
    let here = |pointer: &Pointer| coordinate("coordinate").or_else(|e| pointer.at.ok_or(e));
    let intent = format!("computer {action}");
    let held = modifiers(
        input
            .get("text")
            .and_then(Value::as_str)
            .filter(|_| action.ends_with("click") || action == "scroll"),
    )?;
    let one = |c: Computed| Ok(vec![c]);
    match action {
        "screenshot" => one(Computed::Look),
        "left_click" | "right_click" | "middle_click" | "double_click" | "triple_click" => {
            let at = here(pointer)?;
            pointer.at = Some(at);
            let (button, count) = match action {
                "right_click" => ("right", 1),
                "middle_click" => ("middle", 1),
                "double_click" => ("left", 2),
                "triple_click" => ("left", 3),
                _ => ("left", 1),
            };
            one(click(at, button, count, &held, &intent))
        }
        "mouse_move" => {
            let at = coordinate("coordinate")?;
            pointer.at = Some(at);
            if pointer.pressed.is_some() {
                return one(Computed::Answer(format!(
                    "the pointer moved to ({}, {}) with the left button held",
                    at.0, at.1
                )));
            }
            one(Computed::Act(
                json!({"type": "hover", "target": point(at.0, at.1), "intent": intent}),
            ))
        }
        "left_click_drag" => {
            let (from, to) = (
                coordinate("start_coordinate").or_else(|e| pointer.at.ok_or(e))?,
                coordinate("coordinate")?,
            );
            pointer.at = Some(to);
            one(Computed::Act(
                json!({"type": "drag", "source": point(from.0, from.1), "destination": point(to.0, to.1), "intent": intent}),
            ))
        }
        "left_mouse_down" => {
            let at = here(pointer)?;
            if pointer.pressed.is_some() {
                return Err(ComputerError::Unsupported(
                    "the left button is already down; release it with left_mouse_up".into(),
                ));
            }
            pointer.at = Some(at);
            pointer.pressed = Some(at);
            one(Computed::Answer(format!(
                "the left button is down at ({}, {}); it reaches the page with left_mouse_up, as a click there or a drag to where the pointer is then",
                at.0, at.1
            )))
        }
        "left_mouse_up" => {
            let Some(from) = pointer.pressed.take() else {
                return Err(ComputerError::Unsupported(
                    "the left button is not down; press it with left_mouse_down first".into(),
                ));
            };
            let to = here(pointer)?;
            pointer.at = Some(to);
            if (to.0 - from.0).abs() < 1.0 && (to.1 - from.1).abs() < 1.0 {
                one(click(from, "left", 1, &[], &intent))
            } else {
                one(Computed::Act(
                    json!({"type": "drag", "source": point(from.0, from.1), "destination": point(to.0, to.1), "intent": intent}),
                ))
            }
        }
        "type" => {
            let text = input
                .get("text")
                .and_then(Value::as_str)
                .ok_or_else(|| needs("text"))?;
            one(Computed::Act(
                json!({"type": "type", "target": focused_target(focused, action)?, "text": text, "intent": intent}),
            ))
        }
        "key" => {
            let keys = xdotool_chord(
                input
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| needs("text"))?,
            )?;
            one(Computed::Act(
                json!({"type": "press", "target": focused_target(focused, action)?, "key": keys, "intent": intent}),
            ))
        }
        "hold_key" => {
            let key = key_name(
                input
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| needs("text"))?
                    .trim(),
            )?;
            let seconds = input
                .get("duration")
                .and_then(Value::as_f64)
                .ok_or_else(|| needs("duration"))?
                .clamp(0.0, 10.0);
            Ok(vec![
                Computed::Act(json!({"type": "key_down", "key": key, "intent": intent})),
                Computed::Act(
                    json!({"type": "wait", "duration_ms": (seconds * 1000.0).round(), "intent": intent}),
                ),
                Computed::Act(json!({"type": "key_up", "key": key, "intent": intent})),
            ])
        }
        "scroll" => {
            if let Ok(at) = coordinate("coordinate") {
                pointer.at = Some(at);
            }
            // One scroll "click" is 100 CSS pixels, as a wheel notch.
            let px = input
                .get("scroll_amount")
                .and_then(Value::as_f64)
                .unwrap_or(3.0)
                .clamp(1.0, 50.0)
                * 100.0;
            let (dx, dy) = match input.get("scroll_direction").and_then(Value::as_str) {
                Some("down") => (0.0, px),
                Some("up") => (0.0, -px),
                Some("right") => (px, 0.0),
                Some("left") => (-px, 0.0),
                _ => return Err(needs("scroll_direction up, down, left or right")),
            };
            if !held.is_empty() {
                return Err(ComputerError::Unsupported(
                    "a scroll with keys held is not one Glovebox performs; scroll without them"
                        .into(),
                ));
            }
            one(scroll(dx, dy, &intent))
        }
        "wait" => {
            let seconds = input
                .get("duration")
                .and_then(Value::as_f64)
                .unwrap_or(1.0)
                .clamp(0.0, 30.0);
            one(Computed::Act(
                json!({"type": "wait", "duration_ms": (seconds * 1000.0).round(), "intent": intent}),
            ))
        }
        "cursor_position" => match pointer.at {
            Some((x, y)) => one(Computed::Answer(format!("X={x},Y={y}"))),
            None => one(Computed::Answer(
                "the pointer has not moved yet in this run".into(),
            )),
        },
        "zoom" if zoom => {
            let r = input
                .get("region")
                .and_then(Value::as_array)
                .filter(|r| r.len() == 4)
                .ok_or_else(|| needs("region [x0, y0, x1, y1]"))?;
            let n: Vec<f64> = r.iter().filter_map(Value::as_f64).collect();
            if n.len() != 4 || n[2] <= n[0] || n[3] <= n[1] {
                return Err(needs("region [x0, y0, x1, y1] with x1 > x0 and y1 > y0"));
            }
            one(Computed::Zoom((n[0], n[1], n[2], n[3])))
        }
        "zoom" => Err(ComputerError::Unsupported(
            "zoom is computer_20251124's; this tool has none".into(),
        )),
        other => Err(ComputerError::Unknown(other.to_owned())),
    }
}

/// One action of an OpenAI `computer_call` (`click`, `double_click`, `drag`, `keypress`, `move`,
/// `screenshot`, `scroll`, `type`, `wait`). `scale` is image pixels per CSS pixel: OpenAI's
/// scroll distances are in the screenshot's pixels.
pub(crate) fn openai(
    action: &Value,
    focused: Option<&str>,
    scale: f64,
) -> Result<Computed, ComputerError> {
    let kind = action
        .get("type")
        .and_then(Value::as_str)
        .ok_or(ComputerError::NoAction)?;
    let needs = |field: &'static str| ComputerError::Needs {
        action: kind.to_owned(),
        field,
    };
    let xy = |v: &Value| -> Result<(f64, f64), ComputerError> {
        Ok((
            v.get("x")
                .and_then(Value::as_f64)
                .ok_or_else(|| needs("x"))?,
            v.get("y")
                .and_then(Value::as_f64)
                .ok_or_else(|| needs("y"))?,
        ))
    };
    let held = |v: &Value| -> Result<Vec<&'static str>, ComputerError> {
        let keys: Vec<&str> = v
            .get("keys")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        modifiers(Some(&keys.join("+")))
    };
    let intent = format!("computer {kind}");
    match kind {
        "screenshot" => Ok(Computed::Look),
        "click" => {
            let button = match action
                .get("button")
                .and_then(Value::as_str)
                .unwrap_or("left")
            {
                "left" => "left",
                "right" => "right",
                "wheel" | "middle" => "middle",
                other => {
                    return Err(ComputerError::Unsupported(format!(
                        "the {other} button is not one Glovebox clicks; navigate instead"
                    )));
                }
            };
            Ok(click(xy(action)?, button, 1, &held(action)?, &intent))
        }
        "double_click" => Ok(click(xy(action)?, "left", 2, &held(action)?, &intent)),
        "move" => {
            let (x, y) = xy(action)?;
            Ok(Computed::Act(
                json!({"type": "hover", "target": point(x, y), "intent": intent}),
            ))
        }
        "drag" => {
            let path = action
                .get("path")
                .and_then(Value::as_array)
                .filter(|p| p.len() >= 2)
                .ok_or_else(|| needs("a path of at least two points"))?;
            let (from, to) = (xy(&path[0])?, xy(&path[path.len() - 1])?);
            Ok(Computed::Act(
                json!({"type": "drag", "source": point(from.0, from.1), "destination": point(to.0, to.1), "intent": intent}),
            ))
        }
        "keypress" => {
            let keys: Vec<&str> = action
                .get("keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let keys = chord(keys.into_iter())?;
            Ok(Computed::Act(
                json!({"type": "press", "target": focused_target(focused, kind)?, "key": keys, "intent": intent}),
            ))
        }
        "type" => {
            let text = action
                .get("text")
                .and_then(Value::as_str)
                .ok_or_else(|| needs("text"))?;
            Ok(Computed::Act(
                json!({"type": "type", "target": focused_target(focused, kind)?, "text": text, "intent": intent}),
            ))
        }
        "scroll" => {
            let dx = action
                .get("scroll_x")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                / scale.max(0.01);
            let dy = action
                .get("scroll_y")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                / scale.max(0.01);
            if dx == 0.0 && dy == 0.0 {
                return Err(needs("scroll_x or scroll_y"));
            }
            Ok(scroll(
                dx.clamp(-10_000.0, 10_000.0),
                dy.clamp(-10_000.0, 10_000.0),
                &intent,
            ))
        }
        // The reference loop waits about a second.
        "wait" => Ok(Computed::Act(
            json!({"type": "wait", "duration_ms": 1000, "intent": intent}),
        )),
        other => Err(ComputerError::Unknown(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(c: &Computed) -> &Value {
        match c {
            Computed::Act(a) => a,
            other => panic!("not an action: {other:?}"),
        }
    }

    #[test]
    fn anthropic_actions_become_protocol_actions() {
        let mut p = Pointer::default();
        let run =
            |v: Value, focused: Option<&str>, p: &mut Pointer| anthropic(&v, focused, p, true);
        let c = run(
            json!({"action": "triple_click", "coordinate": [10, 20]}),
            None,
            &mut p,
        )
        .unwrap();
        assert_eq!(
            (
                act(&c[0])["type"].clone(),
                act(&c[0])["click_count"].clone()
            ),
            (json!("click"), json!(3))
        );
        let c = run(
            json!({"action": "left_click", "coordinate": [1, 2], "text": "shift+ctrl"}),
            None,
            &mut p,
        )
        .unwrap();
        assert_eq!(act(&c[0])["modifiers"], json!(["Shift", "Control"]));
        let c = run(
            json!({"action": "key", "text": "ctrl+shift+Return"}),
            Some("e1"),
            &mut p,
        )
        .unwrap();
        assert_eq!(act(&c[0])["key"], "Control+Shift+Enter");
        assert_eq!(
            run(json!({"action": "type", "text": "Ada"}), None, &mut p),
            Err(ComputerError::NothingFocused("type".into()))
        );
        // Down, move, up: one drag from the press to the release.
        run(
            json!({"action": "left_mouse_down", "coordinate": [5, 5]}),
            None,
            &mut p,
        )
        .unwrap();
        assert!(matches!(
            run(
                json!({"action": "mouse_move", "coordinate": [50, 60]}),
                None,
                &mut p
            )
            .unwrap()[0],
            Computed::Answer(_)
        ));
        let c = run(json!({"action": "left_mouse_up"}), None, &mut p).unwrap();
        assert_eq!(
            (
                act(&c[0])["type"].clone(),
                act(&c[0])["destination"]["y"].clone()
            ),
            (json!("drag"), json!(60.0))
        );
        assert!(
            run(json!({"action": "left_mouse_up"}), None, &mut p).is_err(),
            "nothing is held"
        );
        // Down and up in place: a click.
        run(json!({"action": "left_mouse_down"}), None, &mut p).unwrap();
        let c = run(json!({"action": "left_mouse_up"}), None, &mut p).unwrap();
        assert_eq!(
            (
                act(&c[0])["type"].clone(),
                act(&c[0])["target"]["x"].clone()
            ),
            (json!("click"), json!(50.0))
        );
        assert_eq!(
            run(json!({"action": "cursor_position"}), None, &mut p).unwrap(),
            vec![Computed::Answer("X=50,Y=60".into())]
        );
        // hold_key: down, wait, up.
        let c = run(
            json!({"action": "hold_key", "text": "shift", "duration": 0.5}),
            None,
            &mut p,
        )
        .unwrap();
        let kinds: Vec<Value> = c.iter().map(|c| act(c)["type"].clone()).collect();
        assert_eq!(kinds, [json!("key_down"), json!("wait"), json!("key_up")]);
        assert_eq!(
            run(
                json!({"action": "zoom", "region": [0, 0, 100, 50]}),
                None,
                &mut p
            )
            .unwrap(),
            vec![Computed::Zoom((0.0, 0.0, 100.0, 50.0))]
        );
        assert!(
            anthropic(
                &json!({"action": "zoom", "region": [0, 0, 100, 50]}),
                None,
                &mut p,
                false
            )
            .is_err(),
            "zoom is the newer tool's"
        );
        assert!(
            run(
                json!({"action": "zoom", "region": [10, 0, 5, 50]}),
                None,
                &mut p
            )
            .is_err()
        );
        let c = run(json!({"action": "scroll", "coordinate": [5, 5], "scroll_direction": "up", "scroll_amount": 2}), None, &mut p).unwrap();
        assert_eq!(act(&c[0])["delta_y"], -200.0);
        assert!(
            run(
                json!({"action": "left_click"}),
                None,
                &mut Pointer::default()
            )
            .is_err(),
            "a first click needs its coordinate"
        );
        assert!(
            run(
                json!({"action": "key", "text": "hyper+x"}),
                Some("e1"),
                &mut p
            )
            .is_err()
        );
        assert!(
            run(
                json!({"action": "left_click", "coordinate": [1, 1], "text": "a"}),
                None,
                &mut p
            )
            .is_err(),
            "a is not a modifier"
        );
    }

    #[test]
    fn openai_actions_become_protocol_actions() {
        let c = openai(
            &json!({"type": "click", "button": "wheel", "x": 3, "y": 4}),
            None,
            1.0,
        )
        .unwrap();
        assert_eq!(
            (act(&c)["button"].clone(), act(&c)["target"]["y"].clone()),
            (json!("middle"), json!(4.0))
        );
        let c = openai(
            &json!({"type": "keypress", "keys": ["CTRL", "A"]}),
            Some("e2"),
            1.0,
        )
        .unwrap();
        assert_eq!(act(&c)["key"], "Control+A");
        let c = openai(
            &json!({"type": "scroll", "x": 1, "y": 1, "scroll_x": 0, "scroll_y": 600}),
            None,
            2.0,
        )
        .unwrap();
        assert_eq!(
            act(&c)["delta_y"],
            300.0,
            "screenshot pixels at scale 2 are half as many CSS pixels"
        );
        let c = openai(&json!({"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 5, "y": 5}, {"x": 30, "y": 40}]}), None, 1.0).unwrap();
        assert_eq!(
            act(&c)["destination"],
            json!({"kind": "point", "x": 30.0, "y": 40.0})
        );
        assert_eq!(
            openai(&json!({"type": "screenshot"}), None, 1.0).unwrap(),
            Computed::Look
        );
        assert!(
            openai(
                &json!({"type": "click", "button": "back", "x": 1, "y": 1}),
                None,
                1.0
            )
            .is_err()
        );
        assert!(
            openai(&json!({"type": "type", "text": "x"}), None, 1.0).is_err(),
            "nothing focused"
        );
        assert!(openai(&json!({"type": "teleport"}), None, 1.0).is_err());
    }
}
