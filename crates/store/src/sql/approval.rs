//! SQL for approval records.

use super::{Conn, Row, int, params, query_all};
use crate::approval::{ApprovalOutcome, ApprovalRecord, ApprovalScope, NewApproval};
use crate::error::{Entity, Result, StoreError};
use crate::id::{InstanceId, RunId, SessionId};

const COLUMNS: &str = "id, session_id, instance, run_id, action, origin, tier, requested_at, expires_at, outcome, decided_at";

fn decode(row: &Row) -> Result<ApprovalRecord> {
    let outcome = row.opt_text("outcome")?;
    Ok(ApprovalRecord {
        request: NewApproval {
            id: row.text("id")?,
            session_id: SessionId::new(row.text("session_id")?),
            instance: InstanceId(row.uint("instance")?),
            run_id: RunId::new(row.text("run_id")?),
            action: row.text("action")?,
            origin: row.text("origin")?,
            tier: row.text("tier")?,
            requested_at: row.uint("requested_at")?,
            expires_at: row.uint("expires_at")?,
        },
        outcome: outcome
            .map(|o| {
                ApprovalOutcome::parse(&o).ok_or(StoreError::Corrupt {
                    what: "approvals.outcome",
                    value: o,
                })
            })
            .transpose()?,
        decided_at: row.opt_uint("decided_at")?,
    })
}

pub(super) fn record(c: &mut dyn Conn, new: &NewApproval) -> Result<()> {
    let inserted = c.execute(
        "INSERT INTO approvals (id, session_id, instance, run_id, action, origin, tier, requested_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO NOTHING",
        params![
            &new.id,
            new.session_id.as_str(),
            int(new.instance.0, "instance")?,
            new.run_id.as_str(),
            &new.action,
            &new.origin,
            &new.tier,
            int(new.requested_at, "requested_at")?,
            int(new.expires_at, "expires_at")?,
        ],
    )?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists {
            what: Entity::Approval,
            id: new.id.clone(),
        });
    }
    Ok(())
}

/// Sets the outcome of a pending approval; `false` if it was not pending. The condition and
/// the write are one statement: of two instances settling the same approval, one wins.
pub(super) fn settle(
    c: &mut dyn Conn,
    id: &str,
    outcome: ApprovalOutcome,
    now_ms: u64,
) -> Result<bool> {
    let now = int(now_ms, "now_ms")?;
    let changed = c.execute(
        "UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE id = ?1 AND outcome IS NULL",
        params![id, outcome.as_str(), now],
    )?;
    Ok(changed == 1)
}

pub(super) fn settle_scope(
    c: &mut dyn Conn,
    scope: ApprovalScope<'_>,
    outcome: ApprovalOutcome,
    now_ms: u64,
) -> Result<u64> {
    let now = int(now_ms, "now_ms")?;
    let outcome = outcome.as_str();
    match scope {
        ApprovalScope::Run(run) => c.execute(
            "UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE run_id = ?1 AND outcome IS NULL",
            params![run.as_str(), outcome, now],
        ),
        ApprovalScope::Session(session) => c.execute(
            "UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE session_id = ?1 AND outcome IS NULL",
            params![session.as_str(), outcome, now],
        ),
        ApprovalScope::Instance(instance) => c.execute(
            "UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE instance = ?1 AND outcome IS NULL",
            params![int(instance.0, "instance")?, outcome, now],
        ),
    }
}

pub(super) fn list(c: &mut dyn Conn, session: &SessionId) -> Result<Vec<ApprovalRecord>> {
    query_all(
        c,
        &format!("SELECT {COLUMNS} FROM approvals WHERE session_id = ?1 ORDER BY requested_at, id"),
        params![session.as_str()],
        decode,
    )
}
