//! Migrations: applied on a fresh file, idempotent on reopen, landed text frozen.

use rusqlite::Connection;
use store::{MIGRATIONS, PG_MIGRATIONS, SqliteStore, Store, StoreError};

use crate::{db_path, file_store, session};

fn applied(path: &std::path::Path) -> Vec<(u32, String)> {
    let conn = Connection::open(path).expect("raw open");
    let mut stmt = conn
        .prepare("SELECT version, name FROM schema_migrations ORDER BY version")
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn fresh_file_gets_every_migration_in_wal_mode() {
    let (store, path) = file_store("fresh");
    drop(store);
    let expected: Vec<(u32, String)> = MIGRATIONS
        .iter()
        .map(|m| (m.version, m.name.to_owned()))
        .collect();
    assert_eq!(applied(&path), expected);

    let conn = Connection::open(&path).expect("raw open");
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("mode");
    assert_eq!(mode, "wal");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    for table in [
        "audit",
        "instances",
        "recovery_records",
        "resources",
        "schema_migrations",
        "sessions",
    ] {
        assert!(
            tables.iter().any(|t| t == table),
            "missing table {table} in {tables:?}"
        );
    }
}

#[test]
fn reopen_is_idempotent_and_keeps_records() {
    let path = db_path("reopen");
    {
        let store = SqliteStore::open(&path).expect("open");
        session(&store, "s1", 10);
    }
    for _ in 0..3 {
        let store = SqliteStore::open(&path).expect("reopen");
        assert_eq!(store.list_sessions().expect("list").len(), 1);
    }
    assert_eq!(applied(&path).len(), MIGRATIONS.len());
}

#[test]
fn open_creates_missing_parent_directories() {
    let base = db_path("parents");
    let path = base.with_extension("d").join("a/b/store.db");
    let _ = std::fs::remove_dir_all(base.with_extension("d"));
    SqliteStore::open(&path).expect("open in new dirs");
    assert!(path.exists());
}

#[test]
fn migration_numbers_run_from_one_without_gaps() {
    for (i, m) in MIGRATIONS.iter().enumerate() {
        assert_eq!(
            m.version as usize,
            i + 1,
            "migration {} is out of order",
            m.name
        );
        assert!(
            m.sql
                .starts_with(&format!("-- {:04}_{}", m.version, m.name))
        );
    }
}

/// Fails when a landed migration's text changes: add a new migration instead of editing one.
#[test]
fn landed_migrations_are_frozen() {
    for m in MIGRATIONS {
        insta::assert_snapshot!(format!("migration_{:04}_{}", m.version, m.name), m.sql);
    }
    for m in PG_MIGRATIONS {
        insta::assert_snapshot!(format!("pg_migration_{:04}_{}", m.version, m.name), m.sql);
    }
}

/// PostgreSQL has the same migrations: the same numbers and names, each starting with its own.
#[test]
fn postgres_has_the_same_migrations() {
    let names = |ms: &[store::Migration]| -> Vec<(u32, &str)> {
        ms.iter().map(|m| (m.version, m.name)).collect()
    };
    assert_eq!(names(MIGRATIONS), names(PG_MIGRATIONS));
    for m in PG_MIGRATIONS {
        assert!(
            m.sql
                .starts_with(&format!("-- {:04}_{} (PostgreSQL)", m.version, m.name))
        );
    }
}

#[test]
fn a_database_whose_applied_migration_differs_is_refused() {
    let path = db_path("edited");
    drop(SqliteStore::open(&path).expect("open"));
    let conn = Connection::open(&path).expect("raw open");
    conn.execute(
        "UPDATE schema_migrations SET sql = sql || ' ' WHERE version = 1",
        [],
    )
    .expect("tamper");
    drop(conn);
    match SqliteStore::open(&path) {
        Err(StoreError::MigrationEdited { version: 1 }) => {}
        other => panic!("expected MigrationEdited, got {other:?}"),
    }
}

#[test]
fn a_database_from_a_newer_binary_is_refused() {
    let path = db_path("newer");
    drop(SqliteStore::open(&path).expect("open"));
    let conn = Connection::open(&path).expect("raw open");
    conn.execute(
        "INSERT INTO schema_migrations (version, name, sql) VALUES (999, 'future', '')",
        [],
    )
    .expect("insert");
    drop(conn);
    match SqliteStore::open(&path) {
        Err(StoreError::SchemaTooNew { found: 999, known }) => {
            assert_eq!(known as usize, MIGRATIONS.len());
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
}
