//! The durable side of the one action path and of runs (`004_…` 失败、取消与重启恢复,
//! 后续复盘与学习): every action that reaches `step.rs` leaves an operation record — written
//! `attempted` before anything is sent, ended with its receipt's state, or recorded `failed`
//! with its error when it was refused before dispatch — and every run a record with its request,
//! model choice, outcome and accounting. Typed text is only its length and sensitivity; URLs
//! are redacted; page text (a target's name) is bounded. `glovebox log` and the person
//! channel read these records; a restart turns whatever a dead process left open into
//! `unknown` (operations) and `abandoned` (runs), and nothing is replayed.

use protocol::{ErrorCode, ExtendedAction, RunResult};
use store::{NewOperation, NewRun, OperationEnd, OperationState, RunEnd, RunId, SessionId};
use surface::{ActOutcome, SurfaceError};

use crate::RuntimeError;
use crate::runtime::{Runtime, now_ms};
use crate::step::StepAt;

/// Page text and messages in a record are cut to this many characters.
const TEXT_MAX: usize = 300;
/// A task is recorded up to this many characters.
const TASK_MAX: usize = 2_000;

fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// The task as a run's record keeps it: every secret the run typed taken out, URLs redacted,
/// bounded.
pub(crate) fn task_record(task: &str, typed_secrets: &[String]) -> String {
    let mut task = task.to_owned();
    for secret in typed_secrets.iter().filter(|s| !s.is_empty()) {
        task = task.replace(secret.as_str(), policy::REDACTED);
    }
    bounded(&redact_text(&task), TASK_MAX)
}

/// Free text with every URL in it redacted (a task may carry a link with a token).
pub(crate) fn redact_text(text: &str) -> String {
    text.split_inclusive(char::is_whitespace)
        .map(|word| {
            let trimmed = word.trim_end();
            if trimmed.contains("://")
                || trimmed.starts_with("data:")
                || trimmed.starts_with("javascript:")
            {
                let start = trimmed.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(0);
                format!(
                    "{}{}{}",
                    &trimmed[..start],
                    policy::redact_url(&trimmed[start..]),
                    &word[trimmed.len()..]
                )
            } else {
                word.to_owned()
            }
        })
        .collect()
}

/// An operation in flight: ended once, with its outcome.
pub(crate) struct OpenOperation {
    id: String,
    /// Its session and run (a direct call's run is none), for the operator's log.
    session: String,
    run: Option<String>,
    /// Its kind and when it began, for `/metrics` and the log.
    kind: String,
    began: std::time::Instant,
}

/// What a record says of an action about to run.
pub(crate) struct Described<'a> {
    pub(crate) kind: &'a str,
    pub(crate) target: &'a str,
    pub(crate) text_chars: Option<usize>,
    pub(crate) secret: bool,
    pub(crate) url: Option<&'a str>,
}

impl Runtime {
    fn new_operation(
        &self,
        at: &StepAt<'_>,
        action: &ExtendedAction,
        what: &Described<'_>,
    ) -> NewOperation {
        NewOperation {
            id: format!("op_{}{}", self.inner.instance.0, self.fresh_id("")),
            session_id: SessionId::new(at.session),
            run_id: (at.scope != at.session).then(|| RunId::new(at.scope)),
            surface: at.key.to_owned(),
            resource_id: Some(at.entry.resource.clone()),
            action: what.kind.to_owned(),
            target: Some(bounded(what.target, TEXT_MAX)),
            text_chars: what.text_chars.map(|n| n as u64),
            secret: what.secret,
            url: what.url.map(policy::redact_url),
            frame_before: action.expected_frame_id().as_str().to_owned(),
            started_at: now_ms(),
        }
    }

    /// Records an operation `attempted`, before its action is sent. An action is never sent
    /// without its record: a store that cannot write refuses the action.
    pub(crate) fn begin_operation(
        &self,
        at: &StepAt<'_>,
        action: &ExtendedAction,
        what: &Described<'_>,
    ) -> Result<OpenOperation, RuntimeError> {
        let new = self.new_operation(at, action, what);
        self.inner.store.begin_operation(&new).map_err(|e| {
            if e.is_disk_full() {
                RuntimeError::DataDir {
                    path: self.inner.config.data_dir.display().to_string(),
                    why: "the disk is full (no space left on device): the action was not sent, for its record could not be written; free some space".into(),
                }
            } else {
                RuntimeError::Internal(format!("the action was not sent: its record could not be written ({e})"))
            }
        })?;
        Ok(OpenOperation {
            id: new.id,
            session: at.session.to_owned(),
            run: (at.scope != at.session).then(|| at.scope.to_owned()),
            kind: what.kind.to_owned(),
            began: std::time::Instant::now(),
        })
    }

