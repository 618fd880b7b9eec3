//! Runtime configuration: where the browser comes from, trusted origins, navigation lists and
//! the deadlines of leases, approvals and artifacts.

use std::path::PathBuf;
use std::time::Duration;

use cdp::LaunchOptions;
use policy::{NavigationPolicy, TrustConfig};

/// Where the runtime's browser comes from.
#[derive(Debug, Clone)]
pub enum BrowserSource {
    /// Launch a local Chromium that dies with the runtime.
    Launch(LaunchOptions),
    /// Connect to a running browser (`ws://…` or `http://host:port`); only its own tabs are touched.
    Endpoint(String),
}

/// Everything the runtime needs to start.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub data_dir: PathBuf,
    pub browser: BrowserSource,
    /// Registered local project / dev-server origins and pre-approved origins (R1).
    pub trust: TrustConfig,
    /// Allowed schemes and the exact allow/block origin lists.
    pub navigation: NavigationPolicy,
    /// How long an approval waits for a person before the run ends `needs_user`.
    pub approval_timeout: Duration,
    /// How long a write lease lives without renewal.
    pub lease_ttl: Duration,
    /// Orphan run directories older than this are swept at start.
    pub artifact_ttl: Duration,
    /// Share one browser context (cookies, storage) across sessions instead of isolating each.
    pub share_browser_context: bool,
    /// The only directory uploads may read from (`None`: uploads are refused).
    pub uploads_dir: Option<PathBuf>,
}

impl RuntimeConfig {
    /// Defaults: launch headless Chromium, no trusted origins, http(s) only, 5 min approvals,
    /// 60 s leases, 24 h artifact TTL, isolated sessions.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        let data_dir = data_dir.into();
        RuntimeConfig {
            browser: BrowserSource::Launch(LaunchOptions::new(&data_dir)),
            data_dir,
            trust: TrustConfig::default(),
            navigation: NavigationPolicy::default(),
            approval_timeout: Duration::from_secs(300),
            lease_ttl: Duration::from_secs(60),
            artifact_ttl: Duration::from_secs(24 * 3600),
            share_browser_context: false,
            uploads_dir: None,
        }
    }
}
