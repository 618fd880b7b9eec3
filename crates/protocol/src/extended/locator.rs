//! Locators of the extended action set: elements found by role and name, label, text or test
//! id, afresh on every action, optionally inside a chain of frames; not their wire reading
//! (see [`crate::extended::target`]) nor their resolution (the browser crate's).
//!
//! `004_…` ("提供限定的 role/name、label、text、test-ID … 和 frame 进入 … 每动作重新定位；歧义 …
//! 返回 stale-target"): a locator is re-resolved against the live page each time an action runs,
//! never cached from an earlier observation. It must match exactly one element; none is an
//! error, and several is an error that lists the candidates (the runtime's, with refs). An
//! element ref, by contrast, is only valid for the observation that issued it.
//!
//! # Matching (`exact`)
//!
//! Both sides are compared after folding every run of whitespace into one space and trimming
//! the ends (as [`crate::text::fold_whitespace`] does), Playwright-style:
//!
//! - `exact: false` (the default): case-insensitive substring. `{"kind":"text","text":"log
//!   in"}` matches "Log in", "Log in now" and "Please LOG IN".
//! - `exact: true`: case-sensitive whole string. `{"kind":"text","text":"Log in",
//!   "exact":true}` matches "Log in" and " Log  in " only.
//!
//! What is compared: `role` is the element's computed ARIA role (explicit or implicit), always
//! exact, lower case; `name` the role element's accessible name (omitted: any name); `label`
//! the text of its label (`<label>`, `aria-labelledby`, `aria-label`) for form controls;
//! `text` the element's rendered text (the innermost element whose text matches); `test_id`
//! the `data-testid` attribute, always exact.
//!
//! # Frames
//!
//! `frame` is a chain of up to four frame steps, outermost first; each step must resolve to
//! exactly one `<iframe>` or `<frame>` inside the document the previous step entered (the
//! page's, for the first), and the locator then searches only the innermost frame's document.
//! A step names the frame element by element ref (`{"kind":"element","ref":"e7"}`: every
//! rendered `<iframe>` gets a ref in an observation, shown as `iframe "Title" [e7]`, and
//! refs are valid across the whole observation, frames included), by `title` (the frame's `title`
//! attribute, which is its accessible name; `exact` as above) or by `test_id`. The brief's
//! `{"kind":"frame","ref":…}` is spelled `{"kind":"element","ref":…}` here, so that an
//! element ref reads the same wherever it appears. Element-ref targets take no `frame`: the
//! ref already says which frame the element is in.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::action::{ElementTarget, ValueError, below, bounded_string};
use crate::extended::fields::FieldError;
use crate::ids::ElementRef;
use crate::limits::*;
use crate::text::char_count;

bounded_string!(
    /// Text a locator matches (`text`, `label`, a role's `name`, a frame's `title`):
    /// 1..=500 characters. Never empty: an empty substring would match every element.
    LocatorText, field = "text", min = 1, max = LOCATOR_TEXT_MAX_CHARS,
    schema = json_schema!({"type": "string", "minLength": 1, "maxLength": LOCATOR_TEXT_MAX_CHARS}),
    schema_name = "LocatorText", inline = true
);
bounded_string!(
    /// A test id, matched exactly against `data-testid`: 1..=256 characters.
    TestId, field = "id", min = 1, max = TEST_ID_MAX_CHARS,
    schema = json_schema!({"type": "string", "minLength": 1, "maxLength": TEST_ID_MAX_CHARS}),
    schema_name = "TestId", inline = true
);

/// The pattern of an [`AriaRole`]: lower-case words joined by hyphens (`button`,
/// `menuitemcheckbox`, `doc-abstract`). It admits the empty string so that an empty role
/// fails only `minLength`, with one clear message.
pub const ARIA_ROLE_PATTERN: &str = "^([a-z]+(-[a-z]+)*)?$";

/// An ARIA role token for a role locator, 1..=64 characters matching [`ARIA_ROLE_PATTERN`].
/// The shape is checked here; whether the role exists is the page's business (an unknown
/// role simply matches nothing).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AriaRole(String);

