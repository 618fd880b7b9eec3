//! From a capture to a page model: the AX tree walked in document order, joined with the DOM
//! snapshot for geometry, visibility, clickability and exact values, across same-process and
//! out-of-process frames. Produces items (text and nodes) and the interactive candidates.

use std::borrow::Cow;
use std::collections::HashMap;

use rustc_hash::FxHashMap;

use cdp::domains::accessibility::{AxNode, AxValue};
use policy::{FieldFacts, Sensitivity};

use crate::capture::SessionCapture;
use crate::dom::{DocView, Rect};

/// Roles that always get a ref when rendered and visible.
const INTERACTIVE_ROLES: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "treeitem",
    "DisclosureTriangle",
    "ColorWell",
    "Date",
    "DateTime",
    "InputTime",
    "textField",
    "PopUpButton",
    "ToggleButton",
];

/// Roles that carry no meaning of their own: their children are shown in their place.
const TRANSPARENT_ROLES: &[&str] = &[
    "generic",
    "none",
    "presentation",
    "LabelText",
    "strong",
    "emphasis",
    "mark",
    "Abbr",
    "code",
    "time",
    "subscript",
    "superscript",
    "Ruby",
    "RubyAnnotation",
    "Section",
    "MenuListPopup",
    "Pre",
    "deletion",
    "insertion",
    "GenericContainer",
    "Unknown",
    "rowgroup",
];

/// Roles whose value is shown.
const VALUE_ROLES: &[&str] = &[
    "textbox",
    "searchbox",
    "combobox",
    "spinbutton",
    "slider",
    "textField",
    "Date",
    "DateTime",
    "InputTime",
];

/// One interactive element found on the page, before refs are assigned.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// Position in document order (pre-order over all frames).
    pub(crate) order: usize,
    /// Index of the session capture (0 = the tab's own session).
    pub(crate) capture: usize,
    pub(crate) backend: i64,
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) name_inferred: bool,
    pub(crate) states: Vec<String>,
    pub(crate) value: Option<String>,
    pub(crate) bounds: Rect,
    /// The AX role and name as Chromium reported them, for re-checking identity before acting.
    pub(crate) ax_role: String,
    pub(crate) ax_name: String,
    /// A field whose value is a secret (password, card number, one-time code, token).
    pub(crate) secret: bool,
    /// A public field whose value shows a credential (taken out of its `value` by
    /// `policy::redact_text`): painted over in screenshots like a secret field.
    pub(crate) shows_credential: bool,
    /// DOM model only: what the node must still look like before an action (`synth::fingerprint`).
    pub(crate) fingerprint: Option<String>,
    /// A frame element (`<iframe>`, `<frame>`): entered by a locator's frame chain, not acted on.
    pub(crate) frame: bool,
    /// Where activating it reaches, from the DOM snapshot (for policy at act time).
    pub(crate) structure: crate::TargetStructure,
}

#[derive(Debug, Clone)]
pub(crate) enum Item {
    /// Text, and the block box it flows in: text of one block shares a line, text of different
    /// blocks never does.
    Text {
        text: String,
        bounds: Option<Rect>,
        block: usize,
    },
    Node(NodeItem),
}

#[derive(Debug, Clone)]
pub(crate) struct NodeItem {
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) states: Vec<String>,
    pub(crate) value: Option<String>,
    pub(crate) url: Option<String>,
    pub(crate) candidate: Option<usize>,
    pub(crate) bounds: Option<Rect>,
    pub(crate) children: Vec<Item>,
}

/// An out-of-process iframe: which element hosts which child capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct HostKey {
    pub(crate) capture: usize,
    pub(crate) backend: i64,
}

pub(crate) struct Walker<'a> {
    captures: &'a [SessionCapture],
    /// Out-of-process iframe hosts → child capture index.
    oopif: &'a HashMap<HostKey, usize>,
    pub(crate) candidates: Vec<Candidate>,
    viewport: (f64, f64),
    /// Pre-order counter, so refs follow document order even though a node's candidate is
    /// decided after its children.
    seq: usize,
    /// Where each capture's viewport sits in the top-level viewport (out-of-process frames).
    pub(crate) capture_origins: HashMap<usize, (f64, f64)>,
    /// Each frame's security origin by frame id, from the tab's frame tree.
    frame_origins: &'a HashMap<String, String>,
    /// Block boxes seen so far: each block-level element, and the text that follows one inside
    /// its parent, starts a new one.
    blocks: usize,
}

fn value_text(v: &Option<AxValue>) -> String {
    value_str(v).into_owned()
}

/// [`value_text`], borrowed where it can be: the walk asks every node its role and name.
fn value_str(v: &Option<AxValue>) -> Cow<'_, str> {
    v.as_ref()
        .and_then(AxValue::text_ref)
        .unwrap_or(Cow::Borrowed(""))
}

fn prop<'n>(node: &'n AxNode, name: &str) -> Option<&'n AxValue> {
    node.properties
        .iter()
        .find(|p| p.name == name)
        .map(|p| &p.value)
}

fn prop_true(node: &AxNode, name: &str) -> bool {
    prop(node, name)
        .and_then(|v| v.value.as_ref())
        .is_some_and(|v| v == &serde_json::Value::Bool(true) || v == "true")
}

/// Appends a piece of text from the next text node. Adjacent text nodes keep their own edge
/// whitespace; between two that touch, a space is added unless punctuation follows or an
/// opening bracket or quote precedes (`by <code>x</code>.` reads "by x.").
pub(crate) fn join_text(acc: &mut String, piece: &str) {
    let touching = !acc.is_empty()
        && !acc.ends_with(char::is_whitespace)
        && !piece.starts_with(char::is_whitespace);
    let glue = touching
        && !piece.starts_with([
            '.', ',', ';', ':', '!', '?', ')', ']', '}', '\'', '"', '’', '”', '%', '…', '。', '，',
            '、',
        ])
        && !acc.ends_with(['(', '[', '{', '\'', '"', '‘', '“', '$', '#', '@']);
    if glue {
        acc.push(' ');
    }
    acc.push_str(piece);
}

/// Folds runs of whitespace to one space and trims.
pub(crate) fn fold(text: &str) -> String {
    protocol::text::fold_whitespace(text)
}

