//! `gui_exec` (`004_…` 持续运行器与代码契约): a session's persistent scripting context and the
//! broker that serves it. The broker holds nothing the script can reach: it maps each primitive
//! onto the runtime's own operations — `open_tab`, `observe`, `act` (the one checked path:
//! binding, lease, freshness, capability, origin, tier, a person, cancellation) — so a script can
//! do exactly what the same session's `act` calls could, never more. Page text a script reads is
//! data; nothing in it widens what the next primitive may do.
//!
//! One runner per session, one call at a time (a second call of the same session is refused
//! while one runs). The sandbox is probed once per process; when it cannot be had, `gui_exec` is
//! unavailable with the reason (and `doctor` says it) — never run without it.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::{ErrorCode, ExtendedAction, ImageMime, SurfaceName};
use script::{Answer, BoxFuture, Broker, Call, Effect, EffectState, Method, Refusal};
use serde_json::{Value, json};
use surface::{ActOptions, ObserveOptions, SurfaceError};

use protocol::SessionId;

use crate::{EventKind, Runtime, RuntimeError};

/// How often a `wait_for` looks again.
const WAIT_POLL: Duration = Duration::from_millis(150);

/// The process's sandbox (probed once) and every session's runner.
#[derive(Default)]
pub(crate) struct Scripts {
    sandbox: tokio::sync::OnceCell<Result<Arc<script::Sandbox>, script::Unavailable>>,
    runners: Mutex<HashMap<String, Arc<tokio::sync::Mutex<script::Runner>>>>,
}

impl Scripts {
    async fn sandbox(&self) -> Result<Arc<script::Sandbox>, script::Unavailable> {
        self.sandbox
            .get_or_init(|| async { script::Sandbox::probe().await.map(Arc::new) })
            .await
            .clone()
    }

    /// Ends a session's runner (its process and namespace).
    pub(crate) async fn end(&self, session: &str) {
        let runner = self
            .runners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session);
        if let Some(runner) = runner {
            runner.lock().await.close().await;
        }
    }
}

impl Runtime {
    /// Whether `gui_exec` can run here, or why not (for `doctor` and the tool list).
    pub async fn script_sandbox(&self) -> Result<String, script::Unavailable> {
        self.inner
            .scripts
            .sandbox()
            .await
            .map(|s| s.description().to_owned())
    }

    /// Runs `code` in the session's persistent scripting context, on `surface` (or the session's
    /// primary surface) by default. A primitive that needs a person waits for one up to
    /// `wait_for_person` (within the call's time); unanswered, it raises `NeedsApproval` in the
    /// script, and the same step sent again after a person decided proceeds once.
    pub async fn gui_exec(
        &self,
        session: &SessionId,
        surface: Option<&SurfaceName>,
        code: &str,
        wait_for_person: Duration,
    ) -> Result<script::ExecResult, RuntimeError> {
        let name = session.as_str();
        // The session must be open and its tools on; each primitive then takes its own turn.
        drop(self.begin(name).await?);
        let sandbox = self.inner.scripts.sandbox().await.map_err(|e| {
            RuntimeError::Surface(SurfaceError::BackendUnavailable {
                reason: format!("gui_exec is unavailable: {e}"),
            })
        })?;
        let key = match surface {
            Some(s) => Some(self.resolve(name, Some(s))?.2),
            None => self.resolve(name, None).ok().map(|(_, _, key)| key),
        };
        let runner = self
            .inner
            .scripts
            .runners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name.to_owned())
            .or_insert_with(|| {
                Arc::new(tokio::sync::Mutex::new(script::Runner::new(
                    sandbox,
                    self.inner.config.script_limits,
                )))
            })
            .clone();
        let mut runner = runner.try_lock().map_err(|_| RuntimeError::LeaseConflict {
            holder: "another gui_exec call of this session (one runs at a time)".into(),
        })?;
        let broker = SessionBroker {
            runtime: self.clone(),
            session: session.clone(),
            call_surface: key.clone(),
            wait_for_person,
            generation: runner.generation() + 1,
            revoked: AtomicBool::new(false),
            touched: Mutex::default(),
            finished: AtomicBool::new(false),
        };
        let result = runner.exec(code, key.as_deref(), &broker).await;
        broker.finished.store(true, Ordering::SeqCst);
        Ok(result)
    }

    /// The session's focused surface, if any.
    fn focused_surface(&self, session: &SessionId) -> Option<crate::SurfaceId> {
        let state = self.session(session.as_str()).ok()?;
        *state.focused.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets go of keys and buttons a script left held on a surface (its call was revoked).
    async fn release_held_input(&self, session: &SessionId, key: &str) -> Result<(), RuntimeError> {
        let name = SurfaceName::new(key).map_err(|e| RuntimeError::InvalidAction(e.to_string()))?;
        let (_, entry, _) = self.resolve(session.as_str(), Some(&name))?;
        let attached = self.attach(&entry).await?;
        tokio::time::timeout(Duration::from_secs(2), attached.tab().release_input())
            .await
            .map_err(|_| {
                RuntimeError::Surface(SurfaceError::Timeout {
                    what: "releasing held input".into(),
                    after_ms: 2000,
                })
            })??;
        Ok(())
    }

    /// Whether `locator` finds an element in the surface's latest observation's document now.
    async fn locate_now(
        &self,
        session: &SessionId,
        surface: &SurfaceName,
        locator: &protocol::extended::Locator,
    ) -> Result<bool, RuntimeError> {
        let (_, entry, _) = self.resolve(session.as_str(), Some(surface))?;
        let attached = self.attach(&entry).await?;
        let tab = attached.tab();
        let Some(record) = tab.latest_frame() else {
            return Ok(false);
        };
        Ok(
            tokio::time::timeout(Duration::from_secs(5), tab.locate(&*record, locator))
                .await
                .ok()
                .flatten()
                .is_some(),
        )
    }
}

