//! Identifier newtypes with checked parsing; not a source of fresh ids (the runtime mints them).
//!
//! Every id is a string on the wire. Parsing checks the shape once, so code that holds a
//! `FrameId` or an `ElementRef` never re-checks it. The patterns that the seed publishes
//! (`^frame_[A-Za-z0-9_-]+$`, `^e[0-9]+$`) are matched exactly, without a length cap, so
//! that anything the published JSON Schema accepts also parses here.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::limits::{ID_MAX_CHARS, OPAQUE_ID_MAX_CHARS};

/// Why a string is not a valid id of some kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The string was empty.
    #[error("{kind} must not be empty")]
    Empty {
        /// The id kind, e.g. `frame id`.
        kind: &'static str,
    },
    /// The string was longer than the kind allows.
    #[error("{kind} is longer than {max} characters")]
    TooLong {
        /// The id kind.
        kind: &'static str,
        /// The maximum length in characters.
        max: usize,
    },
    /// The string does not have the kind's shape.
    #[error("{kind} {value:?} does not match {expected}")]
    Malformed {
        /// The id kind.
        kind: &'static str,
        /// The expected shape, as a regular expression.
        expected: &'static str,
        /// The offending value, cut to 64 characters.
        value: String,
    },
}

fn malformed(kind: &'static str, expected: &'static str, value: &str) -> IdError {
    IdError::Malformed {
        kind,
        expected,
        value: crate::text::truncate_chars(value, 64).0.to_owned(),
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Checks `^{prefix}[A-Za-z0-9_-]+$`, optionally capped at `max` characters.
fn check_prefixed(
    kind: &'static str,
    expected: &'static str,
    prefix: &str,
    max: Option<usize>,
    s: &str,
) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if let Some(max) = max
        && s.len() > max
    {
        return Err(IdError::TooLong { kind, max });
    }
    match s.strip_prefix(prefix) {
        Some(rest) if !rest.is_empty() && rest.chars().all(is_token_char) => Ok(()),
        _ => Err(malformed(kind, expected, s)),
    }
}

/// Checks `^{letter}[0-9]+$`.
fn check_letter_number(
    kind: &'static str,
    expected: &'static str,
    letter: char,
    s: &str,
) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty { kind });
    }
    match s.strip_prefix(letter) {
        Some(rest) if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
        _ => Err(malformed(kind, expected, s)),
    }
}

/// Checks an opaque token: 1..=256 visible ASCII characters, no whitespace.
fn check_opaque(kind: &'static str, s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if s.len() > OPAQUE_ID_MAX_CHARS {
        return Err(IdError::TooLong {
            kind,
            max: OPAQUE_ID_MAX_CHARS,
        });
    }
    if s.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(malformed(kind, "visible ASCII without spaces", s))
    }
}

