//! The bounded field types only the extended action set has (buttons, click counts, modifiers,
//! key names for key down/up, scroll and offset distances, drag paths, option lists, upload
//! names, prompt text) and [`FieldError`]; not targets or locators (see
//! [`crate::extended::target`] and [`crate::extended::locator`]).
//!
//! As in [`crate::action`], every type checks its bound on construction and on
//! deserialisation, so a value always satisfies the published extended schema.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::action::{
    SelectValue, ValueError, below, bounded_int, bounded_string, coordinate, integral,
};
use crate::limits::*;
use crate::text::char_count;

/// Why a value of the extended set is out of bounds (beyond [`ValueError`]'s single-field bounds).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// A single field out of bounds.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A list names the same item twice.
    #[error("{field} lists {item} more than once")]
    Duplicate {
        /// The field name.
        field: &'static str,
        /// The repeated item, as JSON.
        item: String,
    },
    /// A list has fewer items than its minimum.
    #[error("{field} must have at least {min} items, got {got}")]
    TooFew {
        /// The field name.
        field: &'static str,
        /// The minimum.
        min: usize,
        /// The actual count.
        got: usize,
    },
    /// A list has more items than its maximum.
    #[error("{field} must have at most {max} items, got {got}")]
    TooMany {
        /// The field name.
        field: &'static str,
        /// The maximum.
        max: usize,
        /// The actual count.
        got: usize,
    },
    /// An upload name that could reach outside the runtime's upload area.
    #[error("files: {0}")]
    UploadName(#[from] UploadNameError),
    /// A `scroll` with neither `delta_x` nor `delta_y`.
    #[error("scroll needs delta_x, delta_y or both")]
    NoScrollDelta,
    /// A `select` with both or neither of `value` and `values`.
    #[error("select takes exactly one of value (one option) and values (several options)")]
    SelectChoice,
    /// A `dialog` that dismisses and still carries `prompt_text`.
    #[error("prompt_text is only allowed when accept is true")]
    PromptOnDismiss,
}

bounded_int!(
    /// Horizontal scroll distance in CSS pixels, −2,000..=2,000; positive scrolls right.
    DeltaX(i32), field = "delta_x", min = SCROLL_DELTA_MIN, max = SCROLL_DELTA_MAX
);
bounded_int!(
    /// How many clicks make one click action: 1 (single), 2 (double) or 3 (triple).
    ClickCount(u8), field = "click_count", min = CLICK_COUNT_MIN, max = CLICK_COUNT_MAX
);
bounded_int!(
    /// One axis of a drag's `end_offset`, in CSS pixels from the destination's centre,
    /// −2,000..=2,000.
    OffsetPx(i32), field = "end_offset", min = DRAG_OFFSET_MIN, max = DRAG_OFFSET_MAX
);

impl Default for ClickCount {
    fn default() -> Self {
        Self(CLICK_COUNT_MIN)
    }
}

bounded_string!(
    /// The text a `dialog` action enters into a `prompt()` before accepting it: at most
    /// 10,000 characters (may be empty).
    PromptText, field = "prompt_text", min = 0, max = PROMPT_TEXT_MAX_CHARS,
    schema = json_schema!({"type": "string", "maxLength": PROMPT_TEXT_MAX_CHARS}),
    schema_name = "PromptText", inline = true
);

/// `true` when `value` is its type's default: serde's `skip_serializing_if` for optional
/// fields whose absence means the default, so a v1 action serialises as v1 JSON.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// A mouse button. `left` when absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum MouseButton {
    /// The primary button.
    #[default]
    Left,
    /// The secondary button (context menu).
    Right,
    /// The middle button.
    Middle,
}

/// How `type` enters text. `auto` when absent: the v1 behaviour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum TypeMode {
    /// Insert the text in one input event, and fall back to keystrokes when the field's value
    /// did not take it (v1's `type`).
    #[default]
    Auto,
    /// Insert the text in one input event, like a paste, without the fallback. "Paste" names
    /// the event, not the system clipboard: the runtime never routes text through the global
    /// clipboard (`004_…`, "默认…不以全局剪贴板作为自动传输").
    Paste,
    /// A real key event for every character, for pages that listen to keys.
    Keystrokes,
}

