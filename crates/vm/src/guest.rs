//! The guest server (`glovebox-guest serve`), ours, running inside each VM: OSWorld's endpoints
//! (so OSWorld's own client and task configs work against it) and what the runtime needs besides
//! — the guest's state, input as one batch per action with an operation id applied once, and the
//! guest's own log of applied input (what proves two guests never cross).
//!
//! Screenshots come straight from the guest's X server (`GetImage`, PNG) and input goes through
//! XTest, with the desktop adapter's own display code (`desktop::x11`). Bodies are bounded and
//! every command has a deadline. When the guest was started with a token, every request must
//! carry it (`Authorization: Bearer …`); a guest started without one is reachable by whoever
//! reaches its port (OSWorld's own model: the network is the boundary).

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use desktop::x11::{Button, Display, Rect};
use serde_json::json;

use crate::wire::{
    self, CommandLine, ExecuteAnswer, ExecuteRequest, GuestFault, GuestState, GuestWindow,
    InputAnswer, InputEvent, InputRequest, LoggedInput,
};

/// The largest request body the guest reads.
const BODY_MAX: usize = 2 * 1024 * 1024;
/// The most output of a command kept (each of stdout and stderr).
const OUTPUT_MAX: usize = 1024 * 1024;
/// A command's deadline when the request names none, and the longest one may name.
const COMMAND_DEFAULT: Duration = Duration::from_secs(120);
const COMMAND_MAX: Duration = Duration::from_secs(600);
/// The largest file `/file` sends.
const FILE_MAX: u64 = 64 * 1024 * 1024;

/// How the guest server runs.
#[derive(Debug, Clone)]
pub struct GuestOptions {
    pub listen: SocketAddr,
    /// The guest's X display (`:0`).
    pub display: String,
    /// Every request must carry it, when set.
    pub token: Option<String>,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum GuestServeError {
    #[error("the X display {display} did not come up within {waited_s} s: {reason}")]
    Display {
        display: String,
        waited_s: u64,
        reason: String,
    },
    #[error("cannot listen on {addr}: {reason}")]
    Listen { addr: SocketAddr, reason: String },
}

struct Guest {
    display: Display,
    token: Option<String>,
    boot_id: String,
    seq: AtomicU64,
    /// Applied operations, oldest first (at most `LOG_KEPT`), and their ids.
    log: std::sync::Mutex<(VecDeque<LoggedInput>, HashSet<String>)>,
    /// One input batch at a time: XTest is one keyboard and one mouse.
    input: tokio::sync::Mutex<()>,
}

/// The kernel's boot id (a fresh value per boot).
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

type Answer = Result<Response, Fault>;

struct Fault(StatusCode, GuestFault);

impl Fault {
    fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Fault {
        Fault(
            status,
            GuestFault {
                code: code.to_owned(),
                message: message.into(),
            },
        )
    }
    fn invalid(message: impl Into<String>) -> Fault {
        Fault::new(StatusCode::BAD_REQUEST, "invalid", message)
    }
}

impl From<surface::SurfaceError> for Fault {
    fn from(e: surface::SurfaceError) -> Fault {
        match e {
            surface::SurfaceError::NotActionable { reason } => Fault::invalid(reason),
            e => Fault::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                e.to_string(),
            ),
        }
    }
}

