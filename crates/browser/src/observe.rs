//! `Tab::observe`: a bounded, redacted observation captured inside the tab's read barrier, from
//! one consistent frame, with refs bound to exact nodes.
//!
//! ## Freshness, and pages that never stop changing
//! The isolated world counts mutations in three kinds: *structural* (elements added or removed,
//! semantic attributes such as `id`, `role`, `aria-*`, `href`, `disabled`, `value`), *text*
//! (character data, text-only child changes) and *visual* (`class`, `style`). A capture reads the
//! world state before and after the DOM snapshot and AX tree; a different document, URL, viewport
//! (size, scale, zoom, scroll) or structural count means the page changed under the capture, so
//! the whole capture is discarded and retried once, after the DOM has gone quiet (two reads 30 ms
//! apart agree, ≤ 300 ms), then reported as unstable — never a mix. A capture between two
//! timers of a page still building itself would be consistent but half-built, so the first
//! observation of a document that changed its structure after its load event, less than 30 ms
//! ago and within a second of that load, waits for the same quiet first — a wait that is not
//! one of the two captures, so a page that never goes quiet (a live feed) still gets both.
//! Text ticks (a clock) and style changes (a carousel) do not count, so such pages stay
//! observable, and the `frame_id` (target, navigation, document, viewport, structural epoch,
//! screenshot) stays valid across them. An action re-checks its own target instead: the ref's
//! node must still be attached with the same role, name and box, so a change that touches the
//! target's identity or geometry is refused as stale even when the frame id still matches.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cdp::Session;
use cdp::domains::accessibility::GetFullAxTree;
use cdp::domains::dom::DescribeNode;
use cdp::domains::page::{CaptureScreenshot, GetFrameTree};
use protocol::limits::{ARIA_SNAPSHOT_MAX_CHARS, INTERACTIVE_ELEMENTS_MAX};
use protocol::{
    ElementRef, FrameId, ImageMime, InteractiveElement, Observation, ObservationParts,
    ProducerCuts, Screenshot, TabId, TargetIdentity, Viewport,
};

use crate::capture::{
    SessionCapture, WorldState, complete_session, dom_model_session, evaluate_in, forget_context,
    snapshot_command, world_context,
};
use crate::dom::Rect;
use crate::model::{Candidate, Item};
use crate::model::{HostKey, Walker};
use crate::render::{Line, choose, flatten, line_cost, line_with, measure_from};
use crate::synth::dom_model_fits;
use crate::tab::{Tab, lock};
use crate::{BrowserError, ObserveOptions, PageModel, TargetFacts};
use surface::image::image_size;

/// How long a screenshot waits for the tab to paint a frame, well inside an observation's
/// deadline, so a tab that paints none is named as the cause.
const SCREENSHOT_WAIT: Duration = Duration::from_secs(5);
/// Captures tried before an observation is `unstable`; the page's DOM goes quiet between them.
const CAPTURE_ATTEMPTS: usize = 2;
/// Before the retry: how long the page's structure and text must stay unchanged (timer-driven
/// building, a row every few milliseconds, passes a zero-delay check between its timers).
const QUIET_GAP_MS: u32 = 30;

/// What a ref is bound to: the exact node, and what it was when observed. What the runtime may
/// know of it ([`TargetFacts`]: role, name, box, secrecy, structure) is its `facts`, read through
/// `Deref`; the rest is how this adapter finds the node again.
#[derive(Debug, Clone)]
pub struct RefBinding {
    /// The session of the frame the node lives in (the tab's, or an out-of-process frame's).
    pub session: Session,
    pub backend_node_id: i64,
    /// The role and name as Chromium reported them; both must still match before an action.
    pub ax_role: String,
    pub ax_name: String,
    /// Offset of the node's frame viewport in the top-level viewport (non-zero only for
    /// out-of-process frames, whose coordinates CDP reports frame-local).
    pub frame_offset: (f64, f64),
    /// Set when the ref came from the DOM model (most pages): its identity is re-checked by
    /// this DOM fingerprint instead of Chromium's role and name.
    pub fingerprint: Option<String>,
    /// Role and name as shown to the model, box, secrecy, frame element, structure.
    pub facts: TargetFacts,
}

impl std::ops::Deref for RefBinding {
    type Target = TargetFacts;

    fn deref(&self) -> &TargetFacts {
        &self.facts
    }
}

/// The runtime's private record of the latest observation of a tab.
#[derive(Debug)]
pub struct ObservationRecord {
    pub frame_id: FrameId,
    pub(crate) world: WorldState,
    pub navigation_epoch: u64,
    pub viewport: Viewport,
    pub refs: HashMap<String, RefBinding>,
    pub screenshot_size: Option<protocol::ImageSize>,
    /// The snapshot text the observation carried (the base of a later diff).
    pub(crate) text: Arc<str>,
}

impl ObservationRecord {
    /// The content epoch (structural mutation count) when observed.
    pub fn content_epoch(&self) -> u64 {
        self.world.structural
    }

    /// The page's URL when observed (unredacted: for runtime checks only, never for output).
    pub fn document_url(&self) -> &str {
        &self.world.url
    }

    /// How much of the viewport visible canvases covered when observed (0..1): content only an
    /// image shows.
    pub fn canvas_share(&self) -> f64 {
        self.world.canvas_share
    }

    /// Whether this observation came with a screenshot.
    pub fn has_screenshot(&self) -> bool {
        self.screenshot_size.is_some()
    }

    /// The binding of `element`, if this observation issued it.
    pub fn binding(&self, element: &ElementRef) -> Option<&RefBinding> {
        self.refs.get(element.as_str())
    }
}

