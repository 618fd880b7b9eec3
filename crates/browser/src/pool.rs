//! A pool of browsers behind the one seam (issue 34): several CDP endpoints — local launches,
//! `ws://` endpoints of hosted browsers, a grid's CDP proxy — serve one runtime. Each session's
//! isolation context (and so its tabs) lives on one member, chosen least loaded among the
//! members that are up and below their cap; past every cap a bounded queue waits a while, and
//! beyond it the answer is `backend_unavailable` with when to retry, never a hang.
//!
//! Ids name their member: `m<i>~<backend id>` for contexts and surfaces (a CDP id never holds
//! `~`), so every call goes to exactly the member that owns what it names, and no member is
//! ever asked about another's tabs (Glovebox works only in contexts it created).
//!
//! A member that dies fails only its own sessions: its contexts are void from then on (their
//! calls answer `backend_unavailable`, their surfaces are reported destroyed), while the pool
//! reconnects it in the background (a local browser is relaunched) for new sessions. The pool
//! as a whole is down only when every member is.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use protocol::{Capability, ExtendedAction, Observation, Preview, SurfaceKind};
use surface::metrics::{BackendMetrics, HistogramSnapshot};
use surface::{
    ActOptions, ActOutcome, BoxFuture, Dialog, FrameRecord, InputDomain, KeptSite, LocatedFacts,
    NetworkHold, ObserveOptions, PersonCast, Reconnected, Surface, SurfaceAdapter, SurfaceError,
    SurfaceEvent, SurfaceEvents, SurfaceInfo, SurfaceMemory,
};

use crate::Chromium;

/// How full a pool may get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Sessions (isolation contexts) per member.
    pub sessions_per_browser: usize,
    /// Sessions that may wait for room when every member is full.
    pub queue: usize,
    /// How long one waits before `backend_unavailable`.
    pub wait: Duration,
}

impl Default for PoolLimits {
    fn default() -> Self {
        PoolLimits {
            sessions_per_browser: 32,
            queue: 16,
            wait: Duration::from_secs(10),
        }
    }
}

/// How often members are checked (and a dead one reconnected).
const HEALTH_EVERY: Duration = Duration::from_millis(500);

struct Member {
    adapter: Arc<Chromium>,
    /// Surfaces this member has reported or opened (reported destroyed when it dies).
    surfaces: Mutex<HashSet<String>>,
}

/// A pool of browsers (see the module docs).
pub struct Pool {
    members: Vec<Member>,
    limits: PoolLimits,
    /// Live contexts (prefixed) and their member.
    contexts: Mutex<HashMap<String, usize>>,
    /// Places taken for contexts being made, per member (counted as load, so two sessions
    /// placed at once never pass a cap).
    reserved: Mutex<Vec<usize>>,
    /// Contexts whose member died: void for good.
    dead: Mutex<HashSet<String>>,
    /// Members whose death was handled and that are not back yet.
    down: Mutex<HashSet<usize>>,
    /// Members being reconnected now (one attempt at a time each).
    reconnecting: Mutex<HashSet<usize>>,
    waiting: Mutex<usize>,
    freed: tokio::sync::Notify,
    /// The merged event stream's sender (members' streams forward into it).
    events: Mutex<Option<tokio::sync::mpsc::Sender<SurfaceEvent>>>,
    /// Shut down: the health task ends and nothing is reconnected.
    stopped: std::sync::atomic::AtomicBool,
    me: Weak<Pool>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `m<i>~<id>`.
fn tag(member: usize, id: &str) -> String {
    format!("m{member}~{id}")
}

/// The member and the backend's own id of a tagged id.
fn untag(id: &str) -> Option<(usize, &str)> {
    let (m, rest) = id.split_once('~')?;
    Some((m.strip_prefix('m')?.parse().ok()?, rest))
}

impl Pool {
    /// A pool of `members` (each not yet connected), filled up to `limits`.
    pub fn new(members: Vec<Arc<Chromium>>, limits: PoolLimits) -> Arc<Pool> {
        let count = members.len();
        Arc::new_cyclic(|me| Pool {
            members: members
                .into_iter()
                .map(|adapter| Member {
                    adapter,
                    surfaces: Mutex::default(),
                })
                .collect(),
            limits,
            contexts: Mutex::default(),
            reserved: Mutex::new(vec![0; count]),
            dead: Mutex::default(),
            down: Mutex::default(),
            reconnecting: Mutex::default(),
            waiting: Mutex::new(0),
            freed: tokio::sync::Notify::new(),
            events: Mutex::new(None),
            stopped: std::sync::atomic::AtomicBool::new(false),
            me: me.clone(),
        })
    }

