//! A window's accessibility tree as an observation: the snapshot text every surface writes (one
//! line per node, `role "name" [ref states]: value`), refs for the controls a person could act
//! on, and per ref the facts policy judges an action by and the adapter finds the node again by.
//! Every name, value and title is the application's text: untrusted data.

use std::hash::{Hash, Hasher};

use protocol::{ElementRef, FrameId, InputRoute, InteractiveElement};
use surface::text::quote;
use surface::{FrameRecord, TargetFacts, TargetStructure};

use crate::a11y::{Node, ObjRef, state};
use crate::x11::{Rect, WindowFacts};

/// How a ref's node is reached again, beside its policy facts.
#[derive(Debug, Clone)]
pub struct Bound {
    pub facts: TargetFacts,
    /// The node (`None`: an X-only surface has no nodes).
    pub obj: Option<ObjRef>,
    /// The AT-SPI role name.
    pub atspi_role: String,
    /// The actions the node offers.
    pub actions: Vec<String>,
    pub editable: bool,
    pub checkable: bool,
    /// Box in screen pixels when observed.
    pub screen: Rect,
    /// The window's default control (AT-SPI `is-default`): what Enter activates.
    pub default: bool,
    /// On the screen's frame: the X window the ref is.
    pub window: Option<u32>,
    /// A list control whose options are chosen through AT-SPI Selection (`select`).
    pub selectable: bool,
    /// A range control (slider) set through AT-SPI Value (`type` a number).
    pub ranged: bool,
}

/// The latest observation of a window (see [`FrameRecord`]).
#[derive(Debug)]
pub struct DesktopFrame {
    pub frame_id: FrameId,
    /// The application's identity as an origin (`app://<class>`): what a person grants.
    pub app_origin: String,
    /// The window's client area in screen pixels when observed: a moved or resized window makes
    /// this frame stale.
    pub rect: Rect,
    pub canvas_share: f64,
    pub screenshot: bool,
    /// The whole screen's frame (its refs are windows, bottom to top): the point's topmost
    /// window is the one a point names.
    pub screen: bool,
    /// For the screen: the windows' stacking, boxes and focus when observed (any change makes
    /// the frame stale); 0 for a window.
    pub layout: u64,
    pub refs: Vec<(ElementRef, Bound)>,
}

impl FrameRecord for DesktopFrame {
    fn frame_id(&self) -> &FrameId {
        &self.frame_id
    }
    fn document_url(&self) -> &str {
        &self.app_origin
    }
    fn canvas_share(&self) -> f64 {
        self.canvas_share
    }
    fn has_screenshot(&self) -> bool {
        self.screenshot
    }
    fn target(&self, element: &ElementRef) -> Option<&TargetFacts> {
        self.refs
            .iter()
            .find(|(r, _)| r == element)
            .map(|(_, b)| &b.facts)
    }
    fn targets(&self) -> Box<dyn Iterator<Item = &TargetFacts> + '_> {
        Box::new(self.refs.iter().map(|(_, b)| &b.facts))
    }
    fn target_at(&self, x: f64, y: f64) -> Option<&TargetFacts> {
        let inside = |b: &&TargetFacts| {
            let [bx, by, bw, bh] = b.bounds;
            bw > 0.0 && bh > 0.0 && x >= bx && x < bx + bw && y >= by && y < by + bh
        };
        if self.screen {
            // Windows overlap: the point's is the topmost (the last listed).
            return self.targets().filter(inside).last();
        }
        self.targets()
            .filter(|b| !b.frame)
            .filter(inside)
            .min_by(|a, b| (a.bounds[2] * a.bounds[3]).total_cmp(&(b.bounds[2] * b.bounds[3])))
    }
    fn enter_activates(&self) -> Option<&TargetFacts> {
        self.refs
            .iter()
            .find(|(_, b)| b.default)
            .map(|(_, b)| &b.facts)
    }
}

impl DesktopFrame {
    pub fn bound(&self, element: &ElementRef) -> Option<&Bound> {
        self.refs.iter().find(|(r, _)| r == element).map(|(_, b)| b)
    }

