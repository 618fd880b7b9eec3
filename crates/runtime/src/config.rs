//! Runtime configuration: trusted origins, navigation lists and
//! the deadlines of leases, approvals and artifacts.

use std::path::PathBuf;
use std::time::Duration;

use policy::{NavigationPolicy, TrustConfig};

/// Everything the runtime needs to start.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub data_dir: PathBuf,
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
    /// Hidden files (a name part starting with a dot) may be uploaded from it too.
    pub uploads_hidden: bool,
    /// How long a tab's debugger lease stays attached after its last operation (`002_…`:
    /// "idle detach 应在可配置的短暂空闲窗口后执行"). An operation inside the window keeps the
    /// attachment; after it, the next operation attaches again (a few ms) and the tab's latest
    /// observation still holds.
    pub debugger_idle_detach: Duration,
    /// How long a debugger detach may take before it counts as failed (a recovery record).
    pub debugger_detach_timeout: Duration,
    /// How long a lifecycle operation (turn end, finalize, reset, disposal) waits for the
    /// session's operations in flight, and an operation for a lifecycle operation, before
    /// giving up with `lease_conflict` (disposal cancels the session's runs and goes ahead).
    pub lifecycle_wait: Duration,
    /// Retention of the operation log and run records: ended records older than this are
    /// removed at start …
    pub records_max_age: Duration,
    /// … and of the rest, only the latest this many operations are kept.
    pub records_max_operations: u64,
    /// When a launched browser dies, relaunch it at once and restore the kept tabs (else the
    /// next operation reconnects, and a restore follows then).
    pub relaunch_dead_browser: bool,
    /// `gui_exec`'s limits per call (time, broker operations, text, images).
    pub script_limits: script::Limits,
    /// Where the durable records live: `None`, SQLite in the data directory (the default); a
    /// PostgreSQL address, one database several instances share (`issue 34`).
    pub store_url: Option<StoreUrl>,
    /// With a shared store: how often this instance records that it lives …
    pub heartbeat_interval: Duration,
    /// … and how long another instance waits after its last heartbeat before it takes its
    /// sessions over (reconciling them as a restart does).
    pub takeover_after: Duration,
}

/// A store address. It may carry a password, so it never prints (`Debug` shows the scheme).
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl(pub String);

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = self.0.split_once("://").map_or("?", |(s, _)| s);
        write!(f, "StoreUrl({scheme}://…)")
    }
}

impl RuntimeConfig {
    /// Defaults: no trusted origins, http(s) only, 5 min approvals,
    /// 60 s leases, 24 h artifact TTL, isolated sessions, debugger idle detach after 5 s,
    /// 3 s to detach, lifecycle operations wait up to 60 s for operations in flight, records
    /// kept 30 days and at most 100,000 operations; records in SQLite under the data directory
    /// (with a shared store: a heartbeat every 2 s, taken over after 10 s without one).
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        let data_dir = data_dir.into();
        RuntimeConfig {
            data_dir,
            trust: TrustConfig::default(),
            navigation: NavigationPolicy::default(),
            approval_timeout: Duration::from_secs(300),
            lease_ttl: Duration::from_secs(60),
            artifact_ttl: Duration::from_secs(24 * 3600),
            share_browser_context: false,
            uploads_dir: None,
            uploads_hidden: false,
            debugger_idle_detach: Duration::from_secs(5),
            debugger_detach_timeout: Duration::from_secs(3),
            lifecycle_wait: Duration::from_secs(60),
            records_max_age: Duration::from_secs(30 * 24 * 3600),
            records_max_operations: 100_000,
            relaunch_dead_browser: true,
            script_limits: script::Limits::default(),
            store_url: None,
            heartbeat_interval: Duration::from_secs(2),
            takeover_after: Duration::from_secs(10),
        }
    }
}