/// The refs a tab gave the nodes of its current document, so a node keeps its ref across
/// observations while it exists; a new document starts again at `e1`. A ref is never given to
/// another node of the same document.
#[derive(Debug, Clone, Default)]
pub(crate) struct RefMemory {
    doc: String,
    last: u32,
    /// (frame target id, backend node id) → ref number.
    by_node: HashMap<(String, i64), u32>,
}

/// Nodes remembered per document before the memory starts over (numbers still go on).
const REF_MEMORY_MAX: usize = 50_000;

impl RefMemory {
    /// The node ref number `number` was given in document `doc`, if this memory holds it.
    pub(crate) fn node_of(&self, doc: &str, number: u32) -> Option<(String, i64)> {
        if self.doc != doc {
            return None;
        }
        self.by_node
            .iter()
            .find(|(_, n)| **n == number)
            .map(|(key, _)| key.clone())
    }

    /// Starts an observation of document `doc`.
    pub(crate) fn begin(&mut self, doc: &str) {
        if self.doc != doc {
            self.doc = doc.to_owned();
            self.by_node.clear();
            self.last = 0;
        }
        if self.by_node.len() > REF_MEMORY_MAX {
            self.by_node.clear();
        }
    }

    /// The ref number of a node, given one if it has none.
    pub(crate) fn number(&mut self, frame: &str, backend: i64) -> u32 {
        let key = (frame.to_owned(), backend);
        if let Some(n) = self.by_node.get(&key) {
            return *n;
        }
        self.last += 1;
        self.by_node.insert(key, self.last);
        self.last
    }
}

/// What the caller asked of an observation beyond the page itself: the screenshot taken with
/// it, and the region `near` names.
struct Asked<'a> {
    screenshot: Option<Screenshot>,
    near: Option<&'a str>,
}

enum Attempt {
    Done(Box<Observation>, Arc<ObservationRecord>),
    Changed(String),
    /// The document is still building itself after its load: nothing was captured.
    Building,
}

impl Tab {
    /// Captures an observation of this tab. See the module docs for the consistency rules.
    pub async fn observe(&self, options: &ObserveOptions) -> Result<Observation, BrowserError> {
        self.observe_against(options, None).await
    }

    /// [`Tab::observe`], with the snapshot written as its changes against `base` when that is of
    /// the same document and the changes are smaller than the snapshot
    /// (`Observation::snapshot_diff`).
    pub(crate) async fn observe_against(
        &self,
        options: &ObserveOptions,
        base: Option<&ObservationRecord>,
    ) -> Result<Observation, BrowserError> {
        self.check_alive()?;
        // A JavaScript dialog blocks the page (nothing in it can be read until it is answered):
        // the observation is the dialog, at once, with a frame a `dialog` action answers on.
        // A dialog that opens while the page is read (a timer, the tail of an action) would block
        // the reads until the deadline: it ends the capture at once instead.
        let mut dialogs = self.session.subscribe(&["Page.javascriptDialogOpening"]);
        let open = lock(&self.state).dialog.clone();
        if let Some(dialog) = open {
            return self.dialog_observation(&dialog);
        }
        let deadline = options.deadline;
        let until = std::time::Instant::now() + deadline;
        let run = async {
            let _read = self.barrier.read().await;
            let mut last = String::new();
            let mut waited = false;
            let mut attempt = 0;
            while attempt < CAPTURE_ATTEMPTS {
                match self.capture_once(options, base, !waited).await? {
                    Attempt::Done(observation, record) => {
                        *lock(&self.latest) = Some(record);
                        return Ok(*observation);
                    }
                    // Not an attempt: a page that never goes quiet (a live feed) still gets
                    // both captures after the wait.
                    Attempt::Building => {
                        waited = true;
                        self.dom_quiet(until, 0, QUIET_GAP_MS).await;
                        continue;
                    }
                    Attempt::Changed(what) => last = what,
                }
                attempt += 1;
                // A page still being built (a person's tab claimed while it loads, a script
                // filling it in): its DOM goes quiet before the retry, so one burst of changes
                // does not use up both attempts back to back.
                if attempt < CAPTURE_ATTEMPTS {
                    self.dom_quiet(until, 0, QUIET_GAP_MS).await;
                }
            }
            Err(BrowserError::Unstable { what: last })
        };
        let opened = async {
            loop {
                match dialogs.recv().await {
                    Some(Ok(event)) => return event,
                    Some(Err(_)) => continue,
                    None => std::future::pending::<()>().await,
                }
            }
        };
        tokio::select! {
            result = tokio::time::timeout(deadline, run) => match result {
                Ok(result) => result,
                Err(_) => Err(BrowserError::Timeout { what: "observation".into(), after_ms: deadline.as_millis() as u64 }),
            },
            event = opened => {
                self.note_dialog(&event);
                let dialog = lock(&self.state).dialog.clone();
                match dialog {
                    Some(dialog) => self.dialog_observation(&dialog),
                    None => Err(BrowserError::Unstable { what: "a dialog opened and closed while the page was read".into() }),
                }
            }
        }
    }

