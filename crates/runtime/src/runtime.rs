//! `Runtime`: the one API every transport calls, a thin facade over its domains, each with its
//! own state and rules: the surface adapter, sessions and their tabs (here), write leases
//! (`lease.rs`), approvals and grants (`approval.rs`), runs (`run/`), lifecycle and turns
//! (`lifecycle/`), the host registry (`host/`), kept tabs (`webtabs.rs`), input control
//! (`control.rs`), artifacts and durable records. It is the only place that decides whether a
//! side effect may happen (`step.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use protocol::{Capability, ExtendedAction, Observation, SessionId, SurfaceName};
use surface::{ActOptions, ActOutcome, ObserveOptions, SurfaceAdapter, SurfaceError};
use tokio::sync::broadcast;

use crate::RuntimeError;
use crate::approval::Approvals;
use crate::artifacts::Artifacts;
use crate::config::RuntimeConfig;
use crate::debugger::{Attached, DebuggerLease, Retired};
use crate::events::{Event, EventKind};
use crate::lease::{HeldLease, LeaseHeld, Leases};
use crate::step::{ApprovalWait, StepAt};

/// `bytes` random bytes from the OS as hex (nonces, request ids).
pub(crate) fn random_hex(bytes: usize) -> Result<String, RuntimeError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| {
        RuntimeError::Internal(format!("the OS random number generator failed: {e}"))
    })?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A surface (a tab of a session) as the runtime names it: opaque, stable for the tab's life,
/// never reused. Transports show the model its key (`s1`, …) instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct SurfaceId(pub(crate) u64);

impl std::fmt::Display for SurfaceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "surface {}", self.0)
    }
}

/// One tab of a session, as a surface.
#[derive(Clone)]
pub(crate) struct TabEntry {
    /// Stable registry id within the runtime.
    pub(crate) surface: SurfaceId,
    /// The tab's key number in its session (`s<key>`, alias `web:<key>`): given once, never
    /// reused, so a key never comes to name another tab — not after a close, not after a browser
    /// relaunch.
    pub(crate) key: u32,
    /// The durable resource record of this tab (ownership, marks, state).
    pub(crate) resource: String,
    /// The tab's debugger lease: every DevTools operation holds it (`debugger.rs`).
    pub(crate) debugger: Arc<DebuggerLease>,
    pub(crate) capabilities: Vec<Capability>,
    /// The last turn (its number) the tab was opened, claimed or bound in: a turn's end leaves
    /// a tab a later turn holds to that turn's end.
    pub(crate) turn: u64,
    /// The key of the session's tab that opened this one (a popup it adopted).
    pub(crate) opened_by: Option<u32>,
    /// The turn (its number) in which a person linked this popup for runs (`000_…` case 26:
    /// "用户关联新 tab 后，下一 turn 创建新 run 才能控制"): a run binds a popup only in a later
    /// turn. `None` for a popup nobody linked; unused for other tabs.
    pub(crate) linked_in: Option<u64>,
}

impl TabEntry {
    /// The adapter's id of the tab.
    pub(crate) fn target(&self) -> &str {
        self.debugger.target()
    }
}

/// Who a session serves, as its transport knows it (nothing of it is a permission).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SessionClient {
    /// The name the client gave (MCP `clientInfo.name`), printable and bounded: client-given
    /// text, shown to a person beside what they approve.
    pub name: Option<String>,
    /// The client's process on this machine: the parent of a stdio server, or the process
    /// holding the other end of a loopback HTTP connection.
    pub pid: Option<u32>,
}

impl SessionClient {
    /// The longest client name kept, in characters.
    pub const NAME_MAX_CHARS: usize = 64;

    /// A client as a transport saw it; the name is made printable and cut to
    /// [`SessionClient::NAME_MAX_CHARS`].
    pub fn new(name: Option<&str>, pid: Option<u32>) -> SessionClient {
        let name = name
            .map(|n| {
                protocol::text::printable(n)
                    .chars()
                    .take(Self::NAME_MAX_CHARS)
                    .collect::<String>()
                    .trim()
                    .to_owned()
            })
            .filter(|n| !n.is_empty());
        SessionClient { name, pid }
    }
}

