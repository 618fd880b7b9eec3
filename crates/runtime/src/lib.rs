//! Glovebox's runtime: everything alive. Sessions and their tabs (surfaces), the Surface Context
//! of a turn, write leases, debugger leases, the origin and risk policy at the moment of each
//! action, approvals from a person, the runner loop, cancellation, artifacts and events — and the
//! one place that sets a run's status. It speaks no wire format and no surface protocol: it
//! reaches every surface through `surface::SurfaceAdapter`; transports call [`Runtime`].

mod approval;
mod artifacts;
mod cancel;
mod config;
mod control;
mod debugger;
mod error;
mod events;
mod host;
mod incarnation;
mod lease;
mod lifecycle;
mod metrics;
mod person_view;
mod planner;
mod records;
mod run;
mod runtime;
mod script;
mod secrets;
mod step;
mod turn_surfaces;
mod verify;
mod webtabs;

pub use approval::{ApprovalDecision, ApprovalRequest};
pub use artifacts::{Artifacts, DownloadMeta, downloaded};
pub use cancel::Cancel;
pub use config::{RuntimeConfig, StoreUrl};
pub use control::Control;
pub use debugger::DebuggerLeaseStatus;
pub use error::RuntimeError;
pub use events::{Event, EventKind};
pub use host::{
    Access, ChatTurn, ChatTurnRequest, ConnectionId, EntryKind, Envelope, PreparedTurn,
    RegistryAck, RegistryEvent, SurfaceRef, TurnEnding, WindowTicket,
};
pub use incarnation::Reconciliation;
pub use lease::Lease;
pub use lifecycle::{
    BrowserStatus, CleanupReport, LinkedTab, SessionSummary, TabStatus, TurnEnded, UserTab,
};
pub use metrics::NotReady;
pub use person_view::{PersonEntry, PersonView, VIEW_MAX_FPS, ViewFrame};
pub use planner::{
    CommandPlanner, PlanFuture, PlanInput, Planner, PlannerError, PlannerStep, PointError,
    Scripted, ScriptedPlanner, StepReport, parse_answer, parse_answer_seen, points_from_screenshot,
};
pub use records::{LogQuery, read_log};
pub use run::{RunHandle, RunRequest, StopOnDrop};
pub use runtime::{Runtime, SessionClient, SurfaceId};
pub use store::{Mark, Ownership, ResourceState};
pub use webtabs::PreviewPrefs;
// The surface-neutral types of the runtime's API (`surface`): transports name them from here and
// never depend on an adapter crate.
pub use surface::{
    ActOptions, ActOutcome, ActionMarker, DownloadInfo, ImageError, MarkerKind, ObserveOptions,
    PageModel, PersonInput, SurfaceAdapter, SurfaceError, crop_screenshot, decode_base64,
    encode_base64, fit_screenshot, mask_screenshot, observation_text, observation_text_or_changes,
    snapshot_text,
};
pub use verify::{
    ASSERTION_TEXT_MAX_CHARS, ASSERTIONS_MAX, Assertion, SUMMARY_MAX_CHARS, UNMET_MAX,
    assertion_schema, check_summary, proposed_checks, unmet_conditions,
};
pub use webtabs::RestoreReport;
