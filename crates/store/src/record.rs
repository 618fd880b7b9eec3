//! Durable runs and the operation log: one run record per run (request, model choice, outcome,
//! accounting), one operation record per action that reached the runtime's one action path —
//! written `attempted` before the action is sent and ended with the receipt's state. An
//! operation a dead process left open is `unknown` (its effect is uncertain; it is never
//! replayed). The store keeps only what the caller gives: typed text as its length and
//! sensitivity, URLs already redacted.

use crate::id::{InstanceId, RunId, SessionId};

text_enum!(
    /// Where an operation got to (the receipt's states).
    OperationState {
        /// Accepted and recorded; not known to have been sent.
        Attempted => "attempted",
        /// Sent to the surface; not confirmed.
        Dispatched => "dispatched",
        /// The surface confirmed it.
        Confirmed => "confirmed",
        /// It failed (see the error and whether its effect is uncertain).
        Failed => "failed",
        /// Sent, and its outcome cannot be learned.
        Unknown => "unknown",
    }
);

/// What [`crate::Store::begin_run`] records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    /// The run id.
    pub id: RunId,
    /// Its session.
    pub session_id: SessionId,
    /// The surface key it holds.
    pub surface: String,
    /// The task as given (the caller bounds it).
    pub task: String,
    /// The resolved model choice, if known.
    pub model: Option<String>,
    /// Its step budget.
    pub max_steps: u32,
    /// Its time budget.
    pub max_seconds: u32,
    /// When it started (ms).
    pub started_at: u64,
}

/// How a run ended, for [`crate::Store::end_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnd {
    /// The result's status (`succeeded`, `failed`, …).
    pub status: String,
    /// The result's reason code.
    pub reason: String,
    /// The result's summary (the caller bounds and redacts it).
    pub summary: String,
    /// Steps taken.
    pub steps: u32,
    /// What the model calls cost, as JSON.
    pub accounting: Option<String>,
    /// The task as the record keeps it from now on, when the caller gives one (it may be
    /// recorded only at the end, once the caller knows what to take out of it).
    pub task: Option<String>,
    /// When it ended (ms).
    pub ended_at: u64,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    /// What was recorded at its start.
    pub run: NewRun,
    /// The instance that ran it.
    pub instance: Option<InstanceId>,
    /// How it ended; `None` while it runs. A run whose server died has status `abandoned`.
    pub end: Option<RunEnd>,
}

/// What [`crate::Store::begin_operation`] records, before the action is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOperation {
    /// The operation id.
    pub id: String,
    /// Its session.
    pub session_id: SessionId,
    /// Its run; `None` for a direct call.
    pub run_id: Option<RunId>,
    /// The surface key acted on.
    pub surface: String,
    /// The tab record behind the key.
    pub resource_id: Option<String>,
    /// The action's kind as sent.
    pub action: String,
    /// Its target, as described to a person.
    pub target: Option<String>,
    /// The length of the text it types, if any.
    pub text_chars: Option<u64>,
    /// Whether that text goes into a secret field.
    pub secret: bool,
    /// The page's URL (redacted by the caller).
    pub url: Option<String>,
    /// The frame the action was planned against.
    pub frame_before: String,
    /// When it was accepted (ms).
    pub started_at: u64,
}

/// How an operation ended, for [`crate::Store::end_operation`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationEnd {
    /// The receipt's state (never `attempted`).
    pub state: OperationState,
    /// Whether it may or may not have taken effect.
    pub effect_uncertain: bool,
    /// The error code, when it failed or was refused.
    pub error: Option<String>,
    /// The receipt's detail or the refusal's message (the caller bounds and redacts it).
    pub detail: Option<String>,
    /// The frame observed after it, if any.
    pub frame_after: Option<String>,
    /// Where its input went (JSON of the browser's action marker), if it sent any.
    pub marker: Option<String>,
    /// When it ended (ms).
    pub ended_at: u64,
}

/// An operation as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationRecord {
    /// Its position in the log; later operations have greater numbers.
    pub seq: u64,
    /// What was recorded before it was sent.
    pub operation: NewOperation,
    /// The instance that performed it.
    pub instance: Option<InstanceId>,
    /// Its state now (`attempted` while the action is in flight).
    pub state: OperationState,
    /// How it ended, once it did.
    pub end: Option<OperationEnd>,
}

/// Which operations [`crate::Store::list_operations`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperationFilter {
    /// Only this session's.
    pub session: Option<SessionId>,
    /// Only this run's.
    pub run: Option<RunId>,
    /// Only those with `seq > after`.
    pub after: u64,
    /// At most this many, the latest ones (0 = no limit).
    pub limit: usize,
}

/// What [`crate::Store::prune_records`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Operations removed.
    pub operations: u64,
    /// Runs removed.
    pub runs: u64,
}