pub(crate) struct SessionState {
    pub(crate) context_id: Mutex<Option<String>>,
    /// Operations (observe, act, preview, runs, tab changes) hold it shared; lifecycle
    /// operations (turn end, finalize, reset, disposal) exclusively, so a finalize never runs
    /// beside a sibling browser call (`002_…` "浏览器工具必须串行执行，或通过 session-local
    /// operation queue 保护共享状态").
    pub(crate) ops: Arc<tokio::sync::RwLock<()>>,
    /// Lifecycle steps that change ownership (cleanup, claim, release) run one at a time.
    pub(crate) lifecycle: tokio::sync::Mutex<()>,
    /// Windows the session's tabs opened are adopted one adoption at a time (an action's own
    /// and the browser's report of the same window never make two tabs of it).
    pub(crate) adopting: tokio::sync::Mutex<()>,
    /// Set when disposal begins: no new operation of the session starts.
    pub(crate) closing: AtomicBool,
    pub(crate) tabs: Mutex<Vec<TabEntry>>,
    /// Every debugger lease of the session, including those of tabs that left it until their
    /// detach is done (a failed one is retried from here).
    pub(crate) debuggers: Mutex<Vec<Arc<DebuggerLease>>>,
    pub(crate) focused: Mutex<Option<SurfaceId>>,
    /// The next tab's key number (`s1`, `s2`, …; never reused in the session).
    pub(crate) next_key: std::sync::atomic::AtomicU32,
    /// How many turns of the session have ended: the current turn is `turn_<ended + 1>`. The
    /// runtime owns it, so a turn end from outside (`glovebox turn-end`, the host API) and a
    /// mark from the model name the same turn.
    pub(crate) turns_ended: AtomicU64,
    /// Whether the session's browser tools are on: off after a successful context reset until
    /// `activate_tools`; every operation of an inactive session is refused (`ToolsInactive`).
    pub(crate) tools_active: AtomicBool,
    /// Who ends the session's turns: the host API (its chat turns) or the session's own client
    /// (MCP, CLI) through `end_current_turn`. `glovebox turn-end` leaves host sessions alone.
    pub(crate) host_turns: AtomicBool,
    /// The branch (the host's turn lineage) of the session's current turn, when the host names
    /// one: tabs opened or claimed in it are recorded with it.
    pub(crate) branch: Mutex<Option<String>>,
    /// The client the session serves, as its transport knows it.
    pub(crate) client: SessionClient,
}

pub(crate) struct Inner {
    /// The surfaces' adapter (the browser connection): the one way to any surface.
    pub(crate) adapter: Arc<dyn SurfaceAdapter>,
    pub(crate) store: Arc<dyn store::Store>,
    pub(crate) instance: store::InstanceId,
    pub(crate) config: RuntimeConfig,
    pub(crate) sessions: Mutex<HashMap<String, Arc<SessionState>>>,
    pub(crate) leases: Arc<Leases>,
    pub(crate) approvals: Approvals,
    pub(crate) artifacts: Artifacts,
    /// The event stream and its sequence numbers (`events.rs`).
    pub(crate) events: crate::events::Events,
    /// Runs in flight and runs waiting for a person (`run/registry.rs`).
    pub(crate) runs: crate::run::Runs,
    /// Input scopes: agent dispatches in flight and a person's take-over, per target (`control.rs`).
    pub(crate) scopes: crate::control::Scopes,
    /// Text typed into secret fields (or prompts for one), per target: taken out of every title
    /// and address the runtime records or shows of that target, wherever the page echoes it.
    pub(crate) typed_secrets: Mutex<HashMap<String, policy::SecretRegistry>>,
    /// The last binding generation given to a person's view (`person_view.rs`).
    pub(crate) view_generation: std::sync::atomic::AtomicU64,
    /// Where tabs came from and where they are going: offered by a person, closed by Glovebox
    /// (`webtabs.rs`).
    pub(crate) provenance: crate::webtabs::Provenance,
    /// The adapter connection's own lifecycle: one reconnect at a time, stopping, stopped
    /// (`lifecycle/`).
    pub(crate) connection: crate::lifecycle::Connection,
    /// This process's instance: its lock and what its start reconciled (`incarnation.rs`).
    pub(crate) incarnation: crate::incarnation::Incarnation,
    /// The host API's windows, renderer connections, registry and turn snapshots.
    pub(crate) host: crate::host::HostRegistry,
    /// Kept tabs: their restore and the throttle of their location writes (`webtabs.rs`).
    pub(crate) keeping: crate::webtabs::Keeping,
    /// Where Glovebox itself listens (`Runtime::listening_at`): never a destination (`step.rs`).
    pub(crate) own_listeners: Mutex<Vec<std::net::SocketAddr>>,
    /// `gui_exec`: the sandbox and each session's runner (`script.rs`).
    pub(crate) scripts: crate::script::Scripts,
    /// What `/metrics` counts (`metrics.rs`).
    pub(crate) counters: crate::metrics::Counters,
    next_id: AtomicU64,
}

/// The data directory holds the records, saved site storage (cookies), artifacts and browser
/// profiles: it is created (or kept) readable by its owner alone (0700).
fn private_data_dir(dir: &std::path::Path) -> Result<(), RuntimeError> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| crate::incarnation::data_dir_error(dir, &e))?;
    set_mode(dir, 0o700);
    Ok(())
}

/// Sets `path`'s mode; one that cannot be changed (not the owner's) is said, not fatal.
fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        tracing::warn!(path = %path.display(), error = %e, "could not make it readable by its owner alone");
    }
}

/// The runtime. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SessionState {
    /// The current turn's number (`turn_<n>`).
    pub(crate) fn turn_number(&self) -> u64 {
        self.turns_ended.load(Ordering::SeqCst) + 1
    }

    /// Ends turn `only` (or whichever is current) and begins the next, atomically: a mark or a
    /// tab bound after this belongs to the next turn. `None` when `only` is not current (it
    /// ended already: a turn ends once).
    pub(crate) fn advance_turn(&self, only: Option<u64>) -> Option<u64> {
        match only {
            Some(n) => self
                .turns_ended
                .compare_exchange(n - 1, n, Ordering::SeqCst, Ordering::SeqCst)
                .ok()
                .map(|_| n),
            None => Some(self.turns_ended.fetch_add(1, Ordering::SeqCst) + 1),
        }
    }
}

