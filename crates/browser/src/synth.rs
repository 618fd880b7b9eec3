//! The DOM model: an accessibility tree computed from the DOM snapshot alone, the page model of
//! most observations (see [`dom_model_fits`]).
//!
//! `Accessibility.getFullAXTree` costs about 130 µs per element on these machines (≈ 500 ms for
//! a 5,000-node page, 12 ms of a 17 ms observation of a 300-element shop page, whatever `depth`
//! asks for), while the DOM snapshot already holds every fact the page model needs except roles,
//! names and ARIA states. So the capture usually skips the AX call and this module derives the
//! same shape of tree — Chromium's role names, the accessible-name rules of
//! HTML-AAM/accname in their common forms (`aria-labelledby`, `aria-label`, labels, `alt`,
//! content, `title`, `placeholder`), ARIA and native states — so [`crate::model::Walker`] runs
//! unchanged on either source.
//!
//! Refs issued from this model carry a DOM fingerprint (tag, `role`, `aria-label`, text) instead
//! of Chromium's role and name; before an action the live node's fingerprint must still match
//! (see `act::element`), so a node whose identity changed is refused as stale in both models.

use rustc_hash::{FxHashMap, FxHashSet};

use cdp::domains::accessibility::{AxNode, AxProperty, AxValue};
use cdp::domains::dom_snapshot::CaptureSnapshotReply;
use serde_json::Value;

use crate::dom::DocView;
use crate::model::{fold, join_text};

/// Pages with more elements than this (in the main document, as the isolated world counts them)
/// are modelled from the DOM snapshot even when they use ARIA relations: the AX tree costs about
/// 130 µs per element here (512 ms for 4,000), so at 1,000 it stays near 130 ms, under the
/// 150 ms the observation budget allows.
pub(crate) const DOM_MODEL_ABOVE_ELEMENTS: u64 = 1_000;

/// Whether the automatic choice takes the DOM model for a page: always, except a page of at
/// most [`DOM_MODEL_ABOVE_ELEMENTS`] elements that uses `aria-owns` (which re-parents nodes)
/// or `aria-activedescendant` (which moves focus inside a widget). Only Chromium's AX tree
/// computes those, and on such a small page it is affordable. Everywhere else the two models
/// agree (`dom_model_agrees_with_the_accessibility_tree` checks both on every fixture), and
/// the DOM model is 2–4× faster.
pub(crate) fn dom_model_fits(elements: u64, aria_relations: bool) -> bool {
    elements > DOM_MODEL_ABOVE_ELEMENTS || !aria_relations
}

const NODE_ELEMENT: i64 = 1;
const NODE_TEXT: i64 = 3;
const NODE_CDATA: i64 = 4;
const NODE_DOCUMENT: i64 = 9;
const NODE_FRAGMENT: i64 = 11;

/// Elements that are never content.
const SKIPPED: &[&str] = &[
    "script", "style", "head", "title", "meta", "link", "noscript", "template", "base", "datalist",
];

/// Roles whose accessible name comes from their content when no label is given.
const NAME_FROM_CONTENT: &[&str] = &[
    "button",
    "link",
    "heading",
    "option",
    "cell",
    "gridcell",
    "columnheader",
    "rowheader",
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "treeitem",
    "checkbox",
    "radio",
    "switch",
    "DisclosureTriangle",
    "tooltip",
    "Caption",
    "legend",
];

