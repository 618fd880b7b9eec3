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

use protocol::SessionId;
use serde::Serialize;
use store::{Mark, NewRecovery, NewResource, Ownership, RecoveryKind, ResourceKind, ResourceState};

use crate::RuntimeError;
use crate::debugger::{DebuggerLease, DebuggerLeaseStatus, Detach, Retired};
use crate::runtime::{Runtime, SessionState, SurfaceId, TabEntry, now_ms};

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

/// A session as a person's tools list it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SessionSummary {
    pub session: String,
    /// Its current turn.
    pub turn: String,
    pub tools_active: bool,
    /// Tabs it holds now.
    pub tabs: usize,
    /// Whether the host API ends its turns (a chat session) rather than its own client.
    pub host: bool,
    /// The client's name, as it gave it (client text; printable).
    pub client: Option<String>,
    /// The client's process, when the transport knows it: `glovebox turn-end` ends the turns of
    /// the sessions whose client is the process that ran it (or an ancestor of it).
    pub client_pid: Option<u32>,
}

/// One session's turn end ([`Runtime::end_turns`]).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TurnEnded {
    pub session: SessionId,
    /// The turn that ended.
    pub turn: String,
    pub report: CleanupReport,
}

/// A tab a person has open that no session owns: what a session may claim
/// ([`Runtime::claim_tab`]). Its URL (redacted) and title are page-derived.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct UserTab {
    pub tab: String,
    pub url: Option<String>,
    pub title: Option<String>,
}

/// One tab as `browser_status` reports it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TabStatus {
    pub resource: String,
    /// The session's surface id for the tab, while the session holds it.
    pub surface: Option<SurfaceId>,
    pub ownership: store::Ownership,
    pub mark: Mark,
    pub mark_turn: Option<String>,
    pub state: store::ResourceState,
    /// Glovebox holds a DevTools session on the tab right now (its debugger lease).
    pub attached: bool,
    /// The key of the session's tab that opened this one (a popup it adopted).
    pub opened_by: Option<String>,
    /// The tab exists in the browser as far as Glovebox knows: this process holds a live
    /// handle to it. `false` after the browser died or relaunched, or for a closed tab.
    pub live: bool,
    pub url: Option<String>,
    pub title: Option<String>,
}

/// `browser_status`: ownership, marks, connection state, pending recoveries.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BrowserStatus {
    /// The session's browser tools work (from its start; off only after a context reset).
    pub tools_active: bool,
    /// The session has used the browser since it began or since its last reset: `002_…`'s
    /// "Skill loaded", recorded (and audited) at the first browser operation.
    pub activated: bool,
    pub bridge: String,
    /// The session's tabs that are not closed.
    pub tabs: Vec<TabStatus>,
    /// How many of the session's tabs were closed (released): counted, not listed, so a long
    /// session's history does not lengthen every status (its rows stay in the store).
    pub closed_tabs: usize,
    /// Debugger leases, recorded apart from the tabs' lifecycle (`002_…`: "Debugger 状态和 Tab
    /// lifecycle 必须分别记录").
    pub debugger_leases: Vec<DebuggerLeaseStatus>,
    pub pending_recoveries: usize,
    /// What this server's start reconciled of earlier servers that ended without cleaning up
    /// (absent when it found none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconciled: Option<crate::Reconciliation>,
}

/// A popup a person linked for runs ([`Runtime::link_tab`]).
#[derive(Debug, Clone, Serialize)]
pub struct LinkedTab {
    pub tab: String,
    pub session: String,
    pub surface_key: String,
    pub opened_by: String,
    /// The first turn in which a run may bind it.
    pub runs_from_turn: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Boundary {
    TurnEnd,
    Finalize,
    Disposal,
}

/// The longest one tab's close may take, every step included; past it the close counts as
/// failed (a recovery record, retried at the next lifecycle operation).
mod cleanup;

/// The adapter connection's own lifecycle.
#[derive(Default)]
pub(crate) struct Connection {
    /// One reconnect at a time, whichever session noticed the dropped connection.
    pub(crate) reconnecting: tokio::sync::Mutex<()>,
    /// Set by `shutdown`: no new operation starts.
    pub(crate) stopping: std::sync::atomic::AtomicBool,
    /// Set once `shutdown` stopped the connection.
    pub(crate) stopped: std::sync::atomic::AtomicBool,
}

const CLOSE_DEADLINE: Duration = Duration::from_secs(5);

fn internal(e: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::Internal(e.to_string())
}

fn sid(session: &str) -> store::SessionId {
    store::SessionId::new(session)
}

impl Runtime {
    pub(crate) fn record_agent_tab(
        &self,
        session: &str,
        target: &str,
        url: &str,
    ) -> Result<String, RuntimeError> {
        let id = self.fresh_id("tab");
        self.forget_stale_handle(target);
        self.inner
            .store
            .insert_resource(&NewResource {
                id: store::ResourceId::new(&id),
                session_id: Some(sid(session)),
                kind: ResourceKind::Tab,
                ownership: Ownership::AgentCreated,
                state: ResourceState::Owned,
                created_by_run: None,
                handle: Some((store::TargetId::new(target), self.inner.instance)),
                url: Some(policy::restorable_url(url).unwrap_or_else(|| policy::redact_url(url))),
                title: None,
                now_ms: now_ms(),
            })
            .map_err(RuntimeError::from)?;
        self.record_branch(session, &id);
        self.activate(session)?;
        Ok(id)
    }

