//! One session's persistent runner: a sandboxed Python process that keeps its namespace across
//! `gui_exec` calls. Each call gets a new generation; the runner's messages are checked here,
//! in order — framing bounds, a strict parse, the call's generation, a fresh operation id, the
//! primitive budget — before the broker runs anything. On the call's deadline the broker's writes
//! are revoked and held input released first, then the process is killed (`004_…`: "超时先撤销
//! 写能力再终止子进程"); a runner dropped mid-call (the client cancelled) is killed by its drop.
//!
//! Not here: what a primitive does (the broker), the sandbox's mounts (`sandbox.rs`).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::ErrorCode;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::broker::{Broker, Call, EffectState, Refusal};
use crate::frame::{self, Frame};
use crate::result::{
    Block, Environment, ExecError, ExecResult, ExecStatus, Operation, Timing, applied,
};
use crate::sandbox::Sandbox;
use crate::wire::{self, FromRunner, Request};

/// Per-call limits (`004_…`: "每段脚本 30 秒、100 次 broker 操作、256 KiB 文本、每次四张图及
/// provider 像素限制" — starting values, not measured optima).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub operations: usize,
    pub text_bytes: usize,
    pub images: usize,
    /// The longest edge and the most pixels of an image a script displays.
    pub image_max_edge: u32,
    pub image_max_pixels: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            operations: 100,
            text_bytes: 256 << 10,
            images: 4,
            image_max_edge: 1920,
            image_max_pixels: 1920 * 1200,
        }
    }
}

/// How long a new runner may take to say it is ready.
const STARTUP_DEADLINE: Duration = Duration::from_secs(10);
/// The least time left in a call for a write to start.
const MIN_WRITE_TIME: Duration = Duration::from_secs(1);
/// How long a primitive under way at the deadline may take to finish.
const IN_FLIGHT_GRACE: Duration = Duration::from_secs(3);
/// How long revoking may take before the kill goes ahead anyway.
const REVOKE_DEADLINE: Duration = Duration::from_secs(3);
/// The stderr kept for a crash's message.
const STDERR_TAIL: usize = 2048;

struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: Arc<Mutex<String>>,
}

/// Why a runner did not start (the call is then `crashed`, its message this).
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("the sandbox did not start: {0}")]
    Spawn(#[from] std::io::Error),
    #[error("the sandbox's channel was not set up")]
    Channel,
    #[error("the runner did not start ({why}): {stderr}")]
    NotReady { why: String, stderr: String },
    #[error("the runner was not ready in time")]
    Late,
}

impl Process {
    async fn start(sandbox: &Sandbox, deadline: Instant) -> Result<Process, StartError> {
        let mut child = sandbox.runner().spawn()?;
        let (Some(stdin), Some(mut stdout), Some(mut err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(StartError::Channel);
        };
        let stderr = Arc::new(Mutex::new(String::new()));
        let tail = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                t.push_str(&String::from_utf8_lossy(&buf[..n]));
                if t.len() > STARTUP_TAIL_KEEP {
                    let cut = t.len() - STDERR_TAIL;
                    let cut = (cut..t.len()).find(|&i| t.is_char_boundary(i)).unwrap_or(0);
                    t.replace_range(..cut, "");
                }
            }
        });
        let until = deadline.min(Instant::now() + STARTUP_DEADLINE);
        let ready = tokio::time::timeout_at(until.into(), frame::read(&mut stdout)).await;
        let mut process = Process {
            child,
            stdin,
            stdout,
            stderr,
        };
        match ready {
            Ok(Ok(Frame::Json(b))) if matches!(wire::parse(&b), Ok(FromRunner::Ready { .. })) => {
                Ok(process)
            }
            Ok(other) => {
                let stderr = process.stderr_tail().await;
                process.kill().await;
                Err(StartError::NotReady {
                    why: match other {
                        Ok(_) => "it said something else first".to_owned(),
                        Err(e) => e.to_string(),
                    },
                    stderr,
                })
            }
            Err(_) => {
                process.kill().await;
                Err(StartError::Late)
            }
        }
    }

    async fn stderr_tail(&self) -> String {
        // Let the reader catch the last of what the process wrote.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        t.trim().to_owned()
    }

    async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
    }

    async fn send(&mut self, value: &Value) -> std::io::Result<()> {
        frame::write_json(&mut self.stdin, value).await
    }
}