/// ARIA roles taken as written (Chromium uses the same names, except `img` → `image`).
const ARIA_ROLES: &[&str] = &[
    "alert",
    "alertdialog",
    "application",
    "article",
    "banner",
    "blockquote",
    "button",
    "caption",
    "cell",
    "checkbox",
    "code",
    "columnheader",
    "combobox",
    "complementary",
    "contentinfo",
    "definition",
    "deletion",
    "dialog",
    "directory",
    "document",
    "emphasis",
    "feed",
    "figure",
    "form",
    "generic",
    "grid",
    "gridcell",
    "group",
    "heading",
    "insertion",
    "link",
    "list",
    "listbox",
    "listitem",
    "log",
    "main",
    "mark",
    "marquee",
    "math",
    "menu",
    "menubar",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "meter",
    "navigation",
    "none",
    "note",
    "option",
    "paragraph",
    "presentation",
    "progressbar",
    "radio",
    "radiogroup",
    "region",
    "row",
    "rowgroup",
    "rowheader",
    "scrollbar",
    "search",
    "searchbox",
    "separator",
    "slider",
    "spinbutton",
    "status",
    "strong",
    "subscript",
    "superscript",
    "switch",
    "tab",
    "table",
    "tablist",
    "tabpanel",
    "term",
    "textbox",
    "time",
    "timer",
    "toolbar",
    "tooltip",
    "tree",
    "treegrid",
    "treeitem",
];

/// Builds the AX-shaped tree of snapshot document `doc_index`: node ids are snapshot indices.
/// What the isolated world read about the document that the snapshot does not hold.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PageFacts {
    /// The n-th `<dialog>` in document order is open as modal: everything outside it is inert,
    /// as `showModal()` makes it.
    pub(crate) modal_dialog: Option<usize>,
    /// The n-th element in document order (light DOM) has focus.
    pub(crate) focused: Option<usize>,
}

pub(crate) fn synthesize(
    reply: &CaptureSnapshotReply,
    doc_index: usize,
    facts: PageFacts,
) -> Vec<AxNode> {
    let Some(view) = DocView::new(reply, doc_index, (0.0, 0.0)) else {
        return Vec::new();
    };
    let count = view.node_count();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); count];
    let mut ids: FxHashMap<&str, usize> = FxHashMap::default();
    let mut labels_for: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
    for node in 0..count {
        if let Some(parent) = view.parent(node).filter(|p| *p < count) {
            children[parent].push(node);
        }
        if view.node_type(node) == NODE_ELEMENT {
            if let Some(id) = view.attr(node, "id") {
                ids.entry(id).or_insert(node);
            }
            if let Some(target) = view.attr(node, "for").filter(|_| view.tag(node) == "label") {
                labels_for.entry(target).or_default().push(node);
            }
        }
    }
    let modal = facts.modal_dialog.and_then(|n| {
        (0..count)
            .filter(|i| view.node_type(*i) == NODE_ELEMENT && view.tag(*i) == "dialog")
            .nth(n)
    });
    let focused = facts
        .focused
        .and_then(|n| elements_in_order(&view).get(n).copied());
    let mut modal_ancestors = FxHashSet::default();
    if let Some(dialog) = modal {
        let mut p = view.parent(dialog);
        while let Some(a) = p {
            modal_ancestors.insert(a);
            p = view.parent(a);
        }
    }
    let synth = Synth {
        view: &view,
        children: &children,
        ids,
        labels_for,
        modal,
        modal_ancestors,
        focused,
    };
    let mut out = Vec::with_capacity(count);
    if count > 0 {
        synth.emit(0, None, modal.is_none(), &mut out);
    }
    out
}

/// The snapshot nodes of a document's elements in document order, as the page's
/// `getElementsByTagName('*')` counts them (the indices the isolated world reports): not inside
/// shadow trees or frame documents, and not pseudo-elements (a list item's `::marker`).
pub(crate) fn elements_in_order(view: &DocView<'_>) -> Vec<usize> {
    let count = view.node_count();
    let mut outside = vec![true; count];
    let mut out = Vec::with_capacity(count / 2);
    for i in 0..count {
        let parent_outside = view.parent(i).is_none_or(|p| p < count && outside[p]);
        outside[i] = parent_outside
            && !(i > 0 && matches!(view.node_type(i), NODE_FRAGMENT | NODE_DOCUMENT));
        if outside[i] && view.node_type(i) == NODE_ELEMENT && !view.is_pseudo(i) {
            out.push(i);
        }
    }
    out
}