    /// Ends an operation with what became of its action.
    pub(crate) fn end_operation(
        &self,
        open: OpenOperation,
        outcome: &Result<ActOutcome, SurfaceError>,
    ) {
        let end = match outcome {
            Ok(outcome) => {
                let receipt = &outcome.receipt;
                let state = match receipt.state() {
                    protocol::ReceiptState::Attempted => OperationState::Attempted,
                    protocol::ReceiptState::Dispatched => OperationState::Dispatched,
                    protocol::ReceiptState::Confirmed => OperationState::Confirmed,
                    protocol::ReceiptState::Failed => OperationState::Failed,
                    protocol::ReceiptState::Unknown => OperationState::Unknown,
                };
                let downloaded: Vec<String> = outcome
                    .downloads
                    .iter()
                    .filter_map(|d| {
                        d.artifact_id
                            .as_ref()
                            .map(|id| format!("downloaded {} ({} bytes)", id.as_str(), d.size))
                    })
                    .collect();
                let detail = receipt
                    .detail()
                    .map(|d| bounded(d, TEXT_MAX))
                    .into_iter()
                    .chain(downloaded)
                    .collect::<Vec<_>>()
                    .join("; ");
                OperationEnd {
                    // Nothing was sent after all (`attempted` is only ever the open record).
                    state: if state == OperationState::Attempted {
                        OperationState::Failed
                    } else {
                        state
                    },
                    effect_uncertain: receipt.effect_uncertain(),
                    error: receipt.error().map(|c| c.as_str().to_owned()),
                    detail: Some(detail).filter(|d| !d.is_empty()),
                    frame_after: outcome
                        .observation
                        .as_ref()
                        .map(|o| o.frame_id().as_str().to_owned()),
                    marker: outcome
                        .marker
                        .as_ref()
                        .and_then(|m| serde_json::to_string(m).ok()),
                    ended_at: now_ms(),
                }
            }
            Err(e) => OperationEnd {
                state: OperationState::Failed,
                // These can come after the input was sent.
                effect_uncertain: matches!(
                    e.code(),
                    ErrorCode::Timeout | ErrorCode::TargetLost | ErrorCode::BackendUnavailable
                ),
                error: Some(e.code().as_str().to_owned()),
                detail: Some(bounded(&e.to_string(), TEXT_MAX)),
                frame_after: None,
                marker: None,
                ended_at: now_ms(),
            },
        };
        let (label, code) = match outcome {
            Ok(o) => (
                crate::metrics::receipt_label(o.receipt.state()),
                o.receipt.error(),
            ),
            Err(e) => ("failed", Some(e.code())),
        };
        let took = open.began.elapsed();
        self.inner
            .counters
            .action(&open.kind, label, code, Some(took));
        // The operator's log line of it: ids, kind and outcome, never a target or a text.
        tracing::info!(
            session = %open.session,
            run = open.run.as_deref(),
            operation = %open.id,
            kind = %open.kind,
            outcome = label,
            code = code.map(ErrorCode::as_str),
            ms = took.as_millis() as u64,
            "action ended"
        );
        if let Err(e) = self.inner.store.end_operation(&open.id, &end) {
            tracing::warn!(operation = %open.id, error = %e, "an operation's end could not be recorded; a restart will call it unknown");
        }
    }

    /// Records an action refused before anything was sent (stale, policy, denied, waiting for
    /// a person, cancelled).
    pub(crate) fn record_refused(
        &self,
        at: &StepAt<'_>,
        action: &ExtendedAction,
        what: &Described<'_>,
        error: &RuntimeError,
    ) {
        self.inner
            .counters
            .action(what.kind, "refused", Some(error.code()), None);
        let new = self.new_operation(at, action, what);
        tracing::info!(
            session = %at.session,
            run = new.run_id.as_ref().map(|r| r.as_str()),
            operation = %new.id,
            kind = %what.kind,
            outcome = "refused",
            code = error.code().as_str(),
            "action refused"
        );
        let end = OperationEnd {
            state: OperationState::Failed,
            effect_uncertain: false,
            error: Some(error.code().as_str().to_owned()),
            detail: Some(bounded(&error.to_string(), TEXT_MAX)),
            frame_after: None,
            marker: None,
            ended_at: new.started_at,
        };
        let written = self
            .inner
            .store
            .begin_operation(&new)
            .and_then(|_| self.inner.store.end_operation(&new.id, &end));
        if let Err(e) = written {
            tracing::warn!(error = %e, "a refused action could not be recorded");
        }
    }

