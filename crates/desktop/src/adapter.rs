//! The X11 desktop as a [`SurfaceAdapter`]: one display (and the session bus its applications
//! publish their accessibility on) is one source of surfaces; each top-level window is one
//! surface, named `x11:<display>:<window id>` for its life. Windows belong to the person at the
//! display: an agent claims one (it never opens or navigates windows), and every write to any
//! window of the display shares the display's input domain — XTest is one keyboard and one
//! mouse.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use protocol::{Capability, SurfaceKind};
use surface::{
    BoxFuture, CastFrame, InputDomain, PersonCast, PersonEntry, PersonInput, PointerEvent,
    Reconnected, Surface, SurfaceAdapter, SurfaceError, SurfaceEvents, SurfaceInfo, SurfaceMemory,
};

use crate::a11y::A11y;
use crate::model;
use crate::window::{DesktopWindow, Identity, encode_jpeg};
use crate::x11::{Button, Display};

/// A value chosen once per process: frame ids of an earlier process never match this one's.
pub(crate) fn process_salt() -> u64 {
    static SALT: OnceLock<u64> = OnceLock::new();
    *SALT.get_or_init(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        t ^ u64::from(std::process::id()).rotate_left(32)
    })
}

/// Whether the session is a Wayland one (`WAYLAND_DISPLAY`, or `XDG_SESSION_TYPE=wayland`).
fn wayland_session(env: &dyn Fn(&str) -> Option<String>) -> bool {
    env("WAYLAND_DISPLAY").is_some_and(|v| !v.is_empty())
        || env("XDG_SESSION_TYPE").as_deref() == Some("wayland")
}

/// The X display to drive: the configured one, else the session's own (`DISPLAY`). A Wayland
/// session without X has none, and its windows are `unavailable` with that reason: XTest and
/// GetImage need an X server (Wayland gives no client another's input or pixels).
pub fn session_display(
    configured: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, SurfaceError> {
    if !configured.is_empty() {
        return Ok(configured.to_owned());
    }
    if let Some(display) = env("DISPLAY").filter(|d| !d.is_empty()) {
        return Ok(display);
    }
    Err(SurfaceError::unavailable(if wayland_session(env) {
        "this is a Wayland session without X: desktop windows are unavailable (XTest and GetImage need an X server; start Xwayland, or give Glovebox a display of its own with `glovebox desktop`)"
    } else {
        "no X display: name one with --display, or start one with `glovebox desktop`"
    }))
}

/// Where the desktop is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesktopConfig {
    /// The X display (`:1`); empty: the session's own (`DISPLAY`).
    pub display: String,
    /// The session bus the display's applications use (a D-Bus address); `None`: the
    /// environment's `DBUS_SESSION_BUS_ADDRESS`. Without one, windows are screenshot-only.
    pub session_bus: Option<String>,
    /// Whether Glovebox may use the display's keyboard and pointer (XTest): bring a window
    /// forward, move its focus, click at points, press keys. Off, on a person's own desktop,
    /// nothing is activated behind their back: only the applications' accessibility actions
    /// are used, and windows declare no `foreground_input`.
    pub foreground_input: bool,
}

struct Connected {
    display: Display,
    a11y: Option<A11y>,
    a11y_missing: Option<String>,
}

/// The desktop adapter (see the module docs).
pub struct DesktopAdapter {
    config: DesktopConfig,
    connected: Mutex<Option<Arc<Connected>>>,
    closed: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the display can do, as `doctor` reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DisplayReport {
    pub display: String,
    pub screen: [u32; 2],
    pub xtest: bool,
    pub window_manager: Option<String>,
    /// How many applications are on the accessibility bus, when it is reachable.
    pub accessible_apps: Option<usize>,
    /// Why accessibility is off, when it is.
    pub accessibility_off: Option<String>,
    pub windows: usize,
}

impl DesktopAdapter {
    pub fn new(mut config: DesktopConfig) -> DesktopAdapter {
        // The session's own display when none is named (surface ids carry the real name);
        // without one, connecting says why (a Wayland session, or none).
        if let Ok(display) = session_display(&config.display, &|k| std::env::var(k).ok()) {
            config.display = display;
        }
        DesktopAdapter {
            config,
            connected: Mutex::new(None),
            closed: Mutex::new(None),
        }
    }

    /// The surface id of `window`.
    pub fn surface_id(&self, window: u32) -> String {
        format!("x11:{}:{:#x}", self.config.display, window)
    }

    /// The surface id of the whole screen.
    pub fn screen_id(&self) -> String {
        format!("x11:{}:screen", self.config.display)
    }

