//! `ExtendedAction`, the second (`glovebox.actions/2`) action set: one struct per branch, the
//! kind enum and the helpers an executor needs; not its schema text or validation (see
//! [`crate::extended::schema`] and [`crate::extended::validate`]).
//!
//! Every field whose absence means "as v1" is skipped when it has its default, so a v1 action
//! serialises to the same JSON either way, and [`ExtendedAction::as_v1`] gives it back.

use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::action::{
    Action, ActionKind, DeltaY, HttpUrl, Intent, KeyName, SelectValue, TypedText, WaitMillis,
};
use crate::extended::fields::{
    ClickCount, DeltaX, DragMode, DragPath, FieldError, Modifiers, MouseButton, Offset, PromptText,
    SelectValues, SingleKey, TypeMode, UploadFiles, is_default,
};
use crate::extended::locator::is_false;
use crate::extended::target::{ElementSpec, Target, TargetRef};
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
    /// Where to release relative to the destination's centre (or point), in CSS pixels.
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

/// One step of the extended set (`glovebox.actions/2`): a strict superset of [`Action`].
///
/// `type` is the discriminant; every branch carries the `expected_frame_id` it was planned
/// against and an `intent`, with v1's bounds. Every valid v1 action JSON reads as the
/// extended action with the same meaning ([`From<Action>`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExtendedAction {
    /// Click (single, double, triple; any button; modifiers; download capture).
    Click(ClickAction),
    /// Type text.
    Type(TypeAction),
    /// Press a key or chord.
    Press(PressAction),
    /// Scroll horizontally and/or vertically.
    Scroll(ScrollAction),
    /// Hover, modifiers held.
    Hover(HoverAction),
    /// Choose one or several options.
    Select(SelectAction),
    /// Navigate the leased tab.
    Navigate(NavigateAction),
    /// Wait for the page to settle.
    Wait(WaitAction),
    /// Drag from a source to a destination.
    Drag(DragAction),
    /// Press and hold one key.
    KeyDown(KeyAction),
    /// Release one held key.
    KeyUp(KeyAction),
    /// Upload authorised files.
    Upload(UploadAction),
    /// Answer a JavaScript dialog.
    Dialog(DialogAction),
}

/// The discriminant of an [`ExtendedAction`], without its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtendedKind {
    /// `click`
    Click,
    /// `type`
    Type,
    /// `press`
    Press,
    /// `scroll`
    Scroll,
    /// `hover`
    Hover,
    /// `select`
    Select,
    /// `navigate`
    Navigate,
    /// `wait`
    Wait,
    /// `drag`
    Drag,
    /// `key_down`
    KeyDown,
    /// `key_up`
    KeyUp,
    /// `upload`
    Upload,
    /// `dialog`
    Dialog,
}

impl ExtendedKind {
    /// Every kind, in the published order: v1's eight, then the new five.
    pub const ALL: [ExtendedKind; 13] = [
        Self::Click,
        Self::Type,
        Self::Press,
        Self::Scroll,
        Self::Hover,
        Self::Select,
        Self::Navigate,
        Self::Wait,
        Self::Drag,
        Self::KeyDown,
        Self::KeyUp,
        Self::Upload,
        Self::Dialog,
    ];

    /// The wire name, e.g. `"key_down"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Click => "click",
            Self::Type => "type",
            Self::Press => "press",
            Self::Scroll => "scroll",
            Self::Hover => "hover",
            Self::Select => "select",
            Self::Navigate => "navigate",
            Self::Wait => "wait",
            Self::Drag => "drag",
            Self::KeyDown => "key_down",
            Self::KeyUp => "key_up",
            Self::Upload => "upload",
            Self::Dialog => "dialog",
        }
    }

    /// The kind with this wire name, if any.
    pub fn from_wire(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The v1 kind of the same name, for the eight v1 kinds.
    pub fn as_v1(self) -> Option<ActionKind> {
        ActionKind::from_wire(self.as_str())
    }

    /// Whether the action can change the page (everything but `wait`; a hover can open a
    /// menu, a key up can end a drag, answering a dialog unblocks the page).
    pub fn mutates(self) -> bool {
        !matches!(self, Self::Wait)
    }

    /// The fields that hold targets, and whether each accepts a point: `target` of click and
    /// hover (points allowed), `source` and `destination` of drag (points allowed), `target`
    /// of type, press, key down/up, scroll, select and upload (elements only).
    pub fn target_fields(self) -> &'static [(&'static str, bool)] {
        match self {
            Self::Click | Self::Hover => &[("target", true)],
            Self::Drag => &[("source", true), ("destination", true)],
            Self::Type
            | Self::Press
            | Self::KeyDown
            | Self::KeyUp
            | Self::Scroll
            | Self::Select
            | Self::Upload => &[("target", false)],
            Self::Navigate | Self::Wait | Self::Dialog => &[],
        }
    }
}