    /// On the screen's frame, the topmost window at viewport point (x, y) as observed.
    pub fn bound_at(&self, x: f64, y: f64) -> Option<&Bound> {
        let facts = self.target_at(x, y)?;
        self.refs
            .iter()
            .map(|(_, b)| b)
            .find(|b| std::ptr::eq(&b.facts, facts))
    }
}

/// The role a model reads for an AT-SPI role name (ARIA's words where they exist).
pub fn role_of(atspi: &str) -> String {
    match atspi {
        "push button" | "button" => "button",
        "toggle button" => "button",
        "check box" | "check menu item" => "checkbox",
        "radio button" | "radio menu item" => "radio",
        "text" | "entry" | "password text" | "editbar" => "textbox",
        "combo box" => "combobox",
        "menu item" | "tearoff menu item" => "menuitem",
        "menu" => "menu",
        "menu bar" => "menubar",
        "link" => "link",
        "slider" => "slider",
        "spin button" => "spinbutton",
        "page tab" => "tab",
        "page tab list" => "tablist",
        "list" | "list box" => "list",
        "list item" => "listitem",
        "table" | "tree table" => "table",
        "table cell" => "cell",
        "tree" => "tree",
        "tree item" => "treeitem",
        "label" | "static" | "caption" => "text",
        "heading" => "heading",
        "dialog" | "file chooser" | "color chooser" | "font chooser" => "dialog",
        "alert" => "alertdialog",
        "frame" | "window" => "window",
        "drawing area" | "canvas" => "canvas",
        "image" | "icon" => "img",
        "scroll bar" => "scrollbar",
        "progress bar" => "progressbar",
        "tool bar" => "toolbar",
        "status bar" => "status",
        "separator" => "separator",
        "document frame" | "document web" => "document",
        other => return other.replace(' ', "_"),
    }
    .to_owned()
}

/// Roles that are controls even without an Action interface.
const CONTROL_ROLES: &[&str] = &[
    "push button",
    "button",
    "toggle button",
    "check box",
    "radio button",
    "text",
    "entry",
    "password text",
    "combo box",
    "menu item",
    "check menu item",
    "radio menu item",
    "link",
    "slider",
    "spin button",
    "page tab",
    "drawing area",
    "canvas",
];

/// Containers with no name of their own are structure only: their children take their place.
const WRAPPERS: &[&str] = &[
    "filler",
    "panel",
    "scroll pane",
    "viewport",
    "layered pane",
    "split pane",
    "section",
    "unknown",
    "redundant object",
    "glass pane",
    "root pane",
    "option pane",
];

fn is_control(n: &Node) -> bool {
    let enabled = n.states.has(state::SENSITIVE) || n.states.has(state::ENABLED);
    CONTROL_ROLES.contains(&n.role.as_str())
        || (enabled
            && !n.actions.is_empty()
            && (n.states.has(state::FOCUSABLE) || n.states.has(state::SELECTABLE))
            && !WRAPPERS.contains(&n.role.as_str()))
}

fn states_of(n: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let s = n.states;
    if s.has(state::FOCUSED) {
        out.push("focused");
    }
    let checkable = matches!(
        n.role.as_str(),
        "check box" | "radio button" | "check menu item" | "radio menu item"
    ) || s.has(state::CHECKABLE);
    if checkable {
        out.push(if s.has(state::INDETERMINATE) {
            "mixed"
        } else if s.has(state::CHECKED) {
            "checked"
        } else {
            "unchecked"
        });
    } else if n.role == "toggle button" {
        out.push(if s.has(state::PRESSED) || s.has(state::CHECKED) {
            "pressed"
        } else {
            "not_pressed"
        });
    }
    if s.has(state::EXPANDABLE) {
        out.push(if s.has(state::EXPANDED) {
            "expanded"
        } else {
            "collapsed"
        });
    }
    if s.has(state::SELECTED) && s.has(state::SELECTABLE) {
        out.push("selected");
    }
    if !(s.has(state::SENSITIVE) || s.has(state::ENABLED)) {
        out.push("disabled");
    }
    if s.has(state::READ_ONLY)
        || (n.has_interface("org.a11y.atspi.Text") && is_field(n) && !s.has(state::EDITABLE))
    {
        out.push("readonly");
    }
    if s.has(state::REQUIRED) {
        out.push("required");
    }
    if s.has(state::IS_DEFAULT) {
        out.push("default");
    }
    if s.has(state::MODAL) {
        out.push("modal");
    }
    out.into_iter().map(str::to_owned).collect()
}