    /// `target` names a surface that was just created (a tab opened, a window an action opened):
    /// a record that still holds it as its live handle describes one that is gone — a display
    /// reuses a closed window's id, and no adapter event said it closed (the X11 adapter sends
    /// none). Unless a session tracks that record, its handle is cleared first.
    fn forget_stale_handle(&self, target: &str) {
        let Ok(Some(old)) = self
            .inner
            .store
            .find_by_handle(&store::TargetId::new(target))
        else {
            return;
        };
        let tracked = self.session_states().iter().any(|s| {
            s.tabs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .any(|t| t.resource == old.id.as_str())
        });
        if !tracked {
            tracing::debug!(resource = %old.id, "a record's surface is gone: its id names a new one");
            let _ = self.inner.store.clear_handle(&old.id, now_ms());
        }
    }

    /// The windows an action on `opener` opened (`ActOutcome::opened`: popups, `target=_blank`
    /// links and forms) become the session's own agent tabs, opened by that tab (`004_…` R29;
    /// `000_…` cases 15 and 26): listed in the Surface Context, `tabs` and `status` with their
    /// opener, closed at the turn's end unless marked, and at the session's end. Their pages
    /// were judged with their opener's (the boundary covers a window before it runs); what the
    /// agent does on them next is judged as on any tab, within the capabilities its opener has
    /// (a person's access switch on the opener holds for its windows). Focus stays where it
    /// was: an agent reaches a popup only by naming it. One already tracked by a session is left
    /// as it is.
    pub(crate) async fn adopt_opened(&self, session: &str, opener: &TabEntry, opened: &[String]) {
        let Ok(state) = self.session(session) else {
            return;
        };
        let _one = state.adopting.lock().await;
        let known: Vec<String> = crate::runtime::lock(&state.tabs)
            .iter()
            .map(|t| t.target().to_owned())
            .collect();
        let fresh: Vec<&String> = opened.iter().filter(|id| !known.contains(id)).collect();
        if fresh.is_empty() {
            return;
        }
        // A session that is ending takes no new tab: a window its tab opened meanwhile closes.
        if state.closing.load(std::sync::atomic::Ordering::SeqCst) {
            for target in fresh {
                let _ = self.adapter().close(target.clone(), CLOSE_DEADLINE).await;
            }
            return;
        }
        let listed = self.adapter().list().await.unwrap_or_default();
        // A window gets no more than its opener may do now: a person who let the agent only look
        // at a tab has not let it write into the windows that tab opens.
        let capabilities = crate::runtime::lock(&state.tabs)
            .iter()
            .find(|t| t.surface == opener.surface)
            .map_or_else(|| opener.capabilities.clone(), |t| t.capabilities.clone());
        for target in fresh {
            let url = listed
                .iter()
                .find(|i| &i.id == target)
                .map_or("", |i| i.url.as_str());
            let resource = match self.record_agent_tab(session, target, url) {
                Ok(resource) => resource,
                Err(e) => {
                    tracing::warn!(error = %e, "a window a tab opened could not be recorded; it is closed");
                    let _ = self.adapter().close(target.clone(), CLOSE_DEADLINE).await;
                    continue;
                }
            };
            let debugger = DebuggerLease::new(self, session, &resource, target);
            crate::runtime::lock(&state.debuggers).push(debugger.clone());
            let key = state
                .next_key
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            crate::runtime::lock(&state.tabs).push(TabEntry {
                surface: SurfaceId(self.next_surface()),
                key,
                resource: resource.clone(),
                debugger,
                capabilities: capabilities.clone(),
                turn: state.turn_number(),
                opened_by: Some(opener.key),
                linked_in: None,
            });
            self.audit(
                session,
                "popup_adopted",
                &serde_json::json!({"tab": resource, "opener": opener.resource, "key": format!("s{key}")})
                    .to_string(),
            );
        }
    }

    /// Records the session's current branch on a tab it opened or claimed.
    fn record_branch(&self, session: &str, resource: &str) {
        let branch = self
            .session(session)
            .ok()
            .and_then(|s| s.branch.lock().unwrap_or_else(|p| p.into_inner()).clone());
        if let Some(branch) = branch {
            let _ =
                self.inner
                    .store
                    .set_branch(&store::ResourceId::new(resource), &branch, now_ms());
        }
    }

    /// Marks browser tools active for the session (sticky until reset, session end or disposal).
    /// Only a change is recorded, with an audit entry: activation happens once per activation
    /// span, never per turn (`002_…`: "后续 turn 直接复用已经激活的工具").
    /// After a context reset this is what turns them on again (the user asked for the browser).
    pub fn activate_tools(&self, session: &SessionId) -> Result<(), RuntimeError> {
        let state = self.session(session.as_str())?;
        if state.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(RuntimeError::UnknownSession(format!("{session} (closed)")));
        }
        let current = self
            .inner
            .store
            .get_session(&sid(session.as_str()))
            .map_err(RuntimeError::from)?;
        if current.state == store::SessionState::Reset {
            self.inner
                .store
                .set_session_state(
                    &sid(session.as_str()),
                    store::SessionState::Active,
                    now_ms(),
                )
                .map_err(RuntimeError::from)?;
        }
        self.activate(session.as_str())?;
        state
            .tools_active
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    /// Whether the session's browser tools are on (false after a successful context reset).
    pub fn tools_active(&self, session: &SessionId) -> Result<bool, RuntimeError> {
        Ok(self
            .session(session.as_str())?
            .tools_active
            .load(std::sync::atomic::Ordering::SeqCst))
    }

