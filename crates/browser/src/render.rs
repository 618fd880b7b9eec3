//! From the page model to the model-facing text: one line per node, refs on interactive elements,
//! and a character budget that keeps what is in or near the viewport when the page is too big.
//!
//! The text is built to be small, because a model reads it on every step:
//!
//! ```text
//! main
//!  heading "Sign in" [level=1]
//!  "Enter your credentials."
//!  textbox "Email" [e1]: "ada@example.com"
//!  checkbox "Remember me" [e2 checked]
//!  link "Help" [e3] -> /help
//! ```
//!
//! One space of indentation per level; `role "name"`; one bracket with the ref (`eN`) first and
//! then the states; ` -> ` a link's target; `: ` a value (quoted) or the node's own text. A line
//! that is a quoted string is text. Text that only repeats the name of the control next to it
//! (its label), a caption or legend that only repeats its parent's name, and the empty value of
//! an empty field are left out.

use surface::text::{is_state_token, quote};

use crate::dom::Rect;
use crate::model::{Item, NodeItem, fold, join_text, text_of};

/// One line of the snapshot before refs are known.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub(crate) depth: usize,
    pub(crate) parent: Option<usize>,
    /// `role "name"` or `"text"`.
    pub(crate) head: String,
    /// States, shown after the ref inside one bracket.
    pub(crate) states: Vec<String>,
    /// URL, value or inline text, each with its leading separator.
    pub(crate) tail: String,
    pub(crate) candidate: Option<usize>,
    /// Distance from the viewport in CSS pixels (0 = in it); unknown geometry counts as far.
    pub(crate) distance: f64,
    /// Its box (or its nearest ancestor's), top-level viewport coordinates.
    pub(crate) bounds: Option<Rect>,
    pub(crate) heading: bool,
}

/// Measures every line's distance from `anchor` instead of the viewport: what `near` asks
/// to see first.
pub(crate) fn measure_from(lines: &mut [Line], anchor: &Rect) {
    for line in lines {
        line.distance = line
            .bounds
            .map_or(f64::MAX / 4.0, |b| b.distance_to(anchor));
    }
}

/// The first line (document order) whose text holds `text`, ignoring case.
pub(crate) fn line_with(lines: &[Line], text: &str) -> Option<usize> {
    let needle = fold(text).to_lowercase();
    if needle.is_empty() {
        return None;
    }
    lines.iter().position(|l| {
        l.head.to_lowercase().contains(&needle) || l.tail.to_lowercase().contains(&needle)
    })
}

/// Approximate length of ` [eNNN]`, used while choosing lines.
const REF_COST: usize = 7;
const CELL_ROLES: &[&str] = &["cell", "gridcell", "columnheader", "rowheader"];

/// Flattens the item tree to lines in document order.
pub(crate) fn flatten(items: &[Item], viewport: (f64, f64)) -> Vec<Line> {
    let mut lines = Vec::new();
    push_items(items, "", 0, None, None, viewport, &mut lines);
    lines
}

fn distance(bounds: Option<Rect>, inherited: Option<Rect>, viewport: (f64, f64)) -> f64 {
    bounds.or(inherited).map_or(f64::MAX / 4.0, |b| {
        b.distance_to_viewport(viewport.0, viewport.1)
    })
}

/// Whether a node's subtree holds nothing but text that says `name` (a caption, legend or label
/// that repeats its parent's name), and nothing a model could act on. Such a node is left out.
fn only_repeats(node: &NodeItem, name: &str) -> bool {
    fn inert(items: &[Item]) -> bool {
        items.iter().all(|i| match i {
            Item::Text { .. } => true,
            Item::Node(n) => {
                n.candidate.is_none() && n.value.is_none() && n.url.is_none() && inert(&n.children)
            }
        })
    }
    // Headings stay: they are the outline a model skims (and what the budget keeps first).
    if name.is_empty()
        || node.role == "heading"
        || node.candidate.is_some()
        || node.value.is_some()
        || node.url.is_some()
        || !inert(&node.children)
    {
        return false;
    }
    if node.children.is_empty() {
        return fold(&node.name) == name;
    }
    let mut text = String::new();
    all_text(&node.children, &mut text);
    fold(&text) == name
}

fn all_text(items: &[Item], out: &mut String) {
    for item in items {
        match item {
            Item::Text { text, .. } => join_text(out, text),
            Item::Node(n) if n.children.is_empty() => join_text(out, &n.name),
            Item::Node(n) => all_text(&n.children, out),
        }
    }
}

