//! The host's transport to one guest server: HTTP with a deadline on every request and a bound
//! on every body, the guest's token kept here (never in a log, an error or a `Debug`), and
//! failures classified the way the runtime needs them: a read that failed may be tried again;
//! a write that was sent and got no answer is [`GuestError::NoAnswer`] — its effect is unknown
//! and it is never sent again.

use std::time::Duration;

use crate::wire::{ExecuteAnswer, GuestFault, GuestState, InputAnswer, InputRequest, LoggedInput};

/// The largest screenshot body taken (a 4K RGBA PNG that does not compress is ~33 MB; a real
/// screen compresses far below this).
pub const SCREENSHOT_MAX_BYTES: usize = 24 * 1024 * 1024;
/// The largest screen either side (pixels).
pub const SCREEN_MAX_SIDE: u32 = 8192;
/// The largest JSON answer taken.
const JSON_MAX_BYTES: usize = 4 * 1024 * 1024;

/// What went wrong talking to a guest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuestError {
    /// No connection could be made: nothing was sent.
    #[error("the guest is unreachable: {reason}")]
    Unreachable { reason: String },
    /// A read got no (complete) answer in time.
    #[error("the guest did not answer {what} within {after_ms} ms")]
    Timeout { what: String, after_ms: u64 },
    /// A write was sent and no answer came: it may or may not have been applied.
    #[error("the guest did not answer input {op}: {reason}")]
    NoAnswer { op: String, reason: String },
    /// The guest answered with an error of its own.
    #[error("the guest refused ({code}): {message}")]
    Refused { code: String, message: String },
    /// The guest's image cannot be used.
    #[error("the guest's screenshot was refused: {reason}")]
    BadImage { reason: String },
    /// The guest answered something this version cannot read.
    #[error("the guest's answer could not be read: {reason}")]
    BadReply { reason: String },
}

impl GuestError {
    /// As the seam's error.
    pub fn surface(self) -> surface::SurfaceError {
        use surface::SurfaceError;
        match self {
            GuestError::Unreachable { .. } => SurfaceError::unavailable(self.to_string()),
            GuestError::Timeout { what, after_ms } => SurfaceError::Timeout { what, after_ms },
            GuestError::Refused { ref code, .. } if code == "stale_boot" => SurfaceError::Stale {
                reason: self.to_string(),
            },
            GuestError::Refused { ref code, .. } if code == "invalid" => {
                SurfaceError::NotActionable {
                    reason: self.to_string(),
                }
            }
            GuestError::Refused { ref code, .. } if code == "unauthorized" => {
                SurfaceError::unavailable(self.to_string())
            }
            GuestError::Refused { .. } => SurfaceError::unavailable(self.to_string()),
            GuestError::NoAnswer { .. } | GuestError::BadReply { .. } => SurfaceError::Internal {
                reason: self.to_string(),
            },
            GuestError::BadImage { .. } => SurfaceError::Internal {
                reason: self.to_string(),
            },
        }
    }
}

