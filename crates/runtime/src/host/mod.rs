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

mod registry;
mod turns;

fn names(context: &SurfaceContext) -> String {
    context
        .selectable_names()
        .iter()
        .map(|n| n.as_str().to_owned())
        .collect::<Vec<_>>()
        .join(", ")
}
