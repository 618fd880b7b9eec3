//! SQL for sessions.

use super::{Conn, Param, Row, exists as any_row, int, params, query_all, query_opt};
use crate::error::{Entity, Result, StoreError};
use crate::id::{InstanceId, SessionId, TurnId};
use crate::session::{Session, SessionState};

const COLUMNS: &str = "id, created_at, updated_at, tools_active, state, last_turn_id, instance";

fn decode(row: &Row) -> Result<Session> {
    let state = row.text("state")?;
    Ok(Session {
        id: SessionId::new(row.text("id")?),
        created_at: row.uint("created_at")?,
        updated_at: row.uint("updated_at")?,
        tools_active: row.bool("tools_active")?,
        state: SessionState::parse(&state).ok_or(StoreError::Corrupt {
            what: "sessions.state",
            value: state,
        })?,
        last_turn_id: row.opt_text("last_turn_id")?.map(TurnId::new),
        instance: row.opt_uint("instance")?.map(InstanceId),
    })
}

fn not_found(id: &SessionId) -> StoreError {
    StoreError::NotFound {
        what: Entity::Session,
        id: id.to_string(),
    }
}

/// Whether the session exists.
pub(super) fn exists(c: &mut dyn Conn, id: &SessionId) -> Result<bool> {
    any_row(
        c,
        "SELECT 1 FROM sessions WHERE id = ?1",
        params![id.as_str()],
    )
}

/// Fails with `NotFound` unless the session exists.
pub(super) fn require(c: &mut dyn Conn, id: &SessionId) -> Result<()> {
    if exists(c, id)? {
        Ok(())
    } else {
        Err(not_found(id))
    }
}

pub(super) fn create(
    c: &mut dyn Conn,
    id: &SessionId,
    instance: Option<InstanceId>,
    now_ms: u64,
) -> Result<Session> {
    let now = int(now_ms, "now_ms")?;
    if exists(c, id)? {
        return Err(StoreError::AlreadyExists {
            what: Entity::Session,
            id: id.to_string(),
        });
    }
    query_opt(
        c,
        &format!(
            "INSERT INTO sessions (id, created_at, updated_at, instance) VALUES (?1, ?2, ?2, ?3)
             RETURNING {COLUMNS}"
        ),
        params![
            id.as_str(),
            now,
            instance.map(|i| int(i.0, "instance")).transpose()?
        ],
        decode,
    )?
    .ok_or_else(|| not_found(id))
}

pub(super) fn get(c: &mut dyn Conn, id: &SessionId) -> Result<Session> {
    query_opt(
        c,
        &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"),
        params![id.as_str()],
        decode,
    )?
    .ok_or_else(|| not_found(id))
}

pub(super) fn list(c: &mut dyn Conn) -> Result<Vec<Session>> {
    query_all(
        c,
        &format!("SELECT {COLUMNS} FROM sessions ORDER BY created_at, id"),
        params![],
        decode,
    )
}

/// Runs `UPDATE sessions SET {set}, updated_at = ?2 WHERE id = ?1` with `?3` as the value.
pub(super) fn update(
    c: &mut dyn Conn,
    id: &SessionId,
    set: &str,
    value: Param<'_>,
    now_ms: u64,
) -> Result<Session> {
    let now = int(now_ms, "now_ms")?;
    query_opt(
        c,
        &format!("UPDATE sessions SET {set}, updated_at = ?2 WHERE id = ?1 RETURNING {COLUMNS}"),
        &[Param::from(id.as_str()), Param::from(now), value],
        decode,
    )?
    .ok_or_else(|| not_found(id))
}
