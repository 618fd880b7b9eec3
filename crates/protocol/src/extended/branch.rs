//! The branch structs of [`crate::extended::ExtendedAction`], one per `type`, with the wire
//! forms of the three that carry a cross-field rule (`scroll`, `select`, `dialog`); not the
//! enum or its helpers (see [`crate::extended::action`]).
//!
//! Every field whose absence means "as v1" is skipped when it has its default, so a v1 action
//! serialises to the same JSON either way.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::action::{DeltaY, HttpUrl, Intent, KeyName, SelectValue, TypedText, WaitMillis};
use crate::extended::fields::{
    ClickCount, DeltaX, DragMode, DragPath, FieldError, Modifiers, MouseButton, Offset, PromptText,
    SelectValues, SingleKey, TypeMode, UploadFiles, is_default,
};
use crate::extended::locator::is_false;
use crate::extended::target::{ElementSpec, Target};
use crate::ids::FrameId;

/// `click`: a click, double click or triple click with any button, modifiers held, on an
/// element (by ref or locator) or a viewport point; optionally capturing the download it
/// starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClickAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// An element ref, a locator or a viewport point.
    pub target: Target,
    /// The button; `left` when absent.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(extend("default" = "left"))]
    pub button: MouseButton,
    /// 1, 2 (double click) or 3 (triple click); 1 when absent.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(extend("default" = 1))]
    pub click_count: ClickCount,
    /// Modifier keys held during the click; none when absent.
    #[serde(default, skip_serializing_if = "Modifiers::is_empty")]
    pub modifiers: Modifiers,
    /// Capture the download this click starts into the run's artifacts. The runtime arms the
    /// capture before clicking, so the event cannot be missed (`004_…`: "先监听下载/弹窗再触发"),
    /// and reports the artifact id; without it, a download the click starts is not captured.
    #[serde(default, skip_serializing_if = "is_false")]
    #[schemars(extend("default" = false))]
    pub expect_download: bool,
    /// Why.
    pub intent: Intent,
}

/// `hover`: move the pointer over an element or a viewport point, modifiers held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HoverAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// An element ref, a locator or a viewport point.
    pub target: Target,
    /// Modifier keys held while hovering; none when absent.
    #[serde(default, skip_serializing_if = "Modifiers::is_empty")]
    pub modifiers: Modifiers,
    /// Why.
    pub intent: Intent,
}

/// `type`: replace an editable element's text, by insertion or by keystrokes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// The element to type into.
    pub target: ElementSpec,
    /// The text.
    pub text: TypedText,
    /// How the text goes in; `auto` (v1's behaviour) when absent.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(extend("default" = "auto"))]
    pub mode: TypeMode,
    /// Why.
    pub intent: Intent,
}

/// `press`: press a key or a chord (`Enter`, `Control+A`) with an element focused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PressAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// The element to focus.
    pub target: ElementSpec,
    /// The key or chord.
    pub key: KeyName,
    /// Why.
    pub intent: Intent,
}

/// `key_down` and `key_up`: press or release one key and leave it so, for chords spanning
/// several actions (hold Shift, click, click, release). The runtime releases every key and
/// button still held when the run ends or is cancelled (`004_…`: "撤销…释放已按下的键/按钮").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// The element to focus first; when absent the key goes to whatever has focus, which
    /// suits modifiers that only change later pointer actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ElementSpec")]
    pub target: Option<ElementSpec>,
    /// One key, not a chord.
    pub key: SingleKey,
    /// Why.
    pub intent: Intent,
}

/// The distances of a `scroll`: horizontal, vertical or both, at least one given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScrollDelta {
    x: Option<DeltaX>,
    y: Option<DeltaY>,
}

impl ScrollDelta {
    /// The delta; at least one axis must be given (a zero counts).
    pub fn new(x: Option<DeltaX>, y: Option<DeltaY>) -> Result<Self, FieldError> {
        if x.is_none() && y.is_none() {
            return Err(FieldError::NoScrollDelta);
        }
        Ok(Self { x, y })
    }

