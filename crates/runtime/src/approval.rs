//! Approvals: an exact statement of what will happen, pending until a person approves (once or for
//! the task), denies, or it expires. Resolved only through person channels (CLI prompt, console,
//! host API, a client's own user through MCP elicitation) — the runtime exposes no approval to the
//! tools a model can call.
//!
//! This is the one approval mechanism: runs and direct calls (a direct call is a run of one step)
//! ask here with the exact action they are about to perform (its `key`). A caller either waits
//! for the decision or returns `needs_approval` at once; a decision nobody was waiting for is kept
//! until it expires, and the identical action sent again consumes it — exactly once. Every entry
//! has an enforced expiry, and a session's end, a run's end and shutdown withdraw theirs.
//!
//! What a person allowed lives here too: "allow for this site" grants its origin to the
//! approval's scope (`policy::Grants`), and the scope's end takes the grants with its
//! approvals ([`Approvals::end_scope`]) — one place for both.

use std::collections::HashMap;
use std::sync::Mutex;

use policy::{Origin, RiskTier};
use protocol::ApprovalId;
use serde::Serialize;
use tokio::sync::watch;

/// What a person is asked to allow.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ApprovalRequest {
    pub approval_id: ApprovalId,
    /// The session whose model asked for the action.
    pub session: String,
    /// The client that session serves, by the name it gave (client text, printable), when
    /// known: a person approving sees who asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The run the action belongs to; a direct call's scope is its session.
    pub run_id: String,
    /// The action kind as sent (`click`, `type`, `navigate`, `drag`, …).
    pub action: String,
    /// The element's role and name as observed (page text, untrusted), or the destination.
    pub target: String,
    /// The origin the side effect reaches (for a navigation: the destination). "Allow for this
    /// site" grants exactly this origin.
    pub origin: String,
    /// `R2` or `R3`.
    pub tier: RiskTier,
    /// Why approval is needed.
    pub reason: String,
    /// For typing: the length of the text.
    pub text_chars: Option<usize>,
    /// For typing into a field that is not secret: the text itself, as the person will see it
    /// typed (printable, at most 200 characters). Never for a secret field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// For an upload: the names of the files it sends.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
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

impl ApprovalDecision {
    /// The closed snake_case name (events, logs).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalDecision::ApproveOnce => "approve_once",
            ApprovalDecision::ApproveForTask => "approve_for_task",
            ApprovalDecision::Deny => "deny",
        }
    }
}

/// Why a decision cannot be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotPending {
    /// No such approval, or it was withdrawn (its session or run ended).
    Unknown,
    /// It expired before the person answered.
    Expired,
    /// A person already decided it.
    Decided,
}

enum State {
    /// Waiting for a person; waiters watch the sender.
    Pending(watch::Sender<Option<ApprovalDecision>>),
    /// A person decided; the first taker (the waiting call, or the identical action sent again)
    /// consumes it. Kept until `until`.
    Decided {
        decision: ApprovalDecision,
        until: u64,
    },
}

struct Entry {
    request: ApprovalRequest,
    /// The exact action (session, tab, action JSON with its frame id) the approval is for.
    key: String,
    /// What "allow for this site" grants: exactly the origin the person was shown.
    grant: Option<Origin>,
    state: State,
}

/// The result of asking.
pub(crate) enum Asked {
    /// A person already decided this exact action; the decision stays until it is taken
    /// ([`Approvals::take_all`]) or expires.
    Decided {
        approval_id: ApprovalId,
        decision: ApprovalDecision,
    },
    /// Waiting for a person.
    Pending {
        approval_id: ApprovalId,
        decision: watch::Receiver<Option<ApprovalDecision>>,
        request: Box<ApprovalRequest>,
        fresh: bool,
    },
}

/// Whose approval was resolved.
pub(crate) struct Resolved {
    pub(crate) run_id: String,
    pub(crate) session: String,
}