impl From<ActionKind> for ExtendedKind {
    fn from(k: ActionKind) -> Self {
        match k {
            ActionKind::Click => Self::Click,
            ActionKind::Type => Self::Type,
            ActionKind::Press => Self::Press,
            ActionKind::Scroll => Self::Scroll,
            ActionKind::Hover => Self::Hover,
            ActionKind::Select => Self::Select,
            ActionKind::Navigate => Self::Navigate,
            ActionKind::Wait => Self::Wait,
        }
    }
}

impl fmt::Display for ExtendedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Applies `$body` to the branch struct of every variant, bound as `$a`.
macro_rules! each_branch {
    ($action:expr, $a:ident => $body:expr) => {
        match $action {
            ExtendedAction::Click($a) => $body,
            ExtendedAction::Type($a) => $body,
            ExtendedAction::Press($a) => $body,
            ExtendedAction::Scroll($a) => $body,
            ExtendedAction::Hover($a) => $body,
            ExtendedAction::Select($a) => $body,
            ExtendedAction::Navigate($a) => $body,
            ExtendedAction::Wait($a) => $body,
            ExtendedAction::Drag($a) => $body,
            ExtendedAction::KeyDown($a) | ExtendedAction::KeyUp($a) => $body,
            ExtendedAction::Upload($a) => $body,
            ExtendedAction::Dialog($a) => $body,
        }
    };
}

impl ExtendedAction {
    /// The action's kind.
    pub fn kind(&self) -> ExtendedKind {
        match self {
            Self::Click(_) => ExtendedKind::Click,
            Self::Type(_) => ExtendedKind::Type,
            Self::Press(_) => ExtendedKind::Press,
            Self::Scroll(_) => ExtendedKind::Scroll,
            Self::Hover(_) => ExtendedKind::Hover,
            Self::Select(_) => ExtendedKind::Select,
            Self::Navigate(_) => ExtendedKind::Navigate,
            Self::Wait(_) => ExtendedKind::Wait,
            Self::Drag(_) => ExtendedKind::Drag,
            Self::KeyDown(_) => ExtendedKind::KeyDown,
            Self::KeyUp(_) => ExtendedKind::KeyUp,
            Self::Upload(_) => ExtendedKind::Upload,
            Self::Dialog(_) => ExtendedKind::Dialog,
        }
    }

    /// The frame the action was planned against.
    pub fn expected_frame_id(&self) -> &FrameId {
        each_branch!(self, a => &a.expected_frame_id)
    }

    /// The model's stated reason.
    pub fn intent(&self) -> &Intent {
        each_branch!(self, a => &a.intent)
    }

    /// Whether the action can change the page (see [`ExtendedKind::mutates`]).
    pub fn mutates(&self) -> bool {
        self.kind().mutates()
    }

    /// Every target the action names, in wire order (a drag's source, then its destination).
    /// A drag's path points are waypoints, not targets, and are not included.
    pub fn targets(&self) -> impl Iterator<Item = TargetRef<'_>> {
        let (first, second) = match self {
            Self::Click(a) => (Some(a.target.view()), None),
            Self::Hover(a) => (Some(a.target.view()), None),
            Self::Type(a) => (Some(a.target.view()), None),
            Self::Press(a) => (Some(a.target.view()), None),
            Self::Select(a) => (Some(a.target.view()), None),
            Self::Upload(a) => (Some(a.target.view()), None),
            Self::KeyDown(a) | Self::KeyUp(a) => (a.target.as_ref().map(ElementSpec::view), None),
            Self::Scroll(a) => (a.target.as_ref().map(ElementSpec::view), None),
            Self::Drag(a) => (Some(a.source.view()), Some(a.destination.view())),
            Self::Navigate(_) | Self::Wait(_) | Self::Dialog(_) => (None, None),
        };
        first.into_iter().chain(second)
    }

    /// The v1 action with the same meaning, when there is one: a v1 kind, element refs (not
    /// locators), and every extended field absent or at its default.
    pub fn as_v1(&self) -> Option<Action> {
        let frame = || self.expected_frame_id().clone();
        let intent = || self.intent().clone();
        let element = |spec: &ElementSpec| spec.element_ref().cloned();
        Some(match self {
            Self::Click(a) => {
                let plain = a.button == MouseButton::Left
                    && a.click_count == ClickCount::default()
                    && a.modifiers.is_empty()
                    && !a.expect_download;
                if !plain {
                    return None;
                }
                Action::Click {
                    expected_frame_id: frame(),
                    target: a.target.as_v1()?,
                    intent: intent(),
                }
            }
            Self::Hover(a) => {
                if !a.modifiers.is_empty() {
                    return None;
                }
                Action::Hover {
                    expected_frame_id: frame(),
                    target: a.target.as_v1()?,
                    intent: intent(),
                }
            }
            Self::Type(a) => {
                if a.mode != TypeMode::Auto {
                    return None;
                }
                Action::Type {
                    expected_frame_id: frame(),
                    target: element(&a.target)?,
                    text: a.text.clone(),
                    intent: intent(),
                }
            }
            Self::Press(a) => Action::Press {
                expected_frame_id: frame(),
                target: element(&a.target)?,
                key: a.key.clone(),
                intent: intent(),
            },
            Self::Scroll(a) => {
                if a.target.is_some() || a.delta.x().is_some() {
                    return None;
                }
                Action::Scroll {
                    expected_frame_id: frame(),
                    delta_y: a.delta.y()?,
                    intent: intent(),
                }
            }
            Self::Select(a) => {
                let SelectChoice::One(value) = &a.choice else {
                    return None;
                };
                Action::Select {
                    expected_frame_id: frame(),
                    target: element(&a.target)?,
                    value: value.clone(),
                    intent: intent(),
                }
            }
            Self::Navigate(a) => Action::Navigate {
                expected_frame_id: frame(),
                url: a.url.clone(),
                intent: intent(),
            },
            Self::Wait(a) => Action::Wait {
                expected_frame_id: frame(),
                duration_ms: a.duration_ms,
                intent: intent(),
            },
            Self::Drag(_)
            | Self::KeyDown(_)
            | Self::KeyUp(_)
            | Self::Upload(_)
            | Self::Dialog(_) => {
                return None;
            }
        })
    }
}

