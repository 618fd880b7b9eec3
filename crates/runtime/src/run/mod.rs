//! The runner: Observe → Resolve → Approve → Act → Verify, one state-changing action per step,
//! within step and time budgets, cancellable in every phase. Only this module builds a
//! `RunResult`, and only from its own verification records.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use protocol::{
    ArtifactKind, ArtifactRef, ExtendedAction, ImageMime, Observation, ReasonCode, RunResult,
    RunTarget, SessionId, SurfaceName, TabId,
};
use surface::{ActOptions, FrameRecord, ObserveOptions, Surface, SurfaceError};

use crate::events::EventKind;
use crate::planner::{PlanInput, Planner, PlannerStep, StepReport};
use crate::runtime::{Runtime, TabEntry};
use crate::step::{ApprovalWait, StepAt};
use crate::verify::Assertion;
use crate::{Cancel, RuntimeError};

mod registry;
mod runner;

pub(crate) use registry::{Runs, WaitingRun};

/// What to do.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub task: String,
    pub surface: Option<SurfaceName>,
    /// An initial navigation of the same leased tab (policy-checked like any navigation).
    pub url: Option<String>,
    pub max_steps: u32,
    pub max_seconds: u32,
    /// What must hold on the page for the run to succeed.
    pub assertions: Vec<Assertion>,
    /// Capture one viewport screenshot per step as a run artifact.
    pub screenshots: bool,
    /// Keep those screenshots after the run (otherwise they are deleted at its end).
    pub retain_screenshots: bool,
    /// Secrets the person gives the run apart from its task: its planner sees placeholders,
    /// and each value is typed only into fields on the origins named for it.
    pub secrets: protocol::Secrets,
}

impl RunRequest {
    pub fn new(task: impl Into<String>) -> Self {
        RunRequest {
            task: task.into(),
            surface: None,
            url: None,
            max_steps: protocol::limits::MAX_STEPS_DEFAULT,
            max_seconds: protocol::limits::MAX_SECONDS_DEFAULT,
            assertions: Vec::new(),
            screenshots: false,
            retain_screenshots: false,
            secrets: protocol::Secrets::default(),
        }
    }
}

impl RunRequest {
    /// The request within its limits (the task's length, the steps and seconds, the checks):
    /// every transport's request is held to the same bounds here.
    pub(crate) fn check(&self) -> Result<(), RuntimeError> {
        use protocol::limits as l;
        let invalid = |why: String| Err(RuntimeError::InvalidAction(why));
        let task = self.task.chars().count();
        if self.task.trim().is_empty() || task > protocol::limits::TASK_MAX_CHARS {
            return invalid(format!(
                "the task must have 1 to {} characters (it has {task})",
                l::TASK_MAX_CHARS
            ));
        }
        if !(l::MAX_STEPS_MIN..=l::MAX_STEPS_MAX).contains(&self.max_steps) {
            return invalid(format!(
                "max_steps must be {} to {}",
                l::MAX_STEPS_MIN,
                l::MAX_STEPS_MAX
            ));
        }
        if !(l::MAX_SECONDS_MIN..=l::MAX_SECONDS_MAX).contains(&self.max_seconds) {
            return invalid(format!(
                "max_seconds must be {} to {}",
                l::MAX_SECONDS_MIN,
                l::MAX_SECONDS_MAX
            ));
        }
        if self.assertions.len() > crate::verify::ASSERTIONS_MAX {
            return invalid(format!(
                "success_when has {} checks (at most {})",
                self.assertions.len(),
                crate::verify::ASSERTIONS_MAX
            ));
        }
        self.assertions.iter().try_for_each(Assertion::check_bounds)
    }
}

/// A started run: its id, and the way to stop it.
#[derive(Debug, Clone)]
pub struct RunHandle {
    pub run_id: protocol::RunId,
    cancel: Cancel,
}

impl RunHandle {
    /// Requests the stop.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A guard that stops the run when it is dropped before [`StopOnDrop::disarm`]: a
    /// transport's call that goes away (its future dropped on disconnect) takes its run along.
    pub fn stop_on_drop(&self) -> StopOnDrop {
        StopOnDrop(Some(self.cancel.clone()))
    }
}

/// See [`RunHandle::stop_on_drop`].
pub struct StopOnDrop(Option<Cancel>);

impl StopOnDrop {
    /// The run ended by itself: dropping the guard stops nothing.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel.cancel();
        }
    }
}

/// How the loop ended, before the result is built.
struct Ending {
    reason: ReasonCode,
    summary: String,
    evidence: Vec<protocol::CompletionEvidence>,
    /// What the planner's model calls cost, for the run's record.
    accounting: Option<serde_json::Value>,
    /// The task as its record keeps it: with every secret the run typed taken out.
    task_record: Option<String>,
}

