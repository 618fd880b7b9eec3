//! The seam: [`SurfaceAdapter`] is a source of surfaces (one browser connection, one X display,
//! one VM host) and [`Surface`] one attached surface of it (a tab, a window, a guest screen).
//! The runtime reaches every surface through these two traits and nothing else; each adapter
//! keeps its protocol (CDP, X11, a guest's HTTP) inside its own crate.
//!
//! What the runtime asks of an adapter: identity (ids that name exactly one surface, listed and
//! re-checked before a side effect), isolation contexts for sessions, opening and closing
//! surfaces, attaching and detaching (an attachment is an operation-level resource the runtime
//! leases), observe/preview/act on an attached surface, the input domain an action's write lease
//! serialises on, a person's live view with their input, and keeping and restoring what a kept
//! surface needs to come back (a site's cookies and storage for a tab).
//!
//! The traits are object-safe (`Arc<dyn SurfaceAdapter>`): futures are boxed ([`BoxFuture`]).

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use protocol::extended::Locator;
use protocol::{Capability, ExtendedAction, InputRoute, Observation, Preview, SurfaceKind};

use crate::{
    ActOptions, ActOutcome, CastFrame, Dialog, FrameRecord, LocatedFacts, NetworkHold,
    ObserveOptions, PersonInput, SurfaceError,
};

/// A boxed `Send` future: what the traits' async methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A surface as its backend lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurfaceInfo {
    /// The backend's id of the surface (a CDP target id, an X window id): names exactly one
    /// surface for its life.
    pub id: String,
    /// A top-level surface the runtime may track (a page; not a worker or a frame).
    pub top_level: bool,
    /// Its address (unredacted: for the runtime's records, which redact it themselves).
    pub url: String,
    /// Its title; empty while it has none yet.
    pub title: String,
    /// The isolation context it lives in (`None`: the backend's default one).
    pub context: Option<String>,
    /// How input reaches it, as the backend measured it now.
    pub input: Vec<InputRoute>,
    /// What kind of surface it is (a tab; a window, or the whole screen, of a display).
    pub kind: SurfaceKind,
    /// The surface that opened this one (a popup's opener tab), when the backend names one.
    pub opener: Option<String>,
}

/// What the backend reports about its surfaces while its connection lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SurfaceEvent {
    /// A surface committed a navigation or changed its title.
    Changed(SurfaceInfo),
    /// A surface is gone (closed by anyone, crashed).
    Destroyed(String),
}

/// The events of one backend connection; `recv` answers `None` once that connection ended.
pub type SurfaceEvents = tokio::sync::mpsc::Receiver<SurfaceEvent>;

/// How a dropped connection came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reconnected {
    /// The same backend (a remote browser, a connection that blinked): its surfaces live on;
    /// attachments went with the old connection and come back on demand.
    Same,
    /// A new backend process (a launched browser relaunched): every surface of the old one died
    /// with it, and so did every isolation context.
    Relaunched,
}

/// What the conflict domain of a write is: two writes in one domain never overlap. A tab is its
/// own domain; XTest is one keyboard and mouse per display, so every window of a display shares
/// the display's; a guest has one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InputDomain(pub String);

/// What a surface remembers across attachments (its latest frame, refs, secrets typed into it):
/// opaque to the runtime, handed back to the adapter at the next attach.
#[derive(Clone)]
pub struct SurfaceMemory(pub Arc<dyn Any + Send + Sync>);

impl std::fmt::Debug for SurfaceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Memory may hold secrets: never in a log.
        f.write_str("SurfaceMemory(..)")
    }
}

/// A kept surface's site state (a tab's cookies and local storage) as the adapter saved it: the
/// origin it belongs to, and the rest opaque (the runtime stores it as one 0600 file).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KeptSite {
    pub origin: String,
    #[serde(flatten)]
    pub state: serde_json::Map<String, serde_json::Value>,
}

/// A source of surfaces (see the module docs).
pub trait SurfaceAdapter: Send + Sync {
    /// The kind of surface it gives.
    fn kind(&self) -> SurfaceKind;

    /// Connects (launches a local backend or reaches a remote one). Called once, by the
    /// runtime's start, while its store opens.
    fn connect(&self) -> BoxFuture<'_, Result<(), SurfaceError>>;

    /// Why the current connection is down, or `None` while it is up.
    fn closed_reason(&self) -> Option<String>;

    /// Whether a backend process the adapter launched has died (a remote one never counts).
    fn process_dead(&self) -> bool;

    /// The pid of a backend process the adapter launched.
    fn pid(&self) -> Option<u32>;

    /// Whether the adapter launched its backend (then it can relaunch it after a death).
    fn launched(&self) -> bool;

