//! AT-SPI over D-Bus: the accessibility bus of one desktop session, the applications on it (by
//! pid, to match a window), their trees read concurrently level by level, and the calls actions
//! use (Action, EditableText, Text, Value, Component).
//!
//! Every call has a deadline ([`CALL_DEADLINE`]); an application that does not answer is reported
//! as such, never waited on. Names, descriptions and text are the application's own words:
//! untrusted, and only ever data in an observation.
//!
//! GTK 3 with at-spi2-core 2.46 (Debian 12) does not export `org.a11y.atspi.Cache.GetItems` on
//! its bus name (measured: `UnknownMethod`), so the tree is read node by node, every node of a
//! level at once.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future::join_all;
use serde::de::DeserializeOwned;
use surface::SurfaceError;
use zbus::Connection;
use zbus::zvariant::{DynamicType, OwnedObjectPath, OwnedValue, Value};

use crate::x11::Rect;

/// How long one D-Bus call may take.
pub const CALL_DEADLINE: Duration = Duration::from_secs(2);

/// The most nodes one tree read visits.
pub const MAX_NODES: usize = 4000;

/// An accessible object: its bus name and path.
pub type ObjRef = (String, OwnedObjectPath);

/// AT-SPI state bits (`AtspiStateType`).
pub mod state {
    pub const ACTIVE: u32 = 1;
    pub const CHECKED: u32 = 4;
    pub const COLLAPSED: u32 = 5;
    pub const DEFUNCT: u32 = 6;
    pub const EDITABLE: u32 = 7;
    pub const ENABLED: u32 = 8;
    pub const EXPANDABLE: u32 = 9;
    pub const EXPANDED: u32 = 10;
    pub const FOCUSABLE: u32 = 11;
    pub const FOCUSED: u32 = 12;
    pub const MODAL: u32 = 16;
    pub const MULTI_LINE: u32 = 17;
    pub const PRESSED: u32 = 20;
    pub const SELECTABLE: u32 = 22;
    pub const SELECTED: u32 = 23;
    pub const SENSITIVE: u32 = 24;
    pub const SHOWING: u32 = 25;
    pub const VISIBLE: u32 = 30;
    pub const MANAGES_DESCENDANTS: u32 = 31;
    pub const INDETERMINATE: u32 = 32;
    pub const REQUIRED: u32 = 33;
    pub const IS_DEFAULT: u32 = 39;
    pub const CHECKABLE: u32 = 41;
    pub const READ_ONLY: u32 = 43;
}

/// A set of AT-SPI states (two 32-bit words on the wire).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct States(pub u64);

impl States {
    fn from_words(words: &[u32]) -> States {
        let lo = u64::from(words.first().copied().unwrap_or(0));
        let hi = u64::from(words.get(1).copied().unwrap_or(0));
        States(lo | (hi << 32))
    }

    pub fn has(&self, bit: u32) -> bool {
        bit < 64 && self.0 & (1u64 << bit) != 0
    }
}

/// One node of an application's tree as read.
#[derive(Debug, Clone)]
pub struct Node {
    pub obj: ObjRef,
    /// The AT-SPI role name (`push button`, `text`, `check box`).
    pub role: String,
    pub name: String,
    pub description: String,
    pub states: States,
    pub interfaces: Vec<String>,
    /// Screen extents, for nodes with the Component interface.
    pub extents: Option<Rect>,
    /// The actions it offers (`click`, `press`, `activate`, `toggle`).
    pub actions: Vec<String>,
    /// A field's text (never read for a password field) or a range's value.
    pub value: Option<String>,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
}

impl Node {
    pub fn has_interface(&self, name: &str) -> bool {
        self.interfaces.iter().any(|i| i == name)
    }
}

/// The accessibility bus of one desktop session.
#[derive(Clone)]
pub struct A11y {
    bus: Connection,
}

fn dbus_err(what: &str, e: impl std::fmt::Display) -> SurfaceError {
    SurfaceError::unavailable(format!("AT-SPI {what} failed: {e}"))
}

