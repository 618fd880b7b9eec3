//! `Log` domain: browser-side log entries (network errors, interventions).

use serde::{Deserialize, Serialize};

use super::{Empty, command};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Enable {}
command!(Enable => "Log.enable", Empty);

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LogEntry {
    pub source: String,
    pub level: String,
    pub text: String,
    pub url: Option<String>,
}

/// Event `Log.entryAdded`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct EntryAdded {
    pub entry: LogEntry,
}
