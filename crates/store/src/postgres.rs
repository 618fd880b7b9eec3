//! [`PgStore`]: the [`crate::Store`] on PostgreSQL, for several Glovebox instances sharing one
//! database (`--store postgres://…`). The same statements and rules as SQLite (`crate::sql`),
//! the same migrations in PostgreSQL's dialect ([`crate::PG_MIGRATIONS`]).
//!
//! Writers are serialised as SQLite's are: every write transaction first takes one
//! transaction-scoped advisory lock, so a read-then-write inside it (a claim, a takeover)
//! cannot race another instance's writer, and commits happen in one order (sequence numbers
//! grow in commit order). Reads run outside transactions and see what has committed.
//!
//! The client is `tokio-postgres`, driven by a runtime of its own (one worker thread): the
//! store's methods are synchronous and may be called from any thread — an async task of the
//! caller's runtime included — because a call only waits for the answer on a channel (parked,
//! as a SQLite call waits for its file), while the socket is served on the store's own thread.
//! A connection that broke is made again on the next call.

use std::collections::HashMap;
use std::future::Future;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls, Statement};

use crate::error::{Result, StoreError};
use crate::migrate::{PG_MIGRATIONS, migrate};
use crate::sql::{Backend, Cell, Conn, Param, Row, SqlStore};

/// The advisory lock every write transaction takes first (any constant shared by every
/// instance: "GLOV").
const WRITE_LOCK: i64 = 0x474c_4f56;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

const BOOKKEEPING: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version BIGINT PRIMARY KEY,
    name    TEXT NOT NULL,
    sql     TEXT NOT NULL
);";

/// The PostgreSQL engine.
pub struct Postgres {
    config: tokio_postgres::Config,
    /// Serves the connection's socket; shut down (in the background) with the store.
    runtime: Option<tokio::runtime::Runtime>,
    conn: Mutex<Option<Connected>>,
}