impl A11y {
    /// Reaches the accessibility bus through the session bus at `session` (a D-Bus address):
    /// asks the bus launcher for it, and turns accessibility on (`org.a11y.Status.IsEnabled`),
    /// which Qt and Chromium-based applications wait for before they expose a tree.
    pub async fn connect(session: &str) -> Result<A11y, SurfaceError> {
        let connect = async {
            let session_bus = zbus::connection::Builder::address(session)
                .map_err(|e| dbus_err("session bus address", e))?
                .build()
                .await
                .map_err(|e| dbus_err("session bus connection", e))?;
            session_bus
                .call_method(
                    Some("org.a11y.Bus"),
                    "/org/a11y/bus",
                    Some("org.freedesktop.DBus.Properties"),
                    "Set",
                    &("org.a11y.Status", "IsEnabled", Value::from(true)),
                )
                .await
                .map_err(|e| dbus_err("turning accessibility on", e))?;
            let reply = session_bus
                .call_method(
                    Some("org.a11y.Bus"),
                    "/org/a11y/bus",
                    Some("org.a11y.Bus"),
                    "GetAddress",
                    &(),
                )
                .await
                .map_err(|e| dbus_err("finding the accessibility bus", e))?;
            let address: String = reply
                .body()
                .deserialize()
                .map_err(|e| dbus_err("reading the accessibility bus address", e))?;
            let bus = zbus::connection::Builder::address(address.as_str())
                .map_err(|e| dbus_err("accessibility bus address", e))?
                .build()
                .await
                .map_err(|e| dbus_err("accessibility bus connection", e))?;
            Ok(A11y { bus })
        };
        tokio::time::timeout(CALL_DEADLINE * 3, connect)
            .await
            .map_err(|_| {
                SurfaceError::unavailable("the accessibility bus did not answer within 6 s")
            })?
    }

