//! What the host and the guest server say to each other beyond OSWorld's endpoints: the
//! guest's state (its boot, screen and windows), input as one batch per action with an
//! operation id, and the guest's own log of what input it applied. Both sides parse strictly
//! (unknown fields refused): a guest answers only what this version asks.

use serde::{Deserialize, Serialize};

/// Most input events in one request.
pub const MAX_EVENTS: usize = 4096;
/// Most characters typed by one request.
pub const MAX_TEXT_CHARS: usize = 16 * 1024;
/// The longest pause one event may ask for.
pub const MAX_PAUSE_MS: u32 = 2_000;
/// How many applied operations the guest remembers (for replays and its log).
pub const LOG_KEPT: usize = 1024;

/// The guest as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestState {
    /// The guest kernel's boot id: a reboot changes it (frames and leases of the earlier boot
    /// are void).
    pub boot_id: String,
    /// The screen's size in pixels.
    pub screen: [u32; 2],
    /// Top-level windows, bottom to top.
    pub windows: Vec<GuestWindow>,
    /// The window with keyboard focus.
    pub focused: Option<u32>,
    /// Whether the guest's X server takes synthetic input (XTest).
    pub xtest: bool,
}

/// A top-level window of the guest's display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestWindow {
    pub window: u32,
    /// Its title (the guest's own text: untrusted).
    pub name: String,
    pub class: String,
    pub pid: Option<u32>,
    /// x, y, width, height in screen pixels.
    pub rect: [i64; 4],
    pub viewable: bool,
}

impl GuestWindow {
    pub fn from_facts(w: &desktop::x11::WindowFacts) -> GuestWindow {
        GuestWindow {
            window: w.window,
            name: w.name.clone(),
            class: w.class.clone(),
            pid: w.pid,
            rect: [
                i64::from(w.rect.x),
                i64::from(w.rect.y),
                i64::from(w.rect.width),
                i64::from(w.rect.height),
            ],
            viewable: w.viewable,
        }
    }

    /// Back to the desktop's facts (`None` for a box no screen has).
    pub fn facts(&self) -> Option<desktop::x11::WindowFacts> {
        let [x, y, w, h] = self.rect;
        Some(desktop::x11::WindowFacts {
            window: self.window,
            name: self.name.clone(),
            class: self.class.clone(),
            pid: self.pid,
            rect: desktop::x11::Rect {
                x: i32::try_from(x).ok()?,
                y: i32::try_from(y).ok()?,
                width: u32::try_from(w).ok()?,
                height: u32::try_from(h).ok()?,
            },
            viewable: self.viewable,
        })
    }
}

/// One input event, applied in order through XTest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum InputEvent {
    /// The pointer to a screen point.
    Move { x: i32, y: i32 },
    /// A button (1 left, 2 middle, 3 right, 4–7 the wheel) pressed or released.
    Button { button: u8, down: bool },
    /// A key by keysym pressed or released (Shift is the caller's to add).
    Key { keysym: u32, down: bool },
    /// Keys pressed in order and released in reverse (Shift added where a key needs it).
    Chord { keysyms: Vec<u32> },
    /// Text typed key by key (any character: a key the layout lacks is borrowed).
    Text { text: String },
    /// A pause between events, so a toolkit sees them apart.
    Pause { ms: u32 },
}

impl InputEvent {
    pub fn name(&self) -> &'static str {
        match self {
            InputEvent::Move { .. } => "move",
            InputEvent::Button { .. } => "button",
            InputEvent::Key { .. } => "key",
            InputEvent::Chord { .. } => "chord",
            InputEvent::Text { .. } => "text",
            InputEvent::Pause { .. } => "pause",
        }
    }
}

/// One action's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputRequest {
    /// Unique per write: the guest applies an id once (a replay is answered, not applied).
    pub op: String,
    /// The boot the input was planned against: another boot's request is refused unapplied.
    pub boot_id: String,
    pub events: Vec<InputEvent>,
}

/// What the guest did with a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputAnswer {
    pub op: String,
    /// `false`: the id was applied before; nothing was applied now.
    pub applied: bool,
}

/// One applied operation in the guest's own log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoggedInput {
    /// 1, 2, … since the guest server started.
    pub seq: u64,
    pub op: String,
    /// The events' kinds in order.
    pub kinds: Vec<String>,
    /// The points the pointer went to.
    pub points: Vec<[i32; 2]>,
    /// How many characters were typed.
    pub chars: usize,
}

/// An error the guest answers with (any status ≥ 400).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestFault {
    /// `unauthorized`, `stale_boot`, `invalid`, `unavailable`, `internal`.
    pub code: String,
    pub message: String,
}

/// OSWorld's `/execute` and `/run_bash_script` body.
#[derive(Debug, Clone, Deserialize)]
pub struct ExecuteRequest {
    pub command: Option<CommandLine>,
    #[serde(default)]
    pub shell: bool,
    /// `/run_bash_script`'s script.
    pub script: Option<String>,
    pub timeout: Option<f64>,
    pub working_dir: Option<String>,
}

/// A command as OSWorld sends it: a list of arguments, or one string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum CommandLine {
    Args(Vec<String>),
    Line(String),
}

/// OSWorld's `/execute` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecuteAnswer {
    pub status: String,
    pub output: String,
    pub error: String,
    pub returncode: i32,
}
