//! A person's live view of a tab through CDP (`004_…` Resources 与统一操作预览): its own
//! attachment to the tab's target, never an agent's; a screencast of the page, frames
//! single-flight (Chromium sends the next frame only once the previous one is acknowledged, and
//! the acknowledgement waits out the view's minimum interval); a person's input dispatched as
//! theirs. Which input pauses the agent, and the frames' generations, are the runtime's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cdp::domains::target;
use cdp::{EventStream, Session, TargetId};
use serde_json::{Value, json};
use surface::{
    BoxFuture, CastFrame, HistoryMove, KeyEvent, PersonCast, PersonEntry, PersonInput,
    PointerEvent, SurfaceError,
};

/// The largest frame the screencast sends (CSS px; the page's own size when smaller). Frames are
/// sent at the page's own size below it: a smaller cap made Chromium scale each frame, which cost
/// more CPU than it saved (`glovebox bench console`: 0.79–0.86 against 0.58–0.65 cores).
const MAX_FRAME: (u32, u32) = (1600, 1200);

/// One person's view of one tab. Detaches when dropped.
pub(crate) struct Screencast {
    entry: Arc<Entry>,
    browser: Session,
    frames: EventStream,
    casting: bool,
    /// The browser's id of the frame delivered last, not yet acknowledged.
    unacked: Option<i64>,
    last_delivered: Option<Instant>,
}

/// The view's entry: its session, for input and liveness beside the frames.
struct Entry {
    session: Session,
}

fn cdp_error(e: cdp::CdpError) -> SurfaceError {
    crate::BrowserError::from(e).into()
}

impl Screencast {
    pub(crate) async fn open(browser: Session, target: String) -> Result<Screencast, SurfaceError> {
        let gone = || SurfaceError::lost("the tab is not open in this browser");
        let session =
            tokio::time::timeout(Duration::from_secs(3), browser.attach(&TargetId(target)))
                .await
                .map_err(|_| gone())?
                .map_err(|_| gone())?;
        let frames = session.subscribe(&["Page.screencastFrame"]);
        Ok(Screencast {
            entry: Arc::new(Entry { session }),
            browser,
            frames,
            casting: false,
            unacked: None,
            last_delivered: None,
        })
    }
}

impl PersonCast for Screencast {
    fn start(&mut self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            if self.casting {
                return Ok(());
            }
            let params = json!({"format": "jpeg", "quality": 60, "maxWidth": MAX_FRAME.0, "maxHeight": MAX_FRAME.1, "everyNthFrame": 1});
            self.entry
                .session
                .send_raw("Page.startScreencast", params, Duration::from_secs(3))
                .await
                .map_err(cdp_error)?;
            self.casting = true;
            Ok(())
        })
    }

    fn stop(&mut self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            if !self.casting {
                return Ok(());
            }
            self.casting = false;
            self.unacked = None;
            self.entry
                .session
                .send_raw("Page.stopScreencast", json!({}), Duration::from_secs(3))
                .await
                .map_err(cdp_error)?;
            Ok(())
        })
    }

    fn next_frame(
        &mut self,
        min_interval: Duration,
    ) -> BoxFuture<'_, Result<CastFrame, SurfaceError>> {
        Box::pin(async move {
            loop {
                // Cancel-safe: the frame stays unacknowledged until the acknowledgement was sent.
                if let Some(id) = self.unacked {
                    if let Some(last) = self.last_delivered {
                        tokio::time::sleep(min_interval.saturating_sub(last.elapsed())).await;
                    }
                    let _ = self
                        .entry
                        .session
                        .send_raw(
                            "Page.screencastFrameAck",
                            json!({"sessionId": id}),
                            Duration::from_secs(3),
                        )
                        .await;
                    self.unacked = None;
                }
                if !self.casting {
                    std::future::pending::<()>().await;
                }
                let event = match self.frames.recv().await {
                    Some(Ok(event)) => event,
                    Some(Err(_lagged)) => continue,
                    None => return Err(SurfaceError::lost("the browser connection closed")),
                };
                let p = &event.params;
                let Some(id) = p["sessionId"].as_i64() else {
                    continue;
                };
                self.unacked = Some(id);
                if !self.casting {
                    continue;
                }
                let Some(data) = p["data"].as_str() else {
                    continue;
                };
                let m = &p["metadata"];
                self.last_delivered = Some(Instant::now());
                return Ok(CastFrame {
                    captured_at: m["timestamp"].as_f64().map(|t| (t * 1000.0) as u64),
                    data: data.to_owned(),
                    width: m["deviceWidth"].as_f64().unwrap_or(0.0),
                    height: m["deviceHeight"].as_f64().unwrap_or(0.0),
                    scroll_x: m["scrollOffsetX"].as_f64().unwrap_or(0.0),
                    scroll_y: m["scrollOffsetY"].as_f64().unwrap_or(0.0),
                });
            }
        })
    }

    fn entry(&self) -> Arc<dyn PersonEntry> {
        self.entry.clone()
    }
}