impl Runtime {
    /// Starts the runtime: takes this process's lock in the data directory, opens the store
    /// while it launches or connects to the browser (a browser's start is most of a cold
    /// start: it does not wait for the store's file), reconciles the records of earlier
    /// processes that died without cleaning up (`incarnation.rs`) and sweeps orphan artifacts.
    /// A store that cannot open (a full or read-only disk) is the error named, before the
    /// browser's, and a browser started for nothing is stopped again.
    pub async fn start(
        config: RuntimeConfig,
        adapter: Arc<dyn SurfaceAdapter>,
    ) -> Result<Runtime, RuntimeError> {
        private_data_dir(&config.data_dir)?;
        let instance_lock = crate::incarnation::take_lock(&config.data_dir)?;
        let opening = {
            let config = config.clone();
            let lock_name = instance_lock.name.clone();
            tokio::task::spawn_blocking(move || open_store(&config, &lock_name))
        };
        let connected = adapter.connect().await;
        let opened = opening
            .await
            .map_err(|e| RuntimeError::Internal(format!("opening the store failed: {e}")))
            .and_then(|opened| opened);
        let (store, instance) = match (opened, connected) {
            (Ok(opened), Ok(())) => opened,
            (Err(e), connected) => {
                if connected.is_ok() {
                    adapter.shutdown();
                }
                instance_lock.remove();
                return Err(e);
            }
            (Ok((store, instance)), Err(e)) => {
                let _ = store.end_instance(instance, store::InstanceEnd::Stopped, now_ms());
                instance_lock.remove();
                return Err(e.into());
            }
        };
        let artifacts = Artifacts::new(&config.data_dir);
        let swept = artifacts.sweep(config.artifact_ttl, &[]);
        if swept > 0 {
            tracing::info!(swept, "removed unretained artifacts of orphan runs");
        }
        let (events, _) = broadcast::channel(4096);
        let runtime = Runtime {
            inner: Arc::new(Inner {
                adapter,
                approvals: Approvals::recorded(store.clone(), instance),
                store,
                instance,
                config,
                sessions: Mutex::default(),
                leases: Arc::default(),
                artifacts,
                events: crate::events::Events::new(events),
                runs: Default::default(),
                scopes: Mutex::default(),
                typed_secrets: Mutex::default(),
                view_generation: Default::default(),
                host: Default::default(),
                provenance: Default::default(),
                connection: Default::default(),
                incarnation: crate::incarnation::Incarnation {
                    lock: instance_lock,
                    reconciled: Mutex::default(),
                    fenced: Default::default(),
                },
                keeping: Default::default(),
                own_listeners: Mutex::default(),
                scripts: Default::default(),
                counters: Default::default(),
                next_id: AtomicU64::new(1),
            }),
        };
        let reconciled = runtime.reconcile_dead_instances().await?;
        runtime.keep_alive();
        runtime.prune_records();
        runtime.watch_browser();
        runtime.request_restore();
        *lock(&runtime.inner.incarnation.reconciled) = reconciled;
        Ok(runtime)
    }