    async fn call<B, R>(
        &self,
        dest: &str,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<R, SurfaceError>
    where
        B: serde::Serialize + DynamicType,
        R: DeserializeOwned + zbus::zvariant::Type,
    {
        let call = self
            .bus
            .call_method(Some(dest), path, Some(iface), method, body);
        let reply = tokio::time::timeout(CALL_DEADLINE, call)
            .await
            .map_err(|_| SurfaceError::Timeout {
                what: format!("the application's {iface}.{method}"),
                after_ms: CALL_DEADLINE.as_millis() as u64,
            })?
            .map_err(|e| match e {
                zbus::Error::MethodError(name, _, _)
                    if name.as_str() == "org.freedesktop.DBus.Error.UnknownObject"
                        || name.as_str() == "org.freedesktop.DBus.Error.ServiceUnknown" =>
                {
                    SurfaceError::lost("the accessible object is gone")
                }
                other => dbus_err(method, other),
            })?;
        reply
            .body()
            .deserialize::<R>()
            .map_err(|e| SurfaceError::Internal {
                reason: format!("AT-SPI {method} answered with an unexpected shape: {e}"),
            })
    }

    async fn property(
        &self,
        obj: &ObjRef,
        iface: &str,
        name: &str,
    ) -> Result<OwnedValue, SurfaceError> {
        self.call(
            &obj.0,
            obj.1.as_str(),
            "org.freedesktop.DBus.Properties",
            "Get",
            &(iface, name),
        )
        .await
    }

    /// The applications on the bus, with their processes.
    pub async fn apps(&self) -> Result<Vec<(ObjRef, Option<u32>)>, SurfaceError> {
        let children: Vec<ObjRef> = self
            .call(
                "org.a11y.atspi.Registry",
                "/org/a11y/atspi/accessible/root",
                "org.a11y.atspi.Accessible",
                "GetChildren",
                &(),
            )
            .await?;
        let pids = join_all(children.iter().map(|c| async move {
            self.call::<_, u32>(
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "GetConnectionUnixProcessID",
                &(c.0.as_str(),),
            )
            .await
            .ok()
        }))
        .await;
        Ok(children.into_iter().zip(pids).collect())
    }

    /// Reads one node's facts (not its children's).
    async fn read(&self, obj: ObjRef) -> Result<(Node, Vec<ObjRef>), SurfaceError> {
        let (d, p) = (obj.0.as_str(), obj.1.as_str());
        const ACC: &str = "org.a11y.atspi.Accessible";
        let (role, name, states, interfaces, children) = tokio::join!(
            self.call::<_, String>(d, p, ACC, "GetRoleName", &()),
            self.property(&obj, ACC, "Name"),
            self.call::<_, Vec<u32>>(d, p, ACC, "GetState", &()),
            self.call::<_, Vec<String>>(d, p, ACC, "GetInterfaces", &()),
            self.call::<_, Vec<ObjRef>>(d, p, ACC, "GetChildren", &()),
        );
        let role = role?;
        let states = States::from_words(&states?);
        let interfaces = interfaces?;
        let name = name
            .ok()
            .and_then(|v| String::try_from(v).ok())
            .unwrap_or_default();
        let has = |i: &str| interfaces.iter().any(|x| x == i);
        let showing = states.has(state::SHOWING);
        let extents = async {
            if !has("org.a11y.atspi.Component") || !showing {
                return None;
            }
            let (x, y, w, h): (i32, i32, i32, i32) = self
                .call(d, p, "org.a11y.atspi.Component", "GetExtents", &(0u32,))
                .await
                .ok()?;
            (w > 0 && h > 0).then_some(Rect {
                x,
                y,
                width: w as u32,
                height: h as u32,
            })
        };
        let actions = async {
            if !has("org.a11y.atspi.Action") {
                return Vec::new();
            }
            self.call::<_, Vec<(String, String, String)>>(
                d,
                p,
                "org.a11y.atspi.Action",
                "GetActions",
                &(),
            )
            .await
            .map(|a| a.into_iter().map(|(n, _, _)| n).collect())
            .unwrap_or_default()
        };
        let secret = role == "password text";
        let value = async {
            if secret {
                return None;
            }
            let label = matches!(role.as_str(), "label" | "static" | "caption" | "heading");
            if has("org.a11y.atspi.Text") && (label || has("org.a11y.atspi.EditableText")) {
                return self
                    .call::<_, String>(d, p, "org.a11y.atspi.Text", "GetText", &(0i32, -1i32))
                    .await
                    .ok();
            }
            if role == "combo box" && has("org.a11y.atspi.Selection") {
                // A combo's value is its chosen option.
                return self.selected(&obj).await.ok().flatten();
            }
            if has("org.a11y.atspi.Value") {
                let v = self
                    .property(&obj, "org.a11y.atspi.Value", "CurrentValue")
                    .await
                    .ok()?;
                return f64::try_from(v).ok().map(|v| format!("{v}"));
            }
            None
        };
        let (extents, actions, value) = tokio::join!(extents, actions, value);
        let children = if states.has(state::MANAGES_DESCENDANTS) {
            // A list or table that manages its descendants may hold thousands: the visible
            // start is enough for an observation.
            children.unwrap_or_default().into_iter().take(200).collect()
        } else {
            children.unwrap_or_default()
        };
        Ok((
            Node {
                obj,
                role,
                name,
                description: String::new(),
                states,
                interfaces,
                extents,
                actions,
                value,
                parent: None,
                children: Vec::new(),
            },
            children,
        ))
    }

    /// The tree under `root`, read breadth-first with every node of a level at once; nodes that
    /// are not showing are kept but their subtrees are not read. At most [`MAX_NODES`]; the
    /// second value says whether nodes were left out.
    pub async fn tree(&self, root: ObjRef) -> Result<(Vec<Node>, bool), SurfaceError> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut level: Vec<(ObjRef, Option<usize>)> = vec![(root, None)];
        let mut cut = false;
        while !level.is_empty() {
            let room = MAX_NODES.saturating_sub(nodes.len());
            if level.len() > room {
                level.truncate(room);
                cut = true;
            }
            let read = join_all(level.iter().map(|(o, _)| self.read(o.clone()))).await;
            let mut next = Vec::new();
            for ((_, parent), result) in level.into_iter().zip(read) {
                let (mut node, children) = match result {
                    Ok(r) => r,
                    // A node that went away while the tree was read is left out.
                    Err(SurfaceError::TargetLost { .. }) => continue,
                    Err(e) if nodes.is_empty() => return Err(e),
                    Err(_) => continue,
                };
                if node.states.has(state::DEFUNCT) {
                    continue;
                }
                let index = nodes.len();
                node.parent = parent;
                if let Some(p) = parent {
                    nodes[p].children.push(index);
                }
                if node.states.has(state::SHOWING) || parent.is_none() {
                    next.extend(children.into_iter().map(|c| (c, Some(index))));
                }
                nodes.push(node);
            }
            level = next;
            if nodes.len() >= MAX_NODES && !level.is_empty() {
                cut = true;
                break;
            }
        }
        Ok((nodes, cut))
    }

