//! Chat turns: a chat command validated against the registry, its tabs bound to the chat's
//! session, its previews and immutable snapshot; the tool calls that resolve only in it; the
//! turn's end and the chat's close.

use super::*;

impl Runtime {
    /// A chat command: validates its references against the connection's registry (before any
    /// preview or adapter call: unknown, cross-connection, hidden, other-group or stale
    /// references are refused), binds each referenced web tab to the chat session, captures the
    /// bounded previews and returns the server-owned Surface Context with its tools. The
    /// snapshot is immutable; tool calls of the response resolve only in it.
    pub async fn chat_turn(
        &self,
        connection: ConnectionId,
        request: ChatTurnRequest,
    ) -> Result<ChatTurn, RuntimeError> {
        let prepared = self.prepare_chat_turn(connection, request).await?;
        self.complete_chat_turn(prepared).await
    }

    /// The first half of a chat command: validation against the registry, binding and aliases,
    /// with no preview yet. A transport awaits it in the order of the connection's messages
    /// (so a registry event sent after the command never changes what the command was validated
    /// against) and may then let [`Runtime::complete_chat_turn`] capture the previews while it
    /// goes on reading registry events: a layout change during a capture discards that preview.
    pub async fn prepare_chat_turn(
        &self,
        connection: ConnectionId,
        request: ChatTurnRequest,
    ) -> Result<PreparedTurn, RuntimeError> {
        check_id("chat_session_id", &request.chat_session_id)?;
        if let Some(branch) = &request.branch_id {
            check_id("branch_id", branch)?;
        }
        let window_id = lock(&self.host().connections)
            .get(&connection)
            .cloned()
            .ok_or_else(|| unknown("connection", "this connection"))?;
        // 1. Validation against the registry, all of it before anything else.
        struct Chosen {
            registry_surface_id: String,
            entry: Entry,
            focused: bool,
        }
        let (chosen, layout_revision) = {
            let windows = lock(&self.host().windows);
            let window = windows
                .get(&window_id)
                .filter(|w| w.connection == Some(connection))
                .ok_or_else(|| unknown("window", &window_id))?;
            if request.window_revision != window.window_revision {
                return Err(stale(format!(
                    "window revision {} is not the registry's {}",
                    request.window_revision, window.window_revision
                )));
            }
            if request.layout_revision != window.layout_revision {
                return Err(stale(format!(
                    "layout revision {} is not the registry's {}",
                    request.layout_revision, window.layout_revision
                )));
            }
            let chat = window
                .surfaces
                .get(&request.chat_surface_id)
                .ok_or_else(|| unknown("chat surface", &request.chat_surface_id))?;
            if chat.kind != EntryKind::Chat {
                return Err(RuntimeError::InvalidAction(format!(
                    "{} is not a chat surface",
                    request.chat_surface_id
                )));
            }
            if request.focused_registry_surface_id != window.focused {
                return Err(stale(format!(
                    "focus {:?} is not the registry's {:?}",
                    request.focused_registry_surface_id, window.focused
                )));
            }
            let mut chosen = Vec::new();
            for r in &request.visible {
                let entry = window
                    .surfaces
                    .get(&r.registry_surface_id)
                    .ok_or_else(|| unknown("surface", &r.registry_surface_id))?;
                if r.surface_revision != entry.surface_revision {
                    return Err(stale(format!(
                        "surface revision {} of {} is not the registry's {}",
                        r.surface_revision, r.registry_surface_id, entry.surface_revision
                    )));
                }
                if entry.kind != EntryKind::WebTab {
                    return Err(RuntimeError::InvalidAction(format!(
                        "{} is not a web tab",
                        r.registry_surface_id
                    )));
                }
                if !entry.visible {
                    return Err(unknown("visible surface", &r.registry_surface_id));
                }
                if chat.group_id.is_none() || entry.group_id != chat.group_id {
                    return Err(unknown(
                        "surface of the chat's group",
                        &r.registry_surface_id,
                    ));
                }
                if chosen
                    .iter()
                    .any(|c: &Chosen| c.registry_surface_id == r.registry_surface_id)
                {
                    return Err(RuntimeError::InvalidAction(format!(
                        "{} is referenced twice",
                        r.registry_surface_id
                    )));
                }
                let focused = window.focused.as_deref() == Some(r.registry_surface_id.as_str());
                chosen.push(Chosen {
                    registry_surface_id: r.registry_surface_id.clone(),
                    entry: entry.clone(),
                    focused,
                });
            }
            (chosen, window.layout_revision)
        };

        // 2. The chat session's Glovebox session (created on its first turn).
        let session = self
            .chat_session(&request.chat_session_id, &window_id)
            .await?;
        let state = self.session(session.as_str())?;
        let turn_number = state.turn_number();
        let turn = crate::lifecycle::turn_name(turn_number);
        *lock(&state.branch) = request.branch_id.clone();

        // 3. Bind each referenced tab to the session (claimed for the turn) with its access.
        let mut bound: Vec<(Chosen, Option<SurfaceId>, SurfaceKey)> = Vec::new();
        for c in chosen {
            let local = c.entry.local_surface_id.clone().unwrap_or_default();
            if c.entry.access == Access::Off {
                // Present but inaccessible: a key, no tab, no preview, no tool.
                let key = SurfaceKey::from_index(self.reserve_key(&session)?);
                bound.push((c, None, key));
                continue;
            }
            // A tab the session holds is this turn's from now (the end of the turn before
            // leaves it alone); one it does not hold is claimed (after that end, if it runs).
            let held = lock(&state.tabs)
                .iter_mut()
                .find(|t| t.resource == local)
                .map(|t| {
                    t.turn = t.turn.max(turn_number);
                    t.surface
                });
            let surface = match held {
                Some(s) => s,
                None => match self.claim_tab(&session, &local).await {
                    Ok(s) => s,
                    // Another session holds the tab, or it is gone: the turn still gets its
                    // context, with this surface present but unusable (no tool reaches it).
                    Err(e)
                        if matches!(
                            e.code(),
                            ErrorCode::LeaseConflict
                                | ErrorCode::TargetLost
                                | ErrorCode::UnknownSurface
                        ) =>
                    {
                        tracing::info!(tab = %local, error = %e, "a referenced tab cannot be bound this turn");
                        let key = SurfaceKey::from_index(self.reserve_key(&session)?);
                        bound.push((c, None, key));
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            self.set_capabilities(&session, surface, c.entry.access.capabilities())?;
            let key = self
                .surface_key(&session, surface)
                .and_then(|k| k.parse::<SurfaceKey>().ok())
                .ok_or_else(|| RuntimeError::Internal("a claimed tab without a key".into()))?;
            bound.push((c, Some(surface), key));
        }

        // 4. Aliases (`000_…` §06 rules 2–4) and the primary surface (rule 5).
        let controllable = |b: &(Chosen, Option<SurfaceId>, SurfaceKey)| {
            b.0.entry.access != Access::Off && b.1.is_some()
        };
        let mut aliases: Vec<Vec<SurfaceAlias>> = vec![Vec::new(); bound.len()];
        let alias =
            |s: &str| SurfaceAlias::new(s).map_err(|e| RuntimeError::Internal(e.to_string()));
        for region in [Region::Left, Region::Right, Region::Center] {
            let mut inside = bound
                .iter()
                .enumerate()
                .filter(|(_, b)| controllable(b) && b.0.entry.region == Some(region));
            if let (Some((i, _)), None) = (inside.next(), inside.next()) {
                aliases[i].push(alias(region_name(region))?);
            }
        }
        if let Some(i) = bound.iter().position(|b| controllable(b) && b.0.focused) {
            aliases[i].push(alias("focused")?);
        }
        let mut order: Vec<usize> = (0..bound.len())
            .filter(|&i| controllable(&bound[i]))
            .collect();
        order.sort_by(|&a, &b| {
            (bound[a].0.entry.order, &bound[a].0.registry_surface_id)
                .cmp(&(bound[b].0.entry.order, &bound[b].0.registry_surface_id))
        });
        for (n, &i) in order.iter().enumerate() {
            aliases[i].push(alias(&format!("web:{}", n + 1))?);
        }
        let primary = bound
            .iter()
            .position(|b| controllable(b) && b.0.focused)
            .or_else(|| (order.len() == 1).then(|| order[0]))
            .map(|i| bound[i].2.clone());
        let bound = bound
            .into_iter()
            .zip(aliases)
            .map(|((c, surface, key), aliases)| BoundSurface {
                registry_surface_id: c.registry_surface_id,
                entry: c.entry,
                surface,
                key,
                aliases,
            })
            .collect();
        Ok(PreparedTurn {
            connection,
            window_id,
            layout_revision,
            session,
            turn,
            bound,
            primary,
        })
    }

    /// The second half of a chat command: the previews (each discarded when the window's layout
    /// changed while it was captured, retried once, then `unavailable`), the Surface Context and
    /// its immutable snapshot.
    pub async fn complete_chat_turn(
        &self,
        prepared: PreparedTurn,
    ) -> Result<ChatTurn, RuntimeError> {
        let PreparedTurn {
            connection,
            window_id,
            layout_revision,
            session,
            turn,
            bound,
            primary,
        } = prepared;
        // 5. Previews, each discarded when the layout changed while it was captured (retried
        //    once, then `unavailable`).
        //    Tabs are previewed side by side (each under its own read barrier).
        let previews = futures_util::future::join_all(bound.iter().map(|b| async {
            match b.surface {
                Some(s) => Some(
                    self.turn_preview(&session, s, &window_id, layout_revision)
                        .await,
                ),
                None => None,
            }
        }))
        .await;
        // A surface that could not be bound (held elsewhere, gone) says so: an unavailable
        // preview, no capabilities. One the user switched off has no preview at all.
        let previews: Vec<Option<Preview>> = previews
            .into_iter()
            .zip(&bound)
            .map(|(p, b)| {
                if b.surface.is_none() && b.entry.access != Access::Off {
                    Some(Preview::unavailable(String::new(), String::new(), now_ms()))
                } else {
                    p
                }
            })
            .collect();
        let mut surfaces = Vec::new();
        let mut bindings = HashMap::new();
        for (b, preview) in bound.into_iter().zip(previews) {
            let capabilities = if b.surface.is_some() {
                b.entry.access.capabilities()
            } else {
                Vec::new()
            };
            surfaces.push(
                SurfaceEntry::new(
                    b.key.clone(),
                    b.aliases,
                    SurfaceKind::WebTab,
                    b.entry.region,
                    capabilities,
                    preview,
                )
                .map_err(|e| RuntimeError::Internal(e.to_string()))?,
            );
            bindings.insert(
                b.key,
                Binding {
                    window_id: window_id.clone(),
                    connection,
                    registry_surface_id: b.registry_surface_id,
                    generation: b.entry.generation,
                    surface: b.surface,
                },
            );
        }
        let n = self.host().next.fetch_add(1, Ordering::Relaxed) + 1;
        let provider_request_id = format!("req_{}", crate::runtime::random_hex(12)?);
        let context = SurfaceContext::new(
            ContextId::new(format!("ctx_{n}"))
                .map_err(|e| RuntimeError::Internal(e.to_string()))?,
            n,
            TurnId::new(turn.clone()).map_err(|e| RuntimeError::Internal(e.to_string()))?,
            ProviderRequestId::new(provider_request_id.clone())
                .map_err(|e| RuntimeError::Internal(e.to_string()))?,
            primary,
            surfaces,
        )
        .map_err(|e| RuntimeError::Internal(e.to_string()))?;
        let names = context.selectable_names();
        let tools = if names.is_empty() {
            Vec::new()
        } else {
            vec![protocol::schema::computer_use_tool(&names)]
        };
        let snapshot = Arc::new(Snapshot {
            connection,
            session: session.clone(),
            turn,
            bindings,
            context: context.clone(),
            tool_calls: Default::default(),
            last_used: std::sync::Mutex::new(Instant::now()),
        });
        {
            let mut snapshots = lock(&self.host().snapshots);
            snapshots.retain(|_, s| lock(&s.last_used).elapsed() < SNAPSHOT_TTL);
            if snapshots.len() >= MAX_SNAPSHOTS {
                return Err(RuntimeError::LeaseConflict {
                    holder: format!("{MAX_SNAPSHOTS} turns still open; end some turns first"),
                });
            }
            snapshots.insert(provider_request_id, snapshot);
        }
        Ok(ChatTurn {
            context,
            tools,
            session,
        })
    }

    /// The chat session's Glovebox session, created on its first turn; its turns are the host's.
    async fn chat_session(
        &self,
        chat_session_id: &str,
        window_id: &str,
    ) -> Result<SessionId, RuntimeError> {
        let mut chats = self.host().chats.lock().await;
        if let Some(c) = chats.get(chat_session_id) {
            if c.window_id != window_id {
                return Err(unknown("chat session of this window", chat_session_id));
            }
            if self.session(c.session.as_str()).is_ok() {
                return Ok(c.session.clone());
            }
        }
        let session = self.create_session().await?;
        self.session(session.as_str())?
            .host_turns
            .store(true, Ordering::SeqCst);
        chats.insert(
            chat_session_id.to_owned(),
            ChatSession {
                session: session.clone(),
                window_id: window_id.to_owned(),
            },
        );
        Ok(session)
    }

    fn reserve_key(&self, session: &SessionId) -> Result<u32, RuntimeError> {
        Ok(self
            .session(session.as_str())?
            .next_key
            .fetch_add(1, Ordering::Relaxed))
    }

    async fn turn_preview(
        &self,
        session: &SessionId,
        surface: SurfaceId,
        window_id: &str,
        layout_revision: u64,
    ) -> Preview {
        // The first capture is judged against the layout the command was validated against; the
        // retry against the layout read just before it (`000_…` §06: read before and after,
        // discard on any change, retry once, then unavailable).
        let layout = || {
            lock(&self.host().windows)
                .get(window_id)
                .map(|w| w.layout_revision)
        };
        let mut before = Some(layout_revision);
        for attempt in 0..2 {
            if attempt > 0 {
                before = layout();
            }
            let preview = self.preview_of(session, surface, PREVIEW_DEADLINE).await;
            if before.is_some() && layout() == before {
                return preview;
            }
            tracing::debug!(
                ?surface,
                attempt,
                "the layout changed while a turn preview was captured; discarded"
            );
        }
        Preview::unavailable(String::new(), String::new(), now_ms())
    }

    /// The snapshot a tool call names, and the binding of the surface it names in it: the
    /// snapshot must be this connection's, the tool call id new in it, the binding still valid
    /// (its surface not hidden, closed, moved out of its group or disconnected: `target_lost`).
    fn bound(
        &self,
        connection: ConnectionId,
        envelope: &Envelope,
        surface: Option<&SurfaceName>,
    ) -> Result<(SessionId, SurfaceKey, SurfaceId), RuntimeError> {
        let snapshot = lock(&self.host().snapshots)
            .get(&envelope.source_provider_request_id)
            .cloned();
        let snapshot = snapshot
            .filter(|s| s.connection == connection)
            .ok_or_else(|| unknown("provider request", &envelope.source_provider_request_id))?;
        check_id("tool_call_id", &envelope.tool_call_id)?;
        if !lock(&snapshot.tool_calls).insert(envelope.tool_call_id.clone()) {
            return Err(RuntimeError::InvalidAction(format!(
                "tool call {} was executed already",
                envelope.tool_call_id
            )));
        }
        *lock(&snapshot.last_used) = Instant::now();
        let entry = snapshot.context.resolve(surface).map_err(|e| match e {
            protocol::SurfaceError::Ambiguous => RuntimeError::AmbiguousSurface {
                known: names(&snapshot.context),
            },
            protocol::SurfaceError::Unknown(name) => RuntimeError::UnknownSurface {
                name,
                known: names(&snapshot.context),
            },
        })?;
        let key = entry.surface_key().clone();
        let binding = snapshot
            .bindings
            .get(&key)
            .ok_or_else(|| RuntimeError::Internal("a snapshot surface without a binding".into()))?;
        let Some(tab) = binding.surface else {
            return Err(RuntimeError::CapabilityDenied {
                surface: key.to_string(),
                capability: "observe (the user switched access off, or its tab is gone or held by another session this turn)".into(),
            });
        };
        let valid = {
            let windows = lock(&self.host().windows);
            windows.get(&binding.window_id).is_some_and(|w| {
                w.connection == Some(binding.connection)
                    && w.surfaces
                        .get(&binding.registry_surface_id)
                        .is_some_and(|e| e.generation == binding.generation && e.visible)
            })
        };
        if !valid {
            return Err(RuntimeError::Surface(surface::SurfaceError::TargetLost {
                reason: format!(
                    "{key} was hidden, closed, moved out of its group or its window disconnected; nothing else is chosen in its place"
                ),
            }));
        }
        Ok((snapshot.session.clone(), key, tab))
    }

    /// A tool call's observation, on the exact surface its snapshot names.
    pub async fn host_observe(
        &self,
        connection: ConnectionId,
        envelope: &Envelope,
        surface: Option<&SurfaceName>,
        options: &surface::ObserveOptions,
    ) -> Result<(SurfaceKey, Observation), RuntimeError> {
        let (session, key, _) = self.bound(connection, envelope, surface)?;
        let observation = self
            .observe(&session, Some(&SurfaceName::Key(key.clone())), options)
            .await?;
        Ok((key, observation))
    }

    /// A tool call's action, on the exact surface its snapshot names, through the one step path.
    pub async fn host_act(
        &self,
        connection: ConnectionId,
        envelope: &Envelope,
        surface: Option<&SurfaceName>,
        action: &ExtendedAction,
        options: &surface::ActOptions,
    ) -> Result<(SurfaceKey, surface::ActOutcome), RuntimeError> {
        let (session, key, _) = self.bound(connection, envelope, surface)?;
        let outcome = self
            .act(
                &session,
                Some(&SurfaceName::Key(key.clone())),
                action,
                options,
                Duration::ZERO,
            )
            .await?;
        Ok((key, outcome))
    }

    /// A tool call's `gui_exec` on the exact surface its snapshot names (a script's steps that
    /// need a person raise `NeedsApproval`; the person answers in the console, and the step
    /// sent again proceeds once).
    pub async fn host_gui_exec(
        &self,
        connection: ConnectionId,
        envelope: &Envelope,
        surface: Option<&SurfaceName>,
        code: &str,
    ) -> Result<(SurfaceKey, script::ExecResult), RuntimeError> {
        let (session, key, _) = self.bound(connection, envelope, surface)?;
        let result = self
            .gui_exec(
                &session,
                Some(&SurfaceName::Key(key.clone())),
                code,
                Duration::ZERO,
            )
            .await?;
        Ok((key, result))
    }

    /// A tool call's `computer_use` run on the exact surface its snapshot names: the runner with
    /// `planner`, approvals asked of a person (the person channel) within the run's deadline.
    pub fn host_run(
        &self,
        connection: ConnectionId,
        envelope: &Envelope,
        input: &protocol::ComputerUseInput,
        secrets: protocol::Secrets,
        planner: Box<dyn crate::Planner>,
    ) -> Result<
        (
            SurfaceKey,
            crate::RunHandle,
            tokio::task::JoinHandle<protocol::RunResult>,
        ),
        RuntimeError,
    > {
        let (session, key, _) = self.bound(connection, envelope, input.surface.as_ref())?;
        let mut request = crate::RunRequest::new(input.task.as_str());
        request.surface = Some(SurfaceName::Key(key.clone()));
        request.url = input.url.as_ref().map(|u| u.as_str().to_owned());
        request.max_steps = input.max_steps.get();
        request.max_seconds = input.max_seconds.get();
        request.secrets = secrets;
        let (handle, join) = self.start_run(&session, request, planner)?;
        Ok((key, handle, join))
    }

    /// The host's turn end of a chat session: [`Runtime::begin_host_turn_end`], then
    /// [`Runtime::finish_host_turn_end`].
    pub async fn host_turn_end(
        &self,
        connection: ConnectionId,
        chat_session_id: &str,
        turn_id: &str,
    ) -> Result<Option<crate::TurnEnded>, RuntimeError> {
        match self
            .begin_host_turn_end(connection, chat_session_id, turn_id)
            .await?
        {
            Some(ending) => self.finish_host_turn_end(ending).await.map(Some),
            None => Ok(None),
        }
    }

    /// The first half of a host's turn end, which a transport awaits in the order of the
    /// connection's messages: the turn ends here — the next turn begins (a chat command after
    /// this is that turn, and what it binds is its own) and the ended turn's snapshots resolve
    /// nothing more. `None`: that turn is not the current one (it ended before: a turn end is
    /// idempotent).
    pub async fn begin_host_turn_end(
        &self,
        connection: ConnectionId,
        chat_session_id: &str,
        turn_id: &str,
    ) -> Result<Option<TurnEnding>, RuntimeError> {
        let window_id = lock(&self.host().connections)
            .get(&connection)
            .cloned()
            .ok_or_else(|| unknown("connection", "this connection"))?;
        let session = {
            let chats = self.host().chats.lock().await;
            let chat = chats
                .get(chat_session_id)
                .filter(|c| c.window_id == window_id)
                .ok_or_else(|| unknown("chat session", chat_session_id))?;
            chat.session.clone()
        };
        let Some(ended) = crate::lifecycle::turn_number(turn_id) else {
            return Ok(None);
        };
        if self
            .session(session.as_str())?
            .advance_turn(Some(ended))
            .is_none()
        {
            return Ok(None);
        }
        lock(&self.host().snapshots).retain(|_, s| !(s.session == session && s.turn == turn_id));
        Ok(Some(TurnEnding {
            session,
            turn: turn_id.to_owned(),
        }))
    }

    /// The second half: the runtime's turn end cleanup of the ended turn (claims given back,
    /// unmarked agent tabs closed, turn-scoped marks expire, leases detached), which may run
    /// beside the next turn's messages — it leaves alone what a later turn holds.
    pub async fn finish_host_turn_end(
        &self,
        ending: TurnEnding,
    ) -> Result<crate::TurnEnded, RuntimeError> {
        let TurnEnding { session, turn } = ending;
        let report = self.end_turn(&session, &turn).await?;
        Ok(crate::TurnEnded {
            session,
            turn,
            report,
        })
    }

    /// The host closed a chat session: its Glovebox session gets the disposal cleanup (claimed
    /// tabs given back, unmarked agent tabs closed, marked ones handed to the person) and ends.
    pub async fn host_chat_close(
        &self,
        connection: ConnectionId,
        chat_session_id: &str,
    ) -> Result<crate::CleanupReport, RuntimeError> {
        let window_id = lock(&self.host().connections)
            .get(&connection)
            .cloned()
            .ok_or_else(|| unknown("connection", "this connection"))?;
        let session = {
            let mut chats = self.host().chats.lock().await;
            if chats
                .get(chat_session_id)
                .is_none_or(|c| c.window_id != window_id)
            {
                return Err(unknown("chat session", chat_session_id));
            }
            chats.remove(chat_session_id).map(|c| c.session)
        };
        let Some(session) = session else {
            return Err(unknown("chat session", chat_session_id));
        };
        lock(&self.host().snapshots).retain(|_, s| s.session != session);
        self.close_session(&session).await
    }

    /// Live snapshots, windows and registered surfaces (for status and figures).
    pub fn host_counts(&self) -> (usize, usize, usize) {
        let windows = lock(&self.host().windows);
        (
            lock(&self.host().snapshots).len(),
            windows.len(),
            windows.values().map(|w| w.surfaces.len()).sum(),
        )
    }

    /// The renderer instance a window is bound to now.
    pub fn window_renderer(&self, window_id: &str) -> Option<String> {
        lock(&self.host().windows)
            .get(window_id)
            .map(|w| w.renderer_instance_id.clone())
    }
}
