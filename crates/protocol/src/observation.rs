//! `Observation`: one bounded view of one leased tab (`000_…` §06, "内部 session 与
//! observation"); not its capture (that is the browser backend's) nor URL redaction.
//!
//! The only way to build an [`Observation`] is [`Observation::bounded`], which applies every
//! limit of [`crate::limits`] and sets the matching `*_truncated` flag, so a producer cannot
//! emit an over-limit observation. Fields are private for the same reason; getters read them.

use serde::{Deserialize, Serialize};

use crate::ids::{ElementRef, FrameId, TabId};
use crate::limits::*;
use crate::text::{BoundedText, truncate_chars_in_place, truncate_list};

/// The kind of a surface or target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurfaceKind {
    /// A browser tab.
    WebTab,
    /// A top-level window of an X11 desktop (`tab_id` is the adapter's id of the window).
    X11Window,
    /// The whole screen of an X11 display (`tab_id` is the adapter's id of the screen).
    X11Screen,
    /// The screen of a VM guest (`tab_id` is `vm:<name>`).
    VmScreen,
}

/// Which target an observation or result is about: `{"kind":"web_tab","tab_id":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TargetIdentity {
    /// The target kind.
    pub kind: SurfaceKind,
    /// The tab, as the backend names it.
    pub tab_id: TabId,
}

impl TargetIdentity {
    /// The whole screen of an X11 display.
    pub fn x11_screen(id: TabId) -> Self {
        Self {
            kind: SurfaceKind::X11Screen,
            tab_id: id,
        }
    }

    /// A window of an X11 desktop.
    pub fn x11_window(id: TabId) -> Self {
        Self {
            kind: SurfaceKind::X11Window,
            tab_id: id,
        }
    }

    /// A web tab.
    pub fn web_tab(tab_id: TabId) -> Self {
        Self {
            kind: SurfaceKind::WebTab,
            tab_id,
        }
    }
}

/// The layout viewport at capture time, in CSS pixels. Any change of these values voids
/// the frame (and every point planned against it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Viewport {
    /// Width in CSS pixels (`window.innerWidth`).
    pub width: f64,
    /// Height in CSS pixels (`window.innerHeight`).
    pub height: f64,
    /// Device pixels per CSS pixel at zoom 1 (`devicePixelRatio` without page zoom).
    pub device_scale_factor: f64,
    /// Browser page zoom, 1.0 = 100 %.
    pub page_zoom: f64,
    /// Horizontal document scroll offset in CSS pixels.
    pub scroll_x: f64,
    /// Vertical document scroll offset in CSS pixels.
    pub scroll_y: f64,
}

/// A size in image pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImageSize {
    /// Width in image pixels.
    pub width: u32,
    /// Height in image pixels.
    pub height: u32,
}

/// The image format of a screenshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ImageMime {
    /// `image/png`
    #[serde(rename = "image/png")]
    Png,
    /// `image/jpeg`
    #[serde(rename = "image/jpeg")]
    Jpeg,
}

/// One viewport-only screenshot of the frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Screenshot {
    /// The image format.
    pub mime: ImageMime,
    /// The image bytes, base64 (standard alphabet, padded).
    pub data: String,
    /// Width in image pixels.
    pub width: u32,
    /// Height in image pixels.
    pub height: u32,
}

impl Screenshot {
    /// The image size.
    pub fn size(&self) -> ImageSize {
        ImageSize {
            width: self.width,
            height: self.height,
        }
    }
}