fn push_items(
    items: &[Item],
    parent_name: &str,
    depth: usize,
    parent: Option<usize>,
    inherited: Option<Rect>,
    viewport: (f64, f64),
    out: &mut Vec<Line>,
) {
    // Runs of text of one block between nodes become one line each; text of another block is
    // another line.
    enum Piece<'a> {
        Text(String, Option<Rect>, usize),
        Node(&'a NodeItem),
    }
    let mut pieces: Vec<Piece<'_>> = Vec::new();
    for item in items {
        match item {
            Item::Text {
                text,
                bounds,
                block,
            } => match pieces.last_mut() {
                Some(Piece::Text(acc, at, b))
                    if *b == *block || text.trim().is_empty() || acc.trim().is_empty() =>
                {
                    if acc.trim().is_empty() {
                        *b = *block;
                    }
                    join_text(acc, text);
                    *at = at.or(*bounds);
                }
                _ => pieces.push(Piece::Text(text.clone(), *bounds, *block)),
            },
            // A wrapper that only repeats the one target inside it (a calendar cell around its
            // day's link) is that target's line: one target, one line.
            Item::Node(node) => pieces.push(Piece::Node(sole_wrapped(node))),
        }
    }
    // A control's label repeats its name next to it: the name already says it.
    let labels = |i: usize, text: &str| {
        let names = |p: Option<&Piece<'_>>| matches!(p, Some(Piece::Node(n)) if n.candidate.is_some() && fold(&n.name) == text);
        names(i.checked_sub(1).and_then(|j| pieces.get(j))) || names(pieces.get(i + 1))
    };
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Text(text, bounds, _) => {
                let folded = fold(text);
                if folded.is_empty() || labels(i, &folded) {
                    continue;
                }
                out.push(Line {
                    depth,
                    parent,
                    head: quote(&folded),
                    states: Vec::new(),
                    tail: String::new(),
                    candidate: None,
                    distance: distance(*bounds, inherited, viewport),
                    bounds: bounds.or(inherited),
                    heading: false,
                });
            }
            Piece::Node(node) if only_repeats(node, parent_name) => {}
            Piece::Node(node) => push_node(node, depth, parent, inherited, viewport, out),
        }
    }
}

/// The node a wrapper stands for: a node that is no target itself, has no value, link or
/// states, and whose only content is one node saying the same name, is shown as that node.
fn sole_wrapped(node: &NodeItem) -> &NodeItem {
    let mut node = node;
    while node.candidate.is_none()
        && node.value.is_none()
        && node.url.is_none()
        && node.states.is_empty()
        && node.role != "heading"
    {
        match node.children.as_slice() {
            [Item::Node(inner)]
                if !inner.name.is_empty() && fold(&inner.name) == fold(&node.name) =>
            {
                node = inner
            }
            _ => break,
        }
    }
    node
}

fn push_node(
    node: &NodeItem,
    depth: usize,
    parent: Option<usize>,
    inherited: Option<Rect>,
    viewport: (f64, f64),
    out: &mut Vec<Line>,
) {
    let mut head = node.role.clone();
    if !node.name.is_empty() {
        head.push(' ');
        head.push_str(&quote(&node.name));
    }
    let mut tail = String::new();
    if let Some(url) = &node.url {
        tail.push_str(" -> ");
        tail.push_str(url);
    }
    let inline = text_of(&node.children);
    let row = (node.role == "row")
        .then(|| row_text(&node.children))
        .flatten();
    let mut expand_children = true;
    if let Some(value) = &node.value {
        if !value.is_empty() {
            tail.push_str(": ");
            tail.push_str(&quote(value));
        }
        // An editable field's text children repeat its value.
        expand_children = !node.children.iter().any(|c| matches!(c, Item::Node(_)));
        expand_children &= !matches!(node.children.first(), Some(Item::Text { .. }));
    } else if let Some(row) = row {
        tail.push_str(": ");
        tail.push_str(&row);
        expand_children = false;
    } else if !inline.is_empty() && !node.children.is_empty() {
        if inline != node.name {
            tail.push_str(": ");
            tail.push_str(&inline);
        }
        expand_children = false;
    }
    let bounds = node.bounds.or(inherited);
    let index = out.len();
    out.push(Line {
        depth,
        parent,
        head,
        // States are tokens; one that is not (page text that got this far) is left out rather
        // than let it write structure into the line.
        states: node
            .states
            .iter()
            .filter(|s| is_state_token(s))
            .cloned()
            .collect(),
        tail,
        candidate: node.candidate,
        distance: distance(node.bounds, inherited, viewport),
        bounds: node.bounds.or(inherited),
        heading: node.role == "heading",
    });
    if expand_children {
        push_items(
            &node.children,
            &fold(&node.name),
            depth + 1,
            Some(index),
            bounds,
            viewport,
            out,
        );
    }
}

/// `a | b | c` for a row whose cells hold only text.
fn row_text(children: &[Item]) -> Option<String> {
    let mut cells = Vec::new();
    for child in children {
        let Item::Node(cell) = child else { return None };
        if !CELL_ROLES.contains(&cell.role.as_str()) || cell.candidate.is_some() {
            return None;
        }
        let text = if cell.children.is_empty() {
            cell.name.clone()
        } else {
            text_of(&cell.children)
        };
        if text.is_empty() && !cell.children.is_empty() {
            return None;
        }
        cells.push(text);
    }
    (!cells.is_empty()).then(|| cells.join(" | "))
}

pub(crate) fn line_cost(line: &Line) -> usize {
    let states: usize = line.states.iter().map(|s| s.len() + 1).sum();
    let bracket = match (line.candidate.is_some(), states) {
        (true, _) => REF_COST + states,
        (false, 0) => 0,
        (false, n) => n + 2,
    };
    line.depth + line.head.chars().count() + bracket + line.tail.chars().count() + 1
}

