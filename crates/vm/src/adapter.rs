//! VM guests as a [`SurfaceAdapter`]: each configured guest is one environment object
//! ([`Environment`]: its name, transport, token, boot, input state) and one surface, its screen,
//! named `vm:<name>` for its life. Every command goes to exactly the environment its surface id
//! names — there is no "current VM". Each guest is its own input domain (one keyboard and mouse
//! per guest), so writes to two guests never wait on each other and never cross.
//!
//! A guest's screen is observed as the desktop adapter observes a whole X screen — its windows
//! as refs, which window has focus, and a screenshot — with the guest's identity `vm://<name>`
//! as the origin a person grants (never `app://<class>`: a guest's xterm is not the host's).
//! Actions become one batch of input events with an operation id; a batch sent without an
//! answer is `unknown` and never sent again, and the attachment forgets its frame, so the next
//! step observes first. A reboot of the guest (a new boot id) voids its frames and its
//! attachment; a guest that is down is `backend_unavailable` with the reason, within the
//! transport's deadline.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use desktop::model::{self, DesktopFrame};
use desktop::x11::Rect;
use protocol::extended::{Locator, Modifier, MouseButton};
use protocol::{
    Capability, ExtendedAction, ImageMime, InputRoute, Observation, ObservationParts, Preview,
    ProducerCuts, Receipt, Screenshot, SurfaceKind, TabId, Target, TargetIdentity, Viewport,
};
use surface::{
    ActOptions, ActOutcome, ActTiming, ActionMarker, BoxFuture, CastFrame, Dialog, FrameRecord,
    InputDomain, LocatedFacts, MarkerKind, ObserveOptions, PersonCast, PersonEntry, PersonInput,
    PointerEvent, Reconnected, SettleEnd, Surface, SurfaceAdapter, SurfaceError, SurfaceEvents,
    SurfaceInfo, SurfaceMemory,
};

use crate::client::{GuestClient, GuestError, Token};
use crate::wire::{GuestState, InputEvent, InputRequest};

/// How long the screen is given to draw what an action did before the fresh observation.
const DRAW_PAUSE: Duration = Duration::from_millis(80);
/// A pause between input events so a toolkit sees them apart.
const GAP_MS: u32 = 8;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn refused(reason: impl Into<String>) -> SurfaceError {
    SurfaceError::NotActionable {
        reason: reason.into(),
    }
}

/// One guest as configured: its name and where its guest server answers.
#[derive(Clone, PartialEq, Eq)]
pub struct GuestConfig {
    /// `[a-z0-9-]`, 1–32 characters: the surface id is `vm:<name>`.
    pub name: String,
    /// `http://127.0.0.1:PORT` (a launched guest's forwarded port, or an OSWorld guest
    /// elsewhere).
    pub endpoint: String,
    /// The guest server's token (kept here; never in an observation, event or log).
    pub token: Option<Token>,
}

impl std::fmt::Debug for GuestConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestConfig")
            .field("name", &self.name)
            .field("endpoint", &self.endpoint)
            .field("token", &self.token)
            .finish()
    }
}

/// Whether `name` is a guest name (see [`GuestConfig::name`]).
pub fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
}

/// One guest (see the module docs).
pub struct Environment {
    name: String,
    /// `vm:<name>`.
    id: String,
    client: GuestClient,
    /// The boot last seen, and why the guest is down when it is.
    boot: Mutex<Option<String>>,
    down: Mutex<Option<String>>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("name", &self.name)
            .field("client", &self.client)
            .finish()
    }
}

