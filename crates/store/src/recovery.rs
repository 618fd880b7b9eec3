//! Recovery records: failed cleanup steps that keep ownership and must be retried on the next
//! operation or at disposal (`002_…` "错误、取消和恢复"). Deciding when to retry is the runtime's.

use crate::id::{RecoveryId, ResourceId, SessionId};

/// What failed. Stored as text, so a new kind needs no migration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RecoveryKind {
    /// Detaching a debugger lease failed.
    DetachFailed,
    /// Closing an agent-created tab failed.
    CloseFailed,
    /// Releasing a claimed user tab failed.
    ReleaseFailed,
    /// Any other kind, as text. Parsing never yields `Other` for a name listed above.
    Other(String),
}

impl RecoveryKind {
    /// The stored text.
    pub fn as_str(&self) -> &str {
        match self {
            RecoveryKind::DetachFailed => "detach_failed",
            RecoveryKind::CloseFailed => "close_failed",
            RecoveryKind::ReleaseFailed => "release_failed",
            RecoveryKind::Other(text) => text,
        }
    }

    /// Parses stored text; unknown names become `Other`.
    pub fn parse(text: &str) -> Self {
        match text {
            "detach_failed" => RecoveryKind::DetachFailed,
            "close_failed" => RecoveryKind::CloseFailed,
            "release_failed" => RecoveryKind::ReleaseFailed,
            other => RecoveryKind::Other(other.to_owned()),
        }
    }
}

/// A recovery record as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryRecord {
    /// Its id.
    pub id: RecoveryId,
    /// The session whose cleanup failed.
    pub session_id: SessionId,
    /// The resource concerned, if any.
    pub resource_id: Option<ResourceId>,
    /// What failed.
    pub kind: RecoveryKind,
    /// The latest failure's detail.
    pub detail: String,
    /// Attempts so far, counting the failure that created the record.
    pub attempts: u64,
    /// When it was created (ms).
    pub created_at: u64,
    /// When it was last attempted (ms).
    pub last_attempt_at: u64,
    /// When it was resolved (ms); `None` while pending.
    pub resolved_at: Option<u64>,
}

/// What [`crate::Store::add_recovery`] records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecovery {
    /// The session whose cleanup failed.
    pub session_id: SessionId,
    /// The resource concerned, if any.
    pub resource_id: Option<ResourceId>,
    /// What failed.
    pub kind: RecoveryKind,
    /// The failure's detail.
    pub detail: String,
    /// When it failed (ms).
    pub now_ms: u64,
}
