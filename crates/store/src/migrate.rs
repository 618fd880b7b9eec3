//! Schema migrations for SQLite: numbered, embedded, applied in order, each in its own
//! transaction together with its row in `schema_migrations`. A landed migration is never
//! edited: the database keeps the exact text it applied, and opening it with a binary whose
//! text differs fails with `MigrationEdited` (the test suite also snapshots every migration).

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::error::{Result, StoreError};

/// One migration: its number, name and SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Its number; migrations apply in increasing order, starting at 1, without gaps.
    pub version: u32,
    /// A short name (the file name without the number and extension).
    pub name: &'static str,
    /// The SQL, run as one batch.
    pub sql: &'static str,
}

/// Every migration this binary knows, in order. Append only.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../migrations/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "incarnations",
        sql: include_str!("../migrations/0002_incarnations.sql"),
    },
    Migration {
        version: 3,
        name: "records",
        sql: include_str!("../migrations/0003_records.sql"),
    },
    Migration {
        version: 4,
        name: "restore",
        sql: include_str!("../migrations/0004_restore.sql"),
    },
    Migration {
        version: 5,
        name: "markers",
        sql: include_str!("../migrations/0005_markers.sql"),
    },
];

const BOOKKEEPING: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name    TEXT NOT NULL,
    sql     TEXT NOT NULL
) STRICT;";

/// Brings the database up to date: checks every applied migration against the embedded text,
/// then applies the missing ones. Idempotent.
pub(crate) fn migrate(conn: &mut Connection) -> Result<()> {
    conn.execute_batch(BOOKKEEPING)?;
    let known = MIGRATIONS.last().map_or(0, |m| m.version);
    let found: Option<i64> =
        conn.query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })?;
    let found = u32::try_from(found.unwrap_or(0)).map_err(|_| StoreError::Corrupt {
        what: "schema_migrations.version",
        value: format!("{found:?}"),
    })?;
    if found > known {
        return Err(StoreError::SchemaTooNew { found, known });
    }
    for migration in MIGRATIONS {
        // IMMEDIATE takes the write lock first, so two processes opening a fresh file at
        // once cannot both decide to apply the same migration.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let applied: Option<String> = tx
            .query_row(
                "SELECT sql FROM schema_migrations WHERE version = ?1",
                [migration.version],
                |r| r.get(0),
            )
            .optional()?;
        match applied {
            Some(sql) if sql == migration.sql => {}
            Some(_) => {
                return Err(StoreError::MigrationEdited {
                    version: migration.version,
                });
            }
            None => {
                tx.execute_batch(migration.sql)?;
                tx.execute(
                    "INSERT INTO schema_migrations (version, name, sql) VALUES (?1, ?2, ?3)",
                    params![migration.version, migration.name, migration.sql],
                )?;
            }
        }
        tx.commit()?;
    }
    Ok(())
}
