//! `Page` domain: navigation, lifecycle events, layout metrics, screenshots, dialogs, file choosers.

use serde::{Deserialize, Serialize};

use super::{Empty, command};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Enable {}
command!(Enable => "Page.enable", Empty);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Navigate {
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<String>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NavigateReply {
    pub frame_id: String,
    pub loader_id: Option<String>,
    /// Set when the navigation failed (e.g. `net::ERR_CONNECTION_REFUSED`).
    pub error_text: Option<String>,
}
command!(Navigate => "Page.navigate", NavigateReply);

#[derive(Debug, Clone, Default, Serialize)]
pub struct Reload {}
command!(Reload => "Page.reload", Empty);

#[derive(Debug, Clone, Default, Serialize)]
pub struct BringToFront {}
command!(BringToFront => "Page.bringToFront", Empty);

#[derive(Debug, Clone, Serialize)]
pub struct SetLifecycleEventsEnabled {
    pub enabled: bool,
}
command!(SetLifecycleEventsEnabled => "Page.setLifecycleEventsEnabled", Empty);

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Frame {
    pub id: String,
    pub parent_id: Option<String>,
    pub loader_id: String,
    pub name: Option<String>,
    pub url: String,
    pub security_origin: Option<String>,
    pub mime_type: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FrameTree {
    pub frame: Frame,
    pub child_frames: Vec<FrameTree>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct GetFrameTree {}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetFrameTreeReply {
    pub frame_tree: FrameTree,
}
command!(GetFrameTree => "Page.getFrameTree", GetFrameTreeReply);

#[derive(Debug, Clone, Default, Serialize)]
pub struct GetLayoutMetrics {}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LayoutViewport {
    pub page_x: f64,
    pub page_y: f64,
    pub client_width: f64,
    pub client_height: f64,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VisualViewport {
    pub offset_x: f64,
    pub offset_y: f64,
    pub page_x: f64,
    pub page_y: f64,
    pub client_width: f64,
    pub client_height: f64,
    pub scale: f64,
    pub zoom: Option<f64>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LayoutMetrics {
    pub css_layout_viewport: LayoutViewport,
    pub css_visual_viewport: VisualViewport,
    pub css_content_size: Rect,
}
command!(GetLayoutMetrics => "Page.getLayoutMetrics", LayoutMetrics);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Viewport {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub scale: f64,
}

/// Viewport-only by default: `capture_beyond_viewport` stays false.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureScreenshot {
    /// `png`, `jpeg` or `webp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip: Option<Viewport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimize_for_speed: Option<bool>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CaptureScreenshotReply {
    /// Base64-encoded image.
    pub data: String,
}
command!(CaptureScreenshot => "Page.captureScreenshot", CaptureScreenshotReply);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddScriptToEvaluateOnNewDocument {
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_immediately: Option<bool>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AddScriptReply {
    pub identifier: String,
}
command!(AddScriptToEvaluateOnNewDocument => "Page.addScriptToEvaluateOnNewDocument", AddScriptReply);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateIsolatedWorld {
    pub frame_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_name: Option<String>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateIsolatedWorldReply {
    pub execution_context_id: i64,
}
command!(CreateIsolatedWorld => "Page.createIsolatedWorld", CreateIsolatedWorldReply);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandleJavaScriptDialog {
    pub accept: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_text: Option<String>,
}
command!(HandleJavaScriptDialog => "Page.handleJavaScriptDialog", Empty);

/// Event `Page.loadEventFired` / `Page.domContentEventFired`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TimestampEvent {
    pub timestamp: f64,
}

/// Event `Page.frameNavigated`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FrameNavigated {
    pub frame: Frame,
    #[serde(rename = "type")]
    pub navigation_type: Option<String>,
}

/// Event `Page.lifecycleEvent` (`init`, `DOMContentLoaded`, `load`, `networkIdle`, …).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LifecycleEvent {
    pub frame_id: String,
    pub loader_id: String,
    pub name: String,
    pub timestamp: f64,
}

/// Event `Page.javascriptDialogOpening`; `dialog_type` is `alert`, `confirm`, `prompt` or `beforeunload`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct JavascriptDialogOpening {
    pub url: String,
    pub message: String,
    #[serde(rename = "type")]
    pub dialog_type: String,
    pub default_prompt: Option<String>,
}

/// Turns file-chooser interception on or off: while on, a file chooser the page opens is not
/// shown; `Page.fileChooserOpened` is sent instead and the chooser is answered (or not) with
/// `DOM.setFileInputFiles`. `cancel: true` also cancels each intercepted chooser at once
/// (the input gets its `cancel` event).
#[derive(Debug, Clone, Serialize)]
pub struct SetInterceptFileChooserDialog {
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
}
command!(SetInterceptFileChooserDialog => "Page.setInterceptFileChooserDialog", Empty);

/// Event `Page.fileChooserOpened` (only while interception is on); `mode` is `selectSingle` or
/// `selectMultiple`; `backend_node_id` is the `<input type=file>`, absent for other pickers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FileChooserOpened {
    pub frame_id: String,
    pub mode: String,
    pub backend_node_id: Option<i64>,
}

/// Event `Page.navigatedWithinDocument` (fragment changes, `history.pushState`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NavigatedWithinDocument {
    pub frame_id: String,
    pub url: String,
}

/// Event `Page.windowOpen` (a page asked for a new window or tab).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WindowOpen {
    pub url: String,
    pub window_name: String,
    pub user_gesture: bool,
}
