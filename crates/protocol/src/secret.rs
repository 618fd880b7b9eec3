//! Secrets a person gives a run apart from its task (issue 29: "secrets given in a task never go
//! to the model"): each has a name, a value and the web origins whose fields it may be typed
//! into. A model sees only the name, as a placeholder — `<secret>NAME</secret>` — that it writes
//! in the text of a `type` action; the runtime puts the value in right before the action is
//! sent. This module holds the wire shapes and the placeholder grammar; it does not judge
//! origins (the runtime does, with `policy`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::text::char_count;

/// What opens a placeholder.
pub const PLACEHOLDER_OPEN: &str = "<secret>";
/// What closes a placeholder.
pub const PLACEHOLDER_CLOSE: &str = "</secret>";
/// At most this many secrets per run.
pub const SECRETS_MAX: usize = 16;
/// A secret's value has at least this many characters: shorter text turns up in ordinary page
/// text too often to be taken out of it reliably (the redaction registry's minimum).
pub const SECRET_VALUE_MIN_CHARS: usize = 4;
/// A secret's value has at most this many characters.
pub const SECRET_VALUE_MAX_CHARS: usize = 1_024;
/// A secret may be typed on at most this many origins.
pub const SECRET_ORIGINS_MAX: usize = 8;
/// A secret's name: a letter or `_`, then up to 63 letters, digits, `_` or `-`.
pub const SECRET_NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_-]{0,63}$";

/// Why a secret was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// The name does not follow [`SECRET_NAME_PATTERN`].
    #[error("a secret's name is a letter or _ then up to 63 letters, digits, _ or - (got {0:?})")]
    Name(String),
    /// The value is too short or too long.
    #[error(
        "the secret {name}'s value must have {SECRET_VALUE_MIN_CHARS} to {SECRET_VALUE_MAX_CHARS} characters (it has {got})"
    )]
    Value {
        /// The secret.
        name: String,
        /// Its length in characters.
        got: usize,
    },
    /// No origin, or too many.
    #[error(
        "the secret {name} needs 1 to {SECRET_ORIGINS_MAX} origins where it may be typed (it has {got})"
    )]
    Origins {
        /// The secret.
        name: String,
        /// How many were given.
        got: usize,
    },
    /// More secrets than [`SECRETS_MAX`].
    #[error("at most {SECRETS_MAX} secrets per run (got {0})")]
    TooMany(usize),
    /// A placeholder names a secret this run was not given.
    #[error(
        "{PLACEHOLDER_OPEN}{0}{PLACEHOLDER_CLOSE} names no secret of this run (a person gives secrets to a run: `glovebox run --secret`, the host's `secrets`, `computer_use`'s `secrets`)"
    )]
    Unknown(String),
}

/// A secret's name, as a model writes it in a placeholder.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SecretName(String);

impl SecretName {
    /// Checks the name against [`SECRET_NAME_PATTERN`].
    pub fn new(name: impl Into<String>) -> Result<Self, SecretError> {
        let name = name.into();
        let mut chars = name.chars();
        let first = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        let rest = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if first && rest && name.len() <= 64 {
            Ok(SecretName(name))
        } else {
            Err(SecretError::Name(name))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The placeholder a model writes for it: `<secret>NAME</secret>`.
    pub fn placeholder(&self) -> String {
        format!("{PLACEHOLDER_OPEN}{}{PLACEHOLDER_CLOSE}", self.0)
    }
}

impl fmt::Display for SecretName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SecretName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// A secret's value. It has no `Serialize`, and its `Debug` and `Display` show nothing of it:
/// the value leaves the runtime only into the field it is typed into.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// The value, for the one place that types it and the registries that take it out of text.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretValue({} characters)", char_count(&self.0))
    }
}

