//! `ExtendedAction`, the second (`glovebox.actions/2`) action set: the enum, its kinds and the
//! helpers an executor needs; not the branch structs (see [`crate::extended::branch`]) nor the
//! schema text or validation (see [`crate::extended::schema`] and
//! [`crate::extended::validate`]).

use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::action::{Action, ActionKind, Intent};
use crate::extended::branch::{
    ClickAction, DialogAction, DragAction, HoverAction, KeyAction, NavigateAction, PressAction,
    ScrollAction, ScrollDelta, SelectAction, SelectChoice, TypeAction, UploadAction, WaitAction,
};
use crate::extended::fields::{ClickCount, Modifiers, MouseButton, TypeMode};
use crate::extended::target::{ElementSpec, TargetRef};
use crate::ids::FrameId;

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