/// Marks elements of the top document (indices in document order, as the page counts them)
/// clickable in the snapshot, as if Chromium had found a listener on them, and `passing` ones
/// not: what the page's hover rules and delegated handlers say (see `world.js`,
/// `delegated.js`), which the snapshot cannot see. Both page models read clickability from here.
pub(crate) fn mark_clickable(
    reply: &mut CaptureSnapshotReply,
    elements: &[usize],
    passing: &[usize],
) {
    if elements.is_empty() && passing.is_empty() {
        return;
    }
    let (add, remove): (Vec<usize>, std::collections::HashSet<usize>) = {
        let Some(view) = DocView::new(reply, 0, (0.0, 0.0)) else {
            return;
        };
        let order = elements_in_order(&view);
        let node = |e: &usize| order.get(*e).copied();
        (
            elements.iter().filter_map(node).collect(),
            passing.iter().filter_map(node).collect(),
        )
    };
    let Some(doc) = reply.documents.first_mut() else {
        return;
    };
    let clickable = &mut doc.nodes.is_clickable.index;
    clickable.extend(add);
    clickable.retain(|n| !remove.contains(n));
    clickable.sort_unstable();
    clickable.dedup();
}

struct Synth<'v, 'a> {
    view: &'v DocView<'a>,
    children: &'v [Vec<usize>],
    ids: FxHashMap<&'a str, usize>,
    labels_for: FxHashMap<&'a str, Vec<usize>>,
    /// The modal dialog, and its ancestors (the only nodes outside it that are not inert).
    modal: Option<usize>,
    modal_ancestors: FxHashSet<usize>,
    focused: Option<usize>,
}

fn text_value(kind: &'static str, value: impl Into<Value>) -> AxValue {
    AxValue {
        value_type: kind.into(),
        value: Some(value.into()),
    }
}

fn property(name: &'static str, kind: &'static str, value: impl Into<Value>) -> AxProperty {
    AxProperty {
        name: name.into(),
        value: text_value(kind, value),
    }
}

impl Synth<'_, '_> {
    /// Emits `node` (and what it contains) if it is content; returns whether it was emitted.
    /// `live` is false outside an open modal dialog (inert content).
    fn emit(&self, node: usize, parent: Option<usize>, live: bool, out: &mut Vec<AxNode>) -> bool {
        let view = self.view;
        let kind = view.node_type(node);
        let live = live || self.modal == Some(node);
        if !live && !self.modal_ancestors.contains(&node) {
            return false;
        }
        let mut ax = AxNode {
            node_id: node.to_string(),
            parent_id: parent.map(|p| p.to_string()),
            backend_dom_node_id: view.backend(node),
            ..Default::default()
        };
        match kind {
            NODE_TEXT | NODE_CDATA => {
                let text = view.node_value(node);
                if text.trim().is_empty()
                    || !view.has_layout(node)
                    || !view.visibility_visible(node)
                {
                    return false;
                }
                ax.role = Some(text_value("role", "StaticText"));
                ax.name = Some(text_value("computedString", text));
                out.push(ax);
                return true;
            }
            NODE_DOCUMENT => {
                ax.role = Some(text_value(
                    "role",
                    if parent.is_none() {
                        "RootWebArea"
                    } else {
                        "WebArea"
                    },
                ));
                return self.emit_with_children(node, ax, live, out);
            }
            NODE_FRAGMENT => {
                ax.ignored = true;
                return self.emit_with_children(node, ax, live, out);
            }
            NODE_ELEMENT => {}
            _ => return false,
        }
        let tag = view.tag(node);
        if SKIPPED.contains(&tag)
            || view.is_pseudo(node)
            || view
                .attr(node, "aria-hidden")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            || view.attr(node, "inert").is_some()
            || (tag == "input"
                && view
                    .attr(node, "type")
                    .is_some_and(|t| t.eq_ignore_ascii_case("hidden")))
        {
            return false;
        }
        // No box (`display: none`, or `display: contents`) or `visibility: hidden`: not itself
        // content, though a `display: contents` element's children may be.
        if !view.has_layout(node) || !view.visibility_visible(node) {
            if tag == "iframe" || tag == "frame" {
                return false;
            }
            ax.ignored = true;
            return self.emit_with_children(node, ax, live, out);
        }
        let role = self.role(node, tag);
        let name = self.name(node, tag, &role);
        ax.properties = self.properties(node, tag, &role);
        if self.modal == Some(node) {
            ax.properties.push(property("modal", "boolean", true));
        }
        if self.focused == Some(node) {
            ax.properties
                .push(property("focused", "booleanOrUndefined", true));
        }
        if tag == "textarea" {
            ax.value = view.text_value(node).map(|v| text_value("string", v));
        }
        if role == "combobox" && tag == "select" {
            ax.value = self
                .selected_option_text(node)
                .map(|t| text_value("string", t));
            ax.properties
                .push(property("expanded", "booleanOrUndefined", false));
            ax.properties.push(property("hasPopup", "token", "menu"));
        }
        ax.role = Some(text_value("role", role.as_str()));
        if !name.is_empty() {
            ax.name = Some(text_value("computedString", name));
        }
        if role == "Iframe" {
            // The walker takes the content from the snapshot's content document (or the
            // out-of-process capture), not from AX children.
            out.push(ax);
            return true;
        }
        if tag == "select" && role == "combobox" {
            // A collapsed drop-down shows its value; its options are not content until opened.
            out.push(ax);
            return true;
        }
        self.emit_with_children(node, ax, live, out)
    }

