//! The extended action set of `004_…` ("浏览器：复用归属并补齐操作"): a second, versioned action
//! schema ([`EXTENDED_ACTIONS_VERSION`]) beside v1's, with the same validation and freshness
//! rules; not v1 (see [`crate::action`], whose schema is a published contract and unchanged).
//!
//! # Shape
//!
//! [`ExtendedAction`] is tagged by `type`; every branch requires `expected_frame_id` and
//! `intent` with v1's bounds and rejects unknown fields. It is a strict superset of v1: every
//! valid v1 action JSON is a valid extended action with the same meaning
//! (`From<Action> for ExtendedAction`), every new field is optional with a v1-equivalent
//! default, and [`ExtendedAction::as_v1`] goes back where it can.
//!
//! | `type` | fields beyond `expected_frame_id`, `intent` (`?` = optional) |
//! |---|---|
//! | `click` | `target` (any), `button?` left\|right\|middle, `click_count?` 1..=3, `modifiers?`, `expect_download?` |
//! | `hover` | `target` (any), `modifiers?` |
//! | `type` | `target` (element), `text`, `mode?` auto\|paste\|keystrokes |
//! | `press` | `target` (element), `key` (a key or chord, as v1) |
//! | `key_down`, `key_up` | `key` (one key), `target?` (element) |
//! | `scroll` | `delta_x?`, `delta_y?` (−2000..=2000, at least one), `target?` (element) |
//! | `select` | `target` (element), exactly one of `value` and `values` (1..=50 distinct) |
//! | `navigate`, `wait` | as v1 |
//! | `drag` | `source`, `destination` (any), `path?` (≤ 50 `{x,y}`), `end_offset?` `{x,y}` ±2000, `mode?` mouse\|html5 |
//! | `upload` | `target` (element: the file input, or a control whose click opens a file chooser), `files` (1..=20 distinct upload names) |
//! | `dialog` | `accept`, `prompt_text?` (≤ 10,000, only when accepting) |
//!
//! "any" targets are element refs, locators or viewport points; "element" targets are element
//! refs or locators (see [`target`] and, for locator matching and frame entry, [`locator`]).
//! Points stay where v1 allows them (click, hover) plus a drag's two ends, because a point is
//! only meaningful against the screenshot of the expected frame.
//!
//! # Choices
//!
//! - Download capture is a flag on `click` (`expect_download`), not an action: the runtime has
//!   to arm the capture before the click that triggers it, so they are one step.
//! - Upload files are names the runtime maps to paths it has authorised, never paths
//!   ([`fields::UploadName`]): a model cannot name `/etc/passwd` or `../secrets`, and the
//!   runtime still refuses names it did not offer.
//! - `type`'s `mode: paste` inserts the text in one input event; no mode uses the system
//!   clipboard. `auto` (the default) is v1's insert-then-keystrokes fallback.
//! - Modifiers are a set (an array without duplicates); `key_down` takes one key, `press` a
//!   chord.
//! - `dialog` answers the dialog blocking the leased tab; it needs no target.
//! - A [`crate::Receipt`] names the action by the `type` it was sent with (`drag`, not a v1
//!   stand-in); v1 actions keep v1's names.

pub mod action;
pub mod branch;
pub mod fields;
pub mod locator;
pub mod schema;
pub mod target;
pub mod validate;

pub use action::{ExtendedAction, ExtendedKind};
pub use branch::{
    ClickAction, DialogAction, DialogResponse, DragAction, HoverAction, KeyAction, NavigateAction,
    PressAction, ScrollAction, ScrollDelta, SelectAction, SelectChoice, TypeAction, UploadAction,
    WaitAction,
};
pub use fields::{
    ClickCount, DeltaX, DragMode, DragPath, FieldError, Modifier, Modifiers, MouseButton, Offset,
    OffsetPx, PromptText, SelectValues, SingleKey, TypeMode, UploadFiles, UploadName,
    UploadNameError, Waypoint,
};
pub use locator::{AriaRole, FrameChain, FrameStep, Locator, LocatorText, TestId};
pub use schema::{
    EXTENDED_ACTIONS_VERSION, extended_action_schema, extended_action_tool_schema, for_model,
};
pub use target::{ElementSpec, Target, TargetRef};
pub use validate::validate_extended_action;
