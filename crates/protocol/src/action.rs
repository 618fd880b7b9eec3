//! `Action`, the first (v1) action set of `000_…` §06, with its bounded field types; not the
//! validation of model JSON (see [`crate::validate`]) nor the schema text (see [`crate::schema`]).
//!
//! Every field type checks its bound on construction and on deserialisation, so an `Action`
//! value is always one the published schema accepts. The extended set of `004_…` (double
//! click, drag, key down/up, upload, locators, …) will be a second, versioned enum beside this
//! one (`ExtendedAction`), not new variants here: the v1 schema is a published contract.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ids::{ElementRef, FrameId};
use crate::limits::*;
use crate::text::char_count;

/// Why a value is out of its field's bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Fewer characters than the field's minimum.
    #[error("{field} must have at least {min} characters, got {got}")]
    TooShort {
        /// The field name.
        field: &'static str,
        /// The minimum in characters.
        min: usize,
        /// The actual length in characters.
        got: usize,
    },
    /// More characters than the field's maximum.
    #[error("{field} must have at most {max} characters, got {got}")]
    TooLong {
        /// The field name.
        field: &'static str,
        /// The maximum in characters.
        max: usize,
        /// The actual length in characters.
        got: usize,
    },
    /// A number outside the field's range.
    #[error("{field} must be between {min} and {max}, got {got}")]
    OutOfRange {
        /// The field name.
        field: &'static str,
        /// The smallest allowed value.
        min: i64,
        /// The largest allowed value.
        max: i64,
        /// The actual value.
        got: i64,
    },
    /// A string that does not match the field's pattern.
    #[error("{field} must match {pattern}")]
    Pattern {
        /// The field name.
        field: &'static str,
        /// The pattern, as a regular expression.
        pattern: &'static str,
    },
}

/// Reads a JSON integer, accepting integral floats (`3.0`), as JSON Schema's `integer` does.
pub(crate) fn integral<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    struct Integral;
    impl Visitor<'_> for Integral {
        type Value = i64;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an integer")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
            Ok(v)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
            i64::try_from(v).map_err(|_| E::custom(format!("integer {v} is too large")))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
            // 2^63 is exactly representable; anything at or above it does not fit an i64.
            if v.is_finite() && v.fract() == 0.0 && v >= -(2f64.powi(63)) && v < 2f64.powi(63) {
                Ok(v as i64)
            } else {
                Err(E::custom(format!("{v} is not an integer in range")))
            }
        }
    }
    d.deserialize_any(Integral)
}

/// Reads a point coordinate: any integer ≥ 0, as the seed's schema allows (no maximum),
/// saturated at `u32::MAX`. A saturated coordinate lies outside every viewport, so the
/// runtime's viewport check rejects it; validation and the published schema stay in step.
pub(crate) fn coordinate<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    struct Coordinate;
    impl Visitor<'_> for Coordinate {
        type Value = u32;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an integer ≥ 0")
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u32, E> {
            Ok(u32::try_from(v).unwrap_or(u32::MAX))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u32, E> {
            u64::try_from(v)
                .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                .map_err(|_| E::custom(format!("{v} is negative")))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<u32, E> {
            if v.is_finite() && v.fract() == 0.0 && v >= 0.0 {
                // In range, or saturated: `as` saturates float-to-int casts.
                Ok(v as u32)
            } else {
                Err(E::custom(format!("{v} is not an integer ≥ 0")))
            }
        }
    }
    d.deserialize_any(Coordinate)
}

/// `got < min`, as a function so a zero minimum does not trip `unused_comparisons`.
pub(crate) fn below(got: usize, min: usize) -> bool {
    got < min
}

/// Declares a bounded string newtype. `$name_in_schema`: `Some(name)` publishes it under
/// `$defs/name`, `None` inlines it.
macro_rules! bounded_string {
    (
        $(#[$doc:meta])* $name:ident, field = $field:literal, min = $min:expr, max = $max:expr,
        schema = $schema:expr, schema_name = $sname:expr, inline = $inline:expr
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            /// Checks the bounds and wraps `value`.
            pub fn new(value: impl Into<String>) -> Result<Self, ValueError> {
                let value = value.into();
                let got = char_count(&value);
                if below(got, $min) {
                    return Err(ValueError::TooShort { field: $field, min: $min, got });
                }
                if got > $max {
                    return Err(ValueError::TooLong { field: $field, max: $max, got });
                }
                Ok(Self(value))
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The owned text.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Self::new(String::deserialize(d)?).map_err(de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                $inline
            }
            fn schema_name() -> Cow<'static, str> {
                ($sname).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                $schema
            }
        }
    };
}
pub(crate) use bounded_string;