    fn emit_with_children(
        &self,
        node: usize,
        mut ax: AxNode,
        live: bool,
        out: &mut Vec<AxNode>,
    ) -> bool {
        let at = out.len();
        out.push(AxNode::default());
        let mut kept = Vec::new();
        for child in &self.children[node] {
            if self.emit(*child, Some(node), live, out) {
                kept.push(child.to_string());
            }
        }
        ax.child_ids = kept;
        out[at] = ax;
        true
    }

    fn role(&self, node: usize, tag: &str) -> String {
        let view = self.view;
        if let Some(explicit) = view
            .attr(node, "role")
            .and_then(|r| r.split_whitespace().next())
        {
            let explicit = explicit.to_ascii_lowercase();
            if explicit == "img" || explicit == "image" {
                return "image".into();
            }
            if ARIA_ROLES.contains(&explicit.as_str()) {
                let presentational = matches!(explicit.as_str(), "none" | "presentation");
                // A focusable element keeps its native role (the ARIA conflict rule).
                if !(presentational && self.natively_focusable(node, tag)) {
                    return explicit;
                }
            }
        }
        let attr = |name: &str| view.attr(node, name);
        let landmark_scoped = || {
            let mut p = view.parent(node);
            while let Some(a) = p {
                if matches!(
                    view.tag(a),
                    "article" | "aside" | "main" | "nav" | "section"
                ) {
                    return true;
                }
                p = view.parent(a);
            }
            false
        };
        let named = attr("aria-label").is_some_and(|v| !v.trim().is_empty())
            || attr("aria-labelledby").is_some();
        match tag {
            // Chromium makes an anchor a link when it has an href or a click listener.
            "a" | "area" if attr("href").is_some() || view.clickable(node) => "link",
            "article" => "article",
            "aside" => "complementary",
            "nav" => "navigation",
            "main" => "main",
            "search" => "search",
            "header" if !landmark_scoped() => "banner",
            "footer" if !landmark_scoped() => "contentinfo",
            "section" if named => "region",
            "section" => "Section",
            "form" => "form",
            "button" => "button",
            "details" => "group",
            "summary" => "DisclosureTriangle",
            "dialog" => "dialog",
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => "heading",
            "hr" => "separator",
            "img" if attr("alt").is_some_and(str::is_empty) && !named => "none",
            "img" | "svg" => "image",
            "input" => return input_role(attr("type"), attr("list").is_some()).into(),
            "label" => "LabelText",
            "li" => "listitem",
            "ul" | "ol" | "menu" => "list",
            "dl" => "DescriptionList",
            "dt" => "term",
            "dd" => "definition",
            "select" => {
                let size = attr("size")
                    .and_then(|s| s.trim().parse::<u32>().ok())
                    .unwrap_or(0);
                if attr("multiple").is_some() || size > 1 {
                    "listbox"
                } else {
                    "combobox"
                }
            }
            "option" => "option",
            "optgroup" | "fieldset" | "address" => "group",
            "textarea" => "textbox",
            "table" => "table",
            "tr" => "row",
            "td" => "cell",
            "th" if attr("scope").is_some_and(|s| s.eq_ignore_ascii_case("row")) => "rowheader",
            "th" => "columnheader",
            "thead" | "tbody" | "tfoot" => "rowgroup",
            "caption" => "Caption",
            "p" => "paragraph",
            "blockquote" => "blockquote",
            "progress" => "progressbar",
            "meter" => "meter",
            "output" => "status",
            "legend" => "legend",
            "figure" => "figure",
            "strong" => "strong",
            "em" => "emphasis",
            "mark" => "mark",
            "code" => "code",
            "time" => "time",
            "pre" => "Pre",
            "del" => "deletion",
            "ins" => "insertion",
            "sub" => "subscript",
            "sup" => "superscript",
            "br" => "LineBreak",
            "iframe" | "frame" => "Iframe",
            "math" => "math",
            _ => "generic",
        }
        .into()
    }

