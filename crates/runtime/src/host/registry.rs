//! The window registry: a host's windows, their renderer connections and the registry events
//! that say what each window shows (`000_…` §06). Validation happens here, before anything else.

use super::*;

impl Runtime {
    pub(super) fn host(&self) -> &HostRegistry {
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

    pub(super) async fn drop_connection_state(&self, connection: ConnectionId, window_id: &str) {
        lock(&self.host().snapshots).retain(|_, s| s.connection != connection);
        for session in self.window_sessions(window_id).await {
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
        let access = match &event {
            RegistryEvent::Update {
                registry_surface_id,
                access: Some(access),
                ..
            } => Some((registry_surface_id.clone(), *access)),
            _ => None,
        };
        let (ack, lost) = self.apply_event(connection, event)?;
        // A tab hidden, moved out of its group or closed loses its leases at once: a run or
        // call on it gets `target_lost` at its next side effect, never another tab.
        if let Some((window_id, local)) = lost {
            self.invalidate_window_tab(&window_id, &local).await;
        }
        // The person's access switch holds at once, in the turn under way too: the tab's
        // capabilities in every chat session of the window that holds it (a run's next write
        // is judged by them).
        if let Some((registry_surface_id, access)) = access {
            let shown = {
                let windows = lock(&self.host().windows);
                windows
                    .iter()
                    .find(|(_, w)| w.connection == Some(connection))
                    .and_then(|(id, w)| {
                        let local = w
                            .surfaces
                            .get(&registry_surface_id)?
                            .local_surface_id
                            .clone()?;
                        Some((id.clone(), local))
                    })
            };
            if let Some((window_id, local)) = shown {
                self.set_window_tab_access(&window_id, &local, access).await;
            }
        }
        Ok(ack)
    }

    async fn set_window_tab_access(&self, window_id: &str, local: &str, access: Access) {
        for session in self.window_sessions(window_id).await {
            let Ok(state) = self.session(session.as_str()) else {
                continue;
            };
            for tab in state
                .tabs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter_mut()
                .filter(|t| t.resource == local)
            {
                tab.capabilities = access.capabilities();
            }
        }
    }

    /// The Glovebox sessions of a window's chats.
    async fn window_sessions(&self, window_id: &str) -> Vec<SessionId> {
        self.host()
            .chats
            .lock()
            .await
            .values()
            .filter(|c| c.window_id == window_id)
            .map(|c| c.session.clone())
            .collect()
    }

    async fn invalidate_window_tab(&self, window_id: &str, local: &str) {
        for session in self.window_sessions(window_id).await {
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

    pub(super) fn is_offered(&self, resource: &str) -> bool {
        self.inner
            .provenance
            .offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(resource)
    }
}
