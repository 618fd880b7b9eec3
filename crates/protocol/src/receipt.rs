//! `Receipt`: what became of one action, including whether its effect is uncertain; not the
//! dispatch itself.
//!
//! The states follow an action through the runtime: `attempted` (accepted, nothing sent),
//! `dispatched` (sent to the browser, no confirmation yet), `confirmed` (the browser
//! confirmed it), `failed` (it did not happen, or it is unknown whether it did), `unknown`
//! (sent, and the outcome cannot be learned, e.g. the connection dropped). The constructors
//! tie `effect_uncertain` to the state so a caller cannot claim certainty it lacks.
//!
//! # Which action
//!
//! `action` is the `type` of the action as it was sent, named by [`ExtendedKind`]: one of
//! v1's eight names for every v1 action (`click`, `type`, … — the same strings as
//! [`ActionKind`], so a client of `glovebox.actions/1` only ever sees v1 names, for the only
//! actions it can send), and `drag`, `key_down`, `key_up`, `upload` or `dialog` for the
//! actions only `glovebox.actions/2` has. A receipt never names a stand-in kind (a drag is
//! `drag`, not `click`). Variants that are parameters of one `type` in the extended set keep
//! that `type`: a double or right click, a click that captures a download, a horizontal
//! scroll, and any action whose locator enters frames are `click` and `scroll` as sent.
//! [`Receipt::v1_action`] gives the v1 kind where there is one.
//!
//! Receipts are output only; no published schema describes them (the seed's v1 schemas are the
//! action and `computer_use` input schemas, unchanged).

use serde::Serialize;

use crate::action::ActionKind;
use crate::error::ErrorCode;
use crate::extended::ExtendedKind;
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
    action: ExtendedKind,
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
        action: ExtendedKind,
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
    pub fn attempted(action: impl Into<ExtendedKind>, expected_frame_id: FrameId) -> Self {
        Self::new(
            action.into(),
            expected_frame_id,
            ReceiptState::Attempted,
            false,
            None,
            None,
        )
    }

    /// Sent, not confirmed: the effect is uncertain.
    pub fn dispatched(action: impl Into<ExtendedKind>, expected_frame_id: FrameId) -> Self {
        Self::new(
            action.into(),
            expected_frame_id,
            ReceiptState::Dispatched,
            true,
            None,
            None,
        )
    }

    /// Confirmed: the effect is certain.
    pub fn confirmed(action: impl Into<ExtendedKind>, expected_frame_id: FrameId) -> Self {
        Self::new(
            action.into(),
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
        action: impl Into<ExtendedKind>,
        expected_frame_id: FrameId,
        error: ErrorCode,
        after_dispatch: bool,
        detail: impl Into<String>,
    ) -> Self {
        let detail = Some(detail.into()).filter(|d| !d.is_empty());
        Self::new(
            action.into(),
            expected_frame_id,
            ReceiptState::Failed,
            after_dispatch,
            Some(error),
            detail,
        )
    }

    /// Sent, outcome unknowable: the effect is uncertain.
    pub fn unknown(
        action: impl Into<ExtendedKind>,
        expected_frame_id: FrameId,
        detail: impl Into<String>,
    ) -> Self {
        let detail = Some(detail.into()).filter(|d| !d.is_empty());
        Self::new(
            action.into(),
            expected_frame_id,
            ReceiptState::Unknown,
            true,
            None,
            detail,
        )
    }

    /// The same receipt with `note` added to its detail (bounded): what else happened, such as
    /// requests the network boundary refused. State and certainty are unchanged.
    pub fn with_note(mut self, note: &str) -> Self {
        let joined = match self.detail.take() {
            Some(d) => format!("{d}; {note}"),
            None => note.to_owned(),
        };
        self.detail = Some(BoundedText::new(joined, RECEIPT_DETAIL_MAX_CHARS).text);
        self
    }

    /// The kind of the action as sent (its wire `type`).
    pub fn action(&self) -> ExtendedKind {
        self.action
    }
    /// The v1 kind, when the action's `type` is one of v1's eight.
    pub fn v1_action(&self) -> Option<ActionKind> {
        self.action.as_v1()
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