    /// Records a run at its start.
    pub(crate) fn record_run_start(
        &self,
        run_id: &str,
        session: &str,
        key: &str,
        request: &crate::RunRequest,
        model: Option<String>,
    ) {
        let new = NewRun {
            id: RunId::new(run_id),
            session_id: SessionId::new(session),
            surface: key.to_owned(),
            // The task is recorded when the run ends, without the secrets the run typed (a task
            // may carry the password its person wants typed); until then only its length.
            task: format!(
                "[{} characters; recorded when the run ends]",
                request.task.chars().count()
            ),
            model,
            max_steps: request.max_steps,
            max_seconds: request.max_seconds,
            started_at: now_ms(),
        };
        if let Err(e) = self.inner.store.begin_run(&new) {
            tracing::warn!(run = run_id, error = %e, "a run could not be recorded");
        }
    }

    /// Records how a run ended.
    pub(crate) fn record_run_end(
        &self,
        run_id: &str,
        result: &RunResult,
        accounting: Option<serde_json::Value>,
        task: Option<String>,
    ) {
        let json = |v: serde_json::Value| {
            v.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string())
        };
        let end = RunEnd {
            status: serde_json::to_value(result.status())
                .map(json)
                .unwrap_or_default(),
            reason: serde_json::to_value(result.reason_code())
                .map(json)
                .unwrap_or_default(),
            summary: bounded(&redact_text(result.summary()), TEXT_MAX),
            steps: result.steps_taken(),
            accounting: accounting.map(|a| a.to_string()),
            task,
            ended_at: now_ms(),
        };
        tracing::info!(
            session = %self.inner.runs.session_of(run_id).unwrap_or_default(),
            run = run_id,
            status = %end.status,
            reason = %end.reason,
            steps = end.steps,
            "run ended"
        );
        if let Err(e) = self.inner.store.end_run(&RunId::new(run_id), &end) {
            tracing::warn!(run = run_id, error = %e, "a run's end could not be recorded");
        }
    }

    /// The operation log of this runtime's store (the person channel's `GET /api/log`; the same
    /// records `glovebox log` reads).
    pub fn log(&self, query: &LogQuery) -> Result<Vec<serde_json::Value>, RuntimeError> {
        read_log_from(&*self.inner.store, query)
    }

    /// Retention at start: ended records past the configured age, then the oldest beyond the
    /// configured count.
    pub(crate) fn prune_records(&self) {
        let before = now_ms().saturating_sub(self.inner.config.records_max_age.as_millis() as u64);
        match self
            .inner
            .store
            .prune_records(before, self.inner.config.records_max_operations)
        {
            Ok(p) if p.operations > 0 || p.runs > 0 => tracing::info!(
                operations = p.operations,
                runs = p.runs,
                "removed old records (retention)"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "old records could not be removed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_in_free_text_are_redacted_and_the_rest_kept() {
        assert_eq!(
            redact_text("open https://a.test/x?token=s3cret now"),
            "open https://a.test/x?token= now"
        );
        // Whatever follows a query value in the same word goes with it.
        assert_eq!(
            redact_text("(see <https://a.test/?k=v>)\nthen"),
            "(see <https://a.test/?k=\nthen"
        );
        assert_eq!(redact_text("plain words only"), "plain words only");
        assert_eq!(bounded("abcdef", 3), "abc…");
    }
}

/// Which records [`read_log`] returns.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogQuery {
    /// Only this session's.
    pub session: Option<String>,
    /// Only this run's.
    pub run: Option<String>,
    /// At most this many operations, the latest (0 = all).
    pub limit: usize,
}

/// The operation log, as a person reads it: runs (start and end), operations and approvals of
/// the configured store (SQLite under the data directory, or the shared database), in time order, each a JSON object with a `kind`. Readable while a
/// server runs (the store is in WAL mode) and after it died.
pub fn read_log(
    config: &crate::RuntimeConfig,
    query: &LogQuery,
) -> Result<Vec<serde_json::Value>, RuntimeError> {
    if let Some(url) = &config.store_url {
        return read_log_from(&store::PgStore::connect(&url.0)?, query);
    }
    let db = config.data_dir.join("glovebox.sqlite");
    if !db.exists() {
        return Ok(Vec::new());
    }
    let store = store::SqliteStore::open(&db)?;
    read_log_from(&store, query)
}

