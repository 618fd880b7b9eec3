//! What the runtime may know of the frame a surface issued last: its id, its document's address
//! (for checks, never for output), and per ref the facts policy judges an action by — role and
//! name as shown, box, whether it is a secret field, and where activating it reaches. An adapter
//! keeps its own means of finding a node again (CDP node ids, AT-SPI paths) beside these; the
//! runtime reads only this.

use protocol::{ElementRef, FrameId};

/// The latest observation of a surface, as the runtime sees it (see the module docs).
pub trait FrameRecord: Send + Sync + std::fmt::Debug {
    /// The frame the observation issued.
    fn frame_id(&self) -> &FrameId;
    /// The document's address when observed (unredacted: for runtime checks only, never for
    /// output; empty where a surface has none).
    fn document_url(&self) -> &str;
    /// How much of the viewport visible canvases covered when observed (0..1): content only an
    /// image shows.
    fn canvas_share(&self) -> f64;
    /// Whether this observation came with a screenshot.
    fn has_screenshot(&self) -> bool;
    /// The facts of `element`, if this observation issued it.
    fn target(&self, element: &ElementRef) -> Option<&TargetFacts>;
    /// Every ref's facts.
    fn targets(&self) -> Box<dyn Iterator<Item = &TargetFacts> + '_>;

    /// The control Enter activates wherever focus is, when the observation showed one (a native
    /// dialog's default button): a press of Enter is judged as activating it.
    fn enter_activates(&self) -> Option<&TargetFacts> {
        None
    }

    /// The element under a viewport point as the observation saw it: the smallest bound element
    /// whose box holds the point (frame elements excluded: actions do not target them).
    fn target_at(&self, x: f64, y: f64) -> Option<&TargetFacts> {
        self.targets()
            .filter(|b| !b.frame)
            .filter(|b| {
                let [bx, by, bw, bh] = b.bounds;
                bw > 0.0 && bh > 0.0 && x >= bx && x < bx + bw && y >= by && y < by + bh
            })
            .min_by(|a, b| (a.bounds[2] * a.bounds[3]).total_cmp(&(b.bounds[2] * b.bounds[3])))
    }
}

/// What a ref names, as policy judges it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetFacts {
    /// The role and name as shown to the model.
    pub role: String,
    pub name: String,
    /// Box in top-level viewport CSS pixels when observed: `[x, y, width, height]`.
    pub bounds: [f64; 4],
    /// The field holds a secret (its value is redacted; typing into it is high-impact).
    pub secret_field: bool,
    /// The node is a frame element (`<iframe>`, `<frame>`): its ref enters the frame in a
    /// locator's frame chain; actions do not target it.
    pub frame: bool,
    /// Where activating it reaches (its document's origin, a link's destination, its form).
    pub structure: TargetStructure,
}

/// What an element's structure says about where activating it reaches, read from the DOM
/// snapshot (which page scripts cannot forge) when it was observed; policy judges a write by it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetStructure {
    /// The web origin of the element's own document (an iframe's, for an element inside one).
    pub document_origin: String,
    /// A link's destination, absolute (`<base href>` applied); `None` when it is not in a link.
    pub href: Option<String>,
    /// The link has a `download` attribute: activating it saves a file.
    pub download: bool,
    /// The link's `ping` URLs, absolute: activating it sends a request to each.
    pub pings: Vec<String>,
    /// The form the element belongs to.
    pub form: Option<FormStructure>,
}

/// What a locator resolves to when an action is judged (`Tab::locator_facts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedFacts {
    pub role: String,
    pub name: String,
    /// A password, card, one-time-code or token field.
    pub secret: bool,
    /// Its structure, when the observation listed the element.
    pub structure: Option<TargetStructure>,
}

/// The form of a target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormStructure {
    /// Where it submits, absolute (the submitter's `formaction`, `<base href>` applied).
    pub action: String,
    /// `get`, `post` or `dialog`.
    pub method: String,
    /// It holds a filled password, card, one-time-code or token field: submitting it sends
    /// credentials.
    pub has_secret_fields: bool,
    /// The target is the form's submit button.
    pub submits: bool,
}