impl<'a> Walker<'a> {
    pub(crate) fn new(
        captures: &'a [SessionCapture],
        oopif: &'a HashMap<HostKey, usize>,
        viewport: (f64, f64),
        frame_origins: &'a HashMap<String, String>,
    ) -> Self {
        Walker {
            captures,
            oopif,
            candidates: Vec::new(),
            viewport,
            seq: 0,
            capture_origins: HashMap::new(),
            frame_origins,
            blocks: 0,
        }
    }

    /// Walks the root document of capture `index` whose viewport origin is `origin`.
    pub(crate) fn walk_capture(
        &mut self,
        index: usize,
        origin: (f64, f64),
        depth_guard: usize,
    ) -> Vec<Item> {
        let Some(capture) = self.captures.get(index) else {
            return Vec::new();
        };
        self.capture_origins.insert(index, origin);
        let Some(first) = capture.snapshot.documents.first() else {
            return Vec::new();
        };
        let frame = capture.snapshot.string(first.frame_id).to_owned();
        self.walk_document(index, 0, &frame, origin, depth_guard)
    }

    fn walk_document(
        &mut self,
        capture: usize,
        doc: usize,
        frame: &str,
        origin: (f64, f64),
        depth_guard: usize,
    ) -> Vec<Item> {
        if depth_guard > 8 {
            return Vec::new();
        }
        let captures = self.captures;
        let cap = &captures[capture];
        let Some(nodes) = cap.ax.get(frame) else {
            return Vec::new();
        };
        let Some(view) = DocView::new(&cap.snapshot, doc, origin) else {
            return Vec::new();
        };
        let mut by_id: FxHashMap<&str, &AxNode> =
            FxHashMap::with_capacity_and_hasher(nodes.len(), Default::default());
        by_id.extend(nodes.iter().map(|n| (n.node_id.as_str(), n)));
        let Some(root) = nodes
            .iter()
            .find(|n| n.parent_id.is_none())
            .or_else(|| nodes.first())
        else {
            return Vec::new();
        };
        // The frame tree's security origin (authoritative; the snapshot's document URL of a
        // child frame can name its parent's), else the document's own URL.
        let origin = self
            .frame_origins
            .get(frame)
            .cloned()
            .unwrap_or_else(|| policy::web_origin(view.url()));
        self.blocks += 1;
        let mut ctx = DocCtx {
            capture,
            form_secrets: HashMap::new(),
            origin,
            url_origin: policy::web_origin(view.url()),
            view: &view,
            by_id: &by_id,
            depth_guard,
            block: self.blocks,
        };
        self.walk_node(&mut ctx, root)
    }

    fn walk_children(&mut self, ctx: &mut DocCtx<'_, '_>, node: &AxNode) -> Vec<Item> {
        let mut items = Vec::new();
        for child in &node.child_ids {
            if let Some(child) = ctx.by_id.get(child.as_str()) {
                items.extend(self.walk_node(ctx, child));
            }
        }
        items
    }

    /// Walks one node; a block-level element's text is its own block, and so is the text after
    /// it in its parent (CSS's anonymous block).
    fn walk_node(&mut self, ctx: &mut DocCtx<'_, '_>, node: &AxNode) -> Vec<Item> {
        let block = node
            .backend_dom_node_id
            .and_then(|b| ctx.view.node(b))
            .is_some_and(|d| ctx.view.is_block(d));
        if !block {
            return self.walk_one(ctx, node);
        }
        self.blocks += 1;
        ctx.block = self.blocks;
        let items = self.walk_one(ctx, node);
        self.blocks += 1;
        ctx.block = self.blocks;
        items
    }