/// One interactive element of the frame, with the ref an action may name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InteractiveElement {
    #[serde(rename = "ref")]
    element: ElementRef,
    role: String,
    name: String,
    #[serde(skip_serializing_if = "is_false")]
    name_truncated: bool,
    name_inferred: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    states: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(skip_serializing_if = "is_false")]
    value_truncated: bool,
    /// The ARIA snapshot text shows this element's ref (the producer knows; nobody parses the
    /// text back). Not on the wire: a reader of the whole observation has both.
    #[serde(skip)]
    in_snapshot: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl InteractiveElement {
    /// Builds an element, cutting `role` to [`ELEMENT_ROLE_MAX_CHARS`], `name` to
    /// [`ELEMENT_NAME_MAX_CHARS`] (flagged), `states` to [`ELEMENT_STATES_MAX`] entries of
    /// [`ELEMENT_STATE_MAX_CHARS`], and `value` to [`ELEMENT_VALUE_MAX_CHARS`] (flagged).
    /// `name_inferred`: the name came from nearby text, not the accessibility tree.
    /// Redacting secret values (password fields, tokens) is the producer's job.
    pub fn new(
        element: ElementRef,
        role: impl Into<String>,
        name: impl Into<String>,
        name_inferred: bool,
        mut states: Vec<String>,
        value: Option<String>,
    ) -> Self {
        let role = BoundedText::new(role, ELEMENT_ROLE_MAX_CHARS).text;
        let name = BoundedText::new(name, ELEMENT_NAME_MAX_CHARS);
        truncate_list(&mut states, ELEMENT_STATES_MAX);
        for s in &mut states {
            truncate_chars_in_place(s, ELEMENT_STATE_MAX_CHARS);
        }
        let value = value.map(|v| BoundedText::new(v, ELEMENT_VALUE_MAX_CHARS));
        Self {
            element,
            role,
            name: name.text,
            name_truncated: name.truncated,
            name_inferred,
            states,
            value_truncated: value.as_ref().is_some_and(|v| v.truncated),
            value: value.map(|v| v.text),
            in_snapshot: false,
        }
    }

    /// The same element, recorded as shown (`true`) or not shown in the ARIA snapshot text.
    pub fn shown_in_snapshot(self, shown: bool) -> Self {
        Self {
            in_snapshot: shown,
            ..self
        }
    }

    /// Whether the ARIA snapshot text shows this element's ref (then a transport need not list
    /// it again).
    pub fn in_snapshot(&self) -> bool {
        self.in_snapshot
    }

    /// The element's ref.
    pub fn element(&self) -> &ElementRef {
        &self.element
    }
    /// The ARIA role.
    pub fn role(&self) -> &str {
        &self.role
    }
    /// The accessible name (bounded).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Whether the name was cut.
    pub fn name_truncated(&self) -> bool {
        self.name_truncated
    }
    /// Whether the name was inferred rather than read from the accessibility tree.
    pub fn name_inferred(&self) -> bool {
        self.name_inferred
    }
    /// States such as `checked`, `disabled`, `expanded`.
    pub fn states(&self) -> &[String] {
        &self.states
    }
    /// The current value of a form control (bounded), if any.
    pub fn value(&self) -> Option<&str> {
        self.value.as_deref()
    }
    /// Whether the value was cut.
    pub fn value_truncated(&self) -> bool {
        self.value_truncated
    }
}

/// What a producer captured, before limits. Every field is public and unbounded; hand it to
/// [`Observation::bounded`].
#[derive(Debug, Clone, PartialEq)]
pub struct ObservationParts {
    /// The frame id minted for this capture.
    pub frame_id: FrameId,
    /// The tab's DOM-mutation epoch at capture.
    pub content_epoch: u64,
    /// Capture time, milliseconds since the Unix epoch (the producer's clock).
    pub captured_at: u64,
    /// The observed target.
    pub target: TargetIdentity,
    /// The page URL, already redacted (query values and credentials removed).
    pub url: String,
    /// The page origin (scheme, host, effective port).
    pub origin: String,
    /// The document title.
    pub title: String,
    /// The viewport.
    pub viewport: Viewport,
    /// An optional viewport screenshot.
    pub screenshot: Option<Screenshot>,
    /// The ARIA snapshot text.
    pub aria_snapshot: String,
    /// Interactive elements in document order.
    pub interactive_elements: Vec<InteractiveElement>,
    /// Filtered console errors, oldest first.
    pub console_errors: Vec<String>,
    /// Set by a producer that already left content out (e.g. far-from-viewport lines cut to fit
    /// the budget); the flags below are OR-ed with the limits this constructor applies.
    pub cut: ProducerCuts,
}