/// How `drag` moves. `mouse` when absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum DragMode {
    /// Mouse down on the source, moves along the path, mouse up on the destination: canvases,
    /// sliders, sortable lists built on pointer events.
    #[default]
    Mouse,
    /// HTML5 drag and drop (`draggable`, `dragstart`/`drop` with a `DataTransfer`).
    Html5,
}

/// A modifier key held down for the duration of a click, hover or drag.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[schemars(inline)]
pub enum Modifier {
    /// Alt (Option on macOS).
    Alt,
    /// Control.
    Control,
    /// Meta (Command on macOS, Windows key elsewhere).
    Meta,
    /// Shift.
    Shift,
}

/// A set of held modifiers. On the wire a JSON array without duplicates, in any order;
/// serialised in the order Alt, Control, Meta, Shift. Empty (and absent) means none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Modifiers(Vec<Modifier>);

impl Modifiers {
    /// No modifiers.
    pub const NONE: Modifiers = Modifiers(Vec::new());

    /// The set of `modifiers`; a modifier named twice is an error, as on the wire.
    pub fn new(modifiers: impl IntoIterator<Item = Modifier>) -> Result<Self, FieldError> {
        let mut set: Vec<Modifier> = Vec::new();
        for m in modifiers {
            if set.contains(&m) {
                return Err(FieldError::Duplicate {
                    field: "modifiers",
                    item: format!("{m:?}"),
                });
            }
            set.push(m);
        }
        set.sort();
        Ok(Self(set))
    }

    /// The modifiers, in the order Alt, Control, Meta, Shift.
    pub fn iter(&self) -> impl Iterator<Item = Modifier> + '_ {
        self.0.iter().copied()
    }

    /// Whether `m` is held.
    pub fn contains(&self, m: Modifier) -> bool {
        self.0.contains(&m)
    }

    /// Whether no modifier is held.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Modifiers {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Modifiers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(Vec::<Modifier>::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl JsonSchema for Modifiers {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Modifiers".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "items": generator.subschema_for::<Modifier>(),
            "uniqueItems": true,
            "maxItems": MODIFIERS_MAX,
        })
    }
}

/// The pattern of a [`SingleKey`]: one key, so `+` alone or a name without `+`. It admits the
/// empty string so that an empty key fails only `minLength`, with one clear message.
pub const SINGLE_KEY_PATTERN: &str = r"^(?:\+|[^+]*)$";

/// One key for `key_down` and `key_up`, 1..=64 characters: a key name such as `Shift`,
/// `ArrowDown` or `a`, or `+` itself. Chords (`Control+A`) are `press`'s; holding a chord
/// is two `key_down`s.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SingleKey(String);

impl SingleKey {
    /// Checks the bounds and the shape and wraps `value`.
    pub fn new(value: impl Into<String>) -> Result<Self, ValueError> {
        let value = value.into();
        let got = char_count(&value);
        if below(got, KEY_MIN_CHARS) {
            return Err(ValueError::TooShort {
                field: "key",
                min: KEY_MIN_CHARS,
                got,
            });
        }
        if got > KEY_MAX_CHARS {
            return Err(ValueError::TooLong {
                field: "key",
                max: KEY_MAX_CHARS,
                got,
            });
        }
        if value != "+" && value.contains('+') {
            return Err(ValueError::Pattern {
                field: "key",
                pattern: SINGLE_KEY_PATTERN,
            });
        }
        Ok(Self(value))
    }

    /// The key name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SingleKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SingleKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SingleKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl JsonSchema for SingleKey {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "SingleKey".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": KEY_MIN_CHARS,
            "maxLength": KEY_MAX_CHARS,
            "pattern": SINGLE_KEY_PATTERN,
        })
    }
}

/// A viewport point a drag passes through: `{"x": 10, "y": 20}` in CSS pixels, read like a
/// point target's coordinates (integers ≥ 0, saturated at `u32::MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Waypoint {
    /// CSS pixels from the viewport's left edge.
    #[serde(deserialize_with = "coordinate")]
    pub x: u32,
    /// CSS pixels from the viewport's top edge.
    #[serde(deserialize_with = "coordinate")]
    pub y: u32,
}

