//! SQL for process instances and the handle invalidation a new instance performs.

use rusqlite::{Connection, params};

use super::{int, uint, write_tx};
use crate::error::Result;
use crate::id::InstanceId;

/// Inserts the new instance and, in the same transaction, clears every older handle.
pub(super) fn begin(conn: &mut Connection, now_ms: u64) -> Result<InstanceId> {
    let now = int(now_ms, "now_ms")?;
    let tx = write_tx(conn)?;
    tx.execute("INSERT INTO instances (started_at) VALUES (?1)", [now])?;
    let id = tx.last_insert_rowid();
    tx.execute(
        "UPDATE resources
            SET cdp_target_id = NULL, instance = NULL, handle_lost = 1,
                version = version + 1, updated_at = ?2
          WHERE instance IS NOT NULL AND instance < ?1",
        params![id, now],
    )?;
    tx.commit()?;
    Ok(InstanceId(uint(id, "instances.id")?))
}

/// The latest instance.
pub(super) fn current(conn: &Connection) -> Result<Option<InstanceId>> {
    let id: Option<i64> = conn.query_row("SELECT MAX(id) FROM instances", [], |r| r.get(0))?;
    id.map(|id| uint(id, "instances.id").map(InstanceId)).transpose()
}
