//! One attached window of a display: its observation (AT-SPI tree and a screenshot with its
//! mapping), and actions under the display's rules:
//!
//! - the window is the one attached (display, window id, pid, class), re-checked before every
//!   side effect; a moved or resized window makes the frame stale;
//! - by ref, through AT-SPI where the application offers it (Action, EditableText): no pointer
//!   or keyboard needed, nothing else on the display is touched;
//! - through XTest otherwise, after checking that the point is on this window and not on another
//!   one over it, and, before keys, that this window holds keyboard focus (activated, then
//!   confirmed with `GetInputFocus` and the widget's `focused` state): typing goes wherever
//!   focus is, so without that evidence nothing is typed;
//! - typed text is read back; a field that does not hold it fails the action with the evidence,
//!   never a retry in the background.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::extended::{Locator, MouseButton};
use protocol::{
    ErrorCode, ExtendedAction, ImageMime, InputRoute, Observation, ObservationParts, Preview,
    ProducerCuts, Receipt, Screenshot, TabId, Target, TargetIdentity, Viewport,
};
use surface::{
    ActOptions, ActOutcome, ActTiming, ActionMarker, BoxFuture, Dialog, FrameRecord, LocatedFacts,
    MarkerKind, ObserveOptions, SettleEnd, Surface, SurfaceError, SurfaceMemory,
};

use crate::a11y::{A11y, ObjRef, state};
use crate::keys;
use crate::model::{self, DesktopFrame};
use crate::x11::{Button, Display, INPUT_GAP, Pixels, Rect, WindowFacts};

/// How long focus may take to arrive before keys are refused.
const FOCUS_WAIT: Duration = Duration::from_millis(1500);
/// How long a top-level created during an action may take to map before the action reports
/// what it opened.
const OPEN_WAIT: Duration = Duration::from_millis(1000);
/// How often focus and states are polled while waiting for them.
const POLL: Duration = Duration::from_millis(15);

/// What identifies the window across its life: re-checked before every side effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub window: u32,
    pub pid: Option<u32>,
    pub class: String,
}

/// What a window remembers across attachments.
#[derive(Default)]
pub struct WindowMemory {
    latest: Option<Arc<DesktopFrame>>,
    secrets: Vec<String>,
}

/// One attached window, or the whole screen (see the module docs).
pub struct DesktopWindow {
    id: String,
    identity: Identity,
    /// The whole screen rather than one window: its refs are the windows, input goes where a
    /// person's would (the window under a point; keys to the focused window), and any change
    /// of the windows' stacking, boxes or focus makes its frame stale.
    screen: bool,
    /// Whether the display's keyboard and pointer may be used (see
    /// [`crate::DesktopConfig::foreground_input`]).
    foreground: bool,
    display: Display,
    a11y: Option<A11y>,
    /// Why AT-SPI is not used for this window, when it is not.
    a11y_missing: Mutex<Option<String>>,
    root: Mutex<Option<ObjRef>>,
    latest: Mutex<Option<Arc<DesktopFrame>>>,
    secrets: Mutex<Vec<String>>,
    lost: Mutex<Option<String>>,
    /// Observation and action never overlap on a window.
    io: tokio::sync::Mutex<()>,
    epoch: std::sync::atomic::AtomicU64,
}

/// Releases every key and button XTest holds on the display when dropped armed: the guard of an
/// action whose future may be dropped part-way (a cancelled call).
struct LetGoOnDrop(Option<Display>);

impl Drop for LetGoOnDrop {
    fn drop(&mut self) {
        if let Some(display) = self.0.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(async move {
                let _ = display.run(|c| c.release_all()).await;
            });
        }
    }
}

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

/// Encodes RGBA pixels as PNG.
pub fn encode_png(p: &Pixels) -> Result<Vec<u8>, SurfaceError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, p.width, p.height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(|e| SurfaceError::Internal {
        reason: format!("PNG encoding failed: {e}"),
    })?;
    writer
        .write_image_data(&p.rgba)
        .map_err(|e| SurfaceError::Internal {
            reason: format!("PNG encoding failed: {e}"),
        })?;
    writer.finish().map_err(|e| SurfaceError::Internal {
        reason: format!("PNG encoding failed: {e}"),
    })?;
    Ok(out)
}

/// Encodes RGBA pixels as JPEG.
pub fn encode_jpeg(p: &Pixels, quality: u8) -> Result<Vec<u8>, SurfaceError> {
    let mut out = Vec::new();
    let encoder = jpeg_encoder::Encoder::new(&mut out, quality);
    encoder
        .encode(
            &p.rgba,
            p.width.min(u32::from(u16::MAX)) as u16,
            p.height.min(u32::from(u16::MAX)) as u16,
            jpeg_encoder::ColorType::Rgba,
        )
        .map_err(|e| SurfaceError::Internal {
            reason: format!("JPEG encoding failed: {e}"),
        })?;
    Ok(out)
}

/// Paints `regions` (pixels of `p`) over.
fn mask(p: &mut Pixels, regions: &[Rect]) {
    for r in regions {
        let x0 = r.x.clamp(0, p.width as i32) as u32;
        let y0 = r.y.clamp(0, p.height as i32) as u32;
        let x1 = (r.x + r.width as i32).clamp(0, p.width as i32) as u32;
        let y1 = (r.y + r.height as i32).clamp(0, p.height as i32) as u32;
        for row in y0..y1 {
            let start = ((row * p.width + x0) * 4) as usize;
            let end = ((row * p.width + x1) * 4) as usize;
            for px in p.rgba[start..end].chunks_exact_mut(4) {
                px.copy_from_slice(&surface::MASK_RGBA);
            }
        }
    }
}

/// The outcome of a dispatch: what the receipt says and where the input went.
struct Dispatched {
    receipt: Receipt,
    marker: Option<ActionMarker>,
}

