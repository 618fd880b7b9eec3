//! [`SqliteStore`]: the embedded [`Store`] on one SQLite file in WAL mode, behind one mutex
//! (one writer per process). The SQL lives in the submodules, one per record kind; this file
//! holds the connection, its settings and the conversions every submodule shares.
//!
//! Durability: `journal_mode=WAL` with `synchronous=FULL`. A commit returns only after the
//! WAL is fsynced, so a committed ownership change or audit entry survives a kill -9 of the
//! process (NORMAL would too) *and* an OS crash or power loss (NORMAL may drop the last
//! commits there). Ownership records are what stop a restarted runtime from closing a user's
//! tab, and they change a handful of times per turn, so one fsync per commit is affordable;
//! `bench::bench_ownership_changes` measures the cost.

mod approval;
mod audit;
mod instance;
mod record;
mod recovery;
mod resource;
mod session;

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, Params, Row};

use crate::Store;
use crate::approval::{ApprovalOutcome, ApprovalRecord, ApprovalScope, NewApproval};
use crate::audit::{AuditEntry, NewAudit};
use crate::error::{Result, StoreError};
use crate::id::{AuditSeq, InstanceId, RecoveryId, ResourceId, RunId, SessionId, TargetId, TurnId};
use crate::instance::{EndReport, InstanceEnd, InstanceRecord};
use crate::migrate::migrate;
use crate::record::{
    NewOperation, NewRun, OperationEnd, OperationFilter, OperationRecord, PruneReport, RunEnd,
    RunRecord,
};
use crate::recovery::{NewRecovery, RecoveryRecord};
use crate::resource::{Mark, NewResource, Resource, ResourceState};
use crate::session::{Session, SessionState};

/// How long a writer waits for another process's write lock before failing with `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The SQLite [`Store`]. Cheap to share behind an `Arc`; every method takes the one
/// connection's lock for its whole transaction.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// The instance `begin_instance` recorded for this process.
    instance: Mutex<Option<InstanceId>>,
}

impl SqliteStore {
    /// Opens (creating it and its parent directories if needed) the database at `path`, sets
    /// WAL mode, `synchronous=FULL`, foreign keys and a busy timeout, and applies missing
    /// migrations.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)?;
        }
        let conn = Connection::open(path)?;
        Self::setup(conn)
    }

    /// A private in-memory database, for unit tests. Durability settings do not apply.
    pub fn open_in_memory() -> Result<Self> {
        Self::setup(Connection::open_in_memory()?)
    }

    fn setup(mut conn: Connection) -> Result<Self> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // `journal_mode` answers with the mode in force; an in-memory database says "memory".
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if mode != "wal" && mode != "memory" {
            return Err(StoreError::Corrupt {
                what: "journal_mode",
                value: mode,
            });
        }
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrate(&mut conn)?;
        Ok(Self {
            conn: Mutex::new(conn),
            instance: Mutex::new(None),
        })
    }

    /// The connection, for this process's one writer at a time. A poisoned lock is taken
    /// anyway: a panic cannot leave a transaction open, because rusqlite's `Transaction`
    /// rolls back when it is dropped during the unwind.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A caller's `u64` as SQLite's `i64`; values past `i64::MAX` are refused, not wrapped.
pub(crate) fn int(value: u64, field: &'static str) -> Result<i64> {
    i64::try_from(value).map_err(|_| StoreError::OutOfRange { field })
}

/// A stored `i64` as `u64`; a negative value is corrupt data.
pub(crate) fn uint(value: i64, what: &'static str) -> Result<u64> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt {
        what,
        value: value.to_string(),
    })
}

/// Reads a nullable unsigned column.
pub(crate) fn opt_uint(row: &Row<'_>, column: &'static str) -> Result<Option<u64>> {
    row.get::<_, Option<i64>>(column)?
        .map(|v| uint(v, column))
        .transpose()
}

/// Reads a non-null unsigned column.
pub(crate) fn get_uint(row: &Row<'_>, column: &'static str) -> Result<u64> {
    uint(row.get(column)?, column)
}

/// Runs a query expected to yield at most one row.
pub(crate) fn query_opt<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    decode: fn(&Row<'_>) -> Result<T>,
) -> Result<Option<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    let first = match rows.next()? {
        Some(row) => Some(decode(row)?),
        None => None,
    };
    // Step to the end: outside a transaction, an `UPDATE … RETURNING` commits when its
    // statement finishes, and a failed commit must surface here rather than be lost in a reset.
    while rows.next()?.is_some() {}
    Ok(first)
}

/// Runs a query and decodes every row.
pub(crate) fn query_all<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    decode: fn(&Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(decode(row)?);
    }
    Ok(out)
}

