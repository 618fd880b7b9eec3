//! Raw capture of a tab: the isolated-world state read, and per-session DOM snapshots and AX trees.

use std::collections::HashMap;

use cdp::Session;
use cdp::domains::accessibility::{AxNode, GetFullAxTree};
use cdp::domains::dom_snapshot::{CaptureSnapshot, CaptureSnapshotReply};
use cdp::domains::{page, runtime};
use serde::Deserialize;

use crate::BrowserError;
use crate::tab::{Tab, TabState, WORLD, WORLD_JS, lock};

/// What the isolated world reports about its frame, read in one synchronous turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct WorldState {
    /// A random id per document: a new document (navigation) has a new one.
    pub(crate) doc: String,
    /// Element insertions/removals and semantic attribute changes.
    pub(crate) structural: u64,
    /// Text-only changes (a ticking clock).
    pub(crate) text: u64,
    /// Style and class changes (a carousel).
    pub(crate) visual: u64,
    pub(crate) url: String,
    pub(crate) title: String,
    pub(crate) ready: String,
    /// The tab is in the background (another tab of its window is in front).
    #[serde(default)]
    pub(crate) hidden: bool,
    pub(crate) width: f64,
    pub(crate) height: f64,
    pub(crate) dpr: f64,
    pub(crate) scroll_x: f64,
    pub(crate) scroll_y: f64,
    pub(crate) scale: f64,
    /// Elements in the document (not counting shadow trees or frames).
    #[serde(default)]
    pub(crate) elements: u64,
    /// The document uses `aria-owns` or `aria-activedescendant` (see `synth::dom_model_fits`).
    #[serde(default)]
    pub(crate) aria_relations: bool,
    /// The document has `<script>` elements or loaded a script file: without either, no script
    /// library of its own serves delegated handlers (`Tab::delegated_targets` is not asked; a
    /// new tab's blank page).
    #[serde(default)]
    pub(crate) scripts: bool,
    /// The `<dialog>` (index in document order) open as modal, or -1.
    #[serde(default = "no_index")]
    pub(crate) modal_dialog: i64,
    /// The focused element's index among the document's elements, or -1.
    #[serde(default = "no_index")]
    pub(crate) focused: i64,
    /// How much of the viewport visible canvases cover (0..1).
    #[serde(default)]
    pub(crate) canvas_share: f64,
    /// Elements (indices among the document's elements) a `:hover`/`:active` rule gives a
    /// pointer cursor.
    #[serde(default)]
    pub(crate) hover_pointer: Vec<usize>,
    /// Milliseconds since the document's load event ended, or -1 before it.
    #[serde(default = "never")]
    pub(crate) since_load_ms: f64,
    /// Milliseconds since the last structural change made after the load event, or -1 if none
    /// was (the load handlers' own changes come before its end and do not count).
    #[serde(default = "never")]
    pub(crate) since_built_ms: f64,
}

/// "Not yet" for the times the world reports (`-1` in the page).
fn never() -> f64 {
    -1.0
}

/// How long after its load a document that keeps changing its structure counts as still
/// building itself (see [`WorldState::still_building`]); later, changes are the page's life.
const YOUNG_DOCUMENT_MS: f64 = 1000.0;

/// "None" for the element indices the world reports (`-1` in the page).
fn no_index() -> i64 {
    -1
}

impl WorldState {
    /// The document is still building itself after its load (a script adding content on
    /// timers): it loaded less than [`YOUNG_DOCUMENT_MS`] ago and changed its structure less than
    /// `gap_ms` ago. Only read from an observation's first read (`read(true)`).
    pub(crate) fn still_building(&self, gap_ms: u32) -> bool {
        (0.0..YOUNG_DOCUMENT_MS).contains(&self.since_load_ms)
            && (0.0..f64::from(gap_ms)).contains(&self.since_built_ms)
    }

    /// True when nothing that decides a frame's identity changed: same document, URL, structure
    /// and viewport. Text ticks and style changes are deliberately not part of it.
    pub(crate) fn same_frame(&self, other: &WorldState) -> bool {
        self.doc == other.doc
            && self.url == other.url
            && self.structural == other.structural
            && self.width == other.width
            && self.height == other.height
            && self.dpr == other.dpr
            && self.scroll_x == other.scroll_x
            && self.scroll_y == other.scroll_y
            && self.scale == other.scale
    }
}

