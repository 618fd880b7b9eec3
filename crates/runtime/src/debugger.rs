//! Debugger leases (`002_…` "Debugger lease 生命周期"): a tab's attachment (a CDP session for a browser tab) is an
//! operation-level resource, recorded apart from the tab's ownership and marks. It is not the
//! write lease of `lease.rs` (who may act on a tab); it is whether Glovebox holds a DevTools
//! session on it at all.
//!
//! Every operation that needs DevTools (observe, act, preview, a run) holds the tab's lease for
//! its duration through an [`Attached`] guard: the first holder attaches, later ones share the
//! attachment (a reference count). When the last holder lets go, an idle timer starts; after
//! `RuntimeConfig::debugger_idle_detach` without a new holder the lease detaches, and an
//! operation inside that window cancels the detach. The next operation attaches again on demand
//! (never in the background), and the tab remembers its latest observation across the gap
//! (`surface::SurfaceMemory`). A turn's end detaches every lease of the session, marked tabs
//! included — except a tab that holds what the agent typed (`Surface::network_hold`): its
//! network boundary is enforced through the attachment, so it stays attached (no idle detach,
//! none at a turn's end) until the hold ends, the tab closes or it leaves the session; a detach asked for while operations hold the lease happens when the last one lets
//! go — never under a holder. Attach and detach of one tab never overlap, so a tab has at most
//! one attachment. A detach that gets no answer leaves a recovery record in the store; the
//! attachment is kept aside and the detach is retried before the tab is attached again (at the
//! session's next operation) or at the session's next lifecycle operation or disposal.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::Serialize;
use store::{NewRecovery, RecoveryKind};
use surface::{Surface, SurfaceError, SurfaceMemory};

use crate::runtime::{Inner, Runtime, now_ms};
use crate::{Cancel, RuntimeError};

/// Used when the runtime is gone and its configuration with it.
const FALLBACK_DETACH_TIMEOUT: Duration = Duration::from_secs(3);

/// How often a held attachment is checked for the end of its hold, at least.
const HOLD_RECHECK: Duration = Duration::from_secs(1);

/// One tab's debugger lease as `browser_status` reports it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DebuggerLeaseStatus {
    /// The tab's resource id.
    pub resource: String,
    /// Operations holding the lease right now.
    pub refs: usize,
    /// Glovebox holds a DevTools session on the tab.
    pub attached: bool,
    /// When the current attachment began (ms since the epoch).
    pub attached_since_ms: Option<u64>,
    /// When the last holder let go of a still-attached lease: the idle detach is pending.
    pub idle_since_ms: Option<u64>,
    /// A detach was asked for while operations held the lease; it happens when they let go.
    pub detach_pending: bool,
    /// A detach got no answer; it is retried (a recovery record says so).
    pub detach_failed: bool,
    /// The tab holds what the agent typed, and stays attached to keep its network held.
    pub network_held: bool,
    /// Attachments made over the lease's life.
    pub attaches: u64,
    /// Detaches completed over the lease's life.
    pub detaches: u64,
}

/// Why a lease will never attach again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retired {
    /// The tab is closing or closed: its session goes with it, nothing to detach.
    Closed,
    /// The tab left the session (released, handed over): detach, never attach again.
    Left,
}

/// What a forced detach did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detach {
    Detached,
    NotAttached,
    /// Operations hold the lease: it detaches when the last one lets go.
    Deferred,
    /// The tab holds what the agent typed: it stays attached until the hold ends.
    Held,
    /// No answer in time: a recovery record was left.
    Failed,
}

/// A detach that got no answer: the attachment is kept aside until a retry succeeds.
struct Failed {
    tab: Arc<dyn Surface>,
    recovery: Option<store::RecoveryId>,
}

#[derive(Default)]
struct Slot {
    tab: Option<Arc<dyn Surface>>,
    /// What the last attachment remembered, for the next one.
    memory: Option<SurfaceMemory>,
    refs: usize,
    /// Bumped by every acquire and every release to zero: an idle timer only detaches if the
    /// generation it was started for is still current.
    generation: u64,
    timer: Option<Cancel>,
    attached_since: Option<u64>,
    idle_since: Option<u64>,
    detach_pending: bool,
    retired: Option<Retired>,
    failed: Option<Failed>,
    attaches: u64,
    detaches: u64,
}

impl Slot {
    fn take_tab(&mut self) -> Option<Arc<dyn Surface>> {
        let tab = self.tab.take();
        if let Some(tab) = &tab {
            self.memory = Some(tab.memory());
        }
        self.attached_since = None;
        self.idle_since = None;
        tab
    }

    fn cancel_timer(&mut self) {
        self.generation += 1;
        if let Some(timer) = self.timer.take() {
            timer.cancel();
        }
    }
}