impl JsonSchema for Waypoint {
    fn schema_name() -> Cow<'static, str> {
        "waypoint".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "x": {"type": "integer", "minimum": 0},
                "y": {"type": "integer", "minimum": 0},
            },
            "required": ["x", "y"],
            "additionalProperties": false,
        })
    }
}

/// Where a drag ends relative to its destination's centre (or to a point destination), in
/// CSS pixels: `{"x": -10, "y": 4}`. Positive `x` is right, positive `y` is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct Offset {
    /// Horizontal CSS pixels.
    pub x: OffsetPx,
    /// Vertical CSS pixels.
    pub y: OffsetPx,
}

/// Declares a list newtype: `min..=max` items, no duplicates, order kept.
macro_rules! bounded_list {
    (
        $(#[$doc:meta])* $name:ident($item:ty), field = $field:literal, min = $min:expr,
        max = $max:expr
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(Vec<$item>);

        impl $name {
            /// Checks the count and uniqueness and wraps `items`.
            pub fn new(items: Vec<$item>) -> Result<Self, FieldError> {
                if below(items.len(), $min) {
                    return Err(FieldError::TooFew { field: $field, min: $min, got: items.len() });
                }
                if items.len() > $max {
                    return Err(FieldError::TooMany { field: $field, max: $max, got: items.len() });
                }
                for (i, item) in items.iter().enumerate() {
                    if items[..i].contains(item) {
                        return Err(FieldError::Duplicate {
                            field: $field,
                            item: serde_json::to_string(item).unwrap_or_default(),
                        });
                    }
                }
                Ok(Self(items))
            }

            /// The items, in the order given.
            pub fn as_slice(&self) -> &[$item] {
                &self.0
            }

            /// The number of items.
            pub fn len(&self) -> usize {
                self.0.len()
            }

            /// Whether there are no items.
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Self::new(Vec::<$item>::deserialize(d)?).map_err(de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                let mut schema = json_schema!({
                    "type": "array",
                    "items": generator.subschema_for::<$item>(),
                    "maxItems": $max,
                });
                if $min > 0 {
                    schema.insert("minItems".into(), ($min).into());
                }
                // A repeated option or file is a mistake, never a second request.
                schema.insert("uniqueItems".into(), true.into());
                schema
            }
        }
    };
}

bounded_list!(
    /// The options of a multi-select, by value: 1..=50 distinct values, each at most 2,000
    /// characters.
    SelectValues(SelectValue), field = "values", min = SELECT_VALUES_MIN, max = SELECT_VALUES_MAX
);
bounded_list!(
    /// The files of an `upload`: 1..=20 distinct [`UploadName`]s.
    UploadFiles(UploadName), field = "files", min = UPLOAD_FILES_MIN, max = UPLOAD_FILES_MAX
);

/// The intermediate points of a drag, in order: at most 50, repeats allowed. Empty (and
/// absent) means a straight move from source to destination.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DragPath(Vec<Waypoint>);

impl DragPath {
    /// Checks the count and wraps `points`.
    pub fn new(points: Vec<Waypoint>) -> Result<Self, FieldError> {
        if points.len() > DRAG_PATH_MAX {
            return Err(FieldError::TooMany {
                field: "path",
                max: DRAG_PATH_MAX,
                got: points.len(),
            });
        }
        Ok(Self(points))
    }

    /// The points, in order.
    pub fn as_slice(&self) -> &[Waypoint] {
        &self.0
    }

    /// Whether the drag goes straight.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for DragPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for DragPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(Vec::<Waypoint>::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl JsonSchema for DragPath {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "DragPath".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "items": generator.subschema_for::<Waypoint>(),
            "maxItems": DRAG_PATH_MAX,
        })
    }
}

