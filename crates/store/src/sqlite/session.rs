//! SQL for sessions.

use rusqlite::{Connection, Row, params};

use super::{get_uint, int, opt_uint, query_all, query_opt, write_tx};
use crate::error::{Entity, Result, StoreError};
use crate::id::{InstanceId, SessionId, TurnId};
use crate::session::{Session, SessionState};

const COLUMNS: &str = "id, created_at, updated_at, tools_active, state, last_turn_id, instance";

fn decode(row: &Row<'_>) -> Result<Session> {
    let state: String = row.get("state")?;
    Ok(Session {
        id: SessionId::new(row.get::<_, String>("id")?),
        created_at: get_uint(row, "created_at")?,
        updated_at: get_uint(row, "updated_at")?,
        tools_active: row.get("tools_active")?,
        state: SessionState::parse(&state).ok_or(StoreError::Corrupt {
            what: "sessions.state",
            value: state,
        })?,
        last_turn_id: row
            .get::<_, Option<String>>("last_turn_id")?
            .map(TurnId::new),
        instance: opt_uint(row, "instance")?.map(InstanceId),
    })
}

fn not_found(id: &SessionId) -> StoreError {
    StoreError::NotFound {
        what: Entity::Session,
        id: id.to_string(),
    }
}

/// Whether the session exists.
pub(super) fn exists(conn: &Connection, id: &SessionId) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
        .exists([id.as_str()])?)
}

/// Fails with `NotFound` unless the session exists.
pub(super) fn require(conn: &Connection, id: &SessionId) -> Result<()> {
    if exists(conn, id)? {
        Ok(())
    } else {
        Err(not_found(id))
    }
}

pub(super) fn create(
    conn: &mut Connection,
    id: &SessionId,
    instance: Option<InstanceId>,
    now_ms: u64,
) -> Result<Session> {
    let now = int(now_ms, "now_ms")?;
    let tx = write_tx(conn)?;
    if exists(&tx, id)? {
        return Err(StoreError::AlreadyExists {
            what: Entity::Session,
            id: id.to_string(),
        });
    }
    let session = query_opt(
        &tx,
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
    .ok_or_else(|| not_found(id))?;
    tx.commit()?;
    Ok(session)
}

pub(super) fn get(conn: &Connection, id: &SessionId) -> Result<Session> {
    query_opt(
        conn,
        &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"),
        [id.as_str()],
        decode,
    )?
    .ok_or_else(|| not_found(id))
}

pub(super) fn list(conn: &Connection) -> Result<Vec<Session>> {
    query_all(
        conn,
        &format!("SELECT {COLUMNS} FROM sessions ORDER BY created_at, id"),
        [],
        decode,
    )
}

/// Runs `UPDATE sessions SET {set}, updated_at = ?2 WHERE id = ?1` with `?3` as the value.
fn update(
    conn: &Connection,
    id: &SessionId,
    set: &str,
    value: &dyn rusqlite::ToSql,
    now_ms: u64,
) -> Result<Session> {
    let now = int(now_ms, "now_ms")?;
    query_opt(
        conn,
        &format!("UPDATE sessions SET {set}, updated_at = ?2 WHERE id = ?1 RETURNING {COLUMNS}"),
        params![id.as_str(), now, value],
        decode,
    )?
    .ok_or_else(|| not_found(id))
}

pub(super) fn set_tools_active(
    conn: &Connection,
    id: &SessionId,
    active: bool,
    now_ms: u64,
) -> Result<Session> {
    update(conn, id, "tools_active = ?3", &active, now_ms)
}

pub(super) fn set_state(
    conn: &Connection,
    id: &SessionId,
    state: SessionState,
    now_ms: u64,
) -> Result<Session> {
    update(conn, id, "state = ?3", &state.as_str(), now_ms)
}

pub(super) fn set_last_turn(
    conn: &Connection,
    id: &SessionId,
    turn: &TurnId,
    now_ms: u64,
) -> Result<Session> {
    update(conn, id, "last_turn_id = ?3", &turn.as_str(), now_ms)
}