/// A scope approvals and grants belong to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scope<'a> {
    /// A run's.
    Run(&'a str),
    /// A session's (its direct calls' scope is the session id).
    Session(&'a str),
}

#[derive(Default)]
struct Table {
    entries: HashMap<ApprovalId, Entry>,
    /// Recently expired pending approvals (bounded), so a late answer hears "expired".
    expired: std::collections::VecDeque<ApprovalId>,
}

/// How many expired approval ids are remembered for that message.
const EXPIRED_REMEMBERED: usize = 256;

#[derive(Default)]
pub(crate) struct Approvals {
    table: Mutex<Table>,
    /// Origins a person allowed for a scope ("allow for this site").
    grants: Mutex<policy::Grants>,
    /// Where each approval and its outcome is recorded (the runtime's store and instance);
    /// `None` in unit tests.
    record: Option<(std::sync::Arc<dyn store::Store>, store::InstanceId)>,
}

impl Approvals {
    /// Approvals recorded in `store` as asked by `instance`: each request when it is first
    /// asked, each outcome (a decision, a withdrawal) when it happens. The record is written
    /// after the table is updated and outside its lock; a failed write is logged, never
    /// allowed to change the decision.
    pub(crate) fn recorded(
        store: std::sync::Arc<dyn store::Store>,
        instance: store::InstanceId,
    ) -> Self {
        Approvals {
            table: Mutex::default(),
            grants: Mutex::default(),
            record: Some((store, instance)),
        }
    }

    fn note(&self, what: impl FnOnce(&dyn store::Store, store::InstanceId) -> store::Result<()>) {
        if let Some((store, instance)) = &self.record
            && let Err(e) = what(store.as_ref(), *instance)
        {
            tracing::warn!(error = %e, "could not record an approval");
        }
    }

    fn note_scope(&self, scope: store::ApprovalScope<'_>) {
        self.note(|store, _| {
            store
                .settle_approvals(
                    scope,
                    store::ApprovalOutcome::Withdrawn,
                    crate::runtime::now_ms(),
                )
                .map(drop)
        });
    }

    /// Asks for `request` on the exact action `key`. A decision already given for the same action
    /// is answered (not consumed: see [`Approvals::take_all`]); an approval already pending for
    /// it is shared (never asked twice).
    pub(crate) fn ask(
        &self,
        request: ApprovalRequest,
        key: String,
        grant: Option<Origin>,
        now: u64,
    ) -> Asked {
        let mut entries = self.lock();
        expire(&mut entries, now);
        let same = entries
            .iter()
            .find(|(_, e)| e.key == key)
            .map(|(id, _)| id.clone());
        if let Some(id) = same {
            match &entries[&id].state {
                State::Decided { decision, .. } => {
                    return Asked::Decided {
                        approval_id: id,
                        decision: *decision,
                    };
                }
                State::Pending(tx) => {
                    let request = Box::new(entries[&id].request.clone());
                    return Asked::Pending {
                        approval_id: id,
                        decision: tx.subscribe(),
                        request,
                        fresh: false,
                    };
                }
            }
        }
        let (tx, rx) = watch::channel(None);
        let approval_id = request.approval_id.clone();
        let boxed = Box::new(request.clone());
        entries.insert(
            approval_id.clone(),
            Entry {
                request,
                key,
                grant,
                state: State::Pending(tx),
            },
        );
        drop(entries);
        self.note(|store, instance| {
            store.record_approval(&store::NewApproval {
                id: boxed.approval_id.to_string(),
                session_id: store::SessionId::new(&boxed.session),
                instance,
                run_id: store::RunId::new(&boxed.run_id),
                action: boxed.action.clone(),
                origin: boxed.origin.clone(),
                tier: boxed.tier.to_string(),
                requested_at: boxed.requested_at,
                expires_at: boxed.expires_at,
            })
        });
        Asked::Pending {
            approval_id,
            decision: rx,
            request: boxed,
            fresh: true,
        }
    }

    /// The approvals waiting for a person (never expired or withdrawn ones), oldest first.
    pub(crate) fn list(&self, now: u64) -> Vec<ApprovalRequest> {
        let mut entries = self.lock();
        expire(&mut entries, now);
        let mut list: Vec<_> = entries
            .values()
            .filter(|e| matches!(e.state, State::Pending(_)))
            .map(|e| e.request.clone())
            .collect();
        list.sort_by_key(|r| r.requested_at);
        list
    }

    /// Records a person's decision on a pending, unexpired approval; the decision waits for its
    /// taker until `now + keep_ms`.
    pub(crate) fn resolve(
        &self,
        approval_id: &ApprovalId,
        decision: ApprovalDecision,
        now: u64,
        keep_ms: u64,
    ) -> Result<Resolved, NotPending> {
        let mut entries = self.lock();
        expire(&mut entries, now);
        let Some(entry) = entries.entries.get_mut(approval_id) else {
            return Err(if entries.expired.iter().any(|id| id == approval_id) {
                NotPending::Expired
            } else {
                NotPending::Unknown
            });
        };
        let State::Pending(tx) = &entry.state else {
            return Err(NotPending::Decided);
        };
        // Waiters hear it after the state changed: whoever takes it finds the decision.
        let tx = tx.clone();
        entry.state = State::Decided {
            decision,
            until: now + keep_ms,
        };
        let resolved = Resolved {
            run_id: entry.request.run_id.clone(),
            session: entry.request.session.clone(),
        };
        let grant = entry.grant.clone();
        // "Allow for this site" grants exactly the origin the person was shown, before any
        // waiter hears the decision.
        if decision == ApprovalDecision::ApproveForTask
            && let Some(origin) = grant
        {
            self.grants().grant(policy::Grant {
                run: resolved.run_id.clone(),
                origin,
                expires_at: None,
            });
        }
        let _ = tx.send(Some(decision));
        drop(entries);
        let outcome = match decision {
            ApprovalDecision::ApproveOnce => store::ApprovalOutcome::ApproveOnce,
            ApprovalDecision::ApproveForTask => store::ApprovalOutcome::ApproveForTask,
            ApprovalDecision::Deny => store::ApprovalOutcome::Deny,
        };
        self.note(|store, _| {
            store
                .settle_approval(approval_id.as_str(), outcome, now)
                .map(drop)
        });
        Ok(resolved)
    }

    /// Consumes the decision of `approval_id`; `None` if another taker had it first, or it was
    /// withdrawn.
    pub(crate) fn take(&self, approval_id: &ApprovalId) -> Option<ApprovalDecision> {
        self.take_all(&[approval_id])
            .and_then(|d| d.first().copied())
    }

    /// Consumes the decisions of one action's approvals together: all of them, or none when any
    /// is not decided (another taker had it first, it was withdrawn or it expired).
    pub(crate) fn take_all(&self, approval_ids: &[&ApprovalId]) -> Option<Vec<ApprovalDecision>> {
        let mut entries = self.lock();
        let decisions = approval_ids
            .iter()
            .map(|id| match entries.get(*id).map(|e| &e.state) {
                Some(State::Decided { decision, .. }) => Some(*decision),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        for id in approval_ids {
            entries.remove(*id);
        }
        Some(decisions)
    }

    /// Withdraws one approval (its waiter gave up: cancelled, out of time).
    pub(crate) fn withdraw(&self, approval_id: &ApprovalId) {
        self.lock().remove(approval_id);
        self.note(|store, _| {
            store
                .settle_approval(
                    approval_id.as_str(),
                    store::ApprovalOutcome::Withdrawn,
                    crate::runtime::now_ms(),
                )
                .map(drop)
        });
    }

    /// A scope ended (a run's end, a session's disposal): its pending approvals are withdrawn
    /// (nothing it asked a person about can be approved once it is gone) and what a person
    /// allowed for it ends with it. A session's end takes the approvals of its runs too.
    pub(crate) fn end_scope(&self, scope: Scope<'_>) {
        match scope {
            Scope::Run(run) => {
                self.lock().retain(|_, e| e.request.run_id != run);
                self.grants().end_run(run);
                self.note_scope(store::ApprovalScope::Run(&store::RunId::new(run)));
            }
            Scope::Session(session) => {
                self.lock().retain(|_, e| e.request.session != session);
                self.grants().end_run(session);
                self.note_scope(store::ApprovalScope::Session(&store::SessionId::new(
                    session,
                )));
            }
        }
    }

    /// The grants, held only while deciding (nothing awaits while they are held).
    pub(crate) fn grants(&self) -> std::sync::MutexGuard<'_, policy::Grants> {
        self.grants.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Withdraws everything (shutdown).
    pub(crate) fn withdraw_all(&self) {
        self.lock().clear();
        if let Some((_, instance)) = &self.record {
            self.note_scope(store::ApprovalScope::Instance(*instance));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl std::ops::Deref for Table {
    type Target = HashMap<ApprovalId, Entry>;
    fn deref(&self) -> &Self::Target {
        &self.entries
    }
}

impl std::ops::DerefMut for Table {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.entries
    }
}

/// Drops pending approvals past their expiry and decisions nobody took in time.
fn expire(table: &mut Table, now: u64) {
    let mut gone = Vec::new();
    table.entries.retain(|id, e| {
        let live = match e.state {
            State::Pending(_) => e.request.expires_at > now,
            State::Decided { until, .. } => until > now,
        };
        if !live && matches!(e.state, State::Pending(_)) {
            gone.push(id.clone());
        }
        live
    });
    for id in gone {
        if table.expired.len() == EXPIRED_REMEMBERED {
            table.expired.pop_front();
        }
        table.expired.push_back(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(id: &str) -> ApprovalId {
        ApprovalId::new(format!("approval_{id}")).unwrap()
    }

    fn request(name: &str, session: &str, run: &str, now: u64) -> ApprovalRequest {
        ApprovalRequest {
            approval_id: id(name),
            session: session.into(),
            client: None,
            run_id: run.into(),
            action: "click".into(),
            target: "button \"Save\"".into(),
            origin: "https://shop.example".into(),
            tier: RiskTier::R2,
            reason: "test".into(),
            text_chars: None,
            text: None,
            files: Vec::new(),
            requested_at: now,
            expires_at: now + 100,
        }
    }

    #[test]
    fn an_expired_approval_is_neither_listed_nor_approvable() {
        let approvals = Approvals::default();
        let _ = approvals.ask(request("a1", "s", "s", 0), "k".into(), None, 0);
        assert_eq!(approvals.list(50).len(), 1);
        assert!(approvals.list(100).is_empty(), "expired at 100");
        let _ = approvals.ask(request("a2", "s", "s", 200), "k2".into(), None, 200);
        assert_eq!(
            approvals
                .resolve(&id("a2"), ApprovalDecision::ApproveOnce, 300, 100)
                .err(),
            Some(NotPending::Expired)
        );
    }

    #[test]
    fn a_decision_is_consumed_exactly_once_by_the_identical_action() {
        let approvals = Approvals::default();
        let Asked::Pending { approval_id, .. } =
            approvals.ask(request("a1", "s", "s", 0), "k".into(), None, 0)
        else {
            panic!("asks")
        };
        approvals
            .resolve(&approval_id, ApprovalDecision::ApproveOnce, 10, 100)
            .unwrap();
        assert!(
            approvals.list(10).is_empty(),
            "decided approvals are not listed"
        );
        let Asked::Decided {
            approval_id,
            decision: ApprovalDecision::ApproveOnce,
        } = approvals.ask(request("a2", "s", "s", 20), "k".into(), None, 20)
        else {
            panic!("decided")
        };
        assert_eq!(
            approvals.take_all(&[&approval_id]),
            Some(vec![ApprovalDecision::ApproveOnce])
        );
        assert_eq!(approvals.take(&approval_id), None, "taken once");
        assert!(
            matches!(
                approvals.ask(request("a3", "s", "s", 30), "k".into(), None, 30),
                Asked::Pending { fresh: true, .. }
            ),
            "used up"
        );
    }

    #[test]
    fn the_same_action_asked_twice_shares_one_pending_approval() {
        let approvals = Approvals::default();
        let _ = approvals.ask(request("a1", "s", "s", 0), "k".into(), None, 0);
        assert!(matches!(
            approvals.ask(request("a2", "s", "s", 1), "k".into(), None, 1),
            Asked::Pending { fresh: false, .. }
        ));
        assert_eq!(approvals.list(2).len(), 1);
    }

    #[test]
    fn withdrawal_by_session_and_run() {
        let approvals = Approvals::default();
        let _ = approvals.ask(request("a1", "s1", "s1", 0), "k1".into(), None, 0);
        let _ = approvals.ask(request("a2", "s2", "run_1", 0), "k2".into(), None, 0);
        approvals.end_scope(Scope::Session("s1"));
        assert_eq!(
            approvals
                .list(1)
                .iter()
                .map(|r| r.approval_id.clone())
                .collect::<Vec<_>>(),
            [id("a2")]
        );
        approvals.end_scope(Scope::Run("run_1"));
        assert!(approvals.list(1).is_empty());
        assert_eq!(
            approvals
                .resolve(&id("a1"), ApprovalDecision::ApproveOnce, 1, 100)
                .err(),
            Some(NotPending::Unknown)
        );
    }
}
