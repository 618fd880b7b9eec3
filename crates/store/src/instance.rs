//! Process instances: each process that opens the store records one, holding a lock file
//! while it lives. When an instance ends — its own orderly shutdown, or a later process finding
//! it dead — [`crate::Store::end_instance`] brings every record it left to a terminal or
//! recoverable state in one transaction. The rules (which records become what) are here because
//! they are one atomic write; *whether* an instance is dead is the caller's question.

use crate::id::{InstanceId, ResourceId, SessionId};

text_enum!(
    /// How an instance ended.
    InstanceEnd {
        /// Its own orderly shutdown.
        Stopped => "stopped",
        /// It died without cleaning up; a later process found its lock free.
        Abandoned => "abandoned",
    }
);

/// An instance as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceRecord {
    /// Its id.
    pub id: InstanceId,
    /// When it started (ms).
    pub started_at: u64,
    /// The lock file it holds while it lives (`None` for instances older than the lock).
    pub lock_name: Option<String>,
    /// When it ended, if it did.
    pub ended_at: Option<u64>,
    /// How it ended.
    pub ended_how: Option<InstanceEnd>,
    /// When it last said it lives ([`crate::Store::heartbeat`]; its start until then, `None`
    /// for instances older than heartbeats). What tells a live instance from a dead one when
    /// instances share a database from several hosts, where a lock file cannot.
    pub heartbeat_at: Option<u64>,
}

/// What [`crate::Store::end_instance`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndReport {
    /// Sessions that were still `active`, now `abandoned` with tools inactive.
    pub sessions: Vec<SessionId>,
    /// Agent tabs without a mark, recorded `released` (closed: they died with the browser, or
    /// the caller closed them first).
    pub closed: Vec<ResourceId>,
    /// Claimed user tabs given back to the person (`released`, no session).
    pub released: Vec<ResourceId>,
    /// Marked tabs (deliverable, handoff) kept `retained` for the person, handle lost: the
    /// records a restore starts from.
    pub kept: Vec<ResourceId>,
    /// Approvals still pending, now `withdrawn` (stopped) or `abandoned`.
    pub approvals: u64,
    /// Operations it left in flight, now `unknown` (effect uncertain, never replayed).
    pub unknown_operations: u64,
    /// Runs it left running, now `abandoned`.
    pub abandoned_runs: u64,
}