impl IntoResponse for Fault {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

/// Runs the server until the process ends.
pub async fn serve(options: GuestOptions) -> Result<(), GuestServeError> {
    let started = Instant::now();
    let display = loop {
        match Display::connect(&options.display) {
            Ok(d) => break d,
            Err(e) if started.elapsed() > Duration::from_secs(60) => {
                return Err(GuestServeError::Display {
                    display: options.display.clone(),
                    waited_s: 60,
                    reason: e.to_string(),
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let guest = Arc::new(Guest {
        display,
        token: options.token.filter(|t| !t.is_empty()),
        boot_id: boot_id(),
        seq: AtomicU64::new(0),
        log: std::sync::Mutex::new((VecDeque::new(), HashSet::new())),
        input: tokio::sync::Mutex::new(()),
    });
    let app = axum::Router::new()
        .route("/screenshot", get(screenshot))
        .route("/screen_size", post(screen_size).get(screen_size))
        .route(
            "/cursor_position",
            post(cursor_position).get(cursor_position),
        )
        .route("/accessibility", get(accessibility))
        .route("/execute", post(execute))
        .route("/run_bash_script", post(execute))
        .route("/run_python", post(run_python))
        .route("/list_directory", post(list_directory))
        .route("/file", post(file))
        .route("/window_size", post(window_size))
        .route("/desktop_path", post(desktop_path))
        .route("/setup/launch", post(launch))
        .route("/glovebox/v1/state", get(state))
        .route("/glovebox/v1/input", post(input))
        .route("/glovebox/v1/release", post(release))
        .route("/glovebox/v1/log", get(log))
        .layer(axum::middleware::from_fn_with_state(
            guest.clone(),
            authorize,
        ))
        .layer(DefaultBodyLimit::max(BODY_MAX))
        .with_state(guest);
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|e| GuestServeError::Listen {
            addr: options.listen,
            reason: e.to_string(),
        })?;
    // Failures of single connections are theirs; the server goes on.
    let _ = axum::serve(listener, app).await;
    Ok(())
}

async fn authorize(State(guest): State<Arc<Guest>>, request: Request, next: Next) -> Response {
    if let Some(token) = &guest.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !same(given.as_bytes(), token.as_bytes()) {
            return Fault::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this guest needs its token",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// Compares without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn screen_rect(guest: &Guest) -> Result<Rect, Fault> {
    Ok(guest.display.run(|c| Ok(c.screen())).await?)
}

async fn screenshot(State(guest): State<Arc<Guest>>) -> Answer {
    let rect = screen_rect(&guest).await?;
    let pixels = guest.display.run(move |c| c.capture(rect)).await?;
    let png = desktop::window::encode_png(&pixels)?;
    Ok(([(header::CONTENT_TYPE, "image/png")], png).into_response())
}

async fn screen_size(State(guest): State<Arc<Guest>>) -> Answer {
    let rect = screen_rect(&guest).await?;
    Ok(Json(json!({"width": rect.width, "height": rect.height})).into_response())
}

async fn cursor_position(State(guest): State<Arc<Guest>>) -> Answer {
    let (x, y) = guest.display.run(|c| c.pointer()).await?;
    Ok(Json(json!([x, y])).into_response())
}

/// OSWorld's `/window_size` (form `app_class_name`): the first window of that class.
async fn window_size(State(guest): State<Arc<Guest>>, body: axum::body::Bytes) -> Answer {
    let class = form_value(&body, "app_class_name")
        .or_else(|| {
            serde_json::from_slice::<serde_json::Value>(&body)
                .ok()?
                .get("app_class_name")?
                .as_str()
                .map(str::to_owned)
        })
        .ok_or_else(|| Fault::invalid("no app_class_name"))?;
    let state = current_state(&guest).await?;
    let w = state
        .windows
        .iter()
        .find(|w| w.class.eq_ignore_ascii_case(&class))
        .ok_or_else(|| Fault::new(StatusCode::NOT_FOUND, "invalid", "no window of that class"))?;
    Ok(Json(json!({"width": w.rect[2], "height": w.rect[3]})).into_response())
}

/// OSWorld's `/desktop_path`.
async fn desktop_path() -> Answer {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    Ok(Json(json!({ "desktop_path": format!("{home}/Desktop") })).into_response())
}

async fn current_state(guest: &Guest) -> Result<GuestState, Fault> {
    let (screen, windows, focused, xtest) = guest
        .display
        .run(|c| Ok((c.screen(), c.windows()?, c.focused_window()?, c.has_xtest())))
        .await?;
    Ok(GuestState {
        boot_id: guest.boot_id.clone(),
        screen: [screen.width, screen.height],
        windows: windows.iter().map(GuestWindow::from_facts).collect(),
        focused,
        xtest,
    })
}

async fn state(State(guest): State<Arc<Guest>>) -> Answer {
    Ok(Json(current_state(&guest).await?).into_response())
}

/// OSWorld's accessibility endpoint: without an AT-SPI bus in the guest, the windows as a
/// desktop frame (the format's root) with one frame per window.
async fn accessibility(State(guest): State<Arc<Guest>>) -> Answer {
    let state = current_state(&guest).await?;
    let mut xml = String::from(
        "<desktop-frame xmlns:st=\"https://accessibility.ubuntu.example.org/ns/state\" \
         xmlns:cp=\"https://accessibility.ubuntu.example.org/ns/component\">",
    );
    for w in state.windows.iter().rev().filter(|w| w.viewable) {
        let [x, y, width, height] = w.rect;
        xml.push_str(&format!(
            "<frame name=\"{}\" cp:screencoord=\"({x}, {y})\" cp:size=\"({width}, {height})\" \
             st:showing=\"true\"{}/>",
            escape_xml(&w.name),
            if state.focused == Some(w.window) {
                " st:active=\"true\""
            } else {
                ""
            }
        ));
    }
    xml.push_str("</desktop-frame>");
    Ok(Json(json!({ "AT": xml })).into_response())
}

fn escape_xml(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control())
        .map(|c| match c {
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '&' => "&amp;".to_owned(),
            '"' => "&quot;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

async fn input(
    State(guest): State<Arc<Guest>>,
    body: axum::body::Bytes,
) -> Result<Json<InputAnswer>, Fault> {
    let request: InputRequest =
        serde_json::from_slice(&body).map_err(|e| Fault::invalid(e.to_string()))?;
    if request.boot_id != guest.boot_id {
        return Err(Fault::new(
            StatusCode::CONFLICT,
            "stale_boot",
            "the input was planned against an earlier boot of this guest",
        ));
    }
    check_events(&request.events)?;
    let _one = guest.input.lock().await;
    {
        let log = guest.log.lock().unwrap_or_else(|p| p.into_inner());
        if log.1.contains(&request.op) {
            // Applied once already: the answer, never the input again.
            return Ok(Json(InputAnswer {
                op: request.op,
                applied: false,
            }));
        }
    }
    let screen = screen_rect(&guest).await?;
    for e in &request.events {
        if let InputEvent::Move { x, y } = e
            && !screen.contains(*x, *y)
        {
            return Err(Fault::invalid(format!(
                "({x}, {y}) is outside the {}×{} screen",
                screen.width, screen.height
            )));
        }
    }
    let events = request.events.clone();
    guest.display.run(move |c| apply(c, &events)).await?;
    let entry = LoggedInput {
        seq: guest.seq.fetch_add(1, Ordering::SeqCst) + 1,
        op: request.op.clone(),
        kinds: request.events.iter().map(|e| e.name().to_owned()).collect(),
        points: request
            .events
            .iter()
            .filter_map(|e| match e {
                InputEvent::Move { x, y } => Some([*x, *y]),
                _ => None,
            })
            .collect(),
        chars: request
            .events
            .iter()
            .map(|e| match e {
                InputEvent::Text { text } => text.chars().count(),
                _ => 0,
            })
            .sum(),
    };
    let mut log = guest.log.lock().unwrap_or_else(|p| p.into_inner());
    if log.0.len() >= wire::LOG_KEPT
        && let Some(old) = log.0.pop_front()
    {
        log.1.remove(&old.op);
    }
    log.1.insert(entry.op.clone());
    log.0.push_back(entry);
    Ok(Json(InputAnswer {
        op: request.op,
        applied: true,
    }))
}

fn check_events(events: &[InputEvent]) -> Result<(), Fault> {
    if events.len() > wire::MAX_EVENTS {
        return Err(Fault::invalid(format!(
            "{} events; at most {}",
            events.len(),
            wire::MAX_EVENTS
        )));
    }
    let mut chars = 0;
    for e in events {
        match e {
            InputEvent::Button { button, .. } if !(1..=7).contains(button) => {
                return Err(Fault::invalid(format!("no button {button}")));
            }
            InputEvent::Pause { ms } if *ms > wire::MAX_PAUSE_MS => {
                return Err(Fault::invalid(format!(
                    "a pause of {ms} ms; at most {}",
                    wire::MAX_PAUSE_MS
                )));
            }
            InputEvent::Chord { keysyms } if keysyms.is_empty() || keysyms.len() > 8 => {
                return Err(Fault::invalid("a chord has 1 to 8 keys"));
            }
            InputEvent::Text { text } => chars += text.chars().count(),
            _ => {}
        }
    }
    if chars > wire::MAX_TEXT_CHARS {
        return Err(Fault::invalid(format!(
            "{chars} characters; at most {}",
            wire::MAX_TEXT_CHARS
        )));
    }
    Ok(())
}

/// Applies a checked batch on the display, in order.
fn apply(
    c: &mut desktop::x11::XConn<'_>,
    events: &[InputEvent],
) -> Result<(), surface::SurfaceError> {
    const SHIFT: u32 = 0xffe1;
    for e in events {
        match e {
            InputEvent::Move { x, y } => c.move_to(*x, *y)?,
            InputEvent::Button { button, down } => c.button(Button(*button), *down)?,
            InputEvent::Key { keysym, down } => {
                let (code, _) = c.keycode(*keysym)?;
                c.key(code, *down)?;
            }
            InputEvent::Chord { keysyms } => {
                let mut codes = Vec::new();
                for k in keysyms {
                    let (code, shift) = c.keycode(*k)?;
                    if shift && !keysyms.contains(&SHIFT) {
                        codes.push(c.keycode(SHIFT)?.0);
                    }
                    codes.push(code);
                }
                for code in &codes {
                    c.key(*code, true)?;
                    c.flush()?;
                    std::thread::sleep(desktop::x11::INPUT_GAP);
                }
                for code in codes.iter().rev() {
                    c.key(*code, false)?;
                }
            }
            InputEvent::Text { text } => {
                let shift = c.keycode(SHIFT)?.0;
                for ch in text.chars() {
                    let (code, with_shift) = c.keycode(desktop::keys::char_keysym(ch))?;
                    if with_shift {
                        c.key(shift, true)?;
                    }
                    c.key(code, true)?;
                    c.key(code, false)?;
                    if with_shift {
                        c.key(shift, false)?;
                    }
                    // A borrowed key is remapped for the next character: this one first.
                    c.sync()?;
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            InputEvent::Pause { ms } => {
                c.flush()?;
                std::thread::sleep(Duration::from_millis(u64::from(*ms)));
            }
        }
        c.flush()?;
    }
    c.sync()
}

async fn release(State(guest): State<Arc<Guest>>) -> Answer {
    let _one = guest.input.lock().await;
    guest.display.run(|c| c.release_all()).await?;
    Ok(Json(json!({"released": true})).into_response())
}

async fn log(State(guest): State<Arc<Guest>>) -> Answer {
    let log = guest.log.lock().unwrap_or_else(|p| p.into_inner());
    Ok(Json(json!({ "boot_id": guest.boot_id, "applied": log.0 })).into_response())
}

fn answer(status: &str, output: String, error: String, returncode: i32) -> Response {
    Json(ExecuteAnswer {
        status: status.to_owned(),
        output,
        error,
        returncode,
    })
    .into_response()
}

fn bounded(mut bytes: Vec<u8>) -> String {
    bytes.truncate(OUTPUT_MAX);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// OSWorld's `/execute` (a command, through a shell when asked) and `/run_bash_script`.
async fn execute(body: axum::body::Bytes) -> Answer {
    let request: ExecuteRequest =
        serde_json::from_slice(&body).map_err(|e| Fault::invalid(e.to_string()))?;
    let mut command = if let Some(script) = &request.script {
        let mut c = tokio::process::Command::new("/bin/sh");
        c.arg("-c").arg(script);
        c
    } else {
        match request.command {
            Some(CommandLine::Line(line)) if request.shell => {
                let mut c = tokio::process::Command::new("/bin/sh");
                c.arg("-c").arg(line);
                c
            }
            Some(CommandLine::Args(args)) if request.shell => {
                let mut c = tokio::process::Command::new("/bin/sh");
                c.arg("-c").arg(args.join(" "));
                c
            }
            Some(CommandLine::Line(line)) => {
                let mut parts = line.split_whitespace();
                let Some(program) = parts.next() else {
                    return Err(Fault::invalid("an empty command"));
                };
                let mut c = tokio::process::Command::new(program);
                c.args(parts);
                c
            }
            Some(CommandLine::Args(args)) => {
                let Some((program, rest)) = args.split_first() else {
                    return Err(Fault::invalid("an empty command"));
                };
                let mut c = tokio::process::Command::new(program);
                c.args(rest);
                c
            }
            None => return Err(Fault::invalid("no command")),
        }
    };
    if let Some(dir) = &request.working_dir {
        command.current_dir(dir);
    }
    let deadline = request
        .timeout
        .filter(|t| t.is_finite() && *t > 0.0)
        .map_or(COMMAND_DEFAULT, Duration::from_secs_f64)
        .min(COMMAND_MAX);
    command
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    match tokio::time::timeout(deadline, command.output()).await {
        Err(_) => Ok(answer(
            "error",
            String::new(),
            format!("the command did not finish within {} s", deadline.as_secs()),
            -1,
        )),
        Ok(Err(e)) => Ok(answer("error", String::new(), e.to_string(), -1)),
        Ok(Ok(out)) => {
            let code = out.status.code().unwrap_or(-1);
            Ok(answer(
                if out.status.success() {
                    "success"
                } else {
                    "error"
                },
                bounded(out.stdout),
                bounded(out.stderr),
                code,
            ))
        }
    }
}

async fn run_python() -> Answer {
    Ok((
        StatusCode::NOT_IMPLEMENTED,
        Json(json!({"status": "error", "message": "this guest has no Python: use /execute"})),
    )
        .into_response())
}

#[derive(serde::Deserialize)]
struct PathRequest {
    path: Option<String>,
    file_path: Option<String>,
}

async fn list_directory(body: axum::body::Bytes) -> Answer {
    let request: PathRequest =
        serde_json::from_slice(&body).map_err(|e| Fault::invalid(e.to_string()))?;
    let path = PathBuf::from(request.path.unwrap_or_default());
    let tree = tokio::task::spawn_blocking(move || list(&path, 2))
        .await
        .map_err(|e| Fault::invalid(e.to_string()))?
        .map_err(|e| Fault::invalid(e.to_string()))?;
    Ok(Json(json!({ "status": "success", "directory_tree": tree })).into_response())
}

fn list(path: &Path, depth: u32) -> std::io::Result<serde_json::Value> {
    let meta = std::fs::symlink_metadata(path)?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    if !meta.is_dir() {
        return Ok(json!({"type": "file", "name": name}));
    }
    let mut children = Vec::new();
    if depth > 0 {
        for entry in std::fs::read_dir(path)?.flatten().take(1000) {
            children.push(
                list(&entry.path(), depth - 1)
                    .unwrap_or(json!({"name": entry.file_name().to_string_lossy()})),
            );
        }
    }
    Ok(json!({"type": "directory", "name": name, "children": children}))
}

async fn file(body: axum::body::Bytes) -> Answer {
    // OSWorld sends a form (`file_path=…`); JSON is taken too.
    let path = serde_json::from_slice::<PathRequest>(&body)
        .ok()
        .and_then(|r| r.file_path.or(r.path))
        .or_else(|| form_value(&body, "file_path"))
        .ok_or_else(|| Fault::invalid("no file_path"))?;
    let meta = tokio::fs::metadata(&path)
        .await
        .map_err(|e| Fault::new(StatusCode::NOT_FOUND, "invalid", e.to_string()))?;
    if meta.len() > FILE_MAX {
        return Err(Fault::invalid(format!(
            "the file has {} bytes; at most {FILE_MAX}",
            meta.len()
        )));
    }
    let bytes = tokio::fs::read(&path)
        .await
        .map_err(|e| Fault::new(StatusCode::NOT_FOUND, "invalid", e.to_string()))?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

fn form_value(body: &[u8], key: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    text.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'+', _) => out.push(b' '),
            (b'%', Some(b)) => {
                out.push(b);
                i += 2;
            }
            (b, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// OSWorld's `/setup/launch`: starts a program and does not wait for it.
async fn launch(body: axum::body::Bytes) -> Answer {
    let request: ExecuteRequest =
        serde_json::from_slice(&body).map_err(|e| Fault::invalid(e.to_string()))?;
    let mut command = match request.command {
        Some(CommandLine::Line(line)) if request.shell => {
            let mut c = std::process::Command::new("/bin/sh");
            c.arg("-c").arg(line);
            c
        }
        Some(CommandLine::Line(line)) => {
            let mut parts = line.split_whitespace();
            let program = parts
                .next()
                .ok_or_else(|| Fault::invalid("an empty command"))?;
            let mut c = std::process::Command::new(program);
            c.args(parts);
            c
        }
        Some(CommandLine::Args(args)) => {
            let (program, rest) = args
                .split_first()
                .ok_or_else(|| Fault::invalid("an empty command"))?;
            let mut c = std::process::Command::new(program);
            c.args(rest);
            c
        }
        None => return Err(Fault::invalid("no command")),
    };
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = command
        .spawn()
        .map_err(|e| Fault::invalid(format!("cannot launch: {e}")))?;
    let pid = child.id();
    // Reaped by a thread of its own: a launched program outlives the request.
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait();
    });
    Ok(Json(json!({"status": "success", "message": "launched", "pid": pid})).into_response())
}