/// A guest's token: shown to nobody.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    pub fn new(token: impl Into<String>) -> Token {
        Token(token.into())
    }

    /// A fresh random token (128 bits, hex).
    pub fn generate() -> Token {
        let mut bytes = [0u8; 16];
        // Without randomness the guest gets a token anyway: time and pid (still never shown).
        if getrandom::fill(&mut bytes).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            bytes = (t ^ u128::from(std::process::id())).to_le_bytes();
        }
        Token(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The value, for the one place that sends it (and the guest's launch).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// A checked screenshot: PNG bytes whose size matches the guest's screen.
#[derive(Clone)]
pub struct Shot {
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

/// One guest's transport (see the module docs).
#[derive(Clone)]
pub struct GuestClient {
    base: String,
    token: Option<Token>,
    http: reqwest::Client,
    /// A read's deadline.
    pub read_deadline: Duration,
    /// Every request's round trip (reads whole, body included; input batches), for `/metrics`.
    round_trips: std::sync::Arc<surface::metrics::Histogram>,
}

impl std::fmt::Debug for GuestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestClient")
            .field("base", &self.base)
            .field("token", &self.token.as_ref().map(|_| ".."))
            .finish()
    }
}

impl GuestClient {
    /// The guest server at `base` (`http://127.0.0.1:PORT`).
    pub fn new(base: impl Into<String>, token: Option<Token>) -> GuestClient {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .no_proxy()
            .pool_max_idle_per_host(4)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        GuestClient {
            base: base.into().trim_end_matches('/').to_owned(),
            token,
            http,
            read_deadline: Duration::from_secs(5),
            round_trips: Default::default(),
        }
    }

    /// Times its requests into `histogram` (shared by an adapter's guests).
    pub fn timed_by(mut self, histogram: std::sync::Arc<surface::metrics::Histogram>) -> Self {
        self.round_trips = histogram;
        self
    }

    /// The guest server's address (no credential in it).
    pub fn base(&self) -> &str {
        &self.base
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t.expose()),
            None => r,
        }
    }

    /// A read: one retry after a failure that sent nothing or got no answer.
    async fn read(&self, path: &str, limit: usize) -> Result<(Vec<u8>, String), GuestError> {
        match self.read_once(path, limit).await {
            Err(GuestError::Unreachable { .. } | GuestError::Timeout { .. }) => {
                self.read_once(path, limit).await
            }
            other => other,
        }
    }

    async fn read_once(&self, path: &str, limit: usize) -> Result<(Vec<u8>, String), GuestError> {
        let what = path.to_owned();
        let deadline = self.read_deadline;
        let timeout = || GuestError::Timeout {
            what: what.clone(),
            after_ms: deadline.as_millis() as u64,
        };
        let fut = async {
            let response = self
                .request(reqwest::Method::GET, path)
                .send()
                .await
                .map_err(|e| classify_read(&e, &what, deadline))?;
            body(response, limit).await
        };
        let started = std::time::Instant::now();
        let answer = tokio::time::timeout(deadline, fut).await;
        self.round_trips.observe(started.elapsed());
        answer.map_err(|_| timeout())?
    }

    /// The guest's state now.
    pub async fn state(&self) -> Result<GuestState, GuestError> {
        let (bytes, _) = self.read("/glovebox/v1/state", JSON_MAX_BYTES).await?;
        let state: GuestState = parse(&bytes)?;
        let [w, h] = state.screen;
        if w == 0 || h == 0 || w > SCREEN_MAX_SIDE || h > SCREEN_MAX_SIDE {
            return Err(GuestError::BadReply {
                reason: format!("a {w}×{h} screen"),
            });
        }
        Ok(state)
    }

    /// The screen as PNG, checked: a PNG (signature, header and every row decoded), no bigger
    /// than [`SCREENSHOT_MAX_BYTES`], of exactly the `screen` size the guest reported.
    pub async fn screenshot(&self, screen: [u32; 2]) -> Result<Shot, GuestError> {
        let (png, _) = self.read("/screenshot", SCREENSHOT_MAX_BYTES).await?;
        check_png(png, screen)
    }

    /// Sends one action's input. Never retried: an answer that does not come is
    /// [`GuestError::NoAnswer`].
    pub async fn input(
        &self,
        request: &InputRequest,
        deadline: Duration,
    ) -> Result<InputAnswer, GuestError> {
        let op = request.op.clone();
        let no_answer = |reason: String| GuestError::NoAnswer {
            op: op.clone(),
            reason,
        };
        let fut = async {
            let response = self
                .request(reqwest::Method::POST, "/glovebox/v1/input")
                .json(request)
                .send()
                .await
                .map_err(|e| {
                    if e.is_connect() {
                        GuestError::Unreachable { reason: short(&e) }
                    } else {
                        no_answer(short(&e))
                    }
                })?;
            match body(response, JSON_MAX_BYTES).await {
                Ok((bytes, _)) => {
                    parse::<InputAnswer>(&bytes).map_err(|e| no_answer(e.to_string()))
                }
                Err(e @ GuestError::Refused { .. }) => Err(e),
                Err(e) => Err(no_answer(e.to_string())),
            }
        };
        let started = std::time::Instant::now();
        let answer = tokio::time::timeout(deadline, fut).await;
        self.round_trips.observe(started.elapsed());
        match answer {
            Ok(r) => r,
            Err(_) => Err(no_answer(format!(
                "no answer within {} ms",
                deadline.as_millis()
            ))),
        }
    }

    /// Releases every key and button the guest holds.
    pub async fn release(&self) -> Result<(), GuestError> {
        let fut = self
            .request(reqwest::Method::POST, "/glovebox/v1/release")
            .send();
        let response = tokio::time::timeout(self.read_deadline, fut)
            .await
            .map_err(|_| GuestError::Timeout {
                what: "release".into(),
                after_ms: self.read_deadline.as_millis() as u64,
            })?
            .map_err(|e| classify_read(&e, "release", self.read_deadline))?;
        body(response, JSON_MAX_BYTES).await.map(|_| ())
    }

    /// The input the guest applied (its own log).
    pub async fn log(&self) -> Result<Vec<LoggedInput>, GuestError> {
        #[derive(serde::Deserialize)]
        struct Log {
            applied: Vec<LoggedInput>,
        }
        let (bytes, _) = self.read("/glovebox/v1/log", JSON_MAX_BYTES).await?;
        Ok(parse::<Log>(&bytes)?.applied)
    }

    /// OSWorld's `/setup/launch`: starts `args` in the guest without waiting; its pid.
    pub async fn launch(&self, args: &[String]) -> Result<u32, GuestError> {
        #[derive(serde::Deserialize)]
        struct Launched {
            pid: u32,
        }
        let payload = serde_json::json!({"command": args, "shell": false});
        let launched: Launched = self
            .write("launch", "/setup/launch", &payload, self.read_deadline)
            .await?;
        Ok(launched.pid)
    }

    /// OSWorld's `/execute`: runs `command` through the guest's shell (a write: not retried).
    pub async fn execute(
        &self,
        command: &str,
        deadline: Duration,
    ) -> Result<ExecuteAnswer, GuestError> {
        let payload = serde_json::json!({"command": command, "shell": true});
        self.write("execute", "/execute", &payload, deadline).await
    }

    /// One write (`op`) of `payload` to `path` within `deadline`, never retried: an answer that
    /// does not come is `NoAnswer` (it may have been applied), a refused connection
    /// `Unreachable`. Timed like every request.
    async fn write<T: serde::de::DeserializeOwned>(
        &self,
        op: &str,
        path: &str,
        payload: &serde_json::Value,
        deadline: Duration,
    ) -> Result<T, GuestError> {
        let no_answer = |reason: String| GuestError::NoAnswer {
            op: op.to_owned(),
            reason,
        };
        let fut = async {
            let response = self
                .request(reqwest::Method::POST, path)
                .json(payload)
                .send()
                .await
                .map_err(|e| {
                    if e.is_connect() {
                        GuestError::Unreachable { reason: short(&e) }
                    } else {
                        no_answer(short(&e))
                    }
                })?;
            let (bytes, _) = body(response, JSON_MAX_BYTES).await?;
            parse(&bytes)
        };
        let started = std::time::Instant::now();
        let answer = tokio::time::timeout(deadline, fut).await;
        self.round_trips.observe(started.elapsed());
        answer.map_err(|_| no_answer(format!("no answer within {} ms", deadline.as_millis())))?
    }
}