    fn natively_focusable(&self, node: usize, tag: &str) -> bool {
        matches!(tag, "button" | "input" | "select" | "textarea")
            || (tag == "a" && self.view.attr(node, "href").is_some())
            || self.view.attr(node, "tabindex").is_some()
    }

    fn name(&self, node: usize, tag: &str, role: &str) -> String {
        let view = self.view;
        if let Some(ids) = view.attr(node, "aria-labelledby") {
            let mut text = String::new();
            for id in ids.split_whitespace() {
                if let Some(target) = self.ids.get(id) {
                    let mut part = String::new();
                    self.content_text(*target, &mut part, 0);
                    join_text(&mut text, &fold(&part));
                }
            }
            let text = fold(&text);
            if !text.is_empty() {
                return text;
            }
        }
        if let Some(label) = view
            .attr(node, "aria-label")
            .map(fold)
            .filter(|l| !l.is_empty())
        {
            return label;
        }
        let attr_name = |name: &str| view.attr(node, name).map(fold).filter(|v| !v.is_empty());
        let input_type = view
            .attr(node, "type")
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        match tag {
            "input" if matches!(input_type.as_str(), "button" | "submit" | "reset") => {
                return attr_name("value").unwrap_or_else(|| match input_type.as_str() {
                    "submit" => "Submit".into(),
                    "reset" => "Reset".into(),
                    _ => String::new(),
                });
            }
            "input" if input_type == "image" => {
                return attr_name("alt")
                    .or_else(|| attr_name("title"))
                    .unwrap_or_default();
            }
            "input" | "textarea" | "select" => {
                let mut text = String::new();
                if let Some(labels) = view.attr(node, "id").and_then(|id| self.labels_for.get(id)) {
                    for label in labels {
                        self.content_text(*label, &mut text, 0);
                    }
                }
                let mut p = view.parent(node);
                while let Some(a) = p {
                    if view.node_type(a) == NODE_ELEMENT && view.tag(a) == "label" {
                        self.content_text(a, &mut text, 0);
                        break;
                    }
                    p = view.parent(a);
                }
                let text = fold(&text);
                if !text.is_empty() {
                    return text;
                }
                return attr_name("title")
                    .or_else(|| attr_name("placeholder"))
                    .unwrap_or_default();
            }
            "img" => {
                return attr_name("alt")
                    .or_else(|| attr_name("title"))
                    .unwrap_or_default();
            }
            // An SVG's `<title>` child names it.
            "svg" => {
                if let Some(title) = self.children[node]
                    .iter()
                    .find(|c| view.node_type(**c) == NODE_ELEMENT && view.tag(**c) == "title")
                {
                    let text = self.raw_text(*title);
                    if !text.is_empty() {
                        return text;
                    }
                }
            }
            "option" => return attr_name("label").unwrap_or_else(|| self.raw_text(node)),
            "fieldset" | "table" | "figure" => {
                let caption = match tag {
                    "fieldset" => "legend",
                    "table" => "caption",
                    _ => "figcaption",
                };
                if let Some(c) = self.children[node]
                    .iter()
                    .find(|c| view.node_type(**c) == NODE_ELEMENT && view.tag(**c) == caption)
                {
                    let mut text = String::new();
                    self.content_text(*c, &mut text, 0);
                    let text = fold(&text);
                    if !text.is_empty() {
                        return text;
                    }
                }
            }
            _ => {}
        }
        if NAME_FROM_CONTENT.contains(&role) {
            let mut text = String::new();
            self.content_text(node, &mut text, 0);
            let text = fold(&text);
            if !text.is_empty() {
                return text;
            }
        }
        // ARIA prohibits naming a generic element; Chromium ignores its `title` (the walker
        // still infers a name from it, marked as inferred).
        if role == "generic" {
            return String::new();
        }
        attr_name("title").unwrap_or_default()
    }

