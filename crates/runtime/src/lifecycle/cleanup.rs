//! The one cleanup of a lifecycle boundary — a turn's end, a finalize, a disposal — and what it
//! uses: taking a tab out of its session, closing and waiting until closed, settling each
//! resource's record, retrying recovery records.

use super::*;

impl Runtime {
    /// Takes a tab's entry out of the session for a cleanup, unless a turn after `later_than`
    /// holds it — decided under the tabs' lock, where a chat turn binds a tab to its turn.
    fn take_entry_for(
        &self,
        state: &SessionState,
        surface: SurfaceId,
        later_than: Option<u64>,
    ) -> Taken {
        let mut tabs = state.tabs.lock().unwrap_or_else(|p| p.into_inner());
        let Some(index) = tabs.iter().position(|t| t.surface == surface) else {
            return Taken::Gone;
        };
        if later_than.is_some_and(|ended| tabs[index].turn > ended) {
            return Taken::Later;
        }
        Taken::Out(tabs.remove(index))
    }

    pub(super) fn take_entry(
        &self,
        state: &SessionState,
        surface: SurfaceId,
    ) -> Result<TabEntry, RuntimeError> {
        let mut tabs = state.tabs.lock().unwrap_or_else(|p| p.into_inner());
        let index = tabs
            .iter()
            .position(|t| t.surface == surface)
            .ok_or_else(|| RuntimeError::UnknownSurface {
                name: format!("surface {surface}"),
                known: String::new(),
            })?;
        Ok(tabs.remove(index))
    }

    /// Closes an agent tab and records the outcome: `released` on success, else
    /// `cleanup_unknown` with a recovery record (ownership kept).
    pub(crate) async fn close_resource(&self, session: &str, entry: &TabEntry) -> bool {
        let closed = self.close_target(entry.target()).await;
        self.settle_resource(session, &entry.resource, closed, RecoveryKind::CloseFailed)
    }

    /// Closes a target and waits (bounded) until the adapter reports it gone: "closed" must mean
    /// closed. A target Glovebox closes is noted first, so its destruction is not taken for a
    /// person's close.
    pub(crate) async fn close_target(&self, target: &str) -> bool {
        {
            let mut closing = self
                .inner
                .provenance
                .closing
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if closing.len() > 10_000 {
                closing.clear();
            }
            closing.insert(target.to_owned());
        }
        self.adapter()
            .close(target.to_owned(), CLOSE_DEADLINE)
            .await
    }