    /// Sessions on each member now (for status and tests).
    pub fn loads(&self) -> Vec<usize> {
        let contexts = lock(&self.contexts);
        let reserved = lock(&self.reserved);
        (0..self.members.len())
            .map(|m| contexts.values().filter(|c| **c == m).count() + reserved[m])
            .collect()
    }

    /// The pid of each member's launched browser (`None` for a remote one or one not running).
    pub fn pids(&self) -> Vec<Option<u32>> {
        self.members.iter().map(|m| m.adapter.pid()).collect()
    }

    /// The member behind a tagged id.
    pub fn member(&self, id: &str) -> Option<&Arc<Chromium>> {
        untag(id).and_then(|(m, _)| self.members.get(m).map(|m| &m.adapter))
    }

    fn up(&self, member: usize) -> bool {
        let adapter = &self.members[member].adapter;
        adapter.closed_reason().is_none()
            && !adapter.process_dead()
            && !lock(&self.down).contains(&member)
    }

    /// The member of a tagged context, unless it died under it.
    fn context_member(&self, context: &str) -> Result<(usize, String), SurfaceError> {
        if lock(&self.dead).contains(context) {
            return Err(SurfaceError::unavailable(
                "the browser this session's tabs were on died (the pool reconnects it for new sessions); start a new session",
            ));
        }
        let (m, raw) = untag(context)
            .filter(|(m, _)| *m < self.members.len())
            .ok_or_else(|| {
                SurfaceError::unavailable(format!("{context} is no context of this pool"))
            })?;
        Ok((m, raw.to_owned()))
    }

    fn surface_member(&self, id: &str) -> Result<(usize, String), SurfaceError> {
        let (m, raw) = untag(id)
            .filter(|(m, _)| *m < self.members.len())
            .ok_or_else(|| SurfaceError::TargetLost {
                reason: format!("{id} is no surface of this pool"),
            })?;
        Ok((m, raw.to_owned()))
    }

    /// The least loaded member that is up and below its cap.
    fn pick(&self) -> Option<usize> {
        let loads = self.loads();
        (0..self.members.len())
            .filter(|m| self.up(*m) && loads[*m] < self.limits.sessions_per_browser)
            .min_by_key(|m| loads[*m])
    }

    /// [`Pool::pick`] with the place taken at once (under the contexts' lock, so two
    /// placements never both see the last place free).
    fn reserve(&self) -> Option<Reservation<'_>> {
        let contexts = lock(&self.contexts);
        let mut reserved = lock(&self.reserved);
        let m = (0..self.members.len())
            .map(|m| {
                (
                    m,
                    contexts.values().filter(|c| **c == m).count() + reserved[m],
                )
            })
            .filter(|(m, load)| self.up(*m) && *load < self.limits.sessions_per_browser)
            .min_by_key(|(_, load)| *load)
            .map(|(m, _)| m)?;
        reserved[m] += 1;
        Some(Reservation {
            pool: self,
            member: m,
        })
    }

