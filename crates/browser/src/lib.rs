//! Glovebox's browser surface adapter: bounded, redacted, fresh observations and turn-start
//! previews of real Chromium tabs over CDP. It reads (and, later, acts); it never decides
//! permissions — that is `policy` and `runtime`.
//!
//! A [`Tab`] wraps one attached page session. [`Tab::observe`] captures the accessibility tree
//! and DOM snapshot of every frame (same-process and out-of-process) in one consistent frame and
//! renders them as compact text with refs; [`Tab::preview`] reads the viewport's text and
//! landmarks in one synchronous turn of Glovebox's isolated world. [`Tab::act`] runs one action of
//! the extended set (`glovebox.actions/2`, the one action type; a v1 action arrives converted:
//! buttons, click counts, modifiers, held keys, drags, uploads from an [`UploadRoot`],
//! downloads, dialogs, locators with frame chains); [`Tab::release_input`] lets go of held keys and buttons.
//! [`Tab::detach`] ends an attachment without closing the tab, and [`Tab::resume`] attaches again
//! with the [`TabMemory`] of the last one, so a frame observed before still holds after.

mod act;
mod adapter;
mod capture;
mod console;
mod diff;
mod dom;
mod error;
mod guard;
mod keys;
mod model;
mod observe;
mod person;
mod pool;
mod preview;
pub mod probe;
mod render;
mod synth;
mod tab;

pub use adapter::{BrowserSource, Chromium};
pub use cdp::LaunchOptions;
pub use error::BrowserError;
pub use guard::TAIL as GUARD_TAIL;
pub use observe::{ObservationRecord, RefBinding};
pub use pool::{Pool, PoolLimits};
pub use tab::{Tab, TabMemory};

// The surface-neutral types this adapter speaks (`surface`), for its modules and its direct users.
pub use surface::{
    ActOptions, ActOutcome, ActTiming, Dialog, DownloadInfo, FormStructure, LocatedFacts,
    ObserveOptions, PageModel, SettleEnd, TargetFacts, TargetStructure, Typing, UploadRoot,
};