bounded_string!(
    /// Why the model takes this step, in its words: 1..=240 characters. Shown to the user
    /// in the operation log.
    Intent, field = "intent", min = INTENT_MIN_CHARS, max = INTENT_MAX_CHARS,
    schema = json_schema!({"type": "string", "minLength": INTENT_MIN_CHARS, "maxLength": INTENT_MAX_CHARS}),
    schema_name = "intent", inline = false
);
bounded_string!(
    /// Text for `type`: at most 10,000 characters (may be empty).
    TypedText, field = "text", min = 0, max = TYPE_TEXT_MAX_CHARS,
    schema = json_schema!({"type": "string", "maxLength": TYPE_TEXT_MAX_CHARS}),
    schema_name = "TypedText", inline = true
);
bounded_string!(
    /// A key for `press`, e.g. `Enter` or `Control+A`: 1..=64 characters.
    KeyName, field = "key", min = KEY_MIN_CHARS, max = KEY_MAX_CHARS,
    schema = json_schema!({"type": "string", "minLength": KEY_MIN_CHARS, "maxLength": KEY_MAX_CHARS}),
    schema_name = "KeyName", inline = true
);
bounded_string!(
    /// An option value for `select`: at most 2,000 characters (may be empty).
    SelectValue, field = "value", min = 0, max = SELECT_VALUE_MAX_CHARS,
    schema = json_schema!({"type": "string", "maxLength": SELECT_VALUE_MAX_CHARS}),
    schema_name = "SelectValue", inline = true
);
bounded_string!(
    /// The task of a `computer_use` call: 1..=8,000 characters.
    TaskText, field = "task", min = TASK_MIN_CHARS, max = TASK_MAX_CHARS,
    schema = json_schema!({"type": "string", "minLength": TASK_MIN_CHARS, "maxLength": TASK_MAX_CHARS}),
    schema_name = "TaskText", inline = true
);

bounded_string!(
    /// `observe`'s `near`: a text on the page or a ref (`e12`) whose region a big page's
    /// observation shows first: 1..=200 characters.
    NearText, field = "near", min = NEAR_MIN_CHARS, max = NEAR_MAX_CHARS,
    schema = json_schema!({"type": "string", "minLength": NEAR_MIN_CHARS, "maxLength": NEAR_MAX_CHARS}),
    schema_name = "NearText", inline = true
);

/// An absolute `http:` or `https:` URL as the model wrote it: at most 2,048 characters,
/// matching `^https?://`. Origin policy is checked elsewhere; this is only the shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HttpUrl(String);

impl HttpUrl {
    /// Checks the length and the scheme prefix.
    pub fn new(value: impl Into<String>) -> Result<Self, ValueError> {
        let value = value.into();
        let got = char_count(&value);
        if got > URL_MAX_CHARS {
            return Err(ValueError::TooLong {
                field: "url",
                max: URL_MAX_CHARS,
                got,
            });
        }
        if !(value.starts_with("http://") || value.starts_with("https://")) {
            return Err(ValueError::Pattern {
                field: "url",
                pattern: URL_PATTERN,
            });
        }
        Ok(Self(value))
    }

    /// The URL text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for HttpUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for HttpUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl JsonSchema for HttpUrl {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "HttpUrl".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "maxLength": URL_MAX_CHARS, "pattern": URL_PATTERN})
    }
}

/// Declares a bounded integer newtype.
macro_rules! bounded_int {
    ($(#[$doc:meta])* $name:ident($int:ty), field = $field:literal, min = $min:expr, max = $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name($int);

        impl $name {
            /// The smallest allowed value.
            pub const MIN: $int = $min;
            /// The largest allowed value.
            pub const MAX: $int = $max;

            /// Checks the range and wraps `value`.
            pub fn new(value: i64) -> Result<Self, ValueError> {
                if (Self::MIN as i64..=Self::MAX as i64).contains(&value) {
                    // In range, so the cast cannot truncate.
                    Ok(Self(value as $int))
                } else {
                    Err(ValueError::OutOfRange { field: $field, min: $min as i64, max: $max as i64, got: value })
                }
            }

            /// The value.
            pub fn get(self) -> $int {
                self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Self::new(integral(d)?).map_err(de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({"type": "integer", "minimum": $min, "maximum": $max})
            }
        }
    };
}
pub(crate) use bounded_int;

bounded_int!(
    /// Vertical scroll distance in CSS pixels, −2,000..=2,000; positive scrolls down.
    DeltaY(i32), field = "delta_y", min = SCROLL_DELTA_MIN, max = SCROLL_DELTA_MAX
);
bounded_int!(
    /// A wait in milliseconds, 0..=5,000.
    WaitMillis(u32), field = "duration_ms", min = WAIT_MIN_MS, max = WAIT_MAX_MS
);
bounded_int!(
    /// The step budget of a `computer_use` call, 1..=100 (default 20).
    MaxSteps(u32), field = "max_steps", min = MAX_STEPS_MIN, max = MAX_STEPS_MAX
);
bounded_int!(
    /// The time budget of a `computer_use` call in seconds, 1..=1,800 (default 300).
    MaxSeconds(u32), field = "max_seconds", min = MAX_SECONDS_MIN, max = MAX_SECONDS_MAX
);

impl Default for MaxSteps {
    fn default() -> Self {
        Self(MAX_STEPS_DEFAULT)
    }
}

impl Default for MaxSeconds {
    fn default() -> Self {
        Self(MAX_SECONDS_DEFAULT)
    }
}

/// An element of the expected frame, by ref: `{"kind":"element","ref":"e12"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ElementTarget {
    /// The element's ref in the observation named by `expected_frame_id`.
    pub element: ElementRef,
}

/// A point of the expected frame's viewport: `{"kind":"point","x":10,"y":20}`, in CSS
/// pixels from the viewport's top-left corner (not image, device or document pixels).
/// Only `click` and `hover` take one, and only from the same frame's screenshot. Values
/// past `u32::MAX` saturate (they are outside any viewport; see [`crate::coords`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PointTarget {
    /// CSS pixels from the viewport's left edge.
    pub x: u32,
    /// CSS pixels from the viewport's top edge.
    pub y: u32,
}