/// One call's broker: the session, its call surface, and whether its writes were revoked.
struct SessionBroker {
    runtime: Runtime,
    session: SessionId,
    call_surface: Option<String>,
    wait_for_person: Duration,
    generation: u64,
    revoked: AtomicBool,
    /// The surfaces a write reached (their held input is released on revocation).
    touched: Mutex<BTreeSet<String>>,
    /// The call came to its end (a result); unset when its future was dropped (a cancelled
    /// tool call), which kills the runner with it.
    finished: AtomicBool,
}

/// A call dropped half-way (the client cancelled it): its runner process is killed by its own
/// drop, and keys or buttons its steps left held are released here, since the revocation that
/// does it on a timeout never ran.
impl Drop for SessionBroker {
    fn drop(&mut self) {
        if self.finished.load(Ordering::SeqCst) || self.revoked.load(Ordering::SeqCst) {
            return;
        }
        let touched = self.touched();
        if touched.is_empty() {
            return;
        }
        let (runtime, session) = (self.runtime.clone(), self.session.clone());
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                for key in touched {
                    let _ = runtime.release_held_input(&session, &key).await;
                }
            });
        }
    }
}

impl Broker for SessionBroker {
    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<Answer, Refusal>> {
        Box::pin(async move {
            let result = if call.method.writes() && self.revoked.load(Ordering::SeqCst) {
                Err(Refusal::new(
                    ErrorCode::Cancelled,
                    "this call's writes were revoked",
                ))
            } else {
                self.run(call).await
            };
            self.runtime.emit(
                self.session.as_str(),
                EventKind::ScriptStep {
                    generation: self.generation,
                    operation_id: call.operation_id.to_owned(),
                    method: call.method.as_str().to_owned(),
                    state: result
                        .as_ref()
                        .ok()
                        .and_then(|a| a.effect)
                        .map(|e| effect_name(e.state).to_owned()),
                    error: result.as_ref().err().map(|r| r.code),
                },
            );
            result
        })
    }

    fn revoke(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.revoked.store(true, Ordering::SeqCst);
            for key in self.touched() {
                let _ = self.runtime.release_held_input(&self.session, &key).await;
            }
        })
    }
}

fn effect_name(state: EffectState) -> &'static str {
    match state {
        EffectState::Applied => "applied",
        EffectState::Failed => "failed",
        EffectState::Unknown => "unknown",
    }
}

/// A runtime error as the script sees it: its code, its message, and a pending approval's id.
fn refusal(e: RuntimeError) -> Refusal {
    let mut r = Refusal::new(e.code(), e.to_string());
    if let RuntimeError::NeedsApproval { approval_id, .. } = &e {
        r.details = json!({"approval_id": approval_id.as_str()});
    }
    r
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new(ErrorCode::InvalidAction, message)
}

