//! SQL for the audit log: insert and read, nothing else.

use super::{Conn, Row, int, params, query_all, uint};
use crate::audit::{AuditEntry, NewAudit};
use crate::error::{Result, StoreError};
use crate::id::{AuditSeq, ResourceId, RunId, SessionId};

const COLUMNS: &str = "seq, at, session_id, run_id, resource_id, kind, payload";

fn decode(row: &Row) -> Result<AuditEntry> {
    Ok(AuditEntry {
        seq: AuditSeq(row.uint("seq")?),
        at: row.uint("at")?,
        session_id: SessionId::new(row.text("session_id")?),
        run_id: row.opt_text("run_id")?.map(RunId::new),
        resource_id: row.opt_text("resource_id")?.map(ResourceId::new),
        kind: row.text("kind")?,
        payload: row.text("payload")?,
    })
}

pub(super) fn append(c: &mut dyn Conn, entry: &NewAudit<'_>) -> Result<AuditSeq> {
    let at = int(entry.at, "at")?;
    // The table's CHECK is the backstop; asking first gives a named error instead of a
    // constraint failure to decode. Both engines have `json_valid` (PostgreSQL's is the
    // schema's own function), answering 0/1.
    let valid = c
        .query("SELECT json_valid(?1) AS valid", params![entry.payload])?
        .first()
        .map(|r| r.int("valid"))
        .transpose()?;
    if valid != Some(1) {
        return Err(StoreError::InvalidJson);
    }
    let seq = c
        .query(
            "INSERT INTO audit (at, session_id, run_id, resource_id, kind, payload)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING seq",
            params![
                at,
                entry.session_id.as_str(),
                entry.run_id.map(RunId::as_str),
                entry.resource_id.map(ResourceId::as_str),
                entry.kind,
                entry.payload,
            ],
        )?
        .first()
        .map(|r| r.int("seq"))
        .transpose()?
        .unwrap_or(-1);
    Ok(AuditSeq(uint(seq, "audit.seq")?))
}

pub(super) fn since(
    c: &mut dyn Conn,
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
        c,
        &format!(
            "SELECT {COLUMNS} FROM audit WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"
        ),
        params![session.as_str(), after, limit],
        decode,
    )
}