    pub(crate) fn activate(&self, session: &str) -> Result<(), RuntimeError> {
        let current = self
            .inner
            .store
            .get_session(&sid(session))
            .map_err(RuntimeError::from)?;
        if !current.tools_active {
            self.inner
                .store
                .set_tools_active(&sid(session), true, now_ms())
                .map_err(RuntimeError::from)?;
            self.audit(session, "tools_activated", "{}");
        }
        Ok(())
    }

    /// Deactivates the session's browser tools (context reset, disposal), with an audit entry.
    fn deactivate_tools(&self, session: &str, why: &str) -> Result<(), RuntimeError> {
        let current = self
            .inner
            .store
            .get_session(&sid(session))
            .map_err(RuntimeError::from)?;
        if current.tools_active {
            self.inner
                .store
                .set_tools_active(&sid(session), false, now_ms())
                .map_err(RuntimeError::from)?;
            self.audit(
                session,
                "tools_deactivated",
                &serde_json::json!({ "by": why }).to_string(),
            );
        }
        Ok(())
    }

    pub(crate) fn audit(&self, session: &str, kind: &str, payload: &str) {
        let _ = self.inner.store.append_audit(&store::NewAudit {
            at: now_ms(),
            session_id: &sid(session),
            run_id: None,
            resource_id: None,
            kind,
            payload,
        });
    }

    /// Registers a tab the user has open (the host reports it); it belongs to no session until
    /// one claims it. Returns its resource id.
    pub async fn register_user_tab(&self, url: &str) -> Result<String, RuntimeError> {
        // The same bound as every URL an agent gives.
        let chars = url.chars().count();
        if chars > protocol::limits::URL_MAX_CHARS {
            return Err(RuntimeError::InvalidAction(format!(
                "a URL has at most {} characters (this one has {chars})",
                protocol::limits::URL_MAX_CHARS
            )));
        }
        policy::check_navigation(url, &self.inner.config.navigation).map_err(|e| {
            RuntimeError::OriginDenied {
                reason: e.to_string(),
            }
        })?;
        // The user's tab is not ours to keep attached.
        let target = self
            .adapter()
            .open_detached(url.to_owned(), None, false)
            .await?;
        let url = policy::restorable_url(url).unwrap_or_else(|| policy::redact_url(url));
        self.record_offered(&target, url, None)
    }

    /// A person offers one of the surfaces they have open that the adapter lists (a window of
    /// the desktop, a tab of a shared browser) to sessions: it is recorded as the person's and
    /// a session may claim it (`tab_claim`). Returns its resource id; offering a surface that
    /// already has an open record offers that record again.
    pub async fn offer_surface(&self, surface: &str) -> Result<String, RuntimeError> {
        let listed = self.adapter().list().await?;
        let Some(info) = listed.iter().find(|s| s.id == surface && s.top_level) else {
            return Err(RuntimeError::UnknownSurface {
                name: surface.chars().take(80).collect(),
                known: "a surface of GET /api/surfaces".into(),
            });
        };
        let existing = self
            .inner
            .store
            .list_all_resources()
            .map_err(RuntimeError::from)?
            .into_iter()
            .find(|r| {
                r.cdp_target_id
                    .as_ref()
                    .is_some_and(|t| t.as_str() == surface)
                    && r.instance == Some(self.inner.instance)
                    && !r.closed_by_person
            });
        let title = protocol::text::printable(&crate::webtabs::recorded_title(
            &self.without_typed_secrets(&info.id, &info.title),
        ));
        // The record of this surface already (a window a session gave back is the person's and
        // released, its handle live; a display reuses a closed window's id for a new window):
        // offered again, with what the surface shows now.
        if let Some(r) = existing {
            if !self.persons_open_tab(&r) {
                return Err(RuntimeError::LeaseConflict {
                    holder: "a session, which holds this surface now".into(),
                });
            }
            let _ = self.inner.store.update_location(
                &r.id,
                &policy::redact_url(&info.url),
                &title,
                now_ms(),
            );
            self.offer_tab(r.id.as_str())?;
            return Ok(r.id.to_string());
        }
        self.record_offered(&info.id, policy::redact_url(&info.url), Some(title))
    }