    fn walk_one(&mut self, ctx: &mut DocCtx<'_, '_>, node: &AxNode) -> Vec<Item> {
        let role = value_str(&node.role);
        let role: &str = &role;
        // List bullets and inline text boxes repeat what their parents say.
        if matches!(role, "InlineTextBox" | "ListMarker") {
            return Vec::new();
        }
        let dom = node.backend_dom_node_id.and_then(|b| ctx.view.node(b));
        // A `::marker` pseudo-element holds the bullet text of a list item.
        if dom.is_some_and(|d| ctx.view.is_marker(d)) {
            return Vec::new();
        }
        if node.ignored {
            return self.walk_children(ctx, node);
        }
        // `opacity: 0` hides a whole subtree from a person, though not from the AX tree.
        if dom.is_some_and(|d| ctx.view.transparent(d)) {
            return Vec::new();
        }
        self.seq += 1;
        let order = self.seq;
        match role {
            "LineBreak" => {
                return vec![Item::Text {
                    text: " ".into(),
                    bounds: None,
                    block: ctx.block,
                }];
            }
            "StaticText" => {
                let text = value_text(&node.name);
                if text.trim().is_empty() {
                    return Vec::new();
                }
                return vec![Item::Text {
                    text,
                    bounds: dom.and_then(|d| ctx.view.bounds(d)),
                    block: ctx.block,
                }];
            }
            "RootWebArea" | "WebArea" => return self.walk_children(ctx, node),
            "Iframe" | "IframePresentational" => return self.walk_iframe(ctx, node, dom, order),
            _ => {}
        }
        let bounds = dom.and_then(|d| ctx.view.bounds(d));
        let visible = dom.is_some_and(|d| ctx.view.visible(d));
        let editable = VALUE_ROLES.contains(&role) || prop_true(node, "editable");
        // An editable field's children are its inner editor: its value again, which may be a
        // secret. The value is shown (or redacted) once, from the field itself.
        let mut children = if editable {
            Vec::new()
        } else {
            self.walk_children(ctx, node)
        };
        let interactive =
            visible && dom.is_some_and(|d| self.is_interactive(ctx.view, role, node, d, &children));
        let name = fold(&value_str(&node.name));
        if !interactive && TRANSPARENT_ROLES.contains(&role) {
            return children;
        }
        if !interactive && (role == "image" || role == "img") && name.is_empty() {
            return children;
        }
        let mut states = states(node, role);
        // A toggle that shows or hides a list says so only through the list: collapsed or
        // expanded, marked as inferred (ARIA, when the page gives it, comes first).
        if interactive
            && !states.iter().any(|s| s == "expanded" || s == "collapsed")
            && let Some(open) = dom.and_then(|d| inferred_expansion(ctx.view, d, &children))
        {
            states.push(if open { "expanded" } else { "collapsed" }.into());
            states.push("state-inferred".into());
        }
        let tag = dom.map(|d| ctx.view.tag(d)).unwrap_or_default();
        let (value, secret, shows_credential) = dom.map_or((None, false, false), |d| {
            self.value(ctx.view, node, role, tag, d, &name)
        });
        let url = match (role, dom) {
            // A link that goes nowhere (`#`, `javascript:`) has no target to show; a fragment
            // stays on the page and is shown as itself.
            ("link", Some(d)) => ctx.view.attr(d, "href").map(str::trim).and_then(|href| {
                let lower = href.to_ascii_lowercase();
                if href.is_empty() || href == "#" || lower.starts_with("javascript:") {
                    None
                } else if href.starts_with('#') {
                    // Only a plain anchor survives redaction; one that carries data shows nothing.
                    link_target(&ctx.url_origin, ctx.view.url(), href)
                        .rsplit_once('#')
                        .map(|(_, f)| format!("#{f}"))
                } else {
                    Some(link_target(&ctx.url_origin, ctx.view.base_url(), href))
                }
            }),
            _ => None,
        };
        let display_role = match role {
            "generic" | "none" | "presentation" | "GenericContainer" | "Unknown" => {
                "clickable".to_owned()
            }
            "DisclosureTriangle" => "summary".to_owned(),
            "image" => "img".to_owned(),
            _ => role.to_owned(),
        };
        let mut shown_name = name.clone();
        let mut name_inferred = false;
        let mut from_content = false;
        if interactive && shown_name.is_empty() {
            // What a person reads on it is its name; only names found elsewhere are "inferred".
            shown_name = content_name(&children);
            from_content = true;
            if shown_name.is_empty()
                && let Some(inferred) = dom.and_then(|d| infer_name(ctx.view, d))
            {
                shown_name = inferred;
                name_inferred = true;
            }
        }
        // A target whose content is several blocks (a mail row's sender, subject and snippet)
        // keeps them as lines of their own under it rather than one flattened name; its name in
        // the interactive list is those blocks read in turn (`Dulcie / Risus. / Id placerat…`).
        let mut line_name = shown_name.clone();
        if interactive && blocks_in(&children) > 1 && {
            let mut content = String::new();
            all_text(&children, &mut content);
            from_content || fold(&content) == shown_name
        } {
            line_name.clear();
        }
        // A named node repeats its name as text; drop the duplicate.
        if !line_name.is_empty() {
            if text_of(&children) == shown_name {
                children.clear();
            } else if matches!(children.first(), Some(Item::Text { text, .. }) if fold(text) == shown_name)
            {
                children.remove(0);
            }
        }
        let candidate = if interactive {
            let index = self.candidates.len();
            self.candidates.push(Candidate {
                order,
                capture: ctx.capture,
                backend: node.backend_dom_node_id.unwrap_or_default(),
                role: display_role.clone(),
                name: shown_name.clone(),
                name_inferred,
                states: states.clone(),
                value: value.clone(),
                bounds: bounds.unwrap_or(Rect {
                    x: 0.0,
                    y: 0.0,
                    w: 0.0,
                    h: 0.0,
                }),
                ax_role: role.to_owned(),
                ax_name: name.clone(),
                secret,
                shows_credential,
                fingerprint: dom
                    .filter(|_| self.captures[ctx.capture].dom_model)
                    .map(|d| crate::synth::fingerprint(ctx.view, d)),
                frame: false,
                structure: dom
                    .map(|d| structure(ctx.view, d, &ctx.origin, &mut ctx.form_secrets))
                    .unwrap_or_default(),
            });
            Some(index)
        } else {
            None
        };
        if name_inferred {
            states.push("name-inferred".into());
        }
        vec![Item::Node(NodeItem {
            role: display_role,
            name: line_name,
            states,
            value,
            url,
            candidate,
            bounds,
            children,
        })]
    }

    /// A visible frame element and the document inside it (same-process or out-of-process).
    /// The frame element itself gets a ref, so a locator's frame chain can enter it by the ref
    /// the model saw (`{"kind":"element","ref":…}`); its candidate precedes its content's.
    fn walk_iframe(
        &mut self,
        ctx: &mut DocCtx<'_, '_>,
        node: &AxNode,
        dom: Option<usize>,
        order: usize,
    ) -> Vec<Item> {
        let Some(d) = dom else { return Vec::new() };
        if !ctx.view.visible(d) {
            return Vec::new();
        }
        let bounds = ctx.view.bounds(d);
        let ax_name = fold(&value_str(&node.name));
        let mut name = ax_name.clone();
        if name.is_empty() {
            name = ctx.view.attr(d, "title").map(fold).unwrap_or_default();
        }
        let candidate = match (node.backend_dom_node_id, bounds) {
            (Some(backend), Some(b)) => {
                self.candidates.push(Candidate {
                    order,
                    capture: ctx.capture,
                    backend,
                    role: "iframe".into(),
                    name: name.clone(),
                    name_inferred: false,
                    states: Vec::new(),
                    value: None,
                    bounds: b,
                    ax_role: value_text(&node.role),
                    ax_name,
                    secret: false,
                    shows_credential: false,
                    fingerprint: self.captures[ctx.capture]
                        .dom_model
                        .then(|| crate::synth::fingerprint(ctx.view, d)),
                    frame: true,
                    structure: crate::TargetStructure {
                        document_origin: ctx.origin.clone(),
                        ..Default::default()
                    },
                });
                Some(self.candidates.len() - 1)
            }
            _ => None,
        };
        let origin = bounds.map_or((0.0, 0.0), |b| (b.x, b.y));
        let children = if let Some(doc) = ctx.view.content_document(d) {
            let cap = &self.captures[ctx.capture];
            let frame = cap
                .snapshot
                .documents
                .get(doc)
                .map(|x| cap.snapshot.string(x.frame_id).to_owned())
                .unwrap_or_default();
            self.walk_document(ctx.capture, doc, &frame, origin, ctx.depth_guard + 1)
        } else if let Some(child) = node.backend_dom_node_id.and_then(|b| {
            self.oopif.get(&HostKey {
                capture: ctx.capture,
                backend: b,
            })
        }) {
            self.walk_capture(*child, origin, ctx.depth_guard + 1)
        } else {
            Vec::new()
        };
        vec![Item::Node(NodeItem {
            role: "iframe".into(),
            name,
            states: Vec::new(),
            value: None,
            url: None,
            candidate,
            bounds,
            children,
        })]
    }