    /// The rendered text inside `node`, as a name from content reads it: visible text nodes,
    /// image alternatives, labelled descendants by their label; form controls by their value.
    fn content_text(&self, node: usize, out: &mut String, depth: usize) {
        if depth > 64 {
            return;
        }
        let view = self.view;
        for child in &self.children[node] {
            let child = *child;
            match view.node_type(child) {
                NODE_TEXT | NODE_CDATA
                    if view.has_layout(child) && view.visibility_visible(child) =>
                {
                    join_text(out, view.node_value(child));
                }
                NODE_TEXT | NODE_CDATA => {}
                NODE_ELEMENT => {
                    let tag = view.tag(child);
                    if SKIPPED.contains(&tag)
                        || view.is_pseudo(child)
                        || view
                            .attr(child, "aria-hidden")
                            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
                    {
                        continue;
                    }
                    // A nested group of items (a tree item's children, a submenu) is not part of
                    // the item's own name.
                    if view.attr(child, "role").is_some_and(|r| {
                        matches!(r.trim(), "group" | "tree" | "treeitem" | "menu" | "listbox")
                    }) {
                        continue;
                    }
                    if let Some(label) = view
                        .attr(child, "aria-label")
                        .map(fold)
                        .filter(|l| !l.is_empty())
                    {
                        join_text(out, &label);
                        continue;
                    }
                    match tag {
                        "img" => {
                            if let Some(alt) =
                                view.attr(child, "alt").map(fold).filter(|a| !a.is_empty())
                            {
                                join_text(out, &alt);
                            }
                        }
                        "input" | "textarea" | "select" => {
                            // A control inside a label: its own value is not the label's text.
                        }
                        "br" => out.push(' '),
                        _ => self.content_text(child, out, depth + 1),
                    }
                }
                NODE_FRAGMENT => self.content_text(child, out, depth + 1),
                _ => {}
            }
        }
    }