    /// The observation of a page a JavaScript dialog blocks: the last page's URL, title and
    /// viewport, the dialog as its only content (`alertdialog "message" [kind]`, page text and
    /// so untrusted like any), no refs, and a frame of its own — the one a `dialog` action names.
    fn dialog_observation(&self, dialog: &crate::tab::Dialog) -> Result<Observation, BrowserError> {
        let previous = self
            .latest_observation()
            .ok_or_else(|| BrowserError::Stale {
                reason: "this tab has not been observed yet".into(),
            })?;
        let world = previous.world.clone();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        previous.frame_id.as_str().hash(&mut hasher);
        dialog.kind.hash(&mut hasher);
        dialog.message.hash(&mut hasher);
        "javascript dialog".hash(&mut hasher);
        let frame_id = FrameId::new(format!("frame_{:016x}", hasher.finish())).map_err(|e| {
            BrowserError::Internal {
                reason: e.to_string(),
            }
        })?;
        // Text this tab typed into secret fields never comes back, a dialog's message included.
        let secrets = lock(&self.state).secrets.clone();
        // …and no credential the page shows (`policy::redact_text`: URLs' query values, tokens,
        // `password=…` pairs), in its text, names, values, title and console.
        let scrub = |t: &str| secrets.redact(&policy::redact_text(t)).into_owned();
        let kind: String = dialog
            .kind
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let message = scrub(&dialog.message);
        let text = format!(
            "alertdialog {} [{kind} modal]\n \"the page is blocked until the dialog is answered: act with {{\\\"type\\\": \\\"dialog\\\", \\\"accept\\\": true|false}}\"\n",
            serde_json::Value::String(message)
        );
        let record = Arc::new(ObservationRecord {
            frame_id: frame_id.clone(),
            navigation_epoch: previous.navigation_epoch,
            viewport: previous.viewport,
            refs: HashMap::new(),
            screenshot_size: None,
            world: world.clone(),
            text: Arc::from(text.as_str()),
        });
        *lock(&self.latest) = Some(record);
        let (console_errors, console_cut) = lock(&self.state).console.snapshot();
        let tab_id = TabId::new(self.target_id().0.clone())
            .unwrap_or_else(|_| TabId::new("tab").expect("a literal tab id is valid"));
        Ok(Observation::bounded(ObservationParts {
            frame_id,
            content_epoch: world.structural,
            captured_at: now_ms(),
            target: TargetIdentity::web_tab(tab_id),
            url: scrub(&policy::redact_url(&world.url)),
            origin: policy::web_origin(&world.url),
            title: scrub(&world.title),
            viewport: previous.viewport,
            screenshot: None,
            aria_snapshot: text,
            interactive_elements: Vec::new(),
            console_errors: console_errors.iter().map(|c| scrub(c)).collect(),
            cut: ProducerCuts {
                aria: false,
                elements: false,
                console: console_cut,
            },
        }))
    }

    /// The CDP calls one observation of a single-frame page makes — a world read, then the DOM
    /// snapshot, the AX tree (small pages only) and a second read, pipelined — with none of Glovebox's processing: the baseline
    /// `glovebox bench observe` divides by.
    pub async fn raw_capture_calls(&self) -> Result<usize, BrowserError> {
        let context = world_context(self).await?;
        let session = &self.session;
        let timeout = session.connection().default_timeout();
        let read = serde_json::json!({ "expression": "globalThis.__glovebox.read()", "contextId": context, "returnByValue": true });
        let snapshot =
            serde_json::to_value(snapshot_command()).map_err(|e| BrowserError::Internal {
                reason: e.to_string(),
            })?;
        let first_read = serde_json::json!({ "expression": "globalThis.__glovebox.read(true)", "contextId": context, "returnByValue": true });
        let first = session
            .send_raw("Runtime.evaluate", first_read, timeout)
            .await?;
        let elements = first
            .pointer("/result/value/elements")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        let relations = first
            .pointer("/result/value/aria_relations")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        let ax = async {
            if dom_model_fits(elements, relations) {
                Ok(serde_json::Value::Null)
            } else {
                session
                    .send_raw(
                        "Accessibility.getFullAXTree",
                        serde_json::json!({}),
                        timeout,
                    )
                    .await
            }
        };
        let (b, c, d) = tokio::join!(
            session.send_raw("DOMSnapshot.captureSnapshot", snapshot, timeout),
            ax,
            session.send_raw("Runtime.evaluate", read, timeout),
        );
        Ok([first, b?, c?, d?]
            .iter()
            .map(|v| v.to_string().len())
            .sum())
    }

    /// The latest observation's record (refs, frame id), if any.
    pub fn latest_observation(&self) -> Option<Arc<ObservationRecord>> {
        lock(&self.latest).clone()
    }

