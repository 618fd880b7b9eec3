//! `Input` domain: trusted mouse, keyboard and text input.

use serde::Serialize;

use super::{Empty, command};

/// `event_type`: `mousePressed`, `mouseReleased`, `mouseMoved`, `mouseWheel`; `button`: `none`, `left`, `middle`, `right`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchMouseEvent {
    #[serde(rename = "type")]
    pub event_type: String,
    pub x: f64,
    pub y: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modifiers: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub button: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buttons: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub click_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_x: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_y: Option<f64>,
}
command!(DispatchMouseEvent => "Input.dispatchMouseEvent", Empty);

/// `event_type`: `keyDown`, `keyUp`, `rawKeyDown`, `char`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchKeyEvent {
    #[serde(rename = "type")]
    pub event_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modifiers: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmodified_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_virtual_key_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
}
command!(DispatchKeyEvent => "Input.dispatchKeyEvent", Empty);

#[derive(Debug, Clone, Serialize)]
pub struct InsertText {
    pub text: String,
}
command!(InsertText => "Input.insertText", Empty);