impl Environment {
    pub fn new(config: GuestConfig, round_trips: Arc<surface::metrics::Histogram>) -> Environment {
        Environment {
            client: GuestClient::new(config.endpoint, config.token).timed_by(round_trips),
            id: format!("vm:{}", config.name),
            name: config.name,
            boot: Mutex::new(None),
            down: Mutex::new(None),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The surface id of its screen.
    pub fn surface_id(&self) -> String {
        self.id.clone()
    }

    /// The guest's identity as a grant key.
    pub fn origin(&self) -> String {
        format!("vm://{}", self.name)
    }

    pub fn client(&self) -> &GuestClient {
        &self.client
    }

    /// The guest's state, remembering its boot (or why it is down).
    pub async fn state(&self) -> Result<GuestState, SurfaceError> {
        match self.client.state().await {
            Ok(s) => {
                *lock(&self.boot) = Some(s.boot_id.clone());
                *lock(&self.down) = None;
                Ok(s)
            }
            Err(e) => {
                let e = self.named(e);
                if matches!(
                    e,
                    SurfaceError::BackendUnavailable { .. } | SurfaceError::Timeout { .. }
                ) {
                    *lock(&self.down) = Some(e.to_string());
                }
                Err(e)
            }
        }
    }

    /// A transport error as the seam's, naming the guest (never its credentials).
    fn named(&self, e: GuestError) -> SurfaceError {
        match e.surface() {
            SurfaceError::BackendUnavailable { reason } => SurfaceError::BackendUnavailable {
                reason: format!("VM {}: {reason}", self.name),
            },
            SurfaceError::Timeout { what, after_ms } => SurfaceError::Timeout {
                what: format!("VM {}: {what}", self.name),
                after_ms,
            },
            other => other,
        }
    }

    /// Why the guest was down at the last look.
    pub fn down_reason(&self) -> Option<String> {
        lock(&self.down).clone()
    }
}

/// The VM guests as a source of surfaces (see the module docs).
pub struct VmAdapter {
    guests: Vec<Arc<Environment>>,
    closed: Mutex<Option<String>>,
    /// Every guest request's round trip, for `/metrics`.
    round_trips: Arc<surface::metrics::Histogram>,
}

impl VmAdapter {
    /// The adapter for `guests` (names unique and valid: the configuration checks them).
    pub fn new(guests: Vec<GuestConfig>) -> VmAdapter {
        let round_trips = Arc::<surface::metrics::Histogram>::default();
        VmAdapter {
            guests: guests
                .into_iter()
                .map(|g| Arc::new(Environment::new(g, round_trips.clone())))
                .collect(),
            closed: Mutex::new(None),
            round_trips,
        }
    }

    pub fn guests(&self) -> &[Arc<Environment>] {
        &self.guests
    }

    /// The environment a surface id names: exactly that one, or an error.
    pub fn environment(&self, id: &str) -> Result<Arc<Environment>, SurfaceError> {
        if let Some(why) = lock(&self.closed).clone() {
            return Err(SurfaceError::unavailable(why));
        }
        let name = id
            .strip_prefix("vm:")
            .ok_or_else(|| SurfaceError::lost(format!("{id} is not a VM surface")))?;
        self.guests
            .iter()
            .find(|g| g.name == name)
            .cloned()
            .ok_or_else(|| SurfaceError::lost(format!("no VM is named {name:?}")))
    }
}

impl SurfaceAdapter for VmAdapter {
    fn kind(&self) -> SurfaceKind {
        SurfaceKind::VmScreen
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            *lock(&self.closed) = None;
            if self.guests.is_empty() {
                return Err(SurfaceError::unavailable(
                    "no VM is configured: add one with `glovebox vm start` or [[vm]] in the config",
                ));
            }
            // A guest that is down is that guest's `unavailable`, not the adapter's: the others
            // serve.
            for g in &self.guests {
                let _ = g.state().await;
            }
            Ok(())
        })
    }

    fn closed_reason(&self) -> Option<String> {
        lock(&self.closed).clone()
    }