    pub(crate) fn next_surface(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A new id, unique across every instance that shares the store: the time, this
    /// process's counter, and its instance.
    pub(crate) fn fresh_id(&self, prefix: &str) -> String {
        format!(
            "{prefix}_{:x}{:04x}{:x}",
            now_ms(),
            self.inner.next_id.fetch_add(1, Ordering::Relaxed) & 0xffff,
            self.inner.instance.0
        )
    }

    pub(crate) fn emit(&self, run_id: &str, kind: EventKind) {
        let event = Event {
            run_id: run_id.to_owned(),
            seq: self.inner.events.seq.fetch_add(1, Ordering::Relaxed),
            at: now_ms(),
            kind,
        };
        tracing::debug!(run_id, event = ?event.kind, "run event");
        self.count_event(&event.kind);
        let _ = self.inner.events.sender.send(event);
    }

    /// Every run event from now on.
    pub fn subscribe_events(&self) -> broadcast::Receiver<Event> {
        self.inner.events.sender.subscribe()
    }

    /// The artifact area.
    pub fn artifacts(&self) -> &Artifacts {
        &self.inner.artifacts
    }

    /// The surfaces' adapter.
    pub(crate) fn adapter(&self) -> &dyn SurfaceAdapter {
        &*self.inner.adapter
    }

    /// A new session with its own browser context (cookies and storage), unless configured to share.
    pub async fn create_session(&self) -> Result<SessionId, RuntimeError> {
        self.create_client_session(SessionClient::default()).await
    }

    /// [`Runtime::create_session`] for a known client: its name is in every approval the
    /// session asks for, and its process is how `glovebox turn-end` finds the sessions of the
    /// client whose hook it is.
    pub async fn create_client_session(
        &self,
        client: SessionClient,
    ) -> Result<SessionId, RuntimeError> {
        self.refuse_if_fenced()?;
        let id = self.fresh_id("session");
        // A browser whose start failed (or that died) is started again first, as for any other
        // operation: a session is never refused for a start that the next try would make.
        if !self.inner.config.share_browser_context {
            self.ensure_connected().await?;
        }
        let context_id = if self.inner.config.share_browser_context {
            None
        } else {
            Some(self.adapter().create_context(true).await?)
        };
        self.inner
            .store
            .create_session(&store::SessionId::new(&id), now_ms())?;
        let state = Arc::new(SessionState {
            context_id: Mutex::new(context_id),
            ops: Arc::new(tokio::sync::RwLock::new(())),
            lifecycle: tokio::sync::Mutex::new(()),
            adopting: tokio::sync::Mutex::new(()),
            closing: AtomicBool::new(false),
            tabs: Mutex::default(),
            debuggers: Mutex::default(),
            focused: Mutex::default(),
            next_key: std::sync::atomic::AtomicU32::new(1),
            turns_ended: AtomicU64::new(0),
            tools_active: AtomicBool::new(true),
            host_turns: AtomicBool::new(false),
            branch: Mutex::default(),
            client,
        });
        lock(&self.inner.sessions).insert(id.clone(), state);
        SessionId::new(id).map_err(|e| {
            RuntimeError::Internal(format!("a session id the runtime made is invalid: {e}"))
        })
    }

    /// Every session's state now (a snapshot: the map's lock is not held after).
    pub(crate) fn session_states(&self) -> Vec<Arc<SessionState>> {
        lock(&self.inner.sessions).values().cloned().collect()
    }

    pub(crate) fn session(&self, session: &str) -> Result<Arc<SessionState>, RuntimeError> {
        lock(&self.inner.sessions)
            .get(session)
            .cloned()
            .ok_or_else(|| RuntimeError::UnknownSession(session.into()))
    }

    /// Opens an agent-created tab in the session and loads `url` in it; returns its surface id.
    /// The new tab gets focus. Loading the page is a `navigate` on the one path ([`Runtime::step`]):
    /// the same scheme, origin lists, tier and approval as any navigation, judged by the
    /// destination. A page that needs a person waits up to `wait_for_person` (zero: returns
    /// `needs_approval` at once; once a person decided, the same `open_tab` proceeds once). A tab
    /// whose page is refused, denied or fails to load is closed again: nothing is left behind.
    pub async fn open_tab(
        &self,
        session: &SessionId,
        url: &str,
        wait_for_person: Duration,
    ) -> Result<SurfaceId, RuntimeError> {
        let session = session.as_str();
        let (state, _op) = self.begin(session).await?;
        let first = if url == "about:blank" {
            None
        } else {
            policy::check_navigation(url, &self.inner.config.navigation).map_err(|e| {
                RuntimeError::OriginDenied {
                    reason: e.to_string(),
                }
            })?;
            // Invalid (too long, not http/https) before any tab exists.
            // The frame id is the blank tab's, filled in once it is observed.
            let navigate = serde_json::json!({"type": "navigate", "expected_frame_id": "frame_0", "url": url, "intent": "open the tab's page"});
            Some(
                protocol::validate_extended_action(&navigate)
                    .map_err(|e| RuntimeError::InvalidAction(e.to_string()))?,
            )
        };
        let context = lock(&state.context_id).clone();
        let tab = self.adapter().open(context).await?;
        let surface = SurfaceId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        // A tab that cannot be recorded (a full disk) is nobody's: it is closed again.
        let resource = match self.record_agent_tab(session, tab.id(), url) {
            Ok(resource) => resource,
            Err(e) => {
                let _ = tab.detach(Duration::from_secs(2)).await;
                self.close_target(tab.id()).await;
                return Err(e);
            }
        };
        let debugger = DebuggerLease::new(self, session, &resource, tab.id());
        // Attached by its creation; idle from here until an operation holds it.
        debugger.adopt(tab);
        lock(&state.debuggers).push(debugger.clone());
        let key = state.next_key.fetch_add(1, Ordering::Relaxed);
        let entry = TabEntry {
            surface,
            key,
            resource,
            debugger,
            capabilities: self.adapter().capabilities(),
            turn: state.turn_number(),
            opened_by: None,
            linked_in: None,
        };
        lock(&state.tabs).push(entry.clone());
        *lock(&state.focused) = Some(surface);
        let Some(mut action) = first else {
            return Ok(surface);
        };
        // A call dropped while its page waits for a person leaves no blank tab behind.
        let mut unless_loaded = CloseUnlessKept {
            runtime: self.clone(),
            session: session.to_owned(),
            state: state.clone(),
            surface: Some(surface),
        };
        let loaded = async {
            let holder = format!("{session}/act/{}", self.next_surface());
            let held = self.acquire(&entry, session, &holder)?;
            let lease = &held.lease;
            let result = async {
                let attached = self.attach(&entry).await?;
                // The blank page's first document may be replaced while it is read (under load:
                // "Cannot find context with specified id"): a new tab has no observation of the
                // caller's to be stale, so it is read again.
                let mut tries = 0;
                let blank = loop {
                    tries += 1;
                    match attached.tab().observe(&ObserveOptions::default()).await {
                        Err(SurfaceError::Stale { .. } | SurfaceError::Unstable { .. })
                            if tries < 3 =>
                        {
                            tokio::time::sleep(Duration::from_millis(50)).await
                        }
                        read => break read?,
                    }
                };
                if let ExtendedAction::Navigate(navigate) = &mut action {
                    navigate.expected_frame_id = blank.frame_id().clone();
                }
                let wait = if wait_for_person.is_zero() {
                    ApprovalWait::No
                } else {
                    ApprovalWait::Until(Instant::now() + wait_for_person)
                };
                // The decision is for opening this URL in this session, whichever tab asks again.
                let key = format!("open\u{0}{url}");
                let at = StepAt {
                    session,
                    scope: session,
                    entry: &entry,
                    key: &format!("s{}", entry.key),
                    tab: attached.tab(),
                    lease,
                    cancel: None,
                    wait,
                    approval_key: Some(key),
                    approval_time: None,
                    confirm: None,
                    secrets: &crate::secrets::NONE,
                };
                let options = ActOptions {
                    deadline: Duration::from_secs(30),
                    ..ActOptions::default()
                };
                self.step(&at, &action, &options).await
            }
            .await;
            drop(held);
            let outcome = result?;
            match outcome.receipt.state() {
                protocol::ReceiptState::Failed => {
                    Err(RuntimeError::Surface(SurfaceError::NotActionable {
                        reason: outcome
                            .receipt
                            .detail()
                            .unwrap_or("the page did not load")
                            .to_owned(),
                    }))
                }
                _ => Ok(()),
            }
        }
        .await;
        unless_loaded.surface = None;
        match loaded {
            Ok(()) => Ok(surface),
            Err(e) => {
                // A tab that never came to be is not the session's: it does not use up a key
                // (the first real tab after an approval is `s1`), and once the browser confirmed
                // the close its row goes too, so `status` and `tabs` do not list it. A close
                // the browser did not confirm keeps its row for cleanup.
                if self.remove_tab(session, &state, surface).await == Some(true) {
                    let _ = state.next_key.compare_exchange(
                        key + 1,
                        key,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                    if let Err(discard) = self
                        .inner
                        .store
                        .discard_resource(&store::ResourceId::new(&entry.resource))
                    {
                        tracing::warn!(error = %discard, "the row of a tab that did not open stays");
                    }
                    self.audit(
                        session,
                        "tab_open_failed",
                        &serde_json::json!({"tab": entry.resource, "code": e.code().as_str()})
                            .to_string(),
                    );
                }
                Err(e)
            }
        }
    }

    /// Closes one of the session's tabs. Its lease dies with it; later use is `target_lost`.
    pub async fn close_tab(
        &self,
        session: &SessionId,
        surface: SurfaceId,
    ) -> Result<(), RuntimeError> {
        let session = session.as_str();
        let (state, _op) = self.begin(session).await?;
        match self.remove_tab(session, &state, surface).await {
            Some(true) => Ok(()),
            // "Closed" means the browser said so (issue 35: a frozen browser's tab was reported
            // closed). The tab has left the session either way; its record waits for cleanup.
            Some(false) => Err(RuntimeError::Surface(SurfaceError::BackendUnavailable {
                reason: "the browser did not confirm the tab closed; it left this session and is recorded for cleanup, which retries the close at the next lifecycle operation".into(),
            })),
            None => Err(RuntimeError::UnknownSurface {
                name: format!("surface {surface}"),
                known: String::new(),
            }),
        }
    }

    /// Takes a tab out of the session and closes it (inside an operation): whether the browser
    /// confirmed the close; `None` if the session has no such tab.
    async fn remove_tab(
        &self,
        session: &str,
        state: &SessionState,
        surface: SurfaceId,
    ) -> Option<bool> {
        let entry = {
            let mut tabs = lock(&state.tabs);
            let index = tabs.iter().position(|t| t.surface == surface)?;
            tabs.remove(index)
        };
        if lock(&state.focused).is_some_and(|f| f == surface) {
            *lock(&state.focused) = None;
        }
        self.inner.leases.invalidate(entry.target());
        entry.debugger.detach(Some(Retired::Closed)).await;
        Some(self.close_resource(session, &entry).await)
    }

    /// Starts an operation of the session: refused while the runtime stops; waits (bounded)
    /// for a lifecycle operation of the session to finish; re-establishes a dropped browser
    /// connection (never in a loop); retries debugger detaches that failed. The guard is held
    /// for the whole operation.
    pub(crate) async fn begin(
        &self,
        session: &str,
    ) -> Result<(Arc<SessionState>, tokio::sync::OwnedRwLockReadGuard<()>), RuntimeError> {
        self.refuse_if_fenced()?;
        if self.inner.connection.stopping.load(Ordering::SeqCst) {
            return Err(RuntimeError::Surface(SurfaceError::BackendUnavailable {
                reason: "the runtime is shutting down".into(),
            }));
        }
        let state = self.session(session)?;
        let op = tokio::time::timeout(
            self.inner.config.lifecycle_wait,
            state.ops.clone().read_owned(),
        )
        .await
        .map_err(|_| RuntimeError::LeaseConflict {
            holder: "a lifecycle operation of this session (turn end, finalize, reset or disposal)"
                .into(),
        })?;
        if state.closing.load(Ordering::SeqCst) {
            return Err(RuntimeError::UnknownSession(format!("{session} (closed)")));
        }
        if !state.tools_active.load(Ordering::SeqCst) {
            return Err(RuntimeError::ToolsInactive);
        }
        self.ensure_connected().await?;
        self.retry_failed_detaches(&state).await;
        Ok((state, op))
    }

    /// A dropped browser connection is re-established by the next operation.
    pub(crate) async fn ensure_connected(&self) -> Result<(), RuntimeError> {
        // Always through the lock: a reconnect in progress may have its connection up already
        // while the sessions' contexts are still being made again (issue 35: a call that saw
        // the open connection used a context of the dead browser). Uncontended, it costs nothing.
        let _one = self.inner.connection.reconnecting.lock().await;
        if self.adapter().closed_reason().is_some() {
            self.reconnect_now().await?;
        }
        Ok(())
    }

    /// Retries the session's failed debugger detaches; leases with nothing left are dropped.
    pub(crate) async fn retry_failed_detaches(&self, state: &SessionState) {
        let leases: Vec<Arc<DebuggerLease>> = lock(&state.debuggers).clone();
        for lease in leases.iter().filter(|l| l.has_failed_detach()) {
            lease.retry().await;
        }
        lock(&state.debuggers).retain(|l| !l.finished());
    }

    /// Holds the tab's debugger lease for one operation (attaching on demand).
    pub(crate) async fn attach(&self, entry: &TabEntry) -> Result<Attached, RuntimeError> {
        entry.debugger.acquire().await
    }

    /// Sets which surfaces the user lets the agent use: a surface without `observe` is listed
    /// but shows no content; `interact` and `navigate` need `observe`.
    pub fn set_capabilities(
        &self,
        session: &SessionId,
        surface: SurfaceId,
        mut capabilities: Vec<Capability>,
    ) -> Result<(), RuntimeError> {
        let session = session.as_str();
        if capabilities.iter().any(|c| *c != Capability::Observe)
            && !capabilities.contains(&Capability::Observe)
        {
            return Err(RuntimeError::InvalidAction(
                "interact and navigate need observe".into(),
            ));
        }
        capabilities.sort();
        capabilities.dedup();
        let state = self.session(session)?;
        let mut tabs = lock(&state.tabs);
        let entry = tabs
            .iter_mut()
            .find(|t| t.surface == surface)
            .ok_or_else(|| RuntimeError::UnknownSurface {
                name: format!("surface {surface}"),
                known: String::new(),
            })?;
        entry.capabilities = capabilities;
        Ok(())
    }

    /// A person's access switch for one tab of a session (person channel, host API): `observe`
    /// refuses writes, `off` lists the tab without content or tool. Never a tool's to call.
    pub fn set_access(
        &self,
        session: &SessionId,
        surface: SurfaceId,
        access: crate::Access,
    ) -> Result<(), RuntimeError> {
        self.set_capabilities(session, surface, access.capabilities())
    }

    /// Moves focus (affects the next turn's aliases, never a running lease).
    pub fn focus(&self, session: &SessionId, surface: SurfaceId) -> Result<(), RuntimeError> {
        let session = session.as_str();
        *lock(&self.session(session)?.focused) = Some(surface);
        Ok(())
    }

    /// Resolves a surface name (`s1`, `web:2`, `focused`) or the primary surface to one tab.
    pub(crate) fn resolve(
        &self,
        session: &str,
        name: Option<&SurfaceName>,
    ) -> Result<(Arc<SessionState>, TabEntry, String), RuntimeError> {
        let state = self.session(session)?;
        let tabs = lock(&state.tabs).clone();
        let focused = *lock(&state.focused);
        let known =
            || crate::turn_surfaces::names(&tabs, focused, self.inner.adapter.kind()).join(", ");
        let index = match name {
            Some(name) => crate::turn_surfaces::lookup(
                &tabs,
                focused,
                self.inner.adapter.kind(),
                name.as_str(),
            )
            .ok_or_else(|| RuntimeError::UnknownSurface {
                name: name.as_str().to_owned(),
                known: known(),
            })?,
            None if tabs.is_empty() => return Err(RuntimeError::NoSurface),
            None => crate::turn_surfaces::primary(&tabs, focused)
                .ok_or_else(|| RuntimeError::AmbiguousSurface { known: known() })?,
        };
        let key = format!("s{}", tabs[index].key);
        Ok((state, tabs[index].clone(), key))
    }

    /// The surface id a key or alias names in this session, as `resolve` reads it (the one
    /// lookup every transport uses; none keeps its own copy of the session's tabs).
    pub fn surface_id(
        &self,
        session: &SessionId,
        name: &SurfaceName,
    ) -> Result<SurfaceId, RuntimeError> {
        let session = session.as_str();
        Ok(self.resolve(session, Some(name))?.1.surface)
    }

    /// The key (`s1`, …) a surface of this session has now.
    pub fn surface_key(&self, session: &SessionId, surface: SurfaceId) -> Option<String> {
        let session = session.as_str();
        let state = self.session(session).ok()?;
        let tabs = lock(&state.tabs);
        tabs.iter()
            .find(|t| t.surface == surface)
            .map(|t| format!("s{}", t.key))
    }

    /// The session's keys (`s2`, …) of the windows an action opened (`ActOutcome::opened`), in
    /// its order; a window the session does not hold (closed already) is left out.
    pub fn opened_keys(&self, session: &SessionId, opened: &[String]) -> Vec<String> {
        let Ok(state) = self.session(session.as_str()) else {
            return Vec::new();
        };
        let tabs = lock(&state.tabs);
        opened
            .iter()
            .filter_map(|target| tabs.iter().find(|t| t.target() == target.as_str()))
            .map(|t| format!("s{}", t.key))
            .collect()
    }

    /// Observes a surface (read barrier; no write lease needed).
    pub async fn observe(
        &self,
        session: &SessionId,
        surface: Option<&SurfaceName>,
        options: &ObserveOptions,
    ) -> Result<Observation, RuntimeError> {
        let session = session.as_str();
        let _op = self.begin(session).await?;
        let (state, entry, key) = self.resolve(session, surface)?;
        require(&entry, Capability::Observe, &key)?;
        let observed = async { Ok(self.attach(&entry).await?.tab().observe(options).await?) }.await;
        if let Ok(o) = &observed {
            self.note_observed(entry.target(), o.title());
        }
        self.forget_if_lost(session, &state, &entry, observed).await
    }

    /// Passes `result` on; when it says the tab is lost and the browser no longer lists the tab
    /// (closed from outside, crashed), the session lets the tab go first: it leaves the surface
    /// list and its record is released, so nothing describes a dead tab as alive. A tab the
    /// browser still lists is never touched here.
    pub(crate) async fn forget_if_lost<T>(
        &self,
        session: &str,
        state: &SessionState,
        entry: &TabEntry,
        result: Result<T, RuntimeError>,
    ) -> Result<T, RuntimeError> {
        if result
            .as_ref()
            .err()
            .is_some_and(|e| e.code() == protocol::ErrorCode::TargetLost)
            && let Ok(listed) = self.adapter().list().await
            && !listed.iter().any(|t| t.id == entry.target())
        {
            tracing::info!(session, resource = %entry.resource, "a tab of the session is gone; it leaves the session");
            self.remove_tab(session, state, entry.surface).await;
        }
        result
    }

    /// One action outside a run (the MCP `act` tool, the host API): a run of one step. The exact
    /// tab is bound, its write lease taken for this call alone (another direct call of the same
    /// session on the same tab is waited for, within the action's deadline; a run's lease is a
    /// conflict), then [`Runtime::step`] checks freshness, capability, origin and tier. An action
    /// that needs a person waits up to `wait_for_person` (zero: returns `needs_approval` at once;
    /// once a person decided, the identical action sent again proceeds exactly once).
    pub async fn act(
        &self,
        session: &SessionId,
        surface: Option<&SurfaceName>,
        action: &ExtendedAction,
        options: &ActOptions,
        wait_for_person: Duration,
    ) -> Result<ActOutcome, RuntimeError> {
        let session = session.as_str();
        let _op = self.begin(session).await?;
        let (state, entry, key) = self.resolve(session, surface)?;
        let direct = format!("{session}/act/");
        let holder = format!("{direct}{}", self.next_surface());
        let held = self
            .acquire_waiting(&entry, session, &holder, &direct, options.deadline)
            .await?;
        let result = async {
            let attached = self.attach(&entry).await?;
            let wait = if wait_for_person.is_zero() {
                ApprovalWait::No
            } else {
                ApprovalWait::Until(Instant::now() + wait_for_person)
            };
            let at = StepAt {
                session,
                scope: session,
                entry: &entry,
                key: &key,
                tab: attached.tab(),
                lease: &held.lease,
                cancel: None,
                wait,
                approval_key: None,
                approval_time: None,
                confirm: None,
                secrets: &crate::secrets::NONE,
            };
            self.step(&at, action, options).await
        }
        .await;
        drop(held);
        self.forget_if_lost(session, &state, &entry, result).await
    }

    /// Takes the tab's write lease for `holder` (of `session`), kept alive until the returned
    /// guard drops.
    pub(crate) fn acquire(
        &self,
        entry: &TabEntry,
        session: &str,
        holder: &str,
    ) -> Result<HeldLease, RuntimeError> {
        self.take_lease(entry, holder)
            .map_err(|held| self.lease_conflict(session, &held))
    }

    /// The lease, or who holds it.
    fn take_lease(&self, entry: &TabEntry, holder: &str) -> Result<HeldLease, LeaseHeld> {
        let domain = self.inner.adapter.input_domain(entry.target());
        HeldLease::take(
            &self.inner.leases,
            entry.target(),
            &domain.0,
            holder,
            self.inner.config.lease_ttl,
        )
    }

    /// A lease conflict as `session` is told it: its own run by id, its own calls as such, and
    /// another session's work without that session's ids (issue 35: one client learnt another's).
    fn lease_conflict(&self, session: &str, held: &LeaseHeld) -> RuntimeError {
        let (elsewhere, held) = (held.elsewhere, held.holder.as_str());
        let holder = if held.starts_with(&format!("{session}/")) {
            "an earlier call of this session".to_owned()
        } else if self.inner.runs.session_of(held).as_deref() == Some(session) {
            format!("run {held} of this session")
        } else if self.inner.runs.session_of(held).is_some() {
            "a run of another session".to_owned()
        } else {
            "another session".to_owned()
        };
        let holder = if elsewhere {
            // One keyboard and mouse for the whole domain: another surface's writer holds it.
            format!("{holder} (writing another surface that shares this one's keyboard and mouse)")
        } else {
            holder
        };
        RuntimeError::LeaseConflict { holder }
    }

    /// Takes the tab's lease, waiting (up to `patience`) while a holder whose name starts with
    /// `queue` has it: direct calls of one session queue behind each other instead of taking
    /// each other's lease.
    async fn acquire_waiting(
        &self,
        entry: &TabEntry,
        session: &str,
        holder: &str,
        queue: &str,
        patience: Duration,
    ) -> Result<HeldLease, RuntimeError> {
        let until = Instant::now() + patience;
        loop {
            let released = self.inner.leases.released();
            match self.take_lease(entry, holder) {
                Err(held) if held.holder.starts_with(queue) && Instant::now() < until => {
                    let _ = tokio::time::timeout_at(until.into(), released).await;
                }
                Err(held) => return Err(self.lease_conflict(session, &held)),
                Ok(lease) => return Ok(lease),
            }
        }
    }
}

/// Closes a tab that `open_tab` made, unless the open got as far as deciding about its page
/// (then the open itself keeps or closes it): its future may be dropped while it waits.
struct CloseUnlessKept {
    runtime: Runtime,
    session: String,
    state: Arc<SessionState>,
    surface: Option<SurfaceId>,
}

impl Drop for CloseUnlessKept {
    fn drop(&mut self) {
        let Some(surface) = self.surface.take() else {
            return;
        };
        let (runtime, session, state) = (
            self.runtime.clone(),
            std::mem::take(&mut self.session),
            self.state.clone(),
        );
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                runtime.remove_tab(&session, &state, surface).await;
            });
        }
    }
}

