//! Runtime errors, each with its code from the closed protocol set and a message that says what
//! to do next.

use protocol::ErrorCode;
use surface::SurfaceError;

/// Why a runtime call failed. Nothing was done to any surface unless the variant says so.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RuntimeError {
    #[error("unknown session {0}")]
    UnknownSession(String),
    #[error(
        "unknown surface {name:?}: use a key or alias of the current surface context ({known})"
    )]
    UnknownSurface { name: String, known: String },
    #[error("no surface named and no single primary one; name one of: {known}")]
    AmbiguousSurface { known: String },
    #[error(
        "this session has no tab (a closed or lost tab is gone for good): open one with tab_open, or claim a person's tab"
    )]
    NoSurface,
    #[error("surface {surface} lacks the {capability} capability")]
    CapabilityDenied { surface: String, capability: String },
    #[error("the tab is leased to {holder}; wait for it to finish or stop it")]
    LeaseConflict { holder: String },
    #[error("policy refuses this: {reason}")]
    OriginDenied { reason: String },
    #[error("this needs a person's approval ({approval_id}): {summary}")]
    NeedsApproval {
        approval_id: protocol::ApprovalId,
        summary: String,
    },
    #[error(
        "{key} is a tab {opener} opened, and a person has not linked it for a run: a person links it (the console's Link button, or POST /api/tabs/{tab}/link), and a run on it starts in a later turn"
    )]
    UnlinkedSurface {
        key: String,
        opener: String,
        tab: String,
    },
    #[error("a person denied this action: {summary}")]
    ApprovalDenied { summary: String },
    #[error("the run was cancelled")]
    Cancelled,
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error("invalid action: {0}")]
    InvalidAction(String),
    #[error("stale: {0}; send the registry's current revisions")]
    StaleRevision(String),
    #[error(
        "this session's browser tools were reset (context_reset): they stay off until the user asks for the browser again"
    )]
    ToolsInactive,
    #[error("approval {approval_id} cannot be decided: {why}")]
    UnknownApproval {
        approval_id: protocol::ApprovalId,
        why: &'static str,
    },
    #[error("the data directory cannot be used: {path}: {why}")]
    DataDir { path: String, why: String },
    #[error("the store failed: {0}")]
    Store(#[source] std::sync::Arc<store::StoreError>),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<store::StoreError> for RuntimeError {
    fn from(e: store::StoreError) -> Self {
        RuntimeError::Store(std::sync::Arc::new(e))
    }
}

impl RuntimeError {
    /// The closed error code transports report.
    pub fn code(&self) -> ErrorCode {
        match self {
            RuntimeError::UnknownSession(_) | RuntimeError::UnknownSurface { .. } => {
                ErrorCode::UnknownSurface
            }
            RuntimeError::AmbiguousSurface { .. } | RuntimeError::NoSurface => {
                ErrorCode::AmbiguousSurface
            }
            RuntimeError::CapabilityDenied { .. } | RuntimeError::ToolsInactive => {
                ErrorCode::CapabilityDenied
            }
            RuntimeError::LeaseConflict { .. } => ErrorCode::LeaseConflict,
            RuntimeError::OriginDenied { .. } => ErrorCode::OriginDenied,
            RuntimeError::NeedsApproval { .. } => ErrorCode::NeedsApproval,
            RuntimeError::ApprovalDenied { .. } => ErrorCode::ApprovalDenied,
            RuntimeError::Cancelled => ErrorCode::Cancelled,
            RuntimeError::UnlinkedSurface { .. } => ErrorCode::NewSurfaceCreated,
            RuntimeError::Surface(e) => e.code(),
            RuntimeError::InvalidAction(_) => ErrorCode::InvalidAction,
            RuntimeError::StaleRevision(_) => ErrorCode::StaleObservation,
            RuntimeError::UnknownApproval { .. } => ErrorCode::InvalidAction,
            RuntimeError::DataDir { .. } => ErrorCode::BackendUnavailable,
            // A full disk is the data directory's state, not a bug: the caller can do something.
            RuntimeError::Store(e) if e.is_disk_full() || e.is_unavailable() => {
                ErrorCode::BackendUnavailable
            }
            RuntimeError::Store(_) | RuntimeError::Internal(_) => ErrorCode::Internal,
        }
    }
}