    /// A place for a new context: at once, or after waiting in the bounded queue.
    async fn place(&self) -> Result<Reservation<'_>, SurfaceError> {
        if let Some(place) = self.reserve() {
            return Ok(place);
        }
        let retry = self.limits.wait.as_secs().max(1);
        if !(0..self.members.len()).any(|m| self.up(m)) {
            return Err(SurfaceError::unavailable(format!(
                "no browser of the pool is up (they are being reconnected); retry in {retry} s"
            )));
        }
        let full = |why: &str| {
            SurfaceError::unavailable(format!(
                "the browser pool is full ({} sessions on each of {} browsers; {why}); retry in {retry} s",
                self.limits.sessions_per_browser,
                self.members.len(),
            ))
        };
        let _queued = {
            let mut waiting = lock(&self.waiting);
            if *waiting >= self.limits.queue {
                return Err(full("its queue is full too"));
            }
            *waiting += 1;
            // Left on every way out, a dropped wait's included.
            Queued(&self.waiting)
        };
        let until = tokio::time::Instant::now() + self.limits.wait;
        loop {
            let freed = self.freed.notified();
            if let Some(place) = self.reserve() {
                return Ok(place);
            }
            // Woken when a session ends; checked again at least every health period (a member
            // may come back).
            let next = (tokio::time::Instant::now() + HEALTH_EVERY).min(until);
            if tokio::time::timeout_at(next, freed).await.is_err()
                && tokio::time::Instant::now() >= until
            {
                return Err(full("no room came within the wait"));
            }
        }
    }

    /// Forwards member `m`'s events into the merged stream, ids tagged.
    fn forward(&self, m: usize, mut events: SurfaceEvents) {
        let Some(tx) = lock(&self.events).clone() else {
            return;
        };
        let me = self.me.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                let Some(pool) = me.upgrade() else { return };
                let event = match event {
                    SurfaceEvent::Changed(info) => {
                        let info = pool.tag_info(m, info);
                        lock(&pool.members[m].surfaces).insert(info.id.clone());
                        SurfaceEvent::Changed(info)
                    }
                    SurfaceEvent::Destroyed(id) => {
                        let id = tag(m, &id);
                        lock(&pool.members[m].surfaces).remove(&id);
                        SurfaceEvent::Destroyed(id)
                    }
                };
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        });
    }

    fn tag_info(&self, m: usize, mut info: SurfaceInfo) -> SurfaceInfo {
        info.id = tag(m, &info.id);
        info.context = info.context.map(|c| tag(m, &c));
        info.opener = info.opener.map(|o| tag(m, &o));
        info
    }

    /// One round of the health check: a member found down voids its contexts and surfaces
    /// (told to the runtime as destroyed) and is reconnected; one back takes new sessions.
    async fn check(&self) {
        for m in 0..self.members.len() {
            let member = &self.members[m];
            let dead_now =
                member.adapter.closed_reason().is_some() || member.adapter.process_dead();
            let known_down = lock(&self.down).contains(&m);
            if !dead_now && !known_down {
                continue;
            }
            if !known_down {
                tracing::warn!(
                    member = m,
                    "a browser of the pool went down; its sessions fail, new ones go elsewhere"
                );
                lock(&self.down).insert(m);
                let voided: Vec<String> = {
                    let mut contexts = lock(&self.contexts);
                    let gone: Vec<String> = contexts
                        .iter()
                        .filter(|(_, owner)| **owner == m)
                        .map(|(c, _)| c.clone())
                        .collect();
                    for c in &gone {
                        contexts.remove(c);
                    }
                    gone
                };
                lock(&self.dead).extend(voided);
                let surfaces: Vec<String> = lock(&member.surfaces).drain().collect();
                let tx = lock(&self.events).clone();
                if let Some(tx) = tx {
                    for id in surfaces {
                        let _ = tx.send(SurfaceEvent::Destroyed(id)).await;
                    }
                }
                self.freed.notify_waiters();
            }
            if self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            // Each member reconnects on its own task: one behind an endpoint that does not
            // answer (a resolve waits out its deadline) never holds up the others' checks.
            if !lock(&self.reconnecting).insert(m) {
                continue;
            }
            let me = self.me.clone();
            tokio::spawn(async move {
                let Some(pool) = me.upgrade() else { return };
                let adapter = pool.members[m].adapter.clone();
                let back = adapter.reconnect().await.is_ok()
                    && !pool.stopped.load(std::sync::atomic::Ordering::SeqCst);
                if back {
                    tracing::info!(member = m, "a browser of the pool is back");
                    lock(&pool.down).remove(&m);
                    if let Some(events) = adapter.events().await {
                        pool.forward(m, events);
                    }
                    pool.freed.notify_waiters();
                }
                lock(&pool.reconnecting).remove(&m);
            });
        }
    }
}

