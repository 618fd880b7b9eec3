//! The store's one implementation of [`Store`], written once over a small SQL seam and run on
//! either engine: [`crate::SqliteStore`] (the embedded default) and [`crate::PgStore`]
//! (PostgreSQL, for several instances sharing one database). The rules — which write checks
//! what, in which transaction — live only here, in the submodules, one per record kind; an
//! engine supplies a connection ([`Conn`]: run a statement with typed parameters, answer rows)
//! and its transactions ([`Backend`]: reads, and writes that are serialised with every other
//! writer of the database, as SQLite's one write lock does).
//!
//! Statements are written once, in the dialect both engines share, with numbered parameters
//! (`?1`); an engine rewrites them as it needs (`$1` for PostgreSQL). Booleans are stored as
//! 0/1 integers on both engines, times as 64-bit milliseconds.

mod approval;
mod audit;
mod instance;
mod record;
mod recovery;
mod resource;
mod session;

use std::sync::{Mutex, PoisonError};

use crate::Store;
use crate::approval::{ApprovalOutcome, ApprovalRecord, ApprovalScope, NewApproval};
use crate::audit::{AuditEntry, NewAudit};
use crate::error::{Result, StoreError};
use crate::id::{AuditSeq, InstanceId, RecoveryId, ResourceId, RunId, SessionId, TargetId, TurnId};
use crate::instance::{EndReport, InstanceEnd, InstanceRecord};
use crate::record::{
    NewOperation, NewRun, OperationEnd, OperationFilter, OperationRecord, PruneReport, RunEnd,
    RunRecord,
};
use crate::recovery::{NewRecovery, RecoveryRecord};
use crate::resource::{Mark, NewResource, Resource, ResourceState};
use crate::session::{Session, SessionState};

/// A statement parameter: a 64-bit integer or a text, either possibly NULL (typed even when
/// NULL, so an engine that types its parameters never has to guess).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param<'a> {
    /// An integer (booleans are 0/1).
    Int(Option<i64>),
    /// A text.
    Text(Option<&'a str>),
}

impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Param::Int(Some(v))
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(v: Option<i64>) -> Self {
        Param::Int(v)
    }
}

impl From<u32> for Param<'_> {
    fn from(v: u32) -> Self {
        Param::Int(Some(i64::from(v)))
    }
}

impl From<bool> for Param<'_> {
    fn from(v: bool) -> Self {
        Param::Int(Some(i64::from(v)))
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(Some(v))
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(Some(v))
    }
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a Option<String>> for Param<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Param::Text(v.as_deref())
    }
}

