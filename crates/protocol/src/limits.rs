//! Every size limit of the protocol in one place, as named constants; no logic lives here.
//!
//! Character counts are Unicode scalar values (what JSON Schema's `maxLength` counts, and
//! what `str::chars` yields); byte budgets are UTF-8 bytes of the serialized JSON. Limits
//! marked "seed" come from `000_…` §06; the others are Glovebox's own and say why.

// --- Action (seed §06, Action schema) ---

/// `intent`: at least this many characters.
pub const INTENT_MIN_CHARS: usize = 1;
/// `intent`: at most this many characters.
pub const INTENT_MAX_CHARS: usize = 240;
/// `type.text`: at most this many characters.
pub const TYPE_TEXT_MAX_CHARS: usize = 10_000;
/// `press.key`: at least this many characters.
pub const KEY_MIN_CHARS: usize = 1;
/// `press.key`: at most this many characters.
pub const KEY_MAX_CHARS: usize = 64;
/// `scroll.delta_y`: the smallest value, in CSS pixels.
pub const SCROLL_DELTA_MIN: i32 = -2_000;
/// `scroll.delta_y`: the largest value, in CSS pixels.
pub const SCROLL_DELTA_MAX: i32 = 2_000;
/// `select.value`: at most this many characters.
pub const SELECT_VALUE_MAX_CHARS: usize = 2_000;
/// `navigate.url` and `computer_use.url`: at most this many characters.
pub const URL_MAX_CHARS: usize = 2_048;
/// `navigate.url` and `computer_use.url` must match this pattern.
pub const URL_PATTERN: &str = "^https?://";
/// `wait.duration_ms`: the smallest value.
pub const WAIT_MIN_MS: u32 = 0;
/// `wait.duration_ms`: the largest value.
pub const WAIT_MAX_MS: u32 = 5_000;

// --- computer_use (seed §06, public tool) ---

/// `task`: at least this many characters.
pub const TASK_MIN_CHARS: usize = 1;
/// `task`: at most this many characters.
pub const TASK_MAX_CHARS: usize = 8_000;
/// `observe.near`: the shortest text or ref to show the region around.
pub const NEAR_MIN_CHARS: usize = 1;
/// `observe.near`: the longest, in characters.
pub const NEAR_MAX_CHARS: usize = 200;
/// `max_steps`: the smallest value.
pub const MAX_STEPS_MIN: u32 = 1;
/// `max_steps`: the largest value.
pub const MAX_STEPS_MAX: u32 = 100;
/// `max_steps`: the default.
pub const MAX_STEPS_DEFAULT: u32 = 20;
/// `max_seconds`: the smallest value.
pub const MAX_SECONDS_MIN: u32 = 1;
/// `max_seconds`: the largest value.
pub const MAX_SECONDS_MAX: u32 = 1_800;
/// `max_seconds`: the default.
pub const MAX_SECONDS_DEFAULT: u32 = 300;

// --- Observation (seed §06, "完整 Observation 仍有硬上限") ---

/// `aria_snapshot`: at most this many characters.
pub const ARIA_SNAPSHOT_MAX_CHARS: usize = 12_000;
/// `interactive_elements`: at most this many entries.
pub const INTERACTIVE_ELEMENTS_MAX: usize = 200;
/// An interactive element's `name`: at most this many characters.
pub const ELEMENT_NAME_MAX_CHARS: usize = 200;
/// `console_errors`: at most this many entries.
pub const CONSOLE_ERRORS_MAX: usize = 50;
/// One console error: at most this many characters.
pub const CONSOLE_ERROR_MAX_CHARS: usize = 1_000;
/// An interactive element's `value`: at most this many characters. Glovebox's own: a
/// textarea can hold megabytes, and the seed bounds every other free-text field.
pub const ELEMENT_VALUE_MAX_CHARS: usize = 1_000;
/// An interactive element's `role`: at most this many characters. Glovebox's own: ARIA
/// role tokens are short, and a page can put anything in a `role` attribute.
pub const ELEMENT_ROLE_MAX_CHARS: usize = 64;
/// An interactive element's `states`: at most this many entries, each at most
/// [`ELEMENT_STATE_MAX_CHARS`]. Glovebox's own, for the same reason as the role.
pub const ELEMENT_STATES_MAX: usize = 16;
/// One entry of an element's `states`: at most this many characters.
pub const ELEMENT_STATE_MAX_CHARS: usize = 32;
/// An observation's `title`: at most this many characters. Glovebox's own.
pub const TITLE_MAX_CHARS: usize = 500;