    /// Re-establishes a dropped connection (relaunching a launched backend that died).
    fn reconnect(&self) -> BoxFuture<'_, Result<Reconnected, SurfaceError>>;

    /// Ends the connection; a launched backend process is stopped. Later calls fail with
    /// `backend_unavailable`.
    fn shutdown(&self);

    /// The events of the current connection (locations, titles, surfaces gone); `None` when
    /// the backend cannot report them.
    fn events(&self) -> BoxFuture<'_, Option<SurfaceEvents>>;

    /// A fresh isolation context (cookies, storage) for a session; `with_connection`: it goes
    /// when the connection does.
    fn create_context(&self, with_connection: bool) -> BoxFuture<'_, Result<String, SurfaceError>>;

    /// Disposes a context unless a top-level surface is still open in it (a surface handed over
    /// to a person stays, and its context with it).
    fn dispose_context_if_empty(&self, context: String) -> BoxFuture<'_, ()>;

    /// A new blank surface in `context`, attached (its viewport fitted to the configured size).
    fn open(
        &self,
        context: Option<String>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>>;

    /// A new surface at `url` in `context`, not attached (a person's own tab, a restored one);
    /// `background`: it does not take the person's focus. Returns its id.
    fn open_detached(
        &self,
        url: String,
        context: Option<String>,
        background: bool,
    ) -> BoxFuture<'_, Result<String, SurfaceError>>;

    /// Attaches to the surface `id`, resuming what the last attachment remembered.
    fn attach(
        &self,
        id: String,
        memory: Option<SurfaceMemory>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>>;

    /// Every surface the backend lists now.
    fn list(&self) -> BoxFuture<'_, Result<Vec<SurfaceInfo>, SurfaceError>>;

    /// Closes the surface `id` and waits (within `deadline`) until the backend reports it gone:
    /// `true` only when it is closed.
    fn close(&self, id: String, deadline: Duration) -> BoxFuture<'_, bool>;

    /// The conflict domain of writes to surface `id` (see [`InputDomain`]).
    fn input_domain(&self, id: &str) -> InputDomain;

    /// The capabilities a new surface of this adapter starts with.
    fn capabilities(&self) -> Vec<Capability> {
        vec![
            Capability::Observe,
            Capability::Interact,
            Capability::Navigate,
        ]
    }

    /// The web addresses through which the backend itself is controlled (a browser's DevTools
    /// endpoint): whoever loads them drives every surface, so they are never a destination of an
    /// agent's action, whatever policy would say of their origin.
    fn control_endpoints(&self) -> Vec<String> {
        Vec::new()
    }

    /// What the operator's `/metrics` and `/readyz` show of the backend: its protocol, whether
    /// it is connected now, and, where the adapter times them, its requests' round trips.
    fn backend_metrics(&self) -> crate::metrics::BackendMetrics {
        crate::metrics::BackendMetrics {
            protocol: "none",
            connected: self.closed_reason().is_none(),
            round_trips: None,
            pool: None,
        }
    }

    /// A read-only image of surface `id` for a person (JPEG bytes), through a short attachment of
    /// its own: never an agent's, never an input.
    fn person_image(&self, id: String) -> BoxFuture<'_, Result<Vec<u8>, SurfaceError>>;

    /// A person's live view of surface `id`: its own attachment, frames out, the person's input in.
    fn person_view(&self, id: String) -> BoxFuture<'_, Result<Box<dyn PersonCast>, SurfaceError>>;

    /// Saves the site state a kept surface needs to come back, for the page at `url` in
    /// `context`: what the backend holds per context (cookies), and what only the surface holds
    /// (local storage) when `surface` is attached; without it, `previous`'s part of that stays.
    /// `None` when nothing could be read. By default nothing is kept: a backend whose surfaces
    /// hold their own state (a window's application, a guest) has none to save.
    fn keep_site<'a>(
        &'a self,
        context: Option<String>,
        url: &'a str,
        surface: Option<&'a dyn Surface>,
        previous: Option<KeptSite>,
    ) -> BoxFuture<'a, Option<KeptSite>> {
        let _ = (context, url, surface, previous);
        Box::pin(async { None })
    }

    /// Puts a kept site's state back into `context` before its surfaces reopen (by default
    /// there is none to put back).
    fn restore_site<'a>(
        &'a self,
        kept: &'a KeptSite,
        context: Option<String>,
    ) -> BoxFuture<'a, Result<(), SurfaceError>> {
        let _ = (kept, context);
        Box::pin(async { Ok(()) })
    }
}

/// One attached surface (see the module docs). Observation and action never overlap on it.
pub trait Surface: Send + Sync {
    /// The backend's id of the surface.
    fn id(&self) -> &str;