    /// Records `target` as a person's open surface and offers it to sessions.
    fn record_offered(
        &self,
        target: &str,
        url: String,
        title: Option<String>,
    ) -> Result<String, RuntimeError> {
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
                handle: Some((store::TargetId::new(target), self.inner.instance)),
                url: Some(url),
                title,
                now_ms: now_ms(),
            })
            .map_err(RuntimeError::from)?;
        self.inner
            .provenance
            .offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone());
        Ok(id)
    }

    /// The surfaces the adapter lists now, for a person choosing one to offer: id, title (the
    /// application's text) and address (redacted).
    pub async fn surfaces_for_person(&self) -> Result<Vec<serde_json::Value>, RuntimeError> {
        let listed = self.adapter().list().await?;
        Ok(listed
            .into_iter()
            .filter(|s| s.top_level)
            .map(|s| {
                serde_json::json!({
                    "surface": s.id,
                    "kind": s.kind,
                    "title": protocol::text::printable(&crate::webtabs::recorded_title(
                        &self.without_typed_secrets(&s.id, &s.title),
                    )),
                    "url": policy::redact_url(&s.url),
                    "input": s.input,
                })
            })
            .collect())
    }

    /// The tabs a session may claim: tabs a person offered ([`Runtime::register_user_tab`],
    /// [`Runtime::offer_tab`]) that are a person's now and open in this browser instance. A
    /// tab a session handed over, or one a restore brought back, is not among them until a
    /// person offers it.
    pub fn user_tabs(&self) -> Result<Vec<UserTab>, RuntimeError> {
        let offered = self
            .inner
            .provenance
            .offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // Only the offered tabs are read (not every tab the store ever recorded).
        let mut resources = Vec::with_capacity(offered.len());
        for id in &offered {
            match self.inner.store.get_resource(&store::ResourceId::new(id)) {
                Ok(r) => resources.push(r),
                Err(store::StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        resources.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(resources
            .into_iter()
            .filter(|r| self.persons_open_tab(r))
            .map(|r| UserTab {
                tab: r.id.to_string(),
                url: r.url.as_deref().map(policy::redact_url),
                title: r.title,
            })
            .collect())
    }

    /// Whether `r` is a tab that is a person's now and open in this browser instance: one no
    /// session owns, or one kept by a session that is gone. Only such a tab may be offered.
    pub(crate) fn persons_open_tab(&self, r: &store::Resource) -> bool {
        let live = |s: &store::SessionId| {
            self.inner
                .store
                .get_session(s)
                .is_ok_and(|s| s.state == store::SessionState::Active)
        };
        r.kind == ResourceKind::Tab
            && !r.closed_by_person
            && match &r.session_id {
                None => r.ownership == Ownership::User,
                Some(s) => r.state == ResourceState::Retained && !live(s),
            }
            && r.cdp_target_id.is_some()
            && r.instance == Some(self.inner.instance)
            && !r.handle_lost
    }

    /// A person offers one of their open tabs to sessions — a tab a restore brought back (a
    /// session's kept tab, with its cookies), or one a session handed over: from now a session
    /// may claim it. Only person channels call this.
    pub fn offer_tab(&self, resource: &str) -> Result<(), RuntimeError> {
        let r = self
            .inner
            .store
            .get_resource(&store::ResourceId::new(resource))
            .map_err(|_| RuntimeError::UnknownSurface {
                name: resource.to_owned(),
                known: "a tab of GET /api/tabs".into(),
            })?;
        if !self.persons_open_tab(&r) {
            return Err(RuntimeError::InvalidAction(format!(
                "{resource} is not a person's open tab (a live session owns it, or it is closed)"
            )));
        }
        self.inner
            .provenance
            .offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(resource.to_owned());
        tracing::info!(tab = resource, "a person offered a tab to sessions");
        Ok(())
    }

    /// A person links a tab a page opened (a popup its session adopted) for runs: `000_…` case
    /// 26, "用户关联新 tab 后，下一 turn 创建新 run 才能控制". The tab is marked `handoff` in
    /// the current turn (so this turn's end keeps it), gets the session's focus (a run that names
    /// no surface binds it), and a run may bind it from the next turn on. Only person channels
    /// call this; a tab that no page opened needs no link and is refused.
    pub async fn link_tab(&self, resource: &str) -> Result<LinkedTab, RuntimeError> {
        let unknown = || RuntimeError::UnknownSurface {
            name: resource.to_owned(),
            known: "an open tab of GET /api/tabs that a page opened".into(),
        };
        let (session, state, entry) = {
            let sessions = self
                .inner
                .sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            sessions
                .iter()
                .find_map(|(id, state)| {
                    let entry = state
                        .tabs
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .iter()
                        .find(|t| t.resource == resource)
                        .cloned()?;
                    Some((id.clone(), state.clone(), entry))
                })
                .ok_or_else(unknown)?
        };
        let Some(opener) = entry.opened_by else {
            return Err(RuntimeError::InvalidAction(format!(
                "{resource} is s{} of its session, opened by the agent or claimed: only a tab a page opened needs a person's link",
                entry.key
            )));
        };
        let turn = state.turn_number();
        let session_id = SessionId::new(session.clone())
            .map_err(|e| RuntimeError::Internal(format!("a session id in the registry: {e}")))?;
        self.mark(&session_id, entry.surface, Mark::Handoff, &turn_name(turn))
            .await?;
        {
            let mut tabs = state.tabs.lock().unwrap_or_else(|p| p.into_inner());
            let Some(tab) = tabs.iter_mut().find(|t| t.surface == entry.surface) else {
                return Err(unknown());
            };
            tab.linked_in = Some(turn);
        }
        *state.focused.lock().unwrap_or_else(|p| p.into_inner()) = Some(entry.surface);
        self.audit(
            &session,
            "popup_linked",
            &serde_json::json!({"tab": resource, "key": format!("s{}", entry.key), "opener": format!("s{opener}"), "turn": turn})
                .to_string(),
        );
        tracing::info!(tab = resource, session = %session, "a person linked a popup for the next turn");
        Ok(LinkedTab {
            tab: resource.to_owned(),
            session,
            surface_key: format!("s{}", entry.key),
            opened_by: format!("s{opener}"),
            runs_from_turn: turn_name(turn + 1),
        })
    }

    /// The session's surface ids, in registry order (the order of its keys `s1…`).
    pub fn surface_ids(&self, session: &SessionId) -> Result<Vec<SurfaceId>, RuntimeError> {
        let session = session.as_str();
        let state = self.session(session)?;
        let tabs = state.tabs.lock().unwrap_or_else(|p| p.into_inner());
        Ok(tabs.iter().map(|t| t.surface).collect())
    }

    /// Claims a user's tab for the session: first claim wins. Returns its surface id.
    pub async fn claim_tab(
        &self,
        session: &SessionId,
        resource: &str,
    ) -> Result<SurfaceId, RuntimeError> {
        let session = session.as_str();
        if !self
            .inner
            .provenance
            .offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(resource)
        {
            return Err(RuntimeError::UnknownSurface {
                name: resource.to_owned(),
                known: "a tab a person offered (see user_tabs)".into(),
            });
        }
        let (state, _op) = self.begin(session).await?;
        let _serial = state.lifecycle.lock().await;
        let record = self
            .inner
            .store
            .claim_resource(&store::ResourceId::new(resource), &sid(session), now_ms())
            .map_err(|e| match e {
                // Never which one: its id is not this session's to know (issue 35).
                store::StoreError::AlreadyClaimed { .. } => RuntimeError::LeaseConflict {
                    holder: "another session, which claimed it first".into(),
                },
                store::StoreError::NotFound { .. } | store::StoreError::NotClaimable { .. } => {
                    RuntimeError::UnknownSurface {
                        name: resource.to_owned(),
                        known: "a person's tab that no session owns (see user_tabs)".into(),
                    }
                }
                other => internal(other),
            })?;
        let attached = match record.cdp_target_id {
            Some(target) => {
                self.attach_entry(&state, session, resource, target.as_str())
                    .await
            }
            None => Err(RuntimeError::Surface(surface::SurfaceError::TargetLost {
                reason: "the tab is gone".into(),
            })),
        };
        match attached {
            Ok(surface) => {
                self.record_branch(session, resource);
                self.activate(session)?;
                Ok(surface)
            }
            Err(e) => {
                // A claim on a tab that cannot be reached is given back at once.
                let _ = self.inner.store.release_resource(
                    &store::ResourceId::new(resource),
                    &sid(session),
                    now_ms(),
                );
                Err(e)
            }
        }
    }

    /// Adds a surface for a tab the session now owns, with its debugger lease; attaching once
    /// proves the tab is there (the lease then idles like any other).
    pub(crate) async fn attach_entry(
        &self,
        state: &Arc<SessionState>,
        session: &str,
        resource: &str,
        target: &str,
    ) -> Result<SurfaceId, RuntimeError> {
        let debugger = DebuggerLease::new(self, session, resource, target);
        drop(debugger.acquire().await?);
        state
            .debuggers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(debugger.clone());
        let surface = SurfaceId(self.next_surface());
        state
            .tabs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(TabEntry {
                surface,
                key: state
                    .next_key
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                resource: resource.to_owned(),
                debugger,
                capabilities: self.adapter().capabilities(),
                turn: state.turn_number(),
                opened_by: None,
                linked_in: None,
            });
        *state.focused.lock().unwrap_or_else(|p| p.into_inner()) = Some(surface);
        Ok(surface)
    }

    /// Gives a claimed tab back to the user (the page stays open; the debugger detaches). Only a
    /// tab the session claimed from a person goes back: a tab the session opened is the agent's
    /// own (closed with `close_tab`, or kept by a mark), never handed over as a person's.
    pub async fn release_tab(
        &self,
        session: &SessionId,
        surface: SurfaceId,
    ) -> Result<(), RuntimeError> {
        let session = session.as_str();
        let (state, _op) = self.begin(session).await?;
        let _serial = state.lifecycle.lock().await;
        let resource = state
            .tabs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|t| t.surface == surface)
            .map(|t| t.resource.clone());
        let resource = resource.ok_or_else(|| RuntimeError::UnknownSurface {
            name: format!("surface {surface}"),
            known: String::new(),
        })?;
        if self
            .inner
            .store
            .get_resource(&store::ResourceId::new(&resource))?
            .ownership
            != Ownership::AgentClaimed
        {
            return Err(RuntimeError::InvalidAction(
                "this is not a claimed tab; tabs this session opened are closed with tab_close"
                    .into(),
            ));
        }
        let entry = self.take_entry(&state, surface)?;
        self.inner
            .store
            .release_resource(
                &store::ResourceId::new(&entry.resource),
                &sid(session),
                now_ms(),
            )
            .map_err(RuntimeError::from)?;
        self.inner.leases.invalidate(entry.target());
        entry.debugger.detach(Some(Retired::Left)).await;
        Ok(())
    }

    /// Marks a tab `deliverable` or `handoff` for the current turn (the latest mark wins; it must
    /// be renewed to survive another turn). A mark is an operation of the session: it never runs
    /// beside a turn end, so it either lands before the turn end reads the marks or finds the
    /// tab already gone — it is never silently lost.
    pub async fn mark(
        &self,
        session: &SessionId,
        surface: SurfaceId,
        mark: Mark,
        turn: &str,
    ) -> Result<(), RuntimeError> {
        let session = session.as_str();
        let (state, _op) = self.begin(session).await?;
        let entry = state
            .tabs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|t| t.surface == surface)
            .cloned();
        let entry = entry.ok_or_else(|| RuntimeError::UnknownSurface {
            name: format!("surface {surface}"),
            known: String::new(),
        })?;
        let record = self
            .inner
            .store
            .set_mark(
                &store::ResourceId::new(&entry.resource),
                &sid(session),
                mark,
                &store::TurnId::new(turn),
                now_ms(),
            )
            .map_err(RuntimeError::from)?;
        if mark == Mark::None {
            self.forget_site_storage(&entry.resource);
        } else {
            self.keep_site_storage(session, &entry, record.url.as_deref())
                .await;
        }
        Ok(())
    }

    /// Saves the site storage of a tab kept for the person (`webtabs.rs`), through its
    /// attachment so its local storage is read too.
    /// Bounded: a browser that does not answer leaves the last saved storage as it was.
    async fn keep_site_storage(&self, session: &str, entry: &TabEntry, url: Option<&str>) {
        let save = async {
            let Ok(attached) = self.attach(entry).await else {
                return;
            };
            let url = attached
                .tab()
                .latest_frame()
                .map(|r| r.document_url().to_owned())
                .or_else(|| url.map(str::to_owned))
                .unwrap_or_default();
            self.save_site_storage(
                &entry.resource,
                Some(session),
                &url,
                Some(&**attached.tab()),
            )
            .await;
        };
        let _ = tokio::time::timeout(Duration::from_secs(3), save).await;
    }

    /// The end of a turn (internal; nothing is shown to the model): close unmarked agent tabs,
    /// release unmarked claims, keep tabs marked in this turn, detach every debugger lease of
    /// the session, kept tabs included (the next operation attaches again on demand). Tools stay
    /// active; the connection stays up.
    /// The session's current turn (`turn_<n>`): the one a mark made now belongs to and the one
    /// [`Runtime::end_current_turn`] ends.
    pub fn current_turn(&self, session: &SessionId) -> Result<String, RuntimeError> {
        Ok(turn_name(self.session(session.as_str())?.turn_number()))
    }

    /// Ends the session's current turn ([`Runtime::end_turn`]) and starts the next: what a client
    /// hook (`glovebox turn-end`) calls. Returns the turn that ended.
    pub async fn end_current_turn(
        &self,
        session: &SessionId,
    ) -> Result<(String, CleanupReport), RuntimeError> {
        let state = self.session(session.as_str())?;
        let ended = state.advance_turn(None).unwrap_or_default();
        let turn = turn_name(ended);
        let report = self.end_turn(session, &turn).await?;
        Ok((turn, report))
    }

    /// The sessions of this runtime, for a person's tools (`glovebox turn-end`, status).
    pub fn sessions(&self) -> Vec<SessionSummary> {
        let sessions: Vec<(String, Arc<crate::runtime::SessionState>)> = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut out: Vec<SessionSummary> = sessions
            .into_iter()
            .filter(|(_, s)| !s.closing.load(std::sync::atomic::Ordering::SeqCst))
            .map(|(id, s)| SessionSummary {
                turn: turn_name(s.turn_number()),
                tools_active: s.tools_active.load(std::sync::atomic::Ordering::SeqCst),
                tabs: s.tabs.lock().unwrap_or_else(|p| p.into_inner()).len(),
                host: s.host_turns.load(std::sync::atomic::Ordering::SeqCst),
                client: s.client.name.clone(),
                client_pid: s.client.pid,
                session: id,
            })
            .collect();
        out.sort_by(|a, b| a.session.cmp(&b.session));
        out
    }

    /// Ends the current turn of `only`, or of every session whose turns its own client ends
    /// (not the host API's chat sessions, whose turns the host ends). One report per session.
    pub async fn end_turns(
        &self,
        only: Option<&SessionId>,
    ) -> Result<Vec<TurnEnded>, RuntimeError> {
        let targets: Vec<SessionId> = match only {
            Some(s) => {
                self.session(s.as_str())?;
                vec![s.clone()]
            }
            None => self
                .sessions()
                .into_iter()
                .filter(|s| !s.host)
                .filter_map(|s| SessionId::new(s.session).ok())
                .collect(),
        };
        let mut out = Vec::new();
        for session in targets {
            let (turn, report) = self.end_current_turn(&session).await?;
            out.push(TurnEnded {
                session,
                turn,
                report,
            });
        }
        Ok(out)
    }

    pub async fn end_turn(
        &self,
        session: &SessionId,
        turn: &str,
    ) -> Result<CleanupReport, RuntimeError> {
        let session = session.as_str();
        self.inner
            .store
            .set_last_turn(&sid(session), &store::TurnId::new(turn), now_ms())
            .map_err(RuntimeError::from)?;
        self.cleanup(session, Some(turn), Boundary::TurnEnd).await
    }

    /// `browser_cleanup`: the explicit task finalize a user asked for. Marked tabs stay open but
    /// leave this session's ownership; tools stay active.
    pub async fn finalize(&self, session: &SessionId) -> Result<CleanupReport, RuntimeError> {
        let session = session.as_str();
        self.cleanup(session, None, Boundary::Finalize).await
    }

    /// `browser_context_reset`: finalize first; only if that succeeded, clear the trackers and
    /// deactivate the session's browser tools. A failed finalize clears nothing.
    pub async fn context_reset(&self, session: &SessionId) -> Result<CleanupReport, RuntimeError> {
        let session = session.as_str();
        let mut report = self.cleanup(session, None, Boundary::Finalize).await?;
        if !report.ok {
            return Ok(report);
        }
        self.deactivate_tools(session, "context_reset")?;
        self.session(session)?
            .tools_active
            .store(false, std::sync::atomic::Ordering::SeqCst);
        self.inner
            .store
            .set_session_state(&sid(session), store::SessionState::Reset, now_ms())
            .map_err(RuntimeError::from)?;
        report.tools_active = false;
        Ok(report)
    }

    /// Ends a session (MCP disconnect, agent disposal): the disposal cleanup, tools deactivated,
    /// its browser context disposed unless handed-over pages are still in it. Failures keep
    /// their recovery records.
    pub async fn close_session(&self, session: &SessionId) -> Result<CleanupReport, RuntimeError> {
        let session = session.as_str();
        let state = self.session(session)?;
        state
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        // Its script runner first: nothing of the session may act while it is cleaned up.
        self.inner.scripts.end(session).await;
        // Nothing the session asked a person about can be approved once it is gone, and what a
        // person allowed for it ends with it.
        self.inner
            .approvals
            .end_scope(crate::approval::Scope::Session(session));
        let report = self.cleanup(session, None, Boundary::Disposal).await?;
        // A detach that failed during the cleanup gets one more try before the session goes;
        // if it still fails, its recovery record stays in the store.
        self.retry_failed_detaches(&state).await;
        let _serial = state.lifecycle.lock().await;
        let _ = self.deactivate_tools(session, "disposal");
        let _ = self.inner.store.set_session_state(
            &sid(session),
            store::SessionState::Disposed,
            now_ms(),
        );
        // Read first: no lock guard may live across the await below (the future must be `Send`).
        let context = state
            .context_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(context) = context {
            // Handoff and deliverable pages stay for the user, and their context with them.
            self.adapter().dispose_context_if_empty(context).await;
        }
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session);
        Ok(CleanupReport {
            tools_active: false,
            ..report
        })
    }

    /// Plugin disposal, host exit (`002_…`: "plugin disposal 等待活动请求并停止 Bridge"): no new
    /// operation starts; operations in flight get up to `wait` to finish, then runs still going
    /// are stopped; every session gets its disposal cleanup; then the browser connection stops (a
    /// launched browser is shut down; a remote one keeps running with nothing of ours attached).
    /// Returns each session's cleanup report. Later operations fail with `backend_unavailable`.
    pub async fn shutdown(&self, wait: Duration) -> Vec<CleanupReport> {
        self.inner
            .connection
            .stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let sessions: Vec<(String, Arc<SessionState>)> = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let deadline = tokio::time::Instant::now() + wait;
        for (_, state) in &sessions {
            // Taking the operation lock exclusively means every operation in flight has ended.
            if tokio::time::timeout_at(deadline, state.ops.clone().write_owned())
                .await
                .is_err()
            {
                break;
            }
        }
        self.inner.runs.stop(None);
        let mut reports = Vec::new();
        for (id, _) in &sessions {
            let Ok(typed) = SessionId::new(id.clone()) else {
                continue;
            };
            match self.close_session(&typed).await {
                Ok(report) => reports.push(report),
                Err(e) => {
                    tracing::warn!(session = %id, error = %e, "disposal cleanup at shutdown failed")
                }
            }
        }
        self.inner.approvals.withdraw_all();
        // This instance ends in order only if every disposal succeeded. Otherwise it stays open:
        // its lock goes with the process, and the next start reconciles it (closing what a
        // remote browser still shows first) rather than recording tabs closed that are not.
        if reports.len() == sessions.len() && reports.iter().all(|r| r.ok) {
            match self.inner.store.end_instance(
                self.inner.instance,
                store::InstanceEnd::Stopped,
                now_ms(),
            ) {
                Ok(_) => self.inner.incarnation.lock.remove(),
                Err(e) => {
                    tracing::warn!(error = %e, "could not record this instance's end; the next start reconciles it")
                }
            }
        }
        self.inner
            .connection
            .stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.adapter().shutdown();
        reports
    }

    /// The pid of the locally launched browser, if the runtime launched one.
    pub fn browser_pid(&self) -> Option<u32> {
        self.adapter().pid()
    }

    /// `browser_status`: tool activation, the connection, every tab of the session with its
    /// ownership and mark, every debugger lease (recorded apart from the tabs), and the pending
    /// recovery records.
    pub fn status(&self, session: &SessionId) -> Result<BrowserStatus, RuntimeError> {
        let session = session.as_str();
        let state = self.session(session)?;
        let leases: Vec<DebuggerLeaseStatus> = state
            .debuggers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|l| l.status())
            .collect();
        let record = self
            .inner
            .store
            .get_session(&sid(session))
            .map_err(RuntimeError::from)?;
        let resources = self
            .inner
            .store
            .list_open_resources(&sid(session))
            .map_err(RuntimeError::from)?;
        let closed_tabs = self
            .inner
            .store
            .count_released_resources(&sid(session))
            .map_err(RuntimeError::from)?;
        let pending = self
            .inner
            .store
            .pending_recoveries(&sid(session))
            .map_err(RuntimeError::from)?
            .len();
        let entries: Vec<TabEntry> = state.tabs.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // A handle is live only while its browser is: a browser killed a moment ago has taken
        // every tab with it, before any later call notices and records the handles as lost.
        let connected = self.adapter().closed_reason().is_none() && self.browser_alive();
        Ok(BrowserStatus {
            // What gates the tools (a fresh session's are on; only a reset turns them off), not
            // the store's record of the first activation.
            tools_active: state.tools_active.load(std::sync::atomic::Ordering::SeqCst),
            activated: record.tools_active,
            bridge: self.bridge_state(),
            pending_recoveries: pending,
            tabs: resources
                .into_iter()
                .map(|r| TabStatus {
                    surface: entries
                        .iter()
                        .find(|e| e.resource == r.id.as_str())
                        .map(|e| e.surface),
                    attached: leases
                        .iter()
                        .any(|l| l.resource == r.id.as_str() && l.attached),
                    opened_by: entries
                        .iter()
                        .find(|e| e.resource == r.id.as_str())
                        .and_then(|e| e.opened_by)
                        .map(|key| format!("s{key}")),
                    // Listed tabs are not released.
                    live: connected && r.cdp_target_id.is_some() && !r.handle_lost,
                    resource: r.id.to_string(),
                    ownership: r.ownership,
                    mark: r.mark,
                    mark_turn: r.mark_turn_id.map(|t| t.to_string()),
                    state: r.state,
                    url: r.url,
                    title: r.title,
                })
                .collect(),
            closed_tabs: usize::try_from(closed_tabs).unwrap_or(usize::MAX),
            debugger_leases: leases,
            reconciled: Some(self.reconciliation()).filter(|r| !r.is_empty()),
        })
    }

    pub(crate) fn bridge_state(&self) -> String {
        if self
            .inner
            .connection
            .stopped
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            "stopped".into()
        } else if self.adapter().closed_reason().is_none() {
            "connected".into()
        } else {
            "reconnecting".into()
        }
    }

    /// Re-establishes the browser connection after it dropped: relaunches a local browser or
    /// reconnects to the remote endpoint. Ownership records are kept; handles into a browser that
    /// died are recorded as lost and never reused; nothing is closed because the connection blinked.
    pub async fn reconnect(&self) -> Result<(), RuntimeError> {
        // One at a time; a connection someone else re-established meanwhile is kept.
        let _one = self.inner.connection.reconnecting.lock().await;
        if self.adapter().closed_reason().is_none() && self.browser_alive() {
            return Ok(());
        }
        self.reconnect_now().await
    }

    /// Whether the launched browser process still runs (a remote one is assumed to).
    fn browser_alive(&self) -> bool {
        !self.adapter().process_dead()
    }

    pub(crate) async fn reconnect_now(&self) -> Result<(), RuntimeError> {
        let relaunched = self.adapter().reconnect().await? == surface::Reconnected::Relaunched;
        let sessions: Vec<(String, Arc<SessionState>)> = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (id, state) in sessions {
            let leases: Vec<Arc<DebuggerLease>> = state
                .debuggers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            if relaunched {
                // A new browser: the old tabs died with the old one. Records stay; handles are
                // lost (below), and the kept tabs come back by the restore.
                let _ = std::mem::take(&mut *state.tabs.lock().unwrap_or_else(|p| p.into_inner()));
                for lease in &leases {
                    lease.detach(Some(Retired::Closed)).await;
                }
                state
                    .debuggers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|l| !l.finished());
                if state
                    .context_id
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_some()
                {
                    let context = self.adapter().create_context(true).await?;
                    *state.context_id.lock().unwrap_or_else(|p| p.into_inner()) = Some(context);
                }
            } else {
                // The same browser: the tabs live on; their attachments went with the old
                // connection and come back on demand.
                for lease in &leases {
                    lease.connection_replaced();
                }
            }
            tracing::info!(session = %id, relaunched, "browser connection re-established");
        }
        if relaunched {
            // Every handle of this process died with the browser: a tab to keep (marked,
            // retained, a person's) waits for the restore; any other agent tab is gone.
            for resource in self
                .inner
                .store
                .instance_handles(self.inner.instance)
                .unwrap_or_default()
            {
                self.inner
                    .leases
                    .invalidate(resource.cdp_target_id.as_ref().map_or("", |t| t.as_str()));
                let keep = resource.mark != Mark::None
                    || resource.state == ResourceState::Retained
                    || resource.ownership != Ownership::AgentCreated;
                if keep {
                    let _ = self.inner.store.lose_handle(&resource.id, now_ms());
                } else {
                    let _ = self.inner.store.transition(
                        &resource.id,
                        resource.version,
                        ResourceState::Released,
                        now_ms(),
                    );
                    let _ = self.inner.store.clear_handle(&resource.id, now_ms());
                }
            }
        }
        self.watch_browser();
        if relaunched {
            self.request_restore();
        }
        Ok(())
    }
}

/// A turn's name (`turn_<n>`).
pub(crate) fn turn_name(n: u64) -> String {
    format!("turn_{n}")
}

/// A turn name's number.
pub(crate) fn turn_number(turn: &str) -> Option<u64> {
    turn.strip_prefix("turn_")?.parse().ok()
}