    /// One capture. `wait_if_building`: a document still building itself (see the module docs)
    /// is not captured but answered [`Attempt::Building`]; false once the observation waited.
    async fn capture_once(
        &self,
        options: &ObserveOptions,
        base: Option<&ObservationRecord>,
        wait_if_building: bool,
    ) -> Result<Attempt, BrowserError> {
        let context = match world_context(self).await {
            Ok(context) => context,
            Err(BrowserError::Unstable { what }) => return Ok(Attempt::Changed(what)),
            Err(e) => return Err(e),
        };
        let navigation_before = self.navigation_epoch();
        let session = &self.session;
        let read = "globalThis.__glovebox.read()";
        let screenshot = async {
            match options.screenshot {
                Some(mime) => {
                    let format = match mime {
                        ImageMime::Png => "png",
                        ImageMime::Jpeg => "jpeg",
                    };
                    let quality = matches!(mime, ImageMime::Jpeg).then_some(80);
                    let shot = session
                        .call_with(
                            CaptureScreenshot {
                                format: Some(format.into()),
                                quality,
                                ..Default::default()
                            },
                            SCREENSHOT_WAIT,
                        )
                        .await;
                    Some(shot.map_err(|e| match e {
                        cdp::CdpError::Timeout { .. } => BrowserError::Timeout {
                            what: "the screenshot (the tab painted no frame to capture)".into(),
                            after_ms: SCREENSHOT_WAIT.as_millis() as u64,
                        },
                        e => e.into(),
                    }))
                }
                None => None,
            }
        };
        // The first read decides the page model: Chromium's AX tree, or for large documents the
        // one derived from the DOM snapshot (`synth.rs`), which skips the AX call's cost.
        let before = match evaluate_in(session, context, "globalThis.__glovebox.read(true)").await {
            Ok(b) => decode_world(b)?,
            Err(BrowserError::Internal { .. } | BrowserError::Unstable { .. }) => {
                forget_context(&self.state, context);
                return Ok(Attempt::Changed("the document was replaced".into()));
            }
            Err(e) => return Err(e),
        };
        // The first observation of a document that loaded a moment ago and is still adding to
        // itself: a capture between two of its timers would be consistent, but half-built.
        let observed_before = lock(&self.latest)
            .as_ref()
            .is_some_and(|record| record.world.doc == before.doc);
        if wait_if_building && !observed_before && before.still_building(QUIET_GAP_MS) {
            return Ok(Attempt::Building);
        }
        if options.screenshot.is_some() {
            crate::capture::to_front_if_hidden(self, &before).await?;
        }
        let dom_model = match options.model {
            PageModel::Auto => dom_model_fits(before.elements, before.aria_relations),
            PageModel::Accessibility => false,
            PageModel::Dom => true,
        };
        let ax_tree = async {
            if dom_model {
                None
            } else {
                Some(
                    session
                        .call(GetFullAxTree {
                            depth: None,
                            frame_id: None,
                        })
                        .await,
                )
            }
        };
        // Sent together, processed in order by the renderer: the two reads bracket the capture.
        let (snapshot, ax, shot, after, frames, delegated) = tokio::join!(
            session.call(snapshot_command()),
            ax_tree,
            screenshot,
            evaluate_in(session, context, read),
            session.call(GetFrameTree {}),
            self.delegated_targets(&before),
        );
        // Each frame's security origin: what a write inside it reaches (an iframe's, not the page's).
        let mut frame_origins = HashMap::new();
        if let Ok(frames) = frames {
            let mut pending = vec![frames.frame_tree];
            while let Some(tree) = pending.pop() {
                let origin = tree
                    .frame
                    .security_origin
                    .clone()
                    .filter(|o| o.contains("://"))
                    .unwrap_or_else(|| policy::web_origin(&tree.frame.url));
                frame_origins.insert(tree.frame.id.clone(), origin);
                pending.extend(tree.child_frames);
            }
        }
        let after = match after {
            Ok(a) => decode_world(a)?,
            Err(BrowserError::Internal { .. } | BrowserError::Unstable { .. }) => {
                forget_context(&self.state, context);
                return Ok(Attempt::Changed("the document was replaced".into()));
            }
            Err(e) => return Err(e),
        };
        if !before.same_frame(&after) {
            return Ok(Attempt::Changed(describe_change(&before, &after)));
        }
        // Controls only the page's style rules and handlers show: clickable, as a listener would be.
        let mut snapshot = snapshot?;
        let mut hinted = before.hover_pointer.clone();
        hinted.extend(delegated.targets);
        crate::synth::mark_clickable(&mut snapshot, &hinted, &delegated.hosts);
        let main = match ax {
            Some(ax) => complete_session(session.clone(), snapshot, ax?.nodes).await?,
            None => dom_model_session(session.clone(), snapshot, &before),
        };
        let mut captures = vec![main];
        let oopif = self.capture_out_of_process_frames(&mut captures).await;
        if captures.len() > 1 || captures[0].snapshot.documents.len() > 1 {
            // Extra round trips happened: read once more to close the bracket.
            let last = match evaluate_in(session, context, read).await {
                Ok(last) => decode_world(last)?,
                Err(BrowserError::Internal { .. } | BrowserError::Unstable { .. }) => {
                    forget_context(&self.state, context);
                    return Ok(Attempt::Changed("the document was replaced".into()));
                }
                Err(e) => return Err(e),
            };
            if !before.same_frame(&last) {
                return Ok(Attempt::Changed(describe_change(&before, &last)));
            }
        }
        if self.navigation_epoch() != navigation_before {
            return Ok(Attempt::Changed("a navigation committed".into()));
        }
        let screenshot = match shot {
            Some(reply) => {
                let data = reply?.data;
                let mime = options.screenshot.unwrap_or(ImageMime::Png);
                let (width, height) = image_size(&data).ok_or_else(|| BrowserError::Internal {
                    reason: "screenshot is not a PNG or JPEG".into(),
                })?;
                Some(Screenshot {
                    mime,
                    data,
                    width,
                    height,
                })
            }
            None => None,
        };
        let attempt = Ok(
            match self.assemble(
                before,
                navigation_before,
                &captures,
                &oopif,
                &frame_origins,
                Asked {
                    screenshot,
                    near: options.near.as_ref().map(|n| n.as_str()),
                },
            ) {
                Attempt::Done(observation, record) => {
                    Attempt::Done(Box::new(with_changes(*observation, &record, base)), record)
                }
                changed => changed,
            },
        );
        drop_later(big_capture(&captures), captures);
        attempt
    }