impl PersonEntry for Entry {
    fn alive(&self, deadline: Duration) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            tokio::time::timeout(
                deadline,
                self.session
                    .send_raw("Page.getLayoutMetrics", json!({}), deadline),
            )
            .await
            .is_ok_and(|r| r.is_ok())
        })
    }

    fn input(&self, input: PersonInput) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            let call = |method: &'static str, params: Value| async move {
                self.session
                    .send_raw(method, params, Duration::from_secs(5))
                    .await
                    .map_err(cdp_error)
            };
            match input {
                PersonInput::Pointer {
                    event,
                    x,
                    y,
                    button,
                    click_count,
                    delta_x,
                    delta_y,
                    modifiers,
                } => {
                    let kind = match event {
                        PointerEvent::Down => "mousePressed",
                        PointerEvent::Up => "mouseReleased",
                        PointerEvent::Move => "mouseMoved",
                        PointerEvent::Wheel => "mouseWheel",
                    };
                    let mut params =
                        json!({"type": kind, "x": x, "y": y, "modifiers": modifiers.unwrap_or(0)});
                    if matches!(event, PointerEvent::Down | PointerEvent::Up) {
                        params["button"] = json!(button.unwrap_or_else(|| "left".into()));
                        params["clickCount"] = json!(click_count.unwrap_or(1));
                    }
                    if event == PointerEvent::Wheel {
                        params["deltaX"] = json!(delta_x.unwrap_or(0.0));
                        params["deltaY"] = json!(delta_y.unwrap_or(0.0));
                    }
                    call("Input.dispatchMouseEvent", params).await?;
                }
                PersonInput::Key {
                    event,
                    key,
                    code,
                    key_code,
                    modifiers,
                } => {
                    let modifiers = modifiers.unwrap_or(0);
                    // A printable key types its character unless a command modifier (Ctrl, Alt, Meta) is held.
                    let text = match key.as_str() {
                        "Enter" => Some("\r".to_owned()),
                        k if k.chars().count() == 1 && modifiers & 0b0111 == 0 => {
                            Some(k.to_owned())
                        }
                        _ => None,
                    };
                    let mut params = json!({"key": key, "modifiers": modifiers});
                    if let Some(code) = code {
                        params["code"] = json!(code);
                    }
                    if let Some(c) = key_code {
                        params["windowsVirtualKeyCode"] = json!(c);
                    }
                    match event {
                        KeyEvent::Down => {
                            params["type"] = json!(if text.is_some() {
                                "keyDown"
                            } else {
                                "rawKeyDown"
                            });
                            if let Some(text) = text {
                                params["text"] = json!(text);
                                params["unmodifiedText"] = json!(text);
                            }
                        }
                        KeyEvent::Up => params["type"] = json!("keyUp"),
                    }
                    call("Input.dispatchKeyEvent", params).await?;
                }
                PersonInput::Navigate { url } => {
                    call("Page.navigate", json!({"url": url})).await?;
                }
                PersonInput::History {
                    to: HistoryMove::Reload,
                } => {
                    call("Page.reload", json!({})).await?;
                }
                PersonInput::History { to } => {
                    let history = call("Page.getNavigationHistory", json!({})).await?;
                    let current = history["currentIndex"].as_i64().unwrap_or(0);
                    let index = current + if to == HistoryMove::Back { -1 } else { 1 };
                    if let Some(entry) = history["entries"]
                        .as_array()
                        .and_then(|e| usize::try_from(index).ok().and_then(|i| e.get(i)))
                    {
                        call(
                            "Page.navigateToHistoryEntry",
                            json!({"entryId": entry["id"]}),
                        )
                        .await?;
                    }
                }
            }
            Ok(())
        })
    }
}

impl Drop for Screencast {
    fn drop(&mut self) {
        let (browser, id, casting) = (
            self.browser.clone(),
            self.entry.session.id().cloned(),
            self.casting,
        );
        let session = self.entry.session.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if casting {
                    let _ = session
                        .send_raw("Page.stopScreencast", json!({}), Duration::from_secs(2))
                        .await;
                }
                if let Some(id) = id {
                    let _ = browser
                        .call(target::DetachFromTarget { session_id: id })
                        .await;
                }
            });
        }
    }
}