    fn backend_metrics(&self) -> surface::metrics::BackendMetrics {
        surface::metrics::BackendMetrics {
            protocol: "guest_http",
            // Up while it serves and some guest's server answered last (none found down).
            connected: lock(&self.closed).is_none()
                && self.guests.iter().any(|g| lock(&g.down).is_none()),
            round_trips: Some(self.round_trips.snapshot()),
            pool: None,
        }
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
            // Guests run on without the runtime: a lost transport comes back to the same ones.
            Ok(Reconnected::Same)
        })
    }

    fn shutdown(&self) {
        *lock(&self.closed) = Some("the VM connections were shut down".into());
    }

    fn events(&self) -> BoxFuture<'_, Option<SurfaceEvents>> {
        Box::pin(async { None })
    }

    fn create_context(
        &self,
        _with_connection: bool,
    ) -> BoxFuture<'_, Result<String, SurfaceError>> {
        // A guest is one machine: whoever claims its screen shares it.
        Box::pin(async { Ok("vm".to_owned()) })
    }

    fn dispose_context_if_empty(&self, _context: String) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn open(
        &self,
        _context: Option<String>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            Err(refused(
                "a VM's screen is claimed, not opened: start a guest with `glovebox vm start`",
            ))
        })
    }

    fn open_detached(
        &self,
        _url: String,
        _context: Option<String>,
        _background: bool,
    ) -> BoxFuture<'_, Result<String, SurfaceError>> {
        Box::pin(async move { Err(refused("a VM's screen is not opened by address")) })
    }

    fn attach(
        &self,
        id: String,
        memory: Option<SurfaceMemory>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            let env = self.environment(&id)?;
            let state = env.state().await?;
            let memory = memory
                .and_then(|m| {
                    m.0.downcast_ref::<Mutex<ScreenMemory>>()
                        .map(|m| lock(m).clone())
                })
                .filter(|m| m.boot_id == state.boot_id)
                .unwrap_or_default();
            Ok(Arc::new(VmScreen {
                env,
                boot_id: state.boot_id,
                latest: Mutex::new(memory.latest),
                secrets: Mutex::new(memory.secrets),
                lost: Mutex::new(None),
                io: tokio::sync::Mutex::new(()),
                epoch: AtomicU64::new(0),
            }) as Arc<dyn Surface>)
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SurfaceInfo>, SurfaceError>> {
        Box::pin(async move {
            if let Some(why) = lock(&self.closed).clone() {
                return Err(SurfaceError::unavailable(why));
            }
            let mut out = Vec::new();
            for g in &self.guests {
                // A guest that is down is listed with no input route, so it is seen and said.
                let (title, input) = match g.state().await {
                    Ok(s) => (
                        s.windows
                            .iter()
                            .find(|w| Some(w.window) == s.focused)
                            .map_or_else(|| format!("VM {}", g.name), |w| w.name.clone()),
                        if s.xtest {
                            vec![InputRoute::ForegroundInput]
                        } else {
                            vec![InputRoute::ScreenshotOnly]
                        },
                    ),
                    Err(_) => (format!("VM {}", g.name), vec![InputRoute::Unavailable]),
                };
                out.push(SurfaceInfo {
                    id: g.surface_id(),
                    top_level: true,
                    url: g.origin(),
                    title,
                    context: Some("vm".into()),
                    input,
                    kind: SurfaceKind::VmScreen,
                    opener: None,
                });
            }
            Ok(out)
        })
    }

    fn close(&self, _id: String, _deadline: Duration) -> BoxFuture<'_, bool> {
        // A guest's screen is not closed by an agent (`glovebox vm stop` stops a guest).
        Box::pin(async { false })
    }

    fn input_domain(&self, id: &str) -> InputDomain {
        // One keyboard and mouse per guest: the surface id names the guest.
        InputDomain(id.to_owned())
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::Observe, Capability::Interact]
    }

    fn person_image(&self, id: String) -> BoxFuture<'_, Result<Vec<u8>, SurfaceError>> {
        Box::pin(async move {
            let env = self.environment(&id)?;
            let (jpeg, _, _) = screen_jpeg(&env).await?;
            Ok(jpeg)
        })
    }

    fn person_view(&self, id: String) -> BoxFuture<'_, Result<Box<dyn PersonCast>, SurfaceError>> {
        Box::pin(async move {
            let env = self.environment(&id)?;
            env.state().await?;
            Ok(Box::new(GuestCast {
                entry: Arc::new(GuestEntry { env }),
                running: false,
            }) as Box<dyn PersonCast>)
        })
    }
}

/// The screen as JPEG for a person (checked like an agent's image first).
async fn screen_jpeg(env: &Environment) -> Result<(Vec<u8>, u32, u32), SurfaceError> {
    let state = env.state().await?;
    let shot = env
        .client
        .screenshot(state.screen)
        .await
        .map_err(|e| env.named(e))?;
    let pixels = decode_rgba(&shot.png)?;
    let jpeg = desktop::window::encode_jpeg(&pixels, 70)?;
    Ok((jpeg, shot.width, shot.height))
}

fn decode_rgba(png_bytes: &[u8]) -> Result<desktop::x11::Pixels, SurfaceError> {
    let bad = |e: String| SurfaceError::Internal {
        reason: format!("the guest's screenshot: {e}"),
    };
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(|e| bad(e.to_string()))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| bad("too large".into()))?;
    let mut buf = vec![0; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| bad(e.to_string()))?;
    let rgba = match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::Rgb => buf
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        other => return Err(bad(format!("colour type {other:?}"))),
    };
    Ok(desktop::x11::Pixels {
        width: info.width,
        height: info.height,
        rgba,
    })
}

/// What a guest's screen remembers across attachments (within one boot).
#[derive(Clone, Default)]
struct ScreenMemory {
    boot_id: String,
    latest: Option<Arc<DesktopFrame>>,
    secrets: Vec<String>,
}

/// One attached guest screen (see the module docs).
pub struct VmScreen {
    env: Arc<Environment>,
    /// The boot attached to: another one voids the attachment.
    boot_id: String,
    latest: Mutex<Option<Arc<DesktopFrame>>>,
    secrets: Mutex<Vec<String>>,
    lost: Mutex<Option<String>>,
    /// Observation and action never overlap on a guest.
    io: tokio::sync::Mutex<()>,
    epoch: AtomicU64,
}

impl VmScreen {
    /// The guest's state, checked to be of the boot attached to.
    async fn state(&self) -> Result<GuestState, SurfaceError> {
        let state = self.env.state().await?;
        if state.boot_id != self.boot_id {
            let why = format!(
                "VM {} rebooted: its earlier frames and leases are void",
                self.env.name
            );
            *lock(&self.lost) = Some(why.clone());
            *lock(&self.latest) = None;
            return Err(SurfaceError::lost(why));
        }
        Ok(state)
    }