    /// Captures each attached out-of-process iframe and finds which element hosts it.
    async fn capture_out_of_process_frames(
        &self,
        captures: &mut Vec<SessionCapture>,
    ) -> HashMap<HostKey, usize> {
        let mut hosts = HashMap::new();
        let children: Vec<_> = self
            .children
            .list()
            .into_iter()
            .filter(|c| c.info.target_type == "iframe")
            .collect();
        if children.is_empty() {
            return hosts;
        }
        // Iframe elements of the main session whose content is not in its own snapshot.
        let mut pending = vec![0usize];
        let mut seen = HashSet::new();
        while let Some(index) = pending.pop() {
            let hosts_here: Vec<i64> = iframe_hosts_without_content(&captures[index]);
            let described = futures_util::future::join_all(hosts_here.iter().map(|backend| {
                let session = captures[index].session.clone();
                let backend = *backend;
                async move {
                    (
                        backend,
                        session
                            .call(DescribeNode {
                                backend_node_id: Some(backend),
                                object_id: None,
                            })
                            .await,
                    )
                }
            }))
            .await;
            for (backend, reply) in described {
                let Ok(reply) = reply else { continue };
                let Some(frame) = reply.node.frame_id else {
                    continue;
                };
                let Some(child) = children
                    .iter()
                    .find(|c| c.info.target_id.as_ref().is_some_and(|t| t.0 == frame))
                else {
                    continue;
                };
                if !seen.insert(frame.clone()) {
                    continue;
                }
                let session = child.session.clone();
                let (snapshot, ax) = tokio::join!(
                    session.call(snapshot_command()),
                    session.call(GetFullAxTree {
                        depth: None,
                        frame_id: None
                    })
                );
                let (Ok(snapshot), Ok(ax)) = (snapshot, ax) else {
                    continue;
                };
                let Ok(capture) = complete_session(session, snapshot, ax.nodes).await else {
                    continue;
                };
                captures.push(capture);
                let child_index = captures.len() - 1;
                hosts.insert(
                    HostKey {
                        capture: index,
                        backend,
                    },
                    child_index,
                );
                pending.push(child_index);
            }
        }
        hosts
    }

    fn assemble(
        &self,
        world: WorldState,
        navigation_epoch: u64,
        captures: &[SessionCapture],
        oopif: &HashMap<HostKey, usize>,
        frame_origins: &HashMap<String, String>,
        Asked { screenshot, near }: Asked<'_>,
    ) -> Attempt {
        let viewport_px = (world.width, world.height);
        let mut walker = Walker::new(captures, oopif, viewport_px, frame_origins);
        let items = walker.walk_capture(0, (0.0, 0.0), 0);
        let candidates = std::mem::take(&mut walker.candidates);
        let origins = std::mem::take(&mut walker.capture_origins);
        let mut lines = flatten(&items, viewport_px);
        // What the budget keeps first: the region around the viewport, or around what `near`
        // names (a ref this document gave, else the first line with that text).
        let viewport_area = Rect {
            x: 0.0,
            y: 0.0,
            w: world.width,
            h: world.height,
        };
        let anchor = near.map(|near| {
            let by_ref = near
                .strip_prefix('e')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<u32>().ok())
                .and_then(|n| lock(&self.state).refs.node_of(&world.doc, n))
                .and_then(|(frame, backend)| {
                    candidates.iter().find(|c| {
                        c.backend == backend
                            && captures[c.capture]
                                .session
                                .target_id()
                                .map(|t| t.0.as_str())
                                .unwrap_or_default()
                                == frame
                    })
                })
                .map(|c| c.bounds);
            by_ref.or_else(|| line_with(&lines, near).and_then(|i| lines[i].bounds))
        });
        let around = anchor.flatten().unwrap_or(viewport_area);
        if anchor.flatten().is_some() {
            measure_from(&mut lines, &around);
        }
        // Reserve room for the note that says what was cut and how to reach it.
        let note_room = 600;
        let mut chosen = choose(&lines, ARIA_SNAPSHOT_MAX_CHARS, world.height);
        let aria_cut = chosen.iter().any(|c| !c);
        if aria_cut {
            chosen = choose(&lines, ARIA_SNAPSHOT_MAX_CHARS - note_room, world.height);
        }

        // The interactive list: all candidates, or the 200 nearest the viewport (or `near`), in
        // document order.
        let mut listed: Vec<usize> = (0..candidates.len()).collect();
        let elements_cut = listed.len() > INTERACTIVE_ELEMENTS_MAX;
        if elements_cut {
            listed.sort_by(|a, b| {
                let da = candidates[*a].bounds.distance_to(&around);
                let db = candidates[*b].bounds.distance_to(&around);
                da.total_cmp(&db).then(a.cmp(b))
            });
            listed.truncate(INTERACTIVE_ELEMENTS_MAX);
        }
        let mut referenced: Vec<usize> = listed.clone();
        referenced.extend(
            lines
                .iter()
                .zip(&chosen)
                .filter(|(_, c)| **c)
                .filter_map(|(l, _)| l.candidate),
        );
        referenced.sort_unstable();
        referenced.dedup();
        referenced.sort_by_key(|c| candidates[*c].order);
        listed.sort_by_key(|c| candidates[*c].order);
        // Stable refs: a node keeps the ref it had in an earlier observation of this document;
        // a node seen for the first time takes the next number (never one a node had before).
        let ref_of: HashMap<usize, ElementRef> = {
            let mut state = lock(&self.state);
            let memory = &mut state.refs;
            memory.begin(&world.doc);
            referenced
                .iter()
                .map(|c| {
                    let cand = &candidates[*c];
                    let frame = captures[cand.capture]
                        .session
                        .target_id()
                        .map(|t| t.0.as_str())
                        .unwrap_or_default();
                    (
                        *c,
                        ElementRef::from_index(memory.number(frame, cand.backend)),
                    )
                })
                .collect()
        };

