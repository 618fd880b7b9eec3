//! `Network` domain: request tracking for settling after actions.

use serde::{Deserialize, Serialize};

use super::{Empty, command};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Enable {}
command!(Enable => "Network.enable", Empty);

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Request {
    pub url: String,
    pub method: String,
}

/// Event `Network.requestWillBeSent`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RequestWillBeSent {
    pub request_id: String,
    pub loader_id: String,
    pub request: Request,
    pub frame_id: Option<String>,
    #[serde(rename = "type")]
    pub resource_type: Option<String>,
}

/// Events `Network.loadingFinished` and `Network.loadingFailed`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LoadingDone {
    pub request_id: String,
}