    fn is_interactive(
        &self,
        view: &DocView<'_>,
        role: &str,
        node: &AxNode,
        dom: usize,
        children: &[Item],
    ) -> bool {
        let tag = view.tag(dom);
        // A label forwards clicks to its control, which has its own ref.
        if matches!(tag, "html" | "body" | "#document" | "iframe" | "label") || role == "LabelText"
        {
            return false;
        }
        if INTERACTIVE_ROLES.contains(&role) {
            return true;
        }
        let editable = prop(node, "editable")
            .and_then(AxValue::text_ref)
            .is_some_and(|v| v != "false" && !v.is_empty());
        if editable && role != "RootWebArea" {
            return true;
        }
        let by_listener = view.clickable(dom);
        let by_cursor =
            view.cursor_pointer(dom) && view.parent(dom).is_none_or(|p| !view.cursor_pointer(p));
        let by_tabindex = view
            .attr(dom, "tabindex")
            .and_then(|t| t.trim().parse::<i64>().ok())
            .is_some_and(|t| t >= 0)
            && prop_true(node, "focusable");
        // Something to pick up and move: a drag source (`draggable`, a grab cursor, a sortable
        // or draggable library's handle class) is a target of a drag, though it has no click.
        let by_drag = view
            .attr(dom, "draggable")
            .is_some_and(|d| d.trim().eq_ignore_ascii_case("true"))
            || (view.cursor_grab(dom) && view.parent(dom).is_none_or(|p| !view.cursor_grab(p)))
            || view.classes(dom).any(|c| DRAG_CLASSES.contains(&c));
        // An anchor without `href` that a script made into a control (a widget library's
        // Prev/Next: a class, a title, a handler name), though its handler may sit on an
        // ancestor; a bare named anchor (`<a name=…>`) only marks a place.
        let by_anchor = tag == "a"
            && view.attr(dom, "href").is_none()
            && view.attr_names(dom).any(|a| {
                let a = a.to_ascii_lowercase();
                matches!(
                    a.as_str(),
                    "class" | "title" | "role" | "onclick" | "tabindex"
                ) || a.starts_with("data-")
            });
        if !(by_listener || by_cursor || by_tabindex || by_drag || by_anchor) {
            return false;
        }
        // A container that merely delegates events (a framework root, a whole list) is not one
        // target: skip it when it covers most of the viewport or holds several targets itself.
        let inner_targets = count_candidates(children);
        let big = view
            .bounds(dom)
            .is_some_and(|b| b.area() >= 0.6 * self.viewport.0 * self.viewport.1);
        if big || inner_targets > 2 {
            return false;
        }
        // A container whose every word belongs to the targets inside it (a toolbar that serves
        // its buttons through one delegated handler) is where they are, not one more target.
        if inner_targets >= 2 && {
            let mut outside = String::new();
            text_outside_targets(children, &mut outside);
            outside.trim().is_empty()
        } {
            return false;
        }
        // One target, one ref: a container (a calendar cell) around a single target that holds
        // all of its text (the day's link) is that target, not a second one.
        if inner_targets == 1
            && let Some(inner) = sole_target(children)
        {
            let mut text = String::new();
            all_text(children, &mut text);
            if fold(&text) == inner.name {
                return false;
            }
        }
        true
    }

    /// The field's value as shown (redacted when secret), whether the field holds a secret, and
    /// whether a public field's value showed a credential that was taken out.
    fn value(
        &self,
        view: &DocView<'_>,
        node: &AxNode,
        role: &str,
        tag: &str,
        dom: usize,
        name: &str,
    ) -> (Option<String>, bool, bool) {
        if !(VALUE_ROLES.contains(&role) || role == "generic" && prop_true(node, "editable")) {
            return (None, false, false);
        }
        let raw = if tag == "select" {
            value_text(&node.value)
        } else {
            view.input_value(dom)
                .map(str::to_owned)
                .unwrap_or_else(|| value_text(&node.value))
        };
        let facts = FieldFacts {
            tag: Some(tag),
            input_type: view.attr(dom, "type"),
            autocomplete: view.attr(dom, "autocomplete"),
            name: view.attr(dom, "name"),
            id: view.attr(dom, "id"),
            aria_label: view.attr(dom, "aria-label"),
            label: Some(name),
            placeholder: view.attr(dom, "placeholder"),
            role: Some(role),
        };
        let sensitivity = policy::classify_field(&facts);
        if raw.is_empty() && matches!(sensitivity, Sensitivity::Public) {
            return (Some(String::new()), false, false);
        }
        // A public field's value is page-controlled text: a credential in it (a URL's token, a
        // `key=value` pair) is taken out as anywhere else.
        match sensitivity {
            Sensitivity::Public => match policy::redact_text(&raw) {
                std::borrow::Cow::Borrowed(_) => (Some(raw), false, false),
                std::borrow::Cow::Owned(shown) => (Some(shown), false, true),
            },
            Sensitivity::Secret(_) => (
                Some(policy::redact_value_for_field(&raw, sensitivity)),
                true,
                false,
            ),
        }
    }
}

struct DocCtx<'v, 'n> {
    capture: usize,
    /// The block box text walked now flows in.
    block: usize,
    /// Whether each form (by node) holds a filled secret field, decided once per form.
    form_secrets: HashMap<usize, bool>,
    /// The document's security origin, as the browser's frame tree reports it.
    origin: String,
    /// The web origin of the document's URL, which links are shown relative to.
    url_origin: String,
    view: &'v DocView<'v>,
    by_id: &'v FxHashMap<&'n str, &'n AxNode>,
    depth_guard: usize,
}

/// The text of `items` that is not inside a target.
fn text_outside_targets(items: &[Item], out: &mut String) {
    for item in items {
        match item {
            Item::Text { text, .. } => join_text(out, text),
            Item::Node(n) if n.candidate.is_none() => {
                join_text(out, &n.name);
                text_outside_targets(&n.children, out);
            }
            Item::Node(_) => {}
        }
    }
}