/// Starts a transaction that takes the write lock at once, so a read-then-write inside it
/// cannot race another process's writer.
pub(crate) fn write_tx(conn: &mut Connection) -> Result<rusqlite::Transaction<'_>> {
    Ok(conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?)
}

impl Store for SqliteStore {
    fn begin_instance(&self, now_ms: u64, lock_name: Option<&str>) -> Result<InstanceId> {
        let id = instance::begin(&mut self.conn(), now_ms, lock_name)?;
        *self.instance.lock().unwrap_or_else(PoisonError::into_inner) = Some(id);
        Ok(id)
    }

    fn current_instance(&self) -> Result<Option<InstanceId>> {
        instance::current(&self.conn())
    }

    fn open_instances(&self) -> Result<Vec<InstanceRecord>> {
        instance::open(&self.conn())
    }

    fn instance_handles(&self, id: InstanceId) -> Result<Vec<Resource>> {
        resource::with_instance(&self.conn(), id)
    }

    fn end_instance(&self, id: InstanceId, how: InstanceEnd, now_ms: u64) -> Result<EndReport> {
        instance::end(&mut self.conn(), id, how, now_ms)
    }

    fn create_session(&self, id: &SessionId, now_ms: u64) -> Result<Session> {
        let instance = *self.instance.lock().unwrap_or_else(PoisonError::into_inner);
        session::create(&mut self.conn(), id, instance, now_ms)
    }

    fn get_session(&self, id: &SessionId) -> Result<Session> {
        session::get(&self.conn(), id)
    }

    fn list_sessions(&self) -> Result<Vec<Session>> {
        session::list(&self.conn())
    }

    fn set_tools_active(&self, id: &SessionId, active: bool, now_ms: u64) -> Result<Session> {
        session::set_tools_active(&self.conn(), id, active, now_ms)
    }

    fn set_session_state(
        &self,
        id: &SessionId,
        state: SessionState,
        now_ms: u64,
    ) -> Result<Session> {
        session::set_state(&self.conn(), id, state, now_ms)
    }

    fn set_last_turn(&self, id: &SessionId, turn: &TurnId, now_ms: u64) -> Result<Session> {
        session::set_last_turn(&self.conn(), id, turn, now_ms)
    }

    fn insert_resource(&self, new: &NewResource) -> Result<Resource> {
        resource::insert(&mut self.conn(), new)
    }

    fn get_resource(&self, id: &ResourceId) -> Result<Resource> {
        resource::get(&self.conn(), id)
    }

    fn list_resources(&self, session: &SessionId) -> Result<Vec<Resource>> {
        resource::list_owned(&self.conn(), session)
    }

    fn list_unowned_resources(&self) -> Result<Vec<Resource>> {
        resource::list_unowned(&self.conn())
    }

    fn find_by_handle(&self, target: &TargetId) -> Result<Option<Resource>> {
        let instance = *self.instance.lock().unwrap_or_else(PoisonError::into_inner);
        resource::find_by_handle(&self.conn(), target, instance)
    }

    fn claim_resource(
        &self,
        id: &ResourceId,
        session: &SessionId,
        now_ms: u64,
    ) -> Result<Resource> {
        resource::claim(&mut self.conn(), id, session, now_ms)
    }

    fn release_resource(
        &self,
        id: &ResourceId,
        session: &SessionId,
        now_ms: u64,
    ) -> Result<Resource> {
        resource::release(&mut self.conn(), id, session, now_ms)
    }

    fn set_mark(
        &self,
        id: &ResourceId,
        session: &SessionId,
        mark: Mark,
        turn: &TurnId,
        now_ms: u64,
    ) -> Result<Resource> {
        resource::set_mark(&mut self.conn(), id, session, mark, turn, now_ms)
    }

    fn transition(
        &self,
        id: &ResourceId,
        expected_version: u64,
        state: ResourceState,
        now_ms: u64,
    ) -> Result<u64> {
        resource::transition(&mut self.conn(), id, expected_version, state, now_ms)
    }

    fn update_location(&self, id: &ResourceId, url: &str, title: &str, now_ms: u64) -> Result<()> {
        resource::update_location(&self.conn(), id, url, title, now_ms)
    }

    fn close_by_person(&self, id: &ResourceId, now_ms: u64) -> Result<Resource> {
        resource::close_by_person(&self.conn(), id, now_ms)
    }

    fn lose_handle(&self, id: &ResourceId, now_ms: u64) -> Result<Resource> {
        resource::lose_handle(&self.conn(), id, now_ms)
    }

    fn discard_resource(&self, id: &ResourceId) -> Result<bool> {
        resource::discard(&self.conn(), id)
    }

    fn restorable_resources(&self) -> Result<Vec<Resource>> {
        resource::restorable(&self.conn())
    }