    /// The top-level children (frames, dialogs) of an application, with their extents.
    pub async fn top_levels(
        &self,
        app: &ObjRef,
    ) -> Result<Vec<(ObjRef, String, Option<Rect>)>, SurfaceError> {
        let children: Vec<ObjRef> = self
            .call(
                &app.0,
                app.1.as_str(),
                "org.a11y.atspi.Accessible",
                "GetChildren",
                &(),
            )
            .await?;
        let read = join_all(children.into_iter().map(|c| async move {
            let name = self
                .property(&c, "org.a11y.atspi.Accessible", "Name")
                .await
                .ok()
                .and_then(|v| String::try_from(v).ok())
                .unwrap_or_default();
            let extents = self
                .call::<_, (i32, i32, i32, i32)>(
                    &c.0,
                    c.1.as_str(),
                    "org.a11y.atspi.Component",
                    "GetExtents",
                    &(0u32,),
                )
                .await
                .ok()
                .filter(|e| e.2 > 0 && e.3 > 0)
                .map(|(x, y, w, h)| Rect {
                    x,
                    y,
                    width: w as u32,
                    height: h as u32,
                });
            (c, name, extents)
        }))
        .await;
        Ok(read)
    }

    /// Runs the node's action named one of `names` (the first offered), else its first action.
    pub async fn do_action(&self, obj: &ObjRef, names: &[&str]) -> Result<bool, SurfaceError> {
        let actions: Vec<(String, String, String)> = self
            .call(
                &obj.0,
                obj.1.as_str(),
                "org.a11y.atspi.Action",
                "GetActions",
                &(),
            )
            .await?;
        let index = names
            .iter()
            .find_map(|n| actions.iter().position(|a| a.0 == *n))
            .or_else(|| (!actions.is_empty()).then_some(0));
        let Some(index) = index else {
            return Ok(false);
        };
        self.call::<_, bool>(
            &obj.0,
            obj.1.as_str(),
            "org.a11y.atspi.Action",
            "DoAction",
            &(index as i32),
        )
        .await
    }

    /// The options of a list control, in order, by name: a combo box's menu items (read on
    /// demand: a closed combo's menu is not showing, so observations leave it out), else its
    /// own children.
    pub async fn options(&self, obj: &ObjRef) -> Result<Vec<String>, SurfaceError> {
        const ACC: &str = "org.a11y.atspi.Accessible";
        let children: Vec<ObjRef> = self
            .call(&obj.0, obj.1.as_str(), ACC, "GetChildren", &())
            .await?;
        let mut items = children.clone();
        if let [only] = children.as_slice() {
            let role: String = self
                .call(&only.0, only.1.as_str(), ACC, "GetRoleName", &())
                .await?;
            if role == "menu" || role == "list" {
                items = self
                    .call(&only.0, only.1.as_str(), ACC, "GetChildren", &())
                    .await?;
            }
        }
        let names = join_all(items.iter().map(|i| self.property(i, ACC, "Name"))).await;
        Ok(names
            .into_iter()
            .map(|n| {
                n.ok()
                    .and_then(|v| String::try_from(v).ok())
                    .unwrap_or_default()
            })
            .collect())
    }

    /// Chooses the option at `index` of a list control (`Selection.SelectChild`).
    pub async fn select_child(&self, obj: &ObjRef, index: usize) -> Result<bool, SurfaceError> {
        self.call(
            &obj.0,
            obj.1.as_str(),
            "org.a11y.atspi.Selection",
            "SelectChild",
            &(index as i32,),
        )
        .await
    }

    /// The name of a list control's chosen option, if one is chosen.
    pub async fn selected(&self, obj: &ObjRef) -> Result<Option<String>, SurfaceError> {
        let count = self
            .property(obj, "org.a11y.atspi.Selection", "NSelectedChildren")
            .await
            .ok()
            .and_then(|v| i32::try_from(v).ok())
            .unwrap_or(0);
        if count < 1 {
            return Ok(None);
        }
        let child: ObjRef = self
            .call(
                &obj.0,
                obj.1.as_str(),
                "org.a11y.atspi.Selection",
                "GetSelectedChild",
                &(0i32,),
            )
            .await?;
        Ok(self
            .property(&child, "org.a11y.atspi.Accessible", "Name")
            .await
            .ok()
            .and_then(|v| String::try_from(v).ok()))
    }

