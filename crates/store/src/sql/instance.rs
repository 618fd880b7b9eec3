//! SQL for process instances and the reconciliation an ending instance performs.

use super::{Conn, Row, int, params, query_all, uint};
use crate::error::{Result, StoreError};
use crate::id::{InstanceId, ResourceId, SessionId};
use crate::instance::{EndReport, InstanceEnd, InstanceRecord};

const COLUMNS: &str = "id, started_at, lock_name, ended_at, ended_how, heartbeat_at";

/// Inserts the new instance. Handles other instances recorded stay: they may belong to a
/// process that still runs (only [`end`] clears an instance's handles).
pub(super) fn begin(c: &mut dyn Conn, now_ms: u64, lock_name: Option<&str>) -> Result<InstanceId> {
    let now = int(now_ms, "now_ms")?;
    let id = c
        .query(
            "INSERT INTO instances (started_at, lock_name, heartbeat_at) VALUES (?1, ?2, ?1) RETURNING id",
            params![now, lock_name],
        )?
        .first()
        .map(|r| r.int("id"))
        .transpose()?
        .unwrap_or(-1);
    Ok(InstanceId(uint(id, "instances.id")?))
}

/// The latest instance.
pub(super) fn current(c: &mut dyn Conn) -> Result<Option<InstanceId>> {
    let id = c
        .query("SELECT MAX(id) AS id FROM instances", params![])?
        .first()
        .map(|r| r.opt_int("id"))
        .transpose()?
        .flatten();
    id.map(|id| uint(id, "instances.id").map(InstanceId))
        .transpose()
}

fn decode(row: &Row) -> Result<InstanceRecord> {
    let how = row.opt_text("ended_how")?;
    Ok(InstanceRecord {
        id: InstanceId(row.uint("id")?),
        started_at: row.uint("started_at")?,
        lock_name: row.opt_text("lock_name")?,
        ended_at: row.opt_uint("ended_at")?,
        ended_how: how
            .map(|h| {
                InstanceEnd::parse(&h).ok_or(StoreError::Corrupt {
                    what: "instances.ended_how",
                    value: h,
                })
            })
            .transpose()?,
        heartbeat_at: row.opt_uint("heartbeat_at")?,
    })
}

/// Instances that have not ended, oldest first.
pub(super) fn open(c: &mut dyn Conn) -> Result<Vec<InstanceRecord>> {
    query_all(
        c,
        &format!("SELECT {COLUMNS} FROM instances WHERE ended_at IS NULL ORDER BY id"),
        params![],
        decode,
    )
}

/// Records that the instance lives; `false` once it has ended (another instance found it dead
/// and took its records over: it must stop writing as their owner).
pub(super) fn heartbeat(c: &mut dyn Conn, id: InstanceId, now_ms: u64) -> Result<bool> {
    let changed = c.execute(
        "UPDATE instances SET heartbeat_at = ?2 WHERE id = ?1 AND ended_at IS NULL",
        params![int(id.0, "instance")?, int(now_ms, "now_ms")?],
    )?;
    Ok(changed == 1)
}

/// Ends the instance as `abandoned` only if it has not ended and its last heartbeat (or its
/// start, without one) is before `stale_before_ms`: the check and the reconciliation are one
/// transaction, so of several instances that find it dead at once exactly one takes it over.
pub(super) fn take_over(
    c: &mut dyn Conn,
    id: InstanceId,
    stale_before_ms: u64,
    now_ms: u64,
) -> Result<Option<EndReport>> {
    let stale = !c
        .query(
            "SELECT id FROM instances WHERE id = ?1 AND ended_at IS NULL
                AND COALESCE(heartbeat_at, started_at) < ?2",
            params![
                int(id.0, "instance")?,
                int(stale_before_ms, "stale_before_ms")?
            ],
        )?
        .is_empty();
    if !stale {
        return Ok(None);
    }
    end(c, id, InstanceEnd::Abandoned, now_ms).map(Some)
}

