//! An index over one document of a DOMSnapshot: backend node id → node, layout, styles, attributes.

use rustc_hash::FxHashMap;

use cdp::domains::dom_snapshot::{CaptureSnapshotReply, DocumentSnapshot};

use crate::capture::{
    STYLE_BACKGROUND_IMAGE, STYLE_CONTENT, STYLE_CURSOR, STYLE_DISPLAY, STYLE_OPACITY,
    STYLE_VISIBILITY,
};

/// A rectangle in viewport CSS pixels of the tab's top-level viewport.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) w: f64,
    pub(crate) h: f64,
}

impl Rect {
    pub(crate) fn area(&self) -> f64 {
        self.w.max(0.0) * self.h.max(0.0)
    }

    /// Vertical distance from the viewport `[0, height)`; 0 when it overlaps.
    pub(crate) fn distance_to_viewport(&self, width: f64, height: f64) -> f64 {
        self.distance_to(&Rect {
            x: 0.0,
            y: 0.0,
            w: width,
            h: height,
        })
    }

    /// The gap between this box and `area` along y plus along x; 0 when they overlap.
    pub(crate) fn distance_to(&self, area: &Rect) -> f64 {
        let gap = |start: f64, len: f64, from: f64, to: f64| {
            if start + len < from {
                from - (start + len)
            } else if start > to {
                start - to
            } else {
                0.0
            }
        };
        gap(self.y, self.h, area.y, area.y + area.h) + gap(self.x, self.w, area.x, area.x + area.w)
    }
}

/// `layout_of` for a node without a layout object.
const NO_LAYOUT: u32 = u32::MAX;

pub(crate) struct DocView<'a> {
    reply: &'a CaptureSnapshotReply,
    doc: &'a DocumentSnapshot,
    by_backend: FxHashMap<i64, usize>,
    /// Per node: its layout index, or `NO_LAYOUT`. Dense: every walk asks it of every node.
    layout_of: Vec<u32>,
    /// Per node: the flags below.
    flags: Vec<u8>,
    /// Per node: an index into `tag_names` (`u32::MAX`: no name).
    tag_of: Vec<u32>,
    /// The lower-cased node names of this document (a few dozen distinct ones).
    tag_names: Vec<String>,
    input_value: FxHashMap<usize, i64>,
    text_value: FxHashMap<usize, i64>,
    content_doc: FxHashMap<usize, usize>,
    /// Pseudo-element type (`marker`, `before`, …) by node index, as a string index.
    pseudo: FxHashMap<usize, i64>,
    /// Added to document coordinates to get top-level viewport coordinates.
    origin: (f64, f64),
}

const CLICKABLE: u8 = 1;
const CHECKED: u8 = 2;
const SELECTED: u8 = 4;