    fn screen_rect(state: &GuestState) -> Rect {
        Rect {
            x: 0,
            y: 0,
            width: state.screen[0],
            height: state.screen[1],
        }
    }

    fn windows(state: &GuestState) -> Vec<desktop::x11::WindowFacts> {
        state.windows.iter().filter_map(|w| w.facts()).collect()
    }

    async fn capture(
        &self,
        options: &ObserveOptions,
        keep: bool,
    ) -> Result<(Observation, Arc<DesktopFrame>), SurfaceError> {
        let state = self.state().await?;
        let secrets = lock(&self.secrets).clone();
        let windows = Self::windows(&state);
        let rect = Self::screen_rect(&state);
        let layout = model::screen_layout(&windows, state.focused);
        let mut built = model::build_screen(&windows, state.focused, rect, &secrets);
        // A guest's windows are the guest's: their grant key is the guest, never the host's
        // `app://<class>`.
        let origin = self.env.origin();
        for (_, b) in &mut built.refs {
            b.facts.structure.document_origin = origin.clone();
        }
        let withheld = !secrets.is_empty() && options.screenshot.is_some();
        let mut screenshot = None;
        let mut digest = 0u64;
        if let Some(mime) = options.screenshot.filter(|_| !withheld) {
            let shot = self
                .env
                .client
                .screenshot(state.screen)
                .await
                .map_err(|e| self.env.named(e))?;
            digest = hash(&shot.png);
            let bytes = match mime {
                ImageMime::Png => shot.png,
                ImageMime::Jpeg => desktop::window::encode_jpeg(&decode_rgba(&shot.png)?, 80)?,
            };
            screenshot = Some(Screenshot {
                mime,
                data: surface::encode_base64(&bytes),
                width: shot.width,
                height: shot.height,
            });
        }
        // Bound to the guest, its boot, the layout and what was seen; a process salt keeps an
        // earlier process's ids from matching.
        let frame_id = {
            use std::hash::{Hash as _, Hasher as _};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (
                &self.env.name,
                &state.boot_id,
                layout,
                &built.snapshot,
                digest,
            )
                .hash(&mut h);
            crate::process_salt().hash(&mut h);
            self.epoch.load(Ordering::SeqCst).hash(&mut h);
            protocol::FrameId::new(format!("frame_{:016x}", h.finish())).map_err(|e| {
                SurfaceError::Internal {
                    reason: format!("frame id: {e}"),
                }
            })?
        };
        let frame = Arc::new(DesktopFrame {
            frame_id: frame_id.clone(),
            app_origin: origin.clone(),
            rect,
            canvas_share: 1.0,
            screenshot: screenshot.is_some(),
            refs: built.refs,
            screen: true,
            layout,
        });
        if keep {
            *lock(&self.latest) = Some(frame.clone());
        }
        let epoch = self.epoch.fetch_add(1, Ordering::SeqCst) + 1;
        let title = state
            .windows
            .iter()
            .find(|w| Some(w.window) == state.focused)
            .map(|w| model::scrub(&protocol::text::printable(&w.name), &secrets))
            .unwrap_or_default();
        let mut console = Vec::new();
        if withheld {
            console.push(
                "glovebox: the guest's image is withheld while this surface holds secrets (it \
                 could show them)"
                    .to_owned(),
            );
        }
        if !state.xtest {
            console.push("glovebox: the guest's X server takes no input (no XTest)".to_owned());
        }
        let observation = Observation::bounded(ObservationParts {
            frame_id,
            content_epoch: epoch,
            captured_at: now_ms(),
            target: TargetIdentity {
                kind: SurfaceKind::VmScreen,
                tab_id: TabId::new(self.env.surface_id()).map_err(|e| SurfaceError::Internal {
                    reason: format!("surface id: {e}"),
                })?,
            },
            url: origin.clone(),
            origin,
            title,
            viewport: Viewport {
                width: f64::from(rect.width),
                height: f64::from(rect.height),
                device_scale_factor: 1.0,
                page_zoom: 1.0,
                scroll_x: 0.0,
                scroll_y: 0.0,
            },
            screenshot,
            aria_snapshot: built.snapshot,
            interactive_elements: built.elements,
            console_errors: console,
            cut: ProducerCuts::default(),
        });
        Ok((observation, frame))
    }

