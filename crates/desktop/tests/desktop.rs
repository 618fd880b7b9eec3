//! The desktop adapter against a real X server (Xvfb), a real session bus with the real AT-SPI
//! registry, and a real GTK application that logs every event it receives
//! (`tests/apps/gtk_app.py`). Each test brings up its own stack and tears it down.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use desktop::{DesktopAdapter, DesktopConfig, Stack, StackOptions};
use protocol::{ErrorCode, ExtendedAction, ImageMime, InputRoute, Observation, ReceiptState};
use serde_json::{Value, json};
use surface::{ActOptions, ObserveOptions, Surface, SurfaceAdapter, SurfaceError};

struct Desk {
    stack: Stack,
    adapter: DesktopAdapter,
    dir: PathBuf,
}

struct App {
    log: PathBuf,
    surface: Arc<dyn Surface>,
}

fn app_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/apps/gtk_app.py")
}

impl Desk {
    async fn start(window_manager: bool) -> Desk {
        let stack = Stack::start(&StackOptions {
            window_manager,
            ..StackOptions::default()
        })
        .unwrap_or_else(|e| panic!("the desktop stack did not start: {e}"));
        let adapter = DesktopAdapter::new(DesktopConfig {
            display: stack.display.clone(),
            session_bus: Some(stack.session_bus.clone()),
            foreground_input: true,
        });
        adapter.connect().await.expect("connect to the display");
        let dir = stack.runtime_dir.join("logs");
        std::fs::create_dir_all(&dir).unwrap();
        Desk {
            stack,
            adapter,
            dir,
        }
    }

    /// Starts the test app titled `title` at (x, y) and attaches to its window once the window
    /// is listed and its accessibility tree shows the entry.
    async fn app(&mut self, title: &str, x: i32, y: i32) -> App {
        self.app_with(title, x, y, &[]).await
    }

    /// [`Desk::app`] with more arguments for the app.
    async fn app_with(&mut self, title: &str, x: i32, y: i32, extra: &[&str]) -> App {
        self.app_showing(title, x, y, extra, "textbox \"Name\"")
            .await
    }

