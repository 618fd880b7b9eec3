//! The one error type every surface adapter answers with, each variant mapped to the closed
//! protocol error code a model sees. An adapter maps its own failures (CDP, X11, a guest's HTTP)
//! into these; the runtime never sees an adapter's error type.

use protocol::ErrorCode;

/// Why an observation, preview, action or lifecycle step on a surface failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SurfaceError {
    /// The surface closed, crashed or detached.
    #[error("the tab is gone: {reason}")]
    TargetLost { reason: String },
    /// The backend (browser connection, display, guest) is down.
    #[error("the browser is unavailable: {reason}")]
    BackendUnavailable { reason: String },
    /// The surface changed during capture twice in a row; nothing from either attempt is returned.
    #[error("the page kept changing during capture ({what}); observe again")]
    Unstable { what: String },
    /// The frame or ref the action names is not the current one; nothing was sent.
    #[error("{reason}; observe again and use the new frame_id")]
    Stale { reason: String },
    /// The element cannot take this action right now (covered, disabled, not editable, a dialog is
    /// open…); nothing was sent.
    #[error("{reason}")]
    NotActionable { reason: String },
    /// A deadline passed.
    #[error("{what} did not finish within {after_ms} ms")]
    Timeout { what: String, after_ms: u64 },
    /// The backend answered in a way the adapter cannot use.
    #[error("unexpected browser reply: {reason}")]
    Internal { reason: String },
}

impl SurfaceError {
    /// The closed error code for transports.
    pub fn code(&self) -> ErrorCode {
        match self {
            SurfaceError::TargetLost { .. } => ErrorCode::TargetLost,
            SurfaceError::BackendUnavailable { .. } => ErrorCode::BackendUnavailable,
            SurfaceError::Unstable { .. } | SurfaceError::Stale { .. } => {
                ErrorCode::StaleObservation
            }
            SurfaceError::NotActionable { .. } => ErrorCode::InvalidAction,
            SurfaceError::Timeout { .. } => ErrorCode::Timeout,
            SurfaceError::Internal { .. } => ErrorCode::Internal,
        }
    }

    /// `TargetLost` with a reason.
    pub fn lost(reason: impl Into<String>) -> SurfaceError {
        SurfaceError::TargetLost {
            reason: reason.into(),
        }
    }

    /// `BackendUnavailable` with a reason.
    pub fn unavailable(reason: impl Into<String>) -> SurfaceError {
        SurfaceError::BackendUnavailable {
            reason: reason.into(),
        }
    }
}