impl DesktopWindow {
    pub(crate) fn new(
        id: String,
        identity: Identity,
        display: Display,
        a11y: Option<A11y>,
        a11y_missing: Option<String>,
        memory: Option<SurfaceMemory>,
    ) -> DesktopWindow {
        let (latest, secrets) = memory
            .and_then(|m| {
                m.0.downcast_ref::<Mutex<WindowMemory>>().map(|w| {
                    let w = lock(w);
                    (w.latest.clone(), w.secrets.clone())
                })
            })
            .unwrap_or_default();
        DesktopWindow {
            id,
            identity,
            screen: false,
            foreground: true,
            display,
            a11y,
            a11y_missing: Mutex::new(a11y_missing),
            root: Mutex::new(None),
            latest: Mutex::new(latest),
            secrets: Mutex::new(secrets),
            lost: Mutex::new(None),
            io: tokio::sync::Mutex::new(()),
            epoch: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The same surface, allowed (or not) to use the display's keyboard and pointer.
    pub(crate) fn with_foreground(mut self, foreground: bool) -> DesktopWindow {
        self.foreground = foreground;
        self
    }

    /// Refuses input through the display's keyboard and pointer when it is not allowed: every
    /// pointer action passes [`Self::on_top`] and every key [`Self::focus`], so this is the one
    /// gate.
    fn foreground_allowed(&self) -> Result<(), SurfaceError> {
        if self.foreground {
            return Ok(());
        }
        Err(refused(
            "foreground input is off for this display (desktop.foreground_input = false): only \
             the application's accessibility actions are used (a click by ref, type into a \
             field, select, a slider); nothing was sent",
        ))
    }

    /// The whole screen of `display` as a surface.
    pub(crate) fn screen(
        id: String,
        display: Display,
        memory: Option<SurfaceMemory>,
    ) -> Result<DesktopWindow, SurfaceError> {
        let root = display.now(|c| Ok(c.root()))?;
        let mut surface = DesktopWindow::new(
            id,
            Identity {
                window: root,
                pid: None,
                class: String::new(),
            },
            display,
            None,
            Some(
                "the whole screen: its windows are refs and points reach the window under them; \
                 for a window's own controls, claim that window"
                    .into(),
            ),
            memory,
        );
        surface.screen = true;
        Ok(surface)
    }

    /// The window's facts now, after checking it is still the same window of the same
    /// application (the screen's: its size).
    async fn current(&self) -> Result<WindowFacts, SurfaceError> {
        if self.screen {
            let (rect, root) = self.display.run(|c| Ok((c.screen(), c.root()))).await?;
            return Ok(WindowFacts {
                window: root,
                name: format!("Screen {}", self.display.name()),
                class: String::new(),
                pid: None,
                rect,
                viewable: true,
            });
        }
        let window = self.identity.window;
        let facts = self.display.run(move |c| Ok(c.facts(window))).await?;
        let Some(facts) = facts else {
            let reason = "the window is gone".to_owned();
            *lock(&self.lost) = Some(reason.clone());
            return Err(SurfaceError::lost(reason));
        };
        if facts.pid != self.identity.pid || facts.class != self.identity.class {
            let reason = "the window id now names another application's window".to_owned();
            *lock(&self.lost) = Some(reason.clone());
            return Err(SurfaceError::lost(reason));
        }
        if !facts.viewable {
            return Err(refused("the window is not mapped (minimised or hidden)"));
        }
        Ok(facts)
    }

    /// The window's top-level accessible, found once and again after it went away.
    async fn root(&self, facts: &WindowFacts) -> Option<ObjRef> {
        if self.screen {
            return None;
        }
        let a11y = self.a11y.as_ref()?;
        if let Some(root) = lock(&self.root).clone() {
            return Some(root);
        }
        match crate::a11y::window_root(a11y, facts.pid, &facts.name, facts.rect).await {
            Ok(Some(root)) => {
                *lock(&self.root) = Some(root.clone());
                *lock(&self.a11y_missing) = None;
                Some(root)
            }
            Ok(None) => {
                *lock(&self.a11y_missing) = Some(
                    "the application exposes no accessibility tree for this window (screenshot only)"
                        .into(),
                );
                None
            }
            Err(e) => {
                *lock(&self.a11y_missing) = Some(format!("AT-SPI: {e}"));
                None
            }
        }
    }

    pub(crate) fn app_origin(&self) -> String {
        if self.screen {
            return model::DESKTOP_ORIGIN.to_owned();
        }
        model::app_origin(&self.identity.class)
    }

    /// The other mapped windows of this window's application (`None` for the screen, or when
    /// the application's process is not known); `baseline`: forget the windows created so far.
    async fn own_windows(&self, baseline: bool) -> Option<Vec<u32>> {
        let pid = self.identity.pid.filter(|_| !self.screen)?;
        let me = self.identity.window;
        let windows = self
            .display
            .run(move |c| {
                if baseline {
                    c.take_created();
                }
                c.windows()
            })
            .await
            .ok()?;
        Some(
            windows
                .into_iter()
                .filter(|w| w.pid == Some(pid) && w.window != me)
                .map(|w| w.window)
                .collect(),
        )
    }

    /// Waits (up to [`OPEN_WAIT`]) for the application to answer a `_NET_WM_PING` sent after the
    /// input; an application that takes no ping is not waited for.
    async fn handled_input(&self) {
        let window = self.identity.window;
        let Ok(Some(stamp)) = self.display.run(move |c| c.ping(window)).await else {
            return;
        };
        let started = Instant::now();
        while started.elapsed() < OPEN_WAIT {
            if self
                .display
                .run(move |c| Ok(c.answered(stamp)))
                .await
                .unwrap_or(true)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The application's windows that were not there `before`: when a top-level was created
    /// during the action, it is waited for (up to [`OPEN_WAIT`]) until it maps, so a dialog a
    /// busy application shows a moment later is not missed; without one, nothing is waited for.
    async fn opened_since(&self, before: &[u32]) -> Vec<String> {
        let created = self
            .display
            .run(|c| Ok(c.take_created()))
            .await
            .unwrap_or_default();
        // Only windows that may be this application's are waited for: one already gone, or
        // owned by another process, is not.
        let pid = self.identity.pid;
        let mut created = created;
        let started = Instant::now();
        loop {
            let new: Vec<u32> = self
                .own_windows(false)
                .await
                .unwrap_or_default()
                .into_iter()
                .filter(|w| !before.contains(w))
                .collect();
            let candidates = created.clone();
            created = self
                .display
                .run(move |c| {
                    Ok(candidates
                        .into_iter()
                        .filter(|w| c.facts(*w).is_some_and(|f| f.pid.is_none() || f.pid == pid))
                        .collect())
                })
                .await
                .unwrap_or_default();
            if !new.is_empty() || created.is_empty() || started.elapsed() > OPEN_WAIT {
                return new.into_iter().map(|w| self.sibling_id(w)).collect();
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The surface id of another window of this display (`x11:<display>:<window id>`).
    fn sibling_id(&self, window: u32) -> String {
        let display = self
            .id
            .rsplit_once(':')
            .map_or(self.id.as_str(), |(prefix, _)| prefix);
        format!("{display}:{window:#x}")
    }

    /// The screen's windows (bottom to top), which has focus, and the layout hash a frame keeps.
    async fn screen_state(&self) -> Result<(Vec<WindowFacts>, Option<u32>, u64), SurfaceError> {
        let (windows, focused) = self
            .display
            .run(|c| Ok((c.windows()?, c.focused_window()?)))
            .await?;
        let layout = model::screen_layout(&windows, focused);
        Ok((windows, focused, layout))
    }

    /// Whether the window has an accessibility tree (after an observation).
    pub fn accessible(&self) -> bool {
        lock(&self.root).is_some()
    }

    /// Observes the window; `keep`: its frame becomes the one actions must name (a preview's
    /// does not: a turn-start preview never makes the agent's frame stale).
    async fn capture(
        &self,
        options: &ObserveOptions,
        keep: bool,
    ) -> Result<Observation, SurfaceError> {
        self.capture_frame(options, keep).await.map(|(o, _)| o)
    }

    /// [`Self::capture`], with the frame it made.
    async fn capture_frame(
        &self,
        options: &ObserveOptions,
        keep: bool,
    ) -> Result<(Observation, Arc<DesktopFrame>), SurfaceError> {
        let facts = self.current().await?;
        let secrets = lock(&self.secrets).clone();
        let origin = self.app_origin();
        let mut tree = None;
        if let Some(root) = self.root(&facts).await {
            let a11y = self
                .a11y
                .as_ref()
                .ok_or_else(|| refused("no accessibility bus"))?;
            match a11y.tree(root).await {
                Ok(t) => tree = Some(t),
                Err(SurfaceError::TargetLost { .. }) => {
                    // The top-level went away (the window was rebuilt): find it again next time.
                    *lock(&self.root) = None;
                }
                Err(e) => return Err(e),
            }
        }
        let (nodes, cut) = tree.unwrap_or_default();
        let (mut built, origin, layout) = if self.screen {
            let (windows, focused, layout) = self.screen_state().await?;
            // Keys reach the focused window's application: that is the frame's identity.
            let origin = windows
                .iter()
                .find(|w| Some(w.window) == focused)
                .map_or_else(|| origin.clone(), |w| model::app_origin(&w.class));
            let built = model::build_screen(&windows, focused, facts.rect, &secrets);
            (built, origin, layout)
        } else {
            let built = model::build(&nodes, facts.rect, &origin, &secrets);
            (built, origin, 0)
        };
        // `near`: the lines around what it names, when the whole tree does not fit.
        let near_missing = options.near.as_ref().map(|n| n.as_str()).filter(|near| {
            model::focus_near(
                &mut built,
                near,
                protocol::limits::ARIA_SNAPSHOT_MAX_CHARS,
                protocol::limits::INTERACTIVE_ELEMENTS_MAX,
            ) == model::Near::NotFound
        });
        let mut screenshot = None;
        // The screen's image is not read through any tree, so nothing in it could be masked:
        // while the surface holds secrets it shows none.
        let withheld = self.screen && !secrets.is_empty() && options.screenshot.is_some();
        if let Some(mime) = options.screenshot.filter(|_| !withheld) {
            let rect = facts.rect;
            let mut pixels = self.display.run(move |c| c.capture(rect)).await?;
            // Secret fields and text that showed a secret are painted over before anyone sees
            // the image.
            let masks: Vec<Rect> = built
                .masks
                .iter()
                .map(|m| Rect {
                    x: m.x - rect.x,
                    y: m.y - rect.y,
                    ..*m
                })
                .collect();
            mask(&mut pixels, &masks);
            let bytes = match mime {
                ImageMime::Png => encode_png(&pixels)?,
                ImageMime::Jpeg => encode_jpeg(&pixels, 80)?,
            };
            screenshot = Some(Screenshot {
                mime,
                data: surface::encode_base64(&bytes),
                width: pixels.width,
                height: pixels.height,
            });
        }
        let frame_id = model::frame_id(
            self.identity.window,
            self.identity.pid,
            facts.rect,
            &built.snapshot,
            screenshot.is_some(),
        )?;
        let frame = Arc::new(DesktopFrame {
            frame_id: frame_id.clone(),
            app_origin: origin.clone(),
            rect: facts.rect,
            canvas_share: built.canvas_share,
            screenshot: screenshot.is_some(),
            refs: built.refs,
            screen: self.screen,
            layout,
        });
        if keep {
            *lock(&self.latest) = Some(frame.clone());
        }
        let epoch = self.epoch.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let title = model::scrub(&protocol::text::printable(&facts.name), &secrets);
        let mut console = Vec::new();
        if let Some(why) = lock(&self.a11y_missing).clone() {
            // Not an error of the app: what the observation can and cannot say.
            console.push(format!("glovebox: {why}"));
        }
        if let Some(near) = near_missing {
            // Said, not silently dropped.
            console.push(format!(
                "glovebox: no line of the window shows {:?}; its tree is kept from the top down",
                protocol::text::truncate_chars(near, 80).0
            ));
        }
        if withheld {
            console.push(
                "glovebox: the screen's image is withheld while this surface holds secrets (it \
                 could show them); observe the window instead"
                    .into(),
            );
        }
        let observation = Observation::bounded(ObservationParts {
            frame_id,
            content_epoch: epoch,
            captured_at: now_ms(),
            target: {
                let id = TabId::new(self.id.clone()).map_err(|e| SurfaceError::Internal {
                    reason: format!("window id: {e}"),
                })?;
                if self.screen {
                    TargetIdentity::x11_screen(id)
                } else {
                    TargetIdentity::x11_window(id)
                }
            },
            url: origin.clone(),
            origin,
            title,
            viewport: Viewport {
                width: f64::from(facts.rect.width),
                height: f64::from(facts.rect.height),
                device_scale_factor: 1.0,
                page_zoom: 1.0,
                scroll_x: 0.0,
                scroll_y: 0.0,
            },
            screenshot,
            aria_snapshot: built.snapshot,
            interactive_elements: built.elements,
            console_errors: console,
            cut: ProducerCuts {
                aria: cut,
                elements: cut,
                console: false,
            },
        });
        Ok((observation, frame))
    }

    fn frame(&self) -> Result<Arc<DesktopFrame>, SurfaceError> {
        lock(&self.latest)
            .clone()
            .ok_or_else(|| SurfaceError::Stale {
                reason: "the window has not been observed".into(),
            })
    }

    /// The screen point a target names, checked against the frame.
    fn point(&self, frame: &DesktopFrame, target: &Target) -> Result<(i32, i32), SurfaceError> {
        match target {
            Target::Ref(e) => {
                let b = frame.bound(&e.element).ok_or_else(|| SurfaceError::Stale {
                    reason: format!("{} is not a ref of this observation", e.element.as_str()),
                })?;
                let visible = b.screen.intersect(&frame.rect).ok_or_else(|| {
                    refused(format!("{} is outside the window", e.element.as_str()))
                })?;
                Ok((
                    visible.x + visible.width as i32 / 2,
                    visible.y + visible.height as i32 / 2,
                ))
            }
            Target::Point(p) => {
                let (x, y) = (p.x as i32, p.y as i32);
                if x >= frame.rect.width as i32 || y >= frame.rect.height as i32 {
                    return Err(refused(format!(
                        "the point ({x}, {y}) is outside the window's {}×{} pixels",
                        frame.rect.width, frame.rect.height
                    )));
                }
                Ok((frame.rect.x + x, frame.rect.y + y))
            }
            Target::Locator(_) => Err(locators_unsupported()),
        }
    }

    /// Refuses a point another window covers: input there would reach that window.
    async fn on_top(&self, x: i32, y: i32) -> Result<(), SurfaceError> {
        self.foreground_allowed()?;
        if self.screen {
            // The screen's input goes to the window under the point: the one its frame saw
            // there (the frame is stale once any window moved, opened, closed or restacked).
            return Ok(());
        }
        let at = self.display.run(move |c| c.window_at(x, y)).await?;
        if at != Some(self.identity.window) {
            return Err(refused(format!(
                "the point ({x}, {y}) of the screen is covered by another window; nothing was sent"
            )));
        }
        Ok(())
    }

    /// Moves keyboard focus to `window` (and `node` in it) and waits for the evidence; keys go
    /// nowhere without it. `None` (the screen's keys with no window named): the window that
    /// has focus keeps it, and there must be one.
    async fn focus(&self, window: Option<u32>, node: Option<&ObjRef>) -> Result<(), SurfaceError> {
        self.foreground_allowed()?;
        let started = Instant::now();
        let focused = self.display.run(|c| c.focused_window()).await?;
        let Some(window) = window else {
            return match focused {
                Some(_) => Ok(()),
                None => Err(refused(
                    "input failed: no window has keyboard focus; nothing was typed (name the window to type into)",
                )),
            };
        };
        if focused != Some(window) {
            self.display.run(move |c| c.activate(window)).await?;
            loop {
                let now = self.display.run(|c| c.focused_window()).await?;
                if now == Some(window) {
                    break;
                }
                if started.elapsed() > FOCUS_WAIT {
                    return Err(refused(format!(
                        "input failed: keyboard focus could not be moved to the window within {} ms \
                         (the display's focus stays on {}); nothing was typed",
                        FOCUS_WAIT.as_millis(),
                        if now.is_some() {
                            "another window"
                        } else {
                            "no window"
                        }
                    )));
                }
                tokio::time::sleep(POLL).await;
            }
        }
        if let (Some(node), Some(a11y)) = (node, &self.a11y) {
            if a11y.states(node).await?.has(state::FOCUSED) {
                return Ok(());
            }
            a11y.grab_focus(node).await?;
            loop {
                if a11y.states(node).await?.has(state::FOCUSED) {
                    break;
                }
                if started.elapsed() > FOCUS_WAIT {
                    return Err(refused(
                        "input failed: the field did not take keyboard focus; nothing was typed",
                    ));
                }
                tokio::time::sleep(POLL).await;
            }
        }
        Ok(())
    }

    async fn click_at(
        &self,
        x: i32,
        y: i32,
        button: Button,
        count: u8,
    ) -> Result<(), SurfaceError> {
        self.display
            .run(move |c| {
                c.move_to(x, y)?;
                c.flush()?;
                for i in 0..count {
                    if i > 0 {
                        std::thread::sleep(INPUT_GAP);
                    }
                    c.button(button, true)?;
                    c.flush()?;
                    std::thread::sleep(INPUT_GAP);
                    c.button(button, false)?;
                    c.flush()?;
                }
                c.sync()
            })
            .await
    }

    /// Presses a chord's keys in order and releases them in reverse.
    async fn chord(&self, keysyms: Vec<u32>) -> Result<(), SurfaceError> {
        self.display
            .run(move |c| {
                let mut codes = Vec::new();
                for k in &keysyms {
                    let (code, shift) = c.keycode(*k)?;
                    if shift && !keysyms.contains(&0xffe1) {
                        let (s, _) = c.keycode(0xffe1)?;
                        codes.push(s);
                    }
                    codes.push(code);
                }
                for code in &codes {
                    c.key(*code, true)?;
                    c.flush()?;
                    std::thread::sleep(INPUT_GAP);
                }
                for code in codes.iter().rev() {
                    c.key(*code, false)?;
                    c.flush()?;
                }
                c.sync()
            })
            .await
    }

    /// Types `text` key by key (any character, through a borrowed key where the layout lacks
    /// it).
    async fn type_keys(&self, text: String) -> Result<(), SurfaceError> {
        self.display
            .run(move |c| {
                let shift = c.keycode(0xffe1)?.0;
                for ch in text.chars() {
                    let (code, with_shift) = c.keycode(keys::char_keysym(ch))?;
                    if with_shift {
                        c.key(shift, true)?;
                    }
                    c.key(code, true)?;
                    c.key(code, false)?;
                    if with_shift {
                        c.key(shift, false)?;
                    }
                    c.flush()?;
                    std::thread::sleep(Duration::from_millis(2));
                    // A borrowed key is remapped for the next character: the server must have
                    // delivered this one first.
                    c.sync()?;
                }
                Ok(())
            })
            .await
    }

    fn marker(
        &self,
        frame: &DesktopFrame,
        kind: MarkerKind,
        points: &[(i32, i32)],
    ) -> ActionMarker {
        ActionMarker {
            kind,
            points: points
                .iter()
                .map(|(x, y)| [f64::from(x - frame.rect.x), f64::from(y - frame.rect.y)])
                .collect(),
            field: None,
            delta: None,
            keys: Vec::new(),
            viewport: [f64::from(frame.rect.width), f64::from(frame.rect.height)],
            scroll: [0.0, 0.0],
        }
    }

    async fn dispatch(
        &self,
        action: &ExtendedAction,
        frame: &DesktopFrame,
    ) -> Result<Dispatched, SurfaceError> {
        let kind = action.kind();
        let expected = action.expected_frame_id().clone();
        let confirmed = |marker| Dispatched {
            receipt: Receipt::confirmed(kind, expected.clone()),
            marker,
        };
        // Sent, and the application did not do it: the receipt says what it shows instead.
        let failed = |why: String, marker| Dispatched {
            receipt: Receipt::failed(kind, expected.clone(), ErrorCode::InvalidAction, true, why),
            marker,
        };
        match action {
            ExtendedAction::Click(a) => {
                let button = match a.button {
                    MouseButton::Left => Button::LEFT,
                    MouseButton::Middle => Button::MIDDLE,
                    MouseButton::Right => Button::RIGHT,
                };
                if a.expect_download {
                    return Err(refused("a desktop window has no download capture"));
                }
                let count = a.click_count.get();
                // By ref, a plain click runs the control's own action through AT-SPI: no pointer,
                // nothing else on the display touched.
                if let Target::Ref(e) = &a.target
                    && let Some(b) = frame.bound(&e.element)
                    && let (Some(obj), Some(a11y)) = (&b.obj, &self.a11y)
                    && !b.actions.is_empty()
                    && count == 1
                    && button == Button::LEFT
                    && a.modifiers.is_empty()
                    && !matches!(b.atspi_role.as_str(), "drawing area" | "canvas")
                {
                    let before = a11y.states(obj).await?;
                    let done = a11y
                        .do_action(obj, &["click", "press", "activate", "toggle", "jump"])
                        .await?;
                    let (x, y) = self.point(frame, &a.target)?;
                    let marker = Some(self.marker(frame, MarkerKind::Click, &[(x, y)]));
                    if !done {
                        return Ok(failed(
                            "the application refused the control's action".into(),
                            marker,
                        ));
                    }
                    if b.checkable {
                        // A checkable control promises a state: the click is confirmed by it.
                        let after = a11y.states(obj).await?;
                        if after.has(state::CHECKED) == before.has(state::CHECKED) {
                            return Ok(Dispatched {
                                receipt: Receipt::dispatched(kind, expected)
                                    .with_note("the control's checked state did not change"),
                                marker,
                            });
                        }
                    }
                    return Ok(confirmed(marker));
                }
                let (x, y) = self.point(frame, &a.target)?;
                self.on_top(x, y).await?;
                let mods = modifier_keysyms(&a.modifiers);
                if !mods.is_empty() {
                    self.focus(self.key_window(frame, Some(&a.target)), None)
                        .await?;
                    self.hold(&mods, true).await?;
                }
                let clicked = self.click_at(x, y, button, count).await;
                if !mods.is_empty() {
                    self.hold(&mods, false).await?;
                }
                clicked?;
                Ok(Dispatched {
                    receipt: Receipt::dispatched(kind, expected),
                    marker: Some(self.marker(frame, MarkerKind::Click, &[(x, y)])),
                })
            }
            ExtendedAction::Hover(a) => {
                let (x, y) = self.point(frame, &a.target)?;
                self.on_top(x, y).await?;
                self.display
                    .run(move |c| {
                        c.move_to(x, y)?;
                        c.sync()
                    })
                    .await?;
                Ok(confirmed(Some(self.marker(
                    frame,
                    MarkerKind::Hover,
                    &[(x, y)],
                ))))
            }
            ExtendedAction::Type(a) => {
                let target = Target::from(a.target.clone());
                let Target::Ref(e) = &target else {
                    return Err(locators_unsupported());
                };
                let b = frame.bound(&e.element).ok_or_else(|| SurfaceError::Stale {
                    reason: format!("{} is not a ref of this observation", e.element.as_str()),
                })?;
                let (Some(obj), Some(a11y)) = (&b.obj, &self.a11y) else {
                    return Err(refused(
                        "the window has no accessible fields: click the field and press keys",
                    ));
                };
                let text = a.text.as_str().to_owned();
                if b.ranged && !b.editable {
                    // A slider takes its number through AT-SPI Value, read back.
                    let wanted: f64 = text.trim().parse().map_err(|_| {
                        refused(format!("{} is a slider: type a number", e.element.as_str()))
                    })?;
                    a11y.set_value(obj, wanted).await?;
                    let now = a11y.value(obj).await?;
                    let marker = Some(self.marker(frame, MarkerKind::Type, &[]));
                    if (now - wanted).abs() < 1e-6 {
                        return Ok(confirmed(marker));
                    }
                    return Ok(failed(
                        format!("the slider holds {now}, not {wanted} (outside its range?)"),
                        marker,
                    ));
                }
                let single_line = !a11y.states(obj).await?.has(state::MULTI_LINE);
                // What the field must hold afterwards: a single-line field takes no line breaks
                // (they are Enter, which activates).
                let expect: String = if single_line {
                    text.chars().filter(|c| *c != '\n' && *c != '\r').collect()
                } else {
                    text.clone()
                };
                let enters = single_line && protocol::keys::text_presses_enter(&text);
                let mut marker = self.marker(frame, MarkerKind::Type, &[]);
                marker.field = Some([
                    f64::from(b.screen.x - frame.rect.x),
                    f64::from(b.screen.y - frame.rect.y),
                    f64::from(b.screen.width),
                    f64::from(b.screen.height),
                ]);
                let mode = surface::Typing::from(a.mode);
                let mut typed_by_ax = false;
                if mode != surface::Typing::Keystrokes && b.editable && !enters {
                    typed_by_ax = a11y.set_text(obj, &expect).await.unwrap_or(false)
                        && a11y.text(obj).await.ok().as_deref() == Some(expect.as_str());
                    if !typed_by_ax && mode == surface::Typing::Paste {
                        return Ok(failed(
                            "input failed: the field did not take the text".into(),
                            Some(marker),
                        ));
                    }
                }
                if !typed_by_ax {
                    if !b.editable {
                        return Err(refused(format!(
                            "{} is not an editable field",
                            e.element.as_str()
                        )));
                    }
                    self.focus(Some(self.identity.window), Some(obj)).await?;
                    // Replace what the field holds, as `type` does everywhere.
                    self.chord(vec![0xffe3, u32::from(b'a')]).await?;
                    self.type_keys(text.clone()).await?;
                }
                // Read back: the field holds the text, or the action failed with the evidence.
                let mut held = a11y.text(obj).await.unwrap_or_default();
                let started = Instant::now();
                while held != expect && started.elapsed() < Duration::from_millis(500) {
                    tokio::time::sleep(POLL).await;
                    held = a11y.text(obj).await.unwrap_or_default();
                }
                let receipt = if held == expect || (enters && held.is_empty()) {
                    Receipt::confirmed(kind, expected)
                } else {
                    Receipt::failed(
                        kind,
                        expected,
                        ErrorCode::InvalidAction,
                        true,
                        format!(
                            "input failed: the field holds {} characters, not the {} typed",
                            held.chars().count(),
                            expect.chars().count()
                        ),
                    )
                };
                Ok(Dispatched {
                    receipt,
                    marker: Some(marker),
                })
            }
            ExtendedAction::Press(a) => {
                let node = self.element_node(frame, Some(&a.target))?;
                let chord = keys::chord(a.key.as_str())
                    .ok_or_else(|| refused(format!("no key is named {:?}", a.key.as_str())))?;
                let window = self.element_window(frame, Some(&a.target));
                self.focus(window, node.as_ref()).await?;
                self.chord(chord).await?;
                let mut marker = self.marker(frame, MarkerKind::Key, &[]);
                marker.keys = vec![a.key.as_str().to_owned()];
                Ok(Dispatched {
                    receipt: Receipt::dispatched(kind, expected),
                    marker: Some(marker),
                })
            }
            ExtendedAction::KeyDown(a) | ExtendedAction::KeyUp(a) => {
                let node = self.element_node(frame, a.target.as_ref())?;
                let keysym = keys::key_keysym(a.key.as_str())
                    .ok_or_else(|| refused(format!("no key is named {:?}", a.key.as_str())))?;
                let down = matches!(action, ExtendedAction::KeyDown(_));
                let window = self.element_window(frame, a.target.as_ref());
                self.focus(window, node.as_ref()).await?;
                self.display
                    .run(move |c| {
                        let (code, _) = c.keycode(keysym)?;
                        c.key(code, down)?;
                        c.sync()
                    })
                    .await?;
                let mut marker = self.marker(frame, MarkerKind::Key, &[]);
                marker.keys = vec![a.key.as_str().to_owned()];
                Ok(Dispatched {
                    receipt: Receipt::dispatched(kind, expected),
                    marker: Some(marker),
                })
            }
            ExtendedAction::Scroll(a) => {
                let (x, y) = match &a.target {
                    Some(t) => self.point(frame, &Target::from(t.clone()))?,
                    None => (
                        frame.rect.x + frame.rect.width as i32 / 2,
                        frame.rect.y + frame.rect.height as i32 / 2,
                    ),
                };
                self.on_top(x, y).await?;
                let (dx, dy) = (a.delta.x_px(), a.delta.y_px());
                // One wheel click scrolls about 40 pixels in GTK and Qt.
                let steps = |d: i32| {
                    ((d.unsigned_abs() as f64 / 40.0).round() as u32).clamp(u32::from(d != 0), 50)
                };
                let (sx, sy) = (steps(dx), steps(dy));
                self.display
                    .run(move |c| {
                        c.move_to(x, y)?;
                        let vb = if dy > 0 {
                            Button::WHEEL_DOWN
                        } else {
                            Button::WHEEL_UP
                        };
                        let hb = if dx > 0 {
                            Button::WHEEL_RIGHT
                        } else {
                            Button::WHEEL_LEFT
                        };
                        for (b, n) in [(vb, sy), (hb, sx)] {
                            for _ in 0..n {
                                c.button(b, true)?;
                                c.button(b, false)?;
                                c.flush()?;
                                std::thread::sleep(INPUT_GAP);
                            }
                        }
                        c.sync()
                    })
                    .await?;
                let mut marker = self.marker(frame, MarkerKind::Scroll, &[(x, y)]);
                marker.delta = Some([f64::from(dx), f64::from(dy)]);
                Ok(Dispatched {
                    receipt: Receipt::dispatched(kind, expected),
                    marker: Some(marker),
                })
            }
            ExtendedAction::Drag(a) => {
                let from = self.point(frame, &a.source)?;
                let to = self.point(frame, &a.destination)?;
                let mut path: Vec<(i32, i32)> = vec![from];
                path.extend(
                    a.path
                        .as_slice()
                        .iter()
                        .map(|w| (frame.rect.x + w.x as i32, frame.rect.y + w.y as i32)),
                );
                path.push(to);
                for (x, y) in &path {
                    if !frame.rect.contains(*x, *y) {
                        return Err(refused("a drag point is outside the window"));
                    }
                    self.on_top(*x, *y).await?;
                }
                let moves = path.clone();
                self.display
                    .run(move |c| {
                        c.move_to(moves[0].0, moves[0].1)?;
                        c.flush()?;
                        std::thread::sleep(INPUT_GAP);
                        c.button(Button::LEFT, true)?;
                        c.flush()?;
                        for pair in moves.windows(2) {
                            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
                            // Intermediate motion so the application sees a drag, not a jump.
                            for i in 1..=8 {
                                let x = x0 + (x1 - x0) * i / 8;
                                let y = y0 + (y1 - y0) * i / 8;
                                c.move_to(x, y)?;
                                c.flush()?;
                                std::thread::sleep(INPUT_GAP);
                            }
                        }
                        c.button(Button::LEFT, false)?;
                        c.sync()
                    })
                    .await?;
                Ok(Dispatched {
                    receipt: Receipt::dispatched(kind, expected),
                    marker: Some(self.marker(frame, MarkerKind::Drag, &path)),
                })
            }
            ExtendedAction::Wait(a) => {
                tokio::time::sleep(Duration::from_millis(u64::from(a.duration_ms.get()))).await;
                Ok(confirmed(None))
            }
            ExtendedAction::Select(a) => {
                let protocol::extended::SelectChoice::One(value) = &a.choice else {
                    return Err(refused(
                        "a desktop list takes one option per select: choose them one at a time",
                    ));
                };
                let e = a.target.element_ref().ok_or_else(locators_unsupported)?;
                let b = frame.bound(&e.element).ok_or_else(|| SurfaceError::Stale {
                    reason: format!("{} is not a ref of this observation", e.element.as_str()),
                })?;
                let (Some(obj), Some(a11y), true) = (&b.obj, &self.a11y, b.selectable) else {
                    return Err(refused(format!(
                        "{} is not a list whose options the application exposes: click it, then the option",
                        e.element.as_str()
                    )));
                };
                // On the desktop an option's value is its name, as the application shows it.
                let options = a11y.options(obj).await?;
                let Some(index) = options.iter().position(|o| o == value.as_str()) else {
                    return Err(refused(format!(
                        "{} has no option named {:?} ({} options)",
                        e.element.as_str(),
                        value.as_str(),
                        options.len()
                    )));
                };
                let (x, y) = self.point(frame, &Target::Ref(e.clone()))?;
                let marker = Some(self.marker(frame, MarkerKind::Click, &[(x, y)]));
                let done = a11y.select_child(obj, index).await?;
                // Read back: the list holds the option, or the action failed with the evidence.
                let mut chosen = a11y.selected(obj).await?;
                let started = Instant::now();
                while chosen.as_deref() != Some(value.as_str())
                    && started.elapsed() < Duration::from_millis(500)
                {
                    tokio::time::sleep(POLL).await;
                    chosen = a11y.selected(obj).await?;
                }
                if done && chosen.as_deref() == Some(value.as_str()) {
                    return Ok(confirmed(marker));
                }
                Ok(failed(
                    (if chosen.is_some() {
                        "the list holds another option than the one chosen"
                    } else {
                        "the list holds no option after the choice"
                    })
                    .into(),
                    marker,
                ))
            }
            ExtendedAction::Navigate(_) => Err(refused("a desktop window cannot be navigated")),
            ExtendedAction::Upload(_) => Err(refused("a desktop window takes no uploads")),
            ExtendedAction::Dialog(_) => Err(refused(
                "a desktop window has no JavaScript dialogs: act on the dialog window itself",
            )),
        }
    }

    fn element_node(
        &self,
        frame: &DesktopFrame,
        target: Option<&protocol::extended::ElementSpec>,
    ) -> Result<Option<ObjRef>, SurfaceError> {
        let Some(target) = target else {
            return Ok(None);
        };
        let Some(e) = target.element_ref() else {
            return Err(locators_unsupported());
        };
        let b = frame.bound(&e.element).ok_or_else(|| SurfaceError::Stale {
            reason: format!("{} is not a ref of this observation", e.element.as_str()),
        })?;
        Ok(b.obj.clone())
    }

    /// The window keys go to for an action at `target`: this window; on the screen, the window
    /// the target names (a window's ref, or the topmost window under a point as observed),
    /// else whichever has focus (`None`).
    fn key_window(&self, frame: &DesktopFrame, target: Option<&Target>) -> Option<u32> {
        if !self.screen {
            return Some(self.identity.window);
        }
        match target? {
            Target::Ref(e) => frame.bound(&e.element).and_then(|b| b.window),
            Target::Point(p) => frame
                .bound_at(f64::from(p.x), f64::from(p.y))
                .and_then(|b| b.window),
            Target::Locator(_) => None,
        }
    }

    /// [`Self::key_window`] for a key action's element.
    fn element_window(
        &self,
        frame: &DesktopFrame,
        target: Option<&protocol::extended::ElementSpec>,
    ) -> Option<u32> {
        if !self.screen {
            return Some(self.identity.window);
        }
        let e = target?.element_ref()?;
        frame.bound(&e.element).and_then(|b| b.window)
    }

    async fn hold(&self, keysyms: &[u32], down: bool) -> Result<(), SurfaceError> {
        let keysyms = keysyms.to_vec();
        self.display
            .run(move |c| {
                for k in keysyms {
                    let (code, _) = c.keycode(k)?;
                    c.key(code, down)?;
                }
                c.sync()
            })
            .await
    }
}

fn locators_unsupported() -> SurfaceError {
    refused("a locator reaches only an element of the window: use a ref from the observation")
}

/// How many candidates an ambiguous locator's error lists.
const LISTED: usize = 8;

/// Whether `candidate` matches `wanted` as `protocol::extended::locator` says: whitespace folded
/// on both sides; `exact`: the case-sensitive whole string, else a case-insensitive substring.
fn text_matches(candidate: &str, wanted: &str, exact: bool) -> bool {
    let (c, w) = (
        protocol::text::fold_whitespace(candidate),
        protocol::text::fold_whitespace(wanted),
    );
    if exact {
        c == w
    } else {
        c.to_lowercase().contains(&w.to_lowercase())
    }
}

/// The one element of `frame` a locator names (role and name, label, text), or an error: none
/// matches, or several do (listed with their refs, never a guess). Windows have no frames and
/// no test ids.
fn locate_in(
    frame: &DesktopFrame,
    locator: &Locator,
) -> Result<protocol::ElementRef, SurfaceError> {
    if locator.frame().is_some() {
        return Err(refused("a desktop window has no frames to enter"));
    }
    let (what, matches): (String, Vec<&(protocol::ElementRef, model::Bound)>) = match locator {
        Locator::Role {
            role, name, exact, ..
        } => (
            format!(
                "role {}{}",
                role.as_str(),
                name.as_ref()
                    .map(|n| format!(" named {:?}", n.as_str()))
                    .unwrap_or_default()
            ),
            frame
                .refs
                .iter()
                .filter(|(_, b)| {
                    b.facts.role == role.as_str()
                        && name
                            .as_ref()
                            .is_none_or(|n| text_matches(&b.facts.name, n.as_str(), *exact))
                })
                .collect(),
        ),
        Locator::Label { text, exact, .. } => (
            format!("the label {:?}", text.as_str()),
            frame
                .refs
                .iter()
                .filter(|(_, b)| {
                    (b.editable
                        || b.checkable
                        || b.selectable
                        || b.ranged
                        || matches!(
                            b.facts.role.as_str(),
                            "textbox" | "combobox" | "spinbutton" | "slider"
                        ))
                        && text_matches(&b.facts.name, text.as_str(), *exact)
                })
                .collect(),
        ),
        Locator::Text { text, exact, .. } => (
            format!("the text {:?}", text.as_str()),
            frame
                .refs
                .iter()
                .filter(|(_, b)| text_matches(&b.facts.name, text.as_str(), *exact))
                .collect(),
        ),
        Locator::TestId { .. } => {
            return Err(refused(
                "a desktop window has no test ids: locate by role, label or text",
            ));
        }
    };
    match matches.as_slice() {
        [] => Err(refused(format!("no element of the window matches {what}"))),
        [(e, _)] => Ok(e.clone()),
        many => {
            let listed: Vec<String> = many
                .iter()
                .take(LISTED)
                .map(|(e, b)| format!("{} \"{}\" [{}]", b.facts.role, b.facts.name, e.as_str()))
                .collect();
            let more = if many.len() > LISTED {
                format!(", and {} more", many.len() - LISTED)
            } else {
                String::new()
            };
            Err(refused(format!(
                "{} elements match {what}; make it more specific (exact, a name) or use a ref: {}{more}",
                many.len(),
                listed.join("; ")
            )))
        }
    }
}

/// `action` with every locator replaced by the ref it names in `frame`, so the action runs as
/// by ref.
fn resolve_locators(
    action: &ExtendedAction,
    frame: &DesktopFrame,
) -> Result<ExtendedAction, SurfaceError> {
    use protocol::ElementTarget;
    use protocol::extended::ElementSpec;
    let spec = |s: &mut ElementSpec| -> Result<(), SurfaceError> {
        if let ElementSpec::Locator(l) = s {
            *s = ElementSpec::Ref(ElementTarget {
                element: locate_in(frame, l)?,
            });
        }
        Ok(())
    };
    let target = |t: &mut Target| -> Result<(), SurfaceError> {
        if let Target::Locator(l) = t {
            *t = Target::Ref(ElementTarget {
                element: locate_in(frame, l)?,
            });
        }
        Ok(())
    };
    let mut a = action.clone();
    match &mut a {
        ExtendedAction::Click(x) => target(&mut x.target)?,
        ExtendedAction::Hover(x) => target(&mut x.target)?,
        ExtendedAction::Type(x) => spec(&mut x.target)?,
        ExtendedAction::Press(x) => spec(&mut x.target)?,
        ExtendedAction::Select(x) => spec(&mut x.target)?,
        ExtendedAction::Upload(x) => spec(&mut x.target)?,
        ExtendedAction::KeyDown(x) | ExtendedAction::KeyUp(x) => {
            if let Some(t) = &mut x.target {
                spec(t)?;
            }
        }
        ExtendedAction::Scroll(x) => {
            if let Some(t) = &mut x.target {
                spec(t)?;
            }
        }
        ExtendedAction::Drag(x) => {
            target(&mut x.source)?;
            target(&mut x.destination)?;
        }
        ExtendedAction::Navigate(_) | ExtendedAction::Wait(_) | ExtendedAction::Dialog(_) => {}
    }
    Ok(a)
}

fn modifier_keysyms(m: &protocol::extended::Modifiers) -> Vec<u32> {
    use protocol::extended::Modifier;
    m.iter()
        .map(|m| match m {
            Modifier::Alt => 0xffe9,
            Modifier::Control => 0xffe3,
            Modifier::Meta => 0xffeb,
            Modifier::Shift => 0xffe1,
        })
        .collect()
}

impl Surface for DesktopWindow {
    fn id(&self) -> &str {
        &self.id
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
                    what: "observing the window".into(),
                    after_ms: options.deadline.as_millis() as u64,
                })?
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
                Ok(Ok(o)) => Preview::ready(protocol::PreviewParts {
                    preview_frame_id: o.frame_id().clone(),
                    content_epoch: o.content_epoch(),
                    captured_at: o.captured_at(),
                    title: o.title().to_owned(),
                    origin: o.origin().to_owned(),
                    visible_text: surface::snapshot_text(o.aria_snapshot()).join(" "),
                    aria_landmarks: Vec::new(),
                    interactive_count: o.interactive_elements().len() as u32,
                }),
                _ => Preview::unavailable(String::new(), self.app_origin(), now_ms()),
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
            let frame = self.frame()?;
            if &frame.frame_id != action.expected_frame_id() {
                return Err(SurfaceError::Stale {
                    reason: "the frame is not the window's latest observation".into(),
                });
            }
            let facts = self.current().await?;
            if facts.rect != frame.rect {
                return Err(SurfaceError::Stale {
                    reason: "the window moved or changed size since it was observed".into(),
                });
            }
            if self.screen && self.screen_state().await?.2 != frame.layout {
                return Err(SurfaceError::Stale {
                    reason: "a window on the screen moved, opened, closed, was restacked or \
                             took focus since it was observed"
                        .into(),
                });
            }
            // The application's windows before: one it opens during the action (a dialog) is
            // bound as a new surface, never taken for this one.
            let before = self.own_windows(true).await;
            let started = Instant::now();
            // A call cancelled part-way (its future dropped) lets go of what it held down too.
            let mut letgo = LetGoOnDrop(Some(self.display.clone()));
            // Locators resolve afresh against the window as it is now (exactly one match), and
            // the action then runs as by ref on that reading.
            let (action, frame) = if action
                .targets()
                .any(|t| matches!(t, protocol::extended::TargetRef::Locator(_)))
            {
                let (_, live) = self
                    .capture_frame(&ObserveOptions::default(), false)
                    .await?;
                (
                    std::borrow::Cow::Owned(resolve_locators(action, &live)?),
                    live,
                )
            } else {
                (std::borrow::Cow::Borrowed(action), frame)
            };
            let action: &ExtendedAction = &action;
            let dispatched = tokio::time::timeout(options.deadline, self.dispatch(action, &frame))
                .await
                .map_err(|_| SurfaceError::Timeout {
                    what: format!("the {} action", action.kind()),
                    after_ms: options.deadline.as_millis() as u64,
                });
            // Finished, one way or the other: the failures below let go themselves.
            letgo.0 = None;
            let dispatched = match dispatched {
                Ok(r) => r,
                Err(e) => {
                    // Whatever the action held down is let go.
                    let _ = self.display.run(|c| c.release_all()).await;
                    return Err(e);
                }
            };
            let dispatched = match dispatched {
                Ok(d) => d,
                Err(e) => {
                    let _ = self.display.run(|c| c.release_all()).await;
                    return Err(e);
                }
            };
            let settle = started.elapsed();
            // Wait until the application has handled the input (its answer to a ping sent after
            // it): a window the input made it create is known from here, however loaded the
            // machine (a dialog was missed when the application took longer than a fixed pause).
            self.handled_input().await;
            // Let the application draw what the input did before the fresh observation.
            tokio::time::sleep(Duration::from_millis(60)).await;
            let opened = match before {
                Some(before) => self.opened_since(&before).await,
                None => Vec::new(),
            };
            let observed_at = Instant::now();
            let observation = self.capture(&options.observe, true).await.ok();
            Ok(ActOutcome {
                action: action.kind(),
                receipt: dispatched.receipt,
                observation,
                opened,
                dialog: None,
                downloads: Vec::new(),
                marker: dispatched.marker,
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
        locator: &'a Locator,
    ) -> BoxFuture<'a, Option<LocatedFacts>> {
        Box::pin(async move {
            // Afresh, as the action will resolve it: the window as it is now.
            let (_, live) = {
                let _io = self.io.lock().await;
                self.capture_frame(&ObserveOptions::default(), false)
                    .await
                    .ok()?
            };
            let element = locate_in(&live, locator).ok()?;
            let b = live.bound(&element)?;
            Some(LocatedFacts {
                role: b.facts.role.clone(),
                name: b.facts.name.clone(),
                secret: b.facts.secret_field,
                structure: Some(b.facts.structure.clone()),
            })
        })
    }

    fn release_input(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move { self.display.run(|c| c.release_all()).await })
    }

    fn surface_kind(&self) -> Option<protocol::SurfaceKind> {
        Some(if self.screen {
            protocol::SurfaceKind::X11Screen
        } else {
            protocol::SurfaceKind::X11Window
        })
    }

    fn input_routes(&self) -> Vec<InputRoute> {
        let xtest = self.foreground && self.display.now(|c| Ok(c.has_xtest())).unwrap_or(false);
        model::input_routes(lock(&self.lost).is_none(), self.accessible(), xtest)
    }

    fn dialog(&self) -> Option<Dialog> {
        None
    }

    fn detach(&self, _deadline: Duration) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            // Nothing stays held by an attachment that ends.
            self.display.run(|c| c.release_all()).await
        })
    }

    fn memory(&self) -> SurfaceMemory {
        SurfaceMemory(Arc::new(Mutex::new(WindowMemory {
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