impl SurfaceAdapter for Pool {
    fn kind(&self) -> SurfaceKind {
        SurfaceKind::WebTab
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        Box::pin(async move {
            let tried =
                futures_util::future::join_all(self.members.iter().map(|m| m.adapter.connect()))
                    .await;
            let mut reasons = Vec::new();
            for (m, result) in tried.into_iter().enumerate() {
                if let Err(e) = result {
                    tracing::warn!(member = m, error = %e, "a browser of the pool did not start; retried in the background");
                    reasons.push(format!("m{m}: {e}"));
                }
            }
            if reasons.len() == self.members.len() {
                return Err(SurfaceError::unavailable(format!(
                    "no browser of the pool started: {}",
                    reasons.join("; ")
                )));
            }
            let me = self.me.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(HEALTH_EVERY).await;
                    let Some(pool) = me.upgrade() else { return };
                    if pool.stopped.load(std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    pool.check().await;
                }
            });
            Ok(())
        })
    }

    fn closed_reason(&self) -> Option<String> {
        let reasons: Vec<String> = self
            .members
            .iter()
            .enumerate()
            .map(|(m, member)| member.adapter.closed_reason().map(|r| format!("m{m}: {r}")))
            .collect::<Option<Vec<String>>>()?;
        Some(format!(
            "every browser of the pool is down ({})",
            reasons.join("; ")
        ))
    }

    fn process_dead(&self) -> bool {
        self.members.iter().all(|m| m.adapter.process_dead())
    }

    fn pid(&self) -> Option<u32> {
        self.members.iter().find_map(|m| m.adapter.pid())
    }

    fn launched(&self) -> bool {
        self.members.iter().any(|m| m.adapter.launched())
    }

    fn reconnect(&self) -> BoxFuture<'_, Result<Reconnected, SurfaceError>> {
        // The runtime asks only when every member is down: every context is gone with them.
        Box::pin(async move {
            let mut relaunched = false;
            let mut any = false;
            for (m, member) in self.members.iter().enumerate() {
                // One reconnect per member at a time: one the health task has under way is
                // waited for, not doubled (two would launch two browsers).
                let give_up = tokio::time::Instant::now() + Duration::from_secs(30);
                while !lock(&self.reconnecting).insert(m) {
                    if tokio::time::Instant::now() >= give_up {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                let up = member.adapter.closed_reason().is_none() && !member.adapter.process_dead();
                if up {
                    any = true;
                } else {
                    match member.adapter.reconnect().await {
                        Ok(how) => {
                            any = true;
                            relaunched |= how == Reconnected::Relaunched;
                        }
                        Err(e) => tracing::warn!(error = %e, "a browser of the pool stays down"),
                    }
                }
                lock(&self.reconnecting).remove(&m);
            }
            if !any {
                return Err(SurfaceError::unavailable(
                    "no browser of the pool could be reached",
                ));
            }
            let voided: Vec<String> = lock(&self.contexts).drain().map(|(c, _)| c).collect();
            lock(&self.dead).extend(voided);
            lock(&self.down).clear();
            if !relaunched {
                tracing::info!("the pool's browsers are reachable again");
            }
            // Every context went with its browser's connection (or its process), and the
            // health task has reported their surfaces gone: to the runtime this is a relaunch,
            // whose sessions get new contexts.
            Ok(Reconnected::Relaunched)
        })
    }

    fn shutdown(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for m in &self.members {
            m.adapter.shutdown();
        }
        lock(&self.events).take();
    }

    fn events(&self) -> BoxFuture<'_, Option<SurfaceEvents>> {
        Box::pin(async move {
            let (tx, rx) = tokio::sync::mpsc::channel(1024);
            *lock(&self.events) = Some(tx);
            for (m, member) in self.members.iter().enumerate() {
                if let Some(events) = member.adapter.events().await {
                    self.forward(m, events);
                }
            }
            Some(rx)
        })
    }

    fn create_context(&self, with_connection: bool) -> BoxFuture<'_, Result<String, SurfaceError>> {
        Box::pin(async move {
            let place = self.place().await?;
            let m = place.member;
            let raw = self.members[m]
                .adapter
                .create_context(with_connection)
                .await?;
            let context = tag(m, &raw);
            place.fill(context.clone());
            Ok(context)
        })
    }

    fn dispose_context_if_empty(&self, context: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // The session is over: its place is free (a tab handed to a person keeps only the
            // context, not a session's place).
            lock(&self.contexts).remove(&context);
            self.freed.notify_waiters();
            if let Ok((m, raw)) = self.context_member(&context) {
                self.members[m].adapter.dispose_context_if_empty(raw).await;
            }
        })
    }

    fn open(
        &self,
        context: Option<String>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            let (m, raw) = match context {
                Some(c) => {
                    let (m, raw) = self.context_member(&c)?;
                    (m, Some(raw))
                }
                None => (
                    self.pick()
                        .or_else(|| (0..self.members.len()).find(|m| self.up(*m)))
                        .ok_or_else(|| SurfaceError::unavailable("no browser of the pool is up"))?,
                    None,
                ),
            };
            let surface = self.members[m].adapter.open(raw).await?;
            Ok(self.wrap(m, surface))
        })
    }

    fn open_detached(
        &self,
        url: String,
        context: Option<String>,
        background: bool,
    ) -> BoxFuture<'_, Result<String, SurfaceError>> {
        Box::pin(async move {
            let (m, raw) = match context {
                Some(c) => {
                    let (m, raw) = self.context_member(&c)?;
                    (m, Some(raw))
                }
                None => (
                    self.pick()
                        .or_else(|| (0..self.members.len()).find(|m| self.up(*m)))
                        .ok_or_else(|| SurfaceError::unavailable("no browser of the pool is up"))?,
                    None,
                ),
            };
            let id = self.members[m]
                .adapter
                .open_detached(url, raw, background)
                .await?;
            let id = tag(m, &id);
            lock(&self.members[m].surfaces).insert(id.clone());
            Ok(id)
        })
    }

    fn attach(
        &self,
        id: String,
        memory: Option<SurfaceMemory>,
    ) -> BoxFuture<'_, Result<Arc<dyn Surface>, SurfaceError>> {
        Box::pin(async move {
            let (m, raw) = self.surface_member(&id)?;
            if !self.up(m) {
                return Err(SurfaceError::TargetLost {
                    reason: "the browser it was on went down".into(),
                });
            }
            let surface = self.members[m].adapter.attach(raw, memory).await?;
            Ok(self.wrap(m, surface))
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SurfaceInfo>, SurfaceError>> {
        Box::pin(async move {
            let mut all = Vec::new();
            let mut failed = Vec::new();
            for (m, member) in self.members.iter().enumerate() {
                if !self.up(m) {
                    continue;
                }
                match member.adapter.list().await {
                    Ok(list) => all.extend(list.into_iter().map(|i| self.tag_info(m, i))),
                    Err(e) => failed.push(e),
                }
            }
            if all.is_empty()
                && let Some(e) = failed.into_iter().next()
            {
                return Err(e);
            }
            Ok(all)
        })
    }

    fn close(&self, id: String, deadline: Duration) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let Ok((m, raw)) = self.surface_member(&id) else {
                return false;
            };
            let closed = self.members[m].adapter.close(raw, deadline).await;
            if closed {
                lock(&self.members[m].surfaces).remove(&id);
            }
            closed
        })
    }

    fn input_domain(&self, id: &str) -> InputDomain {
        // A tab is its own domain (tagged ids keep members apart).
        InputDomain(format!("tab:{id}"))
    }

    fn capabilities(&self) -> Vec<Capability> {
        self.members
            .first()
            .map(|m| m.adapter.capabilities())
            .unwrap_or_default()
    }

    fn control_endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .flat_map(|m| m.adapter.control_endpoints())
            .collect()
    }

    fn backend_metrics(&self) -> BackendMetrics {
        let parts: Vec<BackendMetrics> = self
            .members
            .iter()
            .map(|m| m.adapter.backend_metrics())
            .collect();
        let round_trips = parts
            .iter()
            .filter_map(|p| p.round_trips.clone())
            .reduce(|a, b| HistogramSnapshot {
                cumulative: a
                    .cumulative
                    .iter()
                    .zip(&b.cumulative)
                    .map(|(x, y)| x + y)
                    .collect(),
                sum_seconds: a.sum_seconds + b.sum_seconds,
                count: a.count + b.count,
            });
        let loads = self.loads();
        BackendMetrics {
            protocol: "cdp",
            connected: parts.iter().any(|p| p.connected),
            round_trips,
            pool: Some(surface::metrics::PoolMetrics {
                members: (0..self.members.len())
                    .map(|m| {
                        (
                            format!("m{m}"),
                            self.up(m),
                            loads[m],
                            self.limits.sessions_per_browser,
                        )
                    })
                    .collect(),
                waiting: *lock(&self.waiting),
            }),
        }
    }

    fn person_image(&self, id: String) -> BoxFuture<'_, Result<Vec<u8>, SurfaceError>> {
        Box::pin(async move {
            let (m, raw) = self.surface_member(&id)?;
            self.members[m].adapter.person_image(raw).await
        })
    }

    fn person_view(&self, id: String) -> BoxFuture<'_, Result<Box<dyn PersonCast>, SurfaceError>> {
        Box::pin(async move {
            let (m, raw) = self.surface_member(&id)?;
            self.members[m].adapter.person_view(raw).await
        })
    }

    fn keep_site<'a>(
        &'a self,
        context: Option<String>,
        url: &'a str,
        surface: Option<&'a dyn Surface>,
        previous: Option<KeptSite>,
    ) -> BoxFuture<'a, Option<KeptSite>> {
        Box::pin(async move {
            let (m, raw) = match (&context, surface) {
                (Some(c), _) => {
                    let (m, raw) = self.context_member(c).ok()?;
                    (m, Some(raw))
                }
                (None, Some(s)) => (self.surface_member(s.id()).ok()?.0, None),
                (None, None) => return None,
            };
            // The member reads its own tab through the surface's `as_any`, which the wrapper
            // hands through.
            self.members[m]
                .adapter
                .keep_site(raw, url, surface, previous)
                .await
        })
    }

    fn restore_site<'a>(
        &'a self,
        kept: &'a KeptSite,
        context: Option<String>,
    ) -> BoxFuture<'a, Result<(), SurfaceError>> {
        Box::pin(async move {
            match context {
                Some(c) => {
                    let (m, raw) = self.context_member(&c)?;
                    self.members[m].adapter.restore_site(kept, Some(raw)).await
                }
                None => Ok(()),
            }
        })
    }
}

