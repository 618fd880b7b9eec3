//! SQL for approval records.

use rusqlite::{Connection, Row, params};

use super::{get_uint, int, opt_uint, query_all, uint};
use crate::approval::{ApprovalOutcome, ApprovalRecord, ApprovalScope, NewApproval};
use crate::error::{Entity, Result, StoreError};
use crate::id::{InstanceId, RunId, SessionId};

const COLUMNS: &str = "id, session_id, instance, run_id, action, origin, tier, requested_at, expires_at, outcome, decided_at";

fn decode(row: &Row<'_>) -> Result<ApprovalRecord> {
    let outcome: Option<String> = row.get("outcome")?;
    Ok(ApprovalRecord {
        request: NewApproval {
            id: row.get("id")?,
            session_id: SessionId::new(row.get::<_, String>("session_id")?),
            instance: InstanceId(get_uint(row, "instance")?),
            run_id: RunId::new(row.get::<_, String>("run_id")?),
            action: row.get("action")?,
            origin: row.get("origin")?,
            tier: row.get("tier")?,
            requested_at: get_uint(row, "requested_at")?,
            expires_at: get_uint(row, "expires_at")?,
        },
        outcome: outcome
            .map(|o| {
                ApprovalOutcome::parse(&o).ok_or(StoreError::Corrupt {
                    what: "approvals.outcome",
                    value: o,
                })
            })
            .transpose()?,
        decided_at: opt_uint(row, "decided_at")?,
    })
}

pub(super) fn record(conn: &Connection, new: &NewApproval) -> Result<()> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO approvals (id, session_id, instance, run_id, action, origin, tier, requested_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO NOTHING",
        )?
        .execute(params![
            new.id,
            new.session_id.as_str(),
            int(new.instance.0, "instance")?,
            new.run_id.as_str(),
            new.action,
            new.origin,
            new.tier,
            int(new.requested_at, "requested_at")?,
            int(new.expires_at, "expires_at")?,
        ])?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists {
            what: Entity::Approval,
            id: new.id.clone(),
        });
    }
    Ok(())
}

/// Sets the outcome of a pending approval; `false` if it was not pending.
pub(super) fn settle(
    conn: &Connection,
    id: &str,
    outcome: ApprovalOutcome,
    now_ms: u64,
) -> Result<bool> {
    let now = int(now_ms, "now_ms")?;
    let changed = conn
        .prepare_cached(
            "UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE id = ?1 AND outcome IS NULL",
        )?
        .execute(params![id, outcome.as_str(), now])?;
    Ok(changed == 1)
}

pub(super) fn settle_scope(
    conn: &Connection,
    scope: ApprovalScope<'_>,
    outcome: ApprovalOutcome,
    now_ms: u64,
) -> Result<u64> {
    let now = int(now_ms, "now_ms")?;
    let changed = match scope {
        ApprovalScope::Run(run) => conn
            .prepare_cached("UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE run_id = ?1 AND outcome IS NULL")?
            .execute(params![run.as_str(), outcome.as_str(), now])?,
        ApprovalScope::Session(session) => conn
            .prepare_cached("UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE session_id = ?1 AND outcome IS NULL")?
            .execute(params![session.as_str(), outcome.as_str(), now])?,
        ApprovalScope::Instance(instance) => conn
            .prepare_cached("UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE instance = ?1 AND outcome IS NULL")?
            .execute(params![int(instance.0, "instance")?, outcome.as_str(), now])?,
    };
    uint(i64::try_from(changed).unwrap_or(i64::MAX), "changes")
}

pub(super) fn list(conn: &Connection, session: &SessionId) -> Result<Vec<ApprovalRecord>> {
    query_all(
        conn,
        &format!("SELECT {COLUMNS} FROM approvals WHERE session_id = ?1 ORDER BY requested_at, id"),
        [session.as_str()],
        decode,
    )
}
