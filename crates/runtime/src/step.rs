//! The one path of every side effect (design invariant 3): a direct call is a run of one step, and
//! a run performs each of its steps here. The caller has already bound the exact tab and holds its
//! write lease; this checks, in order, the fresh frame, the capability, origin and tier, asks a
//! person when policy says so (`approval.rs`), re-checks cancellation and the lease, then acts.
//! It is not the runner's loop (see `run.rs`) nor the policy rules (see `policy`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use policy::{Decision, Effect, RiskFacts};
use protocol::extended::TargetRef;
use protocol::{Capability, ExtendedAction};
use surface::{ActOptions, ActOutcome, FrameRecord, Surface, SurfaceError};

use crate::approval::{ApprovalDecision, ApprovalRequest, Asked};
use crate::events::EventKind;
use crate::lease::Lease;
use crate::records::Described;
use crate::runtime::{Runtime, TabEntry, now_ms, require};
use crate::secrets::Filled;
use crate::{Cancel, RuntimeError};

/// How long past its deadline an action may take before the step stops waiting for it.
const ACT_GRACE: Duration = Duration::from_secs(2);

/// How long a step may wait for a person.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ApprovalWait {
    /// Until this instant (a run's deadline, or a direct call whose client asks its user).
    Until(Instant),
    /// Not at all: the call returns `needs_approval`, the approval stays pending until it
    /// expires, and the identical action sent again after a person decided proceeds once.
    No,
}

/// Where one step acts: the exact tab, held by `lease`, as part of `scope` (a run id, or the
/// session for a direct call: grants and approvals are scoped by it).
pub(crate) struct StepAt<'a> {
    pub(crate) session: &'a str,
    pub(crate) scope: &'a str,
    pub(crate) entry: &'a TabEntry,
    pub(crate) key: &'a str,
    pub(crate) tab: &'a Arc<dyn Surface>,
    pub(crate) lease: &'a Lease,
    pub(crate) cancel: Option<&'a Cancel>,
    pub(crate) wait: ApprovalWait,
    /// What a person's decision is bound to, when not this exact action on this exact tab (a
    /// tab's first page: the URL opened in this session).
    pub(crate) approval_key: Option<String>,
    /// Where the time spent waiting for a person's approval adds up (a run's accounting), in ms.
    pub(crate) approval_time: Option<&'a std::sync::atomic::AtomicU64>,
    /// A person must approve this step whatever policy decides, for this reason (a provider's
    /// safety check on the model's action, in the provider's words). Policy may still refuse;
    /// no grant stands in for the person.
    pub(crate) confirm: Option<String>,
    /// The secrets a person gave the run (none for a direct call): a `type` may write their
    /// placeholders, filled in on its named origins only (`secrets::Given::fill`).
    pub(crate) secrets: &'a crate::secrets::Given,
}