/// An error's words without the URL (which names no credential, but is noise).
fn short(e: &reqwest::Error) -> String {
    let mut text = e.without_url_ref().to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

trait WithoutUrl {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_ref(&self) -> String {
        if self.is_connect() {
            "cannot connect".into()
        } else if self.is_timeout() {
            "timed out".into()
        } else if self.is_body() || self.is_decode() {
            "the body broke off".into()
        } else {
            "the request failed".into()
        }
    }
}

fn classify_read(e: &reqwest::Error, what: &str, deadline: Duration) -> GuestError {
    if e.is_connect() {
        GuestError::Unreachable { reason: short(e) }
    } else if e.is_timeout() {
        GuestError::Timeout {
            what: what.to_owned(),
            after_ms: deadline.as_millis() as u64,
        }
    } else {
        // Sent, and the connection broke before an answer: for a read, as good as a timeout.
        GuestError::Timeout {
            what: format!("{what} ({})", short(e)),
            after_ms: deadline.as_millis() as u64,
        }
    }
}

/// The body of a response, at most `limit` bytes (a longer one is refused as it arrives, not
/// after); an error status becomes [`GuestError::Refused`].
async fn body(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, String), GuestError> {
    let status = response.status();
    let kind = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if let Some(len) = response.content_length()
        && len > limit as u64
    {
        return Err(too_big(status, len as usize, limit));
    }
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > limit {
                    return Err(too_big(status, bytes.len() + chunk.len(), limit));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(GuestError::Timeout {
                    what: format!("a body ({})", short(&e)),
                    after_ms: 0,
                });
            }
        }
    }
    if !status.is_success() {
        let fault: GuestFault = serde_json::from_slice(&bytes).unwrap_or(GuestFault {
            code: if status.as_u16() == 401 {
                "unauthorized".into()
            } else {
                "internal".into()
            },
            message: format!("HTTP {}", status.as_u16()),
        });
        return Err(GuestError::Refused {
            code: fault.code,
            message: protocol::text::truncate_chars(&fault.message, 300)
                .0
                .to_owned(),
        });
    }
    Ok((bytes, kind))
}