fn count_candidates(items: &[Item]) -> usize {
    items
        .iter()
        .map(|i| match i {
            Item::Text { .. } => 0,
            Item::Node(n) => usize::from(n.candidate.is_some()) + count_candidates(&n.children),
        })
        .sum()
}

/// The folded text of items that are all text of one block; empty if any node is among them
/// or the text spans blocks (it is then several lines).
pub(crate) fn text_of(items: &[Item]) -> String {
    let mut text = String::new();
    let mut first_block = None;
    for item in items {
        match item {
            Item::Text { text: t, block, .. } => {
                if !t.trim().is_empty() && *first_block.get_or_insert(*block) != *block {
                    return String::new();
                }
                join_text(&mut text, t);
            }
            Item::Node(_) => return String::new(),
        }
    }
    fold(&text)
}

/// A target's name from its content: the text of each block in turn (` / ` between blocks),
/// with the names of the nodes inside it, but not those of other targets inside it (a row's
/// icons have refs and names of their own).
fn content_name(items: &[Item]) -> String {
    fn walk(items: &[Item], groups: &mut Vec<String>, last: &mut Option<usize>) {
        for item in items {
            match item {
                Item::Text { text, block, .. } => {
                    if !text.trim().is_empty() && *last != Some(*block) {
                        groups.push(String::new());
                        *last = Some(*block);
                    }
                    if let Some(group) = groups.last_mut() {
                        join_text(group, text);
                    }
                }
                Item::Node(n) if n.candidate.is_some() => *last = None,
                Item::Node(n) => {
                    if !n.name.is_empty() {
                        if groups.is_empty() {
                            groups.push(String::new());
                        }
                        if let Some(group) = groups.last_mut() {
                            join_text(group, &n.name);
                        }
                    }
                    walk(&n.children, groups, last);
                }
            }
        }
    }
    let mut groups = Vec::new();
    walk(items, &mut groups, &mut None);
    groups
        .iter()
        .map(|g| fold(g))
        .filter(|g| !g.is_empty())
        .collect::<Vec<_>>()
        .join(" / ")
}

/// How many block boxes the text directly among `items` flows in.
fn blocks_in(items: &[Item]) -> usize {
    let mut blocks: Vec<usize> = items
        .iter()
        .filter_map(|i| match i {
            Item::Text { text, block, .. } if !text.trim().is_empty() => Some(*block),
            _ => None,
        })
        .collect();
    blocks.dedup();
    blocks.len()
}

/// The one target among `items` (searched through their children), when there is exactly one.
fn sole_target(items: &[Item]) -> Option<&NodeItem> {
    let mut found = None;
    for item in items {
        if let Item::Node(n) = item {
            let inner = if n.candidate.is_some() {
                Some(n)
            } else {
                sole_target(&n.children)
            };
            if inner.is_some() {
                if found.is_some() {
                    return None;
                }
                found = inner;
            }
        }
    }
    found
}

/// Class names drag-and-drop libraries give what can be dragged (jQuery UI, SortableJS,
/// Dragula-style pages).
const DRAG_CLASSES: &[&str] = &[
    "ui-sortable-handle",
    "ui-draggable",
    "ui-draggable-handle",
    "draggable",
    "sortable-item",
    "drag-handle",
    "sortable-handle",
];

/// Triangles and chevrons a tree or disclosure draws on its toggles.
const TOGGLE_GLYPHS: &str = "▸▹►▶▾▿▼▽◂◃◀▴▵▲△›‹»˃˅⌄⌃⏵⏷";

/// Whether a toggle opens (`true`) or closes (`false`) a list, from the evidence the page gives
/// when it does not say it with ARIA: a list inside the element itself, or — for a toggle (a
/// glyph, a caret or toggle class) — a list beside it in its parent, shown or hidden; failing
/// a list, an `expanded`/`collapsed` (`open`/`closed`) class on the toggle or its parent.
fn inferred_expansion(view: &DocView<'_>, dom: usize, children: &[Item]) -> Option<bool> {
    let is_list = |n: usize| {
        matches!(view.tag(n), "ul" | "ol")
            || view
                .attr(n, "role")
                .is_some_and(|r| matches!(r.trim(), "group" | "tree" | "list"))
    };
    let child_list = |parent: usize, except: Option<usize>| {
        view.descendants(parent)
            .filter(|c| {
                view.parent(*c) == Some(parent) && Some(*c) != except && view.node_type(*c) == 1
            })
            .find(|c| is_list(*c))
    };
    let shown =
        |list: usize| view.visible(list) && view.descendants(list).any(|d| view.node_type(d) == 1);
    let has_items = |list: usize| view.descendants(list).any(|d| view.node_type(d) == 1);
    // An item (a folder, a menu entry) with its own list inside.
    let item = view.tag(dom) == "li"
        || view
            .attr(dom, "role")
            .is_some_and(|r| matches!(r.trim(), "treeitem" | "listitem" | "menuitem"));
    if item && let Some(list) = child_list(dom, None).filter(|l| has_items(*l)) {
        return Some(shown(list));
    }
    // The label of a tree item (a folder's name that opens it when clicked): the item's own
    // list after the label says, when it is hidden; shown, when the tree around it has hidden
    // lists (it is a tree that folds) or an icon says folder. With no list at all (children
    // rendered only when opened), a folder icon's class says which (`fa-folder`/`fa-folder-open`).
    let mut label_of = dom;
    for _ in 0..3 {
        let Some(up) = view.parent(label_of) else {
            break;
        };
        label_of = up;
        if !is_tree_item(view, up) {
            continue;
        }
        if toggle_beside(view, up, dom) {
            break;
        }
        if let Some(list) = child_list(up, None).filter(|l| *l > dom && has_items(*l)) {
            if !shown(list) {
                return Some(false);
            }
            let folds = view
                .siblings(up)
                .any(|s| child_list(s, None).is_some_and(|l| has_items(l) && !view.visible(l)));
            if folds || folder_icon(view, up, dom).is_some() {
                return Some(true);
            }
        } else if let Some(open) = folder_icon(view, up, dom) {
            return Some(open);
        }
        break;
    }
    let mut own = String::new();
    all_text(children, &mut own);
    let own = own.trim();
    let glyph = own.chars().count() == 1 && own.chars().all(|c| TOGGLE_GLYPHS.contains(c));
    let toggle_class = has_toggle_class(view, dom);
    if !(glyph || toggle_class) {
        return None;
    }
    let parent = view.parent(dom)?;
    if let Some(list) = child_list(parent, Some(dom)).filter(|l| has_items(*l)) {
        return Some(shown(list));
    }
    for node in [dom, parent] {
        for class in view.classes(node) {
            match class.to_ascii_lowercase().as_str() {
                "collapsed" | "closed" | "is-collapsed" | "is-closed" => return Some(false),
                "expanded" | "open" | "is-expanded" | "is-open" => return Some(true),
                _ => {}
            }
        }
    }
    None
}

