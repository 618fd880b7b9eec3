//! The browser lifecycle across turns (`002_…`): ownership with provenance, turn-end cleanup,
//! turn-scoped marks, task finalize, context reset, disposal, tool activation, recovery records
//! and reconnect — with every record in the store, so a restart never forgets who owns what.
//!
//! Rules (the seed's table): a tab this agent created and did not mark in this turn is closed at
//! turn end; a user tab this agent claimed is released, never closed; a tab marked `handoff` or
//! `deliverable` in this turn is kept; another session's tabs are refused. A resource becomes
//! `released` only when its close or release succeeded; a failure keeps ownership, moves it to
//! `cleanup_unknown` and leaves a recovery record that the next lifecycle operation retries.
//! Lifecycle operations of a session run one at a time and are idempotent.

use std::sync::Arc;
use std::time::Duration;

use browser::Tab;
use serde::Serialize;
use store::{Mark, NewRecovery, NewResource, Ownership, RecoveryKind, ResourceKind, ResourceState};

use crate::runtime::{Runtime, SessionState, TabEntry, now_ms};
use crate::RuntimeError;

/// The compact result of a cleanup (`browser_cleanup`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CleanupReport {
    pub ok: bool,
    /// Resource ids closed.
    pub closed: Vec<String>,
    /// Resource ids released (claims given back; marked tabs handed to the user).
    pub released: Vec<String>,
    /// Resource ids kept (marked in this turn).
    pub kept: Vec<String>,
    /// Resource ids whose cleanup failed (kept with a recovery record).
    pub failed: Vec<String>,
    pub tools_active: bool,
    /// `connected`, `reconnecting` or `stopped`.
    pub bridge: String,
}

/// One tab as `browser_status` reports it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TabStatus {
    pub resource: String,
    pub ownership: String,
    pub mark: String,
    pub mark_turn: Option<String>,
    pub state: String,
    pub attached: bool,
    pub url: Option<String>,
    pub title: Option<String>,
}

/// `browser_status`: ownership, marks, connection state, pending recoveries.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BrowserStatus {
    pub tools_active: bool,
    pub bridge: String,
    pub tabs: Vec<TabStatus>,
    pub pending_recoveries: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Boundary {
    TurnEnd,
    Finalize,
    Disposal,
}

fn internal(e: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::Internal(e.to_string())
}

fn sid(session: &str) -> store::SessionId {
    store::SessionId::new(session)
}

impl Runtime {
    pub(crate) fn record_agent_tab(&self, session: &str, tab: &Tab, url: &str) -> Result<String, RuntimeError> {
        let id = self.fresh_id("tab");
        self.inner
            .store
            .insert_resource(&NewResource {
                id: store::ResourceId::new(&id),
                session_id: Some(sid(session)),
                kind: ResourceKind::Tab,
                ownership: Ownership::AgentCreated,
                state: ResourceState::Owned,
                created_by_run: None,
                handle: Some((store::TargetId::new(&tab.target_id().0), self.inner.instance)),
                url: Some(policy::redact_url(url)),
                title: None,
                now_ms: now_ms(),
            })
            .map_err(internal)?;
        self.activate_tools(session)?;
        Ok(id)
    }

