//! `Receipt`: what became of one action, including whether its effect is uncertain; not the
//! dispatch itself.
//!
//! The states follow an action through the runtime: `attempted` (accepted, nothing sent),
//! `dispatched` (sent to the browser, no confirmation yet), `confirmed` (the browser
//! confirmed it), `failed` (it did not happen, or it is unknown whether it did), `unknown`
//! (sent, and the outcome cannot be learned, e.g. the connection dropped). The constructors
//! tie `effect_uncertain` to the state so a caller cannot claim certainty it lacks.

use serde::Serialize;

use crate::action::ActionKind;
use crate::error::ErrorCode;
use crate::ids::FrameId;
use crate::limits::RECEIPT_DETAIL_MAX_CHARS;
use crate::text::BoundedText;

/// Where an action got to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptState {
    /// Accepted; nothing sent to the browser.
    Attempted,
    /// Sent to the browser; not yet confirmed.
    Dispatched,
    /// The browser confirmed the effect.
    Confirmed,
    /// The action failed; see `error` and `effect_uncertain`.
    Failed,
    /// Sent, and the outcome cannot be learned.
    Unknown,
}

/// The receipt of one action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    action: ActionKind,
    expected_frame_id: FrameId,
    state: ReceiptState,
    effect_uncertain: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorCode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

impl Receipt {
    fn new(
        action: ActionKind,
        expected_frame_id: FrameId,
        state: ReceiptState,
        effect_uncertain: bool,
        error: Option<ErrorCode>,
        detail: Option<String>,
    ) -> Self {
        let detail = detail.map(|d| BoundedText::new(d, RECEIPT_DETAIL_MAX_CHARS).text);
        Self {
            action,
            expected_frame_id,
            state,
            effect_uncertain,
            error,
            detail,
        }
    }

    /// Accepted, nothing sent: the effect is certainly absent.
    pub fn attempted(action: ActionKind, expected_frame_id: FrameId) -> Self {
        Self::new(
            action,
            expected_frame_id,
            ReceiptState::Attempted,
            false,
            None,
            None,
        )
    }

    /// Sent, not confirmed: the effect is uncertain.
    pub fn dispatched(action: ActionKind, expected_frame_id: FrameId) -> Self {
        Self::new(
            action,
            expected_frame_id,
            ReceiptState::Dispatched,
            true,
            None,
            None,
        )
    }

    /// Confirmed: the effect is certain.
    pub fn confirmed(action: ActionKind, expected_frame_id: FrameId) -> Self {
        Self::new(
            action,
            expected_frame_id,
            ReceiptState::Confirmed,
            false,
            None,
            None,
        )
    }

    /// Failed with `error`. `after_dispatch`: the failure came after the action was sent,
    /// so it may have taken effect (`effect_uncertain`).
    pub fn failed(
        action: ActionKind,
        expected_frame_id: FrameId,
        error: ErrorCode,
        after_dispatch: bool,
        detail: impl Into<String>,
    ) -> Self {
        let detail = Some(detail.into()).filter(|d| !d.is_empty());
        Self::new(
            action,
            expected_frame_id,
            ReceiptState::Failed,
            after_dispatch,
            Some(error),
            detail,
        )
    }

    /// Sent, outcome unknowable: the effect is uncertain.
    pub fn unknown(
        action: ActionKind,
        expected_frame_id: FrameId,
        detail: impl Into<String>,
    ) -> Self {
        let detail = Some(detail.into()).filter(|d| !d.is_empty());
        Self::new(
            action,
            expected_frame_id,
            ReceiptState::Unknown,
            true,
            None,
            detail,
        )
    }

    /// The action kind.
    pub fn action(&self) -> ActionKind {
        self.action
    }
    /// The frame the action was planned against.
    pub fn expected_frame_id(&self) -> &FrameId {
        &self.expected_frame_id
    }
    /// The state.
    pub fn state(&self) -> ReceiptState {
        self.state
    }
    /// Whether the action may or may not have taken effect.
    pub fn effect_uncertain(&self) -> bool {
        self.effect_uncertain
    }
    /// The error code of a failure.
    pub fn error(&self) -> Option<ErrorCode> {
        self.error
    }
    /// A bounded human detail.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }
}
