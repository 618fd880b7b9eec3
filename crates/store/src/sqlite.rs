//! [`SqliteStore`]: the embedded [`crate::Store`] on one SQLite file in WAL mode, behind one
//! mutex (one writer per process; `BEGIN IMMEDIATE` serialises writers across processes).
//!
//! Durability: `journal_mode=WAL` with `synchronous=FULL`. A commit returns only after the
//! WAL is fsynced, so a committed ownership change or audit entry survives a kill -9 of the
//! process (NORMAL would too) *and* an OS crash or power loss (NORMAL may drop the last
//! commits there). Ownership records are what stop a restarted runtime from closing a user's
//! tab, and they change a handful of times per turn, so one fsync per commit is affordable;
//! `bench::bench_ownership_changes` measures the cost.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use crate::error::{Result, StoreError};
use crate::migrate::{MIGRATIONS, migrate};
use crate::sql::{Backend, Cell, Conn, Param, Row, SqlStore};

/// How long a writer waits for another process's write lock before failing with `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The SQLite engine: one connection behind a mutex.
#[derive(Debug)]
pub struct Sqlite {
    conn: Mutex<Connection>,
}

/// The SQLite [`crate::Store`].
pub type SqliteStore = SqlStore<Sqlite>;

impl SqlStore<Sqlite> {
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

    fn setup(conn: Connection) -> Result<Self> {
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
        let engine = Sqlite {
            conn: Mutex::new(conn),
        };
        migrate(&engine, MIGRATIONS, BOOKKEEPING)?;
        Ok(SqlStore::with_backend(engine))
    }
}

const BOOKKEEPING: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name    TEXT NOT NULL,
    sql     TEXT NOT NULL
) STRICT;";

impl Sqlite {
    /// The connection, for this process's one writer at a time. A poisoned lock is taken
    /// anyway: a panic cannot leave a transaction open, because rusqlite's `Transaction`
    /// rolls back when it is dropped during the unwind.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connection (or a transaction: it derefs to one) seen through the SQL seam.
struct SqliteConn<'a>(&'a Connection);

fn bind(stmt: &mut rusqlite::Statement<'_>, params: &[Param<'_>]) -> Result<()> {
    for (i, p) in params.iter().enumerate() {
        match p {
            Param::Int(v) => stmt.raw_bind_parameter(i + 1, v)?,
            Param::Text(v) => stmt.raw_bind_parameter(i + 1, v)?,
        }
    }
    Ok(())
}

impl Conn for SqliteConn<'_> {
    fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>> {
        let mut stmt = self.0.prepare_cached(sql)?;
        bind(&mut stmt, params)?;
        let names: Vec<String> = stmt
            .column_names()
            .iter()
            .map(|n| (*n).to_owned())
            .collect();
        let mut rows = stmt.raw_query();
        let mut out = Vec::new();
        // Step to the end: an `UPDATE … RETURNING` finishes its writes only then.
        while let Some(row) = rows.next()? {
            let mut cells = Vec::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                let cell = match row.get_ref(i)? {
                    ValueRef::Null => Cell::Null,
                    ValueRef::Integer(v) => Cell::Int(v),
                    ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Real(v) => {
                        return Err(StoreError::Corrupt {
                            what: "real value",
                            value: v.to_string(),
                        });
                    }
                    ValueRef::Blob(_) => {
                        return Err(StoreError::Corrupt {
                            what: "blob value",
                            value: String::new(),
                        });
                    }
                };
                cells.push((name.clone(), cell));
            }
            out.push(Row::new(cells));
        }
        Ok(out)
    }

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let mut stmt = self.0.prepare_cached(sql)?;
        bind(&mut stmt, params)?;
        Ok(stmt.raw_execute()? as u64)
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.0.execute_batch(sql)?)
    }
}

impl Backend for Sqlite {
    fn read<T>(&self, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T> {
        let conn = self.conn();
        f(&mut SqliteConn(&conn))
    }

    fn write<T>(&self, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T> {
        let mut conn = self.conn();
        // IMMEDIATE takes the write lock first, so a read-then-write inside cannot race
        // another process's writer.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let out = f(&mut SqliteConn(&tx))?;
        tx.commit()?;
        Ok(out)
    }
}