    /// The screen point a target names on `frame`.
    fn point(frame: &DesktopFrame, target: &Target) -> Result<(i32, i32), SurfaceError> {
        match target {
            Target::Ref(e) => {
                let b = frame.bound(&e.element).ok_or_else(|| SurfaceError::Stale {
                    reason: format!("{} is not a ref of this observation", e.element.as_str()),
                })?;
                Ok((
                    b.screen.x + b.screen.width as i32 / 2,
                    b.screen.y + b.screen.height as i32 / 2,
                ))
            }
            Target::Point(p) => {
                let (x, y) = (i64::from(p.x), i64::from(p.y));
                if x < 0
                    || y < 0
                    || x >= i64::from(frame.rect.width)
                    || y >= i64::from(frame.rect.height)
                {
                    return Err(refused(format!(
                        "the point ({}, {}) is outside the guest's {}×{} screen",
                        p.x, p.y, frame.rect.width, frame.rect.height
                    )));
                }
                Ok((x as i32, y as i32))
            }
            Target::Locator(_) => Err(refused(
                "a VM's screen takes points and window refs, not locators",
            )),
        }
    }

    /// The keyboard's target: the window a ref names, which must hold focus (keys go wherever
    /// focus is, so without that evidence nothing is typed).
    fn focused_window(
        frame: &DesktopFrame,
        spec: Option<&protocol::extended::ElementSpec>,
        focused: Option<u32>,
    ) -> Result<(), SurfaceError> {
        let Some(spec) = spec else {
            return Ok(());
        };
        let Some(e) = spec.element_ref() else {
            return Err(refused(
                "a VM's screen takes window refs, not locators: name the focused window",
            ));
        };
        let b = frame.bound(&e.element).ok_or_else(|| SurfaceError::Stale {
            reason: format!("{} is not a ref of this observation", e.element.as_str()),
        })?;
        if b.window.is_none() || b.window != focused {
            return Err(refused(format!(
                "{} does not hold keyboard focus: click in it first",
                e.element.as_str()
            )));
        }
        Ok(())
    }

    fn marker(frame: &DesktopFrame, kind: MarkerKind, points: &[(i32, i32)]) -> ActionMarker {
        ActionMarker {
            kind,
            points: points
                .iter()
                .map(|(x, y)| [f64::from(*x), f64::from(*y)])
                .collect(),
            field: None,
            delta: None,
            keys: Vec::new(),
            viewport: [f64::from(frame.rect.width), f64::from(frame.rect.height)],
            scroll: [0.0, 0.0],
        }
    }