        // Text this tab typed into secret fields never comes back, wherever the page echoes it.
        let secrets = lock(&self.state).secrets.clone();
        // …and no credential the page shows (`policy::redact_text`: URLs' query values, tokens,
        // `password=…` pairs), in its text, names, values, title and console.
        let scrub = |t: &str| secrets.redact(&policy::redact_text(t)).into_owned();
        let mut text = scrub(&render_lines(&lines, &chosen, &ref_of));
        if let (Some(near), Some(None)) = (near, anchor) {
            text.push_str(&format!(
                "- note: nothing here matches near {}; the region around the viewport is shown\n",
                surface::text::quote(&scrub(protocol::text::truncate_chars(near, 60).0))
            ));
        }
        if aria_cut {
            text.push_str(&scrub(&left_out_note(
                &lines,
                &chosen,
                anchor.flatten().is_some(),
            )));
        }
        let shown: std::collections::HashSet<usize> = lines
            .iter()
            .zip(&chosen)
            .filter(|(_, c)| **c)
            .filter_map(|(l, _)| l.candidate)
            .collect();
        let interactive_elements = listed
            .iter()
            .map(|c| {
                let cand = &candidates[*c];
                InteractiveElement::new(
                    ref_of[c].clone(),
                    &cand.role,
                    scrub(&cand.name),
                    cand.name_inferred,
                    cand.states.clone(),
                    cand.value.as_deref().map(scrub),
                )
                .shown_in_snapshot(shown.contains(c))
            })
            .collect();
        let refs = referenced
            .iter()
            .map(|c| {
                let cand = &candidates[*c];
                let binding = RefBinding {
                    session: captures[cand.capture].session.clone(),
                    backend_node_id: cand.backend,
                    ax_role: cand.ax_role.clone(),
                    ax_name: cand.ax_name.clone(),
                    fingerprint: cand.fingerprint.clone(),
                    frame_offset: if cand.capture == 0 {
                        (0.0, 0.0)
                    } else {
                        origins.get(&cand.capture).copied().unwrap_or((0.0, 0.0))
                    },
                    facts: TargetFacts {
                        role: cand.role.clone(),
                        name: cand.name.clone(),
                        bounds: rect_array(cand.bounds),
                        secret_field: cand.secret,
                        frame: cand.frame,
                        structure: cand.structure.clone(),
                    },
                };
                (ref_of[c].as_str().to_owned(), binding)
            })
            .collect();

        // A pinch zoom (`visualViewport.scale`) shows `inner / scale` CSS pixels of the layout
        // viewport, each enlarged by the scale: the viewport a screenshot covers and a point is
        // planned in (its origin the layout viewport's: a panned visual viewport is not modelled).
        let zoom = if world.scale.is_finite() && world.scale > 0.0 {
            world.scale
        } else {
            1.0
        };
        let viewport = Viewport {
            width: world.width / zoom,
            height: world.height / zoom,
            device_scale_factor: world.dpr,
            page_zoom: world.scale,
            scroll_x: world.scroll_x,
            scroll_y: world.scroll_y,
        };
        // Secret fields, and whatever shows a secret this tab typed, are painted over before the
        // image leaves: a model, an artifact or a log never receives them (design: "secrets are
        // masked in images too").
        let screenshot = match screenshot {
            Some(shot) => {
                let regions = secret_regions(&items, &candidates, &secrets);
                let (sx, sy) = (
                    f64::from(shot.width) / viewport.width.max(1.0),
                    f64::from(shot.height) / viewport.height.max(1.0),
                );
                let visible: Vec<(f64, f64, f64, f64)> = regions
                    .iter()
                    // Two CSS pixels of margin: glyphs and focus rings reach past a layout box.
                    .map(|r| {
                        (
                            (r.x - 2.0) * sx,
                            (r.y - 2.0) * sy,
                            (r.w + 4.0) * sx,
                            (r.h + 4.0) * sy,
                        )
                    })
                    .filter(|(x, y, w, h)| {
                        *w > 0.0
                            && *h > 0.0
                            && x + w > 0.0
                            && y + h > 0.0
                            && *x < f64::from(shot.width)
                            && *y < f64::from(shot.height)
                    })
                    .collect();
                if visible.is_empty() {
                    Some(shot)
                } else {
                    let masked = surface::mask_screenshot(&shot, &visible);
                    // An image that cannot be masked is not handed out at all.
                    masked.map_err(|e| tracing::warn!(error = %e, "a screenshot with secret regions could not be masked; it is withheld")).ok()
                }
            }
            None => None,
        };
        let frame_id = frame_id(
            self.target_id().0.as_str(),
            navigation_epoch,
            &world,
            screenshot.as_ref(),
        );
        let (console_errors, console_cut) = lock(&self.state).console.snapshot();
        let console_errors = console_errors.iter().map(|c| scrub(c)).collect();
        let url = scrub(&policy::redact_url(&world.url));
        let origin = policy::web_origin(&world.url);
        let screenshot_size = screenshot.as_ref().map(Screenshot::size);
        let tab_id = TabId::new(self.target_id().0.clone())
            .unwrap_or_else(|_| TabId::new("tab").expect("a literal tab id is valid"));
        let observation = Observation::bounded(ObservationParts {
            frame_id,
            content_epoch: world.structural,
            captured_at: now_ms(),
            target: TargetIdentity::web_tab(tab_id),
            url,
            origin,
            title: scrub(&world.title),
            viewport,
            screenshot,
            aria_snapshot: text,
            interactive_elements,
            console_errors,
            cut: ProducerCuts {
                aria: aria_cut,
                elements: elements_cut,
                console: console_cut,
            },
        });
        let record = Arc::new(ObservationRecord {
            frame_id: observation.frame_id().clone(),
            navigation_epoch,
            viewport,
            refs,
            screenshot_size,
            world: world.clone(),
            text: Arc::from(observation.aria_snapshot()),
        });
        drop_later(big_capture(captures), (items, lines, candidates));
        Attempt::Done(Box::new(observation), record)
    }
}