/// Kept only so a long stderr is trimmed in chunks, not per read.
const STARTUP_TAIL_KEEP: usize = STDERR_TAIL * 2;

/// One session's scripting context.
pub struct Runner {
    sandbox: Arc<Sandbox>,
    limits: Limits,
    process: Option<Process>,
    generation: u64,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("generation", &self.generation)
            .field("running", &self.process.is_some())
            .finish()
    }
}

/// What one call accumulates.
struct Call_ {
    generation: u64,
    deadline: Instant,
    seen: HashSet<String>,
    requests: usize,
    over_budget: bool,
    operations: Vec<Operation>,
    blocks: Vec<Block>,
    text: usize,
    images: usize,
    truncated: bool,
    observations: BTreeMap<String, String>,
    last_applied: Option<usize>,
    broker: Duration,
    display: Option<String>,
}

enum End {
    Done {
        ok: bool,
        error: Option<wire::ScriptFailure>,
    },
    Timeout,
    Crashed(String),
}

impl Runner {
    /// A runner that starts its sandboxed process on its first call.
    pub fn new(sandbox: Arc<Sandbox>, limits: Limits) -> Self {
        Self {
            sandbox,
            limits,
            process: None,
            generation: 0,
        }
    }

    /// The current call's (or the last call's) generation.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether the process (and its namespace) is up.
    pub fn is_running(&mut self) -> bool {
        self.process
            .as_mut()
            .is_some_and(|p| matches!(p.child.try_wait(), Ok(None)))
    }