/// Why a string is not an [`UploadName`]. Each reason is a sentence a model can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploadNameError {
    /// The empty string.
    #[error("must not be empty")]
    Empty,
    /// Longer than [`UPLOAD_NAME_MAX_CHARS`].
    #[error("must have at most {max} characters, got {got}")]
    TooLong {
        /// The maximum.
        max: usize,
        /// The actual length.
        got: usize,
    },
    /// Starts with `/`.
    #[error("absolute paths are never allowed; name a file the runtime offers for upload")]
    Absolute,
    /// Contains `\`.
    #[error("backslashes are not allowed; separate folders with /")]
    Backslash,
    /// Contains `~`.
    #[error("\"~\" is not allowed; names are relative to the runtime's upload area")]
    Tilde,
    /// Contains `:` (drive letters, URL schemes, alternate data streams).
    #[error("\":\" is not allowed (no drive letters or URLs); name a file the runtime offers")]
    Colon,
    /// Contains NUL or another control character.
    #[error("control characters (including NUL) are not allowed")]
    Control,
    /// Contains an empty segment (`a//b`, a trailing `/`).
    #[error("empty path segments (\"//\" or a trailing \"/\") are not allowed")]
    EmptySegment,
    /// Contains a `.` or `..` segment.
    #[error("\".\" and \"..\" segments are not allowed; names cannot leave the upload area")]
    DotSegment,
}

/// The pattern of an [`UploadName`]: `/`-separated segments, none empty, `.` or `..`, of
/// characters other than `\`, `~`, `:` and ASCII control characters. [`UploadName::new`]
/// checks the same rule without a regex engine; a property test keeps them in step.
pub const UPLOAD_NAME_PATTERN: &str = concat!(
    r"^(?:[^./\\~:\x00-\x1f\x7f][^/\\~:\x00-\x1f\x7f]*|\.[^./\\~:\x00-\x1f\x7f][^/\\~:\x00-\x1f\x7f]*|\.\.[^/\\~:\x00-\x1f\x7f]+)",
    r"(?:/(?:[^./\\~:\x00-\x1f\x7f][^/\\~:\x00-\x1f\x7f]*|\.[^./\\~:\x00-\x1f\x7f][^/\\~:\x00-\x1f\x7f]*|\.\.[^/\\~:\x00-\x1f\x7f]+))*$"
);

/// A file to upload, by a name the runtime maps to a path it has authorised: an opaque upload
/// id it handed out, or a name relative to the run's upload area (`report.pdf`,
/// `scans/page-1.png`). Never a filesystem path: absolute paths, `..`, `~`, `:`, backslashes
/// and control characters are refused here, and the runtime refuses any name it did not
/// offer (`004_…`: "文件只经授权路径传输"). 1..=255 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UploadName(String);

impl UploadName {
    /// Checks the rule and wraps `value`.
    pub fn new(value: impl Into<String>) -> Result<Self, UploadNameError> {
        let value = value.into();
        let got = char_count(&value);
        if got == 0 {
            return Err(UploadNameError::Empty);
        }
        if got > UPLOAD_NAME_MAX_CHARS {
            return Err(UploadNameError::TooLong {
                max: UPLOAD_NAME_MAX_CHARS,
                got,
            });
        }
        match Self::content_problem(&value) {
            Some(problem) => Err(problem),
            None => Ok(Self(value)),
        }
    }

    /// What is wrong with `value`'s characters and segments, whatever its length: the rule of
    /// [`UPLOAD_NAME_PATTERN`] for a non-empty string.
    pub fn content_problem(value: &str) -> Option<UploadNameError> {
        if value.starts_with('/') {
            return Some(UploadNameError::Absolute);
        }
        if value.contains('\\') {
            return Some(UploadNameError::Backslash);
        }
        if value.contains('~') {
            return Some(UploadNameError::Tilde);
        }
        if value.contains(':') {
            return Some(UploadNameError::Colon);
        }
        if value.chars().any(|c| c.is_ascii_control()) {
            return Some(UploadNameError::Control);
        }
        if value.is_empty() {
            return None;
        }
        value.split('/').find_map(|segment| match segment {
            "" => Some(UploadNameError::EmptySegment),
            "." | ".." => Some(UploadNameError::DotSegment),
            _ => None,
        })
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UploadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for UploadName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for UploadName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl JsonSchema for UploadName {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "UploadName".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": UPLOAD_NAME_MAX_CHARS,
            "pattern": UPLOAD_NAME_PATTERN,
        })
    }
}