/// Brings `tab` to the front of its window when `world` says it is a background tab (a popup
/// it opened is in front): Chromium paints no frames for one, so input to it and a screenshot
/// of it would wait for a frame that never comes. Only before what needs frames (an action, a
/// screenshot); a text observation reads a background tab as it is.
pub(crate) async fn to_front_if_hidden(tab: &Tab, world: &WorldState) -> Result<(), BrowserError> {
    if world.hidden {
        tab.session.call(page::BringToFront {}).await?;
    }
    Ok(())
}

/// The `glovebox` world's execution context in the tab's main frame, created on demand.
pub(crate) async fn world_context(tab: &Tab) -> Result<i64, BrowserError> {
    let frame_id = {
        let state = lock(&tab.state);
        if let Some(id) = state.worlds.get(&state.main_frame_id) {
            return Ok(*id);
        }
        state.main_frame_id.clone()
    };
    // A protocol error from either call on a live session means the frame's document went away
    // meanwhile (a navigation replaced it, and the new world was never made or is gone): the page
    // is changing, which a caller takes as "observe again", not as a fault.
    let replaced = || BrowserError::Unstable {
        what: "the document was replaced while Glovebox's world was being set up".into(),
    };
    let created = match tab
        .session
        .call(page::CreateIsolatedWorld {
            frame_id: frame_id.clone(),
            world_name: Some(WORLD.into()),
        })
        .await
    {
        Ok(created) => created,
        Err(cdp::CdpError::Protocol { .. }) => return Err(replaced()),
        Err(e) => return Err(e.into()),
    };
    let context = created.execution_context_id;
    let install = runtime::Evaluate {
        expression: WORLD_JS.to_owned(),
        context_id: Some(context),
        return_by_value: Some(true),
        await_promise: Some(false),
        silent: Some(true),
        ..Default::default()
    };
    match tab.session.call(install).await {
        Ok(reply) => {
            if let Some(exception) = reply.exception_details {
                return Err(BrowserError::Internal {
                    reason: format!("isolated-world script failed: {}", exception.message()),
                });
            }
        }
        Err(cdp::CdpError::Protocol { .. }) => return Err(replaced()),
        Err(e) => return Err(e.into()),
    }
    lock(&tab.state).worlds.insert(frame_id, context);
    Ok(context)
}

