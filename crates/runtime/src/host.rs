//! The host API's state (`000_…` §06 "Surface Registry 与聊天 turn", "Alias 与 primary surface
//! 规则"): windows a host registered over its authenticated control channel, renderer
//! connections bound by a one-time nonce, the connection-owned surface registry with monotonic
//! revisions, chat turns that validate their references against it before any preview or adapter
//! command, immutable snapshots keyed by provider request id, and execution envelopes that
//! resolve a tool call's surface only in its own snapshot.
//!
//! A registry surface stands for a real Glovebox tab: a person's tab (`register_user_tab`, the
//! person channel's `POST /api/user-tabs`), named by its resource id as `local_surface_id`. At a
//! chat turn the chat session claims each visible referenced tab; the turn's end gives it back.
//! Title, origin and capabilities are read by the runtime, never taken from the renderer.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use protocol::{
    Capability, ContextId, ErrorCode, ExtendedAction, Observation, Preview, ProviderRequestId,
    Region, SessionId, SurfaceAlias, SurfaceContext, SurfaceEntry, SurfaceKey, SurfaceKind,
    SurfaceName, TurnId,
};
use serde::{Deserialize, Serialize};

use crate::RuntimeError;
use crate::runtime::{Runtime, SurfaceId, now_ms};

/// How long a window's connection nonce may wait for its renderer.
pub const NONCE_TTL: Duration = Duration::from_secs(60);
/// How long a turn's snapshot outlives its last use when nobody ends the turn.
pub const SNAPSHOT_TTL: Duration = Duration::from_secs(30 * 60);
/// Bound on registered surfaces per window and on live snapshots per runtime.
pub const MAX_SURFACES_PER_WINDOW: usize = 256;
const MAX_SNAPSHOTS: usize = 1024;
/// How long a turn's preview of one surface may take before it is `unavailable`.
const PREVIEW_DEADLINE: Duration = Duration::from_millis(1500);

/// A renderer connection, as the runtime names it (the transport holds it for its socket).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ConnectionId(u64);

/// What a host gets for a registered window: the nonce its renderer presents once.
#[derive(Debug, Clone, Serialize)]
pub struct WindowTicket {
    pub window_id: String,
    pub nonce: String,
    pub expires_in_ms: u64,
}

/// What a surface lets the agent do, as the person set it in the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Observe, interact, navigate (writes still pass the origin and risk policy).
    #[default]
    Full,
    /// Observe only: questions answered, writes refused (`capability_denied`).
    Observe,
    /// Listed as present but inaccessible: no preview, no tool.
    Off,
}

impl Access {
    /// The capabilities this access gives a surface.
    pub fn capabilities(self) -> Vec<Capability> {
        match self {
            Access::Full => vec![
                Capability::Observe,
                Capability::Interact,
                Capability::Navigate,
            ],
            Access::Observe => vec![Capability::Observe],
            Access::Off => Vec::new(),
        }
    }
}

/// A registry entry's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A chat pane (never a target).
    Chat,
    /// A web tab backed by a Glovebox tab.
    WebTab,
}

/// A registry event from a renderer. Every event carries the window's next revision; events
/// that change a surface carry its next revision; events that change the layout carry the next
/// layout revision. A repeated or older revision is refused and changes nothing.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum RegistryEvent {
    Open {
        registry_surface_id: String,
        window_revision: u64,
        surface_revision: u64,
        layout_revision: u64,
        kind: EntryKind,
        #[serde(default)]
        group_id: Option<String>,
        /// For a web tab: the Glovebox tab (a person's tab's resource id).
        #[serde(default)]
        local_surface_id: Option<String>,
        #[serde(default)]
        region: Option<Region>,
        #[serde(default = "yes")]
        visible: bool,
        /// Position in the window's tab order (`web:N` follows it; ties by registry id).
        #[serde(default)]
        order: u32,
        #[serde(default)]
        access: Access,
    },
    Update {
        registry_surface_id: String,
        window_revision: u64,
        surface_revision: u64,
        layout_revision: u64,
        #[serde(default)]
        region: Option<Region>,
        #[serde(default)]
        visible: Option<bool>,
        #[serde(default)]
        order: Option<u32>,
        #[serde(default)]
        access: Option<Access>,
    },
    /// The window's one focused surface (or none), set atomically.
    FocusSet {
        window_revision: u64,
        layout_revision: u64,
        focused_registry_surface_id: Option<String>,
    },
    Hide {
        registry_surface_id: String,
        window_revision: u64,
        surface_revision: u64,
        layout_revision: u64,
    },
    /// A move inside the window (another group or region); across windows is close + open.
    Move {
        registry_surface_id: String,
        window_revision: u64,
        surface_revision: u64,
        layout_revision: u64,
        #[serde(default)]
        group_id: Option<String>,
        #[serde(default)]
        region: Option<Region>,
        #[serde(default)]
        order: Option<u32>,
    },
    Close {
        registry_surface_id: String,
        window_revision: u64,
        layout_revision: u64,
    },
}

fn yes() -> bool {
    true
}

impl RegistryEvent {
    /// The window and layout revisions the event carries, and the surface it changes (an open
    /// adds one, so it names none here).
    fn revisions(&self) -> (u64, u64, Option<&str>) {
        match self {
            Self::Open {
                window_revision,
                layout_revision,
                ..
            }
            | Self::FocusSet {
                window_revision,
                layout_revision,
                ..
            } => (*window_revision, *layout_revision, None),
            Self::Update {
                registry_surface_id,
                window_revision,
                layout_revision,
                ..
            }
            | Self::Hide {
                registry_surface_id,
                window_revision,
                layout_revision,
                ..
            }
            | Self::Move {
                registry_surface_id,
                window_revision,
                layout_revision,
                ..
            }
            | Self::Close {
                registry_surface_id,
                window_revision,
                layout_revision,
            } => (
                *window_revision,
                *layout_revision,
                Some(registry_surface_id.as_str()),
            ),
        }
    }
}

