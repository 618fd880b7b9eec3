//! SQL for the audit log: insert and read, nothing else.

use rusqlite::{Connection, Row, params};

use super::{get_uint, int, query_all, uint, write_tx};
use crate::audit::{AuditEntry, NewAudit};
use crate::error::{Result, StoreError};
use crate::id::{AuditSeq, ResourceId, RunId, SessionId};

const COLUMNS: &str = "seq, at, session_id, run_id, resource_id, kind, payload";

fn decode(row: &Row<'_>) -> Result<AuditEntry> {
    Ok(AuditEntry {
        seq: AuditSeq(get_uint(row, "seq")?),
        at: get_uint(row, "at")?,
        session_id: SessionId::new(row.get::<_, String>("session_id")?),
        run_id: row.get::<_, Option<String>>("run_id")?.map(RunId::new),
        resource_id: row
            .get::<_, Option<String>>("resource_id")?
            .map(ResourceId::new),
        kind: row.get("kind")?,
        payload: row.get("payload")?,
    })
}

pub(super) fn append(conn: &mut Connection, entry: &NewAudit<'_>) -> Result<AuditSeq> {
    let at = int(entry.at, "at")?;
    let tx = write_tx(conn)?;
    // The table's CHECK is the backstop; asking first gives a named error instead of a
    // constraint failure to decode.
    let valid: bool = tx.query_row("SELECT json_valid(?1)", [entry.payload], |r| r.get(0))?;
    if !valid {
        return Err(StoreError::InvalidJson);
    }
    tx.prepare_cached(
        "INSERT INTO audit (at, session_id, run_id, resource_id, kind, payload)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        at,
        entry.session_id.as_str(),
        entry.run_id.map(RunId::as_str),
        entry.resource_id.map(ResourceId::as_str),
        entry.kind,
        entry.payload,
    ])?;
    let seq = tx.last_insert_rowid();
    tx.commit()?;
    Ok(AuditSeq(uint(seq, "audit.seq")?))
}

pub(super) fn since(
    conn: &Connection,
    session: &SessionId,
    after: AuditSeq,
    limit: usize,
) -> Result<Vec<AuditEntry>> {
    // A limit is a cap, so clamping one past `i64::MAX` changes nothing.
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // `after` past `i64::MAX` would be after every entry.
    let Ok(after) = i64::try_from(after.0) else {
        return Ok(Vec::new());
    };
    query_all(
        conn,
        &format!(
            "SELECT {COLUMNS} FROM audit WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"
        ),
        params![session.as_str(), after, limit],
        decode,
    )
}