/// Evaluates `expression` in a context, returning its value; page exceptions become errors.
/// A protocol error on a live session means the context is gone ("Cannot find context with
/// specified id": a navigation destroyed it before its event reached the tab's state): that is
/// `Unstable` (the page is changing; read again), never `internal`.
pub(crate) async fn evaluate_in(
    session: &Session,
    context: i64,
    expression: &str,
) -> Result<serde_json::Value, BrowserError> {
    let reply = match session
        .call(runtime::Evaluate {
            expression: expression.to_owned(),
            context_id: Some(context),
            return_by_value: Some(true),
            await_promise: Some(false),
            silent: Some(true),
            ..Default::default()
        })
        .await
    {
        Ok(reply) => reply,
        Err(cdp::CdpError::Protocol { message, .. }) => {
            return Err(BrowserError::Unstable {
                what: format!("the document was replaced while Glovebox read it ({message})"),
            });
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(exception) = reply.exception_details {
        return Err(BrowserError::Internal {
            reason: format!("isolated-world script failed: {}", exception.message()),
        });
    }
    Ok(reply.result.value.unwrap_or(serde_json::Value::Null))
}

/// Evaluates `expression` in the tab's `glovebox` world. A world the page's navigation took away
/// meanwhile is forgotten and made again once; only a page that keeps replacing its document is
/// `Unstable`.
pub(crate) async fn evaluate_world(
    tab: &Tab,
    expression: &str,
) -> Result<serde_json::Value, BrowserError> {
    let mut tries = 0;
    loop {
        let context = world_context(tab).await?;
        match evaluate_in(&tab.session, context, expression).await {
            Err(BrowserError::Unstable { what }) => {
                forget_context(&tab.state, context);
                tries += 1;
                if tries == 2 {
                    return Err(BrowserError::Unstable { what });
                }
            }
            other => return other,
        }
    }
}

/// Drops a cached context id so the next read creates a fresh one.
pub(crate) fn forget_context(state: &std::sync::Mutex<TabState>, context: i64) {
    lock(state).worlds.retain(|_, id| *id != context);
}

/// Styles requested from DOMSnapshot, in this order.
pub(crate) const STYLES: [&str; 6] = [
    "display",
    "visibility",
    "cursor",
    "opacity",
    "content",
    "background-image",
];
pub(crate) const STYLE_DISPLAY: usize = 0;
pub(crate) const STYLE_VISIBILITY: usize = 1;
pub(crate) const STYLE_CURSOR: usize = 2;
pub(crate) const STYLE_OPACITY: usize = 3;
pub(crate) const STYLE_CONTENT: usize = 4;
pub(crate) const STYLE_BACKGROUND_IMAGE: usize = 5;

/// One session's capture: its DOM snapshot (all same-process documents) and an AX tree per document.
#[derive(Debug)]
pub(crate) struct SessionCapture {
    pub(crate) session: Session,
    pub(crate) snapshot: CaptureSnapshotReply,
    /// AX nodes per CDP frame id; the root document's under its frame id too.
    pub(crate) ax: HashMap<String, Vec<AxNode>>,
    /// The AX nodes were derived from the DOM snapshot (`synth.rs`), not read from Chromium.
    pub(crate) dom_model: bool,
}

pub(crate) fn snapshot_command() -> CaptureSnapshot {
    CaptureSnapshot {
        computed_styles: STYLES.iter().map(|s| (*s).to_owned()).collect(),
        include_dom_rects: None,
        include_paint_order: None,
    }
}

/// A capture built from the DOM snapshot alone: every document's AX-shaped tree synthesised.
pub(crate) fn dom_model_session(
    session: Session,
    snapshot: CaptureSnapshotReply,
    world: &WorldState,
) -> SessionCapture {
    let page = crate::synth::PageFacts {
        modal_dialog: usize::try_from(world.modal_dialog).ok(),
        focused: usize::try_from(world.focused).ok(),
    };
    let ax = (0..snapshot.documents.len())
        .map(|i| {
            let facts = if i == 0 {
                page
            } else {
                crate::synth::PageFacts::default()
            };
            (
                snapshot.string(snapshot.documents[i].frame_id).to_owned(),
                crate::synth::synthesize(&snapshot, i, facts),
            )
        })
        .collect();
    SessionCapture {
        session,
        snapshot,
        ax,
        dom_model: true,
    }
}

/// Fetches the AX trees of the same-process child documents the snapshot found (the root's is given).
pub(crate) async fn complete_session(
    session: Session,
    snapshot: CaptureSnapshotReply,
    root_ax: Vec<AxNode>,
) -> Result<SessionCapture, BrowserError> {
    let mut ax = HashMap::new();
    let frame_of = |i: usize| snapshot.string(snapshot.documents[i].frame_id).to_owned();
    if let Some(first) = snapshot.documents.first() {
        ax.insert(snapshot.string(first.frame_id).to_owned(), root_ax);
    }
    let extra: Vec<String> = (1..snapshot.documents.len())
        .map(frame_of)
        .filter(|f| !f.is_empty())
        .collect();
    let fetches = extra.iter().map(|frame| {
        let session = session.clone();
        let frame = frame.clone();
        async move {
            (
                frame.clone(),
                session
                    .call(GetFullAxTree {
                        depth: None,
                        frame_id: Some(frame),
                    })
                    .await,
            )
        }
    });
    for (frame, reply) in futures_util::future::join_all(fetches).await {
        match reply {
            Ok(reply) => {
                ax.insert(frame, reply.nodes);
            }
            // A frame that went away between the two calls is left out; the epoch check decides
            // whether the whole capture is still consistent.
            Err(e) => tracing::debug!(%frame, error = %e, "no AX tree for a same-process frame"),
        }
    }
    Ok(SessionCapture {
        session,
        snapshot,
        ax,
        dom_model: false,
    })
}