    /// The input events of `action` on `frame`, and its marker; `None` events: nothing to send
    /// (a wait).
    fn plan(
        &self,
        action: &ExtendedAction,
        frame: &DesktopFrame,
        focused: Option<u32>,
    ) -> Result<(Vec<InputEvent>, Option<ActionMarker>), SurfaceError> {
        let gap = InputEvent::Pause { ms: GAP_MS };
        Ok(match action {
            ExtendedAction::Click(a) => {
                if a.expect_download {
                    return Err(refused("a VM's screen has no download capture"));
                }
                let (x, y) = Self::point(frame, &a.target)?;
                let button = match a.button {
                    MouseButton::Left => 1,
                    MouseButton::Middle => 2,
                    MouseButton::Right => 3,
                };
                let mods = modifier_keysyms(a.modifiers.iter());
                let mut events = vec![InputEvent::Move { x, y }, gap.clone()];
                for k in &mods {
                    events.push(InputEvent::Key {
                        keysym: *k,
                        down: true,
                    });
                }
                for i in 0..a.click_count.get() {
                    if i > 0 {
                        events.push(gap.clone());
                    }
                    events.push(InputEvent::Button { button, down: true });
                    events.push(gap.clone());
                    events.push(InputEvent::Button {
                        button,
                        down: false,
                    });
                }
                for k in mods.iter().rev() {
                    events.push(InputEvent::Key {
                        keysym: *k,
                        down: false,
                    });
                }
                (
                    events,
                    Some(Self::marker(frame, MarkerKind::Click, &[(x, y)])),
                )
            }
            ExtendedAction::Hover(a) => {
                let (x, y) = Self::point(frame, &a.target)?;
                (
                    vec![InputEvent::Move { x, y }],
                    Some(Self::marker(frame, MarkerKind::Hover, &[(x, y)])),
                )
            }
            ExtendedAction::Type(a) => {
                Self::focused_window(frame, Some(&a.target), focused)?;
                let text = a.text.as_str().to_owned();
                (
                    vec![InputEvent::Text { text }],
                    Some(Self::marker(frame, MarkerKind::Type, &[])),
                )
            }
            ExtendedAction::Press(a) => {
                Self::focused_window(frame, Some(&a.target), focused)?;
                let keysyms = desktop::keys::chord(a.key.as_str())
                    .ok_or_else(|| refused(format!("no key is named {:?}", a.key.as_str())))?;
                let mut marker = Self::marker(frame, MarkerKind::Key, &[]);
                marker.keys = vec![a.key.as_str().to_owned()];
                (vec![InputEvent::Chord { keysyms }], Some(marker))
            }
            ExtendedAction::KeyDown(a) | ExtendedAction::KeyUp(a) => {
                Self::focused_window(frame, a.target.as_ref(), focused)?;
                let keysym = desktop::keys::key_keysym(a.key.as_str())
                    .ok_or_else(|| refused(format!("no key is named {:?}", a.key.as_str())))?;
                let down = matches!(action, ExtendedAction::KeyDown(_));
                let mut marker = Self::marker(frame, MarkerKind::Key, &[]);
                marker.keys = vec![a.key.as_str().to_owned()];
                (vec![InputEvent::Key { keysym, down }], Some(marker))
            }
            ExtendedAction::Scroll(a) => {
                let (x, y) = match &a.target {
                    Some(t) => Self::point(frame, &Target::from(t.clone()))?,
                    None => (frame.rect.width as i32 / 2, frame.rect.height as i32 / 2),
                };
                let (dx, dy) = (a.delta.x_px(), a.delta.y_px());
                // One wheel click scrolls about 40 pixels in GTK and Qt.
                let steps = |d: i32| {
                    ((d.unsigned_abs() as f64 / 40.0).round() as u32).clamp(u32::from(d != 0), 50)
                };
                let mut events = vec![InputEvent::Move { x, y }];
                for (b, n) in [
                    (if dy > 0 { 5 } else { 4 }, steps(dy)),
                    (if dx > 0 { 7 } else { 6 }, steps(dx)),
                ] {
                    for _ in 0..n {
                        events.push(InputEvent::Button {
                            button: b,
                            down: true,
                        });
                        events.push(InputEvent::Button {
                            button: b,
                            down: false,
                        });
                        events.push(gap.clone());
                    }
                }
                let mut marker = Self::marker(frame, MarkerKind::Scroll, &[(x, y)]);
                marker.delta = Some([f64::from(dx), f64::from(dy)]);
                (events, Some(marker))
            }
            ExtendedAction::Drag(a) => {
                let from = Self::point(frame, &a.source)?;
                let to = Self::point(frame, &a.destination)?;
                let mut path = vec![from];
                for w in a.path.as_slice() {
                    path.push(Self::point(
                        frame,
                        &Target::Point(protocol::PointTarget { x: w.x, y: w.y }),
                    )?);
                }
                path.push(to);
                let mut events = vec![
                    InputEvent::Move {
                        x: from.0,
                        y: from.1,
                    },
                    gap.clone(),
                    InputEvent::Button {
                        button: 1,
                        down: true,
                    },
                ];
                for pair in path.windows(2) {
                    let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
                    // Intermediate motion so the application sees a drag, not a jump.
                    for i in 1..=8 {
                        events.push(InputEvent::Move {
                            x: x0 + (x1 - x0) * i / 8,
                            y: y0 + (y1 - y0) * i / 8,
                        });
                        events.push(gap.clone());
                    }
                }
                events.push(InputEvent::Button {
                    button: 1,
                    down: false,
                });
                (events, Some(Self::marker(frame, MarkerKind::Drag, &path)))
            }
            ExtendedAction::Wait(_) => (Vec::new(), None),
            ExtendedAction::Select(_) => {
                return Err(refused(
                    "a VM's screen has no list the runtime can read: click the list, then the option",
                ));
            }
            ExtendedAction::Navigate(_) => {
                return Err(refused(
                    "a VM's screen cannot be navigated: act in the guest",
                ));
            }
            ExtendedAction::Upload(_) => return Err(refused("a VM's screen takes no uploads")),
            ExtendedAction::Dialog(_) => {
                return Err(refused(
                    "a VM has no JavaScript dialogs: act on the dialog's window",
                ));
            }
        })
    }
}