/// What a producer already cut before handing the parts over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerCuts {
    /// Lines of the ARIA snapshot were left out.
    pub aria: bool,
    /// Interactive elements were left out.
    pub elements: bool,
    /// Older console errors were dropped.
    pub console: bool,
}

/// One bounded observation of one target. Serializes with `untrusted_content: true`: page
/// text is data, never instructions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observation {
    frame_id: FrameId,
    content_epoch: u64,
    captured_at: u64,
    target: TargetIdentity,
    url: String,
    #[serde(skip_serializing_if = "is_false")]
    url_truncated: bool,
    origin: String,
    title: String,
    #[serde(skip_serializing_if = "is_false")]
    title_truncated: bool,
    viewport: Viewport,
    #[serde(skip_serializing_if = "Option::is_none")]
    screenshot: Option<Screenshot>,
    #[serde(skip_serializing_if = "Option::is_none")]
    screenshot_size: Option<ImageSize>,
    aria_snapshot: String,
    aria_truncated: bool,
    interactive_elements: Vec<InteractiveElement>,
    elements_truncated: bool,
    console_errors: Vec<String>,
    console_truncated: bool,
    /// After an action: the snapshot as changes against the observation the action was checked
    /// against, when that is smaller (the full `aria_snapshot` is here as well).
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot_diff: Option<SnapshotDiff>,
    untrusted_content: bool,
}

/// An action's resulting snapshot as changes against its base observation: lines added (`+`),
/// removed (`-`) and changed (`~`, the same ref with new text), each group after the line it
/// follows. Bounded like the snapshot it stands for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnapshotDiff {
    base_frame_id: FrameId,
    text: String,
    added: u32,
    removed: u32,
    changed: u32,
}

impl SnapshotDiff {
    /// A diff against `base_frame_id`; its text is cut to [`ARIA_SNAPSHOT_MAX_CHARS`].
    pub fn new(
        base_frame_id: FrameId,
        text: String,
        added: u32,
        removed: u32,
        changed: u32,
    ) -> Self {
        SnapshotDiff {
            base_frame_id,
            text: BoundedText::new(text, ARIA_SNAPSHOT_MAX_CHARS).text,
            added,
            removed,
            changed,
        }
    }
    /// The observation the changes are against.
    pub fn base_frame_id(&self) -> &FrameId {
        &self.base_frame_id
    }
    /// The changes as the model reads them (page text inside: untrusted).
    pub fn text(&self) -> &str {
        &self.text
    }
    /// Lines added.
    pub fn added(&self) -> u32 {
        self.added
    }
    /// Lines removed.
    pub fn removed(&self) -> u32 {
        self.removed
    }
    /// Lines whose ref stayed and whose text changed.
    pub fn changed(&self) -> u32 {
        self.changed
    }
}

