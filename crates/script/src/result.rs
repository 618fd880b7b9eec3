//! What one `gui_exec` call returns: the ordered text and image blocks the script produced, and
//! typed details (environment, generation, each primitive with its effect, the last applied one,
//! the latest observation token per surface, the error with the last completed primitive and any
//! uncertain effect, and timing). A receipt proves an action was applied, never that the task
//! succeeded.

use std::collections::BTreeMap;

use protocol::ErrorCode;
use serde::Serialize;

use crate::broker::Effect;
use crate::wire::{Method, ScriptFailure};

/// How the call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecStatus {
    /// The script ran to its end.
    Ok,
    /// The script raised (a primitive's refusal or its own exception); see `error`.
    Error,
    /// Over the call's time: writes were revoked, held input released, the runner killed (its
    /// namespace is gone; the next call starts a fresh one).
    Timeout,
    /// Over the primitive budget; the script was told and the call ended.
    Limit,
    /// The runner died or broke the protocol; it was killed.
    Crashed,
}

/// One block of the script's output, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    Image {
        mime: String,
        /// The image's bytes (base64 in JSON).
        #[serde(serialize_with = "base64")]
        data: Vec<u8>,
    },
}

/// An image's bytes in JSON: standard base64 (the seam's one encoder).
fn base64<S: serde::Serializer>(data: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&surface::encode_base64(data))
}

/// One primitive the script asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Operation {
    pub operation_id: String,
    pub method: Method,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surface: Option<String>,
    /// For a write: applied, failed or unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<crate::broker::EffectState>,
    pub effect_uncertain: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorCode>,
    pub ms: u64,
}

/// Why the call ended early.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecError {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
    pub message: String,
    /// The script's exception, when it raised one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<ScriptFailure>,
    /// The last primitive that completed, e.g. `op-4 act`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<String>,
    /// Primitives whose effect is uncertain.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub uncertain: Vec<String>,
}

/// Where the time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Timing {
    pub total_ms: u64,
    /// Starting a sandbox for this call (0 when the session's runner was already up).
    pub startup_ms: u64,
    /// Inside broker primitives.
    pub broker_ms: u64,
}

/// The sandbox and interpreter, and whether this call began a fresh namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Environment {
    pub sandbox: String,
    pub fresh_namespace: bool,
}

/// One call's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecResult {
    pub status: ExecStatus,
    pub generation: u64,
    pub environment: Environment,
    pub blocks: Vec<Block>,
    pub operations: Vec<Operation>,
    /// The index (in `operations`) of the last write that applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_applied_index: Option<usize>,
    /// The latest observation token per surface the script touched.
    pub observations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ExecError>,
    pub timing: Timing,
    /// Text past the call's bound was left out, and displayed images past its count.
    pub truncated: bool,
}

impl ExecResult {
    /// Everything the script printed, in order (its text blocks joined).
    pub fn printed(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                Block::Image { .. } => None,
            })
            .collect()
    }

    /// The operations whose effect is uncertain, by id and method.
    pub fn uncertain(&self) -> Vec<String> {
        self.operations
            .iter()
            .filter(|o| o.effect_uncertain)
            .map(|o| format!("{} {}", o.operation_id, o.method.as_str()))
            .collect()
    }

    /// The error's code, for transports (a script that raised has no code of its own:
    /// `invalid_action`, unless a primitive's refusal ended it).
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self.status {
            ExecStatus::Ok => None,
            ExecStatus::Timeout => Some(ErrorCode::Timeout),
            ExecStatus::Limit => Some(ErrorCode::StepLimit),
            ExecStatus::Crashed => Some(ErrorCode::Internal),
            ExecStatus::Error => Some(
                self.error
                    .as_ref()
                    .and_then(|e| e.code)
                    .unwrap_or(ErrorCode::InvalidAction),
            ),
        }
    }
}

/// The effect a write had, named for a result's `operations`.
pub(crate) fn applied(effect: Option<Effect>) -> bool {
    effect.is_some_and(|e| e.state == crate::broker::EffectState::Applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_bytes_are_base64_in_json() {
        for (bytes, want) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"\x89PNG\xff", "iVBOR/8="),
        ] {
            let block = Block::Image {
                mime: "image/png".into(),
                data: bytes.to_vec(),
            };
            let v = serde_json::to_value(&block).unwrap();
            assert_eq!(v["data"], want, "{bytes:?}");
        }
    }
}