/// `params![a, b, …]`: a slice of [`Param`]s.
macro_rules! params {
    () => { &[] as &[$crate::sql::Param<'_>] };
    ($($v:expr),+ $(,)?) => { &[$($crate::sql::Param::from($v)),+] as &[$crate::sql::Param<'_>] };
}
pub(crate) use params;

/// One value of an answered row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// NULL.
    Null,
    /// An integer (an engine's booleans arrive as 0/1).
    Int(i64),
    /// A text.
    Text(String),
}

/// One answered row: its cells by column name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    cells: Vec<(String, Cell)>,
}

impl Row {
    /// A row of named cells, in the statement's column order.
    pub fn new(cells: Vec<(String, Cell)>) -> Self {
        Row { cells }
    }

    fn cell(&self, column: &'static str) -> Result<&Cell> {
        self.cells
            .iter()
            .find(|(name, _)| name == column)
            .map(|(_, cell)| cell)
            .ok_or(StoreError::Corrupt {
                what: column,
                value: "<missing column>".into(),
            })
    }

    /// The first column's cell (for one-column statements).
    fn first(&self) -> Result<&Cell> {
        self.cells
            .first()
            .map(|(_, c)| c)
            .ok_or(StoreError::Corrupt {
                what: "row",
                value: "<no column>".into(),
            })
    }

    /// A nullable text column.
    pub(crate) fn opt_text(&self, column: &'static str) -> Result<Option<String>> {
        match self.cell(column)? {
            Cell::Null => Ok(None),
            Cell::Text(t) => Ok(Some(t.clone())),
            Cell::Int(i) => Err(StoreError::Corrupt {
                what: column,
                value: i.to_string(),
            }),
        }
    }

    /// A non-null text column.
    pub(crate) fn text(&self, column: &'static str) -> Result<String> {
        self.opt_text(column)?.ok_or(StoreError::Corrupt {
            what: column,
            value: "NULL".into(),
        })
    }

    /// A nullable integer column.
    pub(crate) fn opt_int(&self, column: &'static str) -> Result<Option<i64>> {
        int_cell(self.cell(column)?, column)
    }

    /// A non-null integer column.
    pub(crate) fn int(&self, column: &'static str) -> Result<i64> {
        self.opt_int(column)?.ok_or(StoreError::Corrupt {
            what: column,
            value: "NULL".into(),
        })
    }

    /// A nullable unsigned column.
    pub(crate) fn opt_uint(&self, column: &'static str) -> Result<Option<u64>> {
        self.opt_int(column)?.map(|v| uint(v, column)).transpose()
    }

    /// A non-null unsigned column.
    pub(crate) fn uint(&self, column: &'static str) -> Result<u64> {
        uint(self.int(column)?, column)
    }

    /// A 0/1 column.
    pub(crate) fn bool(&self, column: &'static str) -> Result<bool> {
        match self.int(column)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(StoreError::Corrupt {
                what: column,
                value: v.to_string(),
            }),
        }
    }

    /// The first column as a text, non-null.
    pub(crate) fn first_text(&self) -> Result<String> {
        match self.first()? {
            Cell::Text(t) => Ok(t.clone()),
            other => Err(StoreError::Corrupt {
                what: "first column",
                value: format!("{other:?}"),
            }),
        }
    }
}

fn int_cell(cell: &Cell, column: &'static str) -> Result<Option<i64>> {
    match cell {
        Cell::Null => Ok(None),
        Cell::Int(i) => Ok(Some(*i)),
        Cell::Text(t) => Err(StoreError::Corrupt {
            what: column,
            value: t.clone(),
        }),
    }
}

/// A connection, inside a transaction when a [`Backend`] gives one for writing.
pub trait Conn {
    /// Runs one statement and answers every row it yields.
    fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>>;
    /// Runs one statement and answers how many rows it changed.
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64>;
    /// Runs several statements without parameters (a migration).
    fn batch(&mut self, sql: &str) -> Result<()>;
}

/// An engine: reads, and write transactions serialised with every other writer of the
/// database (across processes and hosts), committed only when the closure succeeds.
pub trait Backend: Send + Sync + 'static {
    /// Runs `f` on a connection outside any write transaction.
    fn read<T>(&self, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T>;
    /// Runs `f` in one write transaction: committed if it answers `Ok`, rolled back otherwise.
    fn write<T>(&self, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T>;
}

/// The [`Store`] on an engine. Cheap to share behind an `Arc`.
pub struct SqlStore<B: Backend> {
    pub(crate) backend: B,
    /// The instance `begin_instance` recorded for this process.
    instance: Mutex<Option<InstanceId>>,
}

impl<B: Backend> std::fmt::Debug for SqlStore<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("engine", &std::any::type_name::<B>())
            .field("instance", &self.current())
            .finish()
    }
}

impl<B: Backend> SqlStore<B> {
    pub(crate) fn with_backend(backend: B) -> Self {
        SqlStore {
            backend,
            instance: Mutex::new(None),
        }
    }