    /// The adapter's own type behind the trait object: an adapter reaches its own surfaces'
    /// internals through it (`keep_site` reads a tab's storage), nobody else.
    fn as_any(&self) -> &dyn Any;

    /// Why the attachment stopped working (closed, crashed, detached from outside), if it did.
    fn lost(&self) -> Option<String>;

    /// A bounded, redacted observation with refs and a fresh frame id.
    fn observe<'a>(
        &'a self,
        options: &'a ObserveOptions,
    ) -> BoxFuture<'a, Result<Observation, SurfaceError>>;

    /// The turn-start preview (no screenshot, no refs), within `deadline`.
    fn preview(&self, deadline: Duration) -> BoxFuture<'_, Preview>;

    /// Runs one action the runtime already judged; `Err` means nothing was sent.
    fn act<'a>(
        &'a self,
        action: &'a ExtendedAction,
        options: &'a ActOptions,
    ) -> BoxFuture<'a, Result<ActOutcome, SurfaceError>>;

    /// The latest observation's record: the frame an action must name.
    fn latest_frame(&self) -> Option<Arc<dyn FrameRecord>>;

    /// What a locator resolves to now in `frame`'s document (judged before an action).
    fn locate<'a>(
        &'a self,
        frame: &'a dyn FrameRecord,
        locator: &'a Locator,
    ) -> BoxFuture<'a, Option<LocatedFacts>>;

    /// Lets go of held keys and buttons (a cancelled run, a person's take-over).
    fn release_input(&self) -> BoxFuture<'_, Result<(), SurfaceError>>;

    /// How input reaches the surface, as measured by its latest observation or action (a
    /// browser tab takes input over its debugging protocol, whatever has the screen's focus).
    fn input_routes(&self) -> Vec<InputRoute> {
        vec![InputRoute::BackgroundInput]
    }

    /// What kind of surface this is, when it is not its adapter's usual kind (the whole screen
    /// among a display's windows).
    fn surface_kind(&self) -> Option<SurfaceKind> {
        None
    }

    /// A dialog blocking the surface, if one is open.
    fn dialog(&self) -> Option<Dialog>;

    /// Ends the attachment without closing the surface, within `deadline`.
    fn detach(&self, deadline: Duration) -> BoxFuture<'_, Result<(), SurfaceError>>;

    /// What the next attachment resumes from (see [`SurfaceMemory`]).
    fn memory(&self) -> SurfaceMemory;

    /// From now on, none of `secrets` (values a person gave a run, which it may type) leaves the
    /// surface in an observation, a preview or an image, wherever the page shows them — before
    /// they are typed as after — and the surface's memory keeps them so. Texts shorter than
    /// `policy::MIN_SECRET_CHARS` are refused by the caller before they get here.
    fn scrub(&self, secrets: &[String]);

    /// Whether the surface holds text the agent typed and its network is held for it (see
    /// [`NetworkHold`]). While it does, the runtime keeps it attached: the hold is enforced by
    /// the attachment. `None` for surfaces without a network boundary.
    fn network_hold(&self) -> Option<NetworkHold> {
        None
    }

    /// Lets a held surface's requests reach `origin` too (a person allowed it for this
    /// surface). `false`: nothing is held.
    fn allow_origin(&self, origin: &policy::Origin) -> bool {
        let _ = origin;
        false
    }
}

/// A person's live view of one surface: its own attachment, never an agent's.
pub trait PersonCast: Send + Sync {
    /// Starts (or resumes) the picture.
    fn start(&mut self) -> BoxFuture<'_, Result<(), SurfaceError>>;
    /// Stops the picture (the view is hidden): no capture costs the surface.
    fn stop(&mut self) -> BoxFuture<'_, Result<(), SurfaceError>>;
    /// The next frame; the previous one is acknowledged first, no sooner than `min_interval`
    /// after it was delivered (frames are single-flight). Waits while stopped. Cancel-safe.
    fn next_frame(
        &mut self,
        min_interval: Duration,
    ) -> BoxFuture<'_, Result<CastFrame, SurfaceError>>;
    /// A handle for input and liveness, usable beside the frames.
    fn entry(&self) -> Arc<dyn PersonEntry>;
}

/// A person's entry into a surface: their input, dispatched as theirs.
pub trait PersonEntry: Send + Sync {
    /// Whether the surface answers within `deadline` (a stuck page is not live).
    fn alive(&self, deadline: Duration) -> BoxFuture<'_, bool>;
    /// Dispatches a checked input ([`PersonInput::check`]).
    fn input(&self, input: PersonInput) -> BoxFuture<'_, Result<(), SurfaceError>>;
}
