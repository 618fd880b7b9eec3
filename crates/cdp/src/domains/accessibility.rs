//! `Accessibility` domain: the full AX tree of a frame.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Empty, command};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Enable {}
command!(Enable => "Accessibility.enable", Empty);

/// An AX value; `value_type` is e.g. `role`, `computedString`, `boolean`, `tristate`, `token`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AxValue {
    #[serde(rename = "type")]
    pub value_type: Cow<'static, str>,
    pub value: Option<Value>,
}

impl AxValue {
    /// The value as text (strings as they are, other JSON values printed).
    pub fn text(&self) -> Option<String> {
        self.text_ref().map(std::borrow::Cow::into_owned)
    }

    /// [`AxValue::text`], borrowed where the value is a string (most are).
    pub fn text_ref(&self) -> Option<std::borrow::Cow<'_, str>> {
        match &self.value {
            Some(Value::String(s)) => Some(std::borrow::Cow::Borrowed(s)),
            Some(Value::Null) | None => None,
            Some(other) => Some(std::borrow::Cow::Owned(other.to_string())),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AxProperty {
    pub name: Cow<'static, str>,
    pub value: AxValue,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AxNode {
    pub node_id: String,
    pub ignored: bool,
    pub role: Option<AxValue>,
    pub chrome_role: Option<AxValue>,
    pub name: Option<AxValue>,
    pub description: Option<AxValue>,
    pub value: Option<AxValue>,
    pub properties: Vec<AxProperty>,
    pub parent_id: Option<String>,
    pub child_ids: Vec<String>,
    #[serde(rename = "backendDOMNodeId")]
    pub backend_dom_node_id: Option<i64>,
    pub frame_id: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetFullAxTree {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<String>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GetFullAxTreeReply {
    pub nodes: Vec<AxNode>,
}
command!(GetFullAxTree => "Accessibility.getFullAXTree", GetFullAxTreeReply);

/// The AX subtree around one node (used to re-check a ref's role and name before acting).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPartialAxTree {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_node_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetch_relatives: Option<bool>,
}
command!(GetPartialAxTree => "Accessibility.getPartialAXTree", GetFullAxTreeReply);
