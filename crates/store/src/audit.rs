//! Audit entries: an append-only log of receipts and lifecycle events. There is no API to
//! change or delete one, and the SQLite schema refuses it with triggers.

use crate::id::{AuditSeq, ResourceId, RunId, SessionId};

/// What [`crate::Store::append_audit`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewAudit<'a> {
    /// When it happened (ms).
    pub at: u64,
    /// The session it belongs to.
    pub session_id: &'a SessionId,
    /// The run, if any.
    pub run_id: Option<&'a RunId>,
    /// The resource, if any.
    pub resource_id: Option<&'a ResourceId>,
    /// What kind of entry (e.g. `receipt`, `claim`); free text chosen by the caller.
    pub kind: &'a str,
    /// A JSON document, stored byte for byte as given (the caller redacts).
    pub payload: &'a str,
}

/// An audit entry as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// Its position in the log.
    pub seq: AuditSeq,
    /// When it happened (ms).
    pub at: u64,
    /// The session it belongs to.
    pub session_id: SessionId,
    /// The run, if any.
    pub run_id: Option<RunId>,
    /// The resource, if any.
    pub resource_id: Option<ResourceId>,
    /// What kind of entry.
    pub kind: String,
    /// The JSON payload as given.
    pub payload: String,
}
