//! SQL for run records and the operation log.

use super::{Conn, Row, int, params, query_all, query_opt, uint};
use crate::error::{Entity, Result, StoreError};
use crate::id::{InstanceId, RunId, SessionId};
use crate::record::{
    NewOperation, NewRun, OperationEnd, OperationFilter, OperationRecord, OperationState,
    PruneReport, RunEnd, RunRecord,
};

const RUN_COLUMNS: &str = "id, session_id, instance, surface, task, model, max_steps, max_seconds, started_at, ended_at, status, reason, summary, steps, accounting";
const OPERATION_COLUMNS: &str = "seq, id, session_id, run_id, instance, surface, resource_id, action, target, text_chars, secret, url, frame_before, frame_after, \
     state, effect_uncertain, error, detail, started_at, ended_at, marker";

fn small(row: &Row, column: &'static str) -> Result<u32> {
    let v = row.uint(column)?;
    u32::try_from(v).map_err(|_| StoreError::Corrupt {
        what: column,
        value: v.to_string(),
    })
}

fn decode_run(row: &Row) -> Result<RunRecord> {
    let ended_at = row.opt_uint("ended_at")?;
    let end = match ended_at {
        None => None,
        Some(ended_at) => Some(RunEnd {
            status: row.opt_text("status")?.unwrap_or_default(),
            reason: row.opt_text("reason")?.unwrap_or_default(),
            summary: row.opt_text("summary")?.unwrap_or_default(),
            steps: row.opt_int("steps")?.map_or(Ok(0), |s| {
                u32::try_from(s).map_err(|_| StoreError::Corrupt {
                    what: "runs.steps",
                    value: s.to_string(),
                })
            })?,
            accounting: row.opt_text("accounting")?,
            task: None,
            ended_at,
        }),
    };
    Ok(RunRecord {
        run: NewRun {
            id: RunId::new(row.text("id")?),
            session_id: SessionId::new(row.text("session_id")?),
            surface: row.text("surface")?,
            task: row.text("task")?,
            model: row.opt_text("model")?,
            max_steps: small(row, "max_steps")?,
            max_seconds: small(row, "max_seconds")?,
            started_at: row.uint("started_at")?,
        },
        instance: row.opt_uint("instance")?.map(InstanceId),
        end,
    })
}

fn decode_operation(row: &Row) -> Result<OperationRecord> {
    let state = row.text("state")?;
    let state = OperationState::parse(&state).ok_or(StoreError::Corrupt {
        what: "operations.state",
        value: state,
    })?;
    let end = match row.opt_uint("ended_at")? {
        None => None,
        Some(ended_at) => Some(OperationEnd {
            state,
            effect_uncertain: row.bool("effect_uncertain")?,
            error: row.opt_text("error")?,
            detail: row.opt_text("detail")?,
            frame_after: row.opt_text("frame_after")?,
            marker: row.opt_text("marker")?,
            ended_at,
        }),
    };
    Ok(OperationRecord {
        seq: row.uint("seq")?,
        operation: NewOperation {
            id: row.text("id")?,
            session_id: SessionId::new(row.text("session_id")?),
            run_id: row.opt_text("run_id")?.map(RunId::new),
            surface: row.text("surface")?,
            resource_id: row.opt_text("resource_id")?,
            action: row.text("action")?,
            target: row.opt_text("target")?,
            text_chars: row.opt_uint("text_chars")?,
            secret: row.bool("secret")?,
            url: row.opt_text("url")?,
            frame_before: row.text("frame_before")?,
            started_at: row.uint("started_at")?,
        },
        instance: row.opt_uint("instance")?.map(InstanceId),
        state,
        end,
    })
}

fn instance_param(instance: Option<InstanceId>) -> Result<Option<i64>> {
    instance.map(|i| int(i.0, "instance")).transpose()
}

/// A caller's limit, 0 meaning none.
fn limit(n: usize) -> i64 {
    if n == 0 {
        i64::MAX
    } else {
        i64::try_from(n).unwrap_or(i64::MAX)
    }
}

pub(super) fn begin_run(
    c: &mut dyn Conn,
    new: &NewRun,
    instance: Option<InstanceId>,
) -> Result<()> {
    let inserted = c.execute(
        "INSERT INTO runs (id, session_id, instance, surface, task, model, max_steps, max_seconds, started_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO NOTHING",
        params![
            new.id.as_str(),
            new.session_id.as_str(),
            instance_param(instance)?,
            &new.surface,
            &new.task,
            &new.model,
            new.max_steps,
            new.max_seconds,
            int(new.started_at, "started_at")?,
        ],
    )?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists {
            what: Entity::Run,
            id: new.id.to_string(),
        });
    }
    Ok(())
}

pub(super) fn end_run(c: &mut dyn Conn, id: &RunId, end: &RunEnd) -> Result<bool> {
    let changed = c.execute(
        "UPDATE runs SET ended_at = ?2, status = ?3, reason = ?4, summary = ?5, steps = ?6, accounting = ?7, task = COALESCE(?8, task)
          WHERE id = ?1 AND ended_at IS NULL",
        params![
            id.as_str(),
            int(end.ended_at, "ended_at")?,
            &end.status,
            &end.reason,
            &end.summary,
            end.steps,
            &end.accounting,
            &end.task
        ],
    )?;
    Ok(changed == 1)
}