    /// A vertical scroll, as in v1.
    pub fn vertical(y: DeltaY) -> Self {
        Self {
            x: None,
            y: Some(y),
        }
    }

    /// `delta_x` as given.
    pub fn x(&self) -> Option<DeltaX> {
        self.x
    }

    /// `delta_y` as given.
    pub fn y(&self) -> Option<DeltaY> {
        self.y
    }

    /// Horizontal CSS pixels (0 when not given); positive scrolls right.
    pub fn x_px(&self) -> i32 {
        self.x.map_or(0, DeltaX::get)
    }

    /// Vertical CSS pixels (0 when not given); positive scrolls down.
    pub fn y_px(&self) -> i32 {
        self.y.map_or(0, DeltaY::get)
    }
}

/// `scroll`: scroll the viewport, or the scrollable area under an element, by a delta.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ScrollWire", into = "ScrollWire")]
pub struct ScrollAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// The element to scroll over (the wheel goes to its centre); the viewport's centre when
    /// absent, as in v1.
    pub target: Option<ElementSpec>,
    /// How far.
    pub delta: ScrollDelta,
    /// Why.
    pub intent: Intent,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScrollWire {
    expected_frame_id: FrameId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ElementSpec")]
    target: Option<ElementSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "DeltaX")]
    delta_x: Option<DeltaX>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "DeltaY")]
    delta_y: Option<DeltaY>,
    intent: Intent,
}

impl TryFrom<ScrollWire> for ScrollAction {
    type Error = FieldError;
    fn try_from(w: ScrollWire) -> Result<Self, FieldError> {
        Ok(Self {
            expected_frame_id: w.expected_frame_id,
            target: w.target,
            delta: ScrollDelta::new(w.delta_x, w.delta_y)?,
            intent: w.intent,
        })
    }
}

impl From<ScrollAction> for ScrollWire {
    fn from(a: ScrollAction) -> Self {
        Self {
            expected_frame_id: a.expected_frame_id,
            target: a.target,
            delta_x: a.delta.x,
            delta_y: a.delta.y,
            intent: a.intent,
        }
    }
}

impl JsonSchema for ScrollAction {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ScrollAction".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let mut schema = ScrollWire::json_schema(g);
        schema.insert(
            "anyOf".into(),
            json!([{"required": ["delta_x"]}, {"required": ["delta_y"]}]),
        );
        schema
    }
}

/// What a `select` chooses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SelectChoice {
    /// `value`: one option, as in v1.
    One(SelectValue),
    /// `values`: these options of a multi-select, and no others.
    Many(SelectValues),
}

/// `select`: choose one option, or several of a multi-select, by value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SelectWire", into = "SelectWire")]
pub struct SelectAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// The select element.
    pub target: ElementSpec,
    /// The option values.
    pub choice: SelectChoice,
    /// Why.
    pub intent: Intent,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SelectWire {
    expected_frame_id: FrameId,
    target: ElementSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "SelectValue")]
    value: Option<SelectValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "SelectValues")]
    values: Option<SelectValues>,
    intent: Intent,
}

impl TryFrom<SelectWire> for SelectAction {
    type Error = FieldError;
    fn try_from(w: SelectWire) -> Result<Self, FieldError> {
        let choice = match (w.value, w.values) {
            (Some(one), None) => SelectChoice::One(one),
            (None, Some(many)) => SelectChoice::Many(many),
            _ => return Err(FieldError::SelectChoice),
        };
        Ok(Self {
            expected_frame_id: w.expected_frame_id,
            target: w.target,
            choice,
            intent: w.intent,
        })
    }
}

impl From<SelectAction> for SelectWire {
    fn from(a: SelectAction) -> Self {
        let (value, values) = match a.choice {
            SelectChoice::One(one) => (Some(one), None),
            SelectChoice::Many(many) => (None, Some(many)),
        };
        Self {
            expected_frame_id: a.expected_frame_id,
            target: a.target,
            value,
            values,
            intent: a.intent,
        }
    }
}

