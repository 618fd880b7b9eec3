//! The runner loop of one run: observe, ask the planner, take the step on the one path
//! (`step.rs`), wait for a person when the page needs one, and verify the planner's claim of
//! done; every way out is an `Ending` the run's one cleanup turns into its result.

use super::*;

impl RunState<'_> {
    pub(super) async fn drive(
        &mut self,
        request: &RunRequest,
        planner: &mut Box<dyn Planner>,
    ) -> Ending {
        self.runtime.emit(
            &self.run_id,
            EventKind::RunStarted {
                surface: self.key.clone(),
                task_chars: request.task.chars().count(),
                max_steps: request.max_steps,
                max_seconds: request.max_seconds,
            },
        );
        // The planner reads the person's secrets as placeholders only; the page never shows
        // their values to it, typed or not.
        let planner_task = self.secrets.planner_task(&request.task);
        if !self.secrets.is_empty() {
            self.tab.scrub(&self.secrets.values());
        }
        if let Some(url) = &request.url
            && let Err(ending) = self.initial_navigation(url).await
        {
            return ending;
        }
        let mut last: Option<StepReport> = None;
        let mut origin: Option<policy::Origin> = None;
        // The page before the run acted: a planner's check that already held then proves nothing.
        let mut initial: Option<Observation> = None;
        // The planner asked to see the next page as an image.
        let mut look = false;
        loop {
            if self.cancel.is_cancelled() {
                return Ending::new(ReasonCode::Cancelled, "stopped");
            }
            if Instant::now() >= self.deadline {
                return Ending::new(ReasonCode::Timeout, "the time budget ran out");
            }
            // Observe.
            let visual =
                request.screenshots || std::mem::take(&mut look) || planner.sees_screenshots();
            let options = ObserveOptions {
                screenshot: visual.then_some(ImageMime::Png),
                ..Default::default()
            };
            let observing = Instant::now();
            let mut observed = self.guarded(self.tab.observe(&options)).await;
            // A page that is mostly canvas shows the planner little as text: the step is visual
            // (`000_…` §07), and the observation is taken again with its screenshot.
            if !visual
                && matches!(observed, Ok(Ok(_)))
                && self
                    .tab
                    .latest_frame()
                    .is_some_and(|r| r.canvas_share() >= CANVAS_VISUAL && !r.has_screenshot())
            {
                let options = ObserveOptions {
                    screenshot: Some(ImageMime::Png),
                    ..Default::default()
                };
                observed = self.guarded(self.tab.observe(&options)).await;
            }
            RunTimes::add(&self.times.capture, observing.elapsed());
            let observation = match observed {
                Ok(Ok(o)) => o,
                Ok(Err(e)) => return self.browser_ending(e),
                Err(ending) => return ending,
            };
            let (observation, screenshot) =
                self.keep_screenshot(observation, request.screenshots, request.retain_screenshots);
            if initial.is_none() {
                initial = Some(observation.clone());
            }
            self.last_url = observation.url().to_owned();
            self.observed(&observation);
            // A same-tab move to another origin voids the grant for the old one.
            let now_origin = self
                .tab
                .latest_frame()
                .and_then(|r| policy::Origin::parse(r.document_url()).ok());
            if let (Some(before), Some(now)) = (&origin, &now_origin)
                && before != now
            {
                self.runtime
                    .inner
                    .approvals
                    .grants()
                    .revoke(&self.run_id, before);
            }
            origin = now_origin;
            if self.steps >= request.max_steps {
                return Ending::new(
                    ReasonCode::StepLimit,
                    format!("the step budget of {} ran out", request.max_steps),
                );
            }
            // A person took the tab over: wait until they hand it back, then look again.
            if self.runtime.taken_over(self.entry.target()) {
                match self.wait_for_person(super::registry::TAKEN_OVER).await {
                    Ok(()) => {
                        last = Some(StepReport {
                            action: "observe".into(),
                            receipt: None,
                            error: Some((
                                protocol::ErrorCode::StaleObservation,
                                "a person used the tab and handed it back; look at the fresh page"
                                    .into(),
                            )),
                        });
                        continue;
                    }
                    Err(ending) => return ending,
                }
            }
            // Plan.
            let input = PlanInput {
                task: planner_task.clone(),
                observation: observation.clone(),
                step: self.steps,
                last: last.take(),
                screenshot,
            };
            let planning = Instant::now();
            let planned = self.guarded(planner.next(input)).await;
            RunTimes::add(&self.times.model, planning.elapsed());
            let step = match planned {
                Ok(Ok(step)) => step,
                Ok(Err(e)) => return Ending::new(ReasonCode::InvalidPlan, e.to_string()),
                Err(ending) => return ending,
            };
            // Every planner's ending text is bounded here, whichever planner it came from.
            if let Some(summary) = step.summary()
                && let Err(e) = crate::verify::check_summary("the summary", summary)
            {
                return Ending::new(ReasonCode::InvalidPlan, e.to_string());
            }
            let action = match step {
                PlannerStep::Done { summary, checks } => {
                    let page = match self
                        .page_to_judge(&request.assertions, &checks, observation)
                        .await
                    {
                        Ok(page) => page,
                        Err(stopped) => return stopped,
                    };
                    return self.verify(
                        &request.assertions,
                        &checks,
                        initial.as_ref(),
                        &page,
                        summary,
                    );
                }
                PlannerStep::GiveUp { summary } => {
                    return Ending::new(ReasonCode::ActionFailed, summary);
                }
                PlannerStep::Look => {
                    self.steps += 1;
                    look = true;
                    last = Some(StepReport {
                        action: "look".into(),
                        receipt: None,
                        error: None,
                    });
                    continue;
                }
                PlannerStep::Infeasible { summary, unmet } => {
                    let unmet = if unmet.is_empty() {
                        String::new()
                    } else {
                        format!(" (unmet, as the planner says: {})", unmet.join("; "))
                    };
                    return Ending::new(ReasonCode::Infeasible, format!("{summary}{unmet}"));
                }
                PlannerStep::Act(action) => (action, None),
                PlannerStep::Confirm { action, why } => (action, Some(why)),
            };
            let (action, confirm) = action;
            // What only a person can do (a login, a CAPTCHA) pauses the run for one; after they
            // continue, the run observes afresh and the paused action is never sent.
            let record = self.tab.latest_frame();
            if let Some(reason) =
                person_needed(&action, record.as_deref(), &observation, &request.task)
            {
                match self.wait_for_person(&reason).await {
                    Ok(()) => {
                        last = Some(StepReport {
                            action: action.kind().as_str().into(),
                            receipt: None,
                            error: Some((
                                protocol::ErrorCode::StaleObservation,
                                format!(
                                    "not sent: {reason}; a person took over and continued the run — look at the fresh page"
                                ),
                            )),
                        });
                        continue;
                    }
                    Err(ending) => return ending,
                }
            }
            self.runtime.emit(
                &self.run_id,
                EventKind::Planned {
                    action: action.kind().as_str().into(),
                    target: action
                        .targets()
                        .next()
                        .map(|t| crate::step::describe_ref(&t)),
                },
            );
            // Resolve → Approve → Act, on the one path every side effect takes (`step.rs`).
            let left = self.deadline.saturating_duration_since(Instant::now());
            let act_options = ActOptions {
                deadline: left.min(Duration::from_secs(30)),
                ..Default::default()
            };
            if let Some(text) = secret_typed(&action, record.as_deref()) {
                self.typed_secrets.push(text.to_owned());
            }
            let acting = Instant::now();
            let approvals_before = self.times.approval.load(Ordering::Relaxed);
            let outcome = self.step(&action, &act_options, confirm).await;
            let approvals = Duration::from_millis(
                self.times.approval.load(Ordering::Relaxed) - approvals_before,
            );
            let (settle, observe) = outcome
                .as_ref()
                .map_or((Duration::ZERO, Duration::ZERO), |o| {
                    (o.timing.settle, o.timing.observe)
                });
            RunTimes::add(&self.times.page_wait, settle);
            RunTimes::add(&self.times.capture, observe);
            RunTimes::add(
                &self.times.input,
                acting
                    .elapsed()
                    .saturating_sub(settle + observe + approvals),
            );
            self.steps += 1;
            match outcome {
                Ok(outcome) => {
                    if !outcome.opened.is_empty() {
                        return Ending::new(
                            ReasonCode::NewSurfaceCreated,
                            "the page opened a new tab or window; a person must link it before it can be used",
                        );
                    }
                    // What it downloaded belongs to the run's result.
                    self.artifacts
                        .extend(outcome.downloads.iter().filter_map(|d| {
                            d.artifact_id.clone().map(|artifact_id| ArtifactRef {
                                kind: protocol::ArtifactKind::Download,
                                artifact_id,
                                retained: true,
                            })
                        }));
                    last = Some(StepReport {
                        action: outcome.receipt.action().as_str().into(),
                        receipt: Some(outcome.receipt),
                        error: None,
                    });
                }
                Err(e) => match self.step_ending(e) {
                    Ok(report) => {
                        last = Some(StepReport {
                            action: action.kind().as_str().into(),
                            receipt: None,
                            error: Some(report),
                        })
                    }
                    Err(ending) => return ending,
                },
            }
        }
    }

    /// Waits, within the run's deadline, for a person to continue the run (`Runtime::continue_run`):
    /// keys and buttons the run holds are released first; the tab stays the run's.
    async fn wait_for_person(&self, reason: &str) -> Result<(), Ending> {
        if self.tab.dialog().is_none() {
            let _ = tokio::time::timeout(Duration::from_secs(2), self.tab.release_input()).await;
        }
        let go_on = Arc::new(tokio::sync::Notify::new());
        self.runtime.inner.runs.wait(
            &self.run_id,
            WaitingRun {
                session: self.session.clone(),
                surface: self.key.clone(),
                target: self.entry.target().to_owned(),
                reason: reason.to_owned(),
                since: crate::runtime::now_ms(),
                go_on: go_on.clone(),
            },
        );
        self.runtime.emit(
            &self.run_id,
            EventKind::NeedsUser {
                reason: reason.to_owned(),
            },
        );
        let waiting = Instant::now();
        let outcome = self.guarded(go_on.notified()).await;
        RunTimes::add(&self.times.person, waiting.elapsed());
        self.runtime.inner.runs.waited(&self.run_id);
        match outcome {
            Ok(()) => {
                self.runtime.emit(&self.run_id, EventKind::Continued);
                Ok(())
            }
            Err(ending) if ending.reason == ReasonCode::Timeout => Err(Ending::new(
                ReasonCode::LoginRequired,
                format!("{reason}; no person continued the run within its time"),
            )),
            Err(ending) => Err(ending),
        }
    }

    /// One step of this run on the one path, waiting for a person within the run's deadline.
    /// One step on the one path; `confirm` makes a person's approval necessary (`PlannerStep::Confirm`).
    async fn step(
        &self,
        action: &ExtendedAction,
        options: &ActOptions,
        confirm: Option<String>,
    ) -> Result<surface::ActOutcome, RuntimeError> {
        let at = StepAt {
            session: &self.session,
            scope: &self.run_id,
            entry: &self.entry,
            key: &self.key,
            tab: &self.tab,
            lease: &self.lease,
            cancel: Some(&self.cancel),
            wait: ApprovalWait::Until(self.deadline),
            approval_key: None,
            approval_time: Some(&self.times.approval),
            confirm,
            secrets: &self.secrets,
        };
        self.runtime.step(&at, action, options).await
    }

    /// What a refused step means for the run: `Ok` = the planner hears it and decides what next
    /// (policy refused, a person denied, a stale or unactionable target); `Err` = the run ends.
    fn step_ending(&self, e: RuntimeError) -> Result<(protocol::ErrorCode, String), Ending> {
        match e {
            RuntimeError::Cancelled => Err(Ending::new(ReasonCode::Cancelled, "stopped")),
            RuntimeError::NeedsApproval { .. } => Err(Ending::new(
                ReasonCode::NeedsApproval,
                "no person answered the approval within the run's time",
            )),
            e @ RuntimeError::CapabilityDenied { .. } => {
                Err(Ending::new(ReasonCode::CapabilityDenied, e.to_string()))
            }
            RuntimeError::Surface(e)
                if matches!(
                    e.code(),
                    protocol::ErrorCode::TargetLost | protocol::ErrorCode::BackendUnavailable
                ) =>
            {
                Err(self.browser_ending(e))
            }
            e => Ok((e.code(), e.to_string())),
        }
    }

    async fn initial_navigation(&mut self, url: &str) -> Result<(), Ending> {
        let observation = match self
            .guarded(self.tab.observe(&ObserveOptions::default()))
            .await
        {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => return Err(self.browser_ending(e)),
            Err(ending) => return Err(ending),
        };
        let action = protocol::validate_extended_action(&serde_json::json!({
            "type": "navigate", "expected_frame_id": observation.frame_id().as_str(), "url": url, "intent": "open the task's page"
        }))
        .map_err(|e| Ending::new(ReasonCode::InvalidPlan, e.to_string()))?;
        match self.step(&action, &ActOptions::default(), None).await {
            Ok(_) => Ok(()),
            Err(RuntimeError::ApprovalDenied { .. }) => Err(Ending::new(
                ReasonCode::ApprovalDenied,
                "a person denied opening the task's page",
            )),
            Err(e @ RuntimeError::OriginDenied { .. }) => {
                Err(Ending::new(ReasonCode::OriginDenied, e.to_string()))
            }
            Err(RuntimeError::Surface(e)) => Err(self.browser_ending(e)),
            Err(e) => Err(self.step_ending(e).err().unwrap_or_else(|| {
                Ending::new(
                    ReasonCode::ActionFailed,
                    "the task's page could not be opened",
                )
            })),
        }
    }

    /// Runs `future` unless the run is stopped or out of time first.
    async fn guarded<F: std::future::Future>(&self, future: F) -> Result<F::Output, Ending> {
        tokio::select! {
            out = future => Ok(out),
            _ = self.cancel.cancelled() => Err(Ending::new(ReasonCode::Cancelled, "stopped")),
            _ = tokio::time::sleep_until(self.deadline.into()) => Err(Ending::new(ReasonCode::Timeout, "the time budget ran out")),
        }
    }

    fn browser_ending(&self, e: SurfaceError) -> Ending {
        let reason = match e.code() {
            protocol::ErrorCode::TargetLost => ReasonCode::TargetLost,
            protocol::ErrorCode::BackendUnavailable => ReasonCode::BackendUnavailable,
            protocol::ErrorCode::Timeout => ReasonCode::Timeout,
            _ => ReasonCode::ActionFailed,
        };
        Ending::new(reason, e.to_string())
    }

    /// The page a `done` is judged on: the one the planner saw when every check holds there;
    /// else the page as it stands, looked at again for up to [`VERIFY_GRACE`] (within the
    /// run's deadline) until they hold. A confirmation the page shows a moment after an
    /// action settled (a save answered after the settle's window) is then seen, and a claim
    /// the page does not bear out costs that second, never a wrong verdict. A run stopped
    /// meanwhile ends `cancelled`.
    async fn page_to_judge(
        &self,
        assertions: &[Assertion],
        proposed: &[Assertion],
        seen: Observation,
    ) -> Result<Observation, Ending> {
        let holds = |page: &Observation| {
            assertions
                .iter()
                .chain(proposed)
                .all(|check| check.check(page).0)
        };
        if assertions.is_empty() && proposed.is_empty() || holds(&seen) {
            return Ok(seen);
        }
        let until = (Instant::now() + VERIFY_GRACE).min(self.deadline);
        let mut page = seen;
        let mut looked = false;
        while Instant::now() < until {
            let observed = self
                .guarded(async {
                    tokio::time::sleep(VERIFY_POLL).await;
                    let observing = Instant::now();
                    let observed = self.tab.observe(&ObserveOptions::default()).await;
                    RunTimes::add(&self.times.capture, observing.elapsed());
                    observed
                })
                .await;
            match observed {
                Ok(Ok(fresh)) => {
                    page = fresh;
                    looked = true;
                }
                Err(stopped) if self.cancel.is_cancelled() => return Err(stopped),
                // A page that cannot be seen now (it is gone, the time ran out) is judged on
                // the last one seen.
                _ => break,
            }
            if holds(&page) {
                break;
            }
        }
        if looked {
            self.observed(&page);
        }
        Ok(page)
    }

    /// What every observation a run takes is followed by: the tab's title for the surface
    /// registry, and the `observed` event.
    fn observed(&self, observation: &Observation) {
        self.runtime
            .note_observed(self.entry.target(), observation.title());
        self.runtime.emit(
            &self.run_id,
            EventKind::Observed {
                frame_id: observation.frame_id().as_str().to_owned(),
                elements: observation.interactive_elements().len(),
                aria_chars: observation.aria_snapshot().chars().count(),
            },
        );
    }

    /// A `done` is checked by the runtime: the caller's checks and the planner's proposed ones
    /// must all hold on the current page. A proposed check that already held before the run
    /// acted is no evidence (it would let any claim pass); with no caller checks, the proposed
    /// ones that changed are the only evidence, and without any the run is not verified.
    fn verify(
        &self,
        assertions: &[Assertion],
        proposed: &[Assertion],
        initial: Option<&Observation>,
        observation: &Observation,
        summary: String,
    ) -> Ending {
        if assertions.is_empty() && proposed.is_empty() {
            return Ending::new(
                ReasonCode::VerificationFailed,
                "the planner says it is done, but neither the task nor the planner gave a completion check the runtime can verify",
            );
        }
        let mut evidence = Vec::new();
        let mut failed = Vec::new();
        for assertion in assertions {
            let (passed, record) = assertion.check(observation);
            self.runtime.emit(
                &self.run_id,
                EventKind::Verified {
                    assertion: assertion.describe(),
                    passed,
                },
            );
            if passed {
                evidence.push(record);
            } else {
                failed.push(assertion.describe());
            }
        }
        for check in proposed {
            let (passed, record) = check.check(observation);
            let held_before = initial.is_some_and(|o| check.check(o).0);
            self.runtime.emit(
                &self.run_id,
                EventKind::Verified {
                    assertion: format!("planner's {}", check.describe()),
                    passed: passed && !held_before,
                },
            );
            if !passed {
                failed.push(format!("the planner's {}", check.describe()));
            } else if held_before {
                failed.push(format!(
                    "the planner's {} held before the run acted, so it proves nothing",
                    check.describe()
                ));
            } else {
                evidence.push(record);
            }
        }
        if failed.is_empty() {
            Ending {
                reason: ReasonCode::Verified,
                summary,
                evidence,
                accounting: None,
                task_record: None,
            }
        } else {
            Ending {
                reason: ReasonCode::VerificationFailed,
                summary: format!("not verified: {}", failed.join("; ")),
                evidence,
                accounting: None,
                task_record: None,
            }
        }
    }

    /// Takes the observation's screenshot out (the planner gets it beside the observation),
    /// stored as a run artifact when the caller asked for screenshots.
    fn keep_screenshot(
        &mut self,
        mut observation: Observation,
        store: bool,
        retain: bool,
    ) -> (Observation, Option<protocol::Screenshot>) {
        let shot = observation.take_screenshot();
        if let Some(shot) = &shot
            && store
            && let Some(bytes) = surface::decode_base64(&shot.data)
        {
            self.artifact_seq += 1;
            match self.runtime.inner.artifacts.store(
                &self.run_id,
                ArtifactKind::Screenshot,
                &bytes,
                retain,
                self.artifact_seq,
            ) {
                Ok(artifact) => self.artifacts.push(artifact),
                Err(e) => tracing::warn!(error = %e, "cannot store a screenshot artifact"),
            }
        }
        (observation, shot)
    }
}