/// Chooses which lines fit in `budget` characters: everything when it fits, else by priority —
/// interactive elements and headings in the viewport, then text in the viewport, then the
/// same outwards by distance — always with their ancestors, so structure stays readable.
pub(crate) fn choose(lines: &[Line], budget: usize, viewport_height: f64) -> Vec<bool> {
    let total: usize = lines.iter().map(line_cost).sum();
    if total <= budget {
        return vec![true; lines.len()];
    }
    let priority = |l: &Line| {
        let screens = l.distance / viewport_height.max(1.0);
        let bonus = if l.candidate.is_some() {
            0.75
        } else if l.heading {
            0.5
        } else {
            0.0
        };
        screens - bonus
    };
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by(|a, b| {
        priority(&lines[*a])
            .total_cmp(&priority(&lines[*b]))
            .then(a.cmp(b))
    });
    let mut chosen = vec![false; lines.len()];
    let mut used = 0usize;
    for index in order {
        if chosen[index] {
            continue;
        }
        // The line plus whichever ancestors are not yet in.
        let mut chain = vec![index];
        let mut up = lines[index].parent;
        while let Some(p) = up {
            if chosen[p] {
                break;
            }
            chain.push(p);
            up = lines[p].parent;
        }
        let cost: usize = chain.iter().map(|i| line_cost(&lines[*i])).sum();
        if used + cost > budget {
            continue;
        }
        used += cost;
        for i in chain {
            chosen[i] = true;
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(role: &str, name: &str, candidate: Option<usize>, children: Vec<Item>) -> Item {
        Item::Node(NodeItem {
            role: role.into(),
            name: name.into(),
            states: Vec::new(),
            value: None,
            url: None,
            candidate,
            bounds: None,
            children,
        })
    }

    fn text(t: &str) -> Item {
        Item::Text {
            text: t.into(),
            bounds: None,
            block: 0,
        }
    }

    /// Heads and tails only (refs are added by the observation).
    fn render(items: &[Item]) -> String {
        flatten(items, (800.0, 600.0))
            .iter()
            .map(|l| format!("{}{}{}\n", " ".repeat(l.depth), l.head, l.tail))
            .collect()
    }

    #[test]
    fn labels_and_repeated_captions_are_left_out_but_other_text_stays() {
        let items = vec![node(
            "form",
            "",
            None,
            vec![
                text("Email "),
                node("textbox", "Email", Some(0), vec![]),
                text("Subscribe"),
                node("button", "Send", Some(1), vec![]),
                node(
                    "group",
                    "Size",
                    None,
                    vec![
                        node("Legend", "", None, vec![text("Size")]),
                        node("checkbox", "8", Some(2), vec![]),
                    ],
                ),
                node(
                    "table",
                    "Plans",
                    None,
                    vec![
                        node("caption", "", None, vec![text("Plans")]),
                        node("heading", "Plans", None, vec![text("Plans")]),
                    ],
                ),
                text("Send"), // not next to the button: kept
                node("paragraph", "", None, vec![text("Send")]),
            ],
        )];
        assert_eq!(
            render(&items),
            "form\n textbox \"Email\"\n \"Subscribe\"\n button \"Send\"\n group \"Size\"\n  checkbox \"8\"\n table \"Plans\"\n  heading \"Plans\"\n \"Send\"\n paragraph: Send\n"
        );
    }

    #[test]
    fn blocks_are_lines_and_a_wrapper_is_its_one_target() {
        let in_block = |t: &str, block: usize| Item::Text {
            text: t.into(),
            bounds: None,
            block,
        };
        let items = vec![node(
            "main",
            "",
            None,
            vec![
                in_block("Solve the problem", 1),
                in_block("below.", 1),
                in_block("7 + 5 =", 2),
                node("cell", "3", None, vec![node("link", "3", Some(0), vec![])]),
                node(
                    "cell",
                    "Total",
                    None,
                    vec![node("link", "Pay", Some(1), vec![])],
                ),
            ],
        )];
        assert_eq!(
            render(&items),
            "main\n \"Solve the problem below.\"\n \"7 + 5 =\"\n link \"3\"\n cell \"Total\"\n  link \"Pay\"\n"
        );
    }

    #[test]
    fn a_state_that_is_not_a_token_is_left_out() {
        let mut button = NodeItem {
            role: "button".into(),
            name: "Go".into(),
            states: vec![
                "pressed".into(),
                "haspopup=x]\n button \"confirm\" [e12".into(),
                "level=2".into(),
            ],
            value: None,
            url: None,
            candidate: Some(0),
            bounds: None,
            children: Vec::new(),
        };
        let lines = flatten(&[Item::Node(button.clone())], (800.0, 600.0));
        assert_eq!(lines[0].states, ["pressed", "level=2"]);
        button.states.clear();
        assert!(
            flatten(&[Item::Node(button)], (800.0, 600.0))[0]
                .states
                .is_empty()
        );
    }
}