fn too_big(status: reqwest::StatusCode, got: usize, limit: usize) -> GuestError {
    let reason = format!("{got} bytes or more, at most {limit} taken");
    if status.is_success() {
        GuestError::BadImage { reason }
    } else {
        GuestError::BadReply { reason }
    }
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, GuestError> {
    serde_json::from_slice(bytes).map_err(|e| GuestError::BadReply {
        reason: e.to_string(),
    })
}

/// Checks a screenshot (see [`GuestClient::screenshot`]).
pub fn check_png(png: Vec<u8>, screen: [u32; 2]) -> Result<Shot, GuestError> {
    let bad = |reason: String| GuestError::BadImage { reason };
    if png.len() > SCREENSHOT_MAX_BYTES {
        return Err(bad(format!("{} bytes", png.len())));
    }
    if !png.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Err(bad("not a PNG".into()));
    }
    let mut decoder = png::Decoder::new(std::io::Cursor::new(&png));
    decoder.set_limits(png::Limits {
        bytes: 256 * 1024 * 1024,
    });
    let mut reader = decoder
        .read_info()
        .map_err(|e| bad(format!("its header: {e}")))?;
    let (width, height) = {
        let info = reader.info();
        (info.width, info.height)
    };
    if width == 0 || height == 0 || width > SCREEN_MAX_SIDE || height > SCREEN_MAX_SIDE {
        return Err(bad(format!("{width}×{height} pixels")));
    }
    if [width, height] != screen {
        return Err(bad(format!(
            "{width}×{height} pixels, and the guest's screen is {}×{}",
            screen[0], screen[1]
        )));
    }
    // Every row decodes: a truncated or corrupt image is refused here, not shown.
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| bad("its size overflows".into()))?;
    let mut buf = vec![0; size];
    reader
        .next_frame(&mut buf)
        .map_err(|e| bad(format!("its data: {e}")))?;
    Ok(Shot { png, width, height })
}