fn is_field(n: &Node) -> bool {
    matches!(
        n.role.as_str(),
        "text" | "entry" | "password text" | "editbar" | "spin button"
    )
}

/// What an observation of a window says, before the runtime's bounds.
#[derive(Default)]
pub struct Built {
    pub snapshot: String,
    pub elements: Vec<InteractiveElement>,
    pub refs: Vec<(ElementRef, Bound)>,
    /// The share of the window that drawing areas cover (content only an image shows).
    pub canvas_share: f64,
    /// Screen boxes an image must not show: secret fields, and text that held a secret.
    pub masks: Vec<Rect>,
}

/// Builds the snapshot and refs of the tree `nodes` (index 0 is the window's top-level node)
/// for a window at `window` (screen pixels); `secrets`: values to take out of every text.
pub fn build(nodes: &[Node], window: Rect, app_origin: &str, secrets: &[String]) -> Built {
    let mut out = Built::default();
    let mut canvas_area = 0f64;
    if !nodes.is_empty() {
        walk(
            nodes,
            0,
            0,
            "",
            window,
            app_origin,
            secrets,
            &mut out,
            &mut canvas_area,
        );
    }
    let area = f64::from(window.width) * f64::from(window.height);
    out.canvas_share = if area > 0.0 {
        (canvas_area / area).min(1.0)
    } else {
        0.0
    };
    out
}

/// What `near` made of a window's snapshot ([`focus_near`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Near {
    /// The whole snapshot fits: nothing was left out.
    Fits,
    /// No line shows the text or ref.
    NotFound,
    /// The lines around the one that shows it were kept (the note says what was left out).
    Kept,
}

/// `near` on a window (`ObserveOptions::near`, as on a page): when the snapshot is bigger than
/// `budget` characters or lists more than `max_elements` targets, the lines nearest the first line that shows `near` — a text, ignoring
/// case, or a ref (`e12`) — are kept, as many as fit, with a first line that says what was left
/// out; the interactive elements are those of the kept lines. Every ref stays bound to the
/// frame, so a target found this way is acted on by its ref.
pub fn focus_near(built: &mut Built, near: &str, budget: usize, max_elements: usize) -> Near {
    if built.snapshot.chars().count() <= budget && built.elements.len() <= max_elements {
        return Near::Fits;
    }
    let lines: Vec<&str> = built.snapshot.lines().collect();
    let needle = near.trim().to_lowercase();
    let is_ref = needle.len() > 1
        && needle.starts_with('e')
        && needle[1..].chars().all(|c| c.is_ascii_digit());
    let anchor = lines.iter().position(|l| {
        if is_ref {
            l.contains(&format!("[{needle}]")) || l.contains(&format!("[{needle} "))
        } else {
            !needle.is_empty() && l.to_lowercase().contains(&needle)
        }
    });
    let Some(anchor) = anchor else {
        return Near::NotFound;
    };
    // Room for the note; and no more targets than an observation lists.
    let room = budget.saturating_sub(400);
    let cost = |i: usize| lines[i].chars().count() + 1;
    let targets = |i: usize| lines[i].matches("[e").count();
    let (mut first, mut last) = (anchor, anchor);
    let (mut used, mut listed) = (cost(anchor), targets(anchor));
    loop {
        let mut grew = false;
        if last + 1 < lines.len()
            && used + cost(last + 1) <= room
            && listed + targets(last + 1) <= max_elements
        {
            last += 1;
            used += cost(last);
            listed += targets(last);
            grew = true;
        }
        if first > 0
            && used + cost(first - 1) <= room
            && listed + targets(first - 1) <= max_elements
        {
            first -= 1;
            used += cost(first);
            listed += targets(first);
            grew = true;
        }
        if !grew {
            break;
        }
    }
    let kept: Vec<&str> = lines[first..=last].to_vec();
    let refs: std::collections::HashSet<String> = kept
        .iter()
        .flat_map(|l| l.split('[').skip(1))
        .filter_map(|rest| rest.split([']', ' ']).next())
        .map(str::to_owned)
        .collect();
    let left = lines.len() - kept.len();
    let targets_left = built
        .elements
        .iter()
        .filter(|e| !refs.contains(e.element().as_str()))
        .count();
    built
        .elements
        .retain(|e| refs.contains(e.element().as_str()));
    let mut snapshot = format!(
        "- note: lines {}–{} of {} around {:?}; {left} lines ({targets_left} targets) far from it were left out to fit. Observe with another near to see them\n",
        first + 1,
        last + 1,
        lines.len(),
        protocol::text::truncate_chars(near, 80).0
    );
    for line in kept {
        snapshot.push_str(line);
        snapshot.push('\n');
    }
    built.snapshot = snapshot;
    Near::Kept
}