    /// Sets a range control's value (`Value.CurrentValue`).
    pub async fn set_value(&self, obj: &ObjRef, value: f64) -> Result<(), SurfaceError> {
        self.call::<_, ()>(
            &obj.0,
            obj.1.as_str(),
            "org.freedesktop.DBus.Properties",
            "Set",
            &("org.a11y.atspi.Value", "CurrentValue", Value::from(value)),
        )
        .await
    }

    /// A range control's value now.
    pub async fn value(&self, obj: &ObjRef) -> Result<f64, SurfaceError> {
        let v = self
            .property(obj, "org.a11y.atspi.Value", "CurrentValue")
            .await?;
        f64::try_from(v).map_err(|e| SurfaceError::Internal {
            reason: format!("AT-SPI CurrentValue is not a number: {e}"),
        })
    }

    /// Replaces a field's text (`EditableText.SetTextContents`).
    pub async fn set_text(&self, obj: &ObjRef, text: &str) -> Result<bool, SurfaceError> {
        self.call(
            &obj.0,
            obj.1.as_str(),
            "org.a11y.atspi.EditableText",
            "SetTextContents",
            &(text,),
        )
        .await
    }

    /// A field's text.
    pub async fn text(&self, obj: &ObjRef) -> Result<String, SurfaceError> {
        self.call(
            &obj.0,
            obj.1.as_str(),
            "org.a11y.atspi.Text",
            "GetText",
            &(0i32, -1i32),
        )
        .await
    }

    /// The node's states now.
    pub async fn states(&self, obj: &ObjRef) -> Result<States, SurfaceError> {
        let words: Vec<u32> = self
            .call(
                &obj.0,
                obj.1.as_str(),
                "org.a11y.atspi.Accessible",
                "GetState",
                &(),
            )
            .await?;
        Ok(States::from_words(&words))
    }

    /// Asks the toolkit to focus the node (`Component.GrabFocus`).
    pub async fn grab_focus(&self, obj: &ObjRef) -> Result<bool, SurfaceError> {
        self.call(
            &obj.0,
            obj.1.as_str(),
            "org.a11y.atspi.Component",
            "GrabFocus",
            &(),
        )
        .await
    }

    /// The node's screen extents now.
    pub async fn extents(&self, obj: &ObjRef) -> Result<Rect, SurfaceError> {
        let (x, y, w, h): (i32, i32, i32, i32) = self
            .call(
                &obj.0,
                obj.1.as_str(),
                "org.a11y.atspi.Component",
                "GetExtents",
                &(0u32,),
            )
            .await?;
        Ok(Rect {
            x,
            y,
            width: w.max(0) as u32,
            height: h.max(0) as u32,
        })
    }
}

/// Finds the application and top-level node of a window: the application whose process owns
/// the window, and among its top-levels the one whose extents are the window's (else whose name
/// is its title).
pub async fn window_root(
    a11y: &A11y,
    pid: Option<u32>,
    title: &str,
    rect: Rect,
) -> Result<Option<ObjRef>, SurfaceError> {
    let Some(pid) = pid else { return Ok(None) };
    let apps = a11y.apps().await?;
    let mut by_pid: HashMap<u32, Vec<ObjRef>> = HashMap::new();
    for (app, p) in apps {
        if let Some(p) = p {
            by_pid.entry(p).or_default().push(app);
        }
    }
    let Some(apps) = by_pid.get(&pid) else {
        return Ok(None);
    };
    for app in apps {
        let tops = a11y.top_levels(app).await?;
        if let Some((obj, _, _)) = tops.iter().find(|(_, _, e)| {
            e.is_some_and(|e| {
                e.x == rect.x && e.y == rect.y && e.width == rect.width && e.height == rect.height
            })
        }) {
            return Ok(Some(obj.clone()));
        }
        if let Some((obj, _, _)) = tops.iter().find(|(_, n, _)| n == title) {
            return Ok(Some(obj.clone()));
        }
    }
    Ok(None)
}