impl JsonSchema for SelectAction {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SelectAction".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let mut schema = SelectWire::json_schema(g);
        schema.insert(
            "oneOf".into(),
            json!([{"required": ["value"]}, {"required": ["values"]}]),
        );
        schema
    }
}

/// `navigate`: load a URL in the leased tab (never another tab), as in v1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NavigateAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// The destination.
    pub url: HttpUrl,
    /// Why.
    pub intent: Intent,
}

/// `wait`: wait for the page to settle, as in v1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// How long.
    pub duration_ms: WaitMillis,
    /// Why.
    pub intent: Intent,
}

/// `drag`: press on `source`, move along `path`, release on `destination` (plus `end_offset`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DragAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// Where the drag starts: an element's centre, or a point.
    pub source: Target,
    /// Where it ends: an element's centre, or a point, moved by `end_offset`.
    pub destination: Target,
    /// Viewport points to pass through on the way, in order; a straight move when absent.
    #[serde(default, skip_serializing_if = "DragPath::is_empty")]
    pub path: DragPath,
    /// Where to release relative to the destination's centre (or point), in CSS pixels; when
    /// absent, an element is dropped on past its middle in the direction of travel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Offset")]
    pub end_offset: Option<Offset>,
    /// Pointer events or HTML5 drag and drop; `mouse` when absent.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(extend("default" = "mouse"))]
    pub mode: DragMode,
    /// Why.
    pub intent: Intent,
}

/// `upload`: set the files of a file input, or of the file chooser an element opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// The file input, or the element whose click opens a file chooser.
    pub target: ElementSpec,
    /// The files, by names the runtime maps to authorised paths; never filesystem paths.
    pub files: UploadFiles,
    /// Why.
    pub intent: Intent,
}

/// How a `dialog` action answers the open JavaScript dialog.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DialogResponse {
    /// Press OK; for a `prompt()`, enter `prompt_text` first (its default text when absent).
    Accept {
        /// The prompt's answer.
        prompt_text: Option<PromptText>,
    },
    /// Press Cancel (or close an `alert()`).
    Dismiss,
}

/// `dialog`: answer the `alert`/`confirm`/`prompt`/`beforeunload` dialog that blocks the
/// leased tab. While one is open, every other action fails until it is answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "DialogWire", into = "DialogWire")]
pub struct DialogAction {
    /// The frame this action was planned against.
    pub expected_frame_id: FrameId,
    /// Accept or dismiss.
    pub response: DialogResponse,
    /// Why.
    pub intent: Intent,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DialogWire {
    expected_frame_id: FrameId,
    accept: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "PromptText")]
    prompt_text: Option<PromptText>,
    intent: Intent,
}

impl TryFrom<DialogWire> for DialogAction {
    type Error = FieldError;
    fn try_from(w: DialogWire) -> Result<Self, FieldError> {
        let response = match (w.accept, w.prompt_text) {
            (true, prompt_text) => DialogResponse::Accept { prompt_text },
            (false, None) => DialogResponse::Dismiss,
            (false, Some(_)) => return Err(FieldError::PromptOnDismiss),
        };
        Ok(Self {
            expected_frame_id: w.expected_frame_id,
            response,
            intent: w.intent,
        })
    }
}

impl From<DialogAction> for DialogWire {
    fn from(a: DialogAction) -> Self {
        let (accept, prompt_text) = match a.response {
            DialogResponse::Accept { prompt_text } => (true, prompt_text),
            DialogResponse::Dismiss => (false, None),
        };
        Self {
            expected_frame_id: a.expected_frame_id,
            accept,
            prompt_text,
            intent: a.intent,
        }
    }
}

impl JsonSchema for DialogAction {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DialogAction".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let mut schema = DialogWire::json_schema(g);
        schema.insert(
            "if".into(),
            json!({"properties": {"accept": {"const": false}}, "required": ["accept"]}),
        );
        schema.insert("then".into(), json!({"not": {"required": ["prompt_text"]}}));
        schema
    }
}
