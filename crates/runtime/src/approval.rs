//! Approvals: an exact statement of what will happen, pending until a person approves (once or for
//! the task), denies, or it expires. Resolved only through person channels (CLI prompt, console,
//! host API) — the runtime exposes no approval to the tools a model can call.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;
use tokio::sync::oneshot;

/// What a person is asked to allow.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ApprovalRequest {
    pub approval_id: String,
    pub run_id: String,
    /// The action kind (`click`, `type`, `navigate`, …).
    pub action: String,
    /// The element's role and name as observed (page text, untrusted), or the destination.
    pub target: String,
    /// The origin acted on, or navigated to.
    pub origin: String,
    /// `R2` or `R3`.
    pub tier: String,
    /// Why approval is needed.
    pub reason: String,
    /// For typing: the length of the text, never the text.
    pub text_chars: Option<usize>,
    pub requested_at: u64,
    pub expires_at: u64,
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// This one action.
    ApproveOnce,
    /// Ordinary actions on this origin for the rest of the task (R3 still asks each time).
    ApproveForTask,
    Deny,
}

#[derive(Default)]
pub(crate) struct Approvals {
    pending: Mutex<HashMap<String, (ApprovalRequest, oneshot::Sender<ApprovalDecision>)>>,
}

impl Approvals {
    pub(crate) fn open(&self, request: ApprovalRequest) -> oneshot::Receiver<ApprovalDecision> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(request.approval_id.clone(), (request, tx));
        rx
    }

    pub(crate) fn list(&self) -> Vec<ApprovalRequest> {
        let mut list: Vec<_> = self.lock().values().map(|(r, _)| r.clone()).collect();
        list.sort_by_key(|r| r.requested_at);
        list
    }

    /// Delivers a person's decision; `false` if no such approval is pending.
    pub(crate) fn resolve(&self, approval_id: &str, decision: ApprovalDecision) -> bool {
        match self.lock().remove(approval_id) {
            Some((_, tx)) => {
                // A direct action's approval has no waiter; its decision is applied by the caller.
                let _ = tx.send(decision);
                true
            }
            None => false,
        }
    }

    /// Withdraws every pending approval of a run (its end).
    pub(crate) fn withdraw_run(&self, run_id: &str) {
        self.lock().retain(|_, (r, _)| r.run_id != run_id);
    }

    pub(crate) fn withdraw(&self, approval_id: &str) {
        self.lock().remove(approval_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (ApprovalRequest, oneshot::Sender<ApprovalDecision>)>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}