/// A place taken on a member for a context being made: filled by the context, or given back
/// when dropped (the making failed or was abandoned).
struct Reservation<'a> {
    pool: &'a Pool,
    member: usize,
}

impl Reservation<'_> {
    fn fill(self, context: String) {
        lock(&self.pool.contexts).insert(context, self.member);
        // Dropping gives the reservation back: the context now holds the place.
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut reserved = lock(&self.pool.reserved);
        reserved[self.member] = reserved[self.member].saturating_sub(1);
        drop(reserved);
        self.pool.freed.notify_waiters();
    }
}

/// One session in the queue, counted until it leaves (however it leaves).
struct Queued<'a>(&'a Mutex<usize>);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        let mut waiting = lock(self.0);
        *waiting = waiting.saturating_sub(1);
    }
}

impl Pool {
    fn wrap(&self, m: usize, inner: Arc<dyn Surface>) -> Arc<dyn Surface> {
        let id = tag(m, inner.id());
        lock(&self.members[m].surfaces).insert(id.clone());
        Arc::new(PoolSurface { id, inner })
    }
}

/// A member's surface under its pool id.
struct PoolSurface {
    id: String,
    inner: Arc<dyn Surface>,
}

impl Surface for PoolSurface {
    fn id(&self) -> &str {
        &self.id
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self.inner.as_any()
    }

