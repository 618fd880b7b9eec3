//! `Browser` domain: version and shutdown.

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