impl Observation {
    /// Applies every observation limit: ARIA snapshot ≤ 12,000 characters, ≤ 200 interactive
    /// elements (names already bounded by [`InteractiveElement::new`]), ≤ 50 console errors
    /// of ≤ 1,000 characters, URL ≤ 2,048 and title ≤ 500 characters; each cut sets its flag.
    pub fn bounded(parts: ObservationParts) -> Self {
        let ObservationParts {
            frame_id,
            content_epoch,
            captured_at,
            target,
            url,
            origin,
            title,
            viewport,
            screenshot,
            aria_snapshot,
            mut interactive_elements,
            mut console_errors,
            cut,
        } = parts;
        let url = BoundedText::new(url, URL_MAX_CHARS);
        let title = BoundedText::new(title, TITLE_MAX_CHARS);
        let origin = BoundedText::new(origin, URL_MAX_CHARS).text;
        let aria = BoundedText::new(aria_snapshot, ARIA_SNAPSHOT_MAX_CHARS);
        if aria.truncated {
            // Cut here, not by the producer: which refs the kept text shows is not known, so
            // none counts as shown (a transport then lists them all).
            for e in &mut interactive_elements {
                e.in_snapshot = false;
            }
        }
        let elements_truncated =
            truncate_list(&mut interactive_elements, INTERACTIVE_ELEMENTS_MAX) | cut.elements;
        let mut console_truncated =
            truncate_list(&mut console_errors, CONSOLE_ERRORS_MAX) | cut.console;
        for e in &mut console_errors {
            console_truncated |= truncate_chars_in_place(e, CONSOLE_ERROR_MAX_CHARS);
        }
        Self {
            frame_id,
            content_epoch,
            captured_at,
            target,
            url: url.text,
            url_truncated: url.truncated,
            origin,
            title: title.text,
            title_truncated: title.truncated,
            viewport,
            screenshot_size: screenshot.as_ref().map(Screenshot::size),
            screenshot,
            aria_snapshot: aria.text,
            aria_truncated: aria.truncated | cut.aria,
            interactive_elements,
            elements_truncated,
            console_errors,
            console_truncated,
            snapshot_diff: None,
            untrusted_content: true,
        }
    }

    /// The same observation with its snapshot's changes against the action's base as well.
    pub fn with_diff(mut self, diff: SnapshotDiff) -> Self {
        self.snapshot_diff = Some(diff);
        self
    }

    /// The changes against the action's base observation, when the action's result has them.
    pub fn snapshot_diff(&self) -> Option<&SnapshotDiff> {
        self.snapshot_diff.as_ref()
    }

    /// Takes the screenshot out (to send it as a separate image block), keeping
    /// `screenshot_size` so coordinates can still be mapped.
    pub fn take_screenshot(&mut self) -> Option<Screenshot> {
        self.screenshot.take()
    }

    /// The frame id.
    pub fn frame_id(&self) -> &FrameId {
        &self.frame_id
    }
    /// The content epoch at capture.
    pub fn content_epoch(&self) -> u64 {
        self.content_epoch
    }
    /// Capture time, milliseconds since the Unix epoch.
    pub fn captured_at(&self) -> u64 {
        self.captured_at
    }
    /// The observed target.
    pub fn target(&self) -> &TargetIdentity {
        &self.target
    }
    /// The redacted URL (bounded).
    pub fn url(&self) -> &str {
        &self.url
    }
    /// The origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }
    /// The title (bounded).
    pub fn title(&self) -> &str {
        &self.title
    }
    /// The viewport.
    pub fn viewport(&self) -> &Viewport {
        &self.viewport
    }
    /// The screenshot, unless taken out.
    pub fn screenshot(&self) -> Option<&Screenshot> {
        self.screenshot.as_ref()
    }
    /// The screenshot's image size, if there was one.
    pub fn screenshot_size(&self) -> Option<ImageSize> {
        self.screenshot_size
    }
    /// The ARIA snapshot (bounded).
    pub fn aria_snapshot(&self) -> &str {
        &self.aria_snapshot
    }
    /// Whether the ARIA snapshot was cut.
    pub fn aria_truncated(&self) -> bool {
        self.aria_truncated
    }
    /// The interactive elements (bounded).
    pub fn interactive_elements(&self) -> &[InteractiveElement] {
        &self.interactive_elements
    }
    /// Whether elements were dropped.
    pub fn elements_truncated(&self) -> bool {
        self.elements_truncated
    }
    /// The console errors (bounded).
    pub fn console_errors(&self) -> &[String] {
        &self.console_errors
    }
    /// Whether console errors were dropped or cut.
    pub fn console_truncated(&self) -> bool {
        self.console_truncated
    }
    /// Always `true`.
    pub fn untrusted_content(&self) -> bool {
        self.untrusted_content
    }
}