impl From<Action> for ExtendedAction {
    fn from(action: Action) -> Self {
        match action {
            Action::Click {
                expected_frame_id,
                target,
                intent,
            } => Self::Click(ClickAction {
                expected_frame_id,
                target: target.into(),
                button: MouseButton::default(),
                click_count: ClickCount::default(),
                modifiers: Modifiers::NONE,
                expect_download: false,
                intent,
            }),
            Action::Type {
                expected_frame_id,
                target,
                text,
                intent,
            } => Self::Type(TypeAction {
                expected_frame_id,
                target: target.into(),
                text,
                mode: TypeMode::default(),
                intent,
            }),
            Action::Press {
                expected_frame_id,
                target,
                key,
                intent,
            } => Self::Press(PressAction {
                expected_frame_id,
                target: target.into(),
                key,
                intent,
            }),
            Action::Scroll {
                expected_frame_id,
                delta_y,
                intent,
            } => Self::Scroll(ScrollAction {
                expected_frame_id,
                target: None,
                delta: ScrollDelta::vertical(delta_y),
                intent,
            }),
            Action::Hover {
                expected_frame_id,
                target,
                intent,
            } => Self::Hover(HoverAction {
                expected_frame_id,
                target: target.into(),
                modifiers: Modifiers::NONE,
                intent,
            }),
            Action::Select {
                expected_frame_id,
                target,
                value,
                intent,
            } => Self::Select(SelectAction {
                expected_frame_id,
                target: target.into(),
                choice: SelectChoice::One(value),
                intent,
            }),
            Action::Navigate {
                expected_frame_id,
                url,
                intent,
            } => Self::Navigate(NavigateAction {
                expected_frame_id,
                url,
                intent,
            }),
            Action::Wait {
                expected_frame_id,
                duration_ms,
                intent,
            } => Self::Wait(WaitAction {
                expected_frame_id,
                duration_ms,
                intent,
            }),
        }
    }
}

/// Adds the `type` discriminant to a branch struct's object schema.
fn branch_schema<T: JsonSchema>(g: &mut SchemaGenerator, kind: ExtendedKind) -> Value {
    let mut schema = T::json_schema(g).to_value();
    if let Value::Object(map) = &mut schema {
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            properties.insert("type".into(), json!({"const": kind.as_str()}));
        }
        let mut required = vec![json!("type")];
        if let Some(Value::Array(names)) = map.get("required") {
            required.extend(names.iter().cloned());
        }
        map.insert("required".into(), Value::Array(required));
    }
    schema
}

impl JsonSchema for ExtendedAction {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ExtendedAction".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        use ExtendedKind as K;
        let branches = vec![
            branch_schema::<ClickAction>(g, K::Click),
            branch_schema::<TypeAction>(g, K::Type),
            branch_schema::<PressAction>(g, K::Press),
            branch_schema::<ScrollAction>(g, K::Scroll),
            branch_schema::<HoverAction>(g, K::Hover),
            branch_schema::<SelectAction>(g, K::Select),
            branch_schema::<NavigateAction>(g, K::Navigate),
            branch_schema::<WaitAction>(g, K::Wait),
            branch_schema::<DragAction>(g, K::Drag),
            branch_schema::<KeyAction>(g, K::KeyDown),
            branch_schema::<KeyAction>(g, K::KeyUp),
            branch_schema::<UploadAction>(g, K::Upload),
            branch_schema::<DialogAction>(g, K::Dialog),
        ];
        let mut schema = Schema::default();
        schema.insert("oneOf".into(), Value::Array(branches));
        schema
    }
}
