//! What an action did, as every surface reports it: the receipt, the fresh observation, the
//! dialog it opened, the files it downloaded, the marker of where its input went, its timing and
//! the requests the boundary refused.

use std::time::Duration;

use protocol::{ExtendedKind, Observation, Receipt};
use serde::{Deserialize, Serialize};

use crate::DownloadInfo;

/// What an action did.
#[derive(Debug)]
pub struct ActOutcome {
    /// The exact kind of action run (the receipt names the same kind).
    pub action: ExtendedKind,
    pub receipt: Receipt,
    /// The fresh observation after the action (absent while a dialog blocks the page).
    pub observation: Option<Observation>,
    /// Tabs or popups the page opened during the action, by their backend ids (the runtime
    /// makes each one a tab of the session, opened by this one).
    pub opened: Vec<String>,
    /// A dialog the action opened.
    pub dialog: Option<Dialog>,
    /// Files a `click` with `expect_download` saved (completed downloads only).
    pub downloads: Vec<DownloadInfo>,
    /// Where its input went, for a person's view (`marker.rs`); none when it sent no input.
    pub marker: Option<ActionMarker>,
    /// How long it waited for the page to settle, and how long its fresh observation took.
    pub timing: ActTiming,
    /// Requests the network boundary refused while it ran (also noted in the receipt's detail).
    pub blocked: Vec<BlockedRequest>,
}

/// Where an action's time went (for a run's accounting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ActTiming {
    pub settle: Duration,
    pub observe: Duration,
    /// How its (last) settling ended.
    pub settled_by: SettleEnd,
    /// How many requests its settling waited for (the page's own polling is never among them).
    pub awaited_requests: usize,
}

/// What ended an action's settling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SettleEnd {
    /// No settling happened (an action that sends no input to a page, or failed before).
    #[default]
    None,
    /// The page went quiet (no navigation; its requests done or out of time).
    Quiet,
    /// A navigation within the document (a fragment, `history.pushState`) completed.
    SameDocument,
    /// A navigation loaded its new document (or stopped loading).
    Loaded,
    /// A JavaScript dialog opened.
    Dialog,
    /// The deadline came first (a navigation that neither loaded nor stopped).
    Deadline,
}

/// What an action's marker shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkerKind {
    Click,
    Drag,
    Scroll,
    Type,
    Key,
    Hover,
}

/// An action's marker (see the module docs). Coordinates are the top-level viewport's CSS px.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionMarker {
    pub kind: MarkerKind,
    /// A click's or hover's point; a drag's start, path and end; a wheel's point.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<[f64; 2]>,
    /// The field typed into: x, y, width, height.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<[f64; 4]>,
    /// A wheel's total scroll (x, y).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<[f64; 2]>,
    /// Key chords pressed, as text (`Control+A`, `Enter`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// The viewport (width, height) and scroll offset (x, y) the marker is valid for.
    pub viewport: [f64; 2],
    pub scroll: [f64; 2],
}

/// A request the boundary refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlockedRequest {
    pub method: String,
    /// Redacted (`policy::redact_url`).
    pub url: String,
    /// The origin it would have reached.
    pub origin: String,
    /// CDP's resource type (`Document`, `XHR`, `Fetch`, `Ping`, …).
    pub resource_type: String,
}

/// A surface that holds text the agent typed into it (the network boundary's hold,
/// `ActOptions::guard_typed`): its requests go only where the actions on it were judged to
/// reach, until it leaves the origin typed into. For the person's view of the tab.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetworkHold {
    /// The origins typed into: the hold is in force while the surface is on one of them.
    pub origins: Vec<String>,
    /// Where its requests may go meanwhile.
    pub allowed: Vec<String>,
    /// Origins it refused requests to since the hold began, with how many (at most 32
    /// origins).
    pub refused: Vec<RefusedOrigin>,
}

/// One origin a held surface's requests were refused to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RefusedOrigin {
    pub origin: String,
    pub requests: u64,
}

/// A JavaScript dialog the page opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// The page's message (untrusted text).
    pub message: String,
}