/// Frees what a capture of a big page built on the blocking pool, off the path of the reply: a
/// 5,000-element page's snapshot, page model and lines are some 10⁴ allocations, a millisecond
/// or two to free. A small page's are freed at once.
fn drop_later<T: Send + 'static>(big: bool, value: T) {
    if big && tokio::runtime::Handle::try_current().is_ok() {
        tokio::task::spawn_blocking(move || drop(value));
    }
}

fn big_capture(captures: &[SessionCapture]) -> bool {
    let nodes: usize = captures
        .iter()
        .flat_map(|c| &c.snapshot.documents)
        .map(|d| d.nodes.parent_index.len())
        .sum();
    nodes > 2_000
}

/// The observation with its snapshot's changes against `base`, when the base shows this same
/// document (refs are stable only within one) and the changes are smaller than the snapshot;
/// otherwise as it is.
fn with_changes(
    observation: Observation,
    record: &ObservationRecord,
    base: Option<&ObservationRecord>,
) -> Observation {
    match base
        .filter(|b| b.world.doc == record.world.doc)
        .and_then(|b| crate::diff::snapshot_diff(&b.frame_id, &b.text, observation.aria_snapshot()))
    {
        Some(diff) => observation.with_diff(diff),
        None => observation,
    }
}

/// Where a screenshot must be masked (viewport CSS pixels): every secret field (password, card,
/// one-time code, token), and every element or text whose content shows a secret this tab typed
/// or a credential text redaction takes out (`policy::redact_text`: token URLs, bearer tokens,
/// JWTs, `api_key: …`), so the image shows no more than the text reply does.
fn secret_regions(
    items: &[Item],
    candidates: &[Candidate],
    secrets: &policy::SecretRegistry,
) -> Vec<Rect> {
    fn shows(secrets: &policy::SecretRegistry, text: &str) -> bool {
        use std::borrow::Cow;
        matches!(policy::redact_text(text), Cow::Owned(_))
            || (!secrets.is_empty() && matches!(secrets.redact(text), Cow::Owned(_)))
    }
    fn walk(items: &[Item], secrets: &policy::SecretRegistry, out: &mut Vec<Rect>) {
        for item in items {
            match item {
                Item::Text {
                    text,
                    bounds: Some(b),
                    ..
                } if shows(secrets, text) => out.push(*b),
                Item::Text { .. } => {}
                Item::Node(node) => {
                    if let Some(b) = node.bounds
                        && (shows(secrets, &node.name)
                            || node.value.as_deref().is_some_and(|v| shows(secrets, v)))
                    {
                        out.push(b);
                    }
                    walk(&node.children, secrets, out);
                }
            }
        }
    }
    let mut out: Vec<Rect> = candidates
        .iter()
        .filter(|c| {
            c.secret
                || c.shows_credential
                || shows(secrets, &c.name)
                || c.value.as_deref().is_some_and(|v| shows(secrets, v))
        })
        .map(|c| c.bounds)
        .collect();
    walk(items, secrets, &mut out);
    out
}

fn render_lines(lines: &[Line], chosen: &[bool], ref_of: &HashMap<usize, ElementRef>) -> String {
    let mut out = String::with_capacity(
        lines
            .iter()
            .map(line_cost)
            .sum::<usize>()
            .min(ARIA_SNAPSHOT_MAX_CHARS + 256),
    );
    for (line, _) in lines.iter().zip(chosen).filter(|(_, c)| **c) {
        for _ in 0..line.depth {
            out.push(' ');
        }
        out.push_str(&line.head);
        let reference = line.candidate.and_then(|c| ref_of.get(&c));
        if reference.is_some() || !line.states.is_empty() {
            out.push_str(" [");
            let mut words = reference
                .map(ElementRef::as_str)
                .into_iter()
                .chain(line.states.iter().map(String::as_str));
            if let Some(first) = words.next() {
                out.push_str(first);
            }
            for word in words {
                out.push(' ');
                out.push_str(word);
            }
            out.push(']');
        }
        out.push_str(&line.tail);
        out.push('\n');
    }
    out
}

fn iframe_hosts_without_content(capture: &SessionCapture) -> Vec<i64> {
    let mut hosts = Vec::new();
    let Some(doc) = capture.snapshot.documents.first() else {
        return hosts;
    };
    let with_content: HashSet<usize> = doc
        .nodes
        .content_document_index
        .index
        .iter()
        .copied()
        .collect();
    for (i, name) in doc.nodes.node_name.iter().enumerate() {
        let tag = capture.snapshot.string(*name);
        if (tag.eq_ignore_ascii_case("iframe") || tag.eq_ignore_ascii_case("frame"))
            && !with_content.contains(&i)
            && let Some(backend) = doc.nodes.backend_node_id.get(i)
        {
            hosts.push(*backend);
        }
    }
    hosts
}

fn decode_world(value: serde_json::Value) -> Result<WorldState, BrowserError> {
    serde_json::from_value(value).map_err(|e| BrowserError::Internal {
        reason: format!("world state did not decode: {e}"),
    })
}

fn describe_change(before: &WorldState, after: &WorldState) -> String {
    if before.doc != after.doc {
        "the document was replaced".into()
    } else if before.url != after.url {
        "the URL changed".into()
    } else if before.structural != after.structural {
        "elements were added or removed".into()
    } else {
        "the viewport moved or resized".into()
    }
}