/// One tab's debugger lease. Shared by the tab's surface entry, the session's lease table and
/// every [`Attached`] guard.
pub(crate) struct DebuggerLease {
    target: String,
    resource: String,
    session: String,
    runtime: Weak<Inner>,
    slot: Mutex<Slot>,
    /// Attach and detach I/O, one at a time: a tab never has two attachments.
    io: tokio::sync::Mutex<()>,
}

/// An operation's hold on a tab's attachment. Dropping it lets go (see the module docs).
pub(crate) struct Attached {
    lease: Arc<DebuggerLease>,
    tab: Arc<dyn Surface>,
}

impl Attached {
    pub(crate) fn tab(&self) -> &Arc<dyn Surface> {
        &self.tab
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.lease.release();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn target_lost(reason: impl Into<String>) -> RuntimeError {
    RuntimeError::Surface(SurfaceError::TargetLost {
        reason: reason.into(),
    })
}

impl DebuggerLease {
    pub(crate) fn new(
        runtime: &Runtime,
        session: &str,
        resource: &str,
        target: &str,
    ) -> Arc<DebuggerLease> {
        Arc::new(DebuggerLease {
            target: target.to_owned(),
            resource: resource.to_owned(),
            session: session.to_owned(),
            runtime: Arc::downgrade(&runtime.inner),
            slot: Mutex::default(),
            io: tokio::sync::Mutex::new(()),
        })
    }

    /// The adapter's id of the tab.
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    pub(crate) fn resource(&self) -> &str {
        &self.resource
    }

    fn runtime(&self) -> Option<Runtime> {
        self.runtime.upgrade().map(|inner| Runtime { inner })
    }

    fn idle_window(&self) -> Duration {
        self.runtime()
            .map_or(Duration::ZERO, |r| r.inner.config.debugger_idle_detach)
    }

    fn detach_timeout(&self) -> Duration {
        self.runtime().map_or(FALLBACK_DETACH_TIMEOUT, |r| {
            r.inner.config.debugger_detach_timeout
        })
    }

    /// Takes over a tab attached by its creator (a new tab): no holder yet, so the idle
    /// window starts now.
    pub(crate) fn adopt(self: &Arc<Self>, tab: Arc<dyn Surface>) {
        let mut slot = lock(&self.slot);
        slot.tab = Some(tab);
        slot.attaches += 1;
        slot.attached_since = Some(now_ms());
        self.went_idle(&mut slot);
    }

    /// Holds the lease for one operation, attaching first if needed.
    pub(crate) async fn acquire(self: &Arc<Self>) -> Result<Attached, RuntimeError> {
        if let Some(attached) = self.share()? {
            return Ok(attached);
        }
        let _io = self.io.lock().await;
        // Someone attached while this waited.
        if let Some(attached) = self.share()? {
            return Ok(attached);
        }
        // A detach that failed is retried first: never two sessions on one tab.
        self.retry_locked().await?;
        let memory = {
            let mut slot = lock(&self.slot);
            // An attachment that stopped working (the user cancelled debugging, the session was
            // detached from outside, a crash) is replaced; the tab and its ownership stay.
            let _ = slot.take_tab();
            slot.memory.clone()
        };
        let runtime = self
            .runtime()
            .ok_or_else(|| RuntimeError::Internal("the runtime is gone".into()))?;
        let tab = runtime
            .adapter()
            .attach(self.target.clone(), memory)
            .await?;
        let kept = {
            let mut slot = lock(&self.slot);
            // Closed or released while attaching: this attachment is not to be used.
            if slot.retired.is_none() {
                slot.cancel_timer();
                slot.tab = Some(tab.clone());
                slot.refs += 1;
                slot.attaches += 1;
                slot.attached_since = Some(now_ms());
                slot.idle_since = None;
            }
            slot.retired.is_none()
        };
        if !kept {
            let _ = tab.detach(self.detach_timeout()).await;
            return Err(target_lost("the tab left the session"));
        }
        Ok(Attached {
            lease: self.clone(),
            tab,
        })
    }

    /// Shares a working attachment, if there is one and no failed detach waits for a retry.
    fn share(self: &Arc<Self>) -> Result<Option<Attached>, RuntimeError> {
        let mut slot = lock(&self.slot);
        if slot.retired.is_some() {
            return Err(target_lost("the tab was closed or left the session"));
        }
        if slot.failed.is_some() {
            return Ok(None);
        }
        let Some(tab) = slot.tab.clone().filter(|t| t.lost().is_none()) else {
            return Ok(None);
        };
        slot.cancel_timer();
        slot.refs += 1;
        slot.idle_since = None;
        Ok(Some(Attached {
            lease: self.clone(),
            tab,
        }))
    }

    fn release(self: &Arc<Self>) {
        let mut slot = lock(&self.slot);
        slot.refs = slot.refs.saturating_sub(1);
        if slot.refs == 0 {
            self.went_idle(&mut slot);
        }
    }

    /// The last holder let go: detach after the idle window (at once when a detach is pending
    /// or the tab left the session; a closed tab just drops its attachment).
    fn went_idle(self: &Arc<Self>, slot: &mut Slot) {
        slot.cancel_timer();
        if slot.retired == Some(Retired::Closed) {
            slot.tab = None;
            return;
        }
        if slot.tab.is_none() {
            return;
        }
        slot.idle_since = Some(now_ms());
        let delay = if slot.detach_pending || slot.retired.is_some() {
            Duration::ZERO
        } else {
            self.idle_window()
        };
        slot.detach_pending = false;
        self.detach_after(slot, delay);
    }

    /// Detaches after `delay` unless the lease is held or let go again meanwhile (a new
    /// generation); the check at its end may start the timer again (`detach_if_idle`).
    fn detach_after(self: &Arc<Self>, slot: &mut Slot, delay: Duration) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            // No async runtime (the process is ending): the attachment dies with the connection.
            return;
        };
        let generation = slot.generation;
        let cancel = Cancel::default();
        slot.timer = Some(cancel.clone());
        let lease = self.clone();
        handle.spawn(async move {
            tokio::select! {
                // Once the window has passed, the detach runs to its end: cancelling it halfway
                // would leave the attachment in doubt.
                () = tokio::time::sleep(delay) => lease.detach_if_idle(generation).await,
                () = cancel.cancelled() => {}
            }
        });
    }