impl AriaRole {
    /// Checks the bounds and the shape and wraps `value`.
    pub fn new(value: impl Into<String>) -> Result<Self, ValueError> {
        let value = value.into();
        let got = char_count(&value);
        if below(got, 1) {
            return Err(ValueError::TooShort {
                field: "role",
                min: 1,
                got,
            });
        }
        if got > ROLE_MAX_CHARS {
            return Err(ValueError::TooLong {
                field: "role",
                max: ROLE_MAX_CHARS,
                got,
            });
        }
        let well_formed = value
            .split('-')
            .all(|word| !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase()));
        if !well_formed {
            return Err(ValueError::Pattern {
                field: "role",
                pattern: ARIA_ROLE_PATTERN,
            });
        }
        Ok(Self(value))
    }

    /// The role token.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AriaRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for AriaRole {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AriaRole {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl JsonSchema for AriaRole {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "AriaRole".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": ROLE_MAX_CHARS,
            "pattern": ARIA_ROLE_PATTERN,
        })
    }
}

/// `false`, for `skip_serializing_if` on `exact`.
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

/// One frame to enter, by the frame element: see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FrameStep {
    /// The `<iframe>` with this ref in the expected observation: `{"kind":"element","ref":"e7"}`.
    Element {
        /// The frame element's ref.
        #[serde(rename = "ref")]
        element: ElementRef,
    },
    /// The frame whose `title` matches: `{"kind":"title","text":"Payment","exact":true}`.
    Title {
        /// The title to match.
        text: LocatorText,
        /// Case-sensitive whole-string match instead of case-insensitive substring.
        #[serde(default, skip_serializing_if = "is_false")]
        exact: bool,
    },
    /// The frame whose `data-testid` is `id`: `{"kind":"test_id","id":"checkout-frame"}`.
    TestId {
        /// The test id.
        id: TestId,
    },
}

impl From<ElementTarget> for FrameStep {
    fn from(t: ElementTarget) -> Self {
        Self::Element { element: t.element }
    }
}

/// Declares a zero-sized type that publishes one hand-written schema under `$defs/$name`.
macro_rules! schema_def {
    ($ty:ident, $name:literal, |$generator:ident| $body:expr) => {
        pub(crate) struct $ty;
        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema($generator: &mut SchemaGenerator) -> Schema {
                $body
            }
        }
    };
}

schema_def!(TitleFrameStepSchema, "titleFrameStep", |g| json_schema!({
    "type": "object",
    "properties": {
        "kind": {"const": "title"},
        "text": g.subschema_for::<LocatorText>(),
        "exact": {"type": "boolean", "default": false},
    },
    "required": ["kind", "text"],
    "additionalProperties": false,
}));
schema_def!(TestIdFrameStepSchema, "testIdFrameStep", |g| json_schema!({
    "type": "object",
    "properties": {"kind": {"const": "test_id"}, "id": g.subschema_for::<TestId>()},
    "required": ["kind", "id"],
    "additionalProperties": false,
}));

impl JsonSchema for FrameStep {
    fn schema_name() -> Cow<'static, str> {
        "frameStep".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "oneOf": [
                g.subschema_for::<ElementTarget>(),
                g.subschema_for::<TitleFrameStepSchema>(),
                g.subschema_for::<TestIdFrameStepSchema>(),
            ],
        })
    }
}

/// The frames a locator searches in, outermost first: 1..=4 steps.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FrameChain(Vec<FrameStep>);

impl FrameChain {
    /// Checks the length and wraps `steps`. Repeats are allowed (nested frames can share a title).
    pub fn new(steps: Vec<FrameStep>) -> Result<Self, FieldError> {
        if steps.is_empty() {
            return Err(FieldError::TooFew {
                field: "frame",
                min: 1,
                got: 0,
            });
        }
        if steps.len() > FRAME_CHAIN_MAX {
            return Err(FieldError::TooMany {
                field: "frame",
                max: FRAME_CHAIN_MAX,
                got: steps.len(),
            });
        }
        Ok(Self(steps))
    }

