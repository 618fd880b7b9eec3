//! The errors a CDP command can end with; launch errors live in [`crate::launch`].

use std::time::Duration;

/// Why a CDP command or connection attempt failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CdpError {
    /// The command got no reply before its deadline. The connection stays usable; a late reply is dropped.
    #[error("CDP command {method} got no reply within {after:?}")]
    Timeout { method: String, after: Duration },
    /// The WebSocket closed (browser exited, crashed, or the peer hung up) before the reply came.
    #[error("CDP connection closed: {reason}")]
    Closed { reason: String },
    /// The session's target went away (tab closed, crashed, or detached) before or while the command ran.
    #[error("CDP session {session_id} is detached: its target closed or crashed")]
    Detached { session_id: String },
    /// The browser answered with a protocol error.
    #[error("CDP command {method} failed: {message} (code {code})")]
    Protocol {
        method: String,
        code: i64,
        message: String,
        data: Option<String>,
    },
    /// The reply arrived but did not have the shape the typed command expects.
    #[error("CDP reply to {method} did not decode: {reason}")]
    Decode { method: String, reason: String },
    /// Could not open the WebSocket or resolve the endpoint.
    #[error("cannot connect to the browser at {endpoint}: {reason}")]
    Connect { endpoint: String, reason: String },
}

impl CdpError {
    /// True when the connection itself is gone and every later command will fail the same way.
    pub fn is_closed(&self) -> bool {
        matches!(self, CdpError::Closed { .. })
    }
}
