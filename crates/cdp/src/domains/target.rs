//! `Target` domain: creating, attaching to and watching targets (tabs, iframes, workers).

use serde::{Deserialize, Serialize};

use super::{Empty, command};
use crate::{SessionId, TargetId};

/// What Chromium says about a target. `target_type` is e.g. `page`, `iframe`, `worker`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TargetInfo {
    pub target_id: Option<TargetId>,
    #[serde(rename = "type")]
    pub target_type: String,
    pub title: String,
    pub url: String,
    pub attached: bool,
    pub opener_id: Option<TargetId>,
    pub opener_frame_id: Option<String>,
    pub browser_context_id: Option<String>,
    pub subtype: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTarget {
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_context_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_window: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// The new window's size in DIP (a new window, or a headless browser's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTargetReply {
    pub target_id: TargetId,
}
command!(CreateTarget => "Target.createTarget", CreateTargetReply);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachToTarget {
    pub target_id: TargetId,
    pub flatten: bool,
}
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachToTargetReply {
    pub session_id: SessionId,
}
command!(AttachToTarget => "Target.attachToTarget", AttachToTargetReply);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DetachFromTarget {
    pub session_id: SessionId,
}
command!(DetachFromTarget => "Target.detachFromTarget", Empty);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CloseTarget {
    pub target_id: TargetId,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CloseTargetReply {
    pub success: bool,
}
command!(CloseTarget => "Target.closeTarget", CloseTargetReply);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivateTarget {
    pub target_id: TargetId,
}
command!(ActivateTarget => "Target.activateTarget", Empty);

#[derive(Debug, Clone, Default, Serialize)]
pub struct GetTargets {}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetTargetsReply {
    pub target_infos: Vec<TargetInfo>,
}
command!(GetTargets => "Target.getTargets", GetTargetsReply);

/// Auto-attach to related targets (out-of-process iframes, workers) as flattened child sessions.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetAutoAttach {
    pub auto_attach: bool,
    pub wait_for_debugger_on_start: bool,
    pub flatten: bool,
}
command!(SetAutoAttach => "Target.setAutoAttach", Empty);

#[derive(Debug, Clone, Serialize)]
pub struct SetDiscoverTargets {
    pub discover: bool,
}
command!(SetDiscoverTargets => "Target.setDiscoverTargets", Empty);

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateBrowserContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispose_on_detach: Option<bool>,
}
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateBrowserContextReply {
    pub browser_context_id: String,
}
command!(CreateBrowserContext => "Target.createBrowserContext", CreateBrowserContextReply);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisposeBrowserContext {
    pub browser_context_id: String,
}
command!(DisposeBrowserContext => "Target.disposeBrowserContext", Empty);

/// Event `Target.attachedToTarget`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachedToTarget {
    pub session_id: SessionId,
    #[serde(default)]
    pub target_info: TargetInfo,
    #[serde(default)]
    pub waiting_for_debugger: bool,
}

/// Event `Target.detachedFromTarget`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetachedFromTarget {
    pub session_id: SessionId,
    pub target_id: Option<TargetId>,
}

/// Events `Target.targetCreated` and `Target.targetInfoChanged`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetInfoEvent {
    #[serde(default)]
    pub target_info: TargetInfo,
}

/// Event `Target.targetDestroyed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetDestroyed {
    pub target_id: TargetId,
}
