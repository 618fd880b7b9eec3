//! `Storage` and `Fetch`: the cookies of a browser context (to keep a retained tab's site
//! storage across restarts) and answering a request without the network (to seed a restored
//! page's local storage on its own origin without loading the site).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Empty, command};

/// `Storage.getCookies`: every cookie of a browser context (the default one without an id).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetCookies {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_context_id: Option<String>,
}
/// Cookies as Chromium reports them (kept as JSON: only some fields go back in `setCookies`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GetCookiesReply {
    pub cookies: Vec<Value>,
}
command!(GetCookies => "Storage.getCookies", GetCookiesReply);

/// `Storage.setCookies`: `cookies` are `Network.CookieParam` objects.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetCookies {
    pub cookies: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_context_id: Option<String>,
}
command!(SetCookies => "Storage.setCookies", Empty);

/// `Fetch.enable` for requests matching `patterns` (`{urlPattern, requestStage}` objects).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FetchEnable {
    pub patterns: Vec<Value>,
}
command!(FetchEnable => "Fetch.enable", Empty);

/// `Fetch.disable`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FetchDisable {}
command!(FetchDisable => "Fetch.disable", Empty);

/// `Fetch.fulfillRequest`: answers a paused request; `body` is base64.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FulfillRequest {
    pub request_id: String,
    pub response_code: u16,
    pub response_headers: Vec<Value>,
    pub body: String,
}
command!(FulfillRequest => "Fetch.fulfillRequest", Empty);