/// `text` with every secret value taken out.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_owned();
    for s in secrets {
        if !s.is_empty() && text.contains(s.as_str()) {
            text = text.replace(s.as_str(), "[secret]");
        }
    }
    text
}

#[allow(clippy::too_many_arguments)]
fn walk(
    nodes: &[Node],
    index: usize,
    depth: usize,
    parent_name: &str,
    window: Rect,
    app_origin: &str,
    secrets: &[String],
    out: &mut Built,
    canvas_area: &mut f64,
) {
    let n = &nodes[index];
    let showing = n.states.has(state::SHOWING) || index == 0;
    if !showing {
        return;
    }
    let printable = protocol::text::printable(&n.name);
    let name = scrub(&printable, secrets);
    let showed_secret = name != printable
        || n.role == "password text"
        || n.value.as_deref().is_some_and(|v| {
            secrets
                .iter()
                .any(|s| !s.is_empty() && v.contains(s.as_str()))
        });
    if showed_secret && let Some(e) = n.extents {
        out.masks.push(e);
    }
    let control = is_control(n);
    let wrapper =
        !control && name.is_empty() && (WRAPPERS.contains(&n.role.as_str()) || n.role == "label");
    if index == 0 {
        // The window itself is the observation's title; its children are the outline.
        for c in &n.children {
            walk(
                nodes,
                *c,
                depth,
                &name,
                window,
                app_origin,
                secrets,
                out,
                canvas_area,
            );
        }
        return;
    }
    if wrapper {
        for c in &n.children {
            walk(
                nodes,
                *c,
                depth,
                parent_name,
                window,
                app_origin,
                secrets,
                out,
                canvas_area,
            );
        }
        return;
    }
    let role = role_of(&n.role);
    if role == "text" && !control {
        // A label: its text (its name when it has none), unless it only repeats the control it
        // names.
        let shown = n
            .value
            .as_deref()
            .map(|v| scrub(&protocol::text::printable(v), secrets))
            .filter(|v| !v.is_empty());
        let name = shown.unwrap_or(name);
        if !name.is_empty() && name != parent_name {
            out.snapshot.push_str(&" ".repeat(depth));
            out.snapshot.push_str(&quote(&name));
            out.snapshot.push('\n');
        }
        return;
    }
    if matches!(n.role.as_str(), "drawing area" | "canvas")
        && let Some(e) = n.extents.and_then(|e| e.intersect(&window))
    {
        *canvas_area += f64::from(e.width) * f64::from(e.height);
    }
    let mut line = format!("{}{}", " ".repeat(depth), role);
    if !name.is_empty() {
        line.push(' ');
        line.push_str(&quote(&name));
    }
    let states = states_of(n);
    let secret = n.role == "password text";
    let value = if secret {
        n.value.as_ref().map(|_| "[secret]".to_owned())
    } else {
        n.value
            .as_ref()
            .map(|v| scrub(&protocol::text::printable(v), secrets))
    };
    let mut bracket: Vec<String> = Vec::new();
    if control {
        let element = ElementRef::from_index(out.refs.len() as u32 + 1);
        bracket.push(element.as_str().to_owned());
        let screen = n.extents.unwrap_or_default();
        let bounds = [
            f64::from(screen.x - window.x),
            f64::from(screen.y - window.y),
            f64::from(screen.width),
            f64::from(screen.height),
        ];
        out.elements.push(
            InteractiveElement::new(
                element.clone(),
                role.clone(),
                name.clone(),
                false,
                states.clone(),
                value.clone(),
            )
            .shown_in_snapshot(true),
        );
        out.refs.push((
            element,
            Bound {
                facts: TargetFacts {
                    role: role.clone(),
                    name: name.clone(),
                    bounds,
                    secret_field: secret,
                    frame: false,
                    structure: TargetStructure {
                        document_origin: app_origin.to_owned(),
                        ..TargetStructure::default()
                    },
                },
                obj: Some(n.obj.clone()),
                atspi_role: n.role.clone(),
                actions: n.actions.clone(),
                editable: n.states.has(state::EDITABLE)
                    && n.has_interface("org.a11y.atspi.EditableText"),
                checkable: states.iter().any(|s| s == "checked" || s == "unchecked"),
                screen,
                default: n.states.has(state::IS_DEFAULT),
                window: None,
                selectable: n.has_interface("org.a11y.atspi.Selection"),
                ranged: n.has_interface("org.a11y.atspi.Value")
                    && !n.has_interface("org.a11y.atspi.EditableText"),
            },
        ));
    }
    bracket.extend(
        states
            .iter()
            .filter(|s| surface::is_state_token(s))
            .cloned(),
    );
    if !bracket.is_empty() {
        line.push_str(&format!(" [{}]", bracket.join(" ")));
    }
    if let Some(v) = &value
        && !v.is_empty()
    {
        line.push_str(": ");
        line.push_str(&quote(v));
    }
    out.snapshot.push_str(&line);
    out.snapshot.push('\n');
    // A field's children repeat its text; a control's label child repeats its name.
    if value.is_none() {
        for c in &n.children {
            walk(
                nodes,
                *c,
                depth + 1,
                &name,
                window,
                app_origin,
                secrets,
                out,
                canvas_area,
            );
        }
    }
}