    /// Whether the attachment enforces a network hold (`Surface::network_hold`): a tab that
    /// holds what the agent typed stays attached past its idle window and its turn's end, until
    /// the hold ends or the tab leaves the session.
    fn holds(slot: &Slot) -> bool {
        slot.retired.is_none()
            && slot
                .tab
                .as_ref()
                .is_some_and(|t| t.lost().is_none() && t.network_hold().is_some())
    }

    /// Checks a held attachment again later (the hold ends when the tab leaves the origin).
    fn recheck_hold(self: &Arc<Self>, slot: &mut Slot) {
        slot.cancel_timer();
        self.detach_after(slot, self.idle_window().max(HOLD_RECHECK));
    }

    async fn detach_if_idle(self: &Arc<Self>, generation: u64) {
        let _io = self.io.lock().await;
        let tab = {
            let mut slot = lock(&self.slot);
            if slot.refs > 0 || slot.generation != generation {
                return;
            }
            slot.timer = None;
            if Self::holds(&slot) {
                self.recheck_hold(&mut slot);
                return;
            }
            slot.take_tab()
        };
        if let Some(tab) = tab {
            self.finish_detach(tab).await;
        }
    }

    /// Detaches now (a turn's end, a release, a hand-over), or as soon as the holders let go.
    /// `retire` says the lease will never attach again.
    pub(crate) async fn detach(self: &Arc<Self>, retire: Option<Retired>) -> Detach {
        {
            let mut slot = lock(&self.slot);
            if retire.is_some() {
                slot.retired = retire;
            }
            slot.cancel_timer();
            if slot.refs > 0 {
                slot.detach_pending = true;
                return Detach::Deferred;
            }
        }
        let _io = self.io.lock().await;
        let tab = {
            let mut slot = lock(&self.slot);
            if slot.refs > 0 {
                slot.detach_pending = true;
                return Detach::Deferred;
            }
            // A turn's end leaves a held tab attached: the hold is its attachment.
            if Self::holds(&slot) {
                slot.idle_since = Some(now_ms());
                self.recheck_hold(&mut slot);
                return Detach::Held;
            }
            slot.take_tab()
        };
        if retire == Some(Retired::Closed) {
            // The tab's close takes its sessions with it; a failed detach of it is moot.
            let failed = lock(&self.slot).failed.take();
            if let Some(Failed {
                recovery: Some(id), ..
            }) = failed
            {
                self.resolve(id);
            }
            return Detach::NotAttached;
        }
        let retried = self.retry_locked().await.is_ok();
        match tab {
            Some(tab) => {
                if self.finish_detach(tab).await && retried {
                    Detach::Detached
                } else {
                    Detach::Failed
                }
            }
            None if retried => Detach::NotAttached,
            None => Detach::Failed,
        }
    }