/// A class that names a toggle (`toggle`, `caret`, `twisty`, …).
fn has_toggle_class(view: &DocView<'_>, node: usize) -> bool {
    view.classes(node).any(|c| {
        let c = c.to_ascii_lowercase();
        [
            "toggle",
            "caret",
            "arrow",
            "expand",
            "collapse",
            "twisty",
            "chevron",
            "disclosure",
        ]
        .iter()
        .any(|w| c.contains(w))
    })
}

/// A toggle of its own beside a tree item's label (a glyph or a toggle class among the item's
/// other children): the label then only names the item, and the toggle says what it opens.
fn toggle_beside(view: &DocView<'_>, item: usize, label: usize) -> bool {
    view.descendants(item)
        .filter(|c| view.parent(*c) == Some(item) && *c != label && view.node_type(*c) == 1)
        .filter(|c| !view.descendants(*c).any(|d| d == label))
        .any(|c| {
            has_toggle_class(view, c) || {
                let text: String = view
                    .descendants(c)
                    .filter(|d| view.node_type(*d) == 3)
                    .map(|d| view.node_value(d))
                    .collect();
                let text = text.trim();
                text.chars().count() == 1 && text.chars().all(|ch| TOGGLE_GLYPHS.contains(ch))
            }
        })
}

/// An item of a list or tree (`li`, `role=treeitem|listitem|menuitem`).
fn is_tree_item(view: &DocView<'_>, node: usize) -> bool {
    view.tag(node) == "li"
        || view
            .attr(node, "role")
            .is_some_and(|r| matches!(r.trim(), "treeitem" | "listitem" | "menuitem"))
}

/// What a folder icon's class says of a tree item (on the item, its label, or an icon among the
/// item's children): open (`fa-folder-open`, `jstree-open`) or closed (`fa-folder`,
/// `folder-closed`); `None` when no such class is there.
fn folder_icon(view: &DocView<'_>, item: usize, label: usize) -> Option<bool> {
    let nodes = std::iter::once(item).chain(std::iter::once(label)).chain(
        view.descendants(item)
            .filter(|d| view.parent(*d) == Some(item)),
    );
    for node in nodes {
        for class in view.classes(node) {
            match class.to_ascii_lowercase().as_str() {
                "fa-folder-open" | "folder-open" | "bi-folder2-open" | "icon-folder-open"
                | "jstree-open" | "mdi-folder-open" => return Some(true),
                "fa-folder" | "folder-closed" | "bi-folder" | "icon-folder" | "jstree-closed"
                | "mdi-folder" => return Some(false),
                _ => {}
            }
        }
    }
    None
}

/// A link's destination as the observation shows it: resolved against the base URL (a
/// `<base href>` included), then redacted, and relative to the document's origin when it stays
/// there. `url_origin` is the web origin of the document's URL (`policy::web_origin`), worked
/// out once per document: a page of a thousand links would ask it a thousand times.
fn link_target(url_origin: &str, base_url: &str, href: &str) -> String {
    let absolute = resolve_href(base_url, href.trim());
    let redacted = policy::redact_url(&absolute);
    match redacted.strip_prefix(url_origin) {
        Some(rest) if !url_origin.is_empty() && (rest.starts_with('/') || rest.is_empty()) => {
            if rest.is_empty() {
                "/".to_owned()
            } else {
                rest.to_owned()
            }
        }
        _ => redacted,
    }
}

fn all_text(items: &[Item], out: &mut String) {
    for item in items {
        match item {
            Item::Text { text, .. } => join_text(out, text),
            Item::Node(n) => {
                if !n.name.is_empty() {
                    join_text(out, &n.name);
                }
                all_text(&n.children, out);
            }
        }
    }
}

fn states(node: &AxNode, role: &str) -> Vec<String> {
    let mut out = Vec::new();
    let text = |name: &str| prop(node, name).and_then(AxValue::text_ref);
    if prop_true(node, "disabled") {
        out.push("disabled".into());
    }
    match text("checked").as_deref() {
        Some("true") => out.push("checked".into()),
        Some("mixed") => out.push("checked=mixed".into()),
        _ => {}
    }
    match text("pressed").as_deref() {
        Some("true") => out.push("pressed".into()),
        Some("mixed") => out.push("pressed=mixed".into()),
        _ => {}
    }
    match text("expanded").as_deref() {
        Some("true") => out.push("expanded".into()),
        Some("false") => out.push("collapsed".into()),
        _ => {}
    }
    if prop_true(node, "selected") {
        out.push("selected".into());
    }
    if prop_true(node, "focused") {
        out.push("focused".into());
    }
    if prop_true(node, "required") {
        out.push("required".into());
    }
    if text("invalid").is_some_and(|v| v != "false") {
        out.push("invalid".into());
    }
    if prop_true(node, "readonly") {
        out.push("readonly".into());
    }
    if prop_true(node, "multiselectable") {
        out.push("multiselectable".into());
    }
    if prop_true(node, "modal") {
        out.push("modal".into());
    }
    // Indentation already shows nesting; the level matters for headings.
    if let Some(level) = text("level").filter(|_| role == "heading") {
        out.push(format!("level={level}"));
    }
    if let Some(popup) = text("hasPopup").filter(|v| v != "false") {
        out.push(format!("haspopup={popup}"));
    }
    out
}