    /// The X window surface `id` names (the root window for the screen).
    fn window_of(&self, id: &str) -> Result<u32, SurfaceError> {
        if id == self.screen_id() {
            return self.conn()?.display.now(|c| Ok(c.root()));
        }
        let prefix = format!("x11:{}:", self.config.display);
        id.strip_prefix(&prefix)
            .and_then(|w| w.strip_prefix("0x"))
            .and_then(|w| u32::from_str_radix(w, 16).ok())
            .ok_or_else(|| SurfaceError::lost(format!("{id:?} names no window of this display")))
    }

    fn conn(&self) -> Result<Arc<Connected>, SurfaceError> {
        if let Some(why) = lock(&self.closed).clone() {
            return Err(SurfaceError::unavailable(why));
        }
        lock(&self.connected)
            .clone()
            .ok_or_else(|| SurfaceError::unavailable("the desktop is not connected"))
    }

    async fn connect_now(&self) -> Result<Arc<Connected>, SurfaceError> {
        let env = |k: &str| std::env::var(k).ok();
        let name = session_display(&self.config.display, &env)?;
        let display = Display::connect(&name).map_err(|e| match wayland_session(&env) {
            // Say why a person's desktop may have no X server at all.
            true => SurfaceError::unavailable(format!(
                "{e}; this is a Wayland session: only X11 windows (through Xwayland) can be driven"
            )),
            false => e,
        })?;
        let bus = self
            .config
            .session_bus
            .clone()
            .or_else(|| std::env::var("DBUS_SESSION_BUS_ADDRESS").ok());
        let (a11y, a11y_missing) = match bus {
            Some(bus) => match A11y::connect(&bus).await {
                Ok(a) => (Some(a), None),
                Err(e) => (None, Some(format!("no accessibility: {e}"))),
            },
            None => (
                None,
                Some("no session bus is known for the display (DBUS_SESSION_BUS_ADDRESS): windows are screenshot-only".into()),
            ),
        };
        if let Some(why) = &a11y_missing {
            tracing::warn!(display = %self.config.display, "{why}");
        }
        Ok(Arc::new(Connected {
            display,
            a11y,
            a11y_missing,
        }))
    }