impl Ending {
    fn new(reason: ReasonCode, summary: impl Into<String>) -> Self {
        Ending {
            reason,
            summary: summary.into(),
            evidence: Vec::new(),
            accounting: None,
            task_record: None,
        }
    }
}

/// The text `action` types into a secret field (password, card, one-time code) of `record`.
fn secret_typed<'a>(
    action: &'a ExtendedAction,
    record: Option<&dyn FrameRecord>,
) -> Option<&'a str> {
    let (ExtendedAction::Type(typed), Some(record)) = (action, record) else {
        return None;
    };
    let Some(protocol::extended::TargetRef::Ref(e)) = action.targets().next() else {
        return None;
    };
    record
        .target(&e.element)
        .is_some_and(|b| b.secret_field)
        .then_some(typed.text.as_str())
}

/// Words of a CAPTCHA or bot challenge in a frame's or widget's name.
const CHALLENGE_WORDS: &[&str] = &[
    "captcha",
    "recaptcha",
    "hcaptcha",
    "turnstile",
    "are you human",
    "verify you are human",
    "bot check",
    "challenge",
];

/// Why the next step is a person's, from the page's structure: a CAPTCHA or challenge frame on
/// the page, or an action that would type into a secret field (password, card, one-time code)
/// a secret the run does not have — the only secrets a run has are the ones its person put in
/// the task (whatever else the model types there is a guess). Words can only add a reason;
/// nothing here grants one.
fn person_needed(
    action: &ExtendedAction,
    record: Option<&dyn FrameRecord>,
    observation: &Observation,
    task: &str,
) -> Option<String> {
    let challenge = observation.interactive_elements().iter().find(|e| {
        let name = e.name().to_lowercase();
        matches!(e.role(), "iframe" | "checkbox" | "button")
            && CHALLENGE_WORDS.iter().any(|w| name.contains(w))
    });
    if let Some(e) = challenge {
        return Some(format!(
            "the page shows a CAPTCHA or bot challenge ({} {:?}) that only a person may answer",
            e.role(),
            e.name()
        ));
    }
    // A placeholder is the person's own secret (whether it may go there is the one path's check).
    if secret_typed(action, record)
        .is_some_and(|text| !task.contains(text) && protocol::secret::placeholders(text).is_empty())
    {
        return Some("the page asks for a secret (a password, card or one-time code) this run does not have; a person signs in".to_owned());
    }
    None
}

struct RunState<'a> {
    runtime: &'a Runtime,
    session: String,
    run_id: String,
    entry: TabEntry,
    /// The attachment the run holds (through its debugger lease) from start to end.
    tab: Arc<dyn Surface>,
    lease: crate::lease::Lease,
    key: String,
    cancel: Cancel,
    deadline: Instant,
    steps: u32,
    artifacts: Vec<ArtifactRef>,
    artifact_seq: u64,
    last_url: String,
    /// Texts the run typed into secret fields, and the person's secrets (only ever to take them
    /// out of its record).
    typed_secrets: Vec<String>,
    /// The secrets the person gave the run.
    secrets: crate::secrets::Given,
    /// Where the run's time went.
    times: RunTimes,
}

/// The share of the viewport canvases must cover for a step to be visual without being asked.
const CANVAS_VISUAL: f64 = 0.25;

/// How long a `done` whose checks fail on the page the planner saw is looked at again
/// (`RunState::page_to_judge`), and how often.
const VERIFY_GRACE: Duration = Duration::from_secs(1);
const VERIFY_POLL: Duration = Duration::from_millis(150);

/// Where a run's time went (ms), stored with the run beside the planner's accounting.
#[derive(Debug, Default)]
pub(crate) struct RunTimes {
    /// Waiting for the planner (the model).
    model: AtomicU64,
    /// Observing the page (the observation each step starts from, and each action's fresh one).
    capture: AtomicU64,
    /// Acting: checks, dispatch and verification, without settling and approvals.
    input: AtomicU64,
    /// Waiting for the page to settle after input.
    page_wait: AtomicU64,
    /// Waiting for a person's approval.
    pub(crate) approval: AtomicU64,
    /// Waiting for a person to do their part (a login, a CAPTCHA, a take-over).
    person: AtomicU64,
}

impl RunTimes {
    fn add(counter: &AtomicU64, d: Duration) {
        counter.fetch_add(d.as_millis() as u64, Ordering::Relaxed);
    }

