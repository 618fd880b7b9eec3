//! Structured events of runs and direct calls (a direct call's `run_id` is its session) for logs
//! and the console: never typed text, only its length, target and sensitivity. Every status,
//! reason, state and decision is serialised as its closed snake_case code.

use serde::Serialize;

/// One event of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    pub run_id: String,
    pub seq: u64,
    /// Milliseconds since the Unix epoch.
    pub at: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    RunStarted {
        surface: String,
        task_chars: usize,
        max_steps: u32,
        max_seconds: u32,
    },
    Observed {
        frame_id: String,
        elements: usize,
        aria_chars: usize,
    },
    Planned {
        action: String,
        target: Option<String>,
    },
    ActionSummary {
        action: String,
        target: Option<String>,
        text_chars: Option<usize>,
        secret: bool,
    },
    ApprovalRequested {
        approval_id: protocol::ApprovalId,
        tier: policy::RiskTier,
        origin: String,
        what: String,
    },
    ApprovalResolved {
        approval_id: protocol::ApprovalId,
        outcome: crate::ApprovalDecision,
    },
    /// `action` is the kind as sent (`click`, `drag`, …), as the receipt names it.
    Receipt {
        action: String,
        state: protocol::ReceiptState,
        effect_uncertain: bool,
        detail: Option<String>,
    },
    Verified {
        assertion: String,
        passed: bool,
    },
    /// The run waits for a person (a login, a CAPTCHA): a person acts in the page and continues
    /// it (`Runtime::continue_run`), or the run ends `needs_user` at its deadline.
    NeedsUser {
        reason: String,
    },
    /// A person continued the run: it observes afresh; the paused action is never replayed.
    Continued,
    RunEnded {
        status: protocol::RunStatus,
        reason: protocol::ReasonCode,
        steps: u32,
    },
    /// One primitive of a `gui_exec` call (its writes also have their own `Receipt`).
    ScriptStep {
        generation: u64,
        operation_id: String,
        method: String,
        /// A write's effect: applied, failed or unknown.
        state: Option<String>,
        error: Option<protocol::ErrorCode>,
    },
}

/// The runtime's event stream: its sender and the next event's sequence number.
pub(crate) struct Events {
    pub(crate) sender: tokio::sync::broadcast::Sender<Event>,
    pub(crate) seq: std::sync::atomic::AtomicU64,
}

impl Events {
    pub(crate) fn new(sender: tokio::sync::broadcast::Sender<Event>) -> Self {
        Events {
            sender,
            seq: std::sync::atomic::AtomicU64::new(1),
        }
    }
}