/// The identity of the whole screen as an origin: what a person grants for input that no
/// window's application receives (keys while no window has focus).
pub const DESKTOP_ORIGIN: &str = "app://desktop";

/// The whole screen as an outline: each mapped window (top first, as a person sees them) with a
/// ref, its application's identity and whether it has keyboard focus. `windows` are bottom to
/// top; a window's ref names its visible box (a point there reaches it).
pub fn build_screen(
    windows: &[WindowFacts],
    focused: Option<u32>,
    screen: Rect,
    secrets: &[String],
) -> Built {
    let mut out = Built::default();
    let mut lines = Vec::new();
    for w in windows.iter().filter(|w| w.viewable) {
        let Some(visible) = w.rect.intersect(&screen) else {
            continue;
        };
        let name = scrub(&protocol::text::printable(&w.name), secrets);
        let origin = app_origin(&w.class);
        let element = ElementRef::from_index(out.refs.len() as u32 + 1);
        let mut states = Vec::new();
        if focused == Some(w.window) {
            states.push("focused".to_owned());
        }
        let mut line = format!("window {}", quote(&name));
        let mut bracket = vec![element.as_str().to_owned()];
        bracket.extend(states.iter().cloned());
        line.push_str(&format!(" [{}]", bracket.join(" ")));
        line.push_str(&format!(
            ": {}",
            quote(&format!(
                "{origin} at {},{} {}x{}",
                visible.x, visible.y, visible.width, visible.height
            ))
        ));
        lines.push(line);
        out.elements.push(
            InteractiveElement::new(
                element.clone(),
                "window".to_owned(),
                name.clone(),
                false,
                states,
                None,
            )
            .shown_in_snapshot(true),
        );
        out.refs.push((
            element,
            Bound {
                facts: TargetFacts {
                    role: "window".to_owned(),
                    name,
                    bounds: [
                        f64::from(visible.x - screen.x),
                        f64::from(visible.y - screen.y),
                        f64::from(visible.width),
                        f64::from(visible.height),
                    ],
                    secret_field: false,
                    frame: false,
                    structure: TargetStructure {
                        document_origin: origin,
                        ..TargetStructure::default()
                    },
                },
                obj: None,
                atspi_role: String::new(),
                actions: Vec::new(),
                editable: false,
                checkable: false,
                screen: visible,
                default: false,
                window: Some(w.window),
                selectable: false,
                ranged: false,
            },
        ));
    }
    // A person reads the screen from the top.
    for line in lines.iter().rev() {
        out.snapshot.push_str(line);
        out.snapshot.push('\n');
    }
    out
}

