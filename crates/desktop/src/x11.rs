//! One X display as the adapter sees it: its windows (EWMH's client list under a window manager,
//! the mapped top-levels without one), their facts (name, class, pid, geometry), what is under a
//! point and who holds keyboard focus, pictures of the screen (`GetImage`), and input through
//! XTest — one keyboard and one mouse for the whole display.
//!
//! Every call is a short request on a local socket; the connection is shared behind a mutex and
//! calls run on a blocking thread ([`Display::run`]), so a stuck X server never stalls the
//! runtime's workers beyond the caller's own deadline.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use x11rb::connection::{Connection as _, RequestConnection as _};
use x11rb::protocol::xproto::{
    AtomEnum, ClientMessageEvent, ConnectionExt as _, EventMask, ImageFormat, InputFocus, MapState,
    Window,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use surface::SurfaceError;

/// XTest event types (the core protocol's event codes).
const KEY_PRESS: u8 = 2;
const KEY_RELEASE: u8 = 3;
const BUTTON_PRESS: u8 = 4;
const BUTTON_RELEASE: u8 = 5;
const MOTION_NOTIFY: u8 = 6;

/// `_NET_WM_STATE_HIDDEN` and friends are read by name; these atoms are interned once.
const ATOMS: [&str; 13] = [
    "_NET_CLIENT_LIST",
    "_NET_CLIENT_LIST_STACKING",
    "_NET_ACTIVE_WINDOW",
    "_NET_WM_NAME",
    "_NET_WM_PID",
    "_NET_SUPPORTING_WM_CHECK",
    "UTF8_STRING",
    "WM_STATE",
    "WM_PROTOCOLS",
    "WM_DELETE_WINDOW",
    "_NET_CLOSE_WINDOW",
    "_NET_WM_STATE",
    "_NET_WM_PING",
];

/// A top-level window as the display lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowFacts {
    pub window: u32,
    /// `_NET_WM_NAME` or `WM_NAME` (the app's own text: untrusted).
    pub name: String,
    /// `WM_CLASS`'s class part (`Gedit`, `XTerm`), else its instance part.
    pub class: String,
    pub pid: Option<u32>,
    /// The client area in root coordinates: x, y, width, height.
    pub rect: Rect,
    /// Whether it is mapped (viewable).
    pub viewable: bool,
}

/// A rectangle in root (screen) pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

impl Rect {
    pub fn contains(&self, x: i32, y: i32) -> bool {
        x >= self.x
            && y >= self.y
            && x < self.x + self.width as i32
            && y < self.y + self.height as i32
    }

    /// The part of `self` inside `other`.
    pub fn intersect(&self, other: &Rect) -> Option<Rect> {
        let x0 = self.x.max(other.x);
        let y0 = self.y.max(other.y);
        let x1 = (self.x + self.width as i32).min(other.x + other.width as i32);
        let y1 = (self.y + self.height as i32).min(other.y + other.height as i32);
        (x1 > x0 && y1 > y0).then(|| Rect {
            x: x0,
            y: y0,
            width: (x1 - x0) as u32,
            height: (y1 - y0) as u32,
        })
    }
}