/// One secret as a person gives it: the value, and the web origins (`https://app.example`)
/// whose fields it may be typed into.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GivenSecret {
    /// The value (4 to 1,024 characters). Never shown to a model.
    #[schemars(with = "String", length(min = 4, max = 1024))]
    pub value: SecretValue,
    /// The origins (`scheme://host[:port]`) whose fields it may be typed into: 1 to 8.
    #[schemars(length(min = 1, max = 8))]
    pub origins: Vec<String>,
}

impl<'de> Deserialize<'de> for SecretValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(SecretValue(String::deserialize(d)?))
    }
}

/// A run's secrets by name. Checked when built (names, value lengths, how many origins); the
/// origins themselves are judged by the runtime.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets(BTreeMap<SecretName, GivenSecret>);

impl Secrets {
    /// Checks every secret and wraps them.
    pub fn new(given: BTreeMap<SecretName, GivenSecret>) -> Result<Self, SecretError> {
        if given.len() > SECRETS_MAX {
            return Err(SecretError::TooMany(given.len()));
        }
        for (name, secret) in &given {
            let got = char_count(secret.value.expose());
            if !(SECRET_VALUE_MIN_CHARS..=SECRET_VALUE_MAX_CHARS).contains(&got) {
                return Err(SecretError::Value {
                    name: name.0.clone(),
                    got,
                });
            }
            if secret.origins.is_empty() || secret.origins.len() > SECRET_ORIGINS_MAX {
                return Err(SecretError::Origins {
                    name: name.0.clone(),
                    got: secret.origins.len(),
                });
            }
        }
        Ok(Secrets(given))
    }

    /// One secret from its parts (the CLI's `--secret NAME@ORIGIN=VALUE`).
    pub fn insert(
        &mut self,
        name: SecretName,
        value: String,
        origins: Vec<String>,
    ) -> Result<(), SecretError> {
        let mut all = std::mem::take(&mut self.0);
        all.insert(
            name,
            GivenSecret {
                value: SecretValue(value),
                origins,
            },
        );
        *self = Secrets::new(all)?;
        Ok(())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every secret, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&SecretName, &GivenSecret)> {
        self.0.iter()
    }
}

impl<'de> Deserialize<'de> for Secrets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Map;
        impl<'de> Visitor<'de> for Map {
            type Value = BTreeMap<SecretName, GivenSecret>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of secrets by name: {\"NAME\": {\"value\": …, \"origins\": [\"https://…\"]}}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(name) = access.next_key::<String>()? {
                    if out.len() >= SECRETS_MAX {
                        return Err(de::Error::custom(SecretError::TooMany(out.len() + 1)));
                    }
                    let name = SecretName::new(name).map_err(de::Error::custom)?;
                    let secret: GivenSecret = access.next_value()?;
                    out.insert(name, secret);
                }
                Ok(out)
            }
        }
        Secrets::new(d.deserialize_map(Map)?).map_err(de::Error::custom)
    }
}

impl JsonSchema for Secrets {
    fn schema_name() -> Cow<'static, str> {
        "Secrets".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let secret = generator.subschema_for::<GivenSecret>();
        json_schema!({
            "type": "object",
            "description": "Secrets by name, typed by writing <secret>NAME</secret> in a `type` action's text; a model never sees their values.",
            "maxProperties": SECRETS_MAX,
            "propertyNames": {"pattern": SECRET_NAME_PATTERN},
            "additionalProperties": secret,
        })
    }
}

/// The names of the placeholders written in `text`, in order (a name may repeat). Text between
/// the markers that is not a valid name is not a placeholder.
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(PLACEHOLDER_OPEN) {
        let after = &rest[start + PLACEHOLDER_OPEN.len()..];
        match after.find(PLACEHOLDER_CLOSE) {
            Some(end) if SecretName::new(&after[..end]).is_ok() => {
                out.push(&after[..end]);
                rest = &after[end + PLACEHOLDER_CLOSE.len()..];
            }
            _ => rest = after,
        }
    }
    out
}