fn rect_array(r: Rect) -> [f64; 4] {
    [r.x, r.y, r.w, r.h]
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `frame_<16 hex>` from everything that identifies what the model saw.
pub(crate) fn frame_id(
    target: &str,
    navigation_epoch: u64,
    world: &WorldState,
    screenshot: Option<&Screenshot>,
) -> FrameId {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    target.hash(&mut hasher);
    navigation_epoch.hash(&mut hasher);
    world.doc.hash(&mut hasher);
    world.url.hash(&mut hasher);
    world.structural.hash(&mut hasher);
    for metric in [
        world.width,
        world.height,
        world.dpr,
        world.scale,
        world.scroll_x,
        world.scroll_y,
    ] {
        metric.to_bits().hash(&mut hasher);
    }
    if let Some(shot) = screenshot {
        shot.data.hash(&mut hasher);
    }
    FrameId::new(format!("frame_{:016x}", hasher.finish()))
        .expect("frame_ + hex matches the frame id pattern")
}

#[cfg(test)]
mod tests {
    use super::RefMemory;

    #[test]
    fn refs_stay_with_their_nodes_and_are_never_given_again_in_a_document() {
        let mut memory = RefMemory::default();
        memory.begin("doc-a");
        assert_eq!(
            [
                memory.number("main", 10),
                memory.number("main", 11),
                memory.number("frame", 10)
            ],
            [1, 2, 3]
        );
        memory.begin("doc-a");
        // Node 10 again, node 11 gone, a new node 12: the old numbers stay, the new one is next.
        assert_eq!(
            [memory.number("main", 12), memory.number("main", 10)],
            [4, 1]
        );
        memory.begin("doc-b");
        assert_eq!(memory.number("main", 10), 1, "a new document starts again");
    }
}

/// The page's own script that lists its delegated handlers' elements (`js/delegated.js`).
const DELEGATED_JS: &str = include_str!("js/delegated.js");

/// What the page's jQuery says of its delegated click handlers (indices in document order):
/// the elements they serve, and the elements whose every click handler is delegated (they only
/// pass clicks on).
#[derive(Debug, Default, serde::Deserialize)]
struct Delegated {
    #[serde(default)]
    targets: Vec<usize>,
    #[serde(default)]
    hosts: Vec<usize>,
}

/// How long a document found without jQuery is not asked again (a library loaded late is
/// seen by the observation after this).
const WITHOUT_JQUERY_RECHECK: Duration = Duration::from_secs(2);

impl Tab {
    /// Read in the page's main world, where jQuery keeps its handlers. A hint only: any failure,
    /// a page without jQuery, or a page that answers nonsense gives no or fewer hints, never an
    /// error, and a page that takes longer than 100 ms is stopped. A document without scripts is
    /// not asked, and one found without jQuery is not asked again for
    /// [`WITHOUT_JQUERY_RECHECK`] (it costs a round trip).
    async fn delegated_targets(&self, world: &WorldState) -> Delegated {
        if !world.scripts {
            return Delegated::default();
        }
        let doc = world.doc.as_str();
        let skip = lock(&self.state)
            .without_jquery
            .as_ref()
            .is_some_and(|(d, at)| d == doc && at.elapsed() < WITHOUT_JQUERY_RECHECK);
        if skip {
            return Delegated::default();
        }
        let reply = self
            .session
            .call(cdp::domains::runtime::Evaluate {
                expression: DELEGATED_JS.to_owned(),
                return_by_value: Some(true),
                silent: Some(true),
                timeout: Some(100.0),
                ..Default::default()
            })
            .await;
        let found = match reply {
            Ok(r) if r.exception_details.is_none() => r.result.value,
            _ => None,
        };
        let mut found = match found {
            Some(serde_json::Value::Null) | None => {
                lock(&self.state).without_jquery =
                    Some((doc.to_owned(), std::time::Instant::now()));
                return Delegated::default();
            }
            Some(v) => serde_json::from_value::<Delegated>(v).unwrap_or_default(),
        };
        found.targets.truncate(2_000);
        found.hosts.truncate(2_000);
        found
    }
}

/// Headings of the left-out part named in the note, and the longest each may be.
const NOTE_HEADINGS: usize = 8;
const NOTE_HEADING_CHARS: usize = 40;

/// The note at the end of a snapshot the budget cut: how much was left out, how to reach any of
/// it in one step (a locator in `act`, or `observe` with `near`), and the headings of the
/// left-out part, which `near` takes as they are.
fn left_out_note(lines: &[Line], chosen: &[bool], near: bool) -> String {
    let left: Vec<&Line> = lines
        .iter()
        .zip(chosen)
        .filter(|(_, c)| !**c)
        .map(|(l, _)| l)
        .collect();
    let targets = left.iter().filter(|l| l.candidate.is_some()).count();
    let from = if near {
        "what near names"
    } else {
        "the viewport"
    };
    let mut note = format!(
        "- note: {} lines ({targets} targets) far from {from} were left out to fit. Reach one in one step: act with a text or role locator ({{\"kind\":\"text\",\"text\":…}}), or observe with near set to a text or ref",
        left.len()
    );
    // An outline of what was left out: its headings, spread evenly over it when there are more.
    let all: Vec<&&Line> = left.iter().filter(|l| l.heading).collect();
    let picked: Vec<String> = (0..all.len().min(NOTE_HEADINGS))
        .map(|i| all[i * all.len() / all.len().min(NOTE_HEADINGS)])
        .map(|l| {
            protocol::text::truncate_chars(&l.head, NOTE_HEADING_CHARS)
                .0
                .to_owned()
        })
        .collect();
    if !picked.is_empty() {
        note.push_str(". Left out: ");
        note.push_str(&picked.join(", "));
        if all.len() > picked.len() {
            note.push_str(&format!(" (of {} headings)", all.len()));
        }
    }
    note.push('\n');
    note
}