    /// [`Desk::app_with`], ready once its snapshot shows `ready`.
    async fn app_showing(
        &mut self,
        title: &str,
        x: i32,
        y: i32,
        extra: &[&str],
        ready: &str,
    ) -> App {
        let log = self.dir.join(format!("{}.log", title.replace(' ', "_")));
        let mut command = self.stack.command("/usr/bin/python3");
        command
            .arg(app_script())
            .args([
                "--title",
                title,
                "--x",
                &x.to_string(),
                "--y",
                &y.to_string(),
            ])
            .args(extra)
            .env("GLOVEBOX_APP_LOG", &log);
        self.stack.spawn(command).expect("start the GTK app");
        let started = Instant::now();
        loop {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the app's window {title:?} did not appear with its tree"
            );
            let listed = self.adapter.list().await.expect("list windows");
            if let Some(info) = listed.iter().find(|w| w.title == title) {
                let surface = self
                    .adapter
                    .attach(info.id.clone(), None)
                    .await
                    .expect("attach");
                if let Ok(o) = surface.observe(&ObserveOptions::default()).await
                    && o.aria_snapshot().contains(ready)
                    && std::fs::read_to_string(&log).is_ok_and(|l| l.contains("\"ready\""))
                {
                    return App { log, surface };
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl App {
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits (up to 5 s) until the app logged an event `matches` accepts.
    async fn wait_until(&self, matches: impl Fn(&Value) -> bool) {
        let started = Instant::now();
        while !self.events().iter().any(&matches) {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the app never logged it: {:?}",
                self.events()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn count(&self, event: &str) -> usize {
        self.events().iter().filter(|e| e["event"] == event).count()
    }

    async fn observe(&self) -> Observation {
        self.surface
            .observe(&ObserveOptions::default())
            .await
            .expect("observe")
    }

    async fn act(&self, action: Value) -> Result<surface::ActOutcome, SurfaceError> {
        let action: ExtendedAction = serde_json::from_value(action).expect("a valid action");
        self.surface.act(&action, &ActOptions::default()).await
    }

    /// Waits (bounded) until the app logged `event` `n` times.
    async fn wait_for(&self, event: &str, n: usize) {
        let started = Instant::now();
        while self.count(event) < n {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the app never logged {event} ×{n}: {:?}",
                self.events()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The ref of the element with `role` and `name` in `o`.
fn ref_of(o: &Observation, role: &str, name: &str) -> String {
    o.interactive_elements()
        .iter()
        .find(|e| e.role() == role && e.name() == name)
        .unwrap_or_else(|| panic!("no {role} {name:?} in\n{}", o.aria_snapshot()))
        .element()
        .as_str()
        .to_owned()
}

fn frame(o: &Observation) -> String {
    o.frame_id().as_str().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_and_submitted_by_refs_and_verified_through_atspi() {
    let mut desk = Desk::start(false).await;
    let app = desk.app("Form app", 40, 40).await;
    let o = app.observe().await;
    assert_eq!(o.title(), "Form app");
    assert_eq!(o.origin(), "app://gtk-app.py");
    let name = ref_of(&o, "textbox", "Name");
    let out = app
        .act(json!({"type": "type", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": name}, "text": "Ada Lovelace", "intent": "fill the name"}))
        .await
        .expect("type");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        out.receipt
    );
    let o = out.observation.expect("a fresh observation");
    assert!(
        o.aria_snapshot().contains("textbox \"Name\""),
        "{}",
        o.aria_snapshot()
    );
    assert!(
        o.aria_snapshot().contains(": \"Ada Lovelace\""),
        "{}",
        o.aria_snapshot()
    );

    let check = ref_of(&o, "checkbox", "Subscribe");
    let out = app
        .act(json!({"type": "click", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": check}, "intent": "subscribe"}))
        .await
        .expect("click the checkbox");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        out.receipt
    );
    let o = out.observation.expect("observation");
    assert!(
        o.interactive_elements()
            .iter()
            .any(|e| e.name() == "Subscribe" && e.states().iter().any(|s| s == "checked")),
        "{}",
        o.aria_snapshot()
    );

    let submit = ref_of(&o, "button", "Submit");
    let out = app
        .act(json!({"type": "click", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": submit}, "intent": "submit"}))
        .await
        .expect("click submit");
    assert_eq!(out.receipt.state(), ReceiptState::Confirmed);
    app.wait_for("submit", 1).await;
    let submitted = app
        .events()
        .into_iter()
        .find(|e| e["event"] == "submit")
        .unwrap();
    assert_eq!(submitted["text"], "Ada Lovelace");
    assert_eq!(submitted["subscribed"], true);
    let o = app.observe().await;
    assert!(
        o.aria_snapshot().contains("\"Submitted Ada Lovelace\""),
        "{}",
        o.aria_snapshot()
    );

    // A stale frame is refused and nothing reaches the app.
    let err = app
        .act(
            json!({"type": "click", "expected_frame_id": "frame_0000000000000001",
            "target": {"kind": "element", "ref": submit}, "intent": "submit again"}),
        )
        .await
        .expect_err("a stale frame");
    assert_eq!(err.code(), ErrorCode::StaleObservation);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(app.count("submit"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screenshot_maps_back_to_the_window_and_a_canvas_drag_reaches_the_app() {
    let mut desk = Desk::start(false).await;
    let app = desk.app("Canvas app", 30, 20).await;
    let o = app
        .surface
        .observe(&ObserveOptions {
            screenshot: Some(ImageMime::Png),
            ..ObserveOptions::default()
        })
        .await
        .expect("observe with a screenshot");
    let shot = o.screenshot().expect("a screenshot");
    assert_eq!(f64::from(shot.width), o.viewport().width);
    assert_eq!(f64::from(shot.height), o.viewport().height);
    let canvas = o
        .interactive_elements()
        .iter()
        .find(|e| e.role() == "canvas")
        .unwrap_or_else(|| panic!("no canvas in\n{}", o.aria_snapshot()));
    let _ = canvas;
    // The canvas's box, from the frame record the runtime judges by.
    let record = app.surface.latest_frame().expect("a frame record");
    let facts = record
        .targets()
        .find(|t| t.role == "canvas")
        .expect("the canvas's facts");
    let [bx, by, bw, bh] = facts.bounds;
    let (x0, y0) = ((bx + 40.0) as u32, (by + 30.0) as u32);
    let (x1, y1) = ((bx + bw - 40.0) as u32, (by + bh - 30.0) as u32);
    let out = app
        .act(json!({"type": "drag", "expected_frame_id": frame(&o),
            "source": {"kind": "point", "x": x0, "y": y0},
            "destination": {"kind": "point", "x": x1, "y": y1},
            "path": [{"x": (x0 + x1) / 2, "y": y0}], "intent": "draw a stroke"}))
        .await
        .expect("drag");
    assert_eq!(out.receipt.state(), ReceiptState::Dispatched);
    app.wait_for("canvas_release", 1).await;
    let events = app.events();
    let press = events
        .iter()
        .find(|e| e["event"] == "canvas_press")
        .unwrap();
    let release = events
        .iter()
        .find(|e| e["event"] == "canvas_release")
        .unwrap();
    // The app's own coordinates are the canvas's: the point read off the image landed exactly.
    let near = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() <= 1.0;
    assert!(
        near(&press["x"], f64::from(x0) - bx) && near(&press["y"], f64::from(y0) - by),
        "{press}"
    );
    assert!(
        near(&release["x"], f64::from(x1) - bx) && near(&release["y"], f64::from(y1) - by),
        "{release}"
    );
    // The app saw the stroke move through its path, not jump to its end.
    let motions: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "canvas_motion")
        .collect();
    assert!(!motions.is_empty(), "{events:?}");
    assert!(
        motions
            .iter()
            .any(|m| m["x"].as_f64().unwrap() < f64::from(x1) - bx - 5.0),
        "{motions:?}"
    );
}

async fn typed_text_lands_only_in_the_target(window_manager: bool) {
    let mut desk = Desk::start(window_manager).await;
    let target = desk.app("Target app", 20, 20).await;
    let other = desk.app("Other app", 600, 20).await;
    // The other window holds focus first: give it focus with a click into its field.
    let o = other.observe().await;
    let field = ref_of(&o, "textbox", "Name");
    let out = other
        .act(json!({"type": "type", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": field}, "text": "keep", "mode": "keystrokes",
            "intent": "focus the other window"}))
        .await
        .expect("type into the other window");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        out.receipt
    );
    let other_keys = other.count("key_press");
    assert!(other_keys >= 4);

    let o = target.observe().await;
    let field = ref_of(&o, "textbox", "Name");
    let out = target
        .act(json!({"type": "type", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": field}, "text": "Grace Hopper", "mode": "keystrokes",
            "intent": "type with real keys"}))
        .await
        .expect("type into the target");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        out.receipt
    );
    let o = out.observation.unwrap();
    assert!(
        o.aria_snapshot().contains(": \"Grace Hopper\""),
        "{}",
        o.aria_snapshot()
    );
    assert!(target.count("key_press") >= 12);
    // Not one key reached the other window, and its text is unchanged.
    assert_eq!(other.count("key_press"), other_keys);
    let o = other.observe().await;
    assert!(
        o.aria_snapshot().contains(": \"keep\""),
        "{}",
        o.aria_snapshot()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_text_lands_only_in_the_target_window_without_a_window_manager() {
    typed_text_lands_only_in_the_target(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_text_lands_only_in_the_target_window_under_openbox() {
    typed_text_lands_only_in_the_target(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_on_a_point_another_window_covers_is_refused() {
    let mut desk = Desk::start(false).await;
    let below = desk.app("Below app", 20, 20).await;
    let o = below.observe().await;
    let record = below.surface.latest_frame().unwrap();
    let submit = record
        .targets()
        .find(|t| t.role == "button" && t.name == "Submit")
        .expect("submit")
        .bounds;
    // Another window opens over the button.
    let above = desk
        .app("Above app", 20 + submit[0] as i32, 20 + submit[1] as i32)
        .await;
    let above_presses = above.count("canvas_press");
    let err = below
        .act(json!({"type": "click", "expected_frame_id": frame(&o),
            "target": {"kind": "point", "x": (submit[0] + 5.0) as u32, "y": (submit[1] + 5.0) as u32},
            "intent": "click under the other window"}))
        .await
        .expect_err("a covered point");
    assert_eq!(err.code(), ErrorCode::InvalidAction, "{err}");
    assert!(
        err.to_string().contains("covered by another window"),
        "{err}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(below.count("submit"), 0);
    assert_eq!(above.count("canvas_press"), above_presses);
    assert_eq!(above.count("submit"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_window_makes_its_frame_stale() {
    let mut desk = Desk::start(false).await;
    let app = desk.app("Moving app", 20, 20).await;
    let o = app.observe().await;
    let mover = ref_of(&o, "button", "Move soon");
    let out = app
        .act(json!({"type": "click", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": mover}, "intent": "move the window soon"}))
        .await
        .expect("click");
    let o = out.observation.expect("observation");
    app.wait_for("moved", 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let submit = ref_of(&o, "button", "Submit");
    let err = app
        .act(json!({"type": "click", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": submit}, "intent": "submit"}))
        .await
        .expect_err("the window moved");
    assert_eq!(err.code(), ErrorCode::StaleObservation, "{err}");
    assert_eq!(app.count("submit"), 0);
    // A new observation has a new frame and the click goes through.
    let o2 = app.observe().await;
    assert_ne!(frame(&o2), frame(&o));
    let submit = ref_of(&o2, "button", "Submit");
    app.act(json!({"type": "click", "expected_frame_id": frame(&o2),
        "target": {"kind": "element", "ref": submit}, "intent": "submit"}))
        .await
        .expect("click after observing again");
    app.wait_for("submit", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_input_or_cancelling_an_action_lets_go_of_a_held_key() {
    let mut desk = Desk::start(false).await;
    let app = desk.app("Keys app", 20, 20).await;
    let o = app.observe().await;
    let field = ref_of(&o, "textbox", "Name");
    let out = app
        .act(json!({"type": "key_down", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": field}, "key": "Shift", "intent": "hold shift"}))
        .await
        .expect("key down");
    assert_eq!(out.receipt.state(), ReceiptState::Dispatched);
    let pressed = || {
        app.events()
            .iter()
            .filter(|e| e["event"] == "key_press" && e["key"] == "Shift_L")
            .count()
    };
    let released = || {
        app.events()
            .iter()
            .filter(|e| e["event"] == "key_release" && e["key"] == "Shift_L")
            .count()
    };
    let started = Instant::now();
    while pressed() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            app.events()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(released(), 0, "shift is still held");
    let started = Instant::now();
    app.surface.release_input().await.expect("release");
    while released() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the key was not released within 1 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Held again, then an action is cancelled part-way (its future dropped, as a cancelled call's
    // is): everything held is let go within 1 s.
    let o = app.observe().await;
    app.act(json!({"type": "key_down", "expected_frame_id": frame(&o),
        "target": {"kind": "element", "ref": field}, "key": "Shift", "intent": "hold shift"}))
        .await
        .expect("key down again");
    let started = Instant::now();
    while pressed() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            app.events()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let o = app.observe().await;
    let waiting = app.act(json!({"type": "wait", "expected_frame_id": frame(&o),
        "duration_ms": 5000, "intent": "wait"}));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), waiting)
            .await
            .is_err(),
        "the wait was cut short"
    );
    let started = Instant::now();
    while released() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "a cancelled action left the key held: {:?}",
            app.events()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_are_listed_with_identity_and_a_closed_one_is_lost() {
    let mut desk = Desk::start(false).await;
    let app = desk.app("Closing app", 20, 20).await;
    let listed = desk.adapter.list().await.unwrap();
    let info = listed.iter().find(|w| w.title == "Closing app").unwrap();
    assert!(
        info.id
            .starts_with(&format!("x11:{}:0x", desk.stack.display))
    );
    assert_eq!(info.url, "app://gtk-app.py");
    // Measured: the app is on the accessibility bus and the display has XTest.
    assert_eq!(
        info.input,
        vec![InputRoute::BackgroundAx, InputRoute::ForegroundInput]
    );
    assert_eq!(app.surface.input_routes(), info.input);
    // Every window of the display shares one input domain.
    assert_eq!(
        desk.adapter.input_domain(&info.id),
        desk.adapter.input_domain("x11:other")
    );
    assert!(
        desk.adapter
            .close(info.id.clone(), Duration::from_secs(5))
            .await
    );
    let err = app
        .surface
        .observe(&ObserveOptions::default())
        .await
        .expect_err("gone");
    assert_eq!(err.code(), ErrorCode::TargetLost);
    assert!(app.surface.lost().is_some());
    assert_eq!(app.surface.input_routes(), vec![InputRoute::Unavailable]);
}

/// A window no accessibility tree describes (a bare X client, like xterm): pixels and XTest only,
/// declared so in the listing, on the attached surface and in its observation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_without_an_accessibility_tree_is_declared_foreground_input_only() {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::{ConnectionExt as _, CreateWindowAux, EventMask, PropMode};
    use x11rb::wrapper::ConnectionExt as _;
    let desk = Desk::start(false).await;
    let (conn, screen) = x11rb::connect(Some(&desk.stack.display)).unwrap();
    let root = conn.setup().roots[screen].root;
    let window = conn.generate_id().unwrap();
    conn.create_window(
        x11rb::COPY_DEPTH_FROM_PARENT,
        window,
        root,
        30,
        30,
        200,
        120,
        0,
        x11rb::protocol::xproto::WindowClass::INPUT_OUTPUT,
        0,
        &CreateWindowAux::new()
            .background_pixel(0x00ff_ffff)
            .event_mask(EventMask::KEY_PRESS),
    )
    .unwrap();
    conn.change_property8(
        PropMode::REPLACE,
        window,
        x11rb::protocol::xproto::AtomEnum::WM_NAME,
        x11rb::protocol::xproto::AtomEnum::STRING,
        b"Bare window",
    )
    .unwrap();
    conn.change_property8(
        PropMode::REPLACE,
        window,
        x11rb::protocol::xproto::AtomEnum::WM_CLASS,
        x11rb::protocol::xproto::AtomEnum::STRING,
        b"bare\0Bare\0",
    )
    .unwrap();
    conn.map_window(window).unwrap();
    conn.sync().unwrap();

    let id = desk.adapter.surface_id(window);
    let listed = desk.adapter.list().await.unwrap();
    let info = listed
        .iter()
        .find(|w| w.id == id)
        .unwrap_or_else(|| panic!("not listed: {listed:?}"));
    assert_eq!(info.title, "Bare window");
    assert_eq!(info.input, vec![InputRoute::ForegroundInput]);
    let surface = desk.adapter.attach(id, None).await.expect("attach");
    let o = surface
        .observe(&ObserveOptions {
            screenshot: Some(ImageMime::Png),
            ..ObserveOptions::default()
        })
        .await
        .expect("observe");
    assert!(o.interactive_elements().is_empty());
    assert_eq!(surface.input_routes(), vec![InputRoute::ForegroundInput]);
    let o = serde_json::to_value(&o).unwrap();
    assert!(
        o.to_string().contains("screenshot only"),
        "the observation says what it cannot: {o}"
    );
}

/// Where there is no X server there are no desktop surfaces, and the reason says which case it is.
#[tokio::test]
async fn a_wayland_session_without_x_is_unavailable_with_the_reason() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    // Wayland only: unavailable, and it says so.
    let e = desktop::session_display("", &env(&[("WAYLAND_DISPLAY", "wayland-0")])).unwrap_err();
    assert_eq!(e.code(), ErrorCode::BackendUnavailable);
    assert!(e.to_string().contains("Wayland session without X"), "{e}");
    let e = desktop::session_display("", &env(&[("XDG_SESSION_TYPE", "wayland")])).unwrap_err();
    assert!(e.to_string().contains("Wayland"), "{e}");
    // Nothing at all: unavailable, naming the fix.
    let e = desktop::session_display("", &env(&[])).unwrap_err();
    assert!(e.to_string().contains("--display"), "{e}");
    // Xwayland or X: the session's display, unless one is named.
    assert_eq!(
        desktop::session_display("", &env(&[("WAYLAND_DISPLAY", "w"), ("DISPLAY", ":0")])).unwrap(),
        ":0"
    );
    assert_eq!(
        desktop::session_display(":5", &env(&[("DISPLAY", ":0")])).unwrap(),
        ":5"
    );
    // A named display that is not there: unavailable, nothing listed.
    let adapter = DesktopAdapter::new(DesktopConfig {
        display: ":4093".into(),
        session_bus: None,
        foreground_input: true,
    });
    let e = adapter.connect().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::BackendUnavailable, "{e}");
    assert!(adapter.list().await.is_err());
}

/// The whole screen is a surface of its own: its refs are the windows (top first), a point
/// reaches the topmost window there as the observation saw it (and policy judges that window's
/// application), keys go to a named window after its focus is confirmed, and any change of the
/// windows makes the frame stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_screen_is_a_surface_whose_points_reach_the_window_on_top() {
    let mut desk = Desk::start(false).await;
    let lower = desk.app("Lower app", 20, 20).await;
    let upper = desk.app("Upper app", 300, 100).await;
    let listed = desk.adapter.list().await.unwrap();
    let screen = &listed[0];
    assert_eq!(screen.id, desk.adapter.screen_id());
    assert_eq!(screen.kind, protocol::SurfaceKind::X11Screen);
    assert_eq!(screen.input, vec![InputRoute::ForegroundInput]);
    let surface = desk
        .adapter
        .attach(screen.id.clone(), None)
        .await
        .expect("attach the screen");
    assert_eq!(
        surface.surface_kind(),
        Some(protocol::SurfaceKind::X11Screen)
    );
    let o = surface
        .observe(&ObserveOptions {
            screenshot: Some(ImageMime::Png),
            ..ObserveOptions::default()
        })
        .await
        .expect("observe the screen");
    // The image is the whole screen, and the outline lists the windows top first.
    let shot = o.screenshot().expect("a screenshot");
    assert_eq!((shot.width, shot.height), (1280, 800));
    let lines: Vec<&str> = o.aria_snapshot().lines().collect();
    assert!(lines[0].starts_with("window \"Upper app\""), "{lines:?}");
    assert!(lines[1].starts_with("window \"Lower app\""), "{lines:?}");
    assert!(
        lines[0].contains("app://gtk-app.py at 300,100"),
        "{lines:?}"
    );

    // A point where the two overlap is the upper window's canvas: it gets the press, and the
    // frame names that window's application as the target.
    let record = surface.latest_frame().unwrap();
    let under = record.target_at(400.0, 340.0).expect("a window there");
    assert_eq!(under.name, "Upper app");
    assert_eq!(under.structure.document_origin, "app://gtk-app.py");
    let before = (upper.count("canvas_press"), lower.count("canvas_press"));
    let click: ExtendedAction = serde_json::from_value(json!({"type": "click",
        "expected_frame_id": frame(&o), "target": {"kind": "point", "x": 400, "y": 340},
        "intent": "press the upper canvas"}))
    .unwrap();
    surface
        .act(&click, &ActOptions::default())
        .await
        .expect("click on the screen");
    upper.wait_for("canvas_press", before.0 + 1).await;
    assert_eq!(
        lower.count("canvas_press"),
        before.1,
        "the lower window got nothing"
    );

    // Keys to the lower window, named by its ref: it is activated and its focus confirmed first.
    let o = surface.observe(&ObserveOptions::default()).await.unwrap();
    let lower_ref = ref_of(&o, "window", "Lower app");
    let press: ExtendedAction = serde_json::from_value(json!({"type": "press",
        "expected_frame_id": frame(&o), "target": {"kind": "element", "ref": lower_ref},
        "key": "F5", "intent": "a key to the lower window"}))
    .unwrap();
    surface
        .act(&press, &ActOptions::default())
        .await
        .expect("press on the lower window");
    lower
        .wait_until(|e| e["event"] == "key_press" && e["key"] == "F5")
        .await;
    assert!(
        !upper.events().iter().any(|e| e["key"] == "F5"),
        "the upper window got no key"
    );

    // The press restacked and refocused the screen: the frame it was planned on is stale.
    let err = surface
        .act(&click, &ActOptions::default())
        .await
        .expect_err("stale");
    assert_eq!(err.code(), ErrorCode::StaleObservation, "{err}");
    // A new window makes the latest frame stale too.
    let o = surface.observe(&ObserveOptions::default()).await.unwrap();
    let _third = desk.app("Third app", 600, 300).await;
    let click: ExtendedAction = serde_json::from_value(json!({"type": "click",
        "expected_frame_id": frame(&o), "target": {"kind": "point", "x": 5, "y": 5},
        "intent": "anywhere"}))
    .unwrap();
    let err = surface
        .act(&click, &ActOptions::default())
        .await
        .expect_err("stale after a window opened");
    assert_eq!(err.code(), ErrorCode::StaleObservation, "{err}");
    // The screen is closed by no one.
    assert!(
        !desk
            .adapter
            .close(desk.adapter.screen_id(), Duration::from_millis(200))
            .await
    );
}

/// Processes whose environment names `dir` as their runtime directory (the stack's own).
fn processes_of(dir: &std::path::Path) -> Vec<String> {
    let needle = format!("XDG_RUNTIME_DIR={}", dir.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let environ = std::fs::read(e.path().join("environ")).ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let zombie = stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'));
            (!zombie && environ.split(|b| *b == 0).any(|v| v == needle.as_bytes())).then_some(stat)
        })
        .collect()
}

/// A stack leaves nothing behind: its app, bus, AT-SPI launcher and registry, and X server are
/// gone when it is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stack_leaves_no_process_behind() {
    let mut desk = Desk::start(false).await;
    let _app = desk.app("Leaving app", 20, 20).await;
    let dir = desk.stack.runtime_dir.clone();
    let running = processes_of(&dir);
    assert!(
        running.iter().any(|p| p.contains("at-spi")),
        "the AT-SPI launcher runs in the stack: {running:?}"
    );
    drop(desk);
    let left = processes_of(&dir);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A combo box takes `select` through AT-SPI Selection and a slider takes `type` of a number
/// through AT-SPI Value, each read back; an option the list lacks is refused, and a value the
/// slider cannot hold fails with what it holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_takes_select_and_a_slider_takes_a_number_through_atspi() {
    let mut desk = Desk::start(false).await;
    let app = desk.app_with("Choices app", 20, 20, &["--choices"]).await;
    let o = app.observe().await;
    assert!(
        o.aria_snapshot().contains("combobox \"Color\"") && o.aria_snapshot().contains(": \"Red\""),
        "{}",
        o.aria_snapshot()
    );
    let color = ref_of(&o, "combobox", "Color");
    let out = app
        .act(json!({"type": "select", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": color}, "value": "Blue", "intent": "pick blue"}))
        .await
        .expect("select");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        out.receipt
    );
    app.wait_until(|e| e["event"] == "color" && e["value"] == "Blue")
        .await;
    let o = out.observation.expect("observation");
    assert!(
        o.aria_snapshot().contains(": \"Blue\""),
        "{}",
        o.aria_snapshot()
    );
    // An option the list does not have: refused, nothing chosen.
    let err = app
        .act(json!({"type": "select", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": color}, "value": "Purple", "intent": "pick purple"}))
        .await
        .expect_err("no such option");
    assert_eq!(err.code(), ErrorCode::InvalidAction, "{err}");

    let o = app.observe().await;
    let volume = ref_of(&o, "slider", "Volume");
    let out = app
        .act(json!({"type": "type", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": volume}, "text": "42", "intent": "set the volume"}))
        .await
        .expect("type into the slider");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        out.receipt
    );
    app.wait_until(|e| e["event"] == "volume" && e["value"] == 42.0)
        .await;
    // Past its range: the slider holds its maximum, and the receipt says so.
    let o = app.observe().await;
    let out = app
        .act(json!({"type": "type", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": volume}, "text": "500", "intent": "too loud"}))
        .await
        .expect("dispatched");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Failed,
        "{:?}",
        out.receipt
    );
}

/// Every bad input on a window is a structured error with a code from the closed set, and
/// nothing reaches the app: points outside the window, refs the frame never issued, malformed targets,
/// actions a window has no meaning for, unknown keys, a select on a field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_on_a_window_are_structured_errors_and_send_nothing() {
    let mut desk = Desk::start(false).await;
    let app = desk.app("Strict app", 20, 20).await;
    let o = app.observe().await;
    let f = frame(&o);
    let field = ref_of(&o, "textbox", "Name");
    let quiet = |app: &App| {
        app.events()
            .iter()
            .filter(|e| {
                e["event"] != "ready" && e["event"] != "focus_in" && e["event"] != "focus_out"
            })
            .count()
    };
    let before = quiet(&app);
    let cases = [
        (
            json!({"type": "click", "expected_frame_id": f, "target": {"kind": "point", "x": 5000, "y": 10}, "intent": "far away"}),
            ErrorCode::InvalidAction,
        ),
        (
            json!({"type": "click", "expected_frame_id": f, "target": {"kind": "element", "ref": "e999"}, "intent": "no such ref"}),
            ErrorCode::StaleObservation,
        ),
        (
            json!({"type": "click", "expected_frame_id": "frame_0000000000000000", "target": {"kind": "element", "ref": field}, "intent": "old frame"}),
            ErrorCode::StaleObservation,
        ),
        (
            json!({"type": "click", "expected_frame_id": f, "target": {"kind": "locator", "role": "button", "name": "Submit"}, "intent": "locator"}),
            ErrorCode::InvalidAction,
        ),
        (
            json!({"type": "click", "expected_frame_id": f, "target": {"kind": "element", "ref": field}, "expect_download": true, "intent": "download"}),
            ErrorCode::InvalidAction,
        ),
        (
            json!({"type": "navigate", "expected_frame_id": f, "url": "https://example.org/", "intent": "leave"}),
            ErrorCode::InvalidAction,
        ),
        (
            json!({"type": "press", "expected_frame_id": f, "target": {"kind": "element", "ref": field}, "key": "NoSuchKey", "intent": "odd key"}),
            ErrorCode::InvalidAction,
        ),
        (
            json!({"type": "select", "expected_frame_id": f, "target": {"kind": "element", "ref": field}, "value": "x", "intent": "not a list"}),
            ErrorCode::InvalidAction,
        ),
        (
            json!({"type": "drag", "expected_frame_id": f, "source": {"kind": "point", "x": 10, "y": 10}, "destination": {"kind": "point", "x": 9000, "y": 10}, "intent": "off the window"}),
            ErrorCode::InvalidAction,
        ),
    ];
    for (action, code) in cases {
        let parsed = protocol::validate_extended_action(&action);
        let err = match parsed {
            // Some are refused by the protocol itself, before any surface sees them.
            Err(e) => {
                assert_eq!(e.code, code, "{action}: {e}");
                continue;
            }
            Ok(a) => app
                .surface
                .act(&a, &ActOptions::default())
                .await
                .expect_err(&action.to_string()),
        };
        assert_eq!(err.code(), code, "{action}: {err}");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        quiet(&app),
        before,
        "nothing reached the app: {:?}",
        app.events()
    );
}

/// With foreground input off (a person's own desktop), nothing is brought forward or focused:
/// windows declare only `background_ax`, the screen only `screenshot_only`, accessibility
/// actions still work, and every keyboard or pointer action is refused with nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_foreground_input_off_only_accessibility_actions_are_used() {
    let mut desk = Desk::start(false).await;
    let app = desk.app("Background app", 20, 20).await;
    let adapter = DesktopAdapter::new(DesktopConfig {
        display: desk.stack.display.clone(),
        session_bus: Some(desk.stack.session_bus.clone()),
        foreground_input: false,
    });
    adapter.connect().await.unwrap();
    let listed = adapter.list().await.unwrap();
    assert_eq!(listed[0].input, vec![InputRoute::ScreenshotOnly]);
    let info = listed.iter().find(|w| w.title == "Background app").unwrap();
    assert_eq!(info.input, vec![InputRoute::BackgroundAx]);
    let surface = adapter.attach(info.id.clone(), None).await.unwrap();
    let o = surface.observe(&ObserveOptions::default()).await.unwrap();
    assert_eq!(surface.input_routes(), vec![InputRoute::BackgroundAx]);
    let act = |v: Value| {
        let a: ExtendedAction = serde_json::from_value(v).unwrap();
        let surface = surface.clone();
        async move { surface.act(&a, &ActOptions::default()).await }
    };
    let before = app.count("canvas_press") + app.count("key_press");
    for refused in [
        json!({"type": "click", "expected_frame_id": frame(&o),
            "target": {"kind": "point", "x": 200, "y": 300}, "intent": "canvas"}),
        json!({"type": "press", "expected_frame_id": frame(&o),
            "target": {"kind": "element", "ref": ref_of(&o, "textbox", "Name")}, "key": "a",
            "intent": "a key"}),
        json!({"type": "scroll", "expected_frame_id": frame(&o), "delta_y": 100, "intent": "down"}),
    ] {
        let err = act(refused.clone()).await.expect_err(&refused.to_string());
        assert_eq!(err.code(), ErrorCode::InvalidAction, "{err}");
        assert!(err.to_string().contains("foreground input is off"), "{err}");
    }
    // By ref, through the app's own accessibility: still works.
    let out = act(json!({"type": "type", "expected_frame_id": frame(&o),
        "target": {"kind": "element", "ref": ref_of(&o, "textbox", "Name")}, "text": "Quiet",
        "intent": "fill"}))
    .await
    .expect("type through AT-SPI");
    assert_eq!(out.receipt.state(), ReceiptState::Confirmed);
    let o = out.observation.unwrap();
    act(json!({"type": "click", "expected_frame_id": frame(&o),
        "target": {"kind": "element", "ref": ref_of(&o, "button", "Submit")}, "intent": "submit"}))
    .await
    .expect("click through AT-SPI");
    app.wait_for("submit", 1).await;
    assert_eq!(
        app.count("canvas_press") + app.count("key_press"),
        before,
        "no keyboard or pointer input reached the app"
    );
    // The screen has no route at all.
    let screen = adapter.attach(adapter.screen_id(), None).await.unwrap();
    let so = screen.observe(&ObserveOptions::default()).await.unwrap();
    let a: ExtendedAction = serde_json::from_value(json!({"type": "click",
        "expected_frame_id": frame(&so), "target": {"kind": "point", "x": 100, "y": 100},
        "intent": "anywhere"}))
    .unwrap();
    let err = screen.act(&a, &ActOptions::default()).await.unwrap_err();
    assert!(err.to_string().contains("foreground input is off"), "{err}");
}

/// Locators (role and name, label, text) resolve afresh against the window, to exactly one
/// element: none and several are errors (several listed with refs), and a test id or a frame
/// chain has no meaning on a window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locators_find_exactly_one_control_of_the_window() {
    let mut desk = Desk::start(false).await;
    let app = desk.app("Locator app", 20, 20).await;
    let o = app.observe().await;
    let out = app
        .act(json!({"type": "type", "expected_frame_id": frame(&o),
            "target": {"kind": "label", "text": "name"}, "text": "Lin", "intent": "fill by label"}))
        .await
        .expect("type by label");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        out.receipt
    );
    let o = out.observation.unwrap();
    app.act(json!({"type": "click", "expected_frame_id": frame(&o),
        "target": {"kind": "role", "role": "button", "name": "Submit", "exact": true},
        "intent": "submit by role"}))
        .await
        .expect("click by role");
    app.wait_until(|e| e["event"] == "submit" && e["text"] == "Lin")
        .await;
    let o = app.observe().await;
    for (target, says) in [
        (json!({"kind": "role", "role": "button"}), "elements match"),
        (
            json!({"kind": "text", "text": "Nowhere to be found"}),
            "no element",
        ),
        (json!({"kind": "test_id", "id": "submit"}), "no test ids"),
    ] {
        let err = app
            .act(
                json!({"type": "click", "expected_frame_id": frame(&o), "target": target,
                "intent": "a bad locator"}),
            )
            .await
            .expect_err(&target.to_string());
        assert_eq!(err.code(), ErrorCode::InvalidAction, "{err}");
        assert!(err.to_string().contains(says), "{err}");
    }
    assert_eq!(app.count("submit"), 1, "nothing else was clicked");
}

/// Issue 36: `near` on a window as on a page. A window of 1,500 checkboxes is more than a
/// snapshot holds: from the top down the last cells are left out; with `near` the lines around
/// the one named are kept, with a note of what was left out, and the target found that way is
/// acted on by its ref. A text no line shows is said in the console.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn near_keeps_the_lines_around_what_it_names_in_a_window_too_big_for_a_snapshot() {
    let mut desk = Desk::start(false).await;
    let app = desk
        .app_showing("Big grid", 20, 20, &["--grid", "1500"], "\"Cell 1499\"")
        .await;
    let whole = app.observe().await;
    // The grid lists its cells from the last: from the top down the first cells do not fit.
    assert!(
        !whole.aria_snapshot().contains("\"Cell 37\""),
        "from the top down the first cells do not fit"
    );
    let near = |text: &str| ObserveOptions {
        near: Some(protocol::NearText::new(text).unwrap()),
        ..ObserveOptions::default()
    };
    let o = app
        .surface
        .observe(&near("\"cell 37\""))
        .await
        .expect("observe near");
    let snapshot = o.aria_snapshot();
    assert!(snapshot.contains("\"Cell 37\""), "{snapshot}");
    assert!(snapshot.starts_with("- note: lines "), "{snapshot}");
    assert!(!snapshot.contains("\"Cell 1499\""), "the top is left out");
    assert!(
        o.interactive_elements().iter().all(|e| snapshot
            .contains(&format!("[{} ", e.element().as_str()))
            || snapshot.contains(&format!("[{}]", e.element().as_str()))),
        "the elements are those of the kept lines"
    );
    let cell = ref_of(&o, "checkbox", "Cell 37");
    app.act(json!({"type": "click", "expected_frame_id": frame(&o),
        "target": {"kind": "element", "ref": cell}, "intent": "tick cell 37"}))
        .await
        .expect("click the cell near found");
    app.wait_until(|e| e["event"] == "toggle" && e["cell"] == 37)
        .await;
    let missing = app
        .surface
        .observe(&near("no such cell"))
        .await
        .expect("observe");
    assert!(
        missing
            .console_errors()
            .iter()
            .any(|c| c.contains("no line of the window shows")),
        "{:?}",
        missing.console_errors()
    );
}