    fn restore_failed(&self, id: &ResourceId, why: &str, now_ms: u64) -> Result<()> {
        resource::restore_failed(&self.conn(), id, why, now_ms)
    }

    fn restored(
        &self,
        id: &ResourceId,
        target: &TargetId,
        instance: InstanceId,
        now_ms: u64,
    ) -> Result<Resource> {
        resource::restored(&mut self.conn(), id, target, instance, now_ms)
    }

    fn set_preview(&self, id: &ResourceId, preview: &str, now_ms: u64) -> Result<()> {
        resource::set_preview(&self.conn(), id, preview, now_ms)
    }

    fn set_branch(&self, id: &ResourceId, branch: &str, now_ms: u64) -> Result<()> {
        resource::set_branch(&self.conn(), id, branch, now_ms)
    }

    fn list_all_resources(&self) -> Result<Vec<Resource>> {
        resource::list_all(&self.conn())
    }

    fn attach_handle(
        &self,
        id: &ResourceId,
        target: &TargetId,
        instance: InstanceId,
        now_ms: u64,
    ) -> Result<Resource> {
        resource::attach_handle(&mut self.conn(), id, target, instance, now_ms)
    }

    fn clear_handle(&self, id: &ResourceId, now_ms: u64) -> Result<Resource> {
        resource::clear_handle(&self.conn(), id, now_ms)
    }

    fn add_recovery(&self, new: &NewRecovery) -> Result<RecoveryId> {
        recovery::add(&mut self.conn(), new)
    }

    fn get_recovery(&self, id: RecoveryId) -> Result<RecoveryRecord> {
        recovery::get(&self.conn(), id)
    }

    fn pending_recoveries(&self, session: &SessionId) -> Result<Vec<RecoveryRecord>> {
        recovery::pending(&self.conn(), session)
    }

    fn record_attempt(
        &self,
        id: RecoveryId,
        detail: Option<&str>,
        now_ms: u64,
    ) -> Result<RecoveryRecord> {
        recovery::record_attempt(&mut self.conn(), id, detail, now_ms)
    }

    fn resolve_recovery(&self, id: RecoveryId, now_ms: u64) -> Result<RecoveryRecord> {
        recovery::resolve(&mut self.conn(), id, now_ms)
    }

    fn append_audit(&self, entry: &NewAudit<'_>) -> Result<AuditSeq> {
        audit::append(&mut self.conn(), entry)
    }

    fn audit_since(
        &self,
        session: &SessionId,
        after: AuditSeq,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        audit::since(&self.conn(), session, after, limit)
    }

    fn record_approval(&self, new: &NewApproval) -> Result<()> {
        approval::record(&self.conn(), new)
    }

    fn settle_approval(&self, id: &str, outcome: ApprovalOutcome, now_ms: u64) -> Result<bool> {
        approval::settle(&self.conn(), id, outcome, now_ms)
    }

    fn settle_approvals(
        &self,
        scope: ApprovalScope<'_>,
        outcome: ApprovalOutcome,
        now_ms: u64,
    ) -> Result<u64> {
        approval::settle_scope(&self.conn(), scope, outcome, now_ms)
    }

    fn list_approvals(&self, session: &SessionId) -> Result<Vec<ApprovalRecord>> {
        approval::list(&self.conn(), session)
    }

    fn begin_run(&self, new: &NewRun) -> Result<()> {
        let instance = *self.instance.lock().unwrap_or_else(PoisonError::into_inner);
        record::begin_run(&self.conn(), new, instance)
    }

    fn end_run(&self, id: &RunId, end: &RunEnd) -> Result<bool> {
        record::end_run(&self.conn(), id, end)
    }

    fn get_run(&self, id: &RunId) -> Result<RunRecord> {
        record::get_run(&self.conn(), id)
    }

    fn list_runs(&self, session: Option<&SessionId>, limit: usize) -> Result<Vec<RunRecord>> {
        record::list_runs(&self.conn(), session, limit)
    }

    fn begin_operation(&self, new: &NewOperation) -> Result<u64> {
        let instance = *self.instance.lock().unwrap_or_else(PoisonError::into_inner);
        record::begin_operation(&self.conn(), new, instance)
    }

    fn end_operation(&self, id: &str, end: &OperationEnd) -> Result<bool> {
        record::end_operation(&self.conn(), id, end)
    }

    fn list_operations(&self, filter: &OperationFilter) -> Result<Vec<OperationRecord>> {
        record::list_operations(&self.conn(), filter)
    }

    fn prune_records(&self, before_ms: u64, max_operations: u64) -> Result<PruneReport> {
        record::prune(&mut self.conn(), before_ms, max_operations)
    }
}
