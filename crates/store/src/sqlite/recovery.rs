//! SQL for recovery records.

use rusqlite::{Connection, Row, params};

use super::{get_uint, int, opt_uint, query_all, query_opt, resource, session, uint, write_tx};
use crate::error::{Entity, Result, StoreError};
use crate::id::{RecoveryId, ResourceId, SessionId};
use crate::recovery::{NewRecovery, RecoveryKind, RecoveryRecord};

const COLUMNS: &str =
    "id, session_id, resource_id, kind, detail, attempts, created_at, last_attempt_at, resolved_at";

fn decode(row: &Row<'_>) -> Result<RecoveryRecord> {
    Ok(RecoveryRecord {
        id: RecoveryId(get_uint(row, "id")?),
        session_id: SessionId::new(row.get::<_, String>("session_id")?),
        resource_id: row
            .get::<_, Option<String>>("resource_id")?
            .map(ResourceId::new),
        kind: RecoveryKind::parse(&row.get::<_, String>("kind")?),
        detail: row.get("detail")?,
        attempts: get_uint(row, "attempts")?,
        created_at: get_uint(row, "created_at")?,
        last_attempt_at: get_uint(row, "last_attempt_at")?,
        resolved_at: opt_uint(row, "resolved_at")?,
    })
}

fn not_found(id: RecoveryId) -> StoreError {
    StoreError::NotFound {
        what: Entity::Recovery,
        id: id.to_string(),
    }
}

pub(super) fn add(conn: &mut Connection, new: &NewRecovery) -> Result<RecoveryId> {
    let now = int(new.now_ms, "now_ms")?;
    let tx = write_tx(conn)?;
    session::require(&tx, &new.session_id)?;
    if let Some(resource) = &new.resource_id {
        resource::get(&tx, resource)?;
    }
    tx.execute(
        "INSERT INTO recovery_records
             (session_id, resource_id, kind, detail, attempts, created_at, last_attempt_at)
         VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)",
        params![
            new.session_id.as_str(),
            new.resource_id.as_ref().map(ResourceId::as_str),
            new.kind.as_str(),
            new.detail,
            now,
        ],
    )?;
    let id = tx.last_insert_rowid();
    tx.commit()?;
    Ok(RecoveryId(uint(id, "recovery_records.id")?))
}

pub(super) fn get(conn: &Connection, id: RecoveryId) -> Result<RecoveryRecord> {
    query_opt(
        conn,
        &format!("SELECT {COLUMNS} FROM recovery_records WHERE id = ?1"),
        [int(id.0, "recovery id")?],
        decode,
    )?
    .ok_or_else(|| not_found(id))
}

pub(super) fn pending(conn: &Connection, session: &SessionId) -> Result<Vec<RecoveryRecord>> {
    query_all(
        conn,
        &format!(
            "SELECT {COLUMNS} FROM recovery_records
              WHERE session_id = ?1 AND resolved_at IS NULL ORDER BY id"
        ),
        [session.as_str()],
        decode,
    )
}

pub(super) fn record_attempt(
    conn: &mut Connection,
    id: RecoveryId,
    detail: Option<&str>,
    now_ms: u64,
) -> Result<RecoveryRecord> {
    let now = int(now_ms, "now_ms")?;
    let tx = write_tx(conn)?;
    let updated = query_opt(
        &tx,
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
        get(&tx, id)?;
        return Err(StoreError::AlreadyResolved { id });
    };
    tx.commit()?;
    Ok(record)
}

pub(super) fn resolve(
    conn: &mut Connection,
    id: RecoveryId,
    now_ms: u64,
) -> Result<RecoveryRecord> {
    let now = int(now_ms, "now_ms")?;
    let tx = write_tx(conn)?;
    tx.execute(
        "UPDATE recovery_records SET resolved_at = ?2 WHERE id = ?1 AND resolved_at IS NULL",
        params![int(id.0, "recovery id")?, now],
    )?;
    let record = get(&tx, id)?;
    tx.commit()?;
    Ok(record)
}