    fn properties(&self, node: usize, tag: &str, role: &str) -> Vec<AxProperty> {
        let view = self.view;
        let attr = |name: &str| view.attr(node, name);
        let aria_true =
            |name: &str| attr(name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let form_control = matches!(
            tag,
            "button" | "input" | "select" | "textarea" | "option" | "fieldset" | "optgroup"
        );
        let mut props = Vec::new();
        if (form_control && attr("disabled").is_some())
            || aria_true("aria-disabled")
            || self.in_disabled_fieldset(node, tag)
        {
            props.push(property("disabled", "boolean", true));
        }
        let input_type = attr("type")
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        if tag == "input" && matches!(input_type.as_str(), "checkbox" | "radio") {
            props.push(property(
                "checked",
                "tristate",
                if view.input_checked(node) {
                    "true"
                } else {
                    "false"
                },
            ));
        } else if let Some(checked) = attr("aria-checked").map(str::trim).filter(|_| {
            matches!(
                role,
                "checkbox"
                    | "radio"
                    | "switch"
                    | "menuitemcheckbox"
                    | "menuitemradio"
                    | "option"
                    | "treeitem"
            )
        }) {
            props.push(property(
                "checked",
                "tristate",
                checked.to_ascii_lowercase(),
            ));
        }
        if let Some(pressed) = attr("aria-pressed")
            .map(str::trim)
            .filter(|p| !p.eq_ignore_ascii_case("undefined"))
        {
            props.push(property(
                "pressed",
                "tristate",
                pressed.to_ascii_lowercase(),
            ));
        }
        if let Some(expanded) = attr("aria-expanded")
            .map(str::trim)
            .filter(|e| matches!(e.to_ascii_lowercase().as_str(), "true" | "false"))
        {
            props.push(property(
                "expanded",
                "booleanOrUndefined",
                expanded.eq_ignore_ascii_case("true"),
            ));
        } else if tag == "summary" {
            let open = view
                .parent(node)
                .is_some_and(|d| view.tag(d) == "details" && view.attr(d, "open").is_some());
            props.push(property("expanded", "booleanOrUndefined", open));
        }
        if (tag == "option" && view.option_selected(node)) || aria_true("aria-selected") {
            props.push(property("selected", "booleanOrUndefined", true));
        }
        if (form_control && attr("required").is_some()) || aria_true("aria-required") {
            props.push(property("required", "boolean", true));
        }
        if let Some(invalid) = attr("aria-invalid")
            .map(str::trim)
            .filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case("false"))
        {
            props.push(property("invalid", "token", invalid.to_ascii_lowercase()));
        }
        if (matches!(tag, "input" | "textarea") && attr("readonly").is_some())
            || aria_true("aria-readonly")
        {
            props.push(property("readonly", "boolean", true));
        }
        if (tag == "select" && attr("multiple").is_some()) || aria_true("aria-multiselectable") {
            props.push(property("multiselectable", "boolean", true));
        }
        if aria_true("aria-modal") {
            props.push(property("modal", "boolean", true));
        }
        let level = match tag {
            "h1" => Some(1),
            "h2" => Some(2),
            "h3" => Some(3),
            "h4" => Some(4),
            "h5" => Some(5),
            "h6" => Some(6),
            _ => None,
        };
        if let Some(level) = attr("aria-level")
            .and_then(|l| l.trim().parse::<i64>().ok())
            .or(level)
            .filter(|_| role == "heading")
        {
            props.push(property("level", "integer", level));
        }
        if let Some(popup) = attr("aria-haspopup")
            .map(|p| p.trim().to_ascii_lowercase())
            .filter(|p| !p.is_empty() && p != "false")
        {
            // Only ARIA's tokens, as Chromium does: the attribute is page text and must not
            // reach the snapshot as anything else.
            match popup.as_str() {
                "true" | "menu" => props.push(property("hasPopup", "token", "menu")),
                "listbox" | "tree" | "grid" | "dialog" => {
                    props.push(property("hasPopup", "token", popup))
                }
                _ => {}
            }
        } else if role == "combobox" && tag != "select" && attr("aria-haspopup").is_none() {
            // ARIA 1.2: a combobox pops up a listbox unless it says otherwise.
            props.push(property("hasPopup", "token", "listbox"));
        }
        let content_editable = attr("contenteditable").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "" | "true" | "plaintext-only"
            )
        });
        if content_editable {
            props.push(property("editable", "token", "richtext"));
        } else if role == "textbox" || role == "searchbox" {
            props.push(property("editable", "token", "plaintext"));
        }
        if self.natively_focusable(node, tag) || content_editable {
            props.push(property("focusable", "booleanOrUndefined", true));
        }
        props
    }

    fn in_disabled_fieldset(&self, node: usize, tag: &str) -> bool {
        if !matches!(tag, "button" | "input" | "select" | "textarea") {
            return false;
        }
        let view = self.view;
        let mut p = view.parent(node);
        while let Some(a) = p {
            if view.node_type(a) == NODE_ELEMENT
                && view.tag(a) == "fieldset"
                && view.attr(a, "disabled").is_some()
            {
                return true;
            }
            p = view.parent(a);
        }
        false
    }

    /// All text inside `node` as written, boxes or not (options have no boxes of their own).
    fn raw_text(&self, node: usize) -> String {
        let mut text = String::new();
        for d in self.view.descendants(node) {
            if matches!(self.view.node_type(d), NODE_TEXT | NODE_CDATA) {
                join_text(&mut text, self.view.node_value(d));
            }
        }
        fold(&text)
    }

    fn selected_option_text(&self, select: usize) -> Option<String> {
        let view = self.view;
        let mut options = Vec::new();
        self.collect_options(select, &mut options);
        let chosen = options
            .iter()
            .find(|o| view.option_selected(**o))
            .or(options.first())?;
        // A collapsed drop-down's options have no boxes: read their text as written.
        view.attr(*chosen, "label")
            .map(fold)
            .filter(|l| !l.is_empty())
            .or(Some(self.raw_text(*chosen)))
    }

    fn collect_options(&self, node: usize, out: &mut Vec<usize>) {
        for child in &self.children[node] {
            match self.view.tag(*child) {
                "option" => out.push(*child),
                "optgroup" => self.collect_options(*child, out),
                _ => {}
            }
        }
    }
}