// --- Preview (seed §06, Surface Context) ---

/// `visible_text_excerpt`: at most this many characters, after whitespace folding.
pub const PREVIEW_TEXT_MAX_CHARS: usize = 2_000;
/// `aria_landmarks`: at most this many entries.
pub const PREVIEW_LANDMARKS_MAX: usize = 12;
/// A landmark's `name`: at most this many characters.
pub const PREVIEW_LANDMARK_NAME_MAX_CHARS: usize = 160;
/// A landmark's `role`: at most this many characters. Glovebox's own.
pub const PREVIEW_LANDMARK_ROLE_MAX_CHARS: usize = 64;
/// A preview's `title`: at most this many characters. Glovebox's own: the title shares
/// the 8 KiB payload with the text excerpt and should not crowd it out.
pub const PREVIEW_TITLE_MAX_CHARS: usize = 300;
/// The whole preview, serialized as JSON: at most this many UTF-8 bytes.
pub const PREVIEW_PAYLOAD_MAX_BYTES: usize = 8 * 1024;

// --- Ids and free text elsewhere (Glovebox's own) ---

/// Runtime-minted ids (`run_…`, `lease_…`, …): at most this many characters.
pub const ID_MAX_CHARS: usize = 128;
/// Opaque ids chosen by others (provider request ids, tab ids): at most this many characters.
pub const OPAQUE_ID_MAX_CHARS: usize = 256;
/// A run result's `summary`: at most this many characters.
pub const SUMMARY_MAX_CHARS: usize = 4_000;
/// One completion evidence `text`: at most this many characters.
pub const EVIDENCE_TEXT_MAX_CHARS: usize = 1_000;
/// A run result's `completion_evidence`: at most this many entries.
pub const EVIDENCE_MAX: usize = 20;
/// A receipt's `detail`: at most this many characters.
pub const RECEIPT_DETAIL_MAX_CHARS: usize = 1_000;
/// One problem message of an [`crate::ActionError`]: at most this many characters.
pub const PROBLEM_MESSAGE_MAX_CHARS: usize = 300;
/// An [`crate::ActionError`] lists at most this many problems.
pub const PROBLEMS_MAX: usize = 50;

// --- Extended actions (`004_…`, "浏览器：复用归属并补齐操作"; Glovebox's own bounds) ---

/// `click.click_count`: the smallest value (a single click).
pub const CLICK_COUNT_MIN: u8 = 1;
/// `click.click_count`: the largest value (a triple click selects a paragraph; nothing
/// needs more).
pub const CLICK_COUNT_MAX: u8 = 3;
/// `modifiers`: at most this many entries (the four modifier keys).
pub const MODIFIERS_MAX: usize = 4;
/// `drag.end_offset.x|y`: the smallest value, in CSS pixels (the scroll bound).
pub const DRAG_OFFSET_MIN: i32 = -2_000;
/// `drag.end_offset.x|y`: the largest value, in CSS pixels.
pub const DRAG_OFFSET_MAX: i32 = 2_000;
/// `drag.path`: at most this many intermediate points.
pub const DRAG_PATH_MAX: usize = 50;
/// `select.values`: at least this many entries.
pub const SELECT_VALUES_MIN: usize = 1;
/// `select.values`: at most this many entries.
pub const SELECT_VALUES_MAX: usize = 50;
/// `upload.files`: at least this many entries.
pub const UPLOAD_FILES_MIN: usize = 1;
/// `upload.files`: at most this many entries.
pub const UPLOAD_FILES_MAX: usize = 20;
/// One upload name: at most this many characters (a file name limit on common filesystems).
pub const UPLOAD_NAME_MAX_CHARS: usize = 255;
/// `dialog.prompt_text`: at most this many characters (as `type.text`).
pub const PROMPT_TEXT_MAX_CHARS: usize = 10_000;
/// A locator's `text`, `name` (role) or a frame step's `text`: at most this many characters.
pub const LOCATOR_TEXT_MAX_CHARS: usize = 500;
/// A role locator's `role`: at most this many characters (ARIA role tokens are short).
pub const ROLE_MAX_CHARS: usize = 64;
/// A test id: at most this many characters.
pub const TEST_ID_MAX_CHARS: usize = 256;
/// A locator's `frame` chain: at most this many nested frames.
pub const FRAME_CHAIN_MAX: usize = 4;