/// `text` with every placeholder replaced by its secret's value, as `value_of` gives it.
/// `Err` names the first placeholder `value_of` does not know. Text without a placeholder
/// comes back borrowed.
pub fn fill<'a, 'v>(
    text: &'a str,
    value_of: impl Fn(&str) -> Option<&'v str>,
) -> Result<Cow<'a, str>, SecretError> {
    let names = placeholders(text);
    if names.is_empty() {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    for name in names {
        let marker = format!("{PLACEHOLDER_OPEN}{name}{PLACEHOLDER_CLOSE}");
        let at = rest.find(&marker).unwrap_or(rest.len());
        let value = value_of(name).ok_or_else(|| SecretError::Unknown(name.to_owned()))?;
        out.push_str(&rest[..at]);
        out.push_str(value);
        rest = rest.get(at + marker.len()..).unwrap_or_default();
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(json: serde_json::Value) -> Result<Secrets, serde_json::Error> {
        serde_json::from_value(json)
    }

    #[test]
    fn placeholders_are_names_between_the_markers() {
        assert_eq!(placeholders("<secret>pw</secret>"), ["pw"]);
        assert_eq!(
            placeholders("u=<secret>user</secret>&p=<secret>pw</secret><secret>pw</secret>"),
            ["user", "pw", "pw"]
        );
        // Not a name: not a placeholder (typed as it is).
        assert!(placeholders("<secret>two words</secret>").is_empty());
        assert!(placeholders("<secret>unclosed").is_empty());
        assert_eq!(placeholders("<secret><secret>pw</secret>"), ["pw"]);
    }

    #[test]
    fn fill_puts_values_in_and_names_the_unknown() {
        let value_of = |n: &str| (n == "pw").then_some("hunter22");
        assert_eq!(
            fill("x<secret>pw</secret>y<secret>pw</secret>", value_of).unwrap(),
            "xhunter22yhunter22"
        );
        assert!(matches!(
            fill("plain", value_of).unwrap(),
            Cow::Borrowed("plain")
        ));
        assert_eq!(
            fill("<secret>nope</secret>", value_of).unwrap_err(),
            SecretError::Unknown("nope".into())
        );
    }

    #[test]
    fn secrets_are_checked_when_read() {
        let ok = secrets(
            serde_json::json!({"pw": {"value": "hunter22", "origins": ["https://a.test"]}}),
        )
        .unwrap();
        assert_eq!(ok.iter().count(), 1);
        for (bad, says) in [
            (
                serde_json::json!({"p w": {"value": "hunter22", "origins": ["https://a.test"]}}),
                "name",
            ),
            (
                serde_json::json!({"pw": {"value": "abc", "origins": ["https://a.test"]}}),
                "characters",
            ),
            (
                serde_json::json!({"pw": {"value": "hunter22", "origins": []}}),
                "origins",
            ),
            (
                serde_json::json!({"pw": {"value": "hunter22", "origins": ["https://a.test"], "x": 1}}),
                "unknown field",
            ),
            (serde_json::json!(["pw"]), "object of secrets"),
        ] {
            let e = secrets(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        let many: serde_json::Map<String, serde_json::Value> = (0..17)
            .map(|i| {
                (
                    format!("s{i}"),
                    serde_json::json!({"value": "hunter22", "origins": ["https://a.test"]}),
                )
            })
            .collect();
        assert!(
            secrets(serde_json::Value::Object(many))
                .unwrap_err()
                .to_string()
                .contains("at most 16")
        );
    }

    #[test]
    fn a_value_never_prints() {
        let s = secrets(
            serde_json::json!({"pw": {"value": "hunter22", "origins": ["https://a.test"]}}),
        )
        .unwrap();
        let shown = format!("{s:?}");
        assert!(!shown.contains("hunter22"), "{shown}");
        assert!(shown.contains("8 characters"), "{shown}");
    }
}