    fn json(&self, total: Duration) -> serde_json::Value {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let (model, approval, person) = (get(&self.model), get(&self.approval), get(&self.person));
        serde_json::json!({
            "total_ms": total.as_millis() as u64, "model_ms": model, "capture_ms": get(&self.capture), "input_ms": get(&self.input),
            "page_wait_ms": get(&self.page_wait), "approval_ms": approval, "person_ms": person,
            // What the runtime itself took: everything but the model and the people.
            "runtime_ms": (total.as_millis() as u64).saturating_sub(model + approval + person),
        })
    }
}

impl Runtime {
    /// Starts a run in the background. The result comes from the join handle; every ending —
    /// success, failure, cancellation, needs_user, target loss, a panic — goes through one cleanup.
    /// Refused with `lease_conflict` while a lifecycle operation of the session runs (see
    /// [`Runtime::run`], which waits for it instead).
    pub fn start_run(
        &self,
        session: &SessionId,
        request: RunRequest,
        planner: Box<dyn Planner>,
    ) -> Result<(RunHandle, tokio::task::JoinHandle<RunResult>), RuntimeError> {
        let session = session.as_str();
        if self
            .inner
            .connection
            .stopping
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Err(RuntimeError::Surface(SurfaceError::BackendUnavailable {
                reason: "the runtime is shutting down".into(),
            }));
        }
        let state = self.session(session)?;
        let op = state
            .ops
            .clone()
            .try_read_owned()
            .map_err(|_| RuntimeError::LeaseConflict {
                holder:
                    "a lifecycle operation of this session (turn end, finalize, reset or disposal)"
                        .into(),
            })?;
        if state.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(RuntimeError::UnknownSession(format!("{session} (closed)")));
        }
        self.spawn_run(session, request, planner, op)
    }

    /// Runs to the end and returns the result.
    pub async fn run(
        &self,
        session: &SessionId,
        request: RunRequest,
        planner: Box<dyn Planner>,
    ) -> Result<RunResult, RuntimeError> {
        let session = session.as_str();
        let (_, op) = self.begin(session).await?;
        let (_, join) = self.spawn_run(session, request, planner, op)?;
        join.await
            .map_err(|e| RuntimeError::Internal(e.to_string()))
    }

    /// A run is one operation of its session: it holds `op` (the session's operation guard) and
    /// the tab's debugger lease from its start to its end.
    fn spawn_run(
        &self,
        session: &str,
        request: RunRequest,
        planner: Box<dyn Planner>,
        op: tokio::sync::OwnedRwLockReadGuard<()>,
    ) -> Result<(RunHandle, tokio::task::JoinHandle<RunResult>), RuntimeError> {
        request.check()?;
        let secrets = crate::secrets::Given::read(&request.secrets)?;
        let (state, entry, key) = self.resolve(session, request.surface.as_ref())?;
        // A tab a page opened is a run's only after a person linked it, from the next turn on
        // (`000_…` cases 15 and 26; the run that saw it open ended `new_surface_created`).
        if let Some(opener) = entry.opened_by
            && entry
                .linked_in
                .is_none_or(|linked| linked >= state.turn_number())
        {
            return Err(RuntimeError::UnlinkedSurface {
                key,
                opener: format!("s{opener}"),
                tab: entry.resource.clone(),
            });
        }
        let run_id = self.fresh_id("run");
        let typed = protocol::RunId::new(run_id.clone()).map_err(|e| {
            RuntimeError::Internal(format!("a run id the runtime made is invalid: {e}"))
        })?;
        let cancel = Cancel::default();
        let held = self.acquire(&entry, session, &run_id)?;
        let lease = held.lease.clone();
        self.record_run_start(&run_id, session, &key, &request, planner.model());
        self.inner.runs.started(&run_id, session, cancel.clone());
        let handle = RunHandle {
            run_id: typed,
            cancel: cancel.clone(),
        };
        let session_id = session.to_owned();
        let runtime = self.clone();
        let join = tokio::spawn(async move {
            let _op = op;
            let attached = match runtime.attach(&entry).await {
                Ok(attached) => attached,
                Err(e) => {
                    let reason = match e.code() {
                        protocol::ErrorCode::BackendUnavailable => ReasonCode::BackendUnavailable,
                        _ => ReasonCode::TargetLost,
                    };
                    return runtime
                        .finish(
                            &run_id,
                            None,
                            held,
                            Ending::new(reason, e.to_string()),
                            0,
                            Vec::new(),
                            String::new(),
                        )
                        .await;
                }
            };
            let inner_runtime = runtime.clone();
            let inner_entry = entry.clone();
            let inner_tab = attached.tab().clone();
            let inner_id = run_id.clone();
            let inner_session = session_id;
            let inner_lease = lease.clone();
            let started = Instant::now();
            let body = tokio::spawn(async move {
                let mut state = RunState {
                    runtime: &inner_runtime,
                    session: inner_session,
                    run_id: inner_id,
                    entry: inner_entry,
                    tab: inner_tab,
                    lease: inner_lease,
                    key,
                    cancel,
                    deadline: started + Duration::from_secs(u64::from(request.max_seconds)),
                    steps: 0,
                    artifacts: Vec::new(),
                    artifact_seq: 0,
                    last_url: String::new(),
                    typed_secrets: secrets.values(),
                    secrets,
                    times: RunTimes::default(),
                };
                let mut planner = planner;
                let mut ending = state.drive(&request, &mut planner).await;
                let mut accounting = match planner.accounting() {
                    Some(serde_json::Value::Object(o)) => serde_json::Value::Object(o),
                    Some(other) => serde_json::json!({"planner": other}),
                    None => serde_json::json!({}),
                };
                accounting["time"] = state.times.json(started.elapsed());
                ending.accounting = Some(accounting);
                ending.task_record = Some(crate::records::task_record(
                    &request.task,
                    &state.typed_secrets,
                ));
                (ending, state.steps, state.artifacts, state.last_url)
            });
            let (ending, steps, artifacts, last_url) = match body.await {
                Ok(done) => done,
                Err(e) => (
                    Ending::new(ReasonCode::Internal, format!("the run crashed: {e}")),
                    0,
                    Vec::new(),
                    String::new(),
                ),
            };
            runtime
                .finish(
                    &run_id,
                    Some(attached.tab()),
                    held,
                    ending,
                    steps,
                    artifacts,
                    last_url,
                )
                .await
        });
        Ok((handle, join))
    }

    /// The one cleanup of every ending.
    #[allow(clippy::too_many_arguments)]
    async fn finish(
        &self,
        run_id: &str,
        tab: Option<&Arc<dyn Surface>>,
        lease: crate::lease::HeldLease,
        ending: Ending,
        steps: u32,
        artifacts: Vec<ArtifactRef>,
        last_url: String,
    ) -> RunResult {
        // Every ending releases whatever keys and buttons the run still holds.
        if let Some(tab) = tab.filter(|t| t.dialog().is_none()) {
            let _ = tokio::time::timeout(Duration::from_secs(2), tab.release_input()).await;
        }
        let target = lease.target().to_owned();
        drop(lease);
        self.inner
            .approvals
            .end_scope(crate::approval::Scope::Run(run_id));
        self.inner.artifacts.finish_run(run_id);
        self.inner.runs.ended(run_id);
        let retained: Vec<ArtifactRef> = artifacts.into_iter().filter(|a| a.retained).collect();
        let target = TabId::new(target).ok().map(|tab_id| RunTarget {
            kind: self.adapter().kind(),
            tab_id,
            url: last_url,
        });
        let result = if ending.reason == ReasonCode::Verified {
            match target.clone() {
                Some(target) => RunResult::succeeded(
                    ending.summary.clone(),
                    target,
                    steps,
                    ending.evidence.clone(),
                    retained.clone(),
                ),
                None => Err(protocol::RunResultError::NoEvidence),
            }
        } else {
            RunResult::ended(
                ending.reason,
                ending.summary.clone(),
                target.clone(),
                steps,
                ending.evidence.clone(),
                retained.clone(),
            )
        };
        let result = result.unwrap_or_else(|e| {
            RunResult::ended(
                ReasonCode::Internal,
                format!("the result could not be built: {e}"),
                target,
                steps,
                Vec::new(),
                retained,
            )
            .expect("an internal-error result without evidence is always valid")
        });
        self.emit(
            run_id,
            EventKind::RunEnded {
                status: result.status(),
                reason: result.reason_code(),
                steps,
            },
        );
        self.record_run_end(run_id, &result, ending.accounting, ending.task_record);
        result
    }
}

impl Runtime {
    /// The runs waiting for a person (a login, a CAPTCHA), for person channels: run, session,
    /// surface, why, since when.
    pub fn waiting_runs(&self) -> Vec<serde_json::Value> {
        self.inner.runs.waiting()
    }

    /// Continues every run waiting on `target` (a person handed the tab back).
    pub(crate) fn continue_runs_on(&self, target: &str) {
        self.inner.runs.continue_on(target);
    }

    /// A person continues a waiting run (after signing in, solving a CAPTCHA): it observes
    /// afresh and plans again; the action it paused at is never sent. Only person channels call
    /// this.
    pub fn continue_run(&self, run_id: &str) -> Result<(), RuntimeError> {
        self.inner.runs.continue_run(run_id)?;
        tracing::info!(run = run_id, "a person continued a run");
        Ok(())
    }
}