/// A fresh operation id: this process (its salt), the guest, who sends it, and a counter of
/// the process — never the same twice, whichever attachment sends it (the guest applies an id
/// once).
fn op_id(guest: &str, who: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{:x}-{guest}-{who}-{}",
        crate::process_salt(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

fn hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

fn modifier_keysyms(m: impl Iterator<Item = Modifier>) -> Vec<u32> {
    m.map(|m| match m {
        Modifier::Alt => 0xffe9,
        Modifier::Control => 0xffe3,
        Modifier::Meta => 0xffeb,
        Modifier::Shift => 0xffe1,
    })
    .collect()
}

impl Surface for VmScreen {
    fn id(&self) -> &str {
        &self.env.id
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn lost(&self) -> Option<String> {
        lock(&self.lost).clone()
    }

    fn observe<'a>(
        &'a self,
        options: &'a ObserveOptions,
    ) -> BoxFuture<'a, Result<Observation, SurfaceError>> {
        Box::pin(async move {
            let _io = self.io.lock().await;
            tokio::time::timeout(options.deadline, self.capture(options, true))
                .await
                .map_err(|_| SurfaceError::Timeout {
                    what: format!("observing VM {}", self.env.name),
                    after_ms: options.deadline.as_millis() as u64,
                })?
                .map(|(o, _)| o)
        })
    }

    fn preview(&self, deadline: Duration) -> BoxFuture<'_, Preview> {
        Box::pin(async move {
            let options = ObserveOptions {
                screenshot: None,
                deadline,
                ..ObserveOptions::default()
            };
            match tokio::time::timeout(deadline, async {
                let _io = self.io.lock().await;
                self.capture(&options, false).await
            })
            .await
            {
                Ok(Ok((o, _))) => Preview::ready(protocol::PreviewParts {
                    preview_frame_id: o.frame_id().clone(),
                    content_epoch: o.content_epoch(),
                    captured_at: o.captured_at(),
                    title: o.title().to_owned(),
                    origin: o.origin().to_owned(),
                    visible_text: surface::snapshot_text(o.aria_snapshot()).join(" "),
                    aria_landmarks: Vec::new(),
                    interactive_count: o.interactive_elements().len() as u32,
                }),
                _ => Preview::unavailable(String::new(), self.env.origin(), now_ms()),
            }
        })
    }

    fn act<'a>(
        &'a self,
        action: &'a ExtendedAction,
        options: &'a ActOptions,
    ) -> BoxFuture<'a, Result<ActOutcome, SurfaceError>> {
        Box::pin(async move {
            let _io = self.io.lock().await;
            let frame = lock(&self.latest)
                .clone()
                .ok_or_else(|| SurfaceError::Stale {
                    reason: format!("VM {}'s screen has not been observed", self.env.name),
                })?;
            if &frame.frame_id != action.expected_frame_id() {
                return Err(SurfaceError::Stale {
                    reason: "the frame is not the guest screen's latest observation".into(),
                });
            }
            let state = self.state().await?;
            let windows = Self::windows(&state);
            if model::screen_layout(&windows, state.focused) != frame.layout {
                return Err(SurfaceError::Stale {
                    reason: "a window of the guest moved, opened, closed, was restacked or took \
                             focus since it was observed"
                        .into(),
                });
            }
            let (events, marker) = self.plan(action, &frame, state.focused)?;
            let started = Instant::now();
            let kind = action.kind();
            let expected = action.expected_frame_id().clone();
            let receipt = if let ExtendedAction::Wait(a) = action {
                tokio::time::sleep(Duration::from_millis(u64::from(a.duration_ms.get()))).await;
                Receipt::confirmed(kind, expected)
            } else {
                let request = InputRequest {
                    op: op_id(&self.env.name, "agent"),
                    boot_id: self.boot_id.clone(),
                    events,
                };
                // The frame is spent once input may have gone out: the next step observes.
                *lock(&self.latest) = None;
                match self.env.client.input(&request, options.deadline).await {
                    Ok(answer) if answer.applied => Receipt::dispatched(kind, expected),
                    // Never replayed by us: an id the guest knows is not applied twice.
                    Ok(_) => Receipt::unknown(
                        kind,
                        expected,
                        "the guest had applied this operation's id before; nothing was applied now",
                    ),
                    Err(GuestError::NoAnswer { reason, .. }) => {
                        // Sent, unanswered: maybe applied, maybe not. Never sent again.
                        return Ok(ActOutcome {
                            action: kind,
                            receipt: Receipt::unknown(
                                kind,
                                expected,
                                format!(
                                    "VM {}: the input was sent and no answer came ({reason}); \
                                     observe before acting again",
                                    self.env.name
                                ),
                            ),
                            observation: None,
                            opened: Vec::new(),
                            dialog: None,
                            downloads: Vec::new(),
                            marker,
                            timing: ActTiming::default(),
                            blocked: Vec::new(),
                        });
                    }
                    Err(e) => {
                        // Refused or unreachable before anything was applied: the frame stands.
                        *lock(&self.latest) = Some(frame.clone());
                        return Err(self.env.named(e));
                    }
                }
            };
            let settle = started.elapsed();
            tokio::time::sleep(DRAW_PAUSE).await;
            let observed_at = Instant::now();
            let observation = self
                .capture(&options.observe, true)
                .await
                .ok()
                .map(|(o, _)| o);
            Ok(ActOutcome {
                action: kind,
                receipt,
                observation,
                opened: Vec::new(),
                dialog: None,
                downloads: Vec::new(),
                marker,
                timing: ActTiming {
                    settle,
                    observe: observed_at.elapsed(),
                    settled_by: SettleEnd::Quiet,
                    awaited_requests: 0,
                },
                blocked: Vec::new(),
            })
        })
    }

    fn latest_frame(&self) -> Option<Arc<dyn FrameRecord>> {
        lock(&self.latest)
            .clone()
            .map(|f| f as Arc<dyn FrameRecord>)
    }

    fn locate<'a>(
        &'a self,
        _frame: &'a dyn FrameRecord,
        _locator: &'a Locator,
    ) -> BoxFuture<'a, Option<LocatedFacts>> {
        // A guest's screen resolves no locators (its actions refuse them).
        Box::pin(async { None })
    }

    fn release_input(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            self.env
                .client
                .release()
                .await
                .map_err(|e| self.env.named(e))
        })
    }

    fn surface_kind(&self) -> Option<SurfaceKind> {
        Some(SurfaceKind::VmScreen)
    }

    fn input_routes(&self) -> Vec<InputRoute> {
        if lock(&self.lost).is_some() || self.env.down_reason().is_some() {
            vec![InputRoute::Unavailable]
        } else {
            vec![InputRoute::ForegroundInput]
        }
    }

    fn dialog(&self) -> Option<Dialog> {
        None
    }

    fn detach(&self, _deadline: Duration) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            // Nothing stays held by an attachment that ends; the guest runs on.
            let _ = self.env.client.release().await;
            Ok(())
        })
    }

    fn memory(&self) -> SurfaceMemory {
        SurfaceMemory(Arc::new(Mutex::new(ScreenMemory {
            boot_id: self.boot_id.clone(),
            latest: lock(&self.latest).clone(),
            secrets: lock(&self.secrets).clone(),
        })))
    }

    fn scrub(&self, secrets: &[String]) {
        let mut held = lock(&self.secrets);
        for s in secrets {
            if !held.contains(s) {
                held.push(s.clone());
            }
        }
    }
}