impl SessionBroker {
    /// The surfaces a write of this call reached.
    fn touched(&self) -> Vec<String> {
        self.touched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    fn remaining(&self, deadline: Instant) -> Duration {
        deadline.saturating_duration_since(Instant::now())
    }

    /// The surface a request names: its own, else the call's.
    fn surface(&self, call: &Call<'_>) -> Result<SurfaceName, Refusal> {
        let name = call
            .resource
            .map(str::to_owned)
            .or_else(|| self.call_surface.clone())
            .ok_or_else(|| {
                Refusal::new(
                    ErrorCode::AmbiguousSurface,
                    "this call has no surface; open one with ui.browser.open(url)",
                )
            })?;
        SurfaceName::new(name).map_err(|e| Refusal::new(ErrorCode::UnknownSurface, e.to_string()))
    }

    async fn run(&self, call: Call<'_>) -> Result<Answer, Refusal> {
        let args = call.arguments;
        match call.method {
            Method::Open => self.open(&call).await,
            Method::Surfaces => {
                let turn = self.runtime.current_turn(&self.session).map_err(refusal)?;
                let context = self
                    .runtime
                    .surface_context(&self.session, &turn, 0)
                    .await
                    .map_err(refusal)?;
                let context = serde_json::to_value(&context).unwrap_or(Value::Null);
                Ok(Answer {
                    value: json!({"surfaces": context.get("surfaces").cloned().unwrap_or(json!([])), "primary": context.get("primary_surface_key")}),
                    ..Answer::default()
                })
            }
            Method::Observe | Method::Screenshot => {
                let surface = self.surface(&call)?;
                let screenshot = call.method == Method::Screenshot
                    || args.get("screenshot").and_then(Value::as_bool) == Some(true);
                let near = match args.get("near") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(
                        serde_json::from_value::<protocol::NearText>(v.clone())
                            .map_err(|e| invalid(format!("near: {e}")))?,
                    ),
                };
                let options = ObserveOptions {
                    screenshot: screenshot.then_some(ImageMime::Png),
                    near,
                    deadline: self
                        .remaining(call.deadline)
                        .min(ObserveOptions::default().deadline),
                    ..ObserveOptions::default()
                };
                let mut o = self
                    .runtime
                    .observe(&self.session, Some(&surface), &options)
                    .await
                    .map_err(refusal)?;
                let image = o
                    .take_screenshot()
                    .and_then(|s| surface::decode_base64(&s.data));
                let key = self.key_of(&surface);
                let value = if call.method == Method::Screenshot {
                    json!({"surface": key})
                } else {
                    observed(&o, &key)
                };
                Ok(Answer {
                    value,
                    image,
                    surface: Some(key),
                    observation: Some(o.frame_id().as_str().to_owned()),
                    effect: None,
                })
            }
            Method::Act => self.act(&call).await,
            Method::WaitFor => self.wait_for(&call).await,
            Method::Close => {
                let surface = self.surface(&call)?;
                let id = self
                    .runtime
                    .surface_id(&self.session, &surface)
                    .map_err(refusal)?;
                self.runtime
                    .close_tab(&self.session, id)
                    .await
                    .map_err(refusal)?;
                Ok(Answer {
                    value: json!({"closed": surface.as_str()}),
                    effect: Some(Effect {
                        state: EffectState::Applied,
                        effect_uncertain: false,
                    }),
                    ..Answer::default()
                })
            }
        }
    }

    /// The canonical key of a surface name (a script may use an alias).
    fn key_of(&self, surface: &SurfaceName) -> String {
        self.runtime
            .resolve(self.session.as_str(), Some(surface))
            .map(|(_, _, key)| key)
            .unwrap_or_else(|_| surface.as_str().to_owned())
    }