pub(crate) fn require(
    entry: &TabEntry,
    capability: Capability,
    key: &str,
) -> Result<(), RuntimeError> {
    if entry.capabilities.contains(&capability) {
        Ok(())
    } else {
        let name = serde_json::to_value(capability)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        Err(RuntimeError::CapabilityDenied {
            surface: key.to_owned(),
            capability: name,
        })
    }
}

/// Less than this is free on a data directory's filesystem: a store that failed there failed
/// for want of room.
const ROOM_NEEDED: u64 = 1 << 20;

/// Whether the filesystem of `dir` has less than [`ROOM_NEEDED`] free for this user.
fn short_of_room(dir: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a NUL-terminated string and `stat` a zeroed struct statvfs fills in.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return false;
    }
    stat.f_bavail.saturating_mul(stat.f_frsize) < ROOM_NEEDED
}

/// The store the configuration names, with this process's instance begun in it: PostgreSQL
/// at `store_url` (shared by instances), or SQLite in the data directory (readable by the
/// owner alone). A full or read-only disk, and a database that cannot be reached, are named as
/// such. SQLite names the disk full only where its own write ran out (with a little room left
/// a later write says "disk I/O error"; the browser starting beside the store on the same disk
/// leaves such room or not), so the filesystem's free space decides.
fn open_store(
    config: &RuntimeConfig,
    lock_name: &str,
) -> Result<(Arc<dyn store::Store>, store::InstanceId), RuntimeError> {
    use store::Store as _;
    if let Some(url) = &config.store_url {
        let store = store::PgStore::connect(&url.0)?;
        let instance = store.begin_instance(now_ms(), Some(lock_name))?;
        return Ok((Arc::new(store), instance));
    }
    let db = config.data_dir.join("glovebox.sqlite");
    let named = |e: store::StoreError| match &e {
        _ if e.is_disk_full() || short_of_room(&config.data_dir) => {
            crate::incarnation::data_dir_error(&db, &std::io::ErrorKind::StorageFull.into())
        }
        store::StoreError::Io(io) => crate::incarnation::data_dir_error(&db, io),
        _ => e.into(),
    };
    let store = store::SqliteStore::open(&db).map_err(named)?;
    let instance = store
        .begin_instance(now_ms(), Some(lock_name))
        .map_err(named)?;
    // The records hold what happened on every page: the owner's alone.
    for file in [
        "glovebox.sqlite",
        "glovebox.sqlite-wal",
        "glovebox.sqlite-shm",
    ] {
        let path = config.data_dir.join(file);
        if path.exists() {
            set_mode(&path, 0o600);
        }
    }
    Ok((Arc::new(store), instance))
}