    /// What the display offers (for `doctor`).
    pub async fn report(&self) -> Result<DisplayReport, SurfaceError> {
        let c = match self.conn() {
            Ok(c) => c,
            Err(_) => self.connect_now().await?,
        };
        let (screen, xtest, wm, windows) = c
            .display
            .run(|x| {
                let s = x.screen();
                let w = x.windows()?.len();
                Ok(([s.width, s.height], x.has_xtest(), x.window_manager(), w))
            })
            .await?;
        let (accessible_apps, accessibility_off) = match &c.a11y {
            Some(a) => match a.apps().await {
                Ok(apps) => (Some(apps.len()), None),
                Err(e) => (None, Some(e.to_string())),
            },
            None => (None, c.a11y_missing.clone()),
        };
        Ok(DisplayReport {
            display: self.config.display.clone(),
            screen,
            xtest,
            window_manager: wm,
            accessible_apps,
            accessibility_off,
            windows,
        })
    }
}

impl SurfaceAdapter for DesktopAdapter {
    fn kind(&self) -> SurfaceKind {
        SurfaceKind::X11Window
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            let c = self.connect_now().await?;
            *lock(&self.connected) = Some(c);
            *lock(&self.closed) = None;
            Ok(())
        })
    }

    fn closed_reason(&self) -> Option<String> {
        if let Some(why) = lock(&self.closed).clone() {
            return Some(why);
        }
        let c = lock(&self.connected).clone()?;
        // A dead X server shows on the next request.
        c.display.now(|x| x.sync()).err().map(|e| e.to_string())
    }

    fn process_dead(&self) -> bool {
        false
    }

    fn pid(&self) -> Option<u32> {
        None
    }

    fn launched(&self) -> bool {
        false
    }

    fn reconnect(&self) -> BoxFuture<'_, Result<Reconnected, SurfaceError>> {
        Box::pin(async move {
            if let Some(why) = lock(&self.closed).clone() {
                return Err(SurfaceError::unavailable(why));
            }
            let c = self.connect_now().await?;
            *lock(&self.connected) = Some(c);
            // The display's windows live on without us.
            Ok(Reconnected::Same)
        })
    }

    fn shutdown(&self) {
        if let Some(c) = lock(&self.connected).take() {
            let _ = c.display.now(|x| x.release_all());
        }
        *lock(&self.closed) = Some("the desktop connection was shut down".into());
    }

    fn events(&self) -> BoxFuture<'_, Option<SurfaceEvents>> {
        Box::pin(async { None })
    }

    fn create_context(
        &self,
        _with_connection: bool,
    ) -> BoxFuture<'_, Result<String, SurfaceError>> {
        // A desktop has one session: windows share it whoever claims them.
        Box::pin(async move {
            self.conn()?;
            Ok(format!("x11:{}", self.config.display))
        })
    }

    fn dispose_context_if_empty(&self, _context: String) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn open(
        &self,
        _context: Option<String>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            Err(SurfaceError::NotActionable {
                reason: "an agent opens no windows on a desktop: claim one a person offered".into(),
            })
        })
    }

    fn open_detached(
        &self,
        _url: String,
        _context: Option<String>,
        _background: bool,
    ) -> BoxFuture<'_, Result<String, SurfaceError>> {
        Box::pin(async move {
            Err(SurfaceError::NotActionable {
                reason: "a desktop's windows are opened by the person at it, not by address".into(),
            })
        })
    }

    fn attach(
        &self,
        id: String,
        memory: Option<SurfaceMemory>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            let c = self.conn()?;
            if id == self.screen_id() {
                return Ok(Arc::new(
                    DesktopWindow::screen(id, c.display.clone(), memory)?
                        .with_foreground(self.config.foreground_input),
                ) as Arc<dyn Surface>);
            }
            let window = self.window_of(&id)?;
            let facts = c
                .display
                .run(move |x| Ok(x.facts(window)))
                .await?
                .ok_or_else(|| SurfaceError::lost("the window is gone"))?;
            let identity = Identity {
                window,
                pid: facts.pid,
                class: facts.class.clone(),
            };
            Ok(Arc::new(
                DesktopWindow::new(
                    id,
                    identity,
                    c.display.clone(),
                    c.a11y.clone(),
                    c.a11y_missing.clone(),
                    memory,
                )
                .with_foreground(self.config.foreground_input),
            ) as Arc<dyn Surface>)
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SurfaceInfo>, SurfaceError>> {
        Box::pin(async move {
            let c = self.conn()?;
            let (windows, xtest) = c.display.run(|x| Ok((x.windows()?, x.has_xtest()))).await?;
            // Which processes have an application on the accessibility bus: their windows take
            // input through it (an application may still expose no tree for one window; its
            // observation says so).
            let accessible: Vec<u32> = match &c.a11y {
                Some(a) => a
                    .apps()
                    .await
                    .map(|apps| apps.into_iter().filter_map(|(_, pid)| pid).collect())
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            // The keyboard and pointer are a route only where they exist and are allowed.
            let foreground = xtest && self.config.foreground_input;
            // The whole screen first, then its windows.
            let screen = SurfaceInfo {
                id: self.screen_id(),
                top_level: true,
                url: model::DESKTOP_ORIGIN.to_owned(),
                title: format!("Screen {}", self.config.display),
                context: Some(format!("x11:{}", self.config.display)),
                input: model::input_routes(true, false, foreground),
                kind: SurfaceKind::X11Screen,
                opener: None,
            };
            Ok(std::iter::once(screen)
                .chain(windows.into_iter().map(|w| SurfaceInfo {
                    id: self.surface_id(w.window),
                    top_level: true,
                    url: model::app_origin(&w.class),
                    input: model::input_routes(
                        true,
                        w.pid.is_some_and(|p| accessible.contains(&p)),
                        foreground,
                    ),
                    title: w.name,
                    context: Some(format!("x11:{}", self.config.display)),
                    kind: SurfaceKind::X11Window,
                    opener: None,
                }))
                .collect())
        })
    }

    fn close(&self, id: String, deadline: Duration) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            if id == self.screen_id() {
                // The screen is not closed by anyone.
                return false;
            }
            let (Ok(c), Ok(window)) = (self.conn(), self.window_of(&id)) else {
                return false;
            };
            if !matches!(
                c.display.run(move |x| x.request_close(window)).await,
                Ok(true)
            ) {
                return false;
            }
            let started = Instant::now();
            while started.elapsed() < deadline {
                match c.display.run(move |x| Ok(x.facts(window))).await {
                    Ok(None) => return true,
                    Ok(Some(f)) if !f.viewable => return true,
                    _ => {}
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            false
        })
    }

    fn input_domain(&self, _id: &str) -> InputDomain {
        // XTest is one keyboard and one mouse per display.
        InputDomain(format!("x11:{}", self.config.display))
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::Observe, Capability::Interact]
    }

    fn person_image(&self, id: String) -> BoxFuture<'_, Result<Vec<u8>, SurfaceError>> {
        Box::pin(async move {
            let c = self.conn()?;
            let window = self.window_of(&id)?;
            let pixels = c
                .display
                .run(move |x| {
                    let f = x
                        .facts(window)
                        .ok_or_else(|| SurfaceError::lost("the window is gone"))?;
                    x.capture(f.rect)
                })
                .await?;
            encode_jpeg(&pixels, 70)
        })
    }

    fn person_view(&self, id: String) -> BoxFuture<'_, Result<Box<dyn PersonCast>, SurfaceError>> {
        Box::pin(async move {
            let c = self.conn()?;
            let window = self.window_of(&id)?;
            Ok(Box::new(WindowCast {
                entry: Arc::new(WindowEntry {
                    display: c.display.clone(),
                    window,
                }),
                running: false,
            }) as Box<dyn PersonCast>)
        })
    }
}