impl<'a> DocView<'a> {
    /// `frame_origin` is where this document's (0,0) viewport corner sits in the top-level viewport.
    pub(crate) fn new(
        reply: &'a CaptureSnapshotReply,
        doc_index: usize,
        frame_origin: (f64, f64),
    ) -> Option<DocView<'a>> {
        let doc = reply.documents.get(doc_index)?;
        let nodes = &doc.nodes;
        let count = nodes.parent_index.len();
        let by_backend = nodes
            .backend_node_id
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, i))
            .collect();
        let mut layout_of = vec![NO_LAYOUT; count];
        for (l, n) in doc.layout.node_index.iter().enumerate() {
            if let (Some(slot), Ok(l)) = (layout_of.get_mut(*n), u32::try_from(l)) {
                // A node with several layout objects (an inline split by a block) keeps its last.
                *slot = l;
            }
        }
        let mut flags = vec![0u8; count];
        for (set, flag) in [
            (&nodes.is_clickable.index, CLICKABLE),
            (&nodes.input_checked.index, CHECKED),
            (&nodes.option_selected.index, SELECTED),
        ] {
            for n in set {
                if let Some(f) = flags.get_mut(*n) {
                    *f |= flag;
                }
            }
        }
        let mut tag_names: Vec<String> = Vec::new();
        let mut name_ids: FxHashMap<i64, u32> = FxHashMap::default();
        let tag_of = (0..count)
            .map(|n| {
                let Some(name) = nodes.node_name.get(n) else {
                    return u32::MAX;
                };
                *name_ids.entry(*name).or_insert_with(|| {
                    tag_names.push(reply.string(*name).to_ascii_lowercase());
                    u32::try_from(tag_names.len() - 1).unwrap_or(u32::MAX)
                })
            })
            .collect();
        let input_value = nodes
            .input_value
            .index
            .iter()
            .copied()
            .zip(nodes.input_value.value.iter().copied())
            .collect();
        let text_value = nodes
            .text_value
            .index
            .iter()
            .copied()
            .zip(nodes.text_value.value.iter().copied())
            .collect();
        let content_doc = nodes
            .content_document_index
            .index
            .iter()
            .copied()
            .zip(
                nodes
                    .content_document_index
                    .value
                    .iter()
                    .map(|v| *v as usize),
            )
            .collect();
        let pseudo = nodes
            .pseudo_type
            .index
            .iter()
            .copied()
            .zip(nodes.pseudo_type.value.iter().copied())
            .collect();
        let scroll = (
            doc.scroll_offset_x.unwrap_or(0.0),
            doc.scroll_offset_y.unwrap_or(0.0),
        );
        Some(DocView {
            reply,
            doc,
            by_backend,
            layout_of,
            flags,
            tag_of,
            tag_names,
            input_value,
            text_value,
            content_doc,
            pseudo,
            origin: (frame_origin.0 - scroll.0, frame_origin.1 - scroll.1),
        })
    }

    pub(crate) fn node(&self, backend: i64) -> Option<usize> {
        self.by_backend.get(&backend).copied()
    }

    fn layout(&self, node: usize) -> Option<usize> {
        self.layout_of
            .get(node)
            .filter(|l| **l != NO_LAYOUT)
            .map(|l| *l as usize)
    }

    fn flag(&self, node: usize, flag: u8) -> bool {
        self.flags.get(node).is_some_and(|f| f & flag != 0)
    }

    pub(crate) fn backend(&self, node: usize) -> Option<i64> {
        self.doc.nodes.backend_node_id.get(node).copied()
    }

    /// The DOM node type (1 element, 3 text, 9 document, 11 shadow root, …).
    pub(crate) fn node_type(&self, node: usize) -> i64 {
        self.doc.nodes.node_type.get(node).copied().unwrap_or(0)
    }

    /// The node has a layout object (it is rendered: not `display: none` or `contents`).
    pub(crate) fn has_layout(&self, node: usize) -> bool {
        self.layout(node).is_some()
    }

    /// Its computed `visibility` is `visible` (true when unknown).
    pub(crate) fn visibility_visible(&self, node: usize) -> bool {
        self.style(node, STYLE_VISIBILITY)
            .is_none_or(|v| v == "visible")
    }

    /// A pseudo-element (`::marker`, `::before`, …).
    pub(crate) fn is_pseudo(&self, node: usize) -> bool {
        self.pseudo.contains_key(&node)
    }

    /// A checkbox or radio input that is checked.
    pub(crate) fn input_checked(&self, node: usize) -> bool {
        self.flag(node, CHECKED)
    }

    /// An `<option>` that is selected.
    pub(crate) fn option_selected(&self, node: usize) -> bool {
        self.flag(node, SELECTED)
    }

    pub(crate) fn parent(&self, node: usize) -> Option<usize> {
        self.doc
            .nodes
            .parent_index
            .get(node)
            .and_then(|p| usize::try_from(*p).ok())
    }

    /// Its node name, lower-cased (`div`, `#text`, `svg`).
    pub(crate) fn tag(&self, node: usize) -> &str {
        self.tag_of
            .get(node)
            .and_then(|t| self.tag_names.get(usize::try_from(*t).ok()?))
            .map_or("", String::as_str)
    }

    pub(crate) fn attr(&self, node: usize, name: &str) -> Option<&'a str> {
        let attrs = self.doc.nodes.attributes.get(node)?;
        attrs
            .chunks(2)
            .find(|kv| kv.len() == 2 && self.reply.string(kv[0]).eq_ignore_ascii_case(name))
            .map(|kv| self.reply.string(kv[1]))
    }

    /// The names of its attributes, as written.
    pub(crate) fn attr_names(&self, node: usize) -> impl Iterator<Item = &'a str> {
        self.doc
            .nodes
            .attributes
            .get(node)
            .unwrap_or_default()
            .chunks(2)
            .filter(|kv| kv.len() == 2)
            .map(|kv| self.reply.string(kv[0]))
    }

    pub(crate) fn bounds(&self, node: usize) -> Option<Rect> {
        let layout = self.layout(node)?;
        let b = self.doc.layout.bounds.get(layout)?;
        if b.len() < 4 {
            return None;
        }
        Some(Rect {
            x: b[0] + self.origin.0,
            y: b[1] + self.origin.1,
            w: b[2],
            h: b[3],
        })
    }

    fn style(&self, node: usize, which: usize) -> Option<&'a str> {
        let layout = self.layout(node)?;
        let styles = self.doc.layout.styles.get(layout)?;
        styles.get(which).map(|i| self.reply.string(*i))
    }

    pub(crate) fn cursor_pointer(&self, node: usize) -> bool {
        self.style(node, STYLE_CURSOR) == Some("pointer")
    }

    /// The image CSS paints it with: `content: url(…)` (an empty `span` drawn as an icon), else
    /// its first `background-image` URL.
    pub(crate) fn css_image(&self, node: usize) -> Option<&'a str> {
        [STYLE_CONTENT, STYLE_BACKGROUND_IMAGE]
            .into_iter()
            .filter_map(|s| self.style(node, s))
            .find_map(|v| {
                let rest = &v[v.find("url(")? + 4..];
                let inner = &rest[..rest.find(')')?];
                let url = inner.trim().trim_matches(['"', '\'']);
                (!url.is_empty()).then_some(url)
            })
    }

    /// Its element siblings (the other element children of its parent).
    pub(crate) fn siblings(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        let parent = self.parent(node);
        parent
            .into_iter()
            .flat_map(move |p| self.descendants(p))
            .filter(move |c| *c != node && self.parent(*c) == parent && self.node_type(*c) == 1)
    }

    /// Its computed `cursor` says it can be picked up and moved (`move`, `grab`).
    pub(crate) fn cursor_grab(&self, node: usize) -> bool {
        matches!(
            self.style(node, STYLE_CURSOR),
            Some("move" | "grab" | "grabbing" | "-webkit-grab")
        )
    }

    /// An element whose box is block-level (its computed `display` is not an inline kind):
    /// text before, inside and after it are different lines of a page. Flex and grid items
    /// and absolutely positioned elements are blockified by CSS, so their computed value says so.
    pub(crate) fn is_block(&self, node: usize) -> bool {
        if self.node_type(node) != 1 {
            return false;
        }
        self.style(node, STYLE_DISPLAY).is_some_and(|d| {
            !(d.is_empty() || d.starts_with("inline") || d == "contents" || d.starts_with("ruby"))
        })
    }

    /// Its `class` tokens.
    pub(crate) fn classes(&self, node: usize) -> impl Iterator<Item = &'a str> {
        self.attr(node, "class")
            .unwrap_or_default()
            .split_ascii_whitespace()
    }

    /// Rendered and not made invisible by CSS (`visibility`, `opacity: 0`).
    pub(crate) fn visible(&self, node: usize) -> bool {
        let Some(bounds) = self.bounds(node) else {
            return false;
        };
        bounds.w > 0.0
            && bounds.h > 0.0
            && self
                .style(node, STYLE_VISIBILITY)
                .is_none_or(|v| v == "visible")
            && self
                .style(node, STYLE_OPACITY)
                .is_none_or(|o| o.parse::<f64>().map_or(true, |o| o > 0.0))
    }

    /// Rendered with `opacity: 0`: invisible with everything inside it.
    pub(crate) fn transparent(&self, node: usize) -> bool {
        self.style(node, STYLE_OPACITY)
            .and_then(|o| o.parse::<f64>().ok())
            .is_some_and(|o| o <= 0.0)
    }

    /// A `::marker` pseudo-element (a list bullet): decoration, not content.
    pub(crate) fn is_marker(&self, node: usize) -> bool {
        self.pseudo
            .get(&node)
            .is_some_and(|v| self.reply.string(*v) == "marker")
    }

    pub(crate) fn clickable(&self, node: usize) -> bool {
        self.flag(node, CLICKABLE)
    }

    /// The exact current value of an input or textarea, whitespace included.
    pub(crate) fn input_value(&self, node: usize) -> Option<&'a str> {
        self.input_value.get(&node).map(|i| self.reply.string(*i))
    }

    /// The exact current value of a `<textarea>`, whitespace and lines included.
    pub(crate) fn text_value(&self, node: usize) -> Option<&'a str> {
        self.text_value.get(&node).map(|i| self.reply.string(*i))
    }

    /// The snapshot document index an `<iframe>` node's content lives in (same process only).
    pub(crate) fn content_document(&self, node: usize) -> Option<usize> {
        self.content_doc.get(&node).copied()
    }

    pub(crate) fn node_count(&self) -> usize {
        self.doc.nodes.parent_index.len()
    }

    /// Descendants of `node` in document order (a linear scan: used only for nameless elements).
    pub(crate) fn descendants(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        (node + 1..self.node_count()).take_while(move |d| self.is_descendant(*d, node))
    }

    fn is_descendant(&self, mut candidate: usize, ancestor: usize) -> bool {
        while let Some(parent) = self.parent(candidate) {
            if parent == ancestor {
                return true;
            }
            if parent < ancestor {
                return false;
            }
            candidate = parent;
        }
        false
    }

    /// The text of a text node.
    pub(crate) fn node_value(&self, node: usize) -> &'a str {
        self.doc
            .nodes
            .node_value
            .get(node)
            .map_or("", |i| self.reply.string(*i))
    }

    pub(crate) fn url(&self) -> &'a str {
        self.reply.string(self.doc.document_url)
    }

    /// The URL relative links resolve against: the `<base href>` when the page set one (a
    /// page can point every relative link and form elsewhere with it), else the document's.
    pub(crate) fn base_url(&self) -> &'a str {
        match self.doc.base_url.map(|i| self.reply.string(i)) {
            Some(base) if base.contains("://") => base,
            _ => self.url(),
        }
    }

    /// The nearest `<form>` ancestor of `node` (its form owner in the common case).
    pub(crate) fn form_of(&self, node: usize) -> Option<usize> {
        let mut at = self.parent(node);
        while let Some(n) = at {
            if self.tag(n) == "form" {
                return Some(n);
            }
            at = self.parent(n);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense index answers as the maps it replaced: tags lower-cased (and "" for a node the
    /// snapshot names no name for), a node's last layout object, the rare-data flags.
    #[test]
    fn the_index_reads_the_snapshot_node_by_node() {
        let reply: CaptureSnapshotReply = serde_json::from_str(
            r##"{"documents":[{"documentURL":0,"title":1,"frameId":1,
                "nodes":{"parentIndex":[-1,0,1,1],"nodeType":[9,1,1,3],"nodeName":[2,3,4],
                  "backendNodeId":[10,11,12,13],"attributes":[[],[5,6],[],[]],
                  "isClickable":{"index":[2]},"inputChecked":{"index":[1,99]}},
                "layout":{"nodeIndex":[1,2,2],"styles":[[7,8,9,10,11,12],[],[]],
                  "bounds":[[0,0,10,10],[1,1,1,1],[5,6,7,8]],"text":[-1,-1,-1]}}],
              "strings":["http://a.test/","","#document","BUTTON","Svg:Path","Class","go",
                "block","visible","pointer","1","normal","none"]}"##,
        )
        .unwrap();
        let view = DocView::new(&reply, 0, (0.0, 0.0)).unwrap();
        assert_eq!(view.tag(0), "#document");
        assert_eq!(view.tag(1), "button");
        assert_eq!(view.tag(2), "svg:path");
        assert_eq!(view.tag(3), "", "no name in the snapshot");
        assert_eq!(view.tag(40), "");
        assert_eq!(view.node(12), Some(2));
        assert_eq!(view.attr(1, "class"), Some("go"));
        assert!(view.clickable(2) && !view.clickable(1) && !view.clickable(99));
        assert!(view.input_checked(1) && !view.option_selected(1));
        assert!(view.cursor_pointer(1) && view.is_block(1));
        assert!(!view.has_layout(0) && view.has_layout(2));
        let last = view.bounds(2).unwrap();
        assert_eq!((last.x, last.y, last.w, last.h), (5.0, 6.0, 7.0, 8.0));
        assert_eq!(view.bounds(3), None);
    }
}
