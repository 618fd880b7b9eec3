//! `DOMSnapshot` domain: the whole DOM of a page's same-process frames with layout, styles and clickability.

use serde::{Deserialize, Serialize};

use super::command;

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureSnapshot {
    /// Computed style properties to return per layout node, in this order.
    pub computed_styles: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_dom_rects: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_paint_order: Option<bool>,
}

/// Indexes into the reply's string table, per node that has the value.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RareStringData {
    pub index: Vec<usize>,
    pub value: Vec<i64>,
}

/// The node indexes for which the value is true.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RareBooleanData {
    pub index: Vec<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RareIntegerData {
    pub index: Vec<usize>,
    pub value: Vec<i64>,
}

/// Parallel arrays, one entry per DOM node; strings are indexes into the reply's `strings`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeTreeSnapshot {
    pub parent_index: Vec<i64>,
    pub node_type: Vec<i64>,
    pub shadow_root_type: RareStringData,
    pub node_name: Vec<i64>,
    pub node_value: Vec<i64>,
    pub backend_node_id: Vec<i64>,
    /// Per node: `[name, value, name, value, …]` string indexes.
    pub attributes: Vec<Vec<i64>>,
    pub text_value: RareStringData,
    pub input_value: RareStringData,
    pub input_checked: RareBooleanData,
    pub option_selected: RareBooleanData,
    pub content_document_index: RareIntegerData,
    pub pseudo_type: RareStringData,
    /// Nodes that respond to clicks: click listeners attached from script, and links.
    pub is_clickable: RareBooleanData,
    pub current_source_url: RareStringData,
}

/// Parallel arrays, one entry per layout object.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LayoutTreeSnapshot {
    pub node_index: Vec<usize>,
    /// Per layout object: the requested computed styles as string indexes, in request order.
    pub styles: Vec<Vec<i64>>,
    /// Per layout object: `[x, y, width, height]` in the document's coordinates.
    pub bounds: Vec<Vec<f64>>,
    pub text: Vec<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DocumentSnapshot {
    pub document_url: i64,
    /// The document's base URL (`<base href>` applied), a string index.
    #[serde(rename = "baseURL")]
    pub base_url: Option<i64>,
    pub title: i64,
    pub frame_id: i64,
    pub nodes: NodeTreeSnapshot,
    pub layout: LayoutTreeSnapshot,
    pub scroll_offset_x: Option<f64>,
    pub scroll_offset_y: Option<f64>,
    pub content_width: Option<f64>,
    pub content_height: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CaptureSnapshotReply {
    pub documents: Vec<DocumentSnapshot>,
    pub strings: Vec<String>,
}

impl CaptureSnapshotReply {
    /// The string at `index`, or "" for -1 and out-of-range indexes.
    pub fn string(&self, index: i64) -> &str {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.strings.get(i))
            .map_or("", String::as_str)
    }
}
command!(CaptureSnapshot => "DOMSnapshot.captureSnapshot", CaptureSnapshotReply);