/// A person's live view of a window: its pixels polled (X has no push of frames without
/// compositing), their input sent through XTest at the window's coordinates.
struct WindowCast {
    entry: Arc<WindowEntry>,
    running: bool,
}

struct WindowEntry {
    display: Display,
    window: u32,
}

impl PersonCast for WindowCast {
    fn start(&mut self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        self.running = true;
        Box::pin(async { Ok(()) })
    }

    fn stop(&mut self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        self.running = false;
        Box::pin(async { Ok(()) })
    }

    fn next_frame(
        &mut self,
        min_interval: Duration,
    ) -> BoxFuture<'_, Result<CastFrame, SurfaceError>> {
        Box::pin(async move {
            if !self.running {
                // Stopped: nothing is captured until the caller drops this future and starts
                // the view again (start and stop need the cast itself).
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(min_interval.max(Duration::from_millis(100))).await;
            let window = self.entry.window;
            let (pixels, rect) = self
                .entry
                .display
                .run(move |x| {
                    let f = x
                        .facts(window)
                        .ok_or_else(|| SurfaceError::lost("the window is gone"))?;
                    Ok((x.capture(f.rect)?, f.rect))
                })
                .await?;
            let jpeg = encode_jpeg(&pixels, 70)?;
            Ok(CastFrame {
                captured_at: None,
                data: surface::encode_base64(&jpeg),
                width: f64::from(rect.width),
                height: f64::from(rect.height),
                scroll_x: 0.0,
                scroll_y: 0.0,
            })
        })
    }

    fn entry(&self) -> Arc<dyn PersonEntry> {
        self.entry.clone()
    }
}

impl PersonEntry for WindowEntry {
    fn alive(&self, deadline: Duration) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let window = self.window;
            matches!(
                tokio::time::timeout(deadline, self.display.run(move |x| Ok(x.facts(window))))
                    .await,
                Ok(Ok(Some(_)))
            )
        })
    }

    fn input(&self, input: PersonInput) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            let window = self.window;
            match input {
                PersonInput::Pointer {
                    event,
                    x,
                    y,
                    button,
                    delta_y,
                    ..
                } => {
                    let b = match button.as_deref() {
                        Some("right") => Button::RIGHT,
                        Some("middle") => Button::MIDDLE,
                        _ => Button::LEFT,
                    };
                    self.display
                        .run(move |c| {
                            let f = c
                                .facts(window)
                                .ok_or_else(|| SurfaceError::lost("the window is gone"))?;
                            let (sx, sy) = (f.rect.x + x as i32, f.rect.y + y as i32);
                            c.move_to(sx, sy)?;
                            match event {
                                PointerEvent::Down => c.button(b, true)?,
                                PointerEvent::Up => c.button(b, false)?,
                                PointerEvent::Move => {}
                                PointerEvent::Wheel => {
                                    let wb = if delta_y.unwrap_or(0.0) > 0.0 {
                                        Button::WHEEL_DOWN
                                    } else {
                                        Button::WHEEL_UP
                                    };
                                    c.button(wb, true)?;
                                    c.button(wb, false)?;
                                }
                            }
                            c.sync()
                        })
                        .await
                }
                PersonInput::Key { event, key, .. } => {
                    let keysym = crate::keys::key_keysym(&key).ok_or_else(|| {
                        SurfaceError::NotActionable {
                            reason: format!("no key is named {key:?}"),
                        }
                    })?;
                    let down = matches!(event, surface::KeyEvent::Down);
                    self.display
                        .run(move |c| {
                            if c.focused_window()? != Some(window) {
                                c.activate(window)?;
                            }
                            let (code, _) = c.keycode(keysym)?;
                            c.key(code, down)?;
                            c.sync()
                        })
                        .await
                }
                PersonInput::Navigate { .. } | PersonInput::History { .. } => {
                    Err(SurfaceError::NotActionable {
                        reason: "a desktop window cannot be navigated".into(),
                    })
                }
            }
        })
    }
}
