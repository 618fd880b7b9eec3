//! The runner and its sandbox against a broker that records what reaches it (no surface: the
//! runtime's broker and real Chromium are tested in `runtime/tests/it/script.rs`). Every escape
//! a script might try is a test of its own.

mod escape;
mod runner;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::ErrorCode;
use script::{Answer, BoxFuture, Broker, Call, Effect, EffectState, Refusal, Sandbox};
use serde_json::json;
use tokio::sync::OnceCell;

/// One sandbox per test binary (the probe writes the SDK and tries a run).
pub async fn sandbox() -> Arc<Sandbox> {
    static SANDBOX: OnceCell<Arc<Sandbox>> = OnceCell::const_new();
    SANDBOX
        .get_or_init(|| async {
            Arc::new(Sandbox::probe().await.unwrap_or_else(|e| {
                panic!(
                    "the sandbox is required for these tests (make test installs bubblewrap): {e}"
                )
            }))
        })
        .await
        .clone()
}

/// What the recording broker saw.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    Call(String, script::Method),
    Revoke,
}

/// A broker that answers every method plausibly and records each call and revocation, in order.
#[derive(Default)]
pub struct Recorder {
    pub seen: Mutex<Vec<Seen>>,
    pub act_delay: Mutex<Duration>,
    pub frames: std::sync::atomic::AtomicU64,
}

impl Recorder {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
    pub fn calls(&self, method: script::Method) -> usize {
        self.seen()
            .iter()
            .filter(|s| matches!(s, Seen::Call(_, m) if *m == method))
            .count()
    }
}

impl Broker for Recorder {
    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<Answer, Refusal>> {
        Box::pin(async move {
            self.seen
                .lock()
                .unwrap()
                .push(Seen::Call(call.operation_id.to_owned(), call.method));
            let surface = call.resource.unwrap_or("s1").to_owned();
            let frame = |n: u64| format!("frame_{n}");
            match call.method {
                script::Method::Observe | script::Method::WaitFor => {
                    let n = self
                        .frames
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(Answer {
                        value: json!({"text": "- button \"Save\" [ref=e1]", "url": "http://127.0.0.1/", "title": "T", "surface": surface}),
                        surface: Some(surface),
                        observation: Some(frame(n)),
                        ..Answer::default()
                    })
                }
                script::Method::Act => {
                    let delay = *self.act_delay.lock().unwrap();
                    tokio::time::sleep(delay).await;
                    if call.observation.is_none() {
                        return Err(Refusal::new(ErrorCode::StaleObservation, "no token"));
                    }
                    let n = self
                        .frames
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(Answer {
                        value: json!({"receipt": {"action": "click", "state": "dispatched"}}),
                        effect: Some(Effect {
                            state: EffectState::Applied,
                            effect_uncertain: false,
                        }),
                        surface: Some(surface),
                        observation: Some(frame(n)),
                        ..Answer::default()
                    })
                }
                script::Method::Screenshot => Ok(Answer {
                    value: json!({}),
                    image: Some(tiny_png(4, 3)),
                    surface: Some(surface),
                    ..Answer::default()
                }),
                script::Method::Open => Ok(Answer {
                    value: json!({"surface": "s2"}),
                    effect: Some(Effect {
                        state: EffectState::Applied,
                        effect_uncertain: false,
                    }),
                    surface: Some("s2".into()),
                    observation: Some("frame_9".into()),
                    ..Answer::default()
                }),
                script::Method::Surfaces => Ok(Answer {
                    value: json!({"surfaces": [{"key": "s1"}]}),
                    ..Answer::default()
                }),
                script::Method::Close => {
                    Err(Refusal::new(ErrorCode::CapabilityDenied, "not yours"))
                }
            }
        })
    }

    fn revoke(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.seen.lock().unwrap().push(Seen::Revoke) })
    }
}

pub fn tiny_png(w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    let mut writer = enc.write_header().unwrap();
    writer
        .write_image_data(&vec![200u8; (w * h * 3) as usize])
        .unwrap();
    writer.finish().unwrap();
    out
}

/// Runs `code` in a fresh runner with `limits` and returns the result and the recorder.
pub async fn run_once(
    code: &str,
    limits: script::Limits,
) -> (script::ExecResult, Arc<Recorder>, script::Runner) {
    let recorder = Arc::new(Recorder::default());
    let mut runner = script::Runner::new(sandbox().await, limits);
    let result = runner.exec(code, Some("s1"), &*recorder).await;
    (result, recorder, runner)
}

/// The text blocks of a result, joined.
pub fn text(result: &script::ExecResult) -> String {
    result.printed()
}