impl Runtime {
    /// Performs one action on the tab `at` names. `Err` means nothing was sent (refused, stale,
    /// denied, still waiting for a person, cancelled); `Ok` carries the receipt.
    pub(crate) async fn step(
        &self,
        at: &StepAt<'_>,
        action: &ExtendedAction,
        options: &ActOptions,
    ) -> Result<ActOutcome, RuntimeError> {
        let (record, intended, filled, located_in) =
            match self.checked(at, action, options.deadline).await {
                Ok(checked) => checked,
                Err(e) => {
                    // Refused before anything was sent: the log says so, with what it would have been.
                    let latest = at
                        .tab
                        .latest_frame()
                        .filter(|r| r.frame_id() == action.expected_frame_id());
                    let intended = Intended::of(action, latest.as_deref(), None);
                    self.record_refused(at, action, &intended.described(latest.as_deref()), &e);
                    return Err(e);
                }
            };
        self.emit(
            at.scope,
            EventKind::ActionSummary {
                action: intended.kind.clone(),
                target: action.targets().next().map(|t| describe_ref(&t)),
                text_chars: intended.text_chars,
                secret: intended.secret_field,
            },
        );
        let mut options = self.step_options(at.session, options);
        // One deadline for the action: what resolving its locator took is not the act's again
        // (a person's decision, when one was asked for, is not counted).
        options.deadline = options.deadline.saturating_sub(located_in);
        // A person's secrets: the action sent has their values (which the surface takes out of
        // all it reports since the run began: `Surface::scrub`); its record has the placeholders.
        let sent = filled.as_ref().map_or(action, |f| &f.action);
        // Secret text about to be typed: from now on no title or address recorded of this
        // target shows it, wherever the page echoes it.
        if intended.secret_field {
            let typed = match sent {
                ExtendedAction::Type(t) => Some(t.text.as_str()),
                ExtendedAction::Dialog(d) => match &d.response {
                    protocol::extended::DialogResponse::Accept {
                        prompt_text: Some(t),
                    } => Some(t.as_str()),
                    _ => None,
                },
                _ => None,
            };
            // The text as typed, and a person's secrets filled into it as themselves (a page may
            // echo only the secret part).
            let mut texts: Vec<String> = typed.map(str::to_owned).into_iter().collect();
            if filled.is_some() {
                texts.extend(at.secrets.values());
            }
            let mut registry = self
                .inner
                .typed_secrets
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let known = registry.entry(at.entry.target().to_owned()).or_default();
            for text in texts
                .iter()
                .filter(|t| t.chars().count() >= policy::MIN_SECRET_CHARS)
            {
                let _ = known.add(text);
            }
        }
        // The network boundary: during the action, requests go only where it was judged to reach.
        options.allowed_origins = Some(intended.allowed.clone());
        // What the agent types stays where the person sent it: the tab stays guarded after.
        options.guard_typed = action.types_text();
        // The last check before sending, under the lock a person's take-over takes.
        let dispatching = match self.begin_dispatch(at.entry.target()) {
            Ok(d) => d,
            Err(e) => {
                self.record_refused(at, action, &intended.described(Some(&*record)), &e);
                return Err(e);
            }
        };
        let open = self.begin_operation(at, action, &intended.described(Some(&*record)))?;
        // The adapter bounds each of its steps, not their sum (a frozen browser let an act take 40
        // s against its 10): past its deadline and a grace the act is over, its effect unknown.
        let mut outcome = match tokio::time::timeout(
            options.deadline + ACT_GRACE,
            at.tab.act(sent, &options),
        )
        .await
        {
            Ok(outcome) => outcome,
            Err(_) => {
                let tab = at.tab.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(ACT_GRACE, tab.release_input()).await;
                });
                Err(SurfaceError::Timeout {
                    what: "the action (whether it took effect is unknown: observe before acting again)".into(),
                    after_ms: (options.deadline + ACT_GRACE).as_millis() as u64,
                })
            }
        };
        drop(dispatching);
        if let Ok(outcome) = &mut outcome {
            self.adopt_downloads(at.scope, outcome);
        }
        self.end_operation(open, &outcome);
        let outcome = outcome?;
        if let Some(o) = &outcome.observation {
            self.note_observed(at.entry.target(), o.title());
        }
        // Windows the action opened are the session's own tabs from now on, opened by this one.
        if !outcome.opened.is_empty() {
            self.adopt_opened(at.session, at.entry, &outcome.opened)
                .await;
        }
        self.emit(
            at.scope,
            EventKind::Receipt {
                action: outcome.receipt.action().as_str().into(),
                state: outcome.receipt.state(),
                effect_uncertain: outcome.receipt.effect_uncertain(),
                detail: outcome.receipt.detail().map(str::to_owned),
            },
        );
        Ok(outcome)
    }

    /// Files the action downloaded become retained artifacts of its scope (a run, or the
    /// session's direct calls); only their ids leave the runtime. One that cannot be kept is
    /// deleted, not left behind unmanaged.
    fn adopt_downloads(&self, scope: &str, outcome: &mut ActOutcome) {
        for download in &mut outcome.downloads {
            if let Err(e) =
                self.inner
                    .artifacts
                    .adopt_download(scope, download, self.next_surface())
            {
                tracing::warn!(error = %e, "a download could not be kept as an artifact; it was deleted");
                let _ = std::fs::remove_file(&download.path);
            }
        }
        outcome.downloads.retain(|d| d.artifact_id.is_some());
    }

    /// Everything before dispatch, in order: the fresh frame first (an approval is never asked
    /// for an element of a frame the action cannot act on: a stale ref would name another
    /// element of a renumbered observation), then capability, origin and tier, a person's
    /// decision when policy asks for one, cancellation and the lease.
    async fn checked(
        &self,
        at: &StepAt<'_>,
        action: &ExtendedAction,
        deadline: Duration,
    ) -> Result<(Arc<dyn FrameRecord>, Intended, Option<Filled>, Duration), RuntimeError> {
        let record = fresh_record(&**at.tab, action)?;
        // Enter sent to whatever has focus could submit any form: where it goes cannot be
        // judged, so it is not sent.
        if action.presses_enter() && action.targets().next().is_none() {
            return Err(RuntimeError::InvalidAction(
                "Enter without a target goes wherever the focus is, which cannot be judged; name the element it is for".into(),
            ));
        }
        // A locator is judged by what it resolves to now (a password field found by its label is a
        // credential write), not only by its words.
        // Within the action's deadline: a page that does not answer fails the act in its time
        // (issue 35: a locator took 30 s before the act's 10 s began).
        let locating = Instant::now();
        let located = match action.targets().next() {
            Some(TargetRef::Locator(locator)) => {
                tokio::time::timeout(deadline, at.tab.locate(&*record, locator))
                    .await
                    .map_err(|_| {
                        RuntimeError::Surface(SurfaceError::Timeout {
                            what: "resolving the locator".into(),
                            after_ms: deadline.as_millis() as u64,
                        })
                    })?
            }
            _ => None,
        };
        let located_in = locating.elapsed();
        let mut intended = Intended::of(action, Some(&*record), located.as_ref());
        // Text typed into a page's prompt for a password, a code or a card is a secret write.
        if let ExtendedAction::Dialog(answer) = action
            && matches!(
                &answer.response,
                protocol::extended::DialogResponse::Accept {
                    prompt_text: Some(_)
                }
            )
            && at.tab.dialog().is_some_and(|d| {
                d.kind == "prompt" && policy::classify_prompt(&d.message).is_secret()
            })
        {
            intended.secret_field = true;
            intended.target = "a prompt for a secret".into();
        }
        // A person's secret goes only into a field on an origin they named for it: refused
        // before anyone is asked about an action that could not be sent.
        // Only where the field's own document is known from its structure (a ref of the frame,
        // or what a locator resolved to): never the page's origin by default, which a field in
        // another origin's frame would not be on.
        let known_field = intended
            .structure
            .is_some()
            .then(|| intended.field_origin(&*record))
            .flatten();
        let filled = at.secrets.fill(action, known_field.as_ref())?;
        if filled.is_some() {
            intended.secret_field = true;
            intended.shown_text = None;
        }
        let judged = self.judge(at, &*record, &intended)?;
        self.approvals(at, action, judged.asks).await?;
        intended.allowed = judged.allowed;
        if at.cancel.is_some_and(Cancel::is_cancelled) {
            return Err(RuntimeError::Cancelled);
        }
        if !self
            .inner
            .leases
            .is_current(at.entry.target(), at.lease, now_ms())
        {
            return Err(RuntimeError::Surface(SurfaceError::TargetLost {
                reason: "the tab's lease is gone (closed, hidden or lost)".into(),
            }));
        }
        Ok((record, intended, filled, located_in))
    }

    /// Uploads read only from the configured upload directory; downloads land in the session's
    /// download directory.
    fn step_options(&self, session: &str, options: &ActOptions) -> ActOptions {
        let mut options = options.clone();
        if options.uploads.is_none()
            && let Some(dir) = &self.inner.config.uploads_dir
        {
            options.uploads = surface::UploadRoot::new(dir)
                .ok()
                .map(|root| root.allow_hidden(self.inner.config.uploads_hidden));
        }
        if options.downloads.is_none() {
            let dir = self.inner.config.data_dir.join("downloads").join(session);
            let _ = std::fs::create_dir_all(&dir);
            options.downloads = Some(dir);
        }
        options
    }

    /// Capability, origin and tier: the approvals a person must give first (none: go ahead) and
    /// the origins the action's requests may reach; `Err` when policy refuses. A write is judged
    /// by every origin it reaches, as the target's structure says when it was observed: the
    /// element's own document (an iframe's), a link's destination, a form's action, a link's
    /// pings. Each is decided alone: a refusal anywhere refuses, and each origin that needs a
    /// person gets its own approval, naming (and granting) exactly that origin.
    fn judge(
        &self,
        at: &StepAt<'_>,
        record: &dyn FrameRecord,
        intended: &Intended,
    ) -> Result<Judged, RuntimeError> {
        match intended.effect {
            Effect::Navigate => self.require_now(at, Capability::Navigate)?,
            Effect::Read => self.require_now(at, Capability::Observe)?,
            _ => self.require_now(at, Capability::Interact)?,
        }
        let mut reaches: Vec<(policy::Origin, Option<String>)> = Vec::new();
        for url in intended
            .navigate_to
            .iter()
            .chain(intended.side_effects.iter().map(|(u, _)| u))
        {
            if let Some(what) = self.controls_glovebox(url) {
                return Err(RuntimeError::OriginDenied {
                    reason: format!(
                        "{} is {what}: never a destination of an agent's action",
                        policy::redact_url(url)
                    ),
                });
            }
        }
        match &intended.navigate_to {
            Some(url) => {
                policy::check_navigation(url, &self.inner.config.navigation).map_err(|e| {
                    RuntimeError::OriginDenied {
                        reason: e.to_string(),
                    }
                })?;
                reaches.extend(policy::Origin::parse(url).ok().map(|o| (o, None)));
            }
            None => {
                reaches.extend(intended.field_origin(record).map(|o| (o, None)));
                for (url, how) in &intended.side_effects {
                    // A destination that is not a web page at all is refused as a navigation is.
                    policy::check_navigation(url, &self.inner.config.navigation).map_err(|e| {
                        RuntimeError::OriginDenied {
                            reason: format!("this {how} {}: {e}", policy::redact_url(url)),
                        }
                    })?;
                    if let Ok(origin) = policy::Origin::parse(url)
                        && !reaches.iter().any(|(o, _)| *o == origin)
                    {
                        let said = format!("this {how} {}", origin.serialize_web());
                        reaches.push((origin, Some(said)));
                    }
                }
            }
        }
        let now = now_ms();
        // Held only while deciding: nothing below awaits.
        let grants = self.inner.approvals.grants();
        let decide_one = |origin: Option<&policy::Origin>| {
            // Credentials going where the person named for the run's secrets are what they
            // asked for; anywhere else they ask a person every time.
            let field = if intended.secret_field
                && !origin.is_some_and(|o| at.secrets.gives_credentials(o))
            {
                policy::Sensitivity::Secret(policy::SecretKind::Password)
            } else {
                policy::Sensitivity::Public
            };
            let facts = RiskFacts {
                effect: intended.effect,
                origin,
                element_role: intended.role.as_deref(),
                element_name: intended.name.as_deref(),
                field,
            };
            let tier = policy::classify(&facts, &self.inner.config.trust);
            policy::decide(
                &policy::Request {
                    run: at.scope,
                    tier,
                    origin,
                },
                &grants,
                &self.inner.config.navigation,
                now,
            )
        };
        let candidates: Vec<(Option<policy::Origin>, Option<String>)> = if reaches.is_empty() {
            vec![(None, None)]
        } else {
            reaches.into_iter().map(|(o, how)| (Some(o), how)).collect()
        };
        // Each origin reached is decided alone: a refusal anywhere refuses; every origin that needs
        // a person is asked about in turn (strictest first, then where the action leads before the
        // page it is on), each approval naming — and granting — exactly its origin.
        let mut allowed: Vec<policy::Origin> = Vec::new();
        let mut asks: Vec<(policy::RiskTier, bool, Option<policy::Origin>, String)> = Vec::new();
        for (origin, how) in candidates {
            match decide_one(origin.as_ref()) {
                Decision::Allow => allowed.extend(origin),
                Decision::Deny { reason } => {
                    return Err(RuntimeError::OriginDenied {
                        reason: how.map_or(reason.clone(), |h| format!("{h}: {reason}")),
                    });
                }
                Decision::Ask { tier, reason } => {
                    let leads = how.is_some();
                    asks.push((
                        tier,
                        leads,
                        origin,
                        how.map_or(reason.clone(), |h| format!("{h}: {reason}")),
                    ));
                }
            }
        }
        if let Some(why) = &at.confirm {
            // A provider's flag makes a person decide even where policy allowed: on the first
            // origin reached (the page, or the navigation's destination).
            match asks.first_mut() {
                Some(first) => {
                    first.3 = format!("{}; the model's provider flagged it: {why}", first.3)
                }
                None => {
                    let origin = allowed.first().cloned();
                    asks.push((
                        policy::RiskTier::R2,
                        false,
                        origin,
                        format!("the model's provider flagged this action: {why}"),
                    ));
                }
            }
        }
        asks.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        // What the action's requests may reach (the network boundary): the origins policy let it
        // reach, those a person is asked about (it goes only if they approve), trusted ones and
        // those granted for the scope.
        allowed.extend(asks.iter().filter_map(|a| a.2.clone()));
        allowed.extend(self.inner.config.trust.trusted_origins.iter().cloned());
        allowed.extend(grants.origins(at.scope, now));
        drop(grants);
        allowed.sort_by_key(|o| o.serialize_web());
        allowed.dedup();
        let mut requests = Vec::new();
        let client = self
            .session(at.session)
            .ok()
            .and_then(|state| state.client.name.clone());
        for (tier, _, origin, reason) in asks {
            requests.push(ApprovalRequest {
                approval_id: protocol::ApprovalId::new(self.fresh_id("approval")).map_err(|e| {
                    RuntimeError::Internal(format!(
                        "an approval id the runtime made is invalid: {e}"
                    ))
                })?,
                session: at.session.to_owned(),
                client: client.clone(),
                run_id: at.scope.to_owned(),
                action: intended.kind.clone(),
                // Page-derived: what a person reads on a terminal or the console, with no
                // escape sequence or control character of the page's.
                target: protocol::text::printable(&intended.target),
                origin: origin.map_or_else(|| "(no origin)".to_owned(), |o| o.serialize_web()),
                tier,
                reason: protocol::text::printable(&reason),
                text_chars: intended.text_chars,
                text: intended.shown_text.clone(),
                files: intended.files.clone(),
                requested_at: now,
                expires_at: now + self.inner.config.approval_timeout.as_millis() as u64,
            });
        }
        Ok(Judged {
            asks: requests,
            allowed,
        })
    }

    /// Asks a person about exactly this action, once for each origin it reaches, and waits as
    /// `at.wait` allows. `Ok` = every one approved. The decisions are one set: all are asked at
    /// once (the person sees every origin the action reaches), a denial of any refuses (and
    /// withdraws the rest), and none is consumed until all are given — so an action nobody
    /// waits for, sent again after each answer, is asked about once per origin, never again
    /// for an origin a person already decided.
    async fn approvals(
        &self,
        at: &StepAt<'_>,
        action: &ExtendedAction,
        requests: Vec<ApprovalRequest>,
    ) -> Result<(), RuntimeError> {
        if requests.is_empty() {
            return Ok(());
        }
        // Bound to who asks (a run, or the session's direct calls) and to exactly what.
        let what = at.approval_key.clone().unwrap_or_else(|| {
            format!(
                "{}\u{0}{}",
                at.entry.target(),
                serde_json::to_string(action).unwrap_or_default()
            )
        });
        let mut asked: Vec<Asking> = Vec::new();
        for request in requests {
            // …and to the origin it names: one action reaching two origins is two decisions.
            let key = format!(
                "{}\u{0}{}\u{0}{what}\u{0}{}",
                at.session, at.scope, request.origin
            );
            // A flagged action's approval grants nothing beyond itself.
            let grant = if at.confirm.is_some() {
                None
            } else {
                policy::Origin::parse(&request.origin).ok()
            };
            let summary = format!(
                "{} {} on {} ({})",
                request.action, request.target, request.origin, request.tier
            );
            let expires_at = request.expires_at;
            let one = match self.inner.approvals.ask(request, key, grant, now_ms()) {
                Asked::Decided {
                    approval_id,
                    decision,
                } => Asking {
                    approval_id,
                    summary,
                    expires_at,
                    decision: Err(decision),
                    waited: false,
                },
                Asked::Pending {
                    approval_id,
                    decision,
                    request,
                    fresh,
                } => {
                    if fresh {
                        self.emit(
                            at.scope,
                            EventKind::ApprovalRequested {
                                approval_id: approval_id.clone(),
                                tier: request.tier,
                                origin: request.origin.clone(),
                                what: format!("{} {}", request.action, request.target),
                            },
                        );
                    }
                    Asking {
                        approval_id,
                        summary,
                        expires_at,
                        decision: Ok(decision),
                        waited: false,
                    }
                }
            };
            asked.push(one);
        }
        let denied = |asked: &[Asking], which: usize| {
            for (i, other) in asked.iter().enumerate() {
                if i == which {
                    self.inner.approvals.take(&other.approval_id);
                } else if other.decision.is_ok() {
                    self.inner.approvals.withdraw(&other.approval_id);
                }
            }
            Err(RuntimeError::ApprovalDenied {
                summary: asked[which].summary.clone(),
            })
        };
        if let Some(which) = asked
            .iter()
            .position(|a| matches!(a.decision, Err(ApprovalDecision::Deny)))
        {
            return denied(&asked, which);
        }
        let pending = |one: &Asking| RuntimeError::NeedsApproval {
            approval_id: one.approval_id.clone(),
            summary: one.summary.clone(),
        };
        let waiting = Instant::now();
        let _count = CountOnDrop(at.approval_time, waiting);
        for which in 0..asked.len() {
            let Ok(decision) = &asked[which].decision else {
                continue;
            };
            let mut decision = decision.clone();
            let ApprovalWait::Until(deadline) = at.wait else {
                return Err(pending(&asked[which]));
            };
            // No longer than the approval itself lives.
            let deadline = deadline.min(
                Instant::now()
                    + std::time::Duration::from_millis(
                        asked[which].expires_at.saturating_sub(now_ms()),
                    ),
            );
            let answered = async {
                loop {
                    if let Some(given) = *decision.borrow_and_update() {
                        return Some(given);
                    }
                    if decision.changed().await.is_err() {
                        return None; // withdrawn
                    }
                }
            };
            let cancelled = async {
                match at.cancel {
                    Some(cancel) => cancel.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            let given = tokio::select! {
                given = answered => given,
                _ = cancelled => {
                    for one in asked.iter().filter(|a| a.decision.is_ok()) {
                        self.inner.approvals.withdraw(&one.approval_id);
                    }
                    return Err(RuntimeError::Cancelled);
                }
                _ = tokio::time::sleep_until(deadline.into()) => {
                    // Out of this caller's time: the approvals stay pending (until they expire)
                    // for the identical action sent again.
                    return Err(pending(&asked[which]));
                }
            };
            let Some(given) = given else {
                return Err(pending(&asked[which]));
            };
            asked[which].waited = true;
            if given == ApprovalDecision::Deny {
                self.emit(
                    at.scope,
                    EventKind::ApprovalResolved {
                        approval_id: asked[which].approval_id.clone(),
                        outcome: given,
                    },
                );
                return denied(&asked, which);
            }
        }
        // Every decision is given: all are taken together, exactly once.
        let ids: Vec<&protocol::ApprovalId> = asked.iter().map(|a| &a.approval_id).collect();
        let Some(decisions) = self.inner.approvals.take_all(&ids) else {
            // The identical action, sent again meanwhile, used the decisions.
            return Err(pending(&asked[0]));
        };
        for (one, decision) in asked.iter().zip(decisions) {
            if one.waited {
                self.emit(
                    at.scope,
                    EventKind::ApprovalResolved {
                        approval_id: one.approval_id.clone(),
                        outcome: decision,
                    },
                );
            }
        }
        Ok(())
    }

    /// A person's decision on a pending approval. Only person channels (console, host API, CLI
    /// prompt, a client's own user through elicitation) call this; no tool a model can call
    /// reaches it. The decision takes effect before this returns: "allow for this site" grants
    /// exactly the origin the person was shown, and the waiting call (or the identical action
    /// sent again) proceeds once.
    pub fn resolve_approval(
        &self,
        approval_id: &protocol::ApprovalId,
        decision: ApprovalDecision,
    ) -> Result<(), RuntimeError> {
        let keep = self.inner.config.approval_timeout.as_millis() as u64;
        let resolved = self
            .inner
            .approvals
            .resolve(approval_id, decision, now_ms(), keep)
            .map_err(|why| RuntimeError::UnknownApproval {
                approval_id: approval_id.clone(),
                why: match why {
                    crate::approval::NotPending::Unknown => {
                        "no such approval is pending (its session or run may have ended)"
                    }
                    crate::approval::NotPending::Expired => {
                        "it expired before it was answered; the model must ask again"
                    }
                    crate::approval::NotPending::Decided => "a person already decided it",
                },
            })?;
        tracing::info!(approval = %approval_id, session = %resolved.session, decision = decision.as_str(), "a person resolved an approval");
        Ok(())
    }

    /// The approvals waiting for a person (never expired or withdrawn ones).
    pub fn pending_approvals(&self) -> Vec<ApprovalRequest> {
        self.inner.approvals.list(now_ms())
    }
}

/// One approval of an action's set: `decision` is the decision already given (`Err`) or the
/// watch to wait on for it (`Ok`).
struct Asking {
    approval_id: protocol::ApprovalId,
    summary: String,
    expires_at: u64,
    decision: Result<tokio::sync::watch::Receiver<Option<ApprovalDecision>>, ApprovalDecision>,
    /// This call waited for the person's answer (its resolution is this call's event).
    waited: bool,
}

/// The tab's latest observation, if `action` was planned against it.
fn fresh_record(
    tab: &dyn Surface,
    action: &ExtendedAction,
) -> Result<Arc<dyn FrameRecord>, RuntimeError> {
    let stale = |reason: String| RuntimeError::Surface(SurfaceError::Stale { reason });
    let record = tab
        .latest_frame()
        .ok_or_else(|| stale("this surface has not been observed yet".into()))?;
    if record.frame_id() != action.expected_frame_id() {
        return Err(stale(format!(
            "frame {} is not the latest observation of this tab (that is {}); observe again",
            action.expected_frame_id().as_str(),
            record.frame_id().as_str()
        )));
    }
    for target in action.targets() {
        if let TargetRef::Ref(e) = target
            && record.target(&e.element).is_none()
        {
            return Err(stale(format!(
                "{} is not a ref of frame {}",
                e.element.as_str(),
                record.frame_id().as_str()
            )));
        }
    }
    Ok(record)
}

pub(crate) fn describe_ref(target: &TargetRef<'_>) -> String {
    match target {
        TargetRef::Ref(e) => e.element.as_str().to_owned(),
        TargetRef::Point(p) => format!("({}, {})", p.x, p.y),
        TargetRef::Locator(_) => "locator".to_owned(),
    }
}

/// What an action is about to do, as policy sees it.
struct Intended {
    kind: String,
    effect: Effect,
    navigate_to: Option<String>,
    /// `role "name"` of the target (page text), or a description.
    target: String,
    role: Option<String>,
    name: Option<String>,
    secret_field: bool,
    text_chars: Option<usize>,
    /// What a person is shown of the text typed into a field that is not secret.
    shown_text: Option<String>,
    /// The files an upload sends.
    files: Vec<String>,
    /// The target's structure when observed (a ref's, or the element under a point).
    structure: Option<surface::TargetStructure>,
    /// Requests the action causes beyond its own page, from that structure: (URL, what causes
    /// it) — a link it follows, a form it submits, the pings it sends.
    side_effects: Vec<(String, &'static str)>,
    /// The origins its requests may reach once judged (the network boundary's list).
    allowed: Vec<policy::Origin>,
}

/// What policy made of an action: a person's approval to ask for, and where its requests may go.
struct Judged {
    /// One request per origin a person must approve, in the order they are asked.
    asks: Vec<ApprovalRequest>,
    allowed: Vec<policy::Origin>,
}

impl Intended {
    /// The origin of the target's own document (an iframe's for an element inside one), else
    /// the page's: where a field typed into is.
    fn field_origin(&self, record: &dyn FrameRecord) -> Option<policy::Origin> {
        self.structure
            .as_ref()
            .map(|s| s.document_origin.as_str())
            .filter(|o| !o.is_empty() && *o != "null")
            .and_then(|o| policy::Origin::parse(o).ok())
            .or_else(|| policy::Origin::parse(record.document_url()).ok())
    }

    /// What a record of the action says: never the text, only its length and sensitivity.
    fn described<'a>(&'a self, record: Option<&'a dyn FrameRecord>) -> Described<'a> {
        Described {
            kind: &self.kind,
            target: &self.target,
            text_chars: self.text_chars,
            secret: self.secret_field,
            url: record.map(|r| r.document_url()),
        }
    }

    /// `record`: the observation the action was planned against, when it is the latest.
    fn of(
        action: &ExtendedAction,
        record: Option<&dyn FrameRecord>,
        located: Option<&surface::LocatedFacts>,
    ) -> Intended {
        let (mut role, mut name, mut target, mut secret) =
            (None, None, "the page".to_owned(), false);
        let mut structure = None;
        if let Some(first) = action.targets().next() {
            match first {
                TargetRef::Ref(e) => {
                    target = e.element.as_str().to_owned();
                    if let Some(b) = record.and_then(|r| r.target(&e.element)) {
                        target = format!("{} \"{}\"", b.role, b.name);
                        role = Some(b.role.clone());
                        name = Some(b.name.clone());
                        secret = b.secret_field;
                        structure = Some(b.structure.clone());
                    }
                }
                TargetRef::Locator(locator) => {
                    // Resolved only when the action runs: classify by what the locator names
                    // (page text can only raise the tier).
                    let (r, n) = locator_words(locator);
                    target = format!(
                        "{} {:?}",
                        r.clone().unwrap_or_else(|| "element".into()),
                        n.clone().unwrap_or_default()
                    );
                    role = r;
                    name = n;
                    if let Some(found) = located {
                        // What it resolved to; the locator's own words still count (they can only raise).
                        target = format!("{} \"{}\" (by locator)", found.role, found.name);
                        if role.is_none() {
                            role = Some(found.role.clone());
                        }
                        name = Some(match name {
                            Some(words) => format!("{words} {}", found.name),
                            None => found.name.clone(),
                        });
                        secret = found.secret;
                        structure = found.structure.clone();
                    }
                }
                TargetRef::Point(p) => {
                    target = format!("point ({}, {})", p.x, p.y);
                    // The element under the point, as observed: classified like its ref.
                    if let Some(b) =
                        record.and_then(|r| r.target_at(f64::from(p.x), f64::from(p.y)))
                    {
                        target = format!("point ({}, {}) on {} \"{}\"", p.x, p.y, b.role, b.name);
                        role = Some(b.role.clone());
                        name = Some(b.name.clone());
                        structure = Some(b.structure.clone());
                    }
                }
            }
        }
        // Enter activates the window's default control (a dialog's `Delete`) wherever focus is:
        // its words count like the target's (they can only raise the tier).
        if action.presses_enter()
            && let Some(d) = record.and_then(|r| r.enter_activates())
        {
            target = format!("{target}, activating the default {} \"{}\"", d.role, d.name);
            name = Some(match name {
                Some(n) => format!("{n} {}", d.name),
                None => d.name.clone(),
            });
        }
        let navigate_to = match action {
            ExtendedAction::Navigate(a) => Some(a.url.as_str().to_owned()),
            _ => None,
        };
        if let Some(url) = &navigate_to {
            target = policy::redact_url(url);
        }
        // What the structure says a click (or Enter in a form field) causes beyond the page.
        // Enter under any of its names, a line break typed, a `key_down` of it: one rule.
        let activates = matches!(action, ExtendedAction::Click(_)) || action.presses_enter();
        let mut side_effects = Vec::new();
        let mut downloads = false;
        let mut credentials = false;
        if let (true, Some(s)) = (activates, &structure) {
            let click = matches!(action, ExtendedAction::Click(_));
            if click && let Some(href) = &s.href {
                downloads = s.download;
                // The scheme in any case (`HTTP://…` opens the same page).
                let scheme = href
                    .split(':')
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if scheme == "http" || scheme == "https" {
                    side_effects.push((href.clone(), "link opens"));
                }
                side_effects.extend(s.pings.iter().map(|p| (p.clone(), "link pings")));
            }
            if let Some(form) = &s.form
                && (form.submits || !click)
                && form.method != "dialog"
            {
                side_effects.push((
                    form.action.clone(),
                    if form.method == "post" {
                        "form posts to"
                    } else {
                        "form submits to"
                    },
                ));
                credentials = form.has_secret_fields;
            }
        }
        let effect = match action {
            ExtendedAction::Upload(_) => Effect::Upload,
            ExtendedAction::Click(click) if click.expect_download => Effect::Download,
            // A link that saves a file is a download whether or not the action expected one.
            ExtendedAction::Click(_) if downloads => Effect::Download,
            ExtendedAction::Navigate(_) => Effect::Navigate,
            ExtendedAction::Scroll(_) | ExtendedAction::Hover(_) | ExtendedAction::Wait(_) => {
                Effect::Read
            }
            _ => Effect::Interact,
        };
        Intended {
            kind: action.kind().as_str().to_owned(),
            effect,
            navigate_to,
            target,
            role,
            name,
            // Typing into a secret field, or submitting a form that holds one, writes credentials.
            secret_field: (secret && matches!(action, ExtendedAction::Type(_))) || credentials,
            text_chars: match action {
                ExtendedAction::Type(t) => Some(t.text.as_str().chars().count()),
                _ => None,
            },
            // A person approves what they can read: the text, unless the field is secret (or the
            // form holds one: then it may be a credential typed into a text box).
            shown_text: match action {
                ExtendedAction::Type(t) if !secret && !credentials => Some(
                    protocol::text::printable(t.text.as_str())
                        .chars()
                        .take(SHOWN_TEXT_MAX)
                        .collect(),
                ),
                _ => None,
            },
            files: match action {
                ExtendedAction::Upload(u) => u
                    .files
                    .as_slice()
                    .iter()
                    .map(|f| protocol::text::printable(f.as_str()))
                    .collect(),
                _ => Vec::new(),
            },
            structure,
            side_effects,
            allowed: Vec::new(),
        }
    }
}

/// How much of a typed text an approval shows.
const SHOWN_TEXT_MAX: usize = 200;

fn locator_words(locator: &protocol::extended::Locator) -> (Option<String>, Option<String>) {
    use protocol::extended::Locator;
    match locator {
        Locator::Role { role, name, .. } => (
            Some(role.as_str().to_owned()),
            name.as_ref().map(|n| n.as_str().to_owned()),
        ),
        Locator::Label { text, .. } | Locator::Text { text, .. } => {
            (None, Some(text.as_str().to_owned()))
        }
        Locator::TestId { id, .. } => (None, Some(id.as_str().to_owned())),
    }
}

/// Adds the time since `.1` to the counter when dropped (every way out of an approval wait).
struct CountOnDrop<'a>(Option<&'a std::sync::atomic::AtomicU64>, Instant);

impl Drop for CountOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(counter) = self.0 {
            counter.fetch_add(
                self.1.elapsed().as_millis() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }
}

impl Runtime {
    /// Glovebox listens at `addr` (its HTTP server): no agent's action may load or reach it.
    pub fn listening_at(&self, addr: std::net::SocketAddr) {
        let mut own = self
            .inner
            .own_listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !own.contains(&addr) {
            own.push(addr);
        }
    }

    /// What `url` is when it reaches Glovebox's own server or the backend's control endpoint
    /// (a browser's DevTools), whose origins are never an agent's destination: loading them
    /// would hand the page the person channel or the browser itself.
    fn controls_glovebox(&self, url: &str) -> Option<&'static str> {
        let origin = policy::Origin::parse(url).ok()?;
        let loopback = |host: &str| {
            host == "localhost"
                || host.ends_with(".localhost")
                || host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        };
        let same = |host: &str, port: u16| {
            origin.port() == port
                && (origin.host() == host || (loopback(host) && loopback(origin.host())))
        };
        let own = self
            .inner
            .own_listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if own.iter().any(|a| {
            let ip = a.ip();
            same(&if ip.is_unspecified() { "127.0.0.1".to_owned() } else { ip.to_string() }, a.port())
                // A server on every address is reached by any of the machine's names.
                || (ip.is_unspecified() && origin.port() == a.port())
        }) {
            return Some("Glovebox's own server");
        }
        let control = self.adapter().control_endpoints();
        if control
            .iter()
            .filter_map(|e| policy::Origin::parse(e).ok())
            .any(|c| same(c.host(), c.port()))
        {
            return Some("the browser's own debugging endpoint");
        }
        None
    }
}

impl Runtime {
    /// The capability as a person has it set now — not as it was when a run or call bound the
    /// tab: an access switch turned down mid-run holds from the run's next step.
    fn require_now(&self, at: &StepAt<'_>, capability: Capability) -> Result<(), RuntimeError> {
        let now = self.session(at.session).ok().and_then(|state| {
            state
                .tabs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .find(|t| t.surface == at.entry.surface)
                .cloned()
        });
        require(now.as_ref().unwrap_or(at.entry), capability, at.key)
    }
}