pub(crate) fn read_log_from(
    store: &dyn store::Store,
    query: &LogQuery,
) -> Result<Vec<serde_json::Value>, RuntimeError> {
    use serde_json::json;
    let session = query.session.as_deref().map(SessionId::new);
    let filter = store::OperationFilter {
        session: session.clone(),
        run: query.run.as_deref().map(RunId::new),
        after: 0,
        limit: query.limit,
    };
    // (time, what comes first at the same time, position, entry)
    let mut entries: Vec<(u64, u8, u64, serde_json::Value)> = Vec::new();
    for (i, op) in store.list_operations(&filter)?.into_iter().enumerate() {
        let o = &op.operation;
        let end = op.end.as_ref();
        entries.push((
            o.started_at,
            2,
            i as u64,
            json!({
                "kind": "operation", "at": o.started_at, "seq": op.seq, "operation_id": o.id, "session_id": o.session_id.as_str(),
                "run_id": o.run_id.as_ref().map(RunId::as_str), "surface": o.surface, "tab": o.resource_id, "action": o.action, "target": o.target,
                "text_chars": o.text_chars, "secret": o.secret, "url": o.url, "frame_before": o.frame_before,
                "frame_after": end.and_then(|e| e.frame_after.clone()), "state": op.state.as_str(),
                "effect_uncertain": end.is_some_and(|e| e.effect_uncertain), "error": end.and_then(|e| e.error.clone()),
                "detail": end.and_then(|e| e.detail.clone()), "ended_at": end.map(|e| e.ended_at),
                "marker": end.and_then(|e| e.marker.as_deref()).and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok()),
            }),
        ));
    }
    let first_op = entries.first().map(|e| e.0);
    let bounded_by_limit = query.limit > 0;
    let runs = store.list_runs(session.as_ref(), 0)?;
    for r in runs.iter().filter(|r| {
        query
            .run
            .as_deref()
            .is_none_or(|id| r.run.id.as_str() == id)
    }) {
        // With a limit, only the runs the operations shown belong to (or that started after them).
        if bounded_by_limit
            && first_op.is_some_and(|f| r.end.as_ref().map_or(u64::MAX, |e| e.ended_at) < f)
        {
            continue;
        }
        let run = &r.run;
        entries.push((
            run.started_at,
            0,
            0,
            json!({"kind": "run_started", "at": run.started_at, "run_id": run.id.as_str(), "session_id": run.session_id.as_str(),
                   "surface": run.surface, "task": run.task, "model": run.model, "max_steps": run.max_steps, "max_seconds": run.max_seconds}),
        ));
        if let Some(end) = &r.end {
            let accounting = end
                .accounting
                .as_deref()
                .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok());
            entries.push((
                end.ended_at,
                3,
                0,
                json!({"kind": "run_ended", "at": end.ended_at, "run_id": run.id.as_str(), "session_id": run.session_id.as_str(),
                       "status": end.status, "reason": end.reason, "summary": end.summary, "steps": end.steps, "accounting": accounting}),
            ));
        }
    }
    let sessions: Vec<SessionId> = match &session {
        Some(s) => vec![s.clone()],
        None => store.list_sessions()?.into_iter().map(|s| s.id).collect(),
    };
    for s in &sessions {
        for a in store.list_approvals(s)? {
            let r = &a.request;
            if query
                .run
                .as_deref()
                .is_some_and(|id| r.run_id.as_str() != id)
                || (bounded_by_limit && first_op.is_some_and(|f| r.requested_at < f))
            {
                continue;
            }
            entries.push((
                r.requested_at,
                1,
                0,
                json!({"kind": "approval", "at": r.requested_at, "approval_id": r.id, "session_id": r.session_id.as_str(), "run_id": r.run_id.as_str(),
                       "action": r.action, "origin": r.origin, "tier": r.tier, "outcome": a.outcome.map(|o| o.as_str()), "decided_at": a.decided_at}),
            ));
        }
    }
    entries.sort_by_key(|(at, class, i, _)| (*at, *class, *i));
    Ok(entries.into_iter().map(|(_, _, _, v)| v).collect())
}