/// A fallback name for a nameless interactive element without text, from what the author left
/// behind: `title`, `alt`, `placeholder`, image file names, icon classes, ids.
fn infer_name(view: &DocView<'_>, dom: usize) -> Option<String> {
    for attr in [
        "title",
        "aria-label",
        "alt",
        "placeholder",
        "data-tooltip",
        "data-title",
        "value",
    ] {
        if let Some(v) = view.attr(dom, attr).map(fold).filter(|v| !v.is_empty()) {
            return Some(v);
        }
    }
    for d in std::iter::once(dom).chain(view.descendants(dom)) {
        let tag = view.tag(d);
        for attr in ["title", "alt", "aria-label"] {
            if let Some(v) = view.attr(d, attr).map(fold).filter(|v| !v.is_empty()) {
                return Some(v);
            }
        }
        if tag == "title"
            && let Some(t) = view
                .descendants(d)
                .map(|t| fold(view.node_value(t)))
                .find(|t| !t.is_empty())
        {
            return Some(t);
        }
        let source = match tag {
            "img" | "image" | "input" => view.attr(d, "src").or_else(|| view.attr(d, "href")),
            "use" => view.attr(d, "href").or_else(|| view.attr(d, "xlink:href")),
            _ => None,
        };
        if let Some(stem) = source.and_then(file_stem) {
            return Some(stem);
        }
        // An icon CSS paints (`content: url(reply.png)`, a background image): its file's name,
        // unless the same image paints its neighbours too (a sprite sheet names none of them).
        if let Some(stem) = view
            .css_image(d)
            .filter(|url| !painted_nearby(view, dom, url))
            .and_then(file_stem)
            .filter(|stem| !matches!(stem.as_str(), "sprite" | "sprites" | "icons" | "icon"))
        {
            return Some(stem);
        }
        if let Some(icon) = view.attr(d, "class").and_then(icon_class) {
            return Some(icon);
        }
    }
    // What the page's code calls it (`data-action="repost"`, `data-icon="heart"`), on the
    // control or inside it, then its test id, id or name.
    for d in std::iter::once(dom).chain(view.descendants(dom)) {
        for attr in ["data-action", "data-label", "data-name", "data-icon"] {
            if let Some(v) = view.attr(d, attr).map(humanize).filter(|v| !v.is_empty()) {
                return Some(v);
            }
        }
    }
    // A class that is a word for what it does (`reply`, `trash`, `star`), not for how it looks;
    // of several, the one its neighbours do not share (`tool reply` among `tool forward`).
    let words: Vec<&str> = view.classes(dom).filter(|c| class_word(c)).collect();
    let shared = |word: &str| {
        view.siblings(dom)
            .any(|s| view.classes(s).any(|c| c == word))
    };
    if let Some(word) = words.iter().find(|w| !shared(w)).or_else(|| words.first()) {
        return Some(humanize(word));
    }
    for attr in ["data-testid", "id", "name"] {
        if let Some(v) = view.attr(dom, attr).map(humanize).filter(|v| !v.is_empty()) {
            return Some(v);
        }
    }
    None
}

/// A class name that can name a control: a lowercase word or two (`reply`, `add-to-cart`), not
/// a generated hash, a layout or state class, or a generic word.
fn class_word(class: &str) -> bool {
    const GENERIC: &[&str] = &[
        "btn",
        "button",
        "icon",
        "icons",
        "control",
        "controls",
        "action",
        "actions",
        "clickable",
        "item",
        "link",
        "active",
        "selected",
        "disabled",
        "hover",
        "focus",
        "small",
        "large",
        "sm",
        "lg",
        "md",
        "xs",
        "left",
        "right",
        "top",
        "bottom",
        "pull",
        "float",
        "inline",
        "block",
        "flex",
        "hidden",
        "visible",
        "show",
        "hide",
        "primary",
        "secondary",
        "default",
        "round",
        "rounded",
        "circle",
        "fa",
        "material",
        "glyphicon",
        "svg",
        "img",
        "image",
        "ui",
        "widget",
        "container",
        "wrapper",
        "inner",
        "outer",
        "row",
        "col",
        "cell",
        "toggle",
    ];
    let len = class.chars().count();
    (3..=24).contains(&len)
        && class
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'-' || b == b'_')
        && !class.starts_with(['-', '_'])
        && !GENERIC.contains(&class)
        && !class.starts_with("js-")
        && !class.starts_with("ui-")
}

/// `/icons/trash-can.svg?v=2` → `trash can`; `#icon-close` → `close`.
/// Whether an element beside `dom` (a sibling, or inside one) is painted with the same image.
fn painted_nearby(view: &DocView<'_>, dom: usize, url: &str) -> bool {
    view.siblings(dom).any(|s| {
        std::iter::once(s)
            .chain(view.descendants(s))
            .any(|n| view.css_image(n) == Some(url))
    })
}

fn file_stem(source: &str) -> Option<String> {
    if source.starts_with("data:") {
        return None;
    }
    let path = source.split(['?', '#']).next().unwrap_or_default();
    let last = if path.is_empty() {
        source.rsplit('#').next()?
    } else {
        path.rsplit('/').next()?
    };
    let stem = last.split('.').next().unwrap_or(last);
    let stem = stem
        .trim_start_matches("icon-")
        .trim_start_matches("ic_")
        .trim_start_matches("icon_");
    let human = humanize(stem);
    (!human.is_empty()).then_some(human)
}

/// `fa fa-trash` → `trash`; `icon icon-close` → `close`.
fn icon_class(classes: &str) -> Option<String> {
    classes.split_whitespace().find_map(|c| {
        for prefix in ["fa-", "icon-", "bi-", "glyphicon-", "mdi-", "ti-"] {
            if let Some(rest) = c.strip_prefix(prefix)
                && !rest.is_empty()
                && !matches!(
                    rest,
                    "solid" | "regular" | "light" | "lg" | "sm" | "xs" | "fw" | "2x" | "3x"
                )
            {
                return Some(humanize(rest));
            }
        }
        None
    })
}

/// `saveButton` / `save_button` / `save-button` → `save button`.
fn humanize(raw: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in raw.chars() {
        if c == '_' || c == '-' || c == '.' {
            out.push(' ');
            prev_lower = false;
        } else if c.is_uppercase() && prev_lower {
            out.push(' ');
            out.extend(c.to_lowercase());
            prev_lower = false;
        } else {
            out.extend(c.to_lowercase());
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
        }
    }
    fold(&out)
}

