//! Targets of the extended action set and their wire reading: an element by ref (as in v1), a
//! viewport point (as in v1, plus a drag's ends) or a [`Locator`]; not what the locators mean
//! (see [`crate::extended::locator`]).
//!
//! Every target is one JSON object whose `kind` says which: `element`, `point`, `role`,
//! `label`, `text` or `test_id`. [`ElementSpec`] is an element by ref or by locator (wherever
//! v1 takes an element ref); [`Target`] adds points (where v1 takes a point, and a drag's
//! source and destination). The v1 target objects read the same here.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::action::{AnyTarget, ElementTarget, PointTarget, coordinate};
use crate::extended::locator::{AriaRole, FrameChain, Locator, LocatorText, TestId, is_false};
use crate::ids::ElementRef;

/// An element: by ref from the expected observation, or by a locator resolved afresh.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ElementSpec {
    /// `{"kind":"element","ref":"e12"}`, as in v1.
    Ref(ElementTarget),
    /// `{"kind":"role"|"label"|"text"|"test_id", …}`.
    Locator(Locator),
}

/// What a click, hover or drag end aims at: an element by ref, a locator, or a viewport point.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// `{"kind":"element","ref":"e12"}`, as in v1.
    Ref(ElementTarget),
    /// `{"kind":"role"|"label"|"text"|"test_id", …}`.
    Locator(Locator),
    /// `{"kind":"point","x":10,"y":20}`, as in v1: viewport CSS pixels of the expected frame.
    Point(PointTarget),
}

/// A borrowed view of any target an action names, for code that treats them alike (the
/// executor's freshness and origin checks, logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetRef<'a> {
    /// An element ref of the expected observation.
    Ref(&'a ElementTarget),
    /// A locator, resolved when the action runs.
    Locator(&'a Locator),
    /// A viewport point of the expected frame.
    Point(&'a PointTarget),
}

impl ElementSpec {
    /// The borrowed view.
    pub fn view(&self) -> TargetRef<'_> {
        match self {
            Self::Ref(e) => TargetRef::Ref(e),
            Self::Locator(l) => TargetRef::Locator(l),
        }
    }

    /// The element ref, when the element is named by ref.
    pub fn element_ref(&self) -> Option<&ElementTarget> {
        match self {
            Self::Ref(e) => Some(e),
            Self::Locator(_) => None,
        }
    }
}

impl Target {
    /// The borrowed view.
    pub fn view(&self) -> TargetRef<'_> {
        match self {
            Self::Ref(e) => TargetRef::Ref(e),
            Self::Locator(l) => TargetRef::Locator(l),
            Self::Point(p) => TargetRef::Point(p),
        }
    }

    /// The v1 target, when this one is an element ref or a point.
    pub fn as_v1(&self) -> Option<AnyTarget> {
        match self {
            Self::Ref(e) => Some(AnyTarget::Element(e.clone())),
            Self::Point(p) => Some(AnyTarget::Point(*p)),
            Self::Locator(_) => None,
        }
    }
}

impl From<ElementTarget> for ElementSpec {
    fn from(e: ElementTarget) -> Self {
        Self::Ref(e)
    }
}

impl From<Locator> for ElementSpec {
    fn from(l: Locator) -> Self {
        Self::Locator(l)
    }
}

impl From<AnyTarget> for Target {
    fn from(t: AnyTarget) -> Self {
        match t {
            AnyTarget::Element(e) => Self::Ref(e),
            AnyTarget::Point(p) => Self::Point(p),
        }
    }
}

impl From<ElementSpec> for Target {
    fn from(e: ElementSpec) -> Self {
        match e {
            ElementSpec::Ref(e) => Self::Ref(e),
            ElementSpec::Locator(l) => Self::Locator(l),
        }
    }
}

/// The wire form of every extended target, so the three target types share one reading.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum TargetWire {
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
    Role {
        role: AriaRole,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<LocatorText>,
        #[serde(default, skip_serializing_if = "is_false")]
        exact: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame: Option<FrameChain>,
    },
    Label {
        text: LocatorText,
        #[serde(default, skip_serializing_if = "is_false")]
        exact: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame: Option<FrameChain>,
    },
    Text {
        text: LocatorText,
        #[serde(default, skip_serializing_if = "is_false")]
        exact: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame: Option<FrameChain>,
    },
    TestId {
        id: TestId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame: Option<FrameChain>,
    },
}

impl From<Target> for TargetWire {
    fn from(t: Target) -> Self {
        match t {
            Target::Ref(e) => Self::Element { element: e.element },
            Target::Point(p) => Self::Point { x: p.x, y: p.y },
            Target::Locator(Locator::Role {
                role,
                name,
                exact,
                frame,
            }) => Self::Role {
                role,
                name,
                exact,
                frame,
            },
            Target::Locator(Locator::Label { text, exact, frame }) => {
                Self::Label { text, exact, frame }
            }
            Target::Locator(Locator::Text { text, exact, frame }) => {
                Self::Text { text, exact, frame }
            }
            Target::Locator(Locator::TestId { id, frame }) => Self::TestId { id, frame },
        }
    }
}

impl From<TargetWire> for Target {
    fn from(w: TargetWire) -> Self {
        match w {
            TargetWire::Element { element } => Self::Ref(ElementTarget { element }),
            TargetWire::Point { x, y } => Self::Point(PointTarget { x, y }),
            TargetWire::Role {
                role,
                name,
                exact,
                frame,
            } => Self::Locator(Locator::Role {
                role,
                name,
                exact,
                frame,
            }),
            TargetWire::Label { text, exact, frame } => {
                Self::Locator(Locator::Label { text, exact, frame })
            }
            TargetWire::Text { text, exact, frame } => {
                Self::Locator(Locator::Text { text, exact, frame })
            }
            TargetWire::TestId { id, frame } => Self::Locator(Locator::TestId { id, frame }),
        }
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        TargetWire::from(self.clone()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        TargetWire::deserialize(d).map(Self::from)
    }
}

impl Serialize for ElementSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Target::from(self.clone()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for ElementSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Target::deserialize(d)? {
            Target::Ref(e) => Ok(Self::Ref(e)),
            Target::Locator(l) => Ok(Self::Locator(l)),
            Target::Point(_) => Err(de::Error::custom(
                "point targets are only allowed for click, hover and drag",
            )),
        }
    }
}

impl Serialize for Locator {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Target::Locator(self.clone()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Locator {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Target::deserialize(d)? {
            Target::Locator(l) => Ok(l),
            Target::Ref(_) | Target::Point(_) => Err(de::Error::custom(
                "expected a locator (kind role, label, text or test_id)",
            )),
        }
    }
}

impl JsonSchema for ElementSpec {
    fn schema_name() -> Cow<'static, str> {
        "elementSpec".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "oneOf": [g.subschema_for::<ElementTarget>(), g.subschema_for::<Locator>()],
        })
    }
}

impl JsonSchema for Target {
    fn schema_name() -> Cow<'static, str> {
        "target".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "oneOf": [
                g.subschema_for::<ElementTarget>(),
                g.subschema_for::<PointTarget>(),
                g.subschema_for::<Locator>(),
            ],
        })
    }
}