/// A person's live view of a guest: its screen polled, their input sent as guest input.
struct GuestCast {
    entry: Arc<GuestEntry>,
    running: bool,
}

struct GuestEntry {
    env: Arc<Environment>,
}

impl PersonCast for GuestCast {
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
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(min_interval.max(Duration::from_millis(150))).await;
            let (jpeg, width, height) = screen_jpeg(&self.entry.env).await?;
            Ok(CastFrame {
                captured_at: None,
                data: surface::encode_base64(&jpeg),
                width: f64::from(width),
                height: f64::from(height),
                scroll_x: 0.0,
                scroll_y: 0.0,
            })
        })
    }

    fn entry(&self) -> Arc<dyn PersonEntry> {
        self.entry.clone()
    }
}

impl PersonEntry for GuestEntry {
    fn alive(&self, deadline: Duration) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            matches!(
                tokio::time::timeout(deadline, self.env.state()).await,
                Ok(Ok(_))
            )
        })
    }

    fn input(&self, input: PersonInput) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            let events = match input {
                PersonInput::Pointer {
                    event,
                    x,
                    y,
                    button,
                    delta_y,
                    ..
                } => {
                    let b = match button.as_deref() {
                        Some("right") => 3,
                        Some("middle") => 2,
                        _ => 1,
                    };
                    let mut events = vec![InputEvent::Move {
                        x: x as i32,
                        y: y as i32,
                    }];
                    match event {
                        PointerEvent::Down => events.push(InputEvent::Button {
                            button: b,
                            down: true,
                        }),
                        PointerEvent::Up => events.push(InputEvent::Button {
                            button: b,
                            down: false,
                        }),
                        PointerEvent::Move => {}
                        PointerEvent::Wheel => {
                            let wb = if delta_y.unwrap_or(0.0) > 0.0 { 5 } else { 4 };
                            events.push(InputEvent::Button {
                                button: wb,
                                down: true,
                            });
                            events.push(InputEvent::Button {
                                button: wb,
                                down: false,
                            });
                        }
                    }
                    events
                }
                PersonInput::Key { event, key, .. } => {
                    let keysym = desktop::keys::key_keysym(&key)
                        .ok_or_else(|| refused(format!("no key is named {key:?}")))?;
                    vec![InputEvent::Key {
                        keysym,
                        down: matches!(event, surface::KeyEvent::Down),
                    }]
                }
                PersonInput::Navigate { .. } | PersonInput::History { .. } => {
                    return Err(refused("a VM's screen cannot be navigated"));
                }
            };
            let boot_id = self.env.state().await?.boot_id;
            let request = InputRequest {
                op: op_id(&self.env.name, "person"),
                boot_id,
                events,
            };
            self.env
                .client
                .input(&request, Duration::from_secs(5))
                .await
                .map(|_| ())
                .map_err(|e| self.env.named(e))
        })
    }
}