pub(super) fn get_run(c: &mut dyn Conn, id: &RunId) -> Result<RunRecord> {
    query_opt(
        c,
        &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
        params![id.as_str()],
        decode_run,
    )?
    .ok_or_else(|| StoreError::NotFound {
        what: Entity::Run,
        id: id.to_string(),
    })
}

pub(super) fn list_runs(
    c: &mut dyn Conn,
    session: Option<&SessionId>,
    n: usize,
) -> Result<Vec<RunRecord>> {
    let mut runs = query_all(
        c,
        &format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE (?1 IS NULL OR session_id = ?1) ORDER BY started_at DESC, id DESC LIMIT ?2"
        ),
        params![session.map(SessionId::as_str), limit(n)],
        decode_run,
    )?;
    runs.reverse();
    Ok(runs)
}

pub(super) fn begin_operation(
    c: &mut dyn Conn,
    new: &NewOperation,
    instance: Option<InstanceId>,
) -> Result<u64> {
    let text_chars = new.text_chars.map(|n| int(n, "text_chars")).transpose()?;
    let seq = c
        .query(
            "INSERT INTO operations (id, session_id, run_id, instance, surface, resource_id, action, target, text_chars, secret, url, frame_before, state, started_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'attempted', ?13) ON CONFLICT (id) DO NOTHING
             RETURNING seq",
            params![
                &new.id,
                new.session_id.as_str(),
                new.run_id.as_ref().map(RunId::as_str),
                instance_param(instance)?,
                &new.surface,
                &new.resource_id,
                &new.action,
                &new.target,
                text_chars,
                new.secret,
                &new.url,
                &new.frame_before,
                int(new.started_at, "started_at")?,
            ],
        )?
        .first()
        .map(|r| r.int("seq"))
        .transpose()?;
    let Some(seq) = seq else {
        return Err(StoreError::AlreadyExists {
            what: Entity::Operation,
            id: new.id.clone(),
        });
    };
    uint(seq, "operations.seq")
}

pub(super) fn end_operation(c: &mut dyn Conn, id: &str, end: &OperationEnd) -> Result<bool> {
    if end.state == OperationState::Attempted {
        return Err(StoreError::Corrupt {
            what: "operation end state",
            value: "attempted".into(),
        });
    }
    let changed = c.execute(
        "UPDATE operations SET state = ?2, effect_uncertain = ?3, error = ?4, detail = ?5, frame_after = ?6, ended_at = ?7, marker = ?8
          WHERE id = ?1 AND ended_at IS NULL",
        params![
            id,
            end.state.as_str(),
            end.effect_uncertain,
            &end.error,
            &end.detail,
            &end.frame_after,
            int(end.ended_at, "ended_at")?,
            &end.marker
        ],
    )?;
    Ok(changed == 1)
}

pub(super) fn list_operations(
    c: &mut dyn Conn,
    filter: &OperationFilter,
) -> Result<Vec<OperationRecord>> {
    let mut ops = query_all(
        c,
        &format!(
            "SELECT {OPERATION_COLUMNS} FROM operations
              WHERE (?1 IS NULL OR session_id = ?1) AND (?2 IS NULL OR run_id = ?2) AND seq > ?3
              ORDER BY seq DESC LIMIT ?4"
        ),
        params![
            filter.session.as_ref().map(SessionId::as_str),
            filter.run.as_ref().map(RunId::as_str),
            int(filter.after, "after")?,
            limit(filter.limit)
        ],
        decode_operation,
    )?;
    ops.reverse();
    Ok(ops)
}

/// Ended records older than `before_ms`, then the oldest ended operations past `max_operations`
/// and the runs no operation and no age keeps.
pub(super) fn prune(c: &mut dyn Conn, before_ms: u64, max_operations: u64) -> Result<PruneReport> {
    let before = int(before_ms, "before_ms")?;
    let keep = int(max_operations, "max_operations")?;
    let mut operations = c.execute(
        "DELETE FROM operations WHERE ended_at IS NOT NULL AND ended_at < ?1",
        params![before],
    )?;
    operations += c.execute(
        "DELETE FROM operations WHERE ended_at IS NOT NULL
            AND seq <= (SELECT seq FROM operations ORDER BY seq DESC LIMIT 1 OFFSET ?1)",
        params![keep],
    )?;
    let runs = c.execute(
        "DELETE FROM runs WHERE ended_at IS NOT NULL
            AND (ended_at < ?1 OR (started_at < (SELECT COALESCE(MIN(started_at), 0) FROM operations)
                                   AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.run_id = runs.id)))",
        params![before],
    )?;
    Ok(PruneReport { operations, runs })
}

/// What an ending instance leaves open: operations become `unknown` (sent or not, nobody can
/// tell now), runs `abandoned`. Part of the instance's one reconciling transaction.
pub(super) fn close_instance(c: &mut dyn Conn, instance: i64, now: i64) -> Result<(u64, u64)> {
    let operations = c.execute(
        "UPDATE operations SET state = 'unknown', effect_uncertain = 1, ended_at = ?2,
                detail = 'the server stopped before the surface answered: the effect is uncertain and was not replayed'
          WHERE instance = ?1 AND ended_at IS NULL",
        params![instance, now],
    )?;
    let runs = c.execute(
        "UPDATE runs SET ended_at = ?2, status = 'abandoned', reason = 'abandoned', summary = 'the server stopped while the run ran'
          WHERE instance = ?1 AND ended_at IS NULL",
        params![instance, now],
    )?;
    Ok((operations, runs))
}