    /// Detaches `tab` (taken out of the slot, under the I/O lock); on no answer, keeps it aside
    /// with a recovery record. True when detached.
    async fn finish_detach(&self, tab: Arc<dyn Surface>) -> bool {
        match tab.detach(self.detach_timeout()).await {
            Ok(()) => {
                lock(&self.slot).detaches += 1;
                true
            }
            Err(e) => {
                tracing::warn!(resource = %self.resource, error = %e, "debugger detach failed; kept for a retry");
                let recovery = self.runtime().and_then(|r| {
                    r.inner
                        .store
                        .add_recovery(&NewRecovery {
                            session_id: store::SessionId::new(&self.session),
                            resource_id: Some(store::ResourceId::new(&self.resource)),
                            kind: RecoveryKind::DetachFailed,
                            detail: format!("the debugger detach did not succeed ({e}); retried at the next operation or at disposal"),
                            now_ms: now_ms(),
                        })
                        .map_err(|e| tracing::warn!(error = %e, "cannot record a failed detach"))
                        .ok()
                });
                lock(&self.slot).failed = Some(Failed { tab, recovery });
                false
            }
        }
    }

    /// Retries a failed detach, if there is one (call with the I/O lock held).
    async fn retry_locked(&self) -> Result<(), RuntimeError> {
        let failed = lock(&self.slot).failed.take();
        let Some(failed) = failed else { return Ok(()) };
        match failed.tab.detach(self.detach_timeout()).await {
            Ok(()) => {
                lock(&self.slot).detaches += 1;
                if let Some(id) = failed.recovery {
                    self.resolve(id);
                }
                Ok(())
            }
            Err(e) => {
                if let (Some(runtime), Some(id)) = (self.runtime(), failed.recovery) {
                    let _ = runtime.inner.store.record_attempt(
                        id,
                        Some(&format!("the debugger detach still fails ({e})")),
                        now_ms(),
                    );
                }
                lock(&self.slot).failed = Some(failed);
                Err(RuntimeError::Surface(SurfaceError::BackendUnavailable {
                    reason: format!(
                        "the tab's earlier debugger session could not be detached ({e}); try again"
                    ),
                }))
            }
        }
    }

    fn resolve(&self, id: store::RecoveryId) {
        if let Some(runtime) = self.runtime() {
            let _ = runtime.inner.store.record_attempt(id, None, now_ms());
            let _ = runtime.inner.store.resolve_recovery(id, now_ms());
        }
    }

    /// Retries a failed detach now. True when none is left.
    pub(crate) async fn retry(&self) -> bool {
        if lock(&self.slot).failed.is_none() {
            return true;
        }
        let _io = self.io.lock().await;
        self.retry_locked().await.is_ok()
    }

    pub(crate) fn has_failed_detach(&self) -> bool {
        lock(&self.slot).failed.is_some()
    }

    /// The browser connection was replaced: every attachment of the old one is gone (a closed
    /// connection takes its sessions with it), failed detaches included. The tab attaches again
    /// through the new connection on demand.
    pub(crate) fn connection_replaced(&self) {
        let failed = {
            let mut slot = lock(&self.slot);
            slot.cancel_timer();
            let _ = slot.take_tab();
            slot.failed.take()
        };
        if let Some(Failed {
            recovery: Some(id), ..
        }) = failed
        {
            self.resolve(id);
        }
    }

    /// Nothing more to do for this lease: retired, detached, no holder, nothing to retry.
    pub(crate) fn finished(&self) -> bool {
        let slot = lock(&self.slot);
        slot.retired.is_some() && slot.tab.is_none() && slot.failed.is_none() && slot.refs == 0
    }

    /// The attached tab's network hold, if it has one.
    pub(crate) fn network_hold(&self) -> Option<surface::NetworkHold> {
        let slot = lock(&self.slot);
        slot.tab.as_ref()?.network_hold()
    }

    /// Lets the attached, held tab reach `origin` too. `false`: nothing is held.
    pub(crate) fn allow_origin(&self, origin: &policy::Origin) -> bool {
        let slot = lock(&self.slot);
        slot.tab.as_ref().is_some_and(|t| t.allow_origin(origin))
    }

    pub(crate) fn status(&self) -> DebuggerLeaseStatus {
        let slot = lock(&self.slot);
        let attached = slot.tab.as_ref().is_some_and(|t| t.lost().is_none());
        DebuggerLeaseStatus {
            resource: self.resource.clone(),
            refs: slot.refs,
            attached,
            attached_since_ms: slot.attached_since.filter(|_| attached),
            idle_since_ms: slot.idle_since.filter(|_| attached && slot.refs == 0),
            detach_pending: slot.detach_pending,
            detach_failed: slot.failed.is_some(),
            network_held: attached && Self::holds(&slot),
            attaches: slot.attaches,
            detaches: slot.detaches,
        }
    }
}