    /// Ends the process (the session ends, or the person reset it).
    pub async fn close(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.kill().await;
        }
    }

    /// Runs `code` in the persistent namespace; `surface` is the call's surface (`ui.page()`).
    pub async fn exec(
        &mut self,
        code: &str,
        surface: Option<&str>,
        broker: &dyn Broker,
    ) -> ExecResult {
        let started = Instant::now();
        let deadline = started + self.limits.timeout;
        self.generation += 1;
        let mut call = Call_ {
            generation: self.generation,
            deadline,
            seen: HashSet::new(),
            requests: 0,
            over_budget: false,
            operations: Vec::new(),
            blocks: Vec::new(),
            text: 0,
            images: 0,
            truncated: false,
            observations: BTreeMap::new(),
            last_applied: None,
            broker: Duration::ZERO,
            display: None,
        };
        let fresh = !self.is_running();
        let mut startup = Duration::ZERO;
        // Taken out for the call: a call dropped half-way drops (and so kills) the process.
        let process = match self.process.take() {
            Some(p) if !fresh => Ok(p),
            _ => {
                let t = Instant::now();
                let p = Process::start(&self.sandbox, deadline).await;
                startup = t.elapsed();
                p
            }
        };
        let end = match process {
            Err(e) => End::Crashed(e.to_string()),
            Ok(mut process) => {
                let run = json!({
                    "type": "run", "generation": call.generation, "code": code, "surface": surface,
                    "limits": {"operations": self.limits.operations, "images": self.limits.images},
                });
                let end = match process.send(&run).await {
                    Ok(()) => self.drive(&mut process, &mut call, broker).await,
                    Err(e) => End::Crashed(format!("the runner's channel failed: {e}")),
                };
                match &end {
                    End::Done { .. } => self.process = Some(process),
                    End::Timeout => {
                        // Writes first, then input, then the process (never the other way).
                        let _ = tokio::time::timeout(REVOKE_DEADLINE, broker.revoke()).await;
                        process.kill().await;
                    }
                    End::Crashed(_) => {
                        let _ = tokio::time::timeout(REVOKE_DEADLINE, broker.revoke()).await;
                        process.kill().await;
                    }
                }
                end
            }
        };
        self.finish(call, end, fresh, startup, started.elapsed())
    }

    async fn drive(&self, p: &mut Process, call: &mut Call_, broker: &dyn Broker) -> End {
        loop {
            let read = tokio::time::timeout_at(call.deadline.into(), frame::read(&mut p.stdout));
            let frame = match read.await {
                Err(_) => return End::Timeout,
                Ok(Ok(frame)) => frame,
                Ok(Err(e)) if e.recoverable() => {
                    // The refused frame may have been the request the script now waits for.
                    call.display = None;
                    call.requests += 1;
                    let reply =
                        refusal_reply(None, &Refusal::new(ErrorCode::InvalidAction, e.to_string()));
                    if let Err(e) = p.send(&reply).await {
                        return End::Crashed(e.to_string());
                    }
                    continue;
                }
                Ok(Err(e)) => {
                    let tail = p.stderr_tail().await;
                    return End::Crashed(format!("{e}. {tail}").trim().to_owned());
                }
            };
            let bytes = match frame {
                Frame::Image(bytes) => {
                    match call.display.take() {
                        Some(mime) => self.displayed(call, mime, bytes),
                        None => call.truncated = true,
                    }
                    continue;
                }
                Frame::Json(bytes) => bytes,
            };
            call.display = None;
            let request = match wire::parse(&bytes) {
                Ok(FromRunner::Request(r)) => r,
                Ok(FromRunner::Output { text }) => {
                    self.output(call, text);
                    continue;
                }
                Ok(FromRunner::Display { mime }) => {
                    call.display = Some(mime);
                    continue;
                }
                Ok(FromRunner::Done { ok, error }) => return End::Done { ok, error },
                Ok(FromRunner::Ready { .. }) => continue,
                Err((op, message)) => {
                    call.requests += 1;
                    let refusal = Refusal::new(
                        ErrorCode::InvalidAction,
                        format!("refused before it ran: {message}"),
                    );
                    if let Err(e) = p.send(&refusal_reply(op.as_deref(), &refusal)).await {
                        return End::Crashed(e.to_string());
                    }
                    continue;
                }
            };
            let (reply, image) = match self.check(call, &request) {
                Err(refusal) => {
                    // Refused before the broker saw it; listed (up to a bound: a script that
                    // catches refusals in a loop cannot grow the result without end).
                    if call.operations.len() < 2 * self.limits.operations {
                        call.operations.push(Operation {
                            operation_id: request.operation_id.clone(),
                            method: request.method,
                            surface: request.resource.clone(),
                            state: request.method.writes().then_some(EffectState::Failed),
                            effect_uncertain: false,
                            error: Some(refusal.code),
                            ms: 0,
                        });
                    }
                    (refusal_reply(Some(&request.operation_id), &refusal), None)
                }
                Ok(()) => {
                    let t = Instant::now();
                    let c = Call {
                        operation_id: &request.operation_id,
                        method: request.method,
                        resource: request.resource.as_deref(),
                        arguments: &request.arguments,
                        observation: request.observation.as_deref(),
                        deadline: call.deadline,
                    };
                    // A primitive under way at the deadline may finish (within a grace): what
                    // it sent is then known, and the revocation comes after it, never beside it.
                    let mut answering = broker.call(c);
                    let answered =
                        match tokio::time::timeout_at(call.deadline.into(), &mut answering).await {
                            Ok(answer) => Some(answer),
                            Err(_) => tokio::time::timeout(IN_FLIGHT_GRACE, &mut answering)
                                .await
                                .ok(),
                        };
                    drop(answering);
                    let ms = t.elapsed();
                    call.broker += ms;
                    let Some(answer) = answered else {
                        // Cut off: a write's effect cannot be known.
                        call.operations.push(Operation {
                            operation_id: request.operation_id.clone(),
                            method: request.method,
                            surface: request.resource.clone(),
                            state: request.method.writes().then_some(EffectState::Unknown),
                            effect_uncertain: request.method.writes(),
                            error: Some(ErrorCode::Timeout),
                            ms: ms.as_millis() as u64,
                        });
                        return End::Timeout;
                    };
                    if Instant::now() >= call.deadline {
                        self.record(call, &request, &answer, ms);
                        return End::Timeout;
                    }
                    self.record(call, &request, &answer, ms)
                }
            };
            if let Err(e) = p.send(&reply).await {
                return End::Crashed(e.to_string());
            }
            if let Some(image) = image
                && let Err(e) = frame::write_image(&mut p.stdin, &image).await
            {
                return End::Crashed(e.to_string());
            }
        }
    }

    /// The checks every request passes before the broker sees it.
    fn check(&self, call: &mut Call_, r: &Request) -> Result<(), Refusal> {
        call.requests += 1;
        if r.generation != call.generation {
            return Err(Refusal::new(
                ErrorCode::StaleObservation,
                format!(
                    "generation {} is not this call's ({}); fenced",
                    r.generation, call.generation
                ),
            ));
        }
        let id_ok = !r.operation_id.is_empty()
            && r.operation_id.len() <= 64
            && r.operation_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !id_ok {
            return Err(Refusal::new(
                ErrorCode::InvalidAction,
                "an operation id is 1-64 letters, digits, '-' or '_'",
            ));
        }
        if !call.seen.insert(r.operation_id.clone()) {
            return Err(Refusal::new(
                ErrorCode::InvalidAction,
                format!(
                    "operation {} was already sent in this call; an operation is never replayed (observe to learn what it did)",
                    r.operation_id
                ),
            ));
        }
        // A write needs time to land and settle; one started in the call's last moments would be
        // cut off with its effect unknown (its page still sending what it caused).
        if r.method.writes()
            && call.deadline.saturating_duration_since(Instant::now()) < MIN_WRITE_TIME
        {
            return Err(Refusal::new(
                ErrorCode::Timeout,
                format!(
                    "less than {} ms of this call's time is left: no write starts now; return and call gui_exec again",
                    MIN_WRITE_TIME.as_millis()
                ),
            ));
        }
        if call.requests > self.limits.operations {
            call.over_budget = true;
            return Err(Refusal::new(
                ErrorCode::StepLimit,
                format!(
                    "this call used its {} broker operations; return and call gui_exec again",
                    self.limits.operations
                ),
            ));
        }
        Ok(())
    }

    fn record(
        &self,
        call: &mut Call_,
        r: &Request,
        answer: &Result<crate::broker::Answer, Refusal>,
        ms: Duration,
    ) -> (Value, Option<Vec<u8>>) {
        let (effect, error, surface) = match answer {
            Ok(a) => (a.effect, None, a.surface.clone()),
            Err(refusal) => (refusal.effect, Some(refusal.code), None),
        };
        let surface = surface.or_else(|| r.resource.clone());
        if let (Ok(a), Some(s)) = (answer, &surface)
            && let Some(token) = &a.observation
        {
            call.observations.insert(s.clone(), token.clone());
        }
        let state = effect
            .map(|e| e.state)
            .or_else(|| (r.method.writes() && error.is_some()).then_some(EffectState::Failed));
        call.operations.push(Operation {
            operation_id: r.operation_id.clone(),
            method: r.method,
            surface,
            state,
            effect_uncertain: effect.is_some_and(|e| e.effect_uncertain),
            error,
            ms: ms.as_millis() as u64,
        });
        if applied(effect) {
            call.last_applied = Some(call.operations.len() - 1);
        }
        match answer {
            Ok(a) => {
                let mut value = a.value.clone();
                if let Some(effect) = a.effect
                    && let Some(map) = value.as_object_mut()
                {
                    map.insert("state".into(), json!(effect.state));
                    map.insert("effect_uncertain".into(), json!(effect.effect_uncertain));
                    map.insert("last_applied_index".into(), json!(call.last_applied));
                }
                if let (Some(map), Some(token)) = (value.as_object_mut(), &a.observation) {
                    map.insert("observation".into(), json!(token));
                }
                if a.image.is_some()
                    && let Some(map) = value.as_object_mut()
                {
                    map.insert("image".into(), json!(true));
                }
                (
                    json!({"type": "reply", "operation_id": r.operation_id, "ok": true, "value": value}),
                    a.image.clone(),
                )
            }
            Err(refusal) => (refusal_reply(Some(&r.operation_id), refusal), None),
        }
    }

    fn output(&self, call: &mut Call_, text: String) {
        let room = self.limits.text_bytes.saturating_sub(call.text);
        if room == 0 {
            call.truncated |= !text.is_empty();
            return;
        }
        let mut text = text;
        if text.len() > room {
            let mut cut = room;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            call.truncated = true;
        }
        call.text += text.len();
        match call.blocks.last_mut() {
            Some(Block::Text { text: last }) => last.push_str(&text),
            _ => call.blocks.push(Block::Text { text }),
        }
    }

    /// An image the script displays: PNG only, within the count and the pixel bounds.
    fn displayed(&self, call: &mut Call_, mime: String, bytes: Vec<u8>) {
        if call.images >= self.limits.images || mime != "image/png" {
            call.truncated = true;
            return;
        }
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes.as_slice()));
        let Ok(reader) = decoder.read_info() else {
            call.truncated = true;
            return;
        };
        let (w, h) = (reader.info().width, reader.info().height);
        if w.max(h) > self.limits.image_max_edge
            || u64::from(w) * u64::from(h) > self.limits.image_max_pixels
        {
            call.truncated = true;
            return;
        }
        drop(reader);
        call.images += 1;
        call.blocks.push(Block::Image { mime, data: bytes });
    }

    fn finish(
        &mut self,
        call: Call_,
        end: End,
        fresh: bool,
        startup: Duration,
        total: Duration,
    ) -> ExecResult {
        let last_completed = call
            .operations
            .iter()
            .rev()
            .find(|o| o.error.is_none())
            .map(|o| format!("{} {}", o.operation_id, o.method.as_str()));
        let (status, error) = match end {
            End::Done { ok: true, .. } if !call.over_budget => (ExecStatus::Ok, None),
            End::Done { error, .. } => {
                let status = if call.over_budget {
                    ExecStatus::Limit
                } else {
                    ExecStatus::Error
                };
                // The code of the primitive refusal the script ended on, if it ended on one: the
                // script's word is taken only for a code the host itself refused with.
                let code = error
                    .as_ref()
                    .and_then(|e| e.code)
                    .filter(|c| call.operations.iter().any(|o| o.error == Some(*c)));
                let message = error
                    .as_ref()
                    .map(|e| format!("{}: {}", e.kind, e.message))
                    .unwrap_or_else(|| "the script failed".into());
                (
                    status,
                    Some(ExecError {
                        code: if status == ExecStatus::Limit {
                            Some(ErrorCode::StepLimit)
                        } else {
                            code
                        },
                        message,
                        exception: error,
                        last_completed: last_completed.clone(),
                        uncertain: Vec::new(),
                    }),
                )
            }
            End::Timeout => (
                ExecStatus::Timeout,
                Some(ExecError {
                    code: Some(ErrorCode::Timeout),
                    message: format!(
                        "the script ran past its {} s; writes were revoked, held input released and the runner stopped (its variables are gone)",
                        self.limits.timeout.as_secs()
                    ),
                    exception: None,
                    last_completed: last_completed.clone(),
                    uncertain: Vec::new(),
                }),
            ),
            End::Crashed(message) => (
                ExecStatus::Crashed,
                Some(ExecError {
                    code: Some(ErrorCode::Internal),
                    message: format!("the runner stopped: {message} (its variables are gone)"),
                    exception: None,
                    last_completed: last_completed.clone(),
                    uncertain: Vec::new(),
                }),
            ),
        };
        let mut result = ExecResult {
            status,
            generation: call.generation,
            environment: Environment {
                sandbox: self.sandbox.description().to_owned(),
                fresh_namespace: fresh,
            },
            blocks: call.blocks,
            operations: call.operations,
            last_applied_index: call.last_applied,
            observations: call.observations,
            error,
            timing: Timing {
                total_ms: total.as_millis() as u64,
                startup_ms: startup.as_millis() as u64,
                broker_ms: call.broker.as_millis() as u64,
            },
            truncated: call.truncated,
        };
        let uncertain = result.uncertain();
        if let Some(e) = &mut result.error {
            e.uncertain = uncertain;
        }
        result
    }
}

fn refusal_reply(operation_id: Option<&str>, refusal: &Refusal) -> Value {
    let mut error = json!({"code": refusal.code.as_str(), "message": refusal.message});
    if let Some(effect) = refusal.effect {
        error["state"] = json!(effect.state);
        error["effect_uncertain"] = json!(effect.effect_uncertain);
    }
    if !refusal.details.is_null() {
        error["details"] = refusal.details.clone();
    }
    json!({"type": "reply", "operation_id": operation_id, "ok": false, "error": error})
}