    /// Re-attaches the session's kept tabs that a turn end detached from (the debugger lease is
    /// taken again on demand, never in the background).
    pub async fn reattach(&self, session: &str) -> Result<(), RuntimeError> {
        let state = self.session(session)?;
        // A dropped connection is re-established on the next operation (never in a loop).
        if self.connection().closed_reason().is_some() {
            let _serial = state.lifecycle.lock().await;
            if self.connection().closed_reason().is_some() {
                self.reconnect().await?;
            }
        }
        let attached: Vec<String> = state.tabs.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|t| t.resource.clone()).collect();
        let resources = self.inner.store.list_resources(&sid(session)).map_err(internal)?;
        for r in resources {
            let live = matches!(r.state, ResourceState::Owned | ResourceState::Retained) && !r.handle_lost;
            if live && !attached.contains(&r.id.to_string()) {
                if let Some(target) = &r.cdp_target_id {
                    self.attach_entry(&state, r.id.as_str(), target.as_str()).await?;
                }
            }
        }
        Ok(())
    }

    /// Marks browser tools active for the session (sticky until reset, session end or disposal).
    pub fn activate_tools(&self, session: &str) -> Result<(), RuntimeError> {
        let current = self.inner.store.get_session(&sid(session)).map_err(internal)?;
        if !current.tools_active {
            self.inner.store.set_tools_active(&sid(session), true, now_ms()).map_err(internal)?;
        }
        Ok(())
    }

    /// Registers a tab the user has open (the host reports it); it belongs to no session until
    /// one claims it. Returns its resource id.
    pub async fn register_user_tab(&self, url: &str) -> Result<String, RuntimeError> {
        policy::check_navigation(url, &self.inner.config.navigation).map_err(|e| RuntimeError::OriginDenied { reason: e.to_string() })?;
        let session = self.connection().browser().create_page(url, None).await.map_err(browser::BrowserError::from)?;
        let target = session.target_id().cloned().ok_or_else(|| internal("no target id"))?;
        // The user's tab is not ours to keep attached.
        if let Some(id) = session.id() {
            let _ = session.connection().browser().call(cdp::domains::target::DetachFromTarget { session_id: id.clone() }).await;
        }
        let id = self.fresh_id("tab");
        self.inner
            .store
            .insert_resource(&NewResource {
                id: store::ResourceId::new(&id),
                session_id: None,
                kind: ResourceKind::Tab,
                ownership: Ownership::User,
                state: ResourceState::Owned,
                created_by_run: None,
                handle: Some((store::TargetId::new(&target.0), self.inner.instance)),
                url: Some(policy::redact_url(url)),
                title: None,
                now_ms: now_ms(),
            })
            .map_err(internal)?;
        Ok(id)
    }

    /// Claims a user's tab for the session: first claim wins. Returns its surface id.
    pub async fn claim_tab(&self, session: &str, resource: &str) -> Result<u64, RuntimeError> {
        let state = self.session(session)?;
        let _serial = state.lifecycle.lock().await;
        let record = self.inner.store.claim_resource(&store::ResourceId::new(resource), &sid(session), now_ms()).map_err(|e| match e {
            store::StoreError::AlreadyClaimed { .. } => RuntimeError::LeaseConflict { holder: format!("another session ({e})") },
            other => internal(other),
        })?;
        let target = record.cdp_target_id.ok_or_else(|| RuntimeError::Browser(browser::BrowserError::TargetLost { reason: "the tab is gone".into() }))?;
        let surface = self.attach_entry(&state, resource, &target.to_string()).await?;
        self.activate_tools(session)?;
        Ok(surface)
    }

    async fn attach_entry(&self, state: &Arc<SessionState>, resource: &str, target: &str) -> Result<u64, RuntimeError> {
        let conn = self.connection();
        let page = conn.browser().attach(&cdp::TargetId(target.to_owned())).await.map_err(browser::BrowserError::from)?;
        let tab = Arc::new(Tab::attach(page).await?);
        let surface = self.next_surface();
        state.tabs.lock().unwrap_or_else(|p| p.into_inner()).push(TabEntry {
            surface,
            resource: resource.to_owned(),
            tab,
            capabilities: vec![protocol::Capability::Observe, protocol::Capability::Interact, protocol::Capability::Navigate],
        });
        *state.focused.lock().unwrap_or_else(|p| p.into_inner()) = Some(surface);
        Ok(surface)
    }

    /// Gives a claimed tab back to the user (the page stays open).
    pub async fn release_tab(&self, session: &str, surface: u64) -> Result<(), RuntimeError> {
        let state = self.session(session)?;
        let _serial = state.lifecycle.lock().await;
        let entry = self.take_entry(&state, surface)?;
        self.inner.store.release_resource(&store::ResourceId::new(&entry.resource), &sid(session), now_ms()).map_err(internal)?;
        self.detach(&entry).await;
        Ok(())
    }

    /// Marks a tab `deliverable` or `handoff` for the current turn (the latest mark wins; it must
    /// be renewed to survive another turn).
    pub fn mark(&self, session: &str, surface: u64, mark: Mark, turn: &str) -> Result<(), RuntimeError> {
        let state = self.session(session)?;
        let resource = state.tabs.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|t| t.surface == surface).map(|t| t.resource.clone());
        let resource = resource.ok_or_else(|| RuntimeError::UnknownSurface { name: format!("surface {surface}"), known: String::new() })?;
        self.inner.store.set_mark(&store::ResourceId::new(&resource), &sid(session), mark, &store::TurnId::new(turn), now_ms()).map_err(internal)?;
        Ok(())
    }

    /// The end of a turn (internal; nothing is shown to the model): close unmarked agent tabs,
    /// release unmarked claims, keep tabs marked in this turn, detach from kept tabs (a later
    /// operation re-attaches on demand). Tools stay active; the connection stays up.
    pub async fn end_turn(&self, session: &str, turn: &str) -> Result<CleanupReport, RuntimeError> {
        self.inner.store.set_last_turn(&sid(session), &store::TurnId::new(turn), now_ms()).map_err(internal)?;
        self.cleanup(session, Some(turn), Boundary::TurnEnd).await
    }

    /// `browser_cleanup`: the explicit task finalize a user asked for. Marked tabs stay open but
    /// leave this session's ownership; tools stay active.
    pub async fn finalize(&self, session: &str) -> Result<CleanupReport, RuntimeError> {
        self.cleanup(session, None, Boundary::Finalize).await
    }

    /// `browser_context_reset`: finalize first; only if that succeeded, clear the trackers and
    /// deactivate the session's browser tools. A failed finalize clears nothing.
    pub async fn context_reset(&self, session: &str) -> Result<CleanupReport, RuntimeError> {
        let mut report = self.cleanup(session, None, Boundary::Finalize).await?;
        if !report.ok {
            return Ok(report);
        }
        self.inner.store.set_tools_active(&sid(session), false, now_ms()).map_err(internal)?;
        self.inner.store.set_session_state(&sid(session), store::SessionState::Reset, now_ms()).map_err(internal)?;
        report.tools_active = false;
        Ok(report)
    }

    /// Ends a session (MCP disconnect, agent disposal): the disposal cleanup, tools deactivated,
    /// its browser context disposed. Failures keep their recovery records.
    pub async fn close_session(&self, session: &str) -> Result<CleanupReport, RuntimeError> {
        let state = self.session(session)?;
        let report = self.cleanup(session, None, Boundary::Disposal).await?;
        let _serial = state.lifecycle.lock().await;
        let _ = self.inner.store.set_tools_active(&sid(session), false, now_ms());
        let _ = self.inner.store.set_session_state(&sid(session), store::SessionState::Disposed, now_ms());
        // Read first: no lock guard may live across the await below (the future must be `Send`).
        let context = state.context_id.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(context) = context {
            let _ = self.connection().browser().call(cdp::domains::target::DisposeBrowserContext { browser_context_id: context }).await;
        }
        self.inner.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(session);
        Ok(CleanupReport { tools_active: false, ..report })
    }

    /// The pid of the locally launched browser, if the runtime launched one.
    pub fn browser_pid(&self) -> Option<u32> {
        self.inner.browser_process.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(cdp::Browser::pid)
    }

    /// `browser_status`.
    pub fn status(&self, session: &str) -> Result<BrowserStatus, RuntimeError> {
        let state = self.session(session)?;
        let attached: Vec<String> = state.tabs.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|t| t.resource.clone()).collect();
        let record = self.inner.store.get_session(&sid(session)).map_err(internal)?;
        let resources = self.inner.store.list_resources(&sid(session)).map_err(internal)?;
        let pending = self.inner.store.pending_recoveries(&sid(session)).map_err(internal)?.len();
        Ok(BrowserStatus {
            tools_active: record.tools_active,
            bridge: self.bridge_state(),
            pending_recoveries: pending,
            tabs: resources
                .into_iter()
                .map(|r| TabStatus {
                    attached: attached.contains(&r.id.to_string()),
                    resource: r.id.to_string(),
                    ownership: r.ownership.as_str().to_owned(),
                    mark: r.mark.as_str().to_owned(),
                    mark_turn: r.mark_turn_id.map(|t| t.to_string()),
                    state: r.state.as_str().to_owned(),
                    url: r.url,
                    title: r.title,
                })
                .collect(),
        })
    }

    pub(crate) fn bridge_state(&self) -> String {
        if self.connection().closed_reason().is_none() { "connected".into() } else { "reconnecting".into() }
    }

    fn take_entry(&self, state: &SessionState, surface: u64) -> Result<TabEntry, RuntimeError> {
        let mut tabs = state.tabs.lock().unwrap_or_else(|p| p.into_inner());
        let index = tabs.iter().position(|t| t.surface == surface).ok_or_else(|| RuntimeError::UnknownSurface { name: format!("surface {surface}"), known: String::new() })?;
        Ok(tabs.remove(index))
    }

    async fn detach(&self, entry: &TabEntry) {
        self.inner.leases.invalidate(&entry.tab.target_id().0);
        if let Some(id) = entry.tab.session().id() {
            let _ = self.connection().browser().call(cdp::domains::target::DetachFromTarget { session_id: id.clone() }).await;
        }
    }

    /// Closes an agent tab and records the outcome: `released` on success, else
    /// `cleanup_unknown` with a recovery record (ownership kept).
    pub(crate) async fn close_resource(&self, session: &str, entry: &TabEntry) -> bool {
        let closed = self.close_target(&entry.tab.target_id().0).await;
        self.settle_resource(session, &entry.resource, closed, RecoveryKind::CloseFailed)
    }

    /// Closes a target and waits (bounded) until the browser reports it destroyed: `closeTarget`
    /// answers before the tab is gone, and "closed" must mean closed.
    pub(crate) async fn close_target(&self, target: &str) -> bool {
        let browser = self.connection().browser();
        let mut destroyed = browser.subscribe(&["Target.targetDestroyed"]);
        // Destruction events flow only with target discovery on (idempotent).
        let _ = browser.call(cdp::domains::target::SetDiscoverTargets { discover: true }).await;
        let reply = tokio::time::timeout(Duration::from_secs(5), browser.call(cdp::domains::target::CloseTarget { target_id: cdp::TargetId(target.to_owned()) })).await;
        match reply {
            Ok(Ok(_)) => {}
            // A target that no longer exists is closed.
            Ok(Err(cdp::CdpError::Protocol { message, .. })) if message.contains("No target") => return true,
            _ => return false,
        }
        let gone = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(event) = destroyed.recv().await {
                if let Ok(event) = event {
                    if event.params.get("targetId").and_then(serde_json::Value::as_str) == Some(target) {
                        return true;
                    }
                }
            }
            false
        })
        .await;
        gone.unwrap_or(false)
    }

    fn settle_resource(&self, session: &str, resource: &str, succeeded: bool, kind: RecoveryKind) -> bool {
        let id = store::ResourceId::new(resource);
        let Ok(current) = self.inner.store.get_resource(&id) else { return false };
        let state = if succeeded { ResourceState::Released } else { ResourceState::CleanupUnknown };
        let _ = self.inner.store.transition(&id, current.version, state, now_ms());
        if succeeded {
            let _ = self.inner.store.clear_handle(&id, now_ms());
        } else {
            let _ = self.inner.store.add_recovery(&NewRecovery {
                session_id: sid(session),
                resource_id: Some(id),
                kind,
                detail: "the close did not succeed; ownership kept, retried at the next lifecycle operation".into(),
                now_ms: now_ms(),
            });
        }
        succeeded
    }

    async fn cleanup(&self, session: &str, turn: Option<&str>, boundary: Boundary) -> Result<CleanupReport, RuntimeError> {
        let state = self.session(session)?;
        let _serial = state.lifecycle.lock().await;
        let mut report = CleanupReport { ok: true, closed: Vec::new(), released: Vec::new(), kept: Vec::new(), failed: Vec::new(), tools_active: false, bridge: self.bridge_state() };
        self.retry_recoveries(session, &mut report).await;
        let resources = self.inner.store.list_resources(&sid(session)).map_err(internal)?;
        let entries: Vec<TabEntry> = state.tabs.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut to_close: Vec<(String, Option<TabEntry>, store::Resource)> = Vec::new();
        for resource in resources {
            let id = resource.id.to_string();
            if matches!(resource.state, ResourceState::Released) {
                continue;
            }
            let entry = entries.iter().find(|e| e.resource == id).cloned();
            let marked_now = resource.mark != Mark::None && turn.is_some_and(|t| resource.mark_turn_id.as_ref().is_some_and(|m| m.to_string() == t));
            if boundary == Boundary::TurnEnd && marked_now {
                let _ = self.inner.store.transition(&resource.id, resource.version, ResourceState::Retained, now_ms());
                if let Some(entry) = &entry {
                    // The debugger lease goes at every turn end, marks or not.
                    let surface = entry.surface;
                    if let Ok(taken) = self.take_entry(&state, surface) {
                        self.detach(&taken).await;
                    }
                }
                report.kept.push(id);
                continue;
            }
            let marked = resource.mark != Mark::None;
            match resource.ownership {
                Ownership::AgentCreated if !(marked && boundary != Boundary::TurnEnd) => {
                    // Closes run together below: each waits for its tab to go.
                    if let Some(entry) = &entry {
                        let _ = self.take_entry(&state, entry.surface);
                        self.inner.leases.invalidate(&entry.tab.target_id().0);
                    }
                    to_close.push((id, entry, resource));
                }
                // A claimed user tab is released, never closed; a marked agent tab at finalize or
                // disposal stays open and leaves this session's ownership.
                _ => {
                    if let Some(entry) = &entry {
                        if let Ok(taken) = self.take_entry(&state, entry.surface) {
                            self.detach(&taken).await;
                        }
                    }
                    match self.inner.store.release_resource(&resource.id, &sid(session), now_ms()) {
                        Ok(_) => report.released.push(id),
                        Err(_) => {
                            let _ = self.inner.store.add_recovery(&NewRecovery {
                                session_id: sid(session),
                                resource_id: Some(resource.id.clone()),
                                kind: RecoveryKind::ReleaseFailed,
                                detail: "the release did not succeed".into(),
                                now_ms: now_ms(),
                            });
                            report.failed.push(id);
                        }
                    }
                }
            }
        }
        let closes = to_close.iter().map(|(_, entry, resource)| async move {
            match entry {
                Some(entry) => self.close_resource(session, entry).await,
                None => self.close_by_handle(session, resource).await,
            }
        });
        for ((id, _, _), closed) in to_close.iter().zip(futures_util::future::join_all(closes).await) {
            if closed {
                report.closed.push(id.clone());
            } else {
                report.failed.push(id.clone());
            }
        }
        report.ok = report.failed.is_empty();
        report.tools_active = self.inner.store.get_session(&sid(session)).map(|s| s.tools_active).unwrap_or(false);
        let payload = serde_json::to_string(&report).unwrap_or_default();
        let _ = self.inner.store.append_audit(&store::NewAudit {
            at: now_ms(),
            session_id: &sid(session),
            run_id: None,
            resource_id: None,
            kind: match boundary {
                Boundary::TurnEnd => "turn_end",
                Boundary::Finalize => "finalize",
                Boundary::Disposal => "disposal",
            },
            payload: &payload,
        });
        Ok(report)
    }

    /// Closes a tab known only by its recorded handle (detached, or from a lost connection).
    async fn close_by_handle(&self, session: &str, resource: &store::Resource) -> bool {
        let closed = self.close_handle(resource).await;
        self.settle_resource(session, &resource.id.to_string(), closed, RecoveryKind::CloseFailed)
    }

    async fn retry_recoveries(&self, session: &str, report: &mut CleanupReport) {
        let Ok(pending) = self.inner.store.pending_recoveries(&sid(session)) else { return };
        for recovery in pending {
            let Some(resource_id) = recovery.resource_id.clone() else { continue };
            let Ok(resource) = self.inner.store.get_resource(&resource_id) else { continue };
            let done = match recovery.kind {
                RecoveryKind::CloseFailed => self.close_handle(&resource).await,
                _ => self.inner.store.release_resource(&resource_id, &sid(session), now_ms()).is_ok(),
            };
            let _ = self.inner.store.record_attempt(recovery.id, (!done).then_some("still failing"), now_ms());
            if done {
                if let Ok(current) = self.inner.store.get_resource(&resource_id) {
                    let _ = self.inner.store.transition(&resource_id, current.version, ResourceState::Released, now_ms());
                }
                let _ = self.inner.store.resolve_recovery(recovery.id, now_ms());
                report.closed.push(resource_id.to_string());
            }
        }
    }

    /// Closes a recorded handle; a handle into a browser that is gone counts as closed.
    async fn close_handle(&self, resource: &store::Resource) -> bool {
        match (&resource.cdp_target_id, resource.handle_lost) {
            (Some(target), false) => self.close_target(target.as_str()).await,
            _ => true,
        }
    }

    /// Re-establishes the browser connection after it dropped: relaunches a local browser or
    /// reconnects to the remote endpoint. Ownership records are kept; handles into a browser that
    /// died are recorded as lost and never reused; nothing is closed because the connection blinked.
    pub async fn reconnect(&self) -> Result<(), RuntimeError> {
        let (conn, local) = crate::runtime::open_browser(&self.inner.config.browser).await?;
        let relaunched = local.is_some();
        *self.inner.conn.lock().unwrap_or_else(|p| p.into_inner()) = conn;
        if relaunched {
            *self.inner.browser_process.lock().unwrap_or_else(|p| p.into_inner()) = local;
        }
        let sessions: Vec<(String, Arc<SessionState>)> =
            self.inner.sessions.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for (id, state) in sessions {
            let entries = std::mem::take(&mut *state.tabs.lock().unwrap_or_else(|p| p.into_inner()));
            if relaunched {
                // A new browser: the old tabs died with the old one. Records stay; handles are lost.
                for entry in &entries {
                    let _ = self.inner.store.clear_handle(&store::ResourceId::new(&entry.resource), now_ms());
                }
                if state.context_id.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
                    let reply = self.connection().browser().call(cdp::domains::target::CreateBrowserContext { dispose_on_detach: Some(true) }).await.map_err(browser::BrowserError::from)?;
                    *state.context_id.lock().unwrap_or_else(|p| p.into_inner()) = Some(reply.browser_context_id);
                }
            } else {
                for entry in entries {
                    let _ = self.attach_entry(&state, &entry.resource, &entry.tab.target_id().0).await;
                }
            }
            tracing::info!(session = %id, relaunched, "browser connection re-established");
        }
        Ok(())
    }
}
