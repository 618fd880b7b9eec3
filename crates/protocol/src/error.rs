//! The closed set of error codes every transport shares, and the structured error a model gets
//! back for input that fails validation; not the runtime's internal error types.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Every error code of the design (`000_…` §06), shared by MCP, the host API and the runner.
/// Closed: adding one is a protocol change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No `surface` was given and the turn has no primary surface.
    AmbiguousSurface,
    /// The `surface` is not a key or alias of this turn's Surface Context.
    UnknownSurface,
    /// The surface lacks the capability the call or action needs.
    CapabilityDenied,
    /// The leased target closed, moved, or its binding became invalid.
    TargetLost,
    /// `expected_frame_id` is not the current frame; observe again.
    StaleObservation,
    /// Another holder has the tab's write lease.
    LeaseConflict,
    /// The origin is not allowed by policy.
    OriginDenied,
    /// The action needs a person's approval first.
    NeedsApproval,
    /// A person refused the approval.
    ApprovalDenied,
    /// The leased target opened a popup or tab; the run ends for the user to decide.
    NewSurfaceCreated,
    /// The input does not match the schema; `problems` says where and why.
    InvalidAction,
    /// The run used its step budget.
    StepLimit,
    /// The run used its time budget, or an operation its deadline.
    Timeout,
    /// The run was cancelled.
    Cancelled,
    /// The browser backend cannot be reached.
    BackendUnavailable,
    /// A bug or an unexpected state in Glovebox.
    Internal,
}

impl ErrorCode {
    /// Every code, in the design's order.
    pub const ALL: [ErrorCode; 16] = [
        Self::AmbiguousSurface,
        Self::UnknownSurface,
        Self::CapabilityDenied,
        Self::TargetLost,
        Self::StaleObservation,
        Self::LeaseConflict,
        Self::OriginDenied,
        Self::NeedsApproval,
        Self::ApprovalDenied,
        Self::NewSurfaceCreated,
        Self::InvalidAction,
        Self::StepLimit,
        Self::Timeout,
        Self::Cancelled,
        Self::BackendUnavailable,
        Self::Internal,
    ];

    /// The wire name, e.g. `"invalid_action"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AmbiguousSurface => "ambiguous_surface",
            Self::UnknownSurface => "unknown_surface",
            Self::CapabilityDenied => "capability_denied",
            Self::TargetLost => "target_lost",
            Self::StaleObservation => "stale_observation",
            Self::LeaseConflict => "lease_conflict",
            Self::OriginDenied => "origin_denied",
            Self::NeedsApproval => "needs_approval",
            Self::ApprovalDenied => "approval_denied",
            Self::NewSurfaceCreated => "new_surface_created",
            Self::InvalidAction => "invalid_action",
            Self::StepLimit => "step_limit",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::BackendUnavailable => "backend_unavailable",
            Self::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing wrong with an input: where (a JSON pointer into the input, `""` for the whole
/// input) and why, in words a model can act on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Problem {
    /// JSON pointer (RFC 6901) to the offending value, e.g. `/target/kind`.
    pub path: String,
    /// The reason, e.g. `2500 is greater than the maximum of 2000`.
    pub message: String,
}

impl Problem {
    /// A problem at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(root)"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// A model input rejected before anything ran: every problem found, with its path.
///
/// `code` is [`ErrorCode::InvalidAction`] for schema problems and
/// [`ErrorCode::UnknownSurface`] when a `computer_use` call names a surface the turn does
/// not offer. Serializes as `{"code", "message", "problems"}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ActionError {
    /// The error code.
    pub code: ErrorCode,
    /// Every problem, sorted by path; never empty.
    pub problems: Vec<Problem>,
}

impl ActionError {
    /// An `invalid_action` error with one problem.
    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::InvalidAction,
            problems: vec![Problem::new(path, message)],
        }
    }
}

impl fmt::Display for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.code)?;
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl Serialize for ActionError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ActionError", 3)?;
        st.serialize_field("code", &self.code)?;
        st.serialize_field("message", &self.to_string())?;
        st.serialize_field("problems", &self.problems)?;
        st.end()
    }
}
