//! A person's control of a tab (`004_…` 让出控制的规则): "pause agent, I'll take over" blocks new
//! agent dispatch on that tab's input scope at once, asks the run that holds it to wait, and is
//! reported `paused` only once no agent input is in flight, held keys and buttons are released
//! and the page has been read afresh (so every earlier frame is stale); otherwise `pause_failed`,
//! with dispatch still blocked and a retry possible. "Let the agent continue" is accepted only
//! when paused: the run re-observes and is authorised afresh. The page itself is never covered,
//! dimmed or blocked for the person.
//!
//! The scope is the surface's input domain (the adapter's `input_domain`): a tab is its own, and
//! every window of an X display shares the display's, since a person's input there and an
//! agent's on another window would interleave on one keyboard and mouse. Dispatch and this check
//! meet under one lock (`begin_dispatch`), so no action can slip in after a pause was asked.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;

use crate::RuntimeError;
use crate::runtime::Runtime;

/// How long a pause waits for agent input in flight to finish before it counts as failed.
const PAUSE_DEADLINE: Duration = Duration::from_secs(5);

/// The control state of one tab, as a person sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// No agent holds the tab: the person uses it directly.
    Idle,
    /// An agent holds the tab.
    InUse,
    /// A person asked to take over; agent dispatch is blocked, the stop is not confirmed yet.
    Pausing,
    /// Confirmed: no agent input in flight, input released, the page read afresh.
    Paused,
    /// The stop could not be confirmed in time; agent dispatch stays blocked; retry.
    PauseFailed,
}

/// One input scope's state.
#[derive(Debug, Default)]
pub(crate) struct Scope {
    /// Agent dispatches in flight.
    dispatching: usize,
    /// Set while a person holds the tab.
    taken: Option<Control>,
}

/// The input scopes of this runtime, by input domain.
pub(crate) type Scopes = std::sync::Mutex<HashMap<String, Scope>>;

/// An agent dispatch in flight on a scope; dropping it ends the dispatch.
pub(crate) struct Dispatching {
    runtime: Runtime,
    /// The scope's key (an input domain).
    scope: String,
}

impl Drop for Dispatching {
    fn drop(&mut self) {
        let mut scopes = self
            .runtime
            .inner
            .scopes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(scope) = scopes.get_mut(&self.scope) {
            scope.dispatching = scope.dispatching.saturating_sub(1);
        }
    }
}

impl Runtime {
    /// Starts an agent dispatch on `target`, unless a person holds it: the one check every
    /// action makes just before it is sent, under the same lock a pause takes.
    pub(crate) fn begin_dispatch(&self, target: &str) -> Result<Dispatching, RuntimeError> {
        let key = self.scope_of(target);
        let mut scopes = self.inner.scopes.lock().unwrap_or_else(|p| p.into_inner());
        let scope = scopes.entry(key.clone()).or_default();
        if scope.taken.is_some() {
            return Err(RuntimeError::LeaseConflict {
                holder: "a person, who took over this tab or another surface sharing its keyboard and mouse (they hand it back from the console)"
                    .into(),
            });
        }
        scope.dispatching += 1;
        Ok(Dispatching {
            runtime: self.clone(),
            scope: key,
        })
    }

    /// The input scope `target` belongs to: its input domain.
    fn scope_of(&self, target: &str) -> String {
        self.inner.adapter.input_domain(target).0
    }

    /// Whether a person holds `target`'s scope (a run waits instead of planning its next step).
    pub(crate) fn taken_over(&self, target: &str) -> bool {
        let key = self.scope_of(target);
        self.inner
            .scopes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .is_some_and(|s| s.taken.is_some())
    }

    /// The tab record's live target in this process, and the session entry holding it, if any.
    pub(crate) fn control_target(
        &self,
        resource: &str,
    ) -> Result<(String, Option<crate::runtime::TabEntry>), RuntimeError> {
        let unknown = || RuntimeError::UnknownSurface {
            name: resource.to_owned(),
            known: "an open tab of GET /api/tabs".into(),
        };
        let record = self
            .inner
            .store
            .get_resource(&store::ResourceId::new(resource))
            .map_err(|_| unknown())?;
        let target = record
            .cdp_target_id
            .filter(|_| record.instance == Some(self.inner.instance) && !record.handle_lost)
            .ok_or_else(unknown)?;
        let sessions = self.session_states();
        let entry = sessions.iter().find_map(|s| {
            s.tabs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .find(|t| t.resource == resource)
                .cloned()
        });
        Ok((target.to_string(), entry))
    }

