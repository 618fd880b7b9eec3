//! The runs of this runtime: those in flight (their session, and how to stop them) and those
//! waiting for a person to continue them (a login, a CAPTCHA). One place answers "which runs are
//! there" and stops or continues them; a run enters at its start and leaves at its one cleanup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::{Cancel, RuntimeError};

/// A run waiting for a person to continue it.
/// Why a run waits while a person holds its input scope.
pub(crate) const TAKEN_OVER: &str = "a person took over this tab";

pub(crate) struct WaitingRun {
    pub(crate) session: String,
    pub(crate) surface: String,
    pub(crate) target: String,
    pub(crate) reason: String,
    pub(crate) since: u64,
    pub(crate) go_on: Arc<tokio::sync::Notify>,
}

/// See the module docs.
#[derive(Default)]
pub(crate) struct Runs {
    /// Runs in flight: their session and the way to stop them.
    running: Mutex<HashMap<String, (String, Cancel)>>,
    /// Runs waiting for a person to continue them.
    waiting: Mutex<HashMap<String, WaitingRun>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Runs {
    /// A run started.
    pub(crate) fn started(&self, run: &str, session: &str, cancel: Cancel) {
        lock(&self.running).insert(run.to_owned(), (session.to_owned(), cancel));
    }

    /// The session of a run in flight.
    pub(crate) fn session_of(&self, run: &str) -> Option<String> {
        lock(&self.running)
            .get(run)
            .map(|(session, _)| session.clone())
    }

    /// A run ended (its one cleanup): it is neither running nor waiting any more.
    pub(crate) fn ended(&self, run: &str) {
        lock(&self.running).remove(run);
        lock(&self.waiting).remove(run);
    }

    /// Stops the runs of `session` (its disposal), or every run (`None`: shutdown).
    pub(crate) fn stop(&self, session: Option<&str>) {
        for (owner, cancel) in lock(&self.running).values() {
            if session.is_none_or(|s| s == owner) {
                cancel.cancel();
            }
        }
    }

    /// A run waits for a person; `Runs::continue_run` (or a hand-back of its tab) wakes it.
    pub(crate) fn wait(&self, run: &str, waiting: WaitingRun) {
        lock(&self.waiting).insert(run.to_owned(), waiting);
    }

    /// The run no longer waits (continued, out of time, stopped).
    pub(crate) fn waited(&self, run: &str) {
        lock(&self.waiting).remove(run);
    }

    /// The runs waiting for a person: run, session, surface, why, since when (oldest first).
    pub(crate) fn waiting(&self) -> Vec<serde_json::Value> {
        let mut list: Vec<_> = lock(&self.waiting)
            .iter()
            .map(|(run, w)| serde_json::json!({"run_id": run, "session": w.session, "surface": w.surface, "reason": w.reason, "since": w.since}))
            .collect();
        list.sort_by_key(|w| w["since"].as_u64());
        list
    }

    /// Continues every run waiting on `target`.
    pub(crate) fn continue_on(&self, target: &str) {
        for run in lock(&self.waiting).values().filter(|w| w.target == target) {
            run.go_on.notify_one();
        }
    }

    /// Continues the runs on `target` that wait only because a person took its scope over.
    pub(crate) fn continue_taken_over(&self, target: &str) {
        for run in lock(&self.waiting)
            .values()
            .filter(|w| w.target == target && w.reason == TAKEN_OVER)
        {
            run.go_on.notify_one();
        }
    }

    /// Continues one waiting run.
    pub(crate) fn continue_run(&self, run_id: &str) -> Result<(), RuntimeError> {
        let waiting = lock(&self.waiting);
        let run = waiting
            .get(run_id)
            .ok_or_else(|| RuntimeError::UnknownSurface {
                name: run_id.to_owned(),
                known: "a run waiting for a person (GET /api/runs/waiting)".into(),
            })?;
        run.go_on.notify_one();
        Ok(())
    }
}
