//! Errors of the browser adapter, each mapped to the closed protocol error code a model sees.

use cdp::CdpError;
use protocol::ErrorCode;

/// Why an observation, preview or action on a tab failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BrowserError {
    /// The tab closed, crashed or detached.
    #[error("the tab is gone: {reason}")]
    TargetLost { reason: String },
    /// The browser connection is down.
    #[error("the browser is unavailable: {reason}")]
    BackendUnavailable { reason: String },
    /// The page changed during capture twice in a row; nothing from either attempt is returned.
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
    /// The browser answered in a way the adapter cannot use.
    #[error("unexpected browser reply: {reason}")]
    Internal { reason: String },
}

impl BrowserError {
    /// The closed error code for transports.
    pub fn code(&self) -> ErrorCode {
        match self {
            BrowserError::TargetLost { .. } => ErrorCode::TargetLost,
            BrowserError::BackendUnavailable { .. } => ErrorCode::BackendUnavailable,
            BrowserError::Unstable { .. } | BrowserError::Stale { .. } => {
                ErrorCode::StaleObservation
            }
            BrowserError::NotActionable { .. } => ErrorCode::InvalidAction,
            BrowserError::Timeout { .. } => ErrorCode::Timeout,
            BrowserError::Internal { .. } => ErrorCode::Internal,
        }
    }
}

impl From<CdpError> for BrowserError {
    fn from(e: CdpError) -> Self {
        match e {
            CdpError::Detached { .. } => BrowserError::TargetLost {
                reason: e.to_string(),
            },
            CdpError::Closed { .. } | CdpError::Connect { .. } => {
                BrowserError::BackendUnavailable {
                    reason: e.to_string(),
                }
            }
            CdpError::Timeout { ref method, after } => BrowserError::Timeout {
                what: method.clone(),
                after_ms: after.as_millis() as u64,
            },
            // The page replaced its document between a read and the call that used what it
            // read (a context, an object or a node of the old document): the page changed, which
            // a caller takes as "observe again" — not a fault of Glovebox's.
            CdpError::Protocol { ref message, .. } if document_gone(message) => {
                BrowserError::Stale {
                    reason: format!("the page replaced its document meanwhile ({message})"),
                }
            }
            CdpError::Protocol { .. } | CdpError::Decode { .. } => BrowserError::Internal {
                reason: e.to_string(),
            },
        }
    }
}

/// Chromium's answers for a context, remote object or node that no longer exists because its
/// document went away (they all come with the generic code -32000).
fn document_gone(message: &str) -> bool {
    const GONE: [&str; 7] = [
        "Cannot find context with specified id",
        "Execution context was destroyed",
        // A call (`Runtime.callFunctionOn` awaiting a promise) that the navigation cut off.
        "Inspected target navigated or closed",
        "Could not find object with given id",
        "Could not find node with given id",
        "No node with given id found",
        "Node with given id does not belong to the document",
    ];
    GONE.iter().any(|gone| message.contains(gone))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protocol(message: &str) -> CdpError {
        CdpError::Protocol {
            method: "Runtime.callFunctionOn".into(),
            code: -32000,
            message: message.into(),
            data: None,
        }
    }

    #[test]
    fn a_gone_document_is_stale_and_other_protocol_errors_are_internal() {
        let gone = BrowserError::from(protocol("Cannot find context with specified id"));
        assert_eq!(gone.code(), ErrorCode::StaleObservation, "{gone}");
        let cut = BrowserError::from(protocol("Inspected target navigated or closed"));
        assert_eq!(cut.code(), ErrorCode::StaleObservation, "{cut}");
        let other = BrowserError::from(protocol("Invalid parameters"));
        assert_eq!(other.code(), ErrorCode::Internal, "{other}");
    }
}