    fn lost(&self) -> Option<String> {
        self.inner.lost()
    }

    fn observe<'a>(
        &'a self,
        options: &'a ObserveOptions,
    ) -> BoxFuture<'a, Result<Observation, SurfaceError>> {
        self.inner.observe(options)
    }

    fn preview(&self, deadline: Duration) -> BoxFuture<'_, Preview> {
        self.inner.preview(deadline)
    }

    fn act<'a>(
        &'a self,
        action: &'a ExtendedAction,
        options: &'a ActOptions,
    ) -> BoxFuture<'a, Result<ActOutcome, SurfaceError>> {
        self.inner.act(action, options)
    }

    fn latest_frame(&self) -> Option<Arc<dyn FrameRecord>> {
        self.inner.latest_frame()
    }

    fn locate<'a>(
        &'a self,
        frame: &'a dyn FrameRecord,
        locator: &'a protocol::extended::Locator,
    ) -> BoxFuture<'a, Option<LocatedFacts>> {
        self.inner.locate(frame, locator)
    }

    fn release_input(&self) -> BoxFuture<'_, Result<(), SurfaceError>> {
        self.inner.release_input()
    }

    fn input_routes(&self) -> Vec<protocol::InputRoute> {
        self.inner.input_routes()
    }

    fn surface_kind(&self) -> Option<SurfaceKind> {
        self.inner.surface_kind()
    }

    fn dialog(&self) -> Option<Dialog> {
        self.inner.dialog()
    }

    fn detach(&self, deadline: Duration) -> BoxFuture<'_, Result<(), SurfaceError>> {
        self.inner.detach(deadline)
    }

    fn memory(&self) -> SurfaceMemory {
        self.inner.memory()
    }

    fn scrub(&self, secrets: &[String]) {
        self.inner.scrub(secrets)
    }

    fn network_hold(&self) -> Option<NetworkHold> {
        self.inner.network_hold()
    }

    fn allow_origin(&self, origin: &policy::Origin) -> bool {
        self.inner.allow_origin(origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_their_member() {
        assert_eq!(tag(2, "ABC123"), "m2~ABC123");
        assert_eq!(untag("m2~ABC123"), Some((2, "ABC123")));
        assert_eq!(untag("m10~x~y"), Some((10, "x~y")));
        assert_eq!(untag("ABC123"), None);
        assert_eq!(untag("mx~A"), None);
        assert_eq!(untag("q1~A"), None);
    }
}