/// RGBA pixels of a part of the screen.
#[derive(Clone)]
pub struct Pixels {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

/// A mouse button as X numbers them (4–7: the wheel's four directions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Button(pub u8);

impl Button {
    pub const LEFT: Button = Button(1);
    pub const MIDDLE: Button = Button(2);
    pub const RIGHT: Button = Button(3);
    pub const WHEEL_UP: Button = Button(4);
    pub const WHEEL_DOWN: Button = Button(5);
    pub const WHEEL_LEFT: Button = Button(6);
    pub const WHEEL_RIGHT: Button = Button(7);
}

struct State {
    conn: RustConnection,
    root: Window,
    screen: Rect,
    atoms: HashMap<&'static str, u32>,
    min_keycode: u8,
    max_keycode: u8,
    /// keysym → keycode (and whether Shift is needed), read from the server's mapping.
    keymap: HashMap<u32, (u8, bool)>,
    /// A keycode with no keysyms, borrowed for characters the layout lacks.
    spare: Option<u8>,
    /// Keys and buttons XTest holds pressed now (released on cancel, take-over, drop).
    held_keys: Vec<u8>,
    held_buttons: Vec<u8>,
    xtest: bool,
    /// Top-level windows created since last taken (from the root's `CreateNotify`; override-
    /// redirect ones — tooltips, menus — left out), at most [`CREATED_KEPT`].
    created: Vec<u32>,
    /// The `_NET_WM_PING` answers seen (their timestamps), at most [`CREATED_KEPT`].
    pongs: Vec<u32>,
    /// The next ping's timestamp (our own counter: only the echo matters).
    next_ping: u32,
}

/// How many created windows are remembered between takes.
const CREATED_KEPT: usize = 256;

/// One X display (see the module docs). Cheap to clone.
#[derive(Clone)]
pub struct Display {
    name: String,
    state: Arc<Mutex<State>>,
}

fn x_err(e: impl std::fmt::Display) -> SurfaceError {
    SurfaceError::unavailable(format!("the X display failed: {e}"))
}

impl Display {
    /// Connects to display `name` (`:1`).
    pub fn connect(name: &str) -> Result<Display, SurfaceError> {
        let (conn, screen_num) = x11rb::connect(Some(name)).map_err(|e| {
            SurfaceError::unavailable(format!("cannot connect to the X display {name}: {e}"))
        })?;
        let screen = &conn.setup().roots[screen_num];
        let root = screen.root;
        let size = Rect {
            x: 0,
            y: 0,
            width: u32::from(screen.width_in_pixels),
            height: u32::from(screen.height_in_pixels),
        };
        let min_keycode = conn.setup().min_keycode;
        let max_keycode = conn.setup().max_keycode;
        let mut atoms = HashMap::new();
        for a in ATOMS {
            let atom = conn
                .intern_atom(false, a.as_bytes())
                .map_err(x_err)?
                .reply()
                .map_err(x_err)?
                .atom;
            atoms.insert(a, atom);
        }
        let xtest = conn
            .extension_information(x11rb::protocol::xtest::X11_EXTENSION_NAME)
            .map_err(x_err)?
            .is_some();
        let mut state = State {
            conn,
            root,
            screen: size,
            atoms,
            min_keycode,
            max_keycode,
            keymap: HashMap::new(),
            spare: None,
            held_keys: Vec::new(),
            held_buttons: Vec::new(),
            xtest,
            created: Vec::new(),
            pongs: Vec::new(),
            next_ping: 1,
        };
        state.read_keymap()?;
        // Learn of new top-levels as they are created (a dialog an action opens), without
        // polling: the root's substructure events (shared with any window manager).
        state
            .conn
            .change_window_attributes(
                root,
                &x11rb::protocol::xproto::ChangeWindowAttributesAux::new()
                    .event_mask(EventMask::SUBSTRUCTURE_NOTIFY),
            )
            .map_err(x_err)?;
        state.conn.flush().map_err(x_err)?;
        Ok(Display {
            name: name.to_owned(),
            state: Arc::new(Mutex::new(state)),
        })
    }

    /// The display's name (`:1`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` on the connection on a blocking thread.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut XConn<'_>) -> Result<T, SurfaceError> + Send + 'static,
    ) -> Result<T, SurfaceError> {
        let state = self.state.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
            let mut conn = XConn { s: &mut guard };
            f(&mut conn)
        })
        .await
        .map_err(|e| SurfaceError::Internal {
            reason: format!("an X call panicked: {e}"),
        })?
    }

    /// Runs `f` on the connection on this thread (short calls only).
    pub fn now<T>(
        &self,
        f: impl FnOnce(&mut XConn<'_>) -> Result<T, SurfaceError>,
    ) -> Result<T, SurfaceError> {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut conn = XConn { s: &mut guard };
        f(&mut conn)
    }
}