/// The target of `click` or `hover`: an element ref (preferred) or a point.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AnyTarget {
    /// An element by ref.
    Element(ElementTarget),
    /// A viewport point in CSS pixels.
    Point(PointTarget),
}

/// The wire form of every target, so the three target types share one reading.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum TargetRepr {
    Element {
        #[serde(rename = "ref")]
        element: ElementRef,
    },
    Point {
        #[serde(deserialize_with = "coordinate")]
        x: u32,
        #[serde(deserialize_with = "coordinate")]
        y: u32,
    },
}

impl Serialize for ElementTarget {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ElementTarget", 2)?;
        st.serialize_field("kind", "element")?;
        st.serialize_field("ref", &self.element)?;
        st.end()
    }
}

impl Serialize for PointTarget {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("PointTarget", 3)?;
        st.serialize_field("kind", "point")?;
        st.serialize_field("x", &self.x)?;
        st.serialize_field("y", &self.y)?;
        st.end()
    }
}

impl Serialize for AnyTarget {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Element(e) => e.serialize(s),
            Self::Point(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for AnyTarget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match TargetRepr::deserialize(d)? {
            TargetRepr::Element { element } => Self::Element(ElementTarget { element }),
            TargetRepr::Point { x, y } => Self::Point(PointTarget { x, y }),
        })
    }
}

impl<'de> Deserialize<'de> for ElementTarget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match TargetRepr::deserialize(d)? {
            TargetRepr::Element { element } => Ok(Self { element }),
            TargetRepr::Point { .. } => Err(de::Error::custom(
                "point targets are only allowed for click and hover",
            )),
        }
    }
}

impl<'de> Deserialize<'de> for PointTarget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match TargetRepr::deserialize(d)? {
            TargetRepr::Point { x, y } => Ok(Self { x, y }),
            TargetRepr::Element { .. } => Err(de::Error::custom("expected a point target")),
        }
    }
}

impl JsonSchema for ElementTarget {
    fn schema_name() -> Cow<'static, str> {
        "elementTarget".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {"kind": {"const": "element"}, "ref": generator.subschema_for::<ElementRef>()},
            "required": ["kind", "ref"],
            "additionalProperties": false,
        })
    }
}

impl JsonSchema for PointTarget {
    fn schema_name() -> Cow<'static, str> {
        "pointTarget".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "kind": {"const": "point"},
                "x": {"type": "integer", "minimum": 0},
                "y": {"type": "integer", "minimum": 0},
            },
            "required": ["kind", "x", "y"],
            "additionalProperties": false,
        })
    }
}

impl JsonSchema for AnyTarget {
    fn schema_name() -> Cow<'static, str> {
        "anyTarget".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "oneOf": [generator.subschema_for::<ElementTarget>(), generator.subschema_for::<PointTarget>()],
        })
    }
}