/// Where an element's activation reaches, read from the snapshot: its document's origin, a
/// link's destination, `download` and `ping`, and its form (action and method with the
/// submitter's own `formaction`/`formmethod`, secret fields inside, whether it submits).
fn structure(
    view: &DocView<'_>,
    node: usize,
    document_origin: &str,
    form_secrets: &mut HashMap<usize, bool>,
) -> crate::TargetStructure {
    let base = view.base_url();
    let tag = view.tag(node);
    // The link around the element (a span inside an anchor activates the anchor).
    let mut link = None;
    let mut at = Some(node);
    while let Some(n) = at {
        if matches!(view.tag(n), "a" | "area") && view.attr(n, "href").is_some() {
            link = Some(n);
            break;
        }
        at = view.parent(n);
    }
    let href = link
        .and_then(|l| view.attr(l, "href"))
        .map(|h| resolve_href(base, h.trim()));
    let download = link.is_some_and(|l| view.attr(l, "download").is_some());
    let pings = link
        .and_then(|l| view.attr(l, "ping"))
        .map(|p| {
            p.split_ascii_whitespace()
                .take(8)
                .map(|u| resolve_href(base, u))
                .collect()
        })
        .unwrap_or_default();
    let form = view.form_of(node).map(|f| {
        let input_type = view.attr(node, "type").map(str::to_ascii_lowercase);
        let submits = match tag {
            "button" => input_type.as_deref().is_none_or(|t| t == "submit"),
            "input" => matches!(input_type.as_deref(), Some("submit" | "image")),
            _ => false,
        };
        let own = |attr: &str| if submits { view.attr(node, attr) } else { None };
        let action = own("formaction")
            .or_else(|| view.attr(f, "action"))
            .unwrap_or("");
        let method = own("formmethod")
            .or_else(|| view.attr(f, "method"))
            .unwrap_or("get")
            .trim()
            .to_ascii_lowercase();
        // A secret field with something in it: submitting the form sends a credential (decided
        // once per form: a page that is one big form has many targets in it).
        let has_secret_fields = *form_secrets.entry(f).or_insert_with(|| {
            view.descendants(f).any(|d| {
                view.tag(d) == "input"
                    && view.input_value(d).is_some_and(|v| !v.is_empty())
                    && policy::classify_field(&policy::FieldFacts {
                        tag: Some("input"),
                        input_type: view.attr(d, "type"),
                        autocomplete: view.attr(d, "autocomplete"),
                        name: view.attr(d, "name"),
                        id: view.attr(d, "id"),
                        aria_label: view.attr(d, "aria-label"),
                        label: None,
                        placeholder: view.attr(d, "placeholder"),
                        role: None,
                    })
                    .is_secret()
            })
        });
        crate::FormStructure {
            action: resolve_href(
                if action.trim().is_empty() {
                    view.url()
                } else {
                    base
                },
                action.trim(),
            ),
            method: if method == "post" || method == "dialog" {
                method
            } else {
                "get".into()
            },
            has_secret_fields,
            submits,
        }
    });
    crate::TargetStructure {
        document_origin: document_origin.to_owned(),
        href,
        download,
        pings,
        form,
    }
}

/// Resolves `href` against an absolute http(s) `base` the way a browser would for the common
/// forms (absolute, scheme-relative, root-relative, query, fragment, relative path).
fn resolve_href(base: &str, href: &str) -> String {
    let has_scheme = href.find(':').is_some_and(|i| {
        let scheme = &href[..i];
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if has_scheme {
        return href.to_owned();
    }
    let Some((scheme, rest)) = base.split_once("://") else {
        return href.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path_and_more) = rest.split_at(authority_end);
    let path = path_and_more.split(['?', '#']).next().unwrap_or("");
    let path = if path.is_empty() { "/" } else { path };
    if let Some(scheme_relative) = href.strip_prefix("//") {
        return [scheme, "://", scheme_relative].concat();
    }
    if href.starts_with('/') {
        return [scheme, "://", authority, href].concat();
    }
    if href.starts_with('?') {
        return [scheme, "://", authority, path, href].concat();
    }
    if href.starts_with('#') || href.is_empty() {
        let without_fragment = base.split('#').next().unwrap_or(base);
        return [without_fragment, href].concat();
    }
    let directory = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    [scheme, "://", authority, directory, href].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_resolve_like_a_browser() {
        let base = "http://127.0.0.1:8080/dir/page.html?x=1#top";
        assert_eq!(resolve_href(base, "https://a.test/b"), "https://a.test/b");
        assert_eq!(
            resolve_href(base, "//cdn.test/x.js"),
            "http://cdn.test/x.js"
        );
        assert_eq!(
            resolve_href(base, "/reset?token=1"),
            "http://127.0.0.1:8080/reset?token=1"
        );
        assert_eq!(
            resolve_href(base, "?page=2"),
            "http://127.0.0.1:8080/dir/page.html?page=2"
        );
        assert_eq!(
            resolve_href(base, "#section"),
            "http://127.0.0.1:8080/dir/page.html?x=1#section"
        );
        assert_eq!(
            resolve_href(base, "other.html"),
            "http://127.0.0.1:8080/dir/other.html"
        );
        assert_eq!(resolve_href(base, "mailto:a@b.c"), "mailto:a@b.c");
        assert_eq!(
            link_target(
                &policy::web_origin(base),
                base,
                "/reset?token=abc#access_token=x"
            ),
            "/reset?token="
        );
        assert_eq!(
            link_target(&policy::web_origin(base), base, "https://other.test/a?b=c"),
            "https://other.test/a?b="
        );
        // A `<base href>` elsewhere sends every relative link there, and the outline says so.
        assert_eq!(
            link_target(&policy::web_origin(base), "https://evil.test/", "/pay"),
            "https://evil.test/pay"
        );
    }

    #[test]
    fn fallback_names_from_files_classes_and_ids() {
        assert_eq!(
            file_stem("/static/icons/trash-can.svg?v=3").as_deref(),
            Some("trash can")
        );
        assert_eq!(file_stem("#icon-close").as_deref(), Some("close"));
        assert_eq!(file_stem("data:image/png;base64,xxx"), None);
        assert_eq!(
            icon_class("fa fa-solid fa-magnifying-glass").as_deref(),
            Some("magnifying glass")
        );
        assert_eq!(humanize("saveDraftButton"), "save draft button");
    }
}
