//! The seam between Glovebox's runtime and its surfaces (`design.md`: "the runtime reaches every
//! surface through `SurfaceAdapter` and speaks no CDP"). [`SurfaceAdapter`] and [`Surface`] are
//! what an adapter crate (`browser` today; `desktop` and `vm` next) implements; the rest are the
//! surface-neutral types they speak: options of a capture and an action, an action's outcome,
//! the frame record policy judges by, a person's input, the snapshot text format, and the one
//! place screenshots are scaled, cropped and masked.
//!
//! It does no I/O of its own (the upload root reads the filesystem to authorise a name) and
//! knows nothing of CDP, runs, leases or policy decisions.

mod adapter;
mod error;
mod frame;
pub mod image;
pub mod metrics;
mod options;
mod outcome;
mod person;
pub mod text;

pub use adapter::{
    BoxFuture, InputDomain, KeptSite, PersonCast, PersonEntry, Reconnected, Surface,
    SurfaceAdapter, SurfaceEvent, SurfaceEvents, SurfaceInfo, SurfaceMemory,
};
pub use error::SurfaceError;
pub use frame::{FormStructure, FrameRecord, LocatedFacts, TargetFacts, TargetStructure};
pub use image::{
    ImageError, MASK_RGBA, crop_screenshot, decode_base64, encode_base64, fit_screenshot,
    mask_screenshot,
};
pub use options::{
    ActOptions, DownloadInfo, ObserveOptions, PageModel, Typing, UploadRefused, UploadRoot,
};
pub use outcome::{
    ActOutcome, ActTiming, ActionMarker, BlockedRequest, Dialog, MarkerKind, NetworkHold,
    RefusedOrigin, SettleEnd,
};
pub use person::{CastFrame, HistoryMove, KeyEvent, PersonInput, PersonInputRefused, PointerEvent};
pub use text::{is_state_token, observation_text, observation_text_or_changes, snapshot_text};