    /// The control state of a tab for a person.
    pub fn control_of(&self, resource: &str) -> Control {
        let Ok((target, entry)) = self.control_target(resource) else {
            return Control::Idle;
        };
        if let Some(taken) = self
            .inner
            .scopes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&self.scope_of(&target))
            .and_then(|s| s.taken)
        {
            return taken;
        }
        if entry.is_some_and(|e| {
            self.inner
                .leases
                .holder(e.target(), crate::runtime::now_ms())
                .is_some()
        }) {
            Control::InUse
        } else {
            Control::Idle
        }
    }

    fn set_taken(&self, target: &str, control: Option<Control>) {
        let key = self.scope_of(target);
        self.inner
            .scopes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key)
            .or_default()
            .taken = control;
    }

    /// "Pause agent, I'll take over" (also a retry after `pause_failed`): blocks agent dispatch
    /// on the tab at once, then confirms the stop (see the module docs). Returns the state reached.
    pub async fn take_over(&self, resource: &str) -> Result<Control, RuntimeError> {
        let (target, entry) = self.control_target(resource)?;
        self.set_taken(&target, Some(Control::Pausing));
        tracing::info!(resource, "a person takes over a tab");
        Ok(self.confirm_pause(&target, entry).await)
    }

    /// A person's acting input in the real entry (`person_view.rs`): when a session holds the
    /// tab and no pause is asked yet, agent dispatch is blocked at once (before the input is
    /// sent) and the stop is confirmed in the background, exactly as a take-over.
    pub(crate) fn person_acts(&self, resource: &str, target: &str) {
        let Ok((_, Some(entry))) = self.control_target(resource) else {
            return;
        };
        {
            let key = self.scope_of(target);
            let mut scopes = self.inner.scopes.lock().unwrap_or_else(|p| p.into_inner());
            let scope = scopes.entry(key).or_default();
            if scope.taken.is_some() {
                return;
            }
            scope.taken = Some(Control::Pausing);
        }
        tracing::info!(
            resource,
            "a person's input in the real entry pauses the agent"
        );
        let (runtime, target) = (self.clone(), target.to_owned());
        tokio::spawn(async move {
            runtime.confirm_pause(&target, Some(entry)).await;
        });
    }

    /// Confirms a pause asked on `target` (see the module docs) and records the state reached.
    async fn confirm_pause(
        &self,
        target: &str,
        entry: Option<crate::runtime::TabEntry>,
    ) -> Control {
        let target = target.to_owned();
        let key = self.scope_of(&target);
        // No agent input in flight any more in the whole scope (none can start now).
        let deadline = tokio::time::Instant::now() + PAUSE_DEADLINE;
        let settled = loop {
            let busy = self
                .inner
                .scopes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&key)
                .map_or(0, |s| s.dispatching);
            if busy == 0 {
                break true;
            }
            if tokio::time::Instant::now() >= deadline {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        // Held keys and buttons released; the page read afresh, so every earlier frame is stale.
        let confirmed = settled
            && match &entry {
                Some(entry) => {
                    let left = deadline
                        .saturating_duration_since(tokio::time::Instant::now())
                        .max(Duration::from_secs(1));
                    tokio::time::timeout(left, async {
                        let attached = self.attach(entry).await.ok()?;
                        if attached.tab().dialog().is_none() {
                            attached.tab().release_input().await.ok()?;
                        }
                        attached
                            .tab()
                            .observe(&Default::default())
                            .await
                            .ok()
                            .map(|_| ())
                    })
                    .await
                    .ok()
                    .flatten()
                    .is_some()
                }
                None => true,
            };
        let state = if confirmed {
            Control::Paused
        } else {
            Control::PauseFailed
        };
        // A hand-back meanwhile wins (it needs `paused`, so it cannot have happened; keep it simple).
        self.set_taken(&target, Some(state));
        state
    }

    /// "Let the agent continue": only when paused. The tab's waiting run observes afresh and is
    /// authorised afresh; nothing the agent had planned is replayed.
    pub fn hand_back(&self, resource: &str) -> Result<(), RuntimeError> {
        let (target, _) = self.control_target(resource)?;
        let key = self.scope_of(&target);
        let state = self
            .inner
            .scopes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .and_then(|s| s.taken);
        if state != Some(Control::Paused) {
            return Err(RuntimeError::InvalidAction(format!(
                "the agent can continue only once the pause is confirmed (the tab is {})",
                serde_json::to_value(state.unwrap_or(Control::Idle))
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            )));
        }
        self.set_taken(&target, None);
        self.continue_runs_on(&target);
        // Runs the pause held on the scope's other surfaces (another window of the display)
        // look afresh too; runs waiting there for another reason keep waiting.
        let mut targets = Vec::new();
        let sessions = self.session_states();
        for s in sessions {
            for t in s.tabs.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                if t.target() != target
                    && self.scope_of(t.target()) == key
                    && !targets.iter().any(|x| x == t.target())
                {
                    targets.push(t.target().to_owned());
                }
            }
        }
        for t in &targets {
            self.inner.runs.continue_taken_over(t);
        }
        tracing::info!(resource, "a person handed a tab back to the agent");
        Ok(())
    }
}
