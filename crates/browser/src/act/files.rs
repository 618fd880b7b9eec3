//! Files crossing the browser boundary: uploads only from a directory the caller authorised
//! ([`UploadRoot`]), and downloads a click was told to expect, saved into a directory the
//! caller gave ([`DownloadInfo`]); not the decision to allow either (that is policy's and the
//! runtime's: R3 actions, asked each time).
//!
//! # Uploads through a file chooser
//!
//! An `upload` whose target is an `<input type=file>` sets its files directly. Any other target
//! is a control that opens a file chooser (a button whose handler clicks a hidden input, a
//! label): the upload clicks it with interception on (`Page.setInterceptFileChooserDialog`) on
//! the control's frame session, waits up to [`CHOOSER_WAIT`] for `Page.fileChooserOpened`, and
//! answers that chooser's input with `DOM.setFileInputFiles`. The files are authorised before
//! anything is sent, exactly as for a file input: a refused name clicks nothing.
//!
//! Interception is on only while one upload waits for its chooser, and is turned off again on
//! every ending (answered, no chooser, refused, the action's deadline): the action turns it off
//! after dispatch whatever happened, and `release_input` (every run's ending) after an action
//! that was cancelled. An intercepted chooser is never left pending in Chromium
//! (interception replaces opening it), so later clicks open choosers as usual. Outside an
//! upload nothing is intercepted: a chooser that a plain click opens is Chromium's own —
//! headless Chromium cancels it at once (the input gets `cancel`, no file is chosen), a headed
//! browser shows the person its native dialog. A chooser that is not for an
//! `<input type=file>`, or that takes one file when several were given, is not answered (the
//! latter is cancelled, so the page sees `cancel`), and the receipt says why.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::DownloadInfo;
use cdp::EventStream;
use cdp::domains::dom::{ResolveNode, SetFileInputFiles};
use cdp::domains::page::{self, FileChooserOpened, SetInterceptFileChooserDialog};
use protocol::{ErrorCode, ExtendedKind, FrameId, Receipt};
use serde_json::{Value, json};

use super::element::Resolved;
use crate::BrowserError;
use crate::tab::{Tab, lock};

/// How long an upload through a control waits for the page to open a file chooser after the
/// click. A page can open one only while the click's user activation lasts, and does so from
/// the click's handler, so a chooser comes at once or not at all.
const CHOOSER_WAIT: Duration = Duration::from_secs(3);
/// Kept back from the action's deadline so a chooser that never opens still yields a receipt.
const CHOOSER_MARGIN: Duration = Duration::from_millis(250);
/// The longest turning interception off may take (a lost session must not hold up the action).
const DISARM_TIMEOUT: Duration = Duration::from_secs(2);

/// What a download wait saw.
pub(super) enum DownloadEnd {
    Completed(DownloadInfo),
    Canceled,
    /// None began, or it did not finish, before the deadline.
    NotFinished {
        began: bool,
    },
}

/// A download capture armed before the click that starts it.
pub(super) struct DownloadCapture {
    events: cdp::EventStream,
    dir: PathBuf,
    context: Option<String>,
}

