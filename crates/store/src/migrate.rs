//! Schema migrations, for SQLite and PostgreSQL alike: numbered, embedded, applied in order, each in its own
//! transaction together with its row in `schema_migrations`. A landed migration is never
//! edited: the database keeps the exact text it applied, and opening it with a binary whose
//! text differs fails with `MigrationEdited` (the test suite also snapshots every migration).

use crate::error::{Result, StoreError};
use crate::sql::{Backend, Row, params};

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
    Migration {
        version: 6,
        name: "heartbeats",
        sql: include_str!("../migrations/0006_heartbeats.sql"),
    },
];

/// The same migrations for PostgreSQL: the same numbers and names, the same tables, columns,
/// indexes and constraints, written in PostgreSQL's dialect (`BIGSERIAL` for SQLite's
/// `AUTOINCREMENT`, a `json_valid` function and append-only triggers of its own). A test
/// compares the two schemas column by column.
pub const PG_MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../migrations/postgres/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "incarnations",
        sql: include_str!("../migrations/postgres/0002_incarnations.sql"),
    },
    Migration {
        version: 3,
        name: "records",
        sql: include_str!("../migrations/postgres/0003_records.sql"),
    },
    Migration {
        version: 4,
        name: "restore",
        sql: include_str!("../migrations/postgres/0004_restore.sql"),
    },
    Migration {
        version: 5,
        name: "markers",
        sql: include_str!("../migrations/postgres/0005_markers.sql"),
    },
    Migration {
        version: 6,
        name: "heartbeats",
        sql: include_str!("../migrations/postgres/0006_heartbeats.sql"),
    },
];

/// Brings the database up to date: checks every applied migration against the embedded text,
/// then applies the missing ones, each in its own write transaction (which the engine
/// serialises with every other writer, so two processes opening a fresh database at once
/// cannot both apply one). Idempotent.
pub(crate) fn migrate(
    engine: &impl Backend,
    migrations: &[Migration],
    bookkeeping: &str,
) -> Result<()> {
    engine.write(|c| c.batch(bookkeeping))?;
    let known = migrations.last().map_or(0, |m| m.version);
    let found = engine.read(|c| {
        c.query("SELECT MAX(version) AS v FROM schema_migrations", params![])?
            .first()
            .map(|r| r.opt_int("v"))
            .transpose()
    })?;
    let found = found.flatten().unwrap_or(0);
    let found = u32::try_from(found).map_err(|_| StoreError::Corrupt {
        what: "schema_migrations.version",
        value: found.to_string(),
    })?;
    if found > known {
        return Err(StoreError::SchemaTooNew { found, known });
    }
    for migration in migrations {
        engine.write(|c| {
            let applied = c
                .query(
                    "SELECT sql FROM schema_migrations WHERE version = ?1",
                    params![migration.version],
                )?
                .first()
                .map(Row::first_text)
                .transpose()?;
            match applied {
                Some(sql) if sql == migration.sql => Ok(()),
                Some(_) => Err(StoreError::MigrationEdited {
                    version: migration.version,
                }),
                None => {
                    c.batch(migration.sql)?;
                    c.execute(
                        "INSERT INTO schema_migrations (version, name, sql) VALUES (?1, ?2, ?3)",
                        params![migration.version, migration.name, migration.sql],
                    )?;
                    Ok(())
                }
            }
        })?;
    }
    Ok(())
}
