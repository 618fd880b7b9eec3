//! Glovebox's wire protocol: ids, actions, observations, previews, surface context, receipts,
//! run results, their JSON Schemas and the validation of model input. It does no I/O, keeps
//! no clock and spawns nothing; every other crate speaks it.
//!
//! The shapes and bounds come from `000_…` §06 ("公开入口与内部协议"); every limit is a named
//! constant in [`limits`]. Entry points most callers need: [`validate_action`],
//! [`validate_computer_use`], [`action_schema`], [`action_tool_schema`],
//! [`computer_use_tool`], [`Observation::bounded`], [`Preview::ready`], [`RunResult`]; for
//! the extended action set of `004_…`, [`validate_extended_action`],
//! [`extended_action_schema`] and [`extended_action_tool_schema`] (see [`extended`]).

#![warn(missing_docs)]

pub mod action;
pub mod coords;
pub mod error;
pub mod extended;
pub mod ids;
pub mod keys;
pub mod limits;
pub mod observation;
pub mod preview;
pub mod receipt;
pub mod result;
pub mod schema;
pub mod secret;
pub mod surface;
pub mod text;
pub mod tool;
pub mod untrusted;
pub mod validate;

pub use action::{
    Action, ActionKind, AnyTarget, ElementTarget, HttpUrl, Intent, MaxSeconds, MaxSteps, NearText,
    PointTarget, TaskText,
};
pub use error::{ActionError, ErrorCode, Problem};
pub use extended::{
    EXTENDED_ACTIONS_VERSION, ElementSpec, ExtendedAction, ExtendedKind, Locator, Target,
    TargetRef, extended_action_schema, extended_action_tool_schema, validate_extended_action,
};
pub use ids::{
    ApprovalId, ArtifactId, BindingId, ContextId, ElementRef, FrameId, IdError, LeaseId,
    ProviderRequestId, RunId, SessionId, SurfaceAlias, SurfaceKey, SurfaceName, TabId, ToolCallId,
    TurnId,
};
pub use observation::{
    ImageMime, ImageSize, InteractiveElement, Observation, ObservationParts, ProducerCuts,
    Screenshot, SnapshotDiff, SurfaceKind, TargetIdentity, Viewport,
};
pub use preview::{Landmark, Preview, PreviewParts, PreviewStatus};
pub use receipt::{Receipt, ReceiptState};
pub use result::{
    ArtifactKind, ArtifactRef, CompletionEvidence, EvidenceKind, ReasonCode, RunResult,
    RunResultError, RunStatus, RunTarget,
};
pub use schema::{action_schema, action_tool_schema, computer_use_input_schema, computer_use_tool};
pub use secret::{SecretName, Secrets};
pub use surface::{Capability, InputRoute, Region, SurfaceContext, SurfaceEntry, SurfaceError};
pub use tool::ComputerUseInput;
pub use untrusted::Untrusted;
pub use validate::{validate_action, validate_computer_use};

/// Compiles every action validator now rather than on the first action: ~30 ms of schema
/// compilation that a server's first call (`tab_open`'s navigate) otherwise waits for. The
/// servers call it on a thread of its own at start, while Chromium launches.
pub fn compile_validators() {
    validate::compile_all();
    extended::validate::compile_all();
}