impl Tab {
    /// Sets the files of an `<input type=file>` (`DOM.setFileInputFiles`, which fires `input`
    /// and `change`) and returns the names it then holds.
    pub(super) async fn set_files(
        &self,
        r: &Resolved,
        paths: &[PathBuf],
    ) -> Result<Vec<String>, BrowserError> {
        let files = paths
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        r.session
            .call(SetFileInputFiles {
                files,
                backend_node_id: r.backend_node_id,
            })
            .await?;
        let names = self
            .call_on(
                r,
                "function () { return [...(this.files || [])].map((f) => f.name); }",
                vec![],
                false,
            )
            .await?;
        Ok(names
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Uploads `paths` through the file chooser that clicking `control` (at `point`) opens.
    /// See the module docs; the paths are authorised already.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn upload_through_chooser(
        &self,
        control: &Resolved,
        point: (f64, f64),
        paths: &[PathBuf],
        nav: &mut EventStream,
        until: Instant,
        frame: FrameId,
    ) -> Result<Receipt, BrowserError> {
        let kind = ExtendedKind::Upload;
        let session = control.session.clone();
        // Subscribed before interception is on, so the chooser's event cannot be missed.
        let mut opened = session.subscribe(&["Page.fileChooserOpened"]);
        if session.id() != self.session.id() {
            // An out-of-process frame's session reports choosers only with its Page domain on.
            session.call(page::Enable {}).await?;
        }
        lock(&self.state).intercepting_choosers = Some(session.clone());
        session
            .call(SetInterceptFileChooserDialog {
                enabled: true,
                cancel: None,
            })
            .await?;
        self.click_at(point.0, point.1, "left", 1, 0).await?;
        let wait_until =
            (Instant::now() + CHOOSER_WAIT).min(until.checked_sub(CHOOSER_MARGIN).unwrap_or(until));
        let chooser = loop {
            match tokio::time::timeout_at(wait_until.into(), opened.recv()).await {
                Ok(Some(Ok(event))) => {
                    if let Some(chooser) = event.parse::<FileChooserOpened>() {
                        break Some(chooser);
                    }
                }
                Ok(Some(Err(_))) => continue,
                Ok(None) | Err(_) => break None,
            }
        };
        self.stop_intercepting_choosers().await;
        let Some(chooser) = chooser else {
            self.settle(nav, until).await;
            let detail = format!(
                "clicking {} opened no file chooser; target the file input, or the control that opens its chooser",
                control.label
            );
            return Ok(Receipt::failed(
                kind,
                frame,
                ErrorCode::InvalidAction,
                true,
                detail,
            ));
        };
        let Some(backend) = chooser.backend_node_id else {
            self.settle(nav, until).await;
            let detail = "the page opened a file picker that is not an <input type=file>; it cannot be answered";
            return Ok(Receipt::failed(
                kind,
                frame,
                ErrorCode::InvalidAction,
                true,
                detail,
            ));
        };
        let object = session
            .call(ResolveNode {
                backend_node_id: Some(backend),
                execution_context_id: None,
            })
            .await?;
        let object_id = object
            .object
            .object_id
            .ok_or_else(|| BrowserError::Internal {
                reason: "the file chooser's input has no object".into(),
            })?;
        let input = Resolved {
            label: format!("the file input {} opened", control.label),
            session,
            backend_node_id: backend,
            object_id,
            frame_offset: control.frame_offset,
            observed_bounds: None,
            role: String::new(),
            name: String::new(),
            last_facts: Default::default(),
        };
        if chooser.mode != "selectMultiple" && paths.len() > 1 {
            // Not answered; cancelled, so the page is not left waiting for a choice.
            let _ = self
                .call_on(
                    &input,
                    "function () { this.dispatchEvent(new Event('cancel', { bubbles: true })); }",
                    vec![],
                    false,
                )
                .await;
            self.settle(nav, until).await;
            let detail = format!(
                "the file chooser {} opened takes one file, not {}; it was cancelled",
                control.label,
                paths.len()
            );
            return Ok(Receipt::failed(
                kind,
                frame,
                ErrorCode::InvalidAction,
                true,
                detail,
            ));
        }
        let names = self.set_files(&input, paths).await?;
        self.settle(nav, until).await;
        Ok(files_receipt(names, paths, frame))
    }

    /// Turns file-chooser interception off, if an upload turned it on. Best effort: a session
    /// that is gone intercepts nothing any more.
    pub(crate) async fn stop_intercepting_choosers(&self) {
        let Some(session) = lock(&self.state).intercepting_choosers.take() else {
            return;
        };
        let off = session.call(SetInterceptFileChooserDialog {
            enabled: false,
            cancel: None,
        });
        match tokio::time::timeout(DISARM_TIMEOUT, off).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "file-chooser interception could not be turned off")
            }
            Err(_) => tracing::debug!("turning file-chooser interception off timed out"),
        }
    }

    /// Arms a download capture into `dir`: `Browser.setDownloadBehavior` with `allowAndName`
    /// and events, scoped to this tab's browser context when Chromium accepts that.
    pub(super) async fn arm_download(&self, dir: &Path) -> Result<DownloadCapture, BrowserError> {
        std::fs::create_dir_all(dir).map_err(|e| BrowserError::NotActionable {
            reason: format!("the downloads folder cannot be created: {e}"),
        })?;
        let dir = std::fs::canonicalize(dir).map_err(|e| BrowserError::NotActionable {
            reason: format!("the downloads folder cannot be used: {e}"),
        })?;
        let browser = self.session.connection().browser();
        let timeout = self.session.connection().default_timeout();
        let info = browser
            .send_raw(
                "Target.getTargetInfo",
                json!({ "targetId": self.target_id().0 }),
                timeout,
            )
            .await?;
        let context = info
            .pointer("/targetInfo/browserContextId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let events = browser.subscribe(&["Browser.downloadWillBegin", "Browser.downloadProgress"]);
        let mut params = json!({ "behavior": "allowAndName", "downloadPath": dir.to_string_lossy(), "eventsEnabled": true });
        let mut scoped = context.clone();
        if let Some(id) = &context {
            params["browserContextId"] = json!(id);
        }
        if browser
            .send_raw("Browser.setDownloadBehavior", params.clone(), timeout)
            .await
            .is_err()
            && scoped.is_some()
        {
            // The default context is not addressable by id in every Chromium: set it unscoped.
            params.as_object_mut().map(|p| p.remove("browserContextId"));
            scoped = None;
            browser
                .send_raw("Browser.setDownloadBehavior", params, timeout)
                .await?;
        }
        Ok(DownloadCapture {
            events,
            dir,
            context: scoped,
        })
    }

    /// Waits (until `until`) for a download this tab's frames began to complete, then restores
    /// the context's default download behaviour.
    pub(super) async fn await_download(
        &self,
        mut capture: DownloadCapture,
        until: Instant,
    ) -> DownloadEnd {
        let mut began: Option<(String, String, String)> = None;
        let end = loop {
            let left = until.saturating_duration_since(Instant::now());
            let event = match tokio::time::timeout(left, capture.events.recv()).await {
                Ok(Some(Ok(event))) => event,
                Ok(Some(Err(_))) => continue,
                Ok(None) | Err(_) => {
                    break DownloadEnd::NotFinished {
                        began: began.is_some(),
                    };
                }
            };
            let p = &event.params;
            let text = |k: &str| {
                p.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            match event.method.as_str() {
                "Browser.downloadWillBegin"
                    if began.is_none() && self.owns_frame(&text("frameId")) =>
                {
                    began = Some((
                        text("guid"),
                        text("suggestedFilename"),
                        policy::redact_url(&text("url")),
                    ));
                }
                "Browser.downloadProgress" => {
                    let Some((guid, suggested, url)) = &began else {
                        continue;
                    };
                    if text("guid") != *guid {
                        continue;
                    }
                    match text("state").as_str() {
                        "completed" => {
                            let path = capture.dir.join(guid);
                            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                            break DownloadEnd::Completed(DownloadInfo {
                                guid: guid.clone(),
                                suggested_filename: suggested.clone(),
                                path,
                                size,
                                url: url.clone(),
                                artifact_id: None,
                            });
                        }
                        "canceled" => break DownloadEnd::Canceled,
                        _ => {}
                    }
                }
                _ => {}
            }
        };
        // Back to refusing: Glovebox's own contexts and a browser it launched refuse downloads
        // nobody asked for; only a shared browser's own default context gets its default back.
        let conn = self.session.connection();
        let behavior = if capture.context.is_some() || conn.gates_new_pages() {
            "deny"
        } else {
            "default"
        };
        let mut params = json!({ "behavior": behavior });
        if let Some(id) = &capture.context {
            params["browserContextId"] = json!(id);
        }
        let browser = self.session.connection().browser();
        let _ = browser
            .send_raw(
                "Browser.setDownloadBehavior",
                params,
                Duration::from_secs(2),
            )
            .await;
        end
    }

    /// Whether a CDP frame id is one of this tab's frames (its main frame, a same-process
    /// frame with a Glovebox world, or an out-of-process frame it follows).
    fn owns_frame(&self, frame: &str) -> bool {
        {
            let state = lock(&self.state);
            if state.main_frame_id == frame || state.worlds.contains_key(frame) {
                return true;
            }
        }
        self.children
            .list()
            .iter()
            .any(|c| c.info.target_id.as_ref().is_some_and(|t| t.0 == frame))
    }
}

/// The receipt of setting files: confirmed when the input holds exactly the chosen names.
pub(super) fn files_receipt(names: Vec<String>, paths: &[PathBuf], frame: FrameId) -> Receipt {
    let wanted: Vec<String> = paths
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    if names == wanted {
        Receipt::confirmed(ExtendedKind::Upload, frame)
    } else {
        let detail = format!(
            "the input holds {} files, not the {} chosen",
            names.len(),
            wanted.len()
        );
        Receipt::failed(
            ExtendedKind::Upload,
            frame,
            ErrorCode::InvalidAction,
            true,
            detail,
        )
    }
}