fn input_role(input_type: Option<&str>, has_list: bool) -> &'static str {
    let t = input_type
        .map(|t| t.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match t.as_str() {
        "button" | "submit" | "reset" | "image" | "file" => "button",
        "checkbox" => "checkbox",
        "radio" => "radio",
        "range" => "slider",
        "number" => "spinbutton",
        "color" => "ColorWell",
        "date" => "Date",
        "datetime-local" => "DateTime",
        "time" => "InputTime",
        "month" | "week" => "Date",
        "search" if has_list => "combobox",
        "search" => "searchbox",
        _ if has_list => "combobox",
        _ => "textbox",
    }
}

/// What a DOM-model ref's node must still look like before an action: tag, `role`,
/// `aria-label` and its own text (light DOM only, as `textContent` reads it), at most 200
/// UTF-16 units — the same string `act::element`'s check computes in the page.
pub(crate) fn fingerprint(view: &DocView<'_>, node: usize) -> String {
    let mut text = String::new();
    for d in view.descendants(node) {
        if !matches!(view.node_type(d), NODE_TEXT | NODE_CDATA) {
            continue;
        }
        // `textContent` does not enter shadow roots or frame documents.
        let mut p = view.parent(d);
        let mut inside = false;
        while let Some(a) = p {
            if a == node {
                break;
            }
            if matches!(view.node_type(a), NODE_FRAGMENT | NODE_DOCUMENT) {
                inside = true;
                break;
            }
            p = view.parent(a);
        }
        if !inside {
            text.push_str(view.node_value(d));
        }
    }
    let folded = fold_like_js(&text);
    let mut units = 0;
    let clipped: String = folded
        .chars()
        .take_while(|c| {
            units += c.len_utf16();
            units <= 200
        })
        .collect();
    format!(
        "{}\u{1}{}\u{1}{}\u{1}{}",
        view.tag(node),
        view.attr(node, "role").unwrap_or_default(),
        view.attr(node, "aria-label").unwrap_or_default(),
        clipped
    )
}

/// The page-side half of [`fingerprint`]: run on the live element with `this` bound to it.
pub(crate) const FINGERPRINT_JS: &str = include_str!("js/fingerprint.js");

/// Folds ASCII whitespace runs (what the page-side check folds) and trims.
fn fold_like_js(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if matches!(c, '\t' | '\n' | '\u{c}' | '\r' | ' ') {
            space = true;
        } else {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_roles_follow_html_aam() {
        assert_eq!(input_role(None, false), "textbox");
        assert_eq!(input_role(Some("SUBMIT"), false), "button");
        assert_eq!(input_role(Some("email"), true), "combobox");
        assert_eq!(input_role(Some("range"), false), "slider");
        assert_eq!(input_role(Some("datetime-local"), false), "DateTime");
    }

    #[test]
    fn js_fold_matches_the_page_side() {
        assert_eq!(
            fold_like_js("  Buy \n\t 3\u{a0}items  "),
            "Buy 3\u{a0}items"
        );
        assert_eq!(fold_like_js(""), "");
    }
}