fn ids<T: From<String>>(
    c: &mut dyn Conn,
    sql: &str,
    params: &[super::Param<'_>],
) -> Result<Vec<T>> {
    c.query(sql, params)?
        .iter()
        .map(|r| r.first_text().map(T::from))
        .collect()
}

/// Ends an instance and reconciles what it left, in one transaction (see [`crate::Store::end_instance`]).
pub(super) fn end(
    c: &mut dyn Conn,
    id: InstanceId,
    how: InstanceEnd,
    now_ms: u64,
) -> Result<EndReport> {
    let now = int(now_ms, "now_ms")?;
    let instance = int(id.0, "instance")?;
    let Some(found) = c
        .query(
            "SELECT ended_at FROM instances WHERE id = ?1",
            params![instance],
        )?
        .into_iter()
        .next()
    else {
        return Err(StoreError::NotFound {
            what: crate::error::Entity::Instance,
            id: id.to_string(),
        });
    };
    let mut report = EndReport::default();
    if found.opt_int("ended_at")?.is_some() {
        return Ok(report); // idempotent
    }
    report.sessions = ids::<SessionId>(
        c,
        "SELECT id FROM sessions WHERE instance = ?1 AND state = 'active' ORDER BY created_at, id",
        params![instance],
    )?;
    let mut counts = Vec::new();
    for session in &report.sessions {
        let before = (
            report.closed.len(),
            report.released.len(),
            report.kept.len(),
        );
        c.execute(
            "UPDATE sessions SET state = 'abandoned', tools_active = 0, updated_at = ?2 WHERE id = ?1",
            params![session.as_str(), now],
        )?;
        // A handle of the ending instance is lost; one the caller already closed was cleared.
        report.closed.extend(ids::<ResourceId>(
            c,
            "UPDATE resources
                SET state = 'released', cdp_target_id = NULL, instance = NULL, handle_lost = 0,
                    updated_at = ?2, version = version + 1
              WHERE session_id = ?1 AND state != 'released' AND ownership = 'agent_created' AND mark = 'none'
             RETURNING id",
            params![session.as_str(), now],
        )?);
        report.kept.extend(ids::<ResourceId>(
            c,
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
            c,
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
        c.execute(
            "UPDATE recovery_records SET resolved_at = ?2 WHERE session_id = ?1 AND resolved_at IS NULL",
            params![session.as_str(), now],
        )?;
        counts.push((
            report.closed.len() - before.0,
            report.released.len() - before.1,
            report.kept.len() - before.2,
        ));
    }
    // Every other handle the instance recorded (tabs a person offered, tabs of ended sessions).
    c.execute(
        "UPDATE resources SET cdp_target_id = NULL, instance = NULL, handle_lost = 1, updated_at = ?2, version = version + 1
          WHERE instance = ?1",
        params![instance, now],
    )?;
    let outcome = match how {
        InstanceEnd::Stopped => "withdrawn",
        InstanceEnd::Abandoned => "abandoned",
    };
    report.approvals = c.execute(
        "UPDATE approvals SET outcome = ?2, decided_at = ?3 WHERE instance = ?1 AND outcome IS NULL",
        params![instance, outcome, now],
    )?;
    (report.unknown_operations, report.abandoned_runs) =
        super::record::close_instance(c, instance, now)?;
    c.execute(
        "UPDATE instances SET ended_at = ?2, ended_how = ?3 WHERE id = ?1",
        params![instance, now, how.as_str()],
    )?;
    for (session, (closed, released, kept)) in report.sessions.iter().zip(counts) {
        let payload = format!(
            r#"{{"instance":{},"ended":"{}","closed":{closed},"released":{released},"kept":{kept}}}"#,
            id.0,
            how.as_str()
        );
        c.execute(
            "INSERT INTO audit (at, session_id, run_id, resource_id, kind, payload) VALUES (?1, ?2, NULL, NULL, 'abandoned', ?3)",
            params![now, session.as_str(), &payload],
        )?;
    }
    Ok(report)
}