/// The registry's revisions after an event.
#[derive(Debug, Clone, Serialize)]
pub struct RegistryAck {
    pub window_revision: u64,
    pub layout_revision: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surface_revision: Option<u64>,
}

/// One visible surface a chat command references.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SurfaceRef {
    pub registry_surface_id: String,
    pub surface_revision: u64,
}

/// A chat command's surface references (`surface_refs`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatTurnRequest {
    pub chat_session_id: String,
    /// The chat pane the message was sent from (a `chat` entry; its group is the turn's group).
    pub chat_surface_id: String,
    pub window_revision: u64,
    pub layout_revision: u64,
    #[serde(default)]
    pub focused_registry_surface_id: Option<String>,
    #[serde(default)]
    pub visible: Vec<SurfaceRef>,
    /// The conversation branch the message belongs to (the host's turn lineage), if it has
    /// branches: the tabs this turn opens or claims are grouped under it.
    #[serde(default)]
    pub branch_id: Option<String>,
}

/// A host's turn that ended, its cleanup still to run ([`Runtime::begin_host_turn_end`]).
pub struct TurnEnding {
    session: SessionId,
    turn: String,
}

/// A chat command validated and bound, its previews not yet captured
/// ([`Runtime::prepare_chat_turn`]).
pub struct PreparedTurn {
    connection: ConnectionId,
    window_id: String,
    layout_revision: u64,
    session: SessionId,
    turn: String,
    bound: Vec<BoundSurface>,
    primary: Option<SurfaceKey>,
}

/// A referenced surface of a prepared turn: its registry entry as validated, the tab it is
/// bound to (none when inaccessible or unusable), its key and aliases.
struct BoundSurface {
    registry_surface_id: String,
    entry: Entry,
    surface: Option<SurfaceId>,
    key: SurfaceKey,
    aliases: Vec<SurfaceAlias>,
}

/// What a chat turn gives the host before the model call: the Surface Context and the tools to
/// inject (`computer_use` with the turn's `surface` enum, only when a surface can be observed).
#[derive(Debug, Clone, Serialize)]
pub struct ChatTurn {
    pub context: SurfaceContext,
    pub tools: Vec<serde_json::Value>,
    /// The Glovebox session of the chat session (status, approvals).
    pub session: SessionId,
}

/// The execution envelope of a tool call: written by the host's dispatcher from the provider's
/// response, never by the model.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub tool_call_id: String,
    pub source_provider_request_id: String,
}

#[derive(Debug, Clone)]
struct Entry {
    kind: EntryKind,
    group_id: Option<String>,
    local_surface_id: Option<String>,
    region: Option<Region>,
    visible: bool,
    order: u32,
    access: Access,
    surface_revision: u64,
    /// Bumped by hide, move and close: a binding issued before names another generation.
    generation: u64,
}

struct Window {
    renderer_instance_id: String,
    connection: Option<ConnectionId>,
    window_revision: u64,
    layout_revision: u64,
    surfaces: BTreeMap<String, Entry>,
    /// Registry ids this window used (never reused, not even after a close).
    used_ids: HashSet<String>,
    focused: Option<String>,
}

struct PendingNonce {
    window_id: String,
    renderer_instance_id: String,
    expires: Instant,
}

/// A binding of one surface of one snapshot to the registry entry it was issued for.
#[derive(Debug, Clone)]
struct Binding {
    window_id: String,
    connection: ConnectionId,
    registry_surface_id: String,
    generation: u64,
    /// The session's surface (absent for a surface the user switched off).
    surface: Option<SurfaceId>,
}

struct Snapshot {
    connection: ConnectionId,
    session: SessionId,
    turn: String,
    bindings: HashMap<SurfaceKey, Binding>,
    context: SurfaceContext,
    tool_calls: std::sync::Mutex<HashSet<String>>,
    last_used: std::sync::Mutex<Instant>,
}

struct ChatSession {
    session: SessionId,
    window_id: String,
}

/// The host API's registry (in the runtime; transports only carry its messages).
#[derive(Default)]
pub(crate) struct HostRegistry {
    windows: std::sync::Mutex<HashMap<String, Window>>,
    nonces: std::sync::Mutex<HashMap<String, PendingNonce>>,
    /// Every (window, renderer instance) ever registered: a registration is never reusable.
    registered: std::sync::Mutex<HashSet<(String, String)>>,
    connections: std::sync::Mutex<HashMap<ConnectionId, String>>,
    snapshots: std::sync::Mutex<HashMap<String, Arc<Snapshot>>>,
    chats: tokio::sync::Mutex<HashMap<String, ChatSession>>,
    next: std::sync::atomic::AtomicU64,
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn unknown(what: &str, id: &str) -> RuntimeError {
    RuntimeError::UnknownSurface {
        name: id.to_owned(),
        known: format!("a {what} registered on this connection"),
    }
}

fn stale(what: String) -> RuntimeError {
    RuntimeError::StaleRevision(what)
}

fn check_id(what: &str, id: &str) -> Result<(), RuntimeError> {
    if id.is_empty()
        || id.len() > 128
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
    {
        return Err(RuntimeError::InvalidAction(format!(
            "{what} must be 1 to 128 characters of A-Z a-z 0-9 - _ . :"
        )));
    }
    Ok(())
}

fn region_name(r: Region) -> &'static str {
    match r {
        Region::Left => "left",
        Region::Right => "right",
        Region::Center => "center",
    }
}

impl Window {
    /// Checks the revisions an event carries against this window: the window's must be the next
    /// one up; the layout's must not go back, and must go up when the event changes the layout.
    fn check(
        &self,
        window_revision: u64,
        layout_revision: u64,
        changes_layout: bool,
    ) -> Result<(), RuntimeError> {
        if window_revision <= self.window_revision {
            return Err(stale(format!(
                "window revision {window_revision} is not newer than {}",
                self.window_revision
            )));
        }
        if layout_revision < self.layout_revision
            || (changes_layout && layout_revision == self.layout_revision)
        {
            return Err(stale(format!(
                "layout revision {layout_revision} is not newer than {}",
                self.layout_revision
            )));
        }
        Ok(())
    }

