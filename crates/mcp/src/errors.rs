//! Tool errors: the closed error code, what to do next, and the runtime's message (which can
//! quote page text, so it travels inside the untrusted markers).

use protocol::ErrorCode;
use rmcp::model::{CallToolResult, ContentBlock as Content};
use serde_json::json;

use crate::wrap::Untrusted;

/// The next step a model should take after an error with this code.
pub(crate) fn next_step(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::StaleObservation => "observe again and use the new frame_id and refs",
        ErrorCode::UnknownSurface => {
            "call `surfaces` (or `tabs`) and use one of the listed keys or aliases"
        }
        ErrorCode::AmbiguousSurface => {
            "name a surface: a key or alias from `surfaces`, or open a tab with `tab_open`"
        }
        ErrorCode::CapabilityDenied => {
            "the user has not given you this capability on this surface; choose another surface or ask the user"
        }
        ErrorCode::TargetLost => {
            "the tab or element is gone; call `tabs`, observe again, or open a new tab"
        }
        ErrorCode::LeaseConflict => {
            "another run holds this tab; wait for it to finish or use another tab"
        }
        ErrorCode::OriginDenied => {
            "the configuration does not allow this origin or scheme; do not retry it, ask the user"
        }
        ErrorCode::NeedsApproval => {
            "a person must approve this; tell the user what is pending, and after they approve send the same action again"
        }
        ErrorCode::ApprovalDenied => {
            "a person declined this action; do not retry it, ask the user how to proceed"
        }
        ErrorCode::NewSurfaceCreated => {
            "the page opened a new tab or popup; call `surfaces` to see it"
        }
        ErrorCode::InvalidAction => {
            "fix the action at the paths named in the message, following the act schema"
        }
        ErrorCode::StepLimit => "the step limit is reached; report what was done",
        ErrorCode::Timeout => {
            "the page did not settle in time; observe again before deciding what to do"
        }
        ErrorCode::Cancelled => "the run was cancelled by a person; stop",
        ErrorCode::BackendUnavailable => {
            "the browser is unavailable; retry later, or ask the user to run `glovebox doctor`"
        }
        ErrorCode::Internal => "an internal error; observe again, and report it if it repeats",
    }
}

/// A tool error: a JSON header the runtime wrote (`error`, `next`) and the message, wrapped.
pub(crate) fn tool_error(untrusted: &Untrusted, code: ErrorCode, message: &str) -> CallToolResult {
    let header = json!({"error": code.as_str(), "next": next_step(code)});
    CallToolResult::error(vec![
        Content::text(header.to_string()),
        Content::text(untrusted.wrap(message)),
    ])
}

/// A tool error whose message is the server's own (no page text in it).
pub(crate) fn own_error(code: ErrorCode, message: &str) -> CallToolResult {
    let header = json!({"error": code.as_str(), "next": next_step(code), "message": message});
    CallToolResult::error(vec![Content::text(header.to_string())])
}

/// The session's budget of tool calls was spent for now: `step_limit`, the closed code for a
/// budget reached (never `lease_conflict`: no lease is involved), with the wait.
pub(crate) fn rate_limited(wait: std::time::Duration) -> CallToolResult {
    let wait_ms = wait.as_millis().max(1);
    let header = json!({
        "error": ErrorCode::StepLimit.as_str(),
        "next": format!("wait {wait_ms} ms, then send the same call again; this session's rate of tool calls is bounded"),
        "message": format!("too many tool calls in this session; wait {wait_ms} ms and call again"),
        "retry_after_ms": wait_ms,
    });
    CallToolResult::error(vec![Content::text(header.to_string())])
}