/// Declares a string id newtype with the usual trait impls. `$check` is `fn(&str) -> Result<(), IdError>`.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident, $check:expr, schema = $schema:expr) => {
        string_id!($(#[$doc])* $name, $check, schema = $schema, name = stringify!($name), inline = true);
    };
    ($(#[$doc:meta])* $name:ident, $check:expr, schema = $schema:expr, name = $sname:expr, inline = $inline:expr) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Parses and checks an id.
            pub fn new(value: impl Into<String>) -> Result<Self, IdError> {
                let value = value.into();
                ($check)(value.as_str())?;
                Ok(Self(value))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id as an owned string.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
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

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::new(s).map_err(serde::de::Error::custom)
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

/// Declares a `^{prefix}[A-Za-z0-9_-]+$` id capped at [`ID_MAX_CHARS`].
macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $prefix:literal) => {
        string_id!(
            $(#[$doc])* $name,
            |s: &str| check_prefixed($kind, concat!("^", $prefix, "[A-Za-z0-9_-]+$"), $prefix, Some(ID_MAX_CHARS), s),
            schema = json_schema!({
                "type": "string",
                "maxLength": ID_MAX_CHARS,
                "pattern": concat!("^", $prefix, "[A-Za-z0-9_-]+$"),
            })
        );
        impl $name {
            /// The fixed prefix of this id kind.
            pub const PREFIX: &'static str = $prefix;
        }
    };
}

/// Declares an opaque token id (1..=256 visible ASCII characters).
macro_rules! opaque_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        string_id!(
            $(#[$doc])* $name,
            |s: &str| check_opaque($kind, s),
            schema = json_schema!({
                "type": "string",
                "minLength": 1,
                "maxLength": OPAQUE_ID_MAX_CHARS,
                "pattern": "^[!-~]+$",
            })
        );
    };
}

/// The pattern of a frame id, as published in the seed's Action schema.
pub const FRAME_ID_PATTERN: &str = "^frame_[A-Za-z0-9_-]+$";
/// The pattern of an element ref, as published in the seed's Action schema.
pub const ELEMENT_REF_PATTERN: &str = "^e[0-9]+$";

string_id!(
    /// One observation of one target: bound to target identity, navigation epoch, viewport,
    /// content epoch and screenshot. An action carries the frame it was planned against in
    /// `expected_frame_id`. Matches `^frame_[A-Za-z0-9_-]+$` exactly (no length cap, like the seed).
    FrameId,
    |s: &str| check_prefixed("frame id", FRAME_ID_PATTERN, "frame_", None, s),
    schema = json_schema!({"type": "string", "pattern": FRAME_ID_PATTERN}),
    // Published as `#/$defs/frame`, the seed's name.
    name = "frame",
    inline = false
);

impl FrameId {
    /// The fixed prefix of frame ids.
    pub const PREFIX: &'static str = "frame_";
}

string_id!(
    /// A reference to an interactive element of one observation, e.g. `e12`. Matches `^e[0-9]+$`.
    ElementRef,
    |s: &str| check_letter_number("element ref", ELEMENT_REF_PATTERN, 'e', s),
    schema = json_schema!({"type": "string", "pattern": ELEMENT_REF_PATTERN})
);

impl ElementRef {
    /// The ref of the `index`-th interactive element, e.g. `e12`.
    pub fn from_index(index: u32) -> Self {
        Self(format!("e{index}"))
    }
}

string_id!(
    /// A canonical surface key of one Surface Context revision, e.g. `s1`. Matches `^s[0-9]+$`.
    SurfaceKey,
    |s: &str| check_letter_number("surface key", "^s[0-9]+$", 's', s),
    schema = json_schema!({"type": "string", "pattern": "^s[0-9]+$"})
);

impl SurfaceKey {
    /// The key of the `index`-th surface of a turn, e.g. `s1`.
    pub fn from_index(index: u32) -> Self {
        Self(format!("s{index}"))
    }
}

/// The shape of a surface alias.
pub const SURFACE_ALIAS_PATTERN: &str = "^[a-z][a-z0-9_-]*(:[0-9]+)?$";

fn check_alias(s: &str) -> Result<(), IdError> {
    const KIND: &str = "surface alias";
    if s.is_empty() {
        return Err(IdError::Empty { kind: KIND });
    }
    if s.len() > 32 {
        return Err(IdError::TooLong {
            kind: KIND,
            max: 32,
        });
    }
    let (word, number) = match s.split_once(':') {
        Some((w, n)) => (w, Some(n)),
        None => (s, None),
    };
    let word_ok = word.starts_with(|c: char| c.is_ascii_lowercase())
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    let number_ok = number.is_none_or(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    // An alias that looks like a canonical key (`s2`) would make a selector ambiguous.
    let looks_like_key = check_letter_number(KIND, "", 's', s).is_ok();
    if word_ok && number_ok && !looks_like_key {
        Ok(())
    } else {
        Err(malformed(
            KIND,
            "^[a-z][a-z0-9_-]*(:[0-9]+)?$ and not a surface key",
            s,
        ))
    }
}

string_id!(
    /// A per-turn alias of a surface: `right`, `left`, `center`, `focused`, `web:1`, … Never the
    /// shape of a canonical key.
    SurfaceAlias,
    check_alias,
    schema = json_schema!({"type": "string", "maxLength": 32, "pattern": SURFACE_ALIAS_PATTERN})
);

prefixed_id!(
    /// One agent run (one `computer_use` call), e.g. `run_01J…`.
    RunId, "run id", "run_"
);
prefixed_id!(
    /// An approval a person decides, e.g. `approval_19a…`.
    ApprovalId, "approval id", "approval_"
);
prefixed_id!(
    /// A write lease on one tab.
    LeaseId, "lease id", "lease_"
);
prefixed_id!(
    /// An opaque artifact handle; the model never sees a local path, e.g. `artifact_3f…`.
    ArtifactId, "artifact id", "artifact_"
);
prefixed_id!(
    /// A computer-use session (one leased target for one run).
    SessionId, "session id", "session_"
);
prefixed_id!(
    /// One chat turn.
    TurnId, "turn id", "turn_"
);
prefixed_id!(
    /// One server-owned Surface Context.
    ContextId, "context id", "ctx_"
);
prefixed_id!(
    /// A short-lived server-owned binding of a surface; never sent as a model-selectable target.
    BindingId, "binding id", "binding_"
);
opaque_id!(
    /// The model provider's request id, chosen by the provider; aliases resolve only in the
    /// snapshot keyed by it.
    ProviderRequestId, "provider request id"
);
opaque_id!(
    /// A browser tab's id as the backend names it (e.g. a CDP target id). Never a model parameter.
    TabId, "tab id"
);
opaque_id!(
    /// A tool call's id, written by the runtime into the execution envelope.
    ToolCallId, "tool call id"
);

/// What a model may pass as `surface`: a canonical key or an alias of the current turn.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SurfaceName {
    /// A canonical key, e.g. `s1`.
    Key(SurfaceKey),
    /// An alias, e.g. `right` or `web:1`.
    Alias(SurfaceAlias),
}

impl SurfaceName {
    /// Parses a key or, failing that, an alias.
    pub fn new(value: impl Into<String>) -> Result<Self, IdError> {
        let value = value.into();
        if check_letter_number("surface key", "", 's', &value).is_ok() {
            return Ok(Self::Key(SurfaceKey(value)));
        }
        check_alias(&value)
            .map_err(|_| malformed("surface name", "a surface key or alias", &value))?;
        Ok(Self::Alias(SurfaceAlias(value)))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Key(k) => k.as_str(),
            Self::Alias(a) => a.as_str(),
        }
    }
}

impl fmt::Display for SurfaceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SurfaceName {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, IdError> {
        Self::new(s)
    }
}

impl From<SurfaceKey> for SurfaceName {
    fn from(k: SurfaceKey) -> Self {
        Self::Key(k)
    }
}

impl From<SurfaceAlias> for SurfaceName {
    fn from(a: SurfaceAlias) -> Self {
        Self::Alias(a)
    }
}

impl Serialize for SurfaceName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SurfaceName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for SurfaceName {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "SurfaceName".into()
    }
    /// The per-turn `enum` is filled in by [`crate::schema::computer_use_input_schema`].
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string"})
    }
}