    fn current(&self) -> Option<InstanceId> {
        *self.instance.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn read<T>(&self, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T> {
        self.backend.read(f)
    }

    fn write<T>(&self, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T> {
        self.backend.write(f)
    }
}

/// A caller's `u64` as a stored `i64`; values past `i64::MAX` are refused, not wrapped.
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

/// Runs a query expected to yield at most one row, decoding it.
pub(crate) fn query_opt<T>(
    c: &mut dyn Conn,
    sql: &str,
    params: &[Param<'_>],
    decode: fn(&Row) -> Result<T>,
) -> Result<Option<T>> {
    c.query(sql, params)?.first().map(decode).transpose()
}

/// Runs a query and decodes every row.
pub(crate) fn query_all<T>(
    c: &mut dyn Conn,
    sql: &str,
    params: &[Param<'_>],
    decode: fn(&Row) -> Result<T>,
) -> Result<Vec<T>> {
    c.query(sql, params)?.iter().map(decode).collect()
}

/// Whether a query yields any row.
pub(crate) fn exists(c: &mut dyn Conn, sql: &str, params: &[Param<'_>]) -> Result<bool> {
    Ok(!c.query(sql, params)?.is_empty())
}

impl<B: Backend> Store for SqlStore<B> {
    fn begin_instance(&self, now_ms: u64, lock_name: Option<&str>) -> Result<InstanceId> {
        let id = self.write(|c| instance::begin(c, now_ms, lock_name))?;
        *self.instance.lock().unwrap_or_else(PoisonError::into_inner) = Some(id);
        Ok(id)
    }

    fn current_instance(&self) -> Result<Option<InstanceId>> {
        self.read(instance::current)
    }

    fn open_instances(&self) -> Result<Vec<InstanceRecord>> {
        self.read(instance::open)
    }

    fn heartbeat(&self, id: InstanceId, now_ms: u64) -> Result<bool> {
        self.write(|c| instance::heartbeat(c, id, now_ms))
    }

    fn instance_handles(&self, id: InstanceId) -> Result<Vec<Resource>> {
        self.read(|c| resource::with_instance(c, id))
    }

    fn end_instance(&self, id: InstanceId, how: InstanceEnd, now_ms: u64) -> Result<EndReport> {
        self.write(|c| instance::end(c, id, how, now_ms))
    }

    fn take_over_instance(
        &self,
        id: InstanceId,
        stale_before_ms: u64,
        now_ms: u64,
    ) -> Result<Option<EndReport>> {
        self.write(|c| instance::take_over(c, id, stale_before_ms, now_ms))
    }

    fn create_session(&self, id: &SessionId, now_ms: u64) -> Result<Session> {
        let instance = self.current();
        self.write(|c| session::create(c, id, instance, now_ms))
    }

    fn get_session(&self, id: &SessionId) -> Result<Session> {
        self.read(|c| session::get(c, id))
    }

    fn list_sessions(&self) -> Result<Vec<Session>> {
        self.read(session::list)
    }

    fn set_tools_active(&self, id: &SessionId, active: bool, now_ms: u64) -> Result<Session> {
        self.write(|c| session::update(c, id, "tools_active = ?3", active.into(), now_ms))
    }

    fn set_session_state(
        &self,
        id: &SessionId,
        state: SessionState,
        now_ms: u64,
    ) -> Result<Session> {
        self.write(|c| session::update(c, id, "state = ?3", state.as_str().into(), now_ms))
    }

    fn set_last_turn(&self, id: &SessionId, turn: &TurnId, now_ms: u64) -> Result<Session> {
        self.write(|c| session::update(c, id, "last_turn_id = ?3", turn.as_str().into(), now_ms))
    }

    fn insert_resource(&self, new: &NewResource) -> Result<Resource> {
        self.write(|c| resource::insert(c, new))
    }

    fn get_resource(&self, id: &ResourceId) -> Result<Resource> {
        self.read(|c| resource::get(c, id))
    }

    fn list_resources(&self, session: &SessionId) -> Result<Vec<Resource>> {
        self.read(|c| resource::list_owned(c, session))
    }

    fn list_open_resources(&self, session: &SessionId) -> Result<Vec<Resource>> {
        self.read(|c| resource::list_open(c, session))
    }

    fn count_released_resources(&self, session: &SessionId) -> Result<u64> {
        self.read(|c| resource::count_released(c, session))
    }

    fn list_unowned_resources(&self) -> Result<Vec<Resource>> {
        self.read(resource::list_unowned)
    }

    fn find_by_handle(&self, target: &TargetId) -> Result<Option<Resource>> {
        let instance = self.current();
        self.read(|c| resource::find_by_handle(c, target, instance))
    }

    fn claim_resource(
        &self,
        id: &ResourceId,
        session: &SessionId,
        now_ms: u64,
    ) -> Result<Resource> {
        self.write(|c| resource::claim(c, id, session, now_ms))
    }

    fn release_resource(
        &self,
        id: &ResourceId,
        session: &SessionId,
        now_ms: u64,
    ) -> Result<Resource> {
        self.write(|c| resource::release(c, id, session, now_ms))
    }

    fn set_mark(
        &self,
        id: &ResourceId,
        session: &SessionId,
        mark: Mark,
        turn: &TurnId,
        now_ms: u64,
    ) -> Result<Resource> {
        self.write(|c| resource::set_mark(c, id, session, mark, turn, now_ms))
    }

    fn transition(
        &self,
        id: &ResourceId,
        expected_version: u64,
        state: ResourceState,
        now_ms: u64,
    ) -> Result<u64> {
        self.write(|c| resource::transition(c, id, expected_version, state, now_ms))
    }

    fn update_location(&self, id: &ResourceId, url: &str, title: &str, now_ms: u64) -> Result<()> {
        self.write(|c| resource::update_location(c, id, url, title, now_ms))
    }

    fn close_by_person(&self, id: &ResourceId, now_ms: u64) -> Result<Resource> {
        self.write(|c| resource::close_by_person(c, id, now_ms))
    }

    fn lose_handle(&self, id: &ResourceId, now_ms: u64) -> Result<Resource> {
        self.write(|c| resource::lose_handle(c, id, now_ms))
    }

    fn discard_resource(&self, id: &ResourceId) -> Result<bool> {
        self.write(|c| resource::discard(c, id))
    }

    fn restorable_resources(&self) -> Result<Vec<Resource>> {
        self.read(resource::restorable)
    }

    fn restore_failed(&self, id: &ResourceId, why: &str, now_ms: u64) -> Result<()> {
        self.write(|c| resource::restore_failed(c, id, why, now_ms))
    }

    fn restored(
        &self,
        id: &ResourceId,
        target: &TargetId,
        instance: InstanceId,
        now_ms: u64,
    ) -> Result<Resource> {
        self.write(|c| resource::restored(c, id, target, instance, now_ms))
    }

    fn set_preview(&self, id: &ResourceId, preview: &str, now_ms: u64) -> Result<()> {
        self.write(|c| resource::set_preview(c, id, preview, now_ms))
    }

    fn set_branch(&self, id: &ResourceId, branch: &str, now_ms: u64) -> Result<()> {
        self.write(|c| resource::set_branch(c, id, branch, now_ms))
    }

    fn list_all_resources(&self) -> Result<Vec<Resource>> {
        self.read(resource::list_all)
    }

    fn attach_handle(
        &self,
        id: &ResourceId,
        target: &TargetId,
        instance: InstanceId,
        now_ms: u64,
    ) -> Result<Resource> {
        self.write(|c| resource::attach_handle(c, id, target, instance, now_ms))
    }

    fn clear_handle(&self, id: &ResourceId, now_ms: u64) -> Result<Resource> {
        self.write(|c| resource::clear_handle(c, id, now_ms))
    }

    fn add_recovery(&self, new: &NewRecovery) -> Result<RecoveryId> {
        self.write(|c| recovery::add(c, new))
    }

    fn get_recovery(&self, id: RecoveryId) -> Result<RecoveryRecord> {
        self.read(|c| recovery::get(c, id))
    }

    fn pending_recoveries(&self, session: &SessionId) -> Result<Vec<RecoveryRecord>> {
        self.read(|c| recovery::pending(c, session))
    }

    fn record_attempt(
        &self,
        id: RecoveryId,
        detail: Option<&str>,
        now_ms: u64,
    ) -> Result<RecoveryRecord> {
        self.write(|c| recovery::record_attempt(c, id, detail, now_ms))
    }

    fn resolve_recovery(&self, id: RecoveryId, now_ms: u64) -> Result<RecoveryRecord> {
        self.write(|c| recovery::resolve(c, id, now_ms))
    }

    fn append_audit(&self, entry: &NewAudit<'_>) -> Result<AuditSeq> {
        self.write(|c| audit::append(c, entry))
    }

    fn audit_since(
        &self,
        session: &SessionId,
        after: AuditSeq,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        self.read(|c| audit::since(c, session, after, limit))
    }

    fn record_approval(&self, new: &NewApproval) -> Result<()> {
        self.write(|c| approval::record(c, new))
    }

    fn settle_approval(&self, id: &str, outcome: ApprovalOutcome, now_ms: u64) -> Result<bool> {
        self.write(|c| approval::settle(c, id, outcome, now_ms))
    }

    fn settle_approvals(
        &self,
        scope: ApprovalScope<'_>,
        outcome: ApprovalOutcome,
        now_ms: u64,
    ) -> Result<u64> {
        self.write(|c| approval::settle_scope(c, scope, outcome, now_ms))
    }

    fn list_approvals(&self, session: &SessionId) -> Result<Vec<ApprovalRecord>> {
        self.read(|c| approval::list(c, session))
    }

    fn begin_run(&self, new: &NewRun) -> Result<()> {
        let instance = self.current();
        self.write(|c| record::begin_run(c, new, instance))
    }

    fn end_run(&self, id: &RunId, end: &RunEnd) -> Result<bool> {
        self.write(|c| record::end_run(c, id, end))
    }

    fn get_run(&self, id: &RunId) -> Result<RunRecord> {
        self.read(|c| record::get_run(c, id))
    }

    fn list_runs(&self, session: Option<&SessionId>, limit: usize) -> Result<Vec<RunRecord>> {
        self.read(|c| record::list_runs(c, session, limit))
    }

    fn begin_operation(&self, new: &NewOperation) -> Result<u64> {
        let instance = self.current();
        self.write(|c| record::begin_operation(c, new, instance))
    }

    fn end_operation(&self, id: &str, end: &OperationEnd) -> Result<bool> {
        self.write(|c| record::end_operation(c, id, end))
    }

    fn list_operations(&self, filter: &OperationFilter) -> Result<Vec<OperationRecord>> {
        self.read(|c| record::list_operations(c, filter))
    }

    fn prune_records(&self, before_ms: u64, max_operations: u64) -> Result<PruneReport> {
        self.write(|c| record::prune(c, before_ms, max_operations))
    }
}
