//! The guest's small test application (`glovebox-guest probe`): one X window that writes every
//! key and button it receives to a log file, so a test reads from inside the guest what input
//! actually reached an application there — not only what the guest server sent.
//!
//! As a notes app (`save`): the characters typed make a line; Enter appends it to the save file
//! and the window's title says what was saved (what a person sees, and what the screen's
//! observation shows). `read_only`: the title says so and nothing is saved.

use std::io::Write as _;
use std::path::Path;

use x11rb::connection::Connection as _;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, InputFocus, PropMode, WindowClass,
};
use x11rb::wrapper::ConnectionExt as _;

/// Why the probe stopped.
#[derive(Debug, thiserror::Error)]
#[error("probe: {0}")]
pub struct ProbeError(String);

fn err(e: impl std::fmt::Display) -> ProbeError {
    ProbeError(e.to_string())
}

/// What the probe does besides logging.
#[derive(Debug, Clone, Default)]
pub struct Notes {
    /// Lines typed and ended with Enter are appended here.
    pub save: Option<std::path::PathBuf>,
    /// Nothing is saved; the title says so.
    pub read_only: bool,
}

fn set_title(
    conn: &impl x11rb::connection::Connection,
    window: u32,
    title: &str,
) -> Result<(), ProbeError> {
    conn.change_property8(
        PropMode::REPLACE,
        window,
        AtomEnum::WM_NAME,
        AtomEnum::STRING,
        title.as_bytes(),
    )
    .map_err(err)?;
    conn.flush().map_err(err)
}

/// Opens the window titled `title` at (x, y) and logs its input to `log` until the display
/// goes away. Each line: `key <char or keysym>` or `button <n> <x> <y>` (window coordinates).
pub fn run(
    display: &str,
    title: &str,
    at: (i16, i16),
    log: &Path,
    notes: &Notes,
) -> Result<(), ProbeError> {
    let title = if notes.read_only {
        format!("{title} (read-only)")
    } else {
        title.to_owned()
    };
    let title = title.as_str();
    let (conn, screen_num) = x11rb::connect(Some(display)).map_err(err)?;
    let screen = &conn.setup().roots[screen_num];
    let window = conn.generate_id().map_err(err)?;
    conn.create_window(
        x11rb::COPY_DEPTH_FROM_PARENT,
        window,
        screen.root,
        at.0,
        at.1,
        320,
        200,
        0,
        WindowClass::INPUT_OUTPUT,
        0,
        &CreateWindowAux::new()
            .background_pixel(0x00_33_66_99)
            .event_mask(EventMask::KEY_PRESS | EventMask::BUTTON_PRESS | EventMask::EXPOSURE),
    )
    .map_err(err)?;
    conn.change_property8(
        PropMode::REPLACE,
        window,
        AtomEnum::WM_NAME,
        AtomEnum::STRING,
        title.as_bytes(),
    )
    .map_err(err)?;
    conn.change_property8(
        PropMode::REPLACE,
        window,
        AtomEnum::WM_CLASS,
        AtomEnum::STRING,
        b"probe\0Probe\0",
    )
    .map_err(err)?;
    conn.map_window(window).map_err(err)?;
    conn.flush().map_err(err)?;
    let setup = conn.setup();
    let (min, max) = (setup.min_keycode, setup.max_keycode);
    let mapping = conn
        .get_keyboard_mapping(min, max - min + 1)
        .map_err(err)?
        .reply()
        .map_err(err)?;
    let per = usize::from(mapping.keysyms_per_keycode);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(err)?;
    let mut focused = false;
    let mut line_typed = String::new();
    loop {
        let event = conn.wait_for_event().map_err(err)?;
        let line = match event {
            Event::Expose(_) if !focused => {
                // Keys reach this window without a window manager to give it focus.
                conn.set_input_focus(InputFocus::POINTER_ROOT, window, x11rb::CURRENT_TIME)
                    .map_err(err)?;
                conn.flush().map_err(err)?;
                focused = true;
                continue;
            }
            Event::KeyPress(k) => {
                let shift = k.state.contains(x11rb::protocol::xproto::KeyButMask::SHIFT);
                let base = usize::from(k.detail.saturating_sub(min)) * per;
                let sym = mapping
                    .keysyms
                    .get(base + usize::from(shift && per > 1))
                    .copied()
                    .filter(|s| *s != 0)
                    .or_else(|| mapping.keysyms.get(base).copied())
                    .unwrap_or(0);
                if (0xffe1..=0xffee).contains(&sym) {
                    // Modifiers are logged through what they change.
                    continue;
                }
                if let Some(save) = notes.save.as_ref().filter(|_| !notes.read_only) {
                    if sym == 0xff0d {
                        let mut f = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(save)
                            .map_err(err)?;
                        writeln!(f, "{line_typed}").map_err(err)?;
                        set_title(&conn, window, &format!("{title} - saved: {line_typed}"))?;
                        line_typed.clear();
                    } else if sym == 0xff08 {
                        line_typed.pop();
                    } else if let Some(c) = char::from_u32(sym).filter(|c| (' '..='~').contains(c))
                    {
                        line_typed.push(c);
                    }
                }
                match char::from_u32(sym).filter(|c| (' '..='~').contains(c)) {
                    Some(c) => format!("key {c}"),
                    None => format!("key 0x{sym:x}"),
                }
            }
            Event::ButtonPress(b) => format!("button {} {} {}", b.detail, b.event_x, b.event_y),
            _ => continue,
        };
        writeln!(file, "{line}").map_err(err)?;
    }
}
