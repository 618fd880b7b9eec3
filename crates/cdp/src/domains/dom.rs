//! `DOM` domain: nodes by backend id, boxes, focus, scrolling into view, file inputs.

use serde::{Deserialize, Serialize};

use super::runtime::RemoteObject;
use super::{Empty, command};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Enable {}
command!(Enable => "DOM.enable", Empty);

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Node {
    pub node_id: i64,
    pub backend_node_id: i64,
    pub node_type: i64,
    pub node_name: String,
    pub local_name: String,
    pub node_value: String,
    pub child_node_count: Option<i64>,
    pub children: Vec<Node>,
    /// Flat `[name, value, name, value, …]` as CDP sends them.
    pub attributes: Vec<String>,
    pub frame_id: Option<String>,
    pub content_document: Option<Box<Node>>,
    pub shadow_roots: Vec<Node>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetDocument {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pierce: Option<bool>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GetDocumentReply {
    pub root: Node,
}
command!(GetDocument => "DOM.getDocument", GetDocumentReply);

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeNode {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_node_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DescribeNodeReply {
    pub node: Node,
}
command!(DescribeNode => "DOM.describeNode", DescribeNodeReply);

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveNode {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_node_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_context_id: Option<i64>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ResolveNodeReply {
    pub object: RemoteObject,
}
command!(ResolveNode => "DOM.resolveNode", ResolveNodeReply);

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetBoxModel {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_node_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
}
/// Quads are 8 numbers: four corners clockwise from top-left, in CSS pixels of the frame's viewport.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BoxModel {
    pub content: Vec<f64>,
    pub padding: Vec<f64>,
    pub border: Vec<f64>,
    pub margin: Vec<f64>,
    pub width: f64,
    pub height: f64,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GetBoxModelReply {
    pub model: BoxModel,
}
command!(GetBoxModel => "DOM.getBoxModel", GetBoxModelReply);

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScrollIntoViewIfNeeded {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_node_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
}
command!(ScrollIntoViewIfNeeded => "DOM.scrollIntoViewIfNeeded", Empty);

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Focus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_node_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
}
command!(Focus => "DOM.focus", Empty);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetFileInputFiles {
    pub files: Vec<String>,
    pub backend_node_id: i64,
}
command!(SetFileInputFiles => "DOM.setFileInputFiles", Empty);

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetContentQuads {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_node_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
}
/// Quads of the node's boxes (8 numbers each, clockwise from top-left), in the CSS pixels of
/// the session's frame viewport.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GetContentQuadsReply {
    pub quads: Vec<Vec<f64>>,
}
command!(GetContentQuads => "DOM.getContentQuads", GetContentQuadsReply);

/// The node at a viewport point (hit test), in the session's frame.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetNodeForLocation {
    pub x: i64,
    pub y: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_user_agent_shadow_dom: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_pointer_events_none: Option<bool>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetNodeForLocationReply {
    pub backend_node_id: i64,
    pub frame_id: Option<String>,
}
command!(GetNodeForLocation => "DOM.getNodeForLocation", GetNodeForLocationReply);