    /// The steps, outermost first.
    pub fn steps(&self) -> &[FrameStep] {
        &self.0
    }
}

impl Serialize for FrameChain {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for FrameChain {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(Vec::<FrameStep>::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl JsonSchema for FrameChain {
    fn schema_name() -> Cow<'static, str> {
        "frameChain".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "items": g.subschema_for::<FrameStep>(),
            "minItems": 1,
            "maxItems": FRAME_CHAIN_MAX,
        })
    }
}

/// An element found afresh on each action (see the module docs for matching and frames).
/// On the wire a target object whose `kind` is `role`, `label`, `text` or `test_id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Locator {
    /// `{"kind":"role","role":"button","name":"Save","exact":true}`.
    Role {
        /// The ARIA role.
        role: AriaRole,
        /// The accessible name to match; any name when absent.
        name: Option<LocatorText>,
        /// Case-sensitive whole-string match of `name`.
        exact: bool,
        /// The frames to enter first; the top document when absent.
        frame: Option<FrameChain>,
    },
    /// `{"kind":"label","text":"Email"}`: the form control with this label.
    Label {
        /// The label text to match.
        text: LocatorText,
        /// Case-sensitive whole-string match.
        exact: bool,
        /// The frames to enter first.
        frame: Option<FrameChain>,
    },
    /// `{"kind":"text","text":"Sign in"}`: the element showing this text.
    Text {
        /// The text to match.
        text: LocatorText,
        /// Case-sensitive whole-string match.
        exact: bool,
        /// The frames to enter first.
        frame: Option<FrameChain>,
    },
    /// `{"kind":"test_id","id":"submit"}`: the element with this `data-testid`.
    TestId {
        /// The test id, matched exactly.
        id: TestId,
        /// The frames to enter first.
        frame: Option<FrameChain>,
    },
}

impl Locator {
    /// The wire `kind`: `role`, `label`, `text` or `test_id`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Role { .. } => "role",
            Self::Label { .. } => "label",
            Self::Text { .. } => "text",
            Self::TestId { .. } => "test_id",
        }
    }

    /// The frames to enter before searching; `None` for the top document.
    pub fn frame(&self) -> Option<&FrameChain> {
        match self {
            Self::Role { frame, .. }
            | Self::Label { frame, .. }
            | Self::Text { frame, .. }
            | Self::TestId { frame, .. } => frame.as_ref(),
        }
    }
}

schema_def!(RoleLocatorSchema, "roleLocator", |g| json_schema!({
    "type": "object",
    "properties": {
        "kind": {"const": "role"},
        "role": g.subschema_for::<AriaRole>(),
        "name": g.subschema_for::<LocatorText>(),
        "exact": {"type": "boolean", "default": false},
        "frame": g.subschema_for::<FrameChain>(),
    },
    "required": ["kind", "role"],
    "additionalProperties": false,
}));
schema_def!(LabelLocatorSchema, "labelLocator", |g| text_locator(
    "label", g
));
schema_def!(TextLocatorSchema, "textLocator", |g| text_locator(
    "text", g
));
schema_def!(TestIdLocatorSchema, "testIdLocator", |g| json_schema!({
    "type": "object",
    "properties": {
        "kind": {"const": "test_id"},
        "id": g.subschema_for::<TestId>(),
        "frame": g.subschema_for::<FrameChain>(),
    },
    "required": ["kind", "id"],
    "additionalProperties": false,
}));

fn text_locator(kind: &str, g: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "properties": {
            "kind": {"const": kind},
            "text": g.subschema_for::<LocatorText>(),
            "exact": {"type": "boolean", "default": false},
            "frame": g.subschema_for::<FrameChain>(),
        },
        "required": ["kind", "text"],
        "additionalProperties": false,
    })
}

impl JsonSchema for Locator {
    fn schema_name() -> Cow<'static, str> {
        "locator".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "oneOf": [
                g.subschema_for::<RoleLocatorSchema>(),
                g.subschema_for::<LabelLocatorSchema>(),
                g.subschema_for::<TextLocatorSchema>(),
                g.subschema_for::<TestIdLocatorSchema>(),
            ],
        })
    }
}
