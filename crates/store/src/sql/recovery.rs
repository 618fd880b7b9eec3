//! SQL for recovery records.

use super::{Conn, Row, int, params, query_all, query_opt, resource, session, uint};
use crate::error::{Entity, Result, StoreError};
use crate::id::{RecoveryId, ResourceId, SessionId};
use crate::recovery::{NewRecovery, RecoveryKind, RecoveryRecord};

const COLUMNS: &str =
    "id, session_id, resource_id, kind, detail, attempts, created_at, last_attempt_at, resolved_at";

fn decode(row: &Row) -> Result<RecoveryRecord> {
    Ok(RecoveryRecord {
        id: RecoveryId(row.uint("id")?),
        session_id: SessionId::new(row.text("session_id")?),
        resource_id: row.opt_text("resource_id")?.map(ResourceId::new),
        kind: RecoveryKind::parse(&row.text("kind")?),
        detail: row.text("detail")?,
        attempts: row.uint("attempts")?,
        created_at: row.uint("created_at")?,
        last_attempt_at: row.uint("last_attempt_at")?,
        resolved_at: row.opt_uint("resolved_at")?,
    })
}

fn not_found(id: RecoveryId) -> StoreError {
    StoreError::NotFound {
        what: Entity::Recovery,
        id: id.to_string(),
    }
}

pub(super) fn add(c: &mut dyn Conn, new: &NewRecovery) -> Result<RecoveryId> {
    let now = int(new.now_ms, "now_ms")?;
    session::require(c, &new.session_id)?;
    if let Some(resource) = &new.resource_id {
        resource::get(c, resource)?;
    }
    let id = c
        .query(
            "INSERT INTO recovery_records
                 (session_id, resource_id, kind, detail, attempts, created_at, last_attempt_at)
             VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5) RETURNING id",
            params![
                new.session_id.as_str(),
                new.resource_id.as_ref().map(ResourceId::as_str),
                new.kind.as_str(),
                &new.detail,
                now,
            ],
        )?
        .first()
        .map(|r| r.int("id"))
        .transpose()?
        .unwrap_or(-1);
    Ok(RecoveryId(uint(id, "recovery_records.id")?))
}

pub(super) fn get(c: &mut dyn Conn, id: RecoveryId) -> Result<RecoveryRecord> {
    query_opt(
        c,
        &format!("SELECT {COLUMNS} FROM recovery_records WHERE id = ?1"),
        params![int(id.0, "recovery id")?],
        decode,
    )?
    .ok_or_else(|| not_found(id))
}

pub(super) fn pending(c: &mut dyn Conn, session: &SessionId) -> Result<Vec<RecoveryRecord>> {
    query_all(
        c,
        &format!(
            "SELECT {COLUMNS} FROM recovery_records
              WHERE session_id = ?1 AND resolved_at IS NULL ORDER BY id"
        ),
        params![session.as_str()],
        decode,
    )
}

pub(super) fn record_attempt(
    c: &mut dyn Conn,
    id: RecoveryId,
    detail: Option<&str>,
    now_ms: u64,
) -> Result<RecoveryRecord> {
    let now = int(now_ms, "now_ms")?;
    let updated = query_opt(
        c,
        &format!(
            "UPDATE recovery_records
                SET attempts = attempts + 1, last_attempt_at = ?2, detail = COALESCE(?3, detail)
              WHERE id = ?1 AND resolved_at IS NULL
             RETURNING {COLUMNS}"
        ),
        params![int(id.0, "recovery id")?, now, detail],
        decode,
    )?;
    let Some(record) = updated else {
        get(c, id)?;
        return Err(StoreError::AlreadyResolved { id });
    };
    Ok(record)
}

pub(super) fn resolve(c: &mut dyn Conn, id: RecoveryId, now_ms: u64) -> Result<RecoveryRecord> {
    let now = int(now_ms, "now_ms")?;
    c.execute(
        "UPDATE recovery_records SET resolved_at = ?2 WHERE id = ?1 AND resolved_at IS NULL",
        params![int(id.0, "recovery id")?, now],
    )?;
    get(c, id)
}