/// The locked connection: every call of the display goes through it.
pub struct XConn<'a> {
    s: &'a mut State,
}

impl State {
    fn read_keymap(&mut self) -> Result<(), SurfaceError> {
        let count = self.max_keycode - self.min_keycode + 1;
        let map = self
            .conn
            .get_keyboard_mapping(self.min_keycode, count)
            .map_err(x_err)?
            .reply()
            .map_err(x_err)?;
        let per = usize::from(map.keysyms_per_keycode);
        self.keymap.clear();
        self.spare = None;
        for i in 0..usize::from(count) {
            let code = self.min_keycode + i as u8;
            let syms = &map.keysyms[i * per..(i + 1) * per];
            if syms.iter().all(|s| *s == 0) {
                if self.spare.is_none() && code > self.min_keycode + 8 {
                    self.spare = Some(code);
                }
                continue;
            }
            for (level, sym) in syms.iter().take(2).enumerate() {
                if *sym != 0 {
                    self.keymap.entry(*sym).or_insert((code, level == 1));
                }
            }
        }
        Ok(())
    }
}

impl XConn<'_> {
    fn atom(&self, name: &'static str) -> u32 {
        self.s.atoms.get(name).copied().unwrap_or(0)
    }

    pub fn root(&self) -> u32 {
        self.s.root
    }

    pub fn screen(&self) -> Rect {
        self.s.screen
    }

    pub fn has_xtest(&self) -> bool {
        self.s.xtest
    }

    /// A round trip: every request before it has been processed.
    pub fn sync(&mut self) -> Result<(), SurfaceError> {
        self.s
            .conn
            .get_input_focus()
            .map_err(x_err)?
            .reply()
            .map_err(x_err)?;
        Ok(())
    }

    fn prop32(&self, window: u32, atom: u32, kind: AtomEnum) -> Option<Vec<u32>> {
        let reply = self
            .s
            .conn
            .get_property(false, window, atom, kind, 0, 4096)
            .ok()?
            .reply()
            .ok()?;
        Some(reply.value32()?.collect())
    }

    fn prop_bytes(&self, window: u32, atom: u32) -> Option<Vec<u8>> {
        let reply = self
            .s
            .conn
            .get_property(false, window, atom, AtomEnum::ANY, 0, 4096)
            .ok()?
            .reply()
            .ok()?;
        (reply.type_ != 0).then_some(reply.value)
    }

    /// The name of the window manager, when one runs (EWMH's supporting-WM check).
    pub fn window_manager(&self) -> Option<String> {
        let check = self.atom("_NET_SUPPORTING_WM_CHECK");
        let wm = *self.prop32(self.s.root, check, AtomEnum::WINDOW)?.first()?;
        let name = self
            .prop_bytes(wm, self.atom("_NET_WM_NAME"))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        Some(if name.is_empty() {
            "unnamed".into()
        } else {
            name
        })
    }

    /// Reads the events queued so far, keeping the top-level windows created.
    fn drain_events(&mut self) {
        let (protocols, ping) = (self.atom("WM_PROTOCOLS"), self.atom("_NET_WM_PING"));
        while let Ok(Some(event)) = self.s.conn.poll_for_event() {
            match event {
                x11rb::protocol::Event::CreateNotify(c) if !c.override_redirect => {
                    if self.s.created.len() >= CREATED_KEPT {
                        self.s.created.remove(0);
                    }
                    self.s.created.push(c.window);
                }
                // A client's answer to our ping comes back to the root (EWMH).
                x11rb::protocol::Event::ClientMessage(m)
                    if m.type_ == protocols && m.format == 32 =>
                {
                    let data = m.data.as_data32();
                    if data[0] == ping {
                        if self.s.pongs.len() >= CREATED_KEPT {
                            self.s.pongs.remove(0);
                        }
                        self.s.pongs.push(data[1]);
                    }
                }
                _ => {}
            }
        }
    }

    /// Sends `window`'s client a `_NET_WM_PING` (EWMH), when it takes one; returns the ping's
    /// timestamp to wait for with [`XConn::answered`]. A client answers after the input queued
    /// before the ping: its answer means it has handled that input (and created any window the
    /// input made it create).
    pub fn ping(&mut self, window: u32) -> Result<Option<u32>, SurfaceError> {
        let protocols = self
            .prop32(window, self.atom("WM_PROTOCOLS"), AtomEnum::ATOM)
            .unwrap_or_default();
        let ping = self.atom("_NET_WM_PING");
        if ping == 0 || !protocols.contains(&ping) {
            return Ok(None);
        }
        let stamp = self.s.next_ping;
        self.s.next_ping = self.s.next_ping.wrapping_add(1).max(1);
        let event = ClientMessageEvent::new(
            32,
            window,
            self.atom("WM_PROTOCOLS"),
            [ping, stamp, window, 0, 0],
        );
        self.s
            .conn
            .send_event(false, window, EventMask::NO_EVENT, event)
            .map_err(x_err)?;
        self.s.conn.flush().map_err(x_err)?;
        Ok(Some(stamp))
    }

    /// Whether the ping with this timestamp was answered.
    pub fn answered(&mut self, stamp: u32) -> bool {
        self.drain_events();
        if let Some(i) = self.s.pongs.iter().position(|p| *p == stamp) {
            self.s.pongs.remove(i);
            return true;
        }
        false
    }

    /// The top-level windows created since the last call (see [`State::created`]).
    pub fn take_created(&mut self) -> Vec<u32> {
        self.drain_events();
        std::mem::take(&mut self.s.created)
    }

    /// The top-level client windows, bottom to top: EWMH's stacking client list under a window
    /// manager, else the root's mapped children (in stacking order) that carry a name or class.
    pub fn windows(&mut self) -> Result<Vec<WindowFacts>, SurfaceError> {
        // The event queue never grows without bound between actions.
        self.drain_events();
        let stacking = self.atom("_NET_CLIENT_LIST_STACKING");
        let list = self.atom("_NET_CLIENT_LIST");
        let managed = self
            .prop32(self.s.root, stacking, AtomEnum::WINDOW)
            .or_else(|| self.prop32(self.s.root, list, AtomEnum::WINDOW));
        let ids: Vec<u32> = match managed {
            Some(ids) if self.window_manager().is_some() => ids,
            _ => {
                let tree = self
                    .s
                    .conn
                    .query_tree(self.s.root)
                    .map_err(x_err)?
                    .reply()
                    .map_err(x_err)?;
                tree.children
            }
        };
        let mut out = Vec::new();
        for id in ids {
            let Some(facts) = self.facts(id) else {
                continue;
            };
            if !facts.viewable || (facts.name.is_empty() && facts.class.is_empty()) {
                continue;
            }
            if facts.rect.width <= 1 || facts.rect.height <= 1 {
                continue;
            }
            out.push(facts);
        }
        Ok(out)
    }

    /// One window's facts, `None` once it is gone.
    pub fn facts(&mut self, window: u32) -> Option<WindowFacts> {
        let attrs = self
            .s
            .conn
            .get_window_attributes(window)
            .ok()?
            .reply()
            .ok()?;
        if attrs.override_redirect {
            return None;
        }
        let geometry = self.s.conn.get_geometry(window).ok()?.reply().ok()?;
        let at = self
            .s
            .conn
            .translate_coordinates(window, self.s.root, 0, 0)
            .ok()?
            .reply()
            .ok()?;
        let name = self
            .prop_bytes(window, self.atom("_NET_WM_NAME"))
            .or_else(|| self.prop_bytes(window, u32::from(AtomEnum::WM_NAME)))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let class = self
            .prop_bytes(window, u32::from(AtomEnum::WM_CLASS))
            .map(|b| {
                let parts: Vec<String> = b
                    .split(|c| *c == 0)
                    .filter(|p| !p.is_empty())
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect();
                parts.get(1).or(parts.first()).cloned().unwrap_or_default()
            })
            .unwrap_or_default();
        let pid = self
            .prop32(window, self.atom("_NET_WM_PID"), AtomEnum::CARDINAL)
            .and_then(|v| v.first().copied());
        Some(WindowFacts {
            window,
            name,
            class,
            pid,
            rect: Rect {
                x: i32::from(at.dst_x),
                y: i32::from(at.dst_y),
                width: u32::from(geometry.width),
                height: u32::from(geometry.height),
            },
            viewable: attrs.map_state == MapState::VIEWABLE,
        })
    }

    /// The root's child (a client, or its window manager frame) that `window` lives in.
    fn top_of(&self, window: u32) -> Option<u32> {
        let mut w = window;
        for _ in 0..64 {
            let tree = self.s.conn.query_tree(w).ok()?.reply().ok()?;
            if tree.parent == self.s.root || tree.parent == 0 {
                return Some(w);
            }
            w = tree.parent;
        }
        None
    }

    /// The client window a root child stands for: itself, or the one inside a frame that
    /// carries `WM_STATE`.
    fn client_in(&self, window: u32, depth: u32) -> Option<u32> {
        let state = self.atom("WM_STATE");
        if self.prop_bytes(window, state).is_some() {
            return Some(window);
        }
        if depth == 0 {
            return None;
        }
        let tree = self.s.conn.query_tree(window).ok()?.reply().ok()?;
        tree.children
            .iter()
            .rev()
            .find_map(|c| self.client_in(*c, depth - 1))
    }

    /// Where the pointer is, in screen pixels.
    pub fn pointer(&mut self) -> Result<(i32, i32), SurfaceError> {
        let p = self
            .s
            .conn
            .query_pointer(self.s.root)
            .map_err(x_err)?
            .reply()
            .map_err(x_err)?;
        Ok((i32::from(p.root_x), i32::from(p.root_y)))
    }

    /// Which client window is on top at screen point (x, y), if any.
    pub fn window_at(&mut self, x: i32, y: i32) -> Result<Option<u32>, SurfaceError> {
        let reply = self
            .s
            .conn
            .translate_coordinates(self.s.root, self.s.root, x as i16, y as i16)
            .map_err(x_err)?
            .reply()
            .map_err(x_err)?;
        if reply.child == 0 {
            return Ok(None);
        }
        Ok(Some(self.client_in(reply.child, 3).unwrap_or(reply.child)))
    }

    /// The client window holding keyboard focus, if one does: `GetInputFocus` walked up to the
    /// root's child, mapped from a frame to its client. `PointerRoot` focus is the window under
    /// the pointer.
    pub fn focused_window(&mut self) -> Result<Option<u32>, SurfaceError> {
        let focus = self
            .s
            .conn
            .get_input_focus()
            .map_err(x_err)?
            .reply()
            .map_err(x_err)?
            .focus;
        let focus = match focus {
            0 => return Ok(None),
            1 => {
                let p = self
                    .s
                    .conn
                    .query_pointer(self.s.root)
                    .map_err(x_err)?
                    .reply()
                    .map_err(x_err)?;
                return self.window_at(i32::from(p.root_x), i32::from(p.root_y));
            }
            w => w,
        };
        if focus == self.s.root {
            return Ok(None);
        }
        let Some(top) = self.top_of(focus) else {
            return Ok(None);
        };
        Ok(Some(self.client_in(top, 3).unwrap_or(top)))
    }

    /// Asks for keyboard focus on `window`: `_NET_ACTIVE_WINDOW` through the window manager
    /// when one runs (it raises the window too), else `SetInputFocus` and a raise.
    pub fn activate(&mut self, window: u32) -> Result<(), SurfaceError> {
        if self.window_manager().is_some() {
            // Source 2: a pager-like request, which window managers honour without stealing checks.
            self.ask_window_manager(
                window,
                "_NET_ACTIVE_WINDOW",
                [2, x11rb::CURRENT_TIME, 0, 0, 0],
            )?;
        } else {
            use x11rb::protocol::xproto::{ConfigureWindowAux, StackMode};
            self.s
                .conn
                .configure_window(
                    window,
                    &ConfigureWindowAux::new().stack_mode(StackMode::ABOVE),
                )
                .map_err(x_err)?;
            self.s
                .conn
                .set_input_focus(InputFocus::PARENT, window, x11rb::CURRENT_TIME)
                .map_err(x_err)?;
        }
        self.s.conn.flush().map_err(x_err)?;
        Ok(())
    }

    /// Sends the window manager an EWMH request about `window` (a client message to the root).
    fn ask_window_manager(
        &mut self,
        window: u32,
        message: &'static str,
        data: [u32; 5],
    ) -> Result<(), SurfaceError> {
        let event = ClientMessageEvent::new(32, window, self.atom(message), data);
        self.s
            .conn
            .send_event(
                false,
                self.s.root,
                EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                event,
            )
            .map_err(x_err)?;
        Ok(())
    }

    /// Asks `window` to close: `_NET_CLOSE_WINDOW` under a window manager, else the client's
    /// own `WM_DELETE_WINDOW` protocol (it may ask the person first); a client without it is
    /// left alone (killing it is not a close).
    pub fn request_close(&mut self, window: u32) -> Result<bool, SurfaceError> {
        if self.window_manager().is_some() {
            self.ask_window_manager(
                window,
                "_NET_CLOSE_WINDOW",
                [x11rb::CURRENT_TIME, 2, 0, 0, 0],
            )?;
            self.s.conn.flush().map_err(x_err)?;
            return Ok(true);
        }
        let protocols = self
            .prop32(window, self.atom("WM_PROTOCOLS"), AtomEnum::ATOM)
            .unwrap_or_default();
        let delete = self.atom("WM_DELETE_WINDOW");
        if !protocols.contains(&delete) {
            return Ok(false);
        }
        let event = ClientMessageEvent::new(
            32,
            window,
            self.atom("WM_PROTOCOLS"),
            [delete, x11rb::CURRENT_TIME, 0, 0, 0],
        );
        self.s
            .conn
            .send_event(false, window, EventMask::NO_EVENT, event)
            .map_err(x_err)?;
        self.s.conn.flush().map_err(x_err)?;
        Ok(true)
    }

    /// The pixels of `rect` (root coordinates, clipped to the screen) as RGBA.
    pub fn capture(&mut self, rect: Rect) -> Result<Pixels, SurfaceError> {
        let Some(rect) = rect.intersect(&self.s.screen) else {
            return Err(SurfaceError::NotActionable {
                reason: "the window is outside the screen".into(),
            });
        };
        let image = self
            .s
            .conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                self.s.root,
                rect.x as i16,
                rect.y as i16,
                rect.width as u16,
                rect.height as u16,
                !0,
            )
            .map_err(x_err)?
            .reply()
            .map_err(x_err)?;
        let pixels = (rect.width * rect.height) as usize;
        if image.depth < 24 || image.data.len() < pixels * 4 {
            return Err(SurfaceError::Internal {
                reason: format!(
                    "the X server gave a depth-{} image of {} bytes for {} pixels",
                    image.depth,
                    image.data.len(),
                    pixels
                ),
            });
        }
        let mut rgba = Vec::with_capacity(pixels * 4);
        for px in image.data.chunks_exact(4).take(pixels) {
            // ZPixmap at depth 24/32 on a little-endian server: B, G, R, X.
            rgba.extend_from_slice(&[px[2], px[1], px[0], 255]);
        }
        Ok(Pixels {
            width: rect.width,
            height: rect.height,
            rgba,
        })
    }

    fn need_xtest(&self) -> Result<(), SurfaceError> {
        if self.s.xtest {
            Ok(())
        } else {
            Err(SurfaceError::unavailable(
                "the X server has no XTest extension: input cannot be sent",
            ))
        }
    }

    /// Moves the pointer to screen point (x, y).
    pub fn move_to(&mut self, x: i32, y: i32) -> Result<(), SurfaceError> {
        self.need_xtest()?;
        let root = self.s.root;
        self.s
            .conn
            .xtest_fake_input(MOTION_NOTIFY, 0, 0, root, x as i16, y as i16, 0)
            .map_err(x_err)?;
        Ok(())
    }

    pub fn button(&mut self, button: Button, down: bool) -> Result<(), SurfaceError> {
        self.need_xtest()?;
        let root = self.s.root;
        let kind = if down { BUTTON_PRESS } else { BUTTON_RELEASE };
        self.s
            .conn
            .xtest_fake_input(kind, button.0, 0, root, 0, 0, 0)
            .map_err(x_err)?;
        if down {
            self.s.held_buttons.push(button.0);
        } else {
            self.s.held_buttons.retain(|b| *b != button.0);
        }
        Ok(())
    }

    pub fn key(&mut self, code: u8, down: bool) -> Result<(), SurfaceError> {
        self.need_xtest()?;
        let root = self.s.root;
        let kind = if down { KEY_PRESS } else { KEY_RELEASE };
        self.s
            .conn
            .xtest_fake_input(kind, code, 0, root, 0, 0, 0)
            .map_err(x_err)?;
        if down {
            self.s.held_keys.push(code);
        } else {
            self.s.held_keys.retain(|k| *k != code);
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), SurfaceError> {
        self.s.conn.flush().map_err(x_err)
    }

    /// The keycode for `keysym` and whether Shift is needed; a keysym the layout lacks is put on
    /// the spare keycode first (`ChangeKeyboardMapping`), so any Unicode character can be typed
    /// without the clipboard.
    pub fn keycode(&mut self, keysym: u32) -> Result<(u8, bool), SurfaceError> {
        if let Some(found) = self.s.keymap.get(&keysym) {
            return Ok(*found);
        }
        let Some(spare) = self.s.spare else {
            return Err(SurfaceError::NotActionable {
                reason: format!(
                    "the keyboard layout has no key for keysym 0x{keysym:x} and no free key to map it to"
                ),
            });
        };
        self.s
            .conn
            .change_keyboard_mapping(1, spare, 2, &[keysym, keysym])
            .map_err(x_err)?;
        self.sync()?;
        // The previous borrowed keysym no longer maps.
        self.s.keymap.retain(|_, (code, _)| *code != spare);
        self.s.keymap.insert(keysym, (spare, false));
        Ok((spare, false))
    }

    /// Releases every key and button XTest holds (cancellation, a take-over): no key stays down.
    pub fn release_all(&mut self) -> Result<(), SurfaceError> {
        if !self.s.xtest {
            return Ok(());
        }
        let root = self.s.root;
        let keys = std::mem::take(&mut self.s.held_keys);
        let buttons = std::mem::take(&mut self.s.held_buttons);
        for code in keys.iter().rev() {
            self.s
                .conn
                .xtest_fake_input(KEY_RELEASE, *code, 0, root, 0, 0, 0)
                .map_err(x_err)?;
        }
        for b in buttons.iter().rev() {
            self.s
                .conn
                .xtest_fake_input(BUTTON_RELEASE, *b, 0, root, 0, 0, 0)
                .map_err(x_err)?;
        }
        self.sync()
    }

    /// The keys held now.
    pub fn held(&self) -> (usize, usize) {
        (self.s.held_keys.len(), self.s.held_buttons.len())
    }
}

/// A short pause between input events so a toolkit sees them as separate (bounded, never a wait
/// for a condition).
pub const INPUT_GAP: Duration = Duration::from_millis(8);