/// What makes a screen frame stale: the windows' stacking, boxes and mapping, and focus.
pub fn screen_layout(windows: &[WindowFacts], focused: Option<u32>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for w in windows {
        (
            w.window,
            w.rect.x,
            w.rect.y,
            w.rect.width,
            w.rect.height,
            w.viewable,
        )
            .hash(&mut h);
    }
    focused.hash(&mut h);
    h.finish()
}

/// A frame id bound to the window's identity, its box, and what the observation saw.
pub fn frame_id(
    window: u32,
    pid: Option<u32>,
    rect: Rect,
    snapshot: &str,
    shot: bool,
) -> Result<FrameId, surface::SurfaceError> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    window.hash(&mut h);
    pid.hash(&mut h);
    (rect.x, rect.y, rect.width, rect.height).hash(&mut h);
    snapshot.hash(&mut h);
    shot.hash(&mut h);
    // A value the process chose at start: frame ids of an earlier process never match.
    crate::adapter::process_salt().hash(&mut h);
    FrameId::new(format!("frame_{:016x}", h.finish())).map_err(|e| {
        surface::SurfaceError::Internal {
            reason: format!("frame id: {e}"),
        }
    })
}

/// How input reaches a window, from what was measured: whether it is there, whether its
/// application exposes an accessibility tree for it, whether the display has XTest.
pub fn input_routes(reachable: bool, tree: bool, xtest: bool) -> Vec<InputRoute> {
    if !reachable {
        return vec![InputRoute::Unavailable];
    }
    let mut routes = Vec::new();
    if tree {
        routes.push(InputRoute::BackgroundAx);
    }
    if xtest {
        routes.push(InputRoute::ForegroundInput);
    }
    if routes.is_empty() {
        routes.push(InputRoute::ScreenshotOnly);
    }
    routes
}

/// The application's identity as an origin: `app://<class>` with the class folded to what an
/// origin's host allows.
pub fn app_origin(class: &str) -> String {
    let host: String = class
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let host = host.trim_matches(['-', '.']).to_owned();
    format!(
        "app://{}",
        if host.is_empty() {
            "unknown-app".into()
        } else {
            host
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_routes_are_what_was_measured() {
        use protocol::InputRoute::*;
        assert_eq!(
            input_routes(true, true, true),
            vec![BackgroundAx, ForegroundInput]
        );
        assert_eq!(input_routes(true, false, true), vec![ForegroundInput]);
        assert_eq!(input_routes(true, true, false), vec![BackgroundAx]);
        assert_eq!(input_routes(true, false, false), vec![ScreenshotOnly]);
        assert_eq!(input_routes(false, true, true), vec![Unavailable]);
    }

    #[test]
    fn an_app_class_becomes_an_origin_host() {
        assert_eq!(app_origin("gtk_app.py"), "app://gtk-app.py");
    }
}
