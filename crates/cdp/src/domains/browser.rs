//! `Browser` domain: version, shutdown and window bounds.

use serde::{Deserialize, Serialize};

use super::{Empty, command};

#[derive(Debug, Clone, Default, Serialize)]
pub struct GetVersion {}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Version {
    pub protocol_version: String,
    pub product: String,
    pub revision: String,
    pub user_agent: String,
    pub js_version: String,
}
command!(GetVersion => "Browser.getVersion", Version);

#[derive(Debug, Clone, Default, Serialize)]
pub struct Close {}
command!(Close => "Browser.close", Empty);

/// A window's position and size (DIP), or its state.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Bounds {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_state: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetWindowForTarget {
    pub target_id: crate::TargetId,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WindowForTarget {
    pub window_id: i64,
    pub bounds: Bounds,
}
command!(GetWindowForTarget => "Browser.getWindowForTarget", WindowForTarget);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetWindowBounds {
    pub window_id: i64,
    pub bounds: Bounds,
}
command!(SetWindowBounds => "Browser.setWindowBounds", Empty);