    async fn open(&self, call: &Call<'_>) -> Result<Answer, Refusal> {
        let url = call
            .arguments
            .get("url")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("open needs a url"))?;
        let background = call
            .arguments
            .get("background")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let focused = self.runtime.focused_surface(&self.session);
        let wait = self.wait_for_person.min(self.remaining(call.deadline));
        let id = self
            .runtime
            .open_tab(&self.session, url, wait)
            .await
            .map_err(refusal)?;
        // In the background: the session's focus (what a call without a surface means) stays.
        if background && let Some(previous) = focused {
            let _ = self.runtime.focus(&self.session, previous);
        }
        let key = self
            .runtime
            .surface_key(&self.session, id)
            .ok_or_else(|| Refusal::new(ErrorCode::TargetLost, "the new tab is gone"))?;
        self.touched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone());
        Ok(Answer {
            value: json!({"surface": key}),
            effect: Some(Effect {
                state: EffectState::Applied,
                effect_uncertain: false,
            }),
            surface: Some(key),
            ..Answer::default()
        })
    }

    async fn act(&self, call: &Call<'_>) -> Result<Answer, Refusal> {
        let surface = self.surface(call)?;
        let raw = call
            .arguments
            .get("action")
            .ok_or_else(|| invalid("act needs an action"))?;
        // The strict validator of every transport: unknown fields, bounds, kinds.
        let action: ExtendedAction =
            protocol::validate_extended_action(raw).map_err(|e| invalid(e.to_string()))?;
        if call.observation != Some(action.expected_frame_id().as_str()) {
            return Err(Refusal::new(
                ErrorCode::StaleObservation,
                "the action's expected_frame_id is not the observation token the request names",
            ));
        }
        let key = self.key_of(&surface);
        let options = ActOptions {
            deadline: self
                .remaining(call.deadline)
                .min(ActOptions::default().deadline),
            ..ActOptions::default()
        };
        let wait = self.wait_for_person.min(self.remaining(call.deadline));
        self.touched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone());
        let outcome = self
            .runtime
            .act(&self.session, Some(&surface), &action, &options, wait)
            .await
            .map_err(refusal)?;
        let receipt = &outcome.receipt;
        let state = match receipt.state() {
            protocol::ReceiptState::Dispatched | protocol::ReceiptState::Confirmed => {
                EffectState::Applied
            }
            protocol::ReceiptState::Attempted | protocol::ReceiptState::Failed => {
                EffectState::Failed
            }
            protocol::ReceiptState::Unknown => EffectState::Unknown,
        };
        let mut value = json!({
            "receipt": receipt,
            "opened": outcome.opened.len(),
            "downloads": crate::downloaded(&outcome),
        });
        if let Some(dialog) = &outcome.dialog {
            value["dialog"] = json!({"kind": dialog.kind, "message": dialog.message});
        }
        let token = outcome.observation.as_ref().map(|o| {
            value["text"] = json!(surface::observation_text_or_changes(o));
            o.frame_id().as_str().to_owned()
        });
        Ok(Answer {
            value,
            image: None,
            effect: Some(Effect {
                state,
                effect_uncertain: receipt.effect_uncertain(),
            }),
            surface: Some(key),
            observation: token,
        })
    }

    /// Observes until the text shows or the locator finds an element, within its timeout and
    /// the call's time.
    async fn wait_for(&self, call: &Call<'_>) -> Result<Answer, Refusal> {
        let surface = self.surface(call)?;
        let args = call.arguments;
        let timeout = args
            .get("timeout_ms")
            .and_then(Value::as_u64)
            .unwrap_or(5000)
            .min(60_000);
        let until = call
            .deadline
            .min(Instant::now() + Duration::from_millis(timeout));
        enum Want {
            Text(String),
            Locator(protocol::extended::Locator),
        }
        let want = match (args.get("text"), args.get("locator")) {
            (Some(Value::String(t)), None) if !t.is_empty() && t.chars().count() <= 500 => {
                Want::Text(t.clone())
            }
            (None, Some(l)) => Want::Locator(
                serde_json::from_value(l.clone()).map_err(|e| invalid(format!("locator: {e}")))?,
            ),
            _ => {
                return Err(invalid(
                    "wait_for needs a text (1-500 characters) or a locator",
                ));
            }
        };
        let key = self.key_of(&surface);
        loop {
            let options = ObserveOptions {
                deadline: self
                    .remaining(call.deadline)
                    .min(ObserveOptions::default().deadline),
                ..ObserveOptions::default()
            };
            let o = self
                .runtime
                .observe(&self.session, Some(&surface), &options)
                .await;
            // A page between two documents is looked at again, not a failure.
            let o = match o {
                Err(e) if e.code() == ErrorCode::StaleObservation => None,
                other => Some(other.map_err(refusal)?),
            };
            if let Some(o) = o {
                let found = match &want {
                    Want::Text(t) => surface::observation_text(&o).contains(t.as_str()),
                    Want::Locator(l) => self
                        .runtime
                        .locate_now(&self.session, &surface, l)
                        .await
                        .map_err(refusal)?,
                };
                if found {
                    return Ok(Answer {
                        value: observed(&o, &key),
                        surface: Some(key),
                        observation: Some(o.frame_id().as_str().to_owned()),
                        ..Answer::default()
                    });
                }
            }
            if Instant::now() + WAIT_POLL >= until {
                return Err(Refusal::new(
                    ErrorCode::Timeout,
                    format!(
                        "{} did not show within {timeout} ms",
                        match &want {
                            Want::Text(t) => format!("the text {t:?}"),
                            Want::Locator(_) => "the element".to_owned(),
                        }
                    ),
                ));
            }
            tokio::time::sleep(WAIT_POLL).await;
        }
    }
}

/// An observation as a script reads it.
fn observed(o: &protocol::Observation, key: &str) -> Value {
    json!({
        "surface": key,
        "text": surface::observation_text(o),
        "url": o.url(),
        "title": o.title(),
    })
}
