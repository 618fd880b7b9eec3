//! SQL for process instances and the reconciliation an ending instance performs.

use rusqlite::{Connection, Row, params};

use super::{get_uint, int, opt_uint, query_all, uint, write_tx};
use crate::error::{Result, StoreError};
use crate::id::{InstanceId, ResourceId, SessionId};
use crate::instance::{EndReport, InstanceEnd, InstanceRecord};

/// Inserts the new instance. Handles other instances recorded stay: they may belong to a
/// process that still runs (only [`end`] clears an instance's handles).
pub(super) fn begin(
    conn: &mut Connection,
    now_ms: u64,
    lock_name: Option<&str>,
) -> Result<InstanceId> {
    let now = int(now_ms, "now_ms")?;
    let tx = write_tx(conn)?;
    tx.execute(
        "INSERT INTO instances (started_at, lock_name) VALUES (?1, ?2)",
        params![now, lock_name],
    )?;
    let id = tx.last_insert_rowid();
    tx.commit()?;
    Ok(InstanceId(uint(id, "instances.id")?))
}

/// The latest instance.
pub(super) fn current(conn: &Connection) -> Result<Option<InstanceId>> {
    let id: Option<i64> = conn.query_row("SELECT MAX(id) FROM instances", [], |r| r.get(0))?;
    id.map(|id| uint(id, "instances.id").map(InstanceId))
        .transpose()
}

fn decode(row: &Row<'_>) -> Result<InstanceRecord> {
    let how: Option<String> = row.get("ended_how")?;
    Ok(InstanceRecord {
        id: InstanceId(get_uint(row, "id")?),
        started_at: get_uint(row, "started_at")?,
        lock_name: row.get("lock_name")?,
        ended_at: opt_uint(row, "ended_at")?,
        ended_how: how
            .map(|h| {
                InstanceEnd::parse(&h).ok_or(StoreError::Corrupt {
                    what: "instances.ended_how",
                    value: h,
                })
            })
            .transpose()?,
    })
}

/// Instances that have not ended, oldest first.
pub(super) fn open(conn: &Connection) -> Result<Vec<InstanceRecord>> {
    query_all(
        conn,
        "SELECT id, started_at, lock_name, ended_at, ended_how FROM instances WHERE ended_at IS NULL ORDER BY id",
        [],
        decode,
    )
}

fn ids<T: From<String>>(
    tx: &rusqlite::Transaction<'_>,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<T>> {
    let mut stmt = tx.prepare_cached(sql)?;
    let rows = stmt.query_map(params, |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for row in rows {
        out.push(T::from(row?));
    }
    Ok(out)
}

/// Ends an instance and reconciles what it left, in one transaction (see [`crate::Store::end_instance`]).
pub(super) fn end(
    conn: &mut Connection,
    id: InstanceId,
    how: InstanceEnd,
    now_ms: u64,
) -> Result<EndReport> {
    let now = int(now_ms, "now_ms")?;
    let instance = int(id.0, "instance")?;
    let tx = write_tx(conn)?;
    let ended: Option<i64> = tx
        .query_row(
            "SELECT ended_at FROM instances WHERE id = ?1",
            [instance],
            |r| r.get(0),
        )
        .map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => StoreError::NotFound {
                what: crate::error::Entity::Instance,
                id: id.to_string(),
            },
            e => e.into(),
        })?;
    let mut report = EndReport::default();
    if ended.is_some() {
        return Ok(report); // idempotent
    }
    report.sessions = ids::<SessionId>(
        &tx,
        "SELECT id FROM sessions WHERE instance = ?1 AND state = 'active' ORDER BY created_at, id",
        [instance],
    )?;
    let mut counts = Vec::new();
    for session in &report.sessions {
        let before = (
            report.closed.len(),
            report.released.len(),
            report.kept.len(),
        );
        tx.execute("UPDATE sessions SET state = 'abandoned', tools_active = 0, updated_at = ?2 WHERE id = ?1", params![session.as_str(), now])?;
        // A handle of the ending instance is lost; one the caller already closed was cleared.
        report.closed.extend(ids::<ResourceId>(
            &tx,
            "UPDATE resources
                SET state = 'released', cdp_target_id = NULL, instance = NULL, handle_lost = 0,
                    updated_at = ?2, version = version + 1
              WHERE session_id = ?1 AND state != 'released' AND ownership = 'agent_created' AND mark = 'none'
             RETURNING id",
            params![session.as_str(), now],
        )?);
        report.kept.extend(ids::<ResourceId>(
            &tx,
            "UPDATE resources
                SET state = 'retained',
                    handle_lost = CASE WHEN instance = ?3 THEN 1 ELSE handle_lost END,
                    cdp_target_id = CASE WHEN instance = ?3 THEN NULL ELSE cdp_target_id END,
                    instance = CASE WHEN instance = ?3 THEN NULL ELSE instance END,
                    updated_at = ?2, version = version + 1
              WHERE session_id = ?1 AND state != 'released' AND ownership = 'agent_created' AND mark != 'none'
             RETURNING id",
            params![session.as_str(), now, instance],
        )?);
        report.released.extend(ids::<ResourceId>(
            &tx,
            "UPDATE resources
                SET session_id = NULL, ownership = 'user', state = 'released', mark = 'none', mark_turn_id = NULL,
                    handle_lost = CASE WHEN instance = ?3 THEN 1 ELSE handle_lost END,
                    cdp_target_id = CASE WHEN instance = ?3 THEN NULL ELSE cdp_target_id END,
                    instance = CASE WHEN instance = ?3 THEN NULL ELSE instance END,
                    released_at = ?2, updated_at = ?2, version = version + 1
              WHERE session_id = ?1 AND state != 'released' AND ownership != 'agent_created'
             RETURNING id",
            params![session.as_str(), now, instance],
        )?);
        // Its recovery records were this session's to retry; every one of its tabs is settled above.
        tx.execute("UPDATE recovery_records SET resolved_at = ?2 WHERE session_id = ?1 AND resolved_at IS NULL", params![session.as_str(), now])?;
        counts.push((
            report.closed.len() - before.0,
            report.released.len() - before.1,
            report.kept.len() - before.2,
        ));
    }
    // Every other handle the instance recorded (tabs a person offered, tabs of ended sessions).
    tx.execute(
        "UPDATE resources SET cdp_target_id = NULL, instance = NULL, handle_lost = 1, updated_at = ?2, version = version + 1
          WHERE instance = ?1",
        params![instance, now],
    )?;
    let outcome = match how {
        InstanceEnd::Stopped => "withdrawn",
        InstanceEnd::Abandoned => "abandoned",
    };
    report.approvals = u64::try_from(
        tx.execute("UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE instance = ?1 AND outcome IS NULL", params![instance, outcome, now])?,
    )
    .unwrap_or(0);
    (report.unknown_operations, report.abandoned_runs) =
        super::record::close_instance(&tx, instance, now)?;
    tx.execute(
        "UPDATE instances SET ended_at = ?2, ended_how = ?3 WHERE id = ?1",
        params![instance, now, how.as_str()],
    )?;
    for (session, (closed, released, kept)) in report.sessions.iter().zip(counts) {
        let payload = format!(
            r#"{{"instance":{},"ended":"{}","closed":{closed},"released":{released},"kept":{kept}}}"#,
            id.0,
            how.as_str()
        );
        tx.execute(
            "INSERT INTO audit (at, session_id, run_id, resource_id, kind, payload) VALUES (?1, ?2, NULL, NULL, 'abandoned', ?3)",
            params![now, session.as_str(), payload],
        )?;
    }
    tx.commit()?;
    Ok(report)
}