/// A live connection and the statements prepared on it.
struct Connected {
    client: Client,
    prepared: HashMap<String, Statement>,
    /// A transaction on it could not be rolled back (its state is unknown), or a call on it
    /// found the connection ended (the server said so before its socket closed): the next
    /// call makes a new connection rather than use this one.
    broken: bool,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.debug_struct("Postgres")
            .field("hosts", &self.config.get_hosts())
            .field("dbname", &self.config.get_dbname())
            .finish_non_exhaustive()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The PostgreSQL [`crate::Store`].
pub type PgStore = SqlStore<Postgres>;

impl SqlStore<Postgres> {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`, with
    /// `?options=-c%20search_path%3Dschema` to keep to one schema) and applies missing
    /// migrations. A database that cannot be reached is `Unavailable`, naming the host, never
    /// the password.
    pub fn connect(url: &str) -> Result<Self> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| {
            StoreError::Unavailable(format!("the PostgreSQL address is not valid: {e}"))
        })?;
        config.connect_timeout(CONNECT_TIMEOUT);
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(10));
        if config.get_application_name().is_none() {
            config.application_name("glovebox");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("glovebox-postgres")
            .enable_all()
            .build()?;
        let engine = Postgres {
            config,
            runtime: Some(runtime),
            conn: Mutex::new(None),
        };
        drop(engine.connected()?);
        migrate(&engine, PG_MIGRATIONS, BOOKKEEPING)?;
        Ok(SqlStore::with_backend(engine))
    }
}

impl Postgres {
    fn where_(&self) -> String {
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .map(|h| match h {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            })
            .collect();
        format!(
            "{} port {:?} database {}",
            hosts.join(","),
            self.config.get_ports(),
            self.config.get_dbname().unwrap_or("(default)")
        )
    }

    /// The connection, made (again) if there is none or it broke.
    fn connected(&self) -> Result<MutexGuard<'_, Option<Connected>>> {
        let mut guard = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if guard
            .as_ref()
            .is_none_or(|c| c.client.is_closed() || c.broken)
        {
            *guard = None;
            let Some(runtime) = &self.runtime else {
                return Err(StoreError::Unavailable("the store is shut down".into()));
            };
            let config = self.config.clone();
            let made = block_on(runtime.spawn(async move {
                let (client, connection) = config.connect(NoTls).await?;
                // A broken connection shows in the next call's error (and is made again).
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok::<_, tokio_postgres::Error>(client)
            }));
            let client = match made {
                Ok(Ok(client)) => client,
                Ok(Err(e)) => {
                    return Err(StoreError::Unavailable(format!(
                        "cannot reach PostgreSQL at {}: {e}",
                        self.where_()
                    )));
                }
                Err(e) => return Err(StoreError::Unavailable(e.to_string())),
            };
            *guard = Some(Connected {
                client,
                prepared: HashMap::new(),
                broken: false,
            });
        }
        Ok(guard)
    }
}

/// Waits for a future on this thread, without a runtime: the futures of a `tokio-postgres`
/// client only wait on channels to the connection task, which the store's runtime serves.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// `?1` → `$1` outside quoted text.
fn dialect(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    for ch in sql.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                out.push(ch);
            }
            '?' if !quoted => out.push('$'),
            _ => out.push(ch),
        }
    }
    out
}

struct PgConn<'a>(&'a mut Connected);

impl PgConn<'_> {
    fn statement(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Statement> {
        let sql = dialect(sql);
        if let Some(stmt) = self.0.prepared.get(&sql) {
            return Ok(stmt.clone());
        }
        let types: Vec<Type> = params
            .iter()
            .map(|p| match p {
                Param::Int(_) => Type::INT8,
                Param::Text(_) => Type::TEXT,
            })
            .collect();
        let stmt = block_on(self.0.client.prepare_typed(&sql, &types))?;
        self.0.prepared.insert(sql, stmt.clone());
        Ok(stmt)
    }
}

fn values<'p>(params: &'p [Param<'_>]) -> Vec<&'p (dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(v) => v as &(dyn ToSql + Sync),
            Param::Text(v) => v as &(dyn ToSql + Sync),
        })
        .collect()
}

fn cell(row: &tokio_postgres::Row, i: usize, ty: &Type) -> Result<Cell> {
    let cell = if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?.map(Cell::Int)
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map(|v| Cell::Int(i64::from(v)))
    } else if *ty == Type::INT2 {
        row.try_get::<_, Option<i16>>(i)?
            .map(|v| Cell::Int(i64::from(v)))
    } else if *ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?
            .map(|v| Cell::Int(i64::from(v)))
    } else if *ty == Type::TEXT || *ty == Type::VARCHAR || *ty == Type::NAME {
        row.try_get::<_, Option<String>>(i)?.map(Cell::Text)
    } else {
        return Err(StoreError::Corrupt {
            what: "column type",
            value: ty.name().to_owned(),
        });
    };
    Ok(cell.unwrap_or(Cell::Null))
}

impl Conn for PgConn<'_> {
    fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>> {
        let stmt = self.statement(sql, params)?;
        let rows = block_on(self.0.client.query(&stmt, &values(params)))?;
        rows.iter()
            .map(|row| {
                let cells = row
                    .columns()
                    .iter()
                    .enumerate()
                    .map(|(i, col)| Ok((col.name().to_owned(), cell(row, i, col.type_())?)))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Row::new(cells))
            })
            .collect()
    }

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let stmt = self.statement(sql, params)?;
        Ok(block_on(self.0.client.execute(&stmt, &values(params)))?)
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(block_on(self.0.client.batch_execute(sql))?)
    }
}

/// Rolls back a transaction its closure did not finish (an error, or a panic unwinding).
struct Open<'a> {
    conn: &'a mut Connected,
    done: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.done && block_on(self.conn.client.batch_execute("ROLLBACK")).is_err() {
            // The connection is in an unknown state: the next call makes a new one.
            self.conn.broken = true;
        }
    }
}

impl Backend for Postgres {
    fn read<T>(&self, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T> {
        let mut guard = self.connected()?;
        let Some(conn) = guard.as_mut() else {
            return Err(StoreError::Unavailable("no connection".into()));
        };
        let out = f(&mut PgConn(conn));
        conn.broken |= out.as_ref().is_err_and(StoreError::is_unavailable);
        out
    }

    fn write<T>(&self, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T> {
        let mut guard = self.connected()?;
        let Some(conn) = guard.as_mut() else {
            return Err(StoreError::Unavailable("no connection".into()));
        };
        // The guard first: a BEGIN whose lock then failed is rolled back too.
        let mut open = Open { conn, done: false };
        let out = (|| {
            block_on(open.conn.client.batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK})"
            )))?;
            let out = f(&mut PgConn(open.conn))?;
            block_on(open.conn.client.batch_execute("COMMIT"))?;
            open.done = true;
            Ok(out)
        })();
        open.conn.broken |= out.as_ref().is_err_and(StoreError::is_unavailable);
        out
    }
}