    /// The entry an event changes, its surface revision advanced to `surface_revision` (which
    /// must be newer). Called after [`Window::check`], so nothing fails once it returns.
    fn advance(&mut self, id: &str, surface_revision: u64) -> Result<&mut Entry, RuntimeError> {
        let entry = self
            .surfaces
            .get_mut(id)
            .ok_or_else(|| unknown("surface", id))?;
        if surface_revision <= entry.surface_revision {
            return Err(stale(format!(
                "surface revision {surface_revision} of {id} is not newer than {}",
                entry.surface_revision
            )));
        }
        entry.surface_revision = surface_revision;
        Ok(entry)
    }
}

impl Runtime {
    fn host(&self) -> &HostRegistry {
        &self.inner.host
    }

    /// Registers a host window (the control channel, a person's tool): returns the one-time
    /// nonce its renderer presents on the WebSocket. A (window, renderer instance) pair is never
    /// registered twice; a new renderer instance of a window replaces the old one's connection.
    pub fn register_window(
        &self,
        window_id: &str,
        renderer_instance_id: &str,
    ) -> Result<WindowTicket, RuntimeError> {
        check_id("window_id", window_id)?;
        check_id("renderer_instance_id", renderer_instance_id)?;
        if !lock(&self.host().registered)
            .insert((window_id.to_owned(), renderer_instance_id.to_owned()))
        {
            return Err(RuntimeError::InvalidAction(format!(
                "window {window_id} with renderer {renderer_instance_id} was registered before; a registration is not reusable"
            )));
        }
        let nonce = crate::runtime::random_hex(32)?;
        let mut nonces = lock(&self.host().nonces);
        let now = Instant::now();
        nonces.retain(|_, n| n.expires > now);
        nonces.insert(
            nonce.clone(),
            PendingNonce {
                window_id: window_id.to_owned(),
                renderer_instance_id: renderer_instance_id.to_owned(),
                expires: now + NONCE_TTL,
            },
        );
        Ok(WindowTicket {
            window_id: window_id.to_owned(),
            nonce,
            expires_in_ms: NONCE_TTL.as_millis() as u64,
        })
    }

    /// Binds a renderer connection to the window its nonce was issued for; the nonce is used up
    /// (a second hello with it, or an expired one, is refused). A window's earlier connection, if
    /// any, loses its registry.
    pub async fn connect_renderer(
        &self,
        nonce: &str,
    ) -> Result<(ConnectionId, String), RuntimeError> {
        let pending = lock(&self.host().nonces).remove(nonce);
        let Some(pending) = pending.filter(|p| p.expires > Instant::now()) else {
            return Err(RuntimeError::UnknownSurface {
                name: "nonce".into(),
                known: "a nonce the control channel issued, used once, within a minute".into(),
            });
        };
        let id = ConnectionId(self.host().next.fetch_add(1, Ordering::Relaxed) + 1);
        let previous = {
            let mut windows = lock(&self.host().windows);
            let previous = windows.get(&pending.window_id).and_then(|w| w.connection);
            windows.insert(
                pending.window_id.clone(),
                Window {
                    renderer_instance_id: pending.renderer_instance_id,
                    connection: Some(id),
                    window_revision: 0,
                    layout_revision: 0,
                    surfaces: BTreeMap::new(),
                    used_ids: HashSet::new(),
                    focused: None,
                },
            );
            previous
        };
        lock(&self.host().connections).insert(id, pending.window_id.clone());
        if let Some(previous) = previous {
            lock(&self.host().connections).remove(&previous);
            self.drop_connection_state(previous, &pending.window_id)
                .await;
        }
        // A renderer that (re)registers may have been rebuilt after a restart: the kept tabs are
        // restored (once more after a restore already under way, never more than once).
        self.request_restore();
        Ok((id, pending.window_id))
    }

    /// A renderer connection closed: its registry entries go, every binding issued through it
    /// is invalid (the next side effect is `target_lost`), and the current turn of each chat
    /// session of its window ends (claims given back, unmarked agent tabs closed, leases
    /// detached).
    pub async fn disconnect_renderer(&self, connection: ConnectionId) {
        let Some(window_id) = lock(&self.host().connections).remove(&connection) else {
            return;
        };
        let mine = {
            let mut windows = lock(&self.host().windows);
            if windows
                .get(&window_id)
                .is_some_and(|w| w.connection == Some(connection))
            {
                windows.remove(&window_id);
                true
            } else {
                false
            }
        };
        if mine {
            self.drop_connection_state(connection, &window_id).await;
        }
    }

    async fn drop_connection_state(&self, connection: ConnectionId, window_id: &str) {
        lock(&self.host().snapshots).retain(|_, s| s.connection != connection);
        let sessions: Vec<SessionId> = self
            .host()
            .chats
            .lock()
            .await
            .values()
            .filter(|c| c.window_id == window_id)
            .map(|c| c.session.clone())
            .collect();
        for session in sessions {
            if let Err(e) = self.end_current_turn(&session).await {
                tracing::warn!(session = %session, error = %e, "the turn end after a renderer disconnect failed");
            }
        }
    }

    /// Applies one registry event of a connection's window.
    pub async fn registry_event(
        &self,
        connection: ConnectionId,
        event: RegistryEvent,
    ) -> Result<RegistryAck, RuntimeError> {
        let (ack, lost) = self.apply_event(connection, event)?;
        // A tab hidden, moved out of its group or closed loses its leases at once: a run or
        // call on it gets `target_lost` at its next side effect, never another tab.
        if let Some((window_id, local)) = lost {
            self.invalidate_window_tab(&window_id, &local).await;
        }
        Ok(ack)
    }

