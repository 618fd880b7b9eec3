//! Approval records: every approval a person was asked for, with its outcome. The request
//! itself (what the person saw) lives in the runtime while pending; the store keeps the trace:
//! who asked, which action kind on which origin and tier, and how it ended. Never the text typed.

use crate::id::{InstanceId, RunId, SessionId};

text_enum!(
    /// How an approval ended.
    ApprovalOutcome {
        /// A person allowed this one action.
        ApproveOnce => "approve_once",
        /// A person allowed ordinary actions on the origin for the task.
        ApproveForTask => "approve_for_task",
        /// A person refused.
        Deny => "deny",
        /// Its run, session or server ended first.
        Withdrawn => "withdrawn",
        /// Its server died while it waited; a restart found it.
        Abandoned => "abandoned",
    }
);

/// What [`crate::Store::record_approval`] records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApproval {
    /// The approval id the person was shown.
    pub id: String,
    /// The asking session.
    pub session_id: SessionId,
    /// The process instance that asked.
    pub instance: InstanceId,
    /// The run it belongs to (a direct call's scope is its session).
    pub run_id: RunId,
    /// The action kind (`click`, `navigate`, …).
    pub action: String,
    /// The origin the side effect reaches.
    pub origin: String,
    /// `R2` or `R3`.
    pub tier: String,
    /// When it was asked (ms).
    pub requested_at: u64,
    /// When it expires unanswered (ms).
    pub expires_at: u64,
}

/// An approval as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRecord {
    /// What was recorded.
    pub request: NewApproval,
    /// `None` while pending (past `expires_at`, that means it expired unanswered).
    pub outcome: Option<ApprovalOutcome>,
    /// When it ended.
    pub decided_at: Option<u64>,
}

/// Whose pending approvals [`crate::Store::settle_approvals`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalScope<'a> {
    /// One run's.
    Run(&'a RunId),
    /// One session's.
    Session(&'a SessionId),
    /// One process instance's.
    Instance(InstanceId),
}