/// One step a model asks the runtime to take on the leased tab (`000_…` §06, v1 set).
///
/// `type` is the discriminant; every variant carries the `expected_frame_id` it was planned
/// against and an `intent`. Field order here is the published order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Click an element or a viewport point.
    Click {
        /// The frame this action was planned against.
        expected_frame_id: FrameId,
        /// An element ref or a viewport point.
        target: AnyTarget,
        /// Why.
        intent: Intent,
    },
    /// Type text into an element.
    Type {
        /// The frame this action was planned against.
        expected_frame_id: FrameId,
        /// The element to type into.
        target: ElementTarget,
        /// The text.
        text: TypedText,
        /// Why.
        intent: Intent,
    },
    /// Press a key with an element focused.
    Press {
        /// The frame this action was planned against.
        expected_frame_id: FrameId,
        /// The element to focus.
        target: ElementTarget,
        /// The key.
        key: KeyName,
        /// Why.
        intent: Intent,
    },
    /// Scroll the viewport vertically.
    Scroll {
        /// The frame this action was planned against.
        expected_frame_id: FrameId,
        /// CSS pixels; positive scrolls down.
        delta_y: DeltaY,
        /// Why.
        intent: Intent,
    },
    /// Move the pointer over an element or a viewport point.
    Hover {
        /// The frame this action was planned against.
        expected_frame_id: FrameId,
        /// An element ref or a viewport point.
        target: AnyTarget,
        /// Why.
        intent: Intent,
    },
    /// Choose an option of a select element by value.
    Select {
        /// The frame this action was planned against.
        expected_frame_id: FrameId,
        /// The select element.
        target: ElementTarget,
        /// The option value.
        value: SelectValue,
        /// Why.
        intent: Intent,
    },
    /// Navigate the leased tab (never another tab).
    Navigate {
        /// The frame this action was planned against.
        expected_frame_id: FrameId,
        /// The destination.
        url: HttpUrl,
        /// Why.
        intent: Intent,
    },
    /// Wait for the page to settle.
    Wait {
        /// The frame this action was planned against.
        expected_frame_id: FrameId,
        /// How long.
        duration_ms: WaitMillis,
        /// Why.
        intent: Intent,
    },
}

/// The discriminant of an [`Action`], without its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
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
}

impl ActionKind {
    /// Every kind, in the published order.
    pub const ALL: [ActionKind; 8] = [
        Self::Click,
        Self::Type,
        Self::Press,
        Self::Scroll,
        Self::Hover,
        Self::Select,
        Self::Navigate,
        Self::Wait,
    ];

    /// The wire name, e.g. `"click"`.
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
        }
    }

    /// The kind with this wire name, if any.
    pub fn from_wire(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Whether the kind takes a `target` at all (`scroll`, `navigate` and `wait` do not).
    pub fn has_target(self) -> bool {
        !matches!(self, Self::Scroll | Self::Navigate | Self::Wait)
    }

    /// Whether the kind accepts a point target (only `click` and `hover`).
    pub fn accepts_point(self) -> bool {
        matches!(self, Self::Click | Self::Hover)
    }

    /// Whether the action can change the page (everything but `wait`).
    pub fn mutates(self) -> bool {
        !matches!(self, Self::Wait)
    }
}

impl fmt::Display for ActionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Action {
    /// The action's kind.
    pub fn kind(&self) -> ActionKind {
        match self {
            Self::Click { .. } => ActionKind::Click,
            Self::Type { .. } => ActionKind::Type,
            Self::Press { .. } => ActionKind::Press,
            Self::Scroll { .. } => ActionKind::Scroll,
            Self::Hover { .. } => ActionKind::Hover,
            Self::Select { .. } => ActionKind::Select,
            Self::Navigate { .. } => ActionKind::Navigate,
            Self::Wait { .. } => ActionKind::Wait,
        }
    }

    /// The frame the action was planned against.
    pub fn expected_frame_id(&self) -> &FrameId {
        match self {
            Self::Click {
                expected_frame_id, ..
            }
            | Self::Type {
                expected_frame_id, ..
            }
            | Self::Press {
                expected_frame_id, ..
            }
            | Self::Scroll {
                expected_frame_id, ..
            }
            | Self::Hover {
                expected_frame_id, ..
            }
            | Self::Select {
                expected_frame_id, ..
            }
            | Self::Navigate {
                expected_frame_id, ..
            }
            | Self::Wait {
                expected_frame_id, ..
            } => expected_frame_id,
        }
    }

    /// The model's stated reason.
    pub fn intent(&self) -> &Intent {
        match self {
            Self::Click { intent, .. }
            | Self::Type { intent, .. }
            | Self::Press { intent, .. }
            | Self::Scroll { intent, .. }
            | Self::Hover { intent, .. }
            | Self::Select { intent, .. }
            | Self::Navigate { intent, .. }
            | Self::Wait { intent, .. } => intent,
        }
    }

    /// The target as an [`AnyTarget`], for kinds that have one.
    pub fn target(&self) -> Option<AnyTarget> {
        match self {
            Self::Click { target, .. } | Self::Hover { target, .. } => Some(target.clone()),
            Self::Type { target, .. }
            | Self::Press { target, .. }
            | Self::Select { target, .. } => Some(AnyTarget::Element(target.clone())),
            Self::Scroll { .. } | Self::Navigate { .. } | Self::Wait { .. } => None,
        }
    }
}