    async fn invalidate_window_tab(&self, window_id: &str, local: &str) {
        let sessions: Vec<SessionId> = self
            .host()
            .chats
            .lock()
            .await
            .values()
            .filter(|c| c.window_id == window_id)
            .map(|c| c.session.clone())
            .collect();
        for session in sessions {
            let Ok(state) = self.session(session.as_str()) else {
                continue;
            };
            let targets: Vec<String> = state
                .tabs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .filter(|t| t.resource == local)
                .map(|t| t.target().to_owned())
                .collect();
            for target in targets {
                self.inner.leases.invalidate(&target);
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn apply_event(
        &self,
        connection: ConnectionId,
        event: RegistryEvent,
    ) -> Result<(RegistryAck, Option<(String, String)>), RuntimeError> {
        let window_id = lock(&self.host().connections)
            .get(&connection)
            .cloned()
            .ok_or_else(|| unknown("connection", "this connection"))?;
        // A web tab must be a real tab a person offered; checked before the registry changes.
        if let RegistryEvent::Open {
            kind: EntryKind::WebTab,
            local_surface_id,
            ..
        } = &event
        {
            let Some(local) = local_surface_id else {
                return Err(RuntimeError::InvalidAction("a web_tab needs local_surface_id: the Glovebox tab it shows (POST /api/user-tabs)".into()));
            };
            if !self.is_offered(local) {
                return Err(unknown("person's tab (local_surface_id)", local));
            }
        }
        let mut windows = lock(&self.host().windows);
        let window = windows
            .get_mut(&window_id)
            .filter(|w| w.connection == Some(connection))
            .ok_or_else(|| unknown("window", &window_id))?;
        let (window_revision, layout_revision, target) = event.revisions();
        let before = target
            .and_then(|id| window.surfaces.get(id))
            .map(|e| (e.generation, e.local_surface_id.clone()));
        let target = target.map(str::to_owned);
        let surface_revision = match event {
            RegistryEvent::Open {
                registry_surface_id,
                surface_revision: rev,
                kind,
                group_id,
                local_surface_id,
                region,
                visible,
                order,
                access,
                ..
            } => {
                check_id("registry_surface_id", &registry_surface_id)?;
                window.check(window_revision, layout_revision, true)?;
                if window.used_ids.contains(&registry_surface_id) {
                    return Err(RuntimeError::InvalidAction(format!(
                        "registry surface {registry_surface_id} was used in this window before; open a new id"
                    )));
                }
                if window.surfaces.len() >= MAX_SURFACES_PER_WINDOW {
                    return Err(RuntimeError::InvalidAction(format!(
                        "a window registers at most {MAX_SURFACES_PER_WINDOW} surfaces"
                    )));
                }
                if kind == EntryKind::Chat && local_surface_id.is_some() {
                    return Err(RuntimeError::InvalidAction(
                        "a chat surface has no local_surface_id".into(),
                    ));
                }
                window.used_ids.insert(registry_surface_id.clone());
                window.surfaces.insert(
                    registry_surface_id,
                    Entry {
                        kind,
                        group_id,
                        local_surface_id,
                        region,
                        visible,
                        order,
                        access,
                        surface_revision: rev,
                        generation: 0,
                    },
                );
                Some(rev)
            }
            RegistryEvent::Update {
                registry_surface_id,
                surface_revision: rev,
                region,
                visible,
                order,
                access,
                ..
            } => {
                window.check(
                    window_revision,
                    layout_revision,
                    region.is_some() || visible.is_some() || order.is_some(),
                )?;
                let entry = window.advance(&registry_surface_id, rev)?;
                entry.region = region.or(entry.region);
                if visible == Some(false) {
                    entry.generation += 1;
                }
                entry.visible = visible.unwrap_or(entry.visible);
                entry.order = order.unwrap_or(entry.order);
                entry.access = access.unwrap_or(entry.access);
                Some(rev)
            }
            RegistryEvent::FocusSet {
                focused_registry_surface_id,
                ..
            } => {
                window.check(window_revision, layout_revision, true)?;
                if let Some(id) = &focused_registry_surface_id
                    && !window.surfaces.contains_key(id)
                {
                    return Err(unknown("surface", id));
                }
                // One commit: the old focus goes and the new one comes, never two at once. A
                // focus change affects the next turn's aliases, never a binding or lease.
                window.focused = focused_registry_surface_id;
                None
            }
            RegistryEvent::Hide {
                registry_surface_id,
                surface_revision: rev,
                ..
            } => {
                window.check(window_revision, layout_revision, true)?;
                let entry = window.advance(&registry_surface_id, rev)?;
                entry.visible = false;
                entry.generation += 1;
                Some(rev)
            }
            RegistryEvent::Move {
                registry_surface_id,
                surface_revision: rev,
                group_id,
                region,
                order,
                ..
            } => {
                window.check(window_revision, layout_revision, true)?;
                let entry = window.advance(&registry_surface_id, rev)?;
                if entry.group_id != group_id {
                    entry.generation += 1; // out of its group: the binding goes
                }
                entry.group_id = group_id;
                entry.region = region.or(entry.region);
                entry.order = order.unwrap_or(entry.order);
                Some(rev)
            }
            RegistryEvent::Close {
                registry_surface_id,
                ..
            } => {
                window.check(window_revision, layout_revision, true)?;
                if window.surfaces.remove(&registry_surface_id).is_none() {
                    return Err(unknown("surface", &registry_surface_id));
                }
                if window.focused.as_deref() == Some(registry_surface_id.as_str()) {
                    window.focused = None;
                }
                None
            }
        };
        window.window_revision = window_revision;
        window.layout_revision = layout_revision;
        let ack = RegistryAck {
            window_revision: window.window_revision,
            layout_revision: window.layout_revision,
            surface_revision,
        };
        let after = target
            .as_ref()
            .and_then(|id| window.surfaces.get(id))
            .map(|e| e.generation);
        let lost = match before {
            Some((before, Some(local))) if after != Some(before) => {
                Some((window_id.clone(), local))
            }
            _ => None,
        };
        Ok((ack, lost))
    }

    fn is_offered(&self, resource: &str) -> bool {
        self.inner
            .offered_tabs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(resource)
    }

    /// A chat command: validates its references against the connection's registry (before any
    /// preview or adapter call: unknown, cross-connection, hidden, other-group or stale
    /// references are refused), binds each referenced web tab to the chat session, captures the
    /// bounded previews and returns the server-owned Surface Context with its tools. The
    /// snapshot is immutable; tool calls of the response resolve only in it.
    pub async fn chat_turn(
        &self,
        connection: ConnectionId,
        request: ChatTurnRequest,
    ) -> Result<ChatTurn, RuntimeError> {
        let prepared = self.prepare_chat_turn(connection, request).await?;
        self.complete_chat_turn(prepared).await
    }

    /// The first half of a chat command: validation against the registry, binding and aliases,
    /// with no preview yet. A transport awaits it in the order of the connection's messages
    /// (so a registry event sent after the command never changes what the command was validated
    /// against) and may then let [`Runtime::complete_chat_turn`] capture the previews while it
    /// goes on reading registry events: a layout change during a capture discards that preview.
    pub async fn prepare_chat_turn(
        &self,
        connection: ConnectionId,
        request: ChatTurnRequest,
    ) -> Result<PreparedTurn, RuntimeError> {
        check_id("chat_session_id", &request.chat_session_id)?;
        if let Some(branch) = &request.branch_id {
            check_id("branch_id", branch)?;
        }
        let window_id = lock(&self.host().connections)
            .get(&connection)
            .cloned()
            .ok_or_else(|| unknown("connection", "this connection"))?;
        // 1. Validation against the registry, all of it before anything else.
        struct Chosen {
            registry_surface_id: String,
            entry: Entry,
            focused: bool,
        }
        let (chosen, layout_revision) = {
            let windows = lock(&self.host().windows);
            let window = windows
                .get(&window_id)
                .filter(|w| w.connection == Some(connection))
                .ok_or_else(|| unknown("window", &window_id))?;
            if request.window_revision != window.window_revision {
                return Err(stale(format!(
                    "window revision {} is not the registry's {}",
                    request.window_revision, window.window_revision
                )));
            }
            if request.layout_revision != window.layout_revision {
                return Err(stale(format!(
                    "layout revision {} is not the registry's {}",
                    request.layout_revision, window.layout_revision
                )));
            }
            let chat = window
                .surfaces
                .get(&request.chat_surface_id)
                .ok_or_else(|| unknown("chat surface", &request.chat_surface_id))?;
            if chat.kind != EntryKind::Chat {
                return Err(RuntimeError::InvalidAction(format!(
                    "{} is not a chat surface",
                    request.chat_surface_id
                )));
            }
            if request.focused_registry_surface_id != window.focused {
                return Err(stale(format!(
                    "focus {:?} is not the registry's {:?}",
                    request.focused_registry_surface_id, window.focused
                )));
            }
            let mut chosen = Vec::new();
            for r in &request.visible {
                let entry = window
                    .surfaces
                    .get(&r.registry_surface_id)
                    .ok_or_else(|| unknown("surface", &r.registry_surface_id))?;
                if r.surface_revision != entry.surface_revision {
                    return Err(stale(format!(
                        "surface revision {} of {} is not the registry's {}",
                        r.surface_revision, r.registry_surface_id, entry.surface_revision
                    )));
                }
                if entry.kind != EntryKind::WebTab {
                    return Err(RuntimeError::InvalidAction(format!(
                        "{} is not a web tab",
                        r.registry_surface_id
                    )));
                }
                if !entry.visible {
                    return Err(unknown("visible surface", &r.registry_surface_id));
                }
                if chat.group_id.is_none() || entry.group_id != chat.group_id {
                    return Err(unknown(
                        "surface of the chat's group",
                        &r.registry_surface_id,
                    ));
                }
                if chosen
                    .iter()
                    .any(|c: &Chosen| c.registry_surface_id == r.registry_surface_id)
                {
                    return Err(RuntimeError::InvalidAction(format!(
                        "{} is referenced twice",
                        r.registry_surface_id
                    )));
                }
                let focused = window.focused.as_deref() == Some(r.registry_surface_id.as_str());
                chosen.push(Chosen {
                    registry_surface_id: r.registry_surface_id.clone(),
                    entry: entry.clone(),
                    focused,
                });
            }
            (chosen, window.layout_revision)
        };

        // 2. The chat session's Glovebox session (created on its first turn).
        let session = self
            .chat_session(&request.chat_session_id, &window_id)
            .await?;
        let state = self.session(session.as_str())?;
        let turn_number = state.turn_number();
        let turn = crate::lifecycle::turn_name(turn_number);
        *lock(&state.branch) = request.branch_id.clone();

        // 3. Bind each referenced tab to the session (claimed for the turn) with its access.
        let mut bound: Vec<(Chosen, Option<SurfaceId>, SurfaceKey)> = Vec::new();
        for c in chosen {
            let local = c.entry.local_surface_id.clone().unwrap_or_default();
            if c.entry.access == Access::Off {
                // Present but inaccessible: a key, no tab, no preview, no tool.
                let key = SurfaceKey::from_index(self.reserve_key(&session)?);
                bound.push((c, None, key));
                continue;
            }
            // A tab the session holds is this turn's from now (the end of the turn before
            // leaves it alone); one it does not hold is claimed (after that end, if it runs).
            let held = lock(&state.tabs)
                .iter_mut()
                .find(|t| t.resource == local)
                .map(|t| {
                    t.turn = t.turn.max(turn_number);
                    t.surface
                });
            let surface = match held {
                Some(s) => s,
                None => match self.claim_tab(&session, &local).await {
                    Ok(s) => s,
                    // Another session holds the tab, or it is gone: the turn still gets its
                    // context, with this surface present but unusable (no tool reaches it).
                    Err(e)
                        if matches!(
                            e.code(),
                            ErrorCode::LeaseConflict
                                | ErrorCode::TargetLost
                                | ErrorCode::UnknownSurface
                        ) =>
                    {
                        tracing::info!(tab = %local, error = %e, "a referenced tab cannot be bound this turn");
                        let key = SurfaceKey::from_index(self.reserve_key(&session)?);
                        bound.push((c, None, key));
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            self.set_capabilities(&session, surface, c.entry.access.capabilities())?;
            let key = self
                .surface_key(&session, surface)
                .and_then(|k| k.parse::<SurfaceKey>().ok())
                .ok_or_else(|| RuntimeError::Internal("a claimed tab without a key".into()))?;
            bound.push((c, Some(surface), key));
        }

        // 4. Aliases (`000_…` §06 rules 2–4) and the primary surface (rule 5).
        let controllable = |b: &(Chosen, Option<SurfaceId>, SurfaceKey)| {
            b.0.entry.access != Access::Off && b.1.is_some()
        };
        let mut aliases: Vec<Vec<SurfaceAlias>> = vec![Vec::new(); bound.len()];
        let alias =
            |s: &str| SurfaceAlias::new(s).map_err(|e| RuntimeError::Internal(e.to_string()));
        for region in [Region::Left, Region::Right, Region::Center] {
            let mut inside = bound
                .iter()
                .enumerate()
                .filter(|(_, b)| controllable(b) && b.0.entry.region == Some(region));
            if let (Some((i, _)), None) = (inside.next(), inside.next()) {
                aliases[i].push(alias(region_name(region))?);
            }
        }
        if let Some(i) = bound.iter().position(|b| controllable(b) && b.0.focused) {
            aliases[i].push(alias("focused")?);
        }
        let mut order: Vec<usize> = (0..bound.len())
            .filter(|&i| controllable(&bound[i]))
            .collect();
        order.sort_by(|&a, &b| {
            (bound[a].0.entry.order, &bound[a].0.registry_surface_id)
                .cmp(&(bound[b].0.entry.order, &bound[b].0.registry_surface_id))
        });
        for (n, &i) in order.iter().enumerate() {
            aliases[i].push(alias(&format!("web:{}", n + 1))?);
        }
        let primary = bound
            .iter()
            .position(|b| controllable(b) && b.0.focused)
            .or_else(|| (order.len() == 1).then(|| order[0]))
            .map(|i| bound[i].2.clone());
        let bound = bound
            .into_iter()
            .zip(aliases)
            .map(|((c, surface, key), aliases)| BoundSurface {
                registry_surface_id: c.registry_surface_id,
                entry: c.entry,
                surface,
                key,
                aliases,
            })
            .collect();
        Ok(PreparedTurn {
            connection,
            window_id,
            layout_revision,
            session,
            turn,
            bound,
            primary,
        })
    }

    /// The second half of a chat command: the previews (each discarded when the window's layout
    /// changed while it was captured, retried once, then `unavailable`), the Surface Context and
    /// its immutable snapshot.
    pub async fn complete_chat_turn(
        &self,
        prepared: PreparedTurn,
    ) -> Result<ChatTurn, RuntimeError> {
        let PreparedTurn {
            connection,
            window_id,
            layout_revision,
            session,
            turn,
            bound,
            primary,
        } = prepared;
        // 5. Previews, each discarded when the layout changed while it was captured (retried
        //    once, then `unavailable`).
        //    Tabs are previewed side by side (each under its own read barrier).
        let previews = futures_util::future::join_all(bound.iter().map(|b| async {
            match b.surface {
                Some(s) => Some(
                    self.turn_preview(&session, s, &window_id, layout_revision)
                        .await,
                ),
                None => None,
            }
        }))
        .await;
        // A surface that could not be bound (held elsewhere, gone) says so: an unavailable
        // preview, no capabilities. One the user switched off has no preview at all.
        let previews: Vec<Option<Preview>> = previews
            .into_iter()
            .zip(&bound)
            .map(|(p, b)| {
                if b.surface.is_none() && b.entry.access != Access::Off {
                    Some(Preview::unavailable(String::new(), String::new(), now_ms()))
                } else {
                    p
                }
            })
            .collect();
        let mut surfaces = Vec::new();
        let mut bindings = HashMap::new();
        for (b, preview) in bound.into_iter().zip(previews) {
            let capabilities = if b.surface.is_some() {
                b.entry.access.capabilities()
            } else {
                Vec::new()
            };
            surfaces.push(
                SurfaceEntry::new(
                    b.key.clone(),
                    b.aliases,
                    SurfaceKind::WebTab,
                    b.entry.region,
                    capabilities,
                    preview,
                )
                .map_err(|e| RuntimeError::Internal(e.to_string()))?,
            );
            bindings.insert(
                b.key,
                Binding {
                    window_id: window_id.clone(),
                    connection,
                    registry_surface_id: b.registry_surface_id,
                    generation: b.entry.generation,
                    surface: b.surface,
                },
            );
        }
        let n = self.host().next.fetch_add(1, Ordering::Relaxed) + 1;
        let provider_request_id = format!("req_{}", crate::runtime::random_hex(12)?);
        let context = SurfaceContext::new(
            ContextId::new(format!("ctx_{n}"))
                .map_err(|e| RuntimeError::Internal(e.to_string()))?,
            n,
            TurnId::new(turn.clone()).map_err(|e| RuntimeError::Internal(e.to_string()))?,
            ProviderRequestId::new(provider_request_id.clone())
                .map_err(|e| RuntimeError::Internal(e.to_string()))?,
            primary,
            surfaces,
        )
        .map_err(|e| RuntimeError::Internal(e.to_string()))?;
        let names = context.selectable_names();
        let tools = if names.is_empty() {
            Vec::new()
        } else {
            vec![protocol::schema::computer_use_tool(&names)]
        };
        let snapshot = Arc::new(Snapshot {
            connection,
            session: session.clone(),
            turn,
            bindings,
            context: context.clone(),
            tool_calls: Default::default(),
            last_used: std::sync::Mutex::new(Instant::now()),
        });
        {
            let mut snapshots = lock(&self.host().snapshots);
            snapshots.retain(|_, s| lock(&s.last_used).elapsed() < SNAPSHOT_TTL);
            if snapshots.len() >= MAX_SNAPSHOTS {
                return Err(RuntimeError::LeaseConflict {
                    holder: format!("{MAX_SNAPSHOTS} turns still open; end some turns first"),
                });
            }
            snapshots.insert(provider_request_id, snapshot);
        }
        Ok(ChatTurn {
            context,
            tools,
            session,
        })
    }

    /// The chat session's Glovebox session, created on its first turn; its turns are the host's.
    async fn chat_session(
        &self,
        chat_session_id: &str,
        window_id: &str,
    ) -> Result<SessionId, RuntimeError> {
        let mut chats = self.host().chats.lock().await;
        if let Some(c) = chats.get(chat_session_id) {
            if c.window_id != window_id {
                return Err(unknown("chat session of this window", chat_session_id));
            }
            if self.session(c.session.as_str()).is_ok() {
                return Ok(c.session.clone());
            }
        }
        let session = self.create_session().await?;
        self.session(session.as_str())?
            .host_turns
            .store(true, Ordering::SeqCst);
        chats.insert(
            chat_session_id.to_owned(),
            ChatSession {
                session: session.clone(),
                window_id: window_id.to_owned(),
            },
        );
        Ok(session)
    }

    fn reserve_key(&self, session: &SessionId) -> Result<u32, RuntimeError> {
        Ok(self
            .session(session.as_str())?
            .next_key
            .fetch_add(1, Ordering::Relaxed))
    }

    async fn turn_preview(
        &self,
        session: &SessionId,
        surface: SurfaceId,
        window_id: &str,
        layout_revision: u64,
    ) -> Preview {
        // The first capture is judged against the layout the command was validated against; the
        // retry against the layout read just before it (`000_…` §06: read before and after,
        // discard on any change, retry once, then unavailable).
        let layout = || {
            lock(&self.host().windows)
                .get(window_id)
                .map(|w| w.layout_revision)
        };
        let mut before = Some(layout_revision);
        for attempt in 0..2 {
            if attempt > 0 {
                before = layout();
            }
            let preview = self.preview_of(session, surface, PREVIEW_DEADLINE).await;
            if before.is_some() && layout() == before {
                return preview;
            }
            tracing::debug!(
                ?surface,
                attempt,
                "the layout changed while a turn preview was captured; discarded"
            );
        }
        Preview::unavailable(String::new(), String::new(), now_ms())
    }

    /// The snapshot a tool call names, and the binding of the surface it names in it: the
    /// snapshot must be this connection's, the tool call id new in it, the binding still valid
    /// (its surface not hidden, closed, moved out of its group or disconnected: `target_lost`).
    fn bound(
        &self,
        connection: ConnectionId,
        envelope: &Envelope,
        surface: Option<&SurfaceName>,
    ) -> Result<(SessionId, SurfaceKey, SurfaceId), RuntimeError> {
        let snapshot = lock(&self.host().snapshots)
            .get(&envelope.source_provider_request_id)
            .cloned();
        let snapshot = snapshot
            .filter(|s| s.connection == connection)
            .ok_or_else(|| unknown("provider request", &envelope.source_provider_request_id))?;
        check_id("tool_call_id", &envelope.tool_call_id)?;
        if !lock(&snapshot.tool_calls).insert(envelope.tool_call_id.clone()) {
            return Err(RuntimeError::InvalidAction(format!(
                "tool call {} was executed already",
                envelope.tool_call_id
            )));
        }
        *lock(&snapshot.last_used) = Instant::now();
        let entry = snapshot.context.resolve(surface).map_err(|e| match e {
            protocol::SurfaceError::Ambiguous => RuntimeError::AmbiguousSurface {
                known: names(&snapshot.context),
            },
            protocol::SurfaceError::Unknown(name) => RuntimeError::UnknownSurface {
                name,
                known: names(&snapshot.context),
            },
        })?;
        let key = entry.surface_key().clone();
        let binding = snapshot
            .bindings
            .get(&key)
            .ok_or_else(|| RuntimeError::Internal("a snapshot surface without a binding".into()))?;
        let Some(tab) = binding.surface else {
            return Err(RuntimeError::CapabilityDenied {
                surface: key.to_string(),
                capability: "observe (the user switched access off, or its tab is gone or held by another session this turn)".into(),
            });
        };
        let valid = {
            let windows = lock(&self.host().windows);
            windows.get(&binding.window_id).is_some_and(|w| {
                w.connection == Some(binding.connection)
                    && w.surfaces
                        .get(&binding.registry_surface_id)
                        .is_some_and(|e| e.generation == binding.generation && e.visible)
            })
        };
        if !valid {
            return Err(RuntimeError::Surface(surface::SurfaceError::TargetLost {
                reason: format!(
                    "{key} was hidden, closed, moved out of its group or its window disconnected; nothing else is chosen in its place"
                ),
            }));
        }
        Ok((snapshot.session.clone(), key, tab))
    }

    /// A tool call's observation, on the exact surface its snapshot names.
    pub async fn host_observe(
        &self,
        connection: ConnectionId,
        envelope: &Envelope,
        surface: Option<&SurfaceName>,
        options: &surface::ObserveOptions,
    ) -> Result<(SurfaceKey, Observation), RuntimeError> {
        let (session, key, _) = self.bound(connection, envelope, surface)?;
        let observation = self
            .observe(&session, Some(&SurfaceName::Key(key.clone())), options)
            .await?;
        Ok((key, observation))
    }

    /// A tool call's action, on the exact surface its snapshot names, through the one step path.
    pub async fn host_act(
        &self,
        connection: ConnectionId,
        envelope: &Envelope,
        surface: Option<&SurfaceName>,
        action: &ExtendedAction,
        options: &surface::ActOptions,
    ) -> Result<(SurfaceKey, surface::ActOutcome), RuntimeError> {
        let (session, key, _) = self.bound(connection, envelope, surface)?;
        let outcome = self
            .act(
                &session,
                Some(&SurfaceName::Key(key.clone())),
                action,
                options,
                Duration::ZERO,
            )
            .await?;
        Ok((key, outcome))
    }

    /// A tool call's `computer_use` run on the exact surface its snapshot names: the runner with
    /// `planner`, approvals asked of a person (the person channel) within the run's deadline.
    pub fn host_run(
        &self,
        connection: ConnectionId,
        envelope: &Envelope,
        input: &protocol::ComputerUseInput,
        planner: Box<dyn crate::Planner>,
    ) -> Result<
        (
            SurfaceKey,
            crate::RunHandle,
            tokio::task::JoinHandle<protocol::RunResult>,
        ),
        RuntimeError,
    > {
        let (session, key, _) = self.bound(connection, envelope, input.surface.as_ref())?;
        let mut request = crate::RunRequest::new(input.task.as_str());
        request.surface = Some(SurfaceName::Key(key.clone()));
        request.url = input.url.as_ref().map(|u| u.as_str().to_owned());
        request.max_steps = input.max_steps.get();
        request.max_seconds = input.max_seconds.get();
        let (handle, join) = self.start_run(&session, request, planner)?;
        Ok((key, handle, join))
    }

    /// The host's turn end of a chat session: [`Runtime::begin_host_turn_end`], then
    /// [`Runtime::finish_host_turn_end`].
    pub async fn host_turn_end(
        &self,
        connection: ConnectionId,
        chat_session_id: &str,
        turn_id: &str,
    ) -> Result<Option<crate::TurnEnded>, RuntimeError> {
        match self
            .begin_host_turn_end(connection, chat_session_id, turn_id)
            .await?
        {
            Some(ending) => self.finish_host_turn_end(ending).await.map(Some),
            None => Ok(None),
        }
    }

    /// The first half of a host's turn end, which a transport awaits in the order of the
    /// connection's messages: the turn ends here — the next turn begins (a chat command after
    /// this is that turn, and what it binds is its own) and the ended turn's snapshots resolve
    /// nothing more. `None`: that turn is not the current one (it ended before: a turn end is
    /// idempotent).
    pub async fn begin_host_turn_end(
        &self,
        connection: ConnectionId,
        chat_session_id: &str,
        turn_id: &str,
    ) -> Result<Option<TurnEnding>, RuntimeError> {
        let window_id = lock(&self.host().connections)
            .get(&connection)
            .cloned()
            .ok_or_else(|| unknown("connection", "this connection"))?;
        let session = {
            let chats = self.host().chats.lock().await;
            let chat = chats
                .get(chat_session_id)
                .filter(|c| c.window_id == window_id)
                .ok_or_else(|| unknown("chat session", chat_session_id))?;
            chat.session.clone()
        };
        let Some(ended) = crate::lifecycle::turn_number(turn_id) else {
            return Ok(None);
        };
        if self
            .session(session.as_str())?
            .advance_turn(Some(ended))
            .is_none()
        {
            return Ok(None);
        }
        lock(&self.host().snapshots).retain(|_, s| !(s.session == session && s.turn == turn_id));
        Ok(Some(TurnEnding {
            session,
            turn: turn_id.to_owned(),
        }))
    }

    /// The second half: the runtime's turn end cleanup of the ended turn (claims given back,
    /// unmarked agent tabs closed, turn-scoped marks expire, leases detached), which may run
    /// beside the next turn's messages — it leaves alone what a later turn holds.
    pub async fn finish_host_turn_end(
        &self,
        ending: TurnEnding,
    ) -> Result<crate::TurnEnded, RuntimeError> {
        let TurnEnding { session, turn } = ending;
        let report = self.end_turn(&session, &turn).await?;
        Ok(crate::TurnEnded {
            session,
            turn,
            report,
        })
    }

    /// The host closed a chat session: its Glovebox session gets the disposal cleanup (claimed
    /// tabs given back, unmarked agent tabs closed, marked ones handed to the person) and ends.
    pub async fn host_chat_close(
        &self,
        connection: ConnectionId,
        chat_session_id: &str,
    ) -> Result<crate::CleanupReport, RuntimeError> {
        let window_id = lock(&self.host().connections)
            .get(&connection)
            .cloned()
            .ok_or_else(|| unknown("connection", "this connection"))?;
        let session = {
            let mut chats = self.host().chats.lock().await;
            if chats
                .get(chat_session_id)
                .is_none_or(|c| c.window_id != window_id)
            {
                return Err(unknown("chat session", chat_session_id));
            }
            chats.remove(chat_session_id).map(|c| c.session)
        };
        let Some(session) = session else {
            return Err(unknown("chat session", chat_session_id));
        };
        lock(&self.host().snapshots).retain(|_, s| s.session != session);
        self.close_session(&session).await
    }

    /// Live snapshots, windows and registered surfaces (for status and figures).
    pub fn host_counts(&self) -> (usize, usize, usize) {
        let windows = lock(&self.host().windows);
        (
            lock(&self.host().snapshots).len(),
            windows.len(),
            windows.values().map(|w| w.surfaces.len()).sum(),
        )
    }

    /// The renderer instance a window is bound to now.
    pub fn window_renderer(&self, window_id: &str) -> Option<String> {
        lock(&self.host().windows)
            .get(window_id)
            .map(|w| w.renderer_instance_id.clone())
    }
}

fn names(context: &SurfaceContext) -> String {
    context
        .selectable_names()
        .iter()
        .map(|n| n.as_str().to_owned())
        .collect::<Vec<_>>()
        .join(", ")
}