    fn settle_resource(
        &self,
        session: &str,
        resource: &str,
        succeeded: bool,
        kind: RecoveryKind,
    ) -> bool {
        let id = store::ResourceId::new(resource);
        let Ok(current) = self.inner.store.get_resource(&id) else {
            return false;
        };
        let state = if succeeded {
            ResourceState::Released
        } else {
            ResourceState::CleanupUnknown
        };
        let _ = self
            .inner
            .store
            .transition(&id, current.version, state, now_ms());
        if succeeded {
            let _ = self.inner.store.clear_handle(&id, now_ms());
            self.forget_site_storage(resource);
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

    pub(super) async fn cleanup(
        &self,
        session: &str,
        turn: Option<&str>,
        boundary: Boundary,
    ) -> Result<CleanupReport, RuntimeError> {
        let state = self.session(session)?;
        // No operation of the session runs beside a cleanup (and none starts until it is done).
        let wait = self.inner.config.lifecycle_wait;
        let _ops = match tokio::time::timeout(wait, state.ops.clone().write_owned()).await {
            Ok(guard) => Some(guard),
            Err(_) if boundary == Boundary::Disposal => {
                // Disposal must not hang on a run: stop the session's runs, wait once more,
                // then go ahead regardless (`002_…`: "plugin disposal 继续尝试最终 cleanup，但不能阻塞宿主退出").
                self.cancel_runs(session);
                tokio::time::timeout(wait, state.ops.clone().write_owned())
                    .await
                    .ok()
            }
            Err(_) => {
                return Err(RuntimeError::LeaseConflict {
                    holder: "operations of this session still running".into(),
                });
            }
        };
        let _serial = state.lifecycle.lock().await;
        let mut report = CleanupReport {
            ok: true,
            closed: Vec::new(),
            released: Vec::new(),
            kept: Vec::new(),
            failed: Vec::new(),
            tools_active: false,
            bridge: self.bridge_state(),
        };
        // Resources with a pending recovery are retried here and nowhere else in this cleanup:
        // one record per failure, however often it is retried.
        let retried = self.retry_recoveries(&state, session, &mut report).await;
        let resources = self
            .inner
            .store
            .list_open_resources(&sid(session))
            .map_err(RuntimeError::from)?;
        let entries: Vec<TabEntry> = state.tabs.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut to_close: Vec<(String, Option<TabEntry>, store::Resource)> = Vec::new();
        // A tab a later turn opened, claimed or bound is that turn's: its end decides (a host's
        // next chat turn may bind a tab while the turn before it is still being cleaned up).
        let later_than = if boundary == Boundary::TurnEnd {
            turn.and_then(turn_number)
        } else {
            None
        };
        for resource in resources {
            let id = resource.id.to_string();
            if retried.contains(&id) {
                continue;
            }
            let entry = entries.iter().find(|e| e.resource == id).cloned();
            let ended = turn.and_then(turn_number);
            // Marked in the ending turn (or in a later one that already began).
            let marked_now = resource.mark != Mark::None
                && ended.is_some_and(|ended| {
                    resource
                        .mark_turn_id
                        .as_ref()
                        .and_then(|m| turn_number(m.as_str()))
                        .is_some_and(|m| m >= ended)
                });
            if boundary == Boundary::TurnEnd && marked_now {
                let _ = self.inner.store.transition(
                    &resource.id,
                    resource.version,
                    ResourceState::Retained,
                    now_ms(),
                );
                if let Some(entry) = &entry {
                    self.keep_site_storage(session, entry, resource.url.as_deref())
                        .await;
                }
                // The debugger lease goes at every turn end, marks or not; the tab, its surface
                // and its ownership stay.
                if let Some(entry) = &entry
                    && entry.debugger.detach(None).await == Detach::Failed
                {
                    report.failed.push(id.clone());
                }
                report.kept.push(id);
                continue;
            }
            let marked = resource.mark != Mark::None;
            match resource.ownership {
                Ownership::AgentCreated if !(marked && boundary != Boundary::TurnEnd) => {
                    // Closes run together below: each waits for its tab to go.
                    if let Some(entry) = &entry {
                        if let Taken::Later = self.take_entry_for(&state, entry.surface, later_than)
                        {
                            continue;
                        }
                        self.inner.leases.invalidate(entry.target());
                        entry.debugger.detach(Some(Retired::Closed)).await;
                    }
                    to_close.push((id, entry, resource));
                }
                // A claimed user tab is released, never closed; a marked agent tab at finalize or
                // disposal stays open and leaves this session's ownership.
                _ => {
                    let mut detach = Detach::NotAttached;
                    if let Some(entry) = &entry {
                        match self.take_entry_for(&state, entry.surface, later_than) {
                            Taken::Later => continue,
                            Taken::Gone => {}
                            Taken::Out(taken) => {
                                self.inner.leases.invalidate(taken.target());
                                detach = taken.debugger.detach(Some(Retired::Left)).await;
                            }
                        }
                    }
                    match self
                        .inner
                        .store
                        .release_resource(&resource.id, &sid(session), now_ms())
                    {
                        Ok(_) => {
                            report.released.push(id.clone());
                            if detach == Detach::Failed {
                                report.failed.push(id);
                            }
                        }
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
        for ((id, _, _), closed) in to_close
            .iter()
            .zip(futures_util::future::join_all(closes).await)
        {
            if closed {
                report.closed.push(id.clone());
            } else {
                report.failed.push(id.clone());
            }
        }
        state
            .debuggers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|l| !l.finished());
        // A tab whose detach and close both failed is named once.
        let mut seen = std::collections::HashSet::new();
        report.failed.retain(|id| seen.insert(id.clone()));
        report.ok = report.failed.is_empty();
        report.tools_active = self
            .inner
            .store
            .get_session(&sid(session))
            .map(|s| s.tools_active)
            .unwrap_or(false);
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

    /// Stops the session's runs (disposal).
    fn cancel_runs(&self, session: &str) {
        self.inner.runs.stop(Some(session));
    }

    /// Closes a tab known only by its recorded handle (detached, or from a lost connection).
    async fn close_by_handle(&self, session: &str, resource: &store::Resource) -> bool {
        let closed = self.close_handle(resource).await;
        self.settle_resource(
            session,
            &resource.id.to_string(),
            closed,
            RecoveryKind::CloseFailed,
        )
    }

    /// Retries the session's pending recovery records. Returns the resources whose close or
    /// release was retried (settled or still failing); failures go into the report.
    async fn retry_recoveries(
        &self,
        state: &SessionState,
        session: &str,
        report: &mut CleanupReport,
    ) -> Vec<String> {
        let mut retried = Vec::new();
        let Ok(pending) = self.inner.store.pending_recoveries(&sid(session)) else {
            return retried;
        };
        for recovery in pending {
            let Some(resource_id) = recovery.resource_id.clone() else {
                continue;
            };
            if recovery.kind == RecoveryKind::DetachFailed {
                // The lease that failed to detach retries and settles its own record; without one
                // (the process or the connection that held the attachment is gone) there is
                // nothing left attached.
                let lease = state
                    .debuggers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .iter()
                    .find(|l| l.resource() == resource_id.as_str() && l.has_failed_detach())
                    .cloned();
                match lease {
                    Some(lease) => {
                        if !lease.retry().await {
                            report.failed.push(resource_id.to_string());
                        }
                    }
                    None => {
                        let _ = self.inner.store.record_attempt(recovery.id, None, now_ms());
                        let _ = self.inner.store.resolve_recovery(recovery.id, now_ms());
                    }
                }
                continue;
            }
            let Ok(resource) = self.inner.store.get_resource(&resource_id) else {
                continue;
            };
            let done = match recovery.kind {
                RecoveryKind::CloseFailed => self.close_handle(&resource).await,
                _ => self
                    .inner
                    .store
                    .release_resource(&resource_id, &sid(session), now_ms())
                    .is_ok(),
            };
            let _ = self.inner.store.record_attempt(
                recovery.id,
                (!done).then_some("still failing"),
                now_ms(),
            );
            retried.push(resource_id.to_string());
            if done {
                if let Ok(current) = self.inner.store.get_resource(&resource_id) {
                    let _ = self.inner.store.transition(
                        &resource_id,
                        current.version,
                        ResourceState::Released,
                        now_ms(),
                    );
                }
                let _ = self.inner.store.resolve_recovery(recovery.id, now_ms());
                match recovery.kind {
                    RecoveryKind::CloseFailed => report.closed.push(resource_id.to_string()),
                    _ => report.released.push(resource_id.to_string()),
                }
            } else {
                report.failed.push(resource_id.to_string());
            }
        }
        retried
    }

    /// Closes a recorded handle; a handle into a browser that is gone counts as closed.
    async fn close_handle(&self, resource: &store::Resource) -> bool {
        match (&resource.cdp_target_id, resource.handle_lost) {
            (Some(target), false) => self.close_target(target.as_str()).await,
            _ => true,
        }
    }
}

/// What [`Runtime::take_entry_for`] found.
enum Taken {
    Out(TabEntry),
    /// The session no longer has it.
    Gone,
    /// A later turn holds it.
    Later,
}
